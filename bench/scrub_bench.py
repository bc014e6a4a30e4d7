"""What the background scrub costs the publish path (issue 32): batched publishes to a partition
node with the scrub off and with it on at its default rate, alternating, in one run.

Run: ``uv run python -m bench.scrub_bench [--smoke] [--messages N] [--stored-mib M] [--out PATH]``
(``make bench`` runs it; ``make bench-scrub`` alone).

A local cluster (its own redis-server, 1 router, 1 partition node, replicas 1) first stores
`stored_mib` MiB of 1 KiB messages in a stream of their own, so the scrub always has data to
re-read. Then rounds alternate: the node is restarted with the scrub off
(``WEIR_NODE_SCRUB_BYTES_PER_SECOND=0``) or on at the default rate with passes back to back
(``WEIR_NODE_SCRUB_INTERVAL_MS=0``), and the client publishes `messages` messages of 1 KiB with
`publish_nowait` (ack level leader, fsync on). Figures (JSON on stdout): per round msgs/s and node
CPU µs per message, and for the scrub rounds the bytes the scrub checked per second meanwhile (from
the node's `weir_scrub_bytes_total`); `ratio`: the median throughput with the scrub over the median
without. Compare ratios from one run: the machine's speed drifts.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from weir import Client, stream_config
from weir_cli.launcher import LocalCluster, NodeHandle

from bench.report import Meter, run_and_report

DATA_STREAM, STREAM = "bench-scrub-data", "bench-scrub"
PARTITIONS = 4
PAYLOAD = b"s" * 1024
DEFAULT_RATE = 4 * 1024 * 1024  # WEIR_NODE_SCRUB_BYTES_PER_SECOND's default
ROUNDS = ("off", "on", "off", "on", "off", "on")


def scrubbed_bytes(node: NodeHandle) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{node.metrics_port}/metrics", timeout=5) as response:
        text = response.read().decode()
    found = re.search(r"^weir_scrub_bytes_total (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def publish(client: Client, stream: str, messages: int) -> None:
    futures = [await client.publish_nowait(stream, "bench.scrub", PAYLOAD) for _ in range(messages)]
    await client.flush()
    for future in futures:
        await future


async def restart(node: NodeHandle, scrub: bool) -> None:
    node.env["WEIR_NODE_SCRUB_BYTES_PER_SECOND"] = str(DEFAULT_RATE if scrub else 0)
    node.env["WEIR_NODE_SCRUB_INTERVAL_MS"] = "0"
    await asyncio.to_thread(node.restart)


async def one_round(cluster: LocalCluster, scrub: bool, messages: int) -> dict[str, Any]:
    node = cluster.nodes[0]
    await restart(node, scrub)
    async with Client(cluster.router_addresses) as client:
        await publish(client, STREAM, 100)  # warm: routes, channels, the SDK's batch streams
        await asyncio.sleep(0.5)  # the scrub's first pass is under way
        meter = Meter({"node": node})
        scrubbed_before = scrubbed_bytes(node)
        meter.start()
        await publish(client, STREAM, messages)
        figures = meter.figures(messages)
    if scrub:
        figures["scrub_bytes_per_s"] = round((scrubbed_bytes(node) - scrubbed_before) / figures["seconds"])
    return figures


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster = await asyncio.to_thread(
        LocalCluster.start, workdir / "cluster", nodes=1, routers=1, replicators=0, progress=None
    )
    try:
        async with Client(cluster.router_addresses) as client:
            await client.create_stream(stream_config(DATA_STREAM, partitions=PARTITIONS))
            await client.create_stream(stream_config(STREAM, partitions=PARTITIONS))
            started = time.perf_counter()
            await publish(client, DATA_STREAM, args.stored_mib * 1024)
            stored_s = time.perf_counter() - started
        rounds = [(mode, await one_round(cluster, mode == "on", args.messages)) for mode in ROUNDS]
    finally:
        await asyncio.to_thread(cluster.stop)
    by_mode = {mode: [figures["msgs_per_s"] for name, figures in rounds if name == mode] for mode in ("off", "on")}
    return {
        "settings": {
            "messages": args.messages,
            "stored_mib": args.stored_mib,
            "scrub_bytes_per_second": DEFAULT_RATE,
            "partitions": PARTITIONS,
            "payload_bytes": len(PAYLOAD),
        },
        "stored_seconds": round(stored_s, 1),
        "rounds": [{"scrub": mode, **figures} for mode, figures in rounds],
        "ratio": round(statistics.median(by_mode["on"]) / statistics.median(by_mode["off"]), 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.scrub_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=60_000, help="messages published per round")
    parser.add_argument("--stored-mib", type=int, default=64, help="MiB stored first, for the scrub to re-read")
    parser.add_argument("--smoke", action="store_true", help="small counts: checks it works")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.messages < 100 or args.stored_mib < 1:
        parser.error("--messages must be at least 100 and --stored-mib at least 1")
    if args.smoke:
        args.messages, args.stored_mib = min(args.messages, 500), 1
    return run_and_report(run, args, "weir-bench-scrub-")


if __name__ == "__main__":
    sys.exit(main())
