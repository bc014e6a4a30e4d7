"""The analytics job: how fresh its figures are, and how much memory it takes (issue 33).

Run: ``uv run python -m bench.analytics_bench [--smoke] [--samples N] [--out PATH]`` (``make bench``
runs it; ``make bench-analytics`` alone). Extra job settings as ``--job-setting NAME=VALUE``
(``WEIR_ANALYTICS_<NAME>``), e.g. ``--job-setting SPARK_DRIVER_MEMORY=1g`` to compare.

Starts a local cluster (its own redis-server, 1 router, 1 partition node) with the analytics job at
its default settings (trigger 5 s, window 10 s, local[*]), waits until the job folded its first batch,
then `samples` times: publishes one message to a stream at a random moment (so every phase of the
trigger is sampled) and polls the job's /metrics every 20 ms until the stream's published total
counts it. Meanwhile the resident set of the job's whole process tree (the Python driver, Spark's
JVM, the Python workers and data-source runners) is sampled every 250 ms.

Figures (JSON on stdout): ``publish_to_visible_ms`` p50 / p99 / max (from the publish call's
return to the scrape that shows it: the trigger wait, the micro-batch and the scrape interval);
``job_rss_peak_bytes`` (the highest sum over the tree of each process's proportional set size:
forked Python workers share pages with their daemon, which plain RSS would count once per process),
``job_rss_by_process_peak_bytes`` (each kind of process at that moment: jvm, driver, python workers)
and ``job_processes``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from weir import Client, stream_config
from weir_cli.launcher import LocalCluster

from bench.report import run_and_report

STREAM = "bench-analytics"
POLL_S = 0.02
RSS_EVERY_S = 0.25


def scrape_published(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        page = reply.read().decode()
    found = re.findall(
        rf'^weir_analytics_published_messages_total\{{partition="0",stream="{STREAM}"\}} (\S+)$', page, re.M
    )
    return int(float(found[0])) if found else 0


def process_tree(root: int) -> list[int]:
    """`root` and every descendant (from /proc)."""
    children: dict[int, list[int]] = {}
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(status.parent.name))
    found, queue = [], [root]
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue.extend(children.get(pid, []))
    return found


def kind_of(pid: int) -> str:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    if "java" in command.split(" ", 1)[0]:
        return "jvm"
    if "weir_analytics" in command:
        return "driver"
    if "python" in command:
        return "python_workers"
    return "other"


def rss(pid: int) -> int:
    """Proportional set size of `pid` (its private pages plus its share of pages shared with other
    processes, such as a forked worker's with its daemon), in bytes: what summing over a process
    tree should count. Plain RSS counts every shared page once per process."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class TreeMemory:
    """Samples the job's process tree; keeps the peak of the sum and the split at that moment."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peak = 0
        self.split: dict[str, int] = {}
        self.processes = 0

    def sample(self) -> None:
        pids = process_tree(self.root)
        split: Counter[str] = Counter()
        for pid in pids:
            split[kind_of(pid)] += rss(pid)
        total = sum(split.values())
        if total > self.peak:
            self.peak, self.split, self.processes = total, dict(split), len(pids)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await asyncio.to_thread(self.sample)
            await asyncio.sleep(RSS_EVERY_S)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure_freshness(client: Client, port: int, samples: int, trigger_s: float) -> list[float]:
    latencies: list[float] = []
    seen = await asyncio.to_thread(scrape_published, port)
    for _ in range(samples):
        await asyncio.sleep(random.uniform(0, trigger_s))
        await client.publish(STREAM, "fresh", b"x", partition=0)
        published = time.monotonic()
        deadline = published + 60
        while time.monotonic() < deadline:
            count = await asyncio.to_thread(scrape_published, port)
            if count > seen:
                latencies.append((time.monotonic() - published) * 1000)
                seen = count
                break
            await asyncio.sleep(POLL_S)
        else:
            raise RuntimeError("a publish did not show in the job's figures within 60 s")
    return latencies


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    settings = dict(item.split("=", 1) for item in args.job_setting)
    env = {f"WEIR_ANALYTICS_{name.upper()}": value for name, value in settings.items()}
    cluster = await asyncio.to_thread(
        LocalCluster.start, workdir / "cluster", nodes=1, routers=1, replicators=0, analytics=True, analytics_env=env
    )
    try:
        job = cluster.analytics
        assert job is not None and job.process is not None
        memory = TreeMemory(job.process.pid)
        stop = asyncio.Event()
        sampler = asyncio.create_task(memory.run(stop))
        trigger_s = int(settings.get("TRIGGER_INTERVAL_MS", "5000")) / 1000
        async with Client(cluster.router_addresses) as client:
            await client.create_stream(stream_config(STREAM))
            await client.publish(STREAM, "warm-up", b"x", partition=0)
            deadline = time.monotonic() + 120
            while await asyncio.to_thread(scrape_published, job.metrics_port) < 1:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the job folded nothing in 120 s:\n{job.log_tail()}")
                await asyncio.sleep(0.1)
            latencies = await measure_freshness(client, job.metrics_port, args.samples, trigger_s)
        stop.set()
        await sampler
    finally:
        await asyncio.to_thread(cluster.stop)
    return {
        "settings": {"samples": args.samples, "job_settings": settings or "defaults"},
        "publish_to_visible_ms": {
            "p50": round(statistics.median(latencies)),
            "p99": round(quantile(latencies, 0.99)),
            "max": round(max(latencies)),
        },
        "job_rss_peak_bytes": memory.peak,
        "job_rss_by_process_peak_bytes": memory.split,
        "job_processes": memory.processes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.analytics_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=40, help="publishes timed until visible")
    parser.add_argument("--smoke", action="store_true", help="a few samples: checks it works")
    parser.add_argument("--job-setting", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.samples < 1 or any("=" not in item for item in args.job_setting):
        parser.error("--samples must be at least 1 and --job-setting NAME=VALUE")
    if args.smoke:
        args.samples = min(args.samples, 3)
    return run_and_report(run, args, "weir-bench-analytics-")


if __name__ == "__main__":
    sys.exit(main())
