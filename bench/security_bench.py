"""What TLS and tokens cost on publish and consume: the same work against a plaintext cluster, a TLS
one and a TLS one with an auth file, in one run (issue 23).

Run: ``uv run python -m bench.security_bench [--smoke] [--messages N] [--out PATH]``
(``make bench`` runs it; ``make bench-security`` alone).

For each mode (``plaintext``, ``tls``: every port TLS and the services on mutual TLS, ``tls_auth``:
TLS and an auth file, the client sending a token whose user may publish, consume and administer the
stream) a local cluster is started (its own redis-server, 1 router, 1 partition node, replicas 1),
one after the other, and the client runs:

- ``publish_batched``: `messages` messages with `publish_nowait` (ack level leader, the SDK batches
  them onto PublishBatchStream);
- ``publish_unary``: `messages / 10` unary Publish calls to the node (the SDK's NodeClient, one
  after the other, each awaited), on a second stream kept in memory (one call per message and no
  fsync to wait for: the per-call cost of TLS, authentication and authorization shows here);
- ``consume``: a durable consumer, one task per partition, Fetch (batch 32) then AckBatch.

Every published message must be consumed once (else exit 1). Figures (JSON on stdout): per mode
and phase msgs/s and CPU µs per message of the partition node, the router and this client; for the
unary phase also p50/p99 latency (ms). ``ratios``: each secured mode's msgs/s and node CPU per
message over plaintext's, per phase. Compare ratios from one run: the machine's speed drifts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from weir import Client, consumer_config, stream_config
from weir.client import NodeClient
from weir.tls import ChannelSecurity
from weir_cli.launcher import LocalCluster
from weir_server.auth import token_hash

from bench.report import Meter, run_and_report

STREAM = "bench-security"
MEMORY_STREAM = "bench-security-memory"
PARTITIONS = 4
FETCH_BATCH = 32
MODES = ("plaintext", "tls", "tls_auth")
TOKEN = "bench-security-token"
STALL_S = 30.0


def auth_file(directory: Path) -> Path:
    path = directory / "auth.json"
    grant = {"actions": ["publish", "consume", "read", "admin"], "streams": [STREAM, MEMORY_STREAM]}
    path.write_text(json.dumps({"users": [{"name": "bench", "token_sha256": token_hash(TOKEN), "allow": [grant]}]}))
    return path


def start(mode: str, directory: Path) -> tuple[LocalCluster, ChannelSecurity | None]:
    """The mode's cluster and the client's security for it."""
    directory.mkdir(parents=True)
    cluster = LocalCluster.start(
        directory / "cluster",
        nodes=1,
        routers=1,
        replicators=0,
        tls=mode != "plaintext",
        auth_file=auth_file(directory) if mode == "tls_auth" else None,
    )
    if cluster.tls_dir is None:
        return cluster, None
    return cluster, ChannelSecurity(ca_file=cluster.tls_dir / "ca.pem", token=TOKEN if mode == "tls_auth" else "")


async def publish_batched(client: Client, meter: Meter, messages: int) -> dict[str, Any]:
    meter.start()
    futures = [
        await client.publish_nowait(STREAM, "bench.security", b"batched %d" % number) for number in range(messages)
    ]
    await client.flush()
    for future in futures:
        await future
    return meter.figures(messages)


async def publish_unary(
    client: Client, meter: Meter, messages: int, security: ChannelSecurity | None
) -> dict[str, Any]:
    leader = (await client.route(MEMORY_STREAM)).partitions[0].primary.address
    latencies: list[float] = []
    async with NodeClient(leader, tls=security) as node:
        await node.publish(MEMORY_STREAM, "bench.security", b"warm up")
        meter.start()
        for number in range(messages):
            started = time.perf_counter()
            await node.publish(MEMORY_STREAM, "bench.security", b"unary %d" % number)
            latencies.append((time.perf_counter() - started) * 1000)
        figures = meter.figures(messages)
    ordered = sorted(latencies)
    figures["p50_ms"] = round(statistics.median(ordered), 3)
    figures["p99_ms"] = round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 3)
    return figures


async def consume(client: Client, meter: Meter, messages: int) -> dict[str, Any]:
    """Fetch and ack every stored message once, one task per partition."""
    await client.create_consumer(STREAM, consumer_config("bench", ack_wait_ms=60_000))
    info = await client.stream_info(STREAM)
    counts = {partition.partition: int(partition.msg_count) for partition in info.partitions}
    if sum(counts.values()) != messages:
        raise RuntimeError(f"consume: {sum(counts.values())} messages stored, {messages} published")
    seen: set[bytes] = set()

    async def fetch_and_ack(partition: int, count: int) -> None:
        received, last_progress = 0, time.monotonic()
        while received < count:
            batch = await client.fetch(STREAM, "bench", partition, batch_size=FETCH_BATCH, max_wait_ms=200)
            if batch:
                await client.ack_batch(STREAM, "bench", partition, [message.seq for message in batch])
                seen.update(message.payload for message in batch)
                received += len(batch)
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > STALL_S:
                raise RuntimeError(f"consume: partition {partition} gave {received} of {count} messages")

    meter.start()
    await asyncio.gather(*(fetch_and_ack(partition, count) for partition, count in counts.items()))
    figures = meter.figures(messages)
    if len(seen) != messages:
        raise RuntimeError(f"consume: {len(seen)} distinct messages of {messages}")
    return figures


async def measure_mode(mode: str, workdir: Path, messages: int) -> dict[str, Any]:
    cluster, security = await asyncio.to_thread(start, mode, workdir / mode)
    try:
        meter = Meter({"node": cluster.nodes[0], "router": cluster.routers[0]})
        async with Client(cluster.router_addresses, tls=security) as client:
            await client.create_stream(stream_config(STREAM, partitions=PARTITIONS))
            await client.create_stream(stream_config(MEMORY_STREAM, storage="memory"))
            batched = await publish_batched(client, meter, messages)
            unary = await publish_unary(client, meter, max(1, messages // 10), security)
            consumed = await consume(client, meter, messages)
    finally:
        await asyncio.to_thread(cluster.stop)
    return {"publish_batched": batched, "publish_unary": unary, "consume": consumed}


def ratios(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    base = results["plaintext"]
    figures: dict[str, Any] = {}
    for mode in MODES[1:]:
        for phase, measured in results[mode].items():
            figures[f"{mode}_{phase}_throughput"] = round(measured["msgs_per_s"] / base[phase]["msgs_per_s"], 3)
            plain_cpu = base[phase]["node_cpu_us_per_message"]
            if plain_cpu > 0:
                figures[f"{mode}_{phase}_node_cpu"] = round(measured["node_cpu_us_per_message"] / plain_cpu, 3)
    return figures


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    results = {mode: await measure_mode(mode, workdir, args.messages) for mode in MODES}
    return {
        "settings": {"messages": args.messages, "partitions": PARTITIONS, "fetch_batch": FETCH_BATCH},
        **results,
        "ratios": ratios(results),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.security_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=50_000, help="messages published batched (a tenth unary)")
    parser.add_argument("--smoke", action="store_true", help="a small count: checks it works")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.messages < 10:
        parser.error("--messages must be at least 10")
    if args.smoke:
        args.messages = min(args.messages, 500)
    return run_and_report(run, args, "weir-bench-security-")


if __name__ == "__main__":
    sys.exit(main())
