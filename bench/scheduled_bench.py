"""Delayed delivery (issue 27): how late scheduled messages reach a consumer with many timers pending,
and what a pending timer costs in memory.

Run: ``uv run python -m bench.scheduled_bench [--smoke] [--messages N] [--out PATH]`` (``make bench``
runs it after the comparison harness; ``make bench-scheduled`` alone).

Starts a local cluster (its own redis-server, 1 router, 1 partition node, replicas 1), creates a
stream with `allow_scheduled_messages` and `partitions` partitions, then publishes `messages`
messages (ack level leader, batched by the SDK) whose `deliver_at_ms` spreads evenly over
`spread_ms` starting `lead_ms` after the first publish, so every timer is pending before the first
falls due. One consumer task per partition long-polls (Fetch, batch 1,000) and acknowledges.

Figures (JSON on stdout):
- ``lateness_ms``: p50 / p99 / max of (time the consumer received it - its deliver_at_ms): what a
  user sees, the node's timer, its delivery commit and the fetch long poll together.
- ``delivered`` and ``duplicates`` (every message once: the payload carries its number), and
  ``publish_overran_ms`` (> 0: publishing took longer than `lead_ms`, so some timers fell due while
  others were still being published; the lateness then includes that).
- ``node_rss_bytes_per_pending``: the node's resident set after the publishes minus before, per
  pending message: the index, the SQLite page cache and Python's allocator together (an upper bound).
- ``index_bytes_per_pending``: tracemalloc's count for the primary's in-memory index alone
  (`ScheduleIndex` with the same entries), in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

from weir import Client, consumer_config, stream_config
from weir_cli.launcher import LocalCluster
from weir_partition_node.scheduled import ScheduleIndex

from bench.report import run_and_report

STREAM = "bench-scheduled"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def rss_bytes(pid: int) -> int:
    """VmRSS of process `pid` in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def index_bytes_per_entry(count: int) -> float:
    """What `count` entries of the primary's index take (tracemalloc), per entry."""
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    index = ScheduleIndex()
    base = now_ms()
    for seq in range(1, count + 1):
        index.add(seq, base + seq)
    after, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(index) == count
    return (after - before) / count


async def publish_all(client: Client, args: argparse.Namespace, first_due_ms: int) -> None:
    step = args.spread_ms / args.messages
    futures = []
    for number in range(args.messages):
        deliver_at_ms = first_due_ms + int(number * step)
        payload = b"%d %d" % (number, deliver_at_ms)
        futures.append(await client.publish_nowait(STREAM, "due", payload, deliver_at_ms=deliver_at_ms, msg_id=""))
    await client.flush()
    for future in futures:
        assert (await future).scheduled


async def consume(client: Client, partition: int, received: list[tuple[int, int]], expected: int) -> None:
    """Fetch and ack on one partition until `expected` messages arrived over all partitions."""
    while len(received) < expected:
        messages = await client.fetch(STREAM, "bench", partition, batch_size=1000, max_wait_ms=200)
        arrived_ms = now_ms()
        for message in messages:
            number, deliver_at_ms = message.payload.split()
            received.append((int(number), arrived_ms - int(deliver_at_ms)))
        if messages:
            await client.ack_batch(STREAM, "bench", partition, [message.seq for message in messages])


def percentile(values: list[int], fraction: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster = await asyncio.to_thread(LocalCluster.start, workdir / "cluster", nodes=1, routers=1, replicators=0)
    try:
        async with Client(cluster.router_addresses) as client:
            config = stream_config(STREAM, partitions=args.partitions, allow_scheduled_messages=True)
            await client.create_stream(config)
            await client.create_consumer(STREAM, consumer_config("bench", ack_wait_ms=60_000, max_ack_pending=10_000))
            node_pid = cluster.nodes[0].pid
            rss_before = rss_bytes(node_pid)
            started_ms = now_ms()
            await publish_all(client, args, started_ms + args.lead_ms)
            published_ms = now_ms()
            rss_pending = rss_bytes(node_pid)
            received: list[tuple[int, int]] = []
            deadline_s = (args.lead_ms + args.spread_ms) / 1000 + 60
            await asyncio.wait_for(
                asyncio.gather(
                    *(consume(client, partition, received, args.messages) for partition in range(args.partitions))
                ),
                deadline_s,
            )
    finally:
        await asyncio.to_thread(cluster.stop)
    numbers = [number for number, _ in received]
    lateness = [late for _, late in received]
    return {
        "messages": args.messages,
        "partitions": args.partitions,
        "spread_ms": args.spread_ms,
        "publish_ms": published_ms - started_ms,
        "publish_overran_ms": max(0, published_ms - (started_ms + args.lead_ms)),
        "delivered": len(set(numbers)),
        "duplicates": len(numbers) - len(set(numbers)),
        "lateness_ms": {
            "p50": percentile(lateness, 0.50),
            "p99": percentile(lateness, 0.99),
            "max": max(lateness, default=0),
            "mean": round(statistics.fmean(lateness), 1) if lateness else 0,
        },
        "node_rss_bytes_per_pending": round((rss_pending - rss_before) / args.messages, 1),
        "index_bytes_per_pending": round(index_bytes_per_entry(args.messages), 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.scheduled_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000, help="scheduled messages (all pending at once)")
    parser.add_argument("--partitions", type=int, default=4, help="partitions of the stream")
    parser.add_argument("--lead-ms", type=int, default=30_000, help="from the first publish to the first due time")
    parser.add_argument("--spread-ms", type=int, default=20_000, help="due times spread evenly over this")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: checks it works")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.messages, args.lead_ms, args.spread_ms = min(args.messages, 2_000), 4_000, 2_000
    return run_and_report(run, args, "weir-bench-scheduled-")


if __name__ == "__main__":
    sys.exit(main())
