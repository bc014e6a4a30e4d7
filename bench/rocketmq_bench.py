"""The RocketMQ v1 front door next to the native SDK, in one run (issue 27).

Run: ``uv run python -m bench.rocketmq_bench [--smoke] [--clients N] [--messages N] [--out PATH]``
(``make bench`` runs it; ``make bench-rocketmq`` alone).

Starts a local cluster (its own redis-server, 1 router, 1 partition node, replicas 1) with one
gateway, and a 4-partition stream. Phases, each `messages` messages with `clients` concurrent
client tasks calling in turn (each waits for its answer, as a synchronous RocketMQ producer does):

- ``native_publish``: `weir.Client.publish` (ack level leader: stored and fsynced on the primary,
  which is what a RocketMQ SendMessage answer promises).
- ``send_message``: SendMessage NORMAL through the gateway, with the v1 Java client's metadata,
  a CRC32 body digest, a tag and keys.
- ``native_consume``: every message of both phases back through a durable consumer, one task per
  partition: Fetch (batch 32) then AckBatch of what came.
- ``receive_ack``: the same through the gateway as a RocketMQ simple consumer: ReceiveMessage
  (batch 32, the group's first receive starts it at the first stored message) then one AckMessage
  per message with its receipt handle (the protocol acks one message a call; a batch's acks go
  concurrently, as the v1 Java client sends them).

Figures (JSON on stdout): ``msgs_per_s`` and the CPU per message of the gateway and the partition
node (from /proc, user + system); ``send_to_native_throughput`` = send_message msgs/s over
native_publish msgs/s, ``receive_to_native_throughput`` = receive_ack msgs/s over native_consume
msgs/s. Compare ratios from one run: this machine's speed drifts between days.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
from weir import Client, consumer_config, stream_config
from weir_cli.launcher import LocalCluster
from weir_gateway.rocketmq_v1.pb import definition_pb2 as definition
from weir_gateway.rocketmq_v1.pb import service_pb2 as service
from weir_gateway.rocketmq_v1.pb import service_pb2_grpc as service_grpc

from bench.gateway_bench import cpu_seconds
from bench.report import clients_and_messages_main

TOPIC = "bench-rocketmq"


def metadata(client_id: str) -> list[tuple[str, str]]:
    """What the v1 Java client sent with every call."""
    return [
        ("x-mq-client-id", client_id),
        ("x-mq-language", "JAVA"),
        ("x-mq-protocol", "v1"),
        ("x-mq-client-version", "5.0.0"),
        ("x-mq-date-time", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())),
        ("x-mq-request-id", str(uuid.uuid4())),
    ]


def send_request(index: int, number: int) -> service.SendMessageRequest:
    body = b"message %d of client %d" % (number, index)
    message = definition.Message(
        topic=definition.Resource(name=TOPIC),
        body=body,
        system_attribute=definition.SystemAttribute(
            message_id=uuid.uuid4().hex.upper(),
            tag="bench",
            keys=[f"client-{index}"],
            body_digest=definition.Digest(type=definition.DigestType.CRC32, checksum=format(zlib.crc32(body), "X")),
            born_host="127.0.0.1",
        ),
    )
    return service.SendMessageRequest(message=message)


async def drive(clients: int, messages: int, call: Callable[[int, int], Awaitable[None]]) -> float:
    """`messages` calls over `clients` tasks, each calling in turn; returns the wall seconds."""
    per_client = messages // clients

    async def client(index: int) -> None:
        for number in range(per_client):
            await call(index, number)

    started = time.perf_counter()
    await asyncio.gather(*(client(index) for index in range(clients)))
    return time.perf_counter() - started


async def measure(pids: dict[str, int], clients: int, messages: int, call: Any) -> dict[str, Any]:
    before = {kind: cpu_seconds(pid) for kind, pid in pids.items()}
    seconds = await drive(clients, messages, call)
    done = (messages // clients) * clients
    figures: dict[str, Any] = {"messages": done, "msgs_per_s": round(done / seconds, 1)}
    for kind, pid in pids.items():
        figures[f"{kind}_cpu_us_per_message"] = round((cpu_seconds(pid) - before[kind]) / done * 1e6, 1)
    return figures


async def consume_phase(pids: dict[str, int], per_partition: dict[int, int], consume: Any) -> dict[str, Any]:
    """Run `consume(partition, count)` for every partition at once; the CPU per message consumed."""
    before = {kind: cpu_seconds(pid) for kind, pid in pids.items()}
    started = time.perf_counter()
    await asyncio.gather(*(consume(partition, count) for partition, count in per_partition.items()))
    seconds = time.perf_counter() - started
    done = sum(per_partition.values())
    figures: dict[str, Any] = {"messages": done, "msgs_per_s": round(done / seconds, 1)}
    for kind, pid in pids.items():
        figures[f"{kind}_cpu_us_per_message"] = round((cpu_seconds(pid) - before[kind]) / done * 1e6, 1)
    return figures


def receive_request(group: str, partition: int) -> service.ReceiveMessageRequest:
    request = service.ReceiveMessageRequest(
        group=definition.Resource(name=group),
        client_id="bench-consumer",
        partition=definition.Partition(topic=definition.Resource(name=TOPIC), id=partition),
        filter_expression=definition.FilterExpression(type=definition.FilterType.TAG, expression="*"),
        consume_policy=definition.ConsumePolicy.RESUME,
        batch_size=32,
    )
    request.invisible_duration.FromMilliseconds(60_000)
    request.await_time.FromMilliseconds(200)
    return request


async def receive_and_ack(stub: Any, partition: int, count: int) -> None:
    """ReceiveMessage then AckMessage per message, until `count` messages of `partition` came."""
    group = definition.Resource(name="bench")
    call_metadata = metadata("bench-consumer")
    received = 0
    while received < count:
        response = await stub.ReceiveMessage(receive_request("bench", partition), metadata=call_metadata, timeout=30)
        acks = [
            stub.AckMessage(
                service.AckMessageRequest(
                    group=group,
                    topic=definition.Resource(name=TOPIC),
                    client_id="bench-consumer",
                    receipt_handle=message.system_attribute.receipt_handle,
                    message_id=message.system_attribute.message_id,
                ),
                metadata=call_metadata,
                timeout=30,
            )
            for message in response.messages
        ]
        for answer in await asyncio.gather(*acks):
            if answer.common.status.code != 0:
                raise RuntimeError(f"AckMessage failed: {answer.common.status}")
        received += len(acks)


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster = await asyncio.to_thread(LocalCluster.start, workdir / "cluster", nodes=1, routers=1, replicators=0)
    try:
        gateway = await asyncio.to_thread(cluster.start_gateway, "gateway-bench", {})
        cluster.gateways.append(gateway)
        pids = {"gateway": gateway.pid, "node": cluster.nodes[0].pid}
        async with Client(cluster.router_addresses) as client:
            await client.create_stream(stream_config(TOPIC, partitions=4))

            async def publish(index: int, number: int) -> None:
                await client.publish(TOPIC, TOPIC, b"message %d of client %d" % (number, index), ack_level="leader")

            native = await measure(pids, args.clients, args.messages, publish)
            async with grpc.aio.insecure_channel(gateway.rocketmq_address) as channel:
                stub = service_grpc.MessagingServiceStub(channel)
                client_metadata = [metadata(f"bench-{index}") for index in range(args.clients)]

                async def send(index: int, number: int) -> None:
                    response = await stub.SendMessage(
                        send_request(index, number), metadata=client_metadata[index], timeout=30
                    )
                    if response.common.status.code != 0:
                        raise RuntimeError(f"SendMessage failed: {response.common.status}")

                sent = await measure(pids, args.clients, args.messages, send)
                info = await client.stream_info(TOPIC)
                per_partition = {entry.partition: entry.msg_count for entry in info.partitions}
                await client.create_consumer(TOPIC, consumer_config("native", ack_wait_ms=60_000))

                async def fetch_and_ack(partition: int, count: int) -> None:
                    received = 0
                    while received < count:
                        messages = await client.fetch(TOPIC, "native", partition, batch_size=32, max_wait_ms=200)
                        if messages:
                            await client.ack_batch(TOPIC, "native", partition, [m.seq for m in messages])
                        received += len(messages)

                native_consume = await consume_phase(pids, per_partition, fetch_and_ack)
                received = await consume_phase(
                    pids, per_partition, lambda partition, count: receive_and_ack(stub, partition, count)
                )
    finally:
        await asyncio.to_thread(cluster.stop)
    return {
        "clients": args.clients,
        "native_publish": native,
        "send_message": sent,
        "native_consume": native_consume,
        "receive_ack": received,
        "send_to_native_throughput": round(sent["msgs_per_s"] / native["msgs_per_s"], 3),
        "receive_to_native_throughput": round(received["msgs_per_s"] / native_consume["msgs_per_s"], 3),
    }


def main(argv: list[str] | None = None) -> int:
    return clients_and_messages_main(argv, run, prog="bench.rocketmq_bench", doc=__doc__ or "")


if __name__ == "__main__":
    sys.exit(main())
