"""The streams seed's front door (waymaker.streams) next to the native SDK, in one run (issue 29).

Run: ``uv run python -m bench.waymaker_bench [--smoke] [--clients N] [--messages N] [--out PATH]``
(``make bench`` runs it; ``make bench-waymaker`` alone).

Starts a local cluster (its own redis-server, 1 router, 1 partition node, replicas 1) with one
gateway, and a one-partition stream (a seed stream has one). Phases, each `messages` messages with
`clients` concurrent client tasks calling in turn (each waits for its answer):

- ``native_publish``: `weir.Client.publish` (ack level leader: stored and fsynced on the primary,
  which is what the seed's Publish answer promises).
- ``seed_publish``: the seed's unary Publish through the gateway.
- ``native_consume``: every message of both phases back through a durable consumer: Fetch (batch
  32) then AckBatch of what came.
- ``seed_consume``: the same through the gateway as a seed client: Fetch (batch 32) then one Ack per
  message (the seed acks one message a call; a batch's acks go concurrently).

Figures (JSON on stdout): ``msgs_per_s`` and the CPU per message of the gateway and the partition
node (from /proc, user + system); ``publish_to_native_throughput`` and
``consume_to_native_throughput``: the seed phase's msgs/s over the native one's. Compare ratios
from one run: this machine's speed drifts between days.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import grpc
from weir import Client, consumer_config, stream_config
from weir_cli.launcher import LocalCluster
from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2 as seed
from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2_grpc as seed_grpc

from bench.report import clients_and_messages_main
from bench.rocketmq_bench import consume_phase, measure, native_fetch_and_ack

STREAM = "bench-waymaker"
BATCH = 32


def checked(rpc: str, response: Any) -> Any:
    if not response.success:
        raise RuntimeError(f"{rpc} failed: {response.result_code}: {response.message}")
    return response


async def seed_fetch_and_ack(stub: Any, count: int) -> None:
    """Fetch then one Ack per message (concurrently), until `count` messages came."""
    received = 0
    while received < count:
        request = seed.FetchRequest(stream=STREAM, consumer="seed", batch_size=BATCH)
        fetched = checked("Fetch", await stub.Fetch(request, timeout=30))
        acks = [
            stub.Ack(seed.AckRequest(stream=STREAM, consumer="seed", seq=message.seq), timeout=30)
            for message in fetched.messages
        ]
        for answer in await asyncio.gather(*acks):
            checked("Ack", answer)
        received += len(acks)
        if not acks:
            await asyncio.sleep(0.01)  # the seed's Fetch does not wait: nothing yet, ask again shortly


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster = await asyncio.to_thread(LocalCluster.start, workdir / "cluster", nodes=1, routers=1, replicators=0)
    try:
        gateway = await asyncio.to_thread(cluster.start_gateway, "gateway-bench", {})
        cluster.gateways.append(gateway)
        pids = {"gateway": gateway.pid, "node": cluster.nodes[0].pid}
        async with Client(cluster.router_addresses) as client:
            await client.create_stream(stream_config(STREAM, partitions=1))

            async def publish(index: int, number: int) -> None:
                await client.publish(STREAM, "bench", b"message %d of client %d" % (number, index), partition=0)

            native = await measure(pids, args.clients, args.messages, publish)
            async with grpc.aio.insecure_channel(gateway.waymaker_streams_address) as channel:
                stub = seed_grpc.WaymakerStreamsServiceStub(channel)

                async def seed_publish(index: int, number: int) -> None:
                    payload = b"message %d of client %d" % (number, index)
                    request = seed.PublishRequest(stream=STREAM, subject="bench", payload=payload)
                    checked("Publish", await stub.Publish(request, timeout=30))

                published = await measure(pids, args.clients, args.messages, seed_publish)
                total = (await client.stream_info(STREAM)).msg_count
                await client.create_consumer(STREAM, consumer_config("native", ack_wait_ms=60_000))
                await client.create_consumer(STREAM, consumer_config("seed", ack_wait_ms=60_000))
                fetch_and_ack = native_fetch_and_ack(client, STREAM, "native")
                native_consume = await consume_phase(pids, {0: total}, fetch_and_ack)
                seed_consume = await consume_phase(pids, {0: total}, lambda _, count: seed_fetch_and_ack(stub, count))
    finally:
        await asyncio.to_thread(cluster.stop)
    return {
        "clients": args.clients,
        "native_publish": native,
        "seed_publish": published,
        "native_consume": native_consume,
        "seed_consume": seed_consume,
        "publish_to_native_throughput": round(published["msgs_per_s"] / native["msgs_per_s"], 3),
        "consume_to_native_throughput": round(seed_consume["msgs_per_s"] / native_consume["msgs_per_s"], 3),
    }


def main(argv: list[str] | None = None) -> int:
    return clients_and_messages_main(argv, run, prog="bench.waymaker_bench", doc=__doc__ or "")


if __name__ == "__main__":
    sys.exit(main())
