"""What partitions cost as they grow, on a local 3-node cluster with the product's default timings:
idle CPU, node memory per partition-replica, the time to create a large replicated stream, and
publish throughput on a cluster that holds many idle partitions next to an empty one.

Run: ``uv run python -m bench.scale_bench [--smoke] [--partitions N] [--idle-seconds S] [--out PATH]``
(``make bench-scale``).

Starts one ``weir_cli.launcher.LocalCluster`` (its own redis-server, 1 router, 3 partition nodes, 1
replicator; default settings, fsync always) in a temporary directory, then in order:

1. ``publish_empty``: PublishBatch of 100 entries, ack_level all, to a 16-partition replicas-3
   stream, one call in flight per partition, for ``--publish-seconds``: messages per second (the
   stream is deleted afterwards).
2. ``empty``: the cluster's idle CPU over ``--idle-seconds`` (every cluster process, user +
   system, from /proc) and the three nodes' resident memory (VmRSS).
3. ``create``: replicas-3 streams of at most 256 partitions each (MAX_PARTITIONS per stream is
   1024, but 256 is the issue's figure) until ``--partitions`` partitions exist; each one timed from
   the CreateStream call until every partition has a primary and three in-sync replicas
   (``create_s``: the largest, and each stream's).
4. ``loaded``: after ``--settle-seconds``, the idle CPU and the nodes' memory as in 1, and per
   partition-replica the difference from 1 (``cpu_percent_per_partition_replica``,
   ``rss_mib_per_partition_replica``).
5. ``publish_loaded``: 2 again on a new 16-partition stream, next to the idle ones, and
   ``publish_ratio_loaded_to_empty``.

A cluster that cannot take the next stream within 60 s (a node not alive, or the stream not
settled) ends the run there: ``stopped`` says after how many partitions and why, and the figures
measured so far are printed.

Units: CPU in percent of one core over the window (``cpu_percent``, total and per process kind),
memory in MiB (2**20 bytes), times in seconds. JSON on stdout (indent=2); progress on stderr.
Other work on the machine shows up in the figures: compare figures from one run.
The targets (issue 53): 1,024 partitions x 3 replicas idle at <= 10 % of one core, <= 0.2 MiB of
node RSS per partition-replica, a 256-partition replicas-3 stream created in <= 2 s, publish at
p16-r3 within 10 % of an empty cluster's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from weir.client import NodeClient, stream_config
from weir.cluster import WeirClient
from weir.errors import NotEnoughNodesError, WeirError
from weir.v1 import streams_pb2
from weir_cli.launcher import LocalCluster

from bench.cluster_bench import cluster_pids, process_cpu_seconds

MIB = 1024 * 1024
STREAM_PARTITIONS = 256
PUBLISH_PARTITIONS = 16
BATCH = 100


def log(message: str) -> None:
    print(f"[scale_bench] {message}", file=sys.stderr, flush=True)


def rss_bytes(pid: int) -> int:
    """VmRSS of process `pid` in bytes, 0 if unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


async def idle_figures(cluster: LocalCluster, seconds: float) -> dict[str, Any]:
    """The cluster's CPU (percent of one core, per process kind and in all) over `seconds` of
    idling, and the nodes' resident memory (MiB, in all)."""
    pids = cluster_pids(cluster)
    before = {name: process_cpu_seconds(pid) for name, pid in pids.items()}
    await asyncio.sleep(seconds)
    used = {name: process_cpu_seconds(pid) - before[name] for name, pid in pids.items()}
    by_kind: dict[str, float] = {}
    for name, cpu_s in used.items():
        kind = name.rstrip("0123456789").rstrip("-")
        by_kind[kind] = by_kind.get(kind, 0.0) + cpu_s
    nodes_rss = sum(rss_bytes(node.pid) for node in cluster.nodes)
    return {
        "seconds": seconds,
        "cpu_percent": round(100 * sum(used.values()) / seconds, 2),
        "cpu_percent_by_kind": {kind: round(100 * cpu_s / seconds, 2) for kind, cpu_s in sorted(by_kind.items())},
        "nodes_rss_mib": round(nodes_rss / MIB, 1),
    }


async def settled(admin: WeirClient, name: str) -> bool:
    """Every partition of stream `name` has a live primary with three in-sync replicas (as each
    primary reports the partitions it leads)."""
    route = await admin.route(name, refresh=True)
    if not route.partitions or not all(entry.primary.alive for entry in route.partitions):
        return False
    led: dict[str, set[int]] = {}
    for entry in route.partitions:
        led.setdefault(entry.primary.address, set()).add(entry.partition)
    for address, partitions in led.items():
        async with NodeClient(address) as node:
            info = await node.stream_info(name)
        in_sync = {stats.partition: len(stats.in_sync_node_ids) for stats in info.stats.partitions}
        if any(in_sync.get(partition, 0) < 3 for partition in partitions):
            return False
    return True


async def create_timed(admin: WeirClient, name: str, partitions: int, timeout_s: float = 60.0) -> float:
    """Create a replicas-3 stream of `partitions` and wait until it settled; returns the seconds."""
    started = time.monotonic()
    while True:
        try:
            await admin.create_stream(stream_config(name, subjects=[f"{name}.>"], partitions=partitions, replicas=3))
            break
        except NotEnoughNodesError:  # a node's heartbeat lapsed on a busy machine: it comes back
            if time.monotonic() - started > timeout_s:
                raise
            log(f"creating {name}: a node is not alive; retrying")
            await asyncio.sleep(0.5)
    while not await settled(admin, name):
        if time.monotonic() - started > timeout_s:
            raise RuntimeError(f"stream {name} did not settle within {timeout_s:.0f} s")
        await asyncio.sleep(0.05)
    return round(time.monotonic() - started, 3)


async def publish_rate(admin: WeirClient, name: str, seconds: float) -> float:
    """Messages per second of PublishBatch (100 entries, ack all) to each of the 16 partitions of
    stream `name`, one call in flight per partition, for `seconds`."""
    route = await admin.route(name, refresh=True)
    payload = b"x" * 1024
    count, refused = 0, [0]
    deadline = time.monotonic() + seconds

    async def one_partition(index: int, address: str) -> None:
        nonlocal count
        entries = [streams_pb2.PublishEntry(subject=f"{name}.x", payload=payload, partition=index)] * BATCH
        async with NodeClient(address) as node:
            while time.monotonic() < deadline:
                try:
                    results = await node.publish_batch(name, entries, ack_level="all")
                except WeirError as error:  # a busy machine: an in-sync replica dropped out for a while
                    if not error.retryable:
                        raise
                    refused[0] += 1
                    continue
                count += sum(1 for result in results if result.result_code == "ok")

    started = time.monotonic()
    await asyncio.gather(*(one_partition(e.partition, e.primary.address) for e in route.partitions))
    if refused[0]:
        log(f"{name}: {refused[0]} batches refused for a while (retryable) and sent again")
    return round(count / (time.monotonic() - started), 1)


async def run(args: argparse.Namespace, cluster: LocalCluster) -> dict[str, Any]:
    report: dict[str, Any] = {"partitions": args.partitions, "partition_replicas": args.partitions * 3}
    async with WeirClient(cluster.router_addresses, timeout_s=30) as admin:
        await create_timed(admin, "publish-empty", PUBLISH_PARTITIONS)
        report["publish_empty_msgs_per_s"] = await publish_rate(admin, "publish-empty", args.publish_seconds)
        await admin.delete_stream("publish-empty")  # first, so the memory it left is in both windows
        await asyncio.sleep(args.settle_seconds)
        log("idle, empty")
        report["empty"] = await idle_figures(cluster, args.idle_seconds)
        created: list[float] = []
        remaining, number = args.partitions, 0
        report["create_s"] = {"each": created, "partitions_per_stream": STREAM_PARTITIONS}
        while remaining > 0:
            size = min(STREAM_PARTITIONS, remaining)
            try:
                created.append(await create_timed(admin, f"idle-{number}", size))
            except (WeirError, RuntimeError) as error:  # what a cluster that cannot take more says, reported
                report["stopped"] = {"partitions_created": args.partitions - remaining, "why": str(error)}
                log(f"stopped: {error}")
                return report
            log(f"created idle-{number} ({size} partitions x 3) in {created[-1]} s")
            remaining, number = remaining - size, number + 1
        report["create_s"]["largest"] = max(created)
        await asyncio.sleep(args.settle_seconds)
        log("idle, loaded")
        loaded = await idle_figures(cluster, args.idle_seconds)
        report["loaded"] = loaded
        replicas = args.partitions * 3
        report["cpu_percent_per_partition_replica"] = round(
            (loaded["cpu_percent"] - report["empty"]["cpu_percent"]) / replicas, 4
        )
        report["rss_mib_per_partition_replica"] = round(
            (loaded["nodes_rss_mib"] - report["empty"]["nodes_rss_mib"]) / replicas, 3
        )
        await create_timed(admin, "publish-loaded", PUBLISH_PARTITIONS)
        report["publish_loaded_msgs_per_s"] = await publish_rate(admin, "publish-loaded", args.publish_seconds)
        report["publish_ratio_loaded_to_empty"] = round(
            report["publish_loaded_msgs_per_s"] / max(report["publish_empty_msgs_per_s"], 1.0), 3
        )
    return report


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=1024, help="idle replicas-3 partitions (default 1024)")
    parser.add_argument("--idle-seconds", type=float, default=20.0, help="each idle CPU window (default 20)")
    parser.add_argument("--settle-seconds", type=float, default=10.0, help="pause before the loaded window")
    parser.add_argument("--publish-seconds", type=float, default=10.0, help="each publish phase (default 10)")
    parser.add_argument("--smoke", action="store_true", help="32 partitions, 2-second windows: checks it works")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON to this file")
    args = parser.parse_args(argv)
    if args.partitions < 1:
        parser.error(f"--partitions: at least 1, got {args.partitions}")
    if args.smoke:
        args.partitions, args.idle_seconds, args.settle_seconds, args.publish_seconds = 32, 2.0, 1.0, 2.0
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="weir-scale-") as directory:
        cluster = LocalCluster.start(Path(directory) / "cluster", nodes=3, routers=1, replicators=1)
        try:
            report = asyncio.run(run(args, cluster))
        finally:
            cluster.stop()
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
