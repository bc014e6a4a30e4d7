"""The RocketMQ v1 and v2 (RocketMQ 5) front doors next to the native SDK, in one run (issues 27, 55).

Run: ``uv run python -m bench.rocketmq_bench [--smoke] [--clients N] [--messages N] [--out PATH]``
(``make bench`` runs it; ``make bench-rocketmq`` alone).

Starts a local cluster (its own redis-server, 1 router, 1 partition node, replicas 1) with one
gateway, and a 4-partition stream. The gateway serves both doors on its one RocketMQ port:
``apache.rocketmq.v1.MessagingService`` and ``apache.rocketmq.v2.MessagingService`` (what RocketMQ
5's official SDKs call). Send phases, each `messages` messages with `clients` concurrent client tasks
calling in turn (each waits for its answer, as a synchronous RocketMQ producer does):

- ``native_publish``: `weir.Client.publish` (ack level leader: stored and fsynced on the primary,
  which is what a RocketMQ SendMessage answer promises).
- ``send_message``: v1 SendMessage NORMAL through the gateway, with the v1 Java client's metadata,
  a CRC32 body digest, a tag and keys.
- ``send_message_v2``: v2 SendMessage through the gateway, one NORMAL message a call as RocketMQ 5's
  producers send a synchronous send, with the v2 Java client's metadata, a tag, keys, a CRC32 body
  digest, the born timestamp and host.

Consume phases, each every message of the three send phases (3 x `messages`), one task per partition:

- ``native_consume``: a durable consumer: Fetch (batch 32) then AckBatch of what came.
- ``receive_ack``: the same through the v1 door as a RocketMQ simple consumer: ReceiveMessage
  (batch 32, the group's first receive starts it at the first stored message) then one AckMessage
  per message with its receipt handle (the protocol acks one message a call; a batch's acks go
  concurrently, as the v1 Java client sends them).
- ``receive_ack_v2``: the same through the v2 door with a group of its own: the server-streaming
  ReceiveMessage (batch 32, the partition's queue, 200 ms long polling, 60 s invisible) then one
  AckMessage of one entry per message, concurrently, as RocketMQ 5's SimpleConsumer.ack sends them.

Figures (JSON on stdout): each phase's ``messages``, ``msgs_per_s`` and the CPU per message of the
gateway and the partition node (µs, from /proc, user + system); ``send_to_native_throughput`` =
send_message msgs/s over native_publish msgs/s, ``receive_to_native_throughput`` = receive_ack
msgs/s over native_consume msgs/s, and ``send_v2_to_native_throughput`` /
``receive_v2_to_native_throughput`` the same for the v2 phases. Compare ratios from one run: this
machine's speed drifts between days. Errors: RuntimeError when a door answers a call with a status
other than OK (v2 ReceiveMessage: OK or MESSAGE_NOT_FOUND).
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
from weir_gateway.rocketmq_v2.pb import definition_pb2 as definition_v2
from weir_gateway.rocketmq_v2.pb import service_pb2 as service_v2
from weir_gateway.rocketmq_v2.pb import service_pb2_grpc as service_v2_grpc

from bench.gateway_bench import cpu_seconds
from bench.report import clients_and_messages_main

TOPIC = "bench-rocketmq"
BATCH = 32  # messages a receive or a native fetch asks for
V2_RECEIVED = (definition_v2.OK, definition_v2.MESSAGE_NOT_FOUND)  # a v2 ReceiveMessage's good endings


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


def metadata_v2(client_id: str) -> list[tuple[str, str]]:
    """What RocketMQ 5's Java client sends with every v2 call."""
    return [
        ("x-mq-client-id", client_id),
        ("x-mq-language", "JAVA"),
        ("x-mq-protocol", "v2"),
        ("x-mq-client-version", "5.0.7"),
        ("x-mq-date-time", time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())),
        ("x-mq-request-id", str(uuid.uuid4())),
    ]


def send_request(index: int, number: int) -> service.SendMessageRequest:
    """Client `index`'s message `number` as a v1 SendMessage (NORMAL, tag, keys, CRC32 digest)."""
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


def send_request_v2(index: int, number: int) -> service_v2.SendMessageRequest:
    """Client `index`'s message `number` as a v2 SendMessage of one NORMAL message (tag, keys, CRC32
    digest as 8 upper-case hex digits, IDENTITY encoding, born timestamp and host)."""
    body = b"message %d of client %d (v2)" % (number, index)
    system = definition_v2.SystemProperties(
        tag="bench",
        keys=[f"client-{index}"],
        message_id=uuid.uuid4().hex.upper(),
        body_digest=definition_v2.Digest(type=definition_v2.CRC32, checksum=format(zlib.crc32(body), "08X")),
        body_encoding=definition_v2.IDENTITY,
        message_type=definition_v2.NORMAL,
        born_host="127.0.0.1",
    )
    system.born_timestamp.GetCurrentTime()
    message = definition_v2.Message(topic=definition_v2.Resource(name=TOPIC), system_properties=system, body=body)
    return service_v2.SendMessageRequest(messages=[message])


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
    """`drive` `call`: {"messages": calls made, "msgs_per_s", "<kind>_cpu_us_per_message" of each pid}."""
    before = {kind: cpu_seconds(pid) for kind, pid in pids.items()}
    seconds = await drive(clients, messages, call)
    done = (messages // clients) * clients
    figures: dict[str, Any] = {"messages": done, "msgs_per_s": round(done / seconds, 1)}
    for kind, pid in pids.items():
        figures[f"{kind}_cpu_us_per_message"] = round((cpu_seconds(pid) - before[kind]) / done * 1e6, 1)
    return figures


def native_fetch_and_ack(client: Client, stream: str, consumer: str) -> Any:
    """The native consume a door is measured against: `consume(partition, count)` fetches `count`
    messages of the partition with the SDK, BATCH at a time, and acks each batch in one call."""

    async def fetch_and_ack(partition: int, count: int) -> None:
        received = 0
        while received < count:
            messages = await client.fetch(stream, consumer, partition, batch_size=BATCH, max_wait_ms=200)
            if messages:
                await client.ack_batch(stream, consumer, partition, [m.seq for m in messages])
            received += len(messages)

    return fetch_and_ack


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
        batch_size=BATCH,
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


def receive_request_v2(group: str, partition: int) -> service_v2.ReceiveMessageRequest:
    """A simple consumer's v2 ReceiveMessage of `partition`'s queue: TAG `*`, BATCH messages, 60 s
    invisible, 200 ms long polling, no auto renew."""
    request = service_v2.ReceiveMessageRequest(
        group=definition_v2.Resource(name=group),
        message_queue=definition_v2.MessageQueue(topic=definition_v2.Resource(name=TOPIC), id=partition),
        filter_expression=definition_v2.FilterExpression(type=definition_v2.TAG, expression="*"),
        batch_size=BATCH,
        auto_renew=False,
    )
    request.invisible_duration.FromMilliseconds(60_000)
    request.long_polling_timeout.FromMilliseconds(200)
    return request


async def receive_v2(stub: Any, group: str, partition: int, call_metadata: Any) -> list[definition_v2.Message]:
    """One v2 ReceiveMessage: the messages its stream carried. Errors: RuntimeError when its status
    is neither OK nor MESSAGE_NOT_FOUND."""
    messages: list[definition_v2.Message] = []
    call = stub.ReceiveMessage(receive_request_v2(group, partition), metadata=call_metadata, timeout=30)
    async for response in call:
        if response.HasField("message"):
            messages.append(response.message)
        elif response.HasField("status") and response.status.code not in V2_RECEIVED:
            raise RuntimeError(f"v2 ReceiveMessage failed: {response.status}")
    return messages


async def receive_and_ack_v2(stub: Any, partition: int, count: int) -> None:
    """v2 ReceiveMessage then one AckMessage (one entry) per message, concurrently, until `count`
    messages of `partition` came. Errors: RuntimeError for an answer that is not OK."""
    group, topic = definition_v2.Resource(name="bench-v2"), definition_v2.Resource(name=TOPIC)
    call_metadata = metadata_v2("bench-consumer-v2")
    received = 0
    while received < count:
        messages = await receive_v2(stub, group.name, partition, call_metadata)
        acks = [
            stub.AckMessage(
                service_v2.AckMessageRequest(
                    group=group,
                    topic=topic,
                    entries=[
                        service_v2.AckMessageEntry(
                            message_id=message.system_properties.message_id,
                            receipt_handle=message.system_properties.receipt_handle,
                        )
                    ],
                ),
                metadata=call_metadata,
                timeout=30,
            )
            for message in messages
        ]
        for answer in await asyncio.gather(*acks):
            if answer.status.code != definition_v2.OK:
                raise RuntimeError(f"v2 AckMessage failed: {answer.status}")
        received += len(acks)


def checked_send(door: str, status: Any, ok: int) -> None:
    if status.code != ok:
        raise RuntimeError(f"{door} SendMessage failed: {status}")


async def send_phases(
    client: Client, channel: grpc.aio.Channel, pids: dict[str, int], args: argparse.Namespace
) -> dict[str, Any]:
    """The three send phases (module docstring), in turn: {phase: figures}."""
    stub, stub_v2 = service_grpc.MessagingServiceStub(channel), service_v2_grpc.MessagingServiceStub(channel)
    v1_metadata = [metadata(f"bench-{index}") for index in range(args.clients)]
    v2_metadata = [metadata_v2(f"bench-v2-{index}") for index in range(args.clients)]

    async def publish(index: int, number: int) -> None:
        await client.publish(TOPIC, TOPIC, b"message %d of client %d" % (number, index), ack_level="leader")

    async def send(index: int, number: int) -> None:
        response = await stub.SendMessage(send_request(index, number), metadata=v1_metadata[index], timeout=30)
        checked_send("v1", response.common.status, 0)

    async def send_v2(index: int, number: int) -> None:
        response = await stub_v2.SendMessage(send_request_v2(index, number), metadata=v2_metadata[index], timeout=30)
        checked_send("v2", response.status, definition_v2.OK)

    return {
        "native_publish": await measure(pids, args.clients, args.messages, publish),
        "send_message": await measure(pids, args.clients, args.messages, send),
        "send_message_v2": await measure(pids, args.clients, args.messages, send_v2),
    }


async def consume_phases(client: Client, channel: grpc.aio.Channel, pids: dict[str, int]) -> dict[str, Any]:
    """The three consume phases (module docstring), in turn, each over every stored message."""
    stub, stub_v2 = service_grpc.MessagingServiceStub(channel), service_v2_grpc.MessagingServiceStub(channel)
    info = await client.stream_info(TOPIC)
    per_partition = {entry.partition: entry.msg_count for entry in info.partitions}
    await client.create_consumer(TOPIC, consumer_config("native", ack_wait_ms=60_000))
    return {
        "native_consume": await consume_phase(pids, per_partition, native_fetch_and_ack(client, TOPIC, "native")),
        "receive_ack": await consume_phase(pids, per_partition, lambda p, n: receive_and_ack(stub, p, n)),
        "receive_ack_v2": await consume_phase(pids, per_partition, lambda p, n: receive_and_ack_v2(stub_v2, p, n)),
    }


def ratio(phase: dict[str, Any], native: dict[str, Any]) -> float:
    """`phase`'s msgs/s over `native`'s."""
    return round(float(phase["msgs_per_s"]) / float(native["msgs_per_s"]), 3)


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """Every phase against a cluster started in `workdir`: the report (module docstring)."""
    cluster = await asyncio.to_thread(LocalCluster.start, workdir / "cluster", nodes=1, routers=1, replicators=0)
    try:
        gateway = await asyncio.to_thread(cluster.start_gateway, "gateway-bench", {})
        cluster.gateways.append(gateway)
        pids = {"gateway": gateway.pid, "node": cluster.nodes[0].pid}
        async with Client(cluster.router_addresses) as client:
            await client.create_stream(stream_config(TOPIC, partitions=4))
            async with grpc.aio.insecure_channel(gateway.rocketmq_address) as channel:
                phases = await send_phases(client, channel, pids, args)
                phases |= await consume_phases(client, channel, pids)
    finally:
        await asyncio.to_thread(cluster.stop)
    native, native_consume = phases["native_publish"], phases["native_consume"]
    return {
        "clients": args.clients,
        **phases,
        "send_to_native_throughput": ratio(phases["send_message"], native),
        "receive_to_native_throughput": ratio(phases["receive_ack"], native_consume),
        "send_v2_to_native_throughput": ratio(phases["send_message_v2"], native),
        "receive_v2_to_native_throughput": ratio(phases["receive_ack_v2"], native_consume),
    }


def main(argv: list[str] | None = None) -> int:
    return clients_and_messages_main(argv, run, prog="bench.rocketmq_bench", doc=__doc__ or "")


if __name__ == "__main__":
    sys.exit(main())
