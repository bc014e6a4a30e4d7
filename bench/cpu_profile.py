"""Where Weir's server CPU goes, per message: each process and each of its threads (user and
system CPU from /proc/<pid>/task/<tid>/stat), for the issue 8 workloads' hot paths.

    uv run python -m bench.cpu_profile                   # every case, JSON on stdout
    uv run python -m bench.cpu_profile --cases publish-r3-all --seconds 10
    uv run python -m bench.cpu_profile --cases publish-r1 --idempotent    # a msg_id on every message
    uv run python -m bench.cpu_profile --cases publish-r3-all-p16 --fsync off   # what the fsyncs cost

Cases (1 KiB messages, one partition unless named -p16, the same cluster and pinning as
`bench.compare`: every server process on CPU 0, this load generator on CPU 1):

- ``publish-r1``: PublishBatch of 100, 4 in flight, replicas 1, ack leader, for `--seconds`;
- ``publish-r3-all``: the same with replicas 3 and ack all (3 nodes and a replicator);
- ``publish-r3-all-p16``: the same over 16 partitions, the 4 batches in flight sent round-robin
  over them as `bench.compare`'s p16 workloads do; each node leads some partitions and follows the
  rest, so its label says how many it leads;
- ``consume-r1``: publish `--messages`, then one consumer drains them (Fetch of 100, pipelined AckBatch);
- ``fixed-rate-r3-all``: `bench.compare`'s fixed-rate phase at replicas 3 ack all, for `--seconds`:
  2,000 msgs/s in batches of 50 while a consumer fetches (100 ms wait) and acks. Its figures add the
  publish-to-ack p50 and p99 in ms.

Output per case: msgs/s, and per process kind and thread name, CPU µs per message split into user
and system, plus the partition nodes' group commits and served RPCs per 100 messages (from their
/metrics) and every process's minor page faults per 100 messages. The
figures say which thread is the bottleneck; `docs/benchmarks.md` reads them. A profiler (py-spy)
says which functions; this says which process and thread, without slowing anything down.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.compare import harness
from bench.compare.driver import BenchError, Producer, TopicSpec
from bench.compare.weir_driver import WeirDriver

CASES = ("publish-r1", "publish-r3-all", "publish-r3-all-p16", "consume-r1", "fixed-rate-r3-all")
MANY_PARTITIONS = 16  # the partitions of a case named "-p16"
BATCH = 100
IN_FLIGHT = 4
SERVER_CPUS = {0}
LOAD_CPUS = {1}
STALL_TIMEOUT_S = 30.0
CLOCK_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
_COMMIT_METRIC = re.compile(r"^weir_group_commit_messages_count (\S+)$", re.M)
_RPC_METRIC = re.compile(r'^weir_rpc_duration_seconds_count\{method="([^"]+)"\} (\S+)$', re.M)

# (thread id, thread name) -> (user ticks, system ticks)
ThreadTimes = dict[tuple[int, str], tuple[int, int]]


def thread_times(pid: int) -> ThreadTimes:
    """CPU ticks of every live thread of `pid`."""
    times: ThreadTimes = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{task}/stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        times[(int(task), name)] = (int(fields[11]), int(fields[12]))
    return times


def minor_faults(pid: int) -> int:
    """Minor page faults of `pid` so far, all its threads (/proc/<pid>/stat): pages the kernel had to
    map in, e.g. heap that malloc gave back and took again (`weir_server.allocator`)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[7])


def per_message(
    before: dict[int, ThreadTimes], after: dict[int, ThreadTimes], processes: dict[str, int], messages: int
) -> dict[str, Any]:
    """{process: {"user_us", "system_us", "threads": {name: [user_us, system_us]}}} per message. The
    main thread (the event loop) is "main"; other threads are summed by name (Python's own threads,
    e.g. the commit thread, all show as "python"; grpc's pool as "event_engine"); under 0.2 µs left out."""
    result: dict[str, Any] = {}
    scale = 1e6 / CLOCK_TICKS_PER_SECOND / max(messages, 1)
    for process, pid in processes.items():
        user = system = 0.0
        threads: dict[str, list[float]] = {}
        for key, (end_user, end_system) in after.get(pid, {}).items():
            start_user, start_system = before.get(pid, {}).get(key, (0, 0))
            thread_user = (end_user - start_user) * scale
            thread_system = (end_system - start_system) * scale
            user += thread_user
            system += thread_system
            name = "main" if key[0] == pid else f"other {key[1]}"
            totals = threads.setdefault(name, [0.0, 0.0])
            totals[0] += thread_user
            totals[1] += thread_system
        result[process] = {
            "user_us": round(user, 1),
            "system_us": round(system, 1),
            "threads": {
                name: [round(thread_user, 1), round(thread_system, 1)]
                for name, (thread_user, thread_system) in sorted(threads.items())
                if thread_user + thread_system >= 0.2
            },
        }
    return result


def process_labels(driver: WeirDriver, topic: str) -> dict[str, int]:
    """{label: pid}: the partition nodes as "partition-node <name> (primary|secondary)" (with several
    partitions: "(leads k of n)"), the others by kind."""
    assert driver.cluster is not None
    primaries = driver.primaries(topic)
    labels: dict[str, int] = {}
    for node in driver.cluster.nodes:
        led = primaries.count(node.client_address)
        role = "primary" if led else "secondary"
        if len(primaries) > 1:
            role = f"leads {led} of {len(primaries)}"
        labels[f"partition-node {node.name} ({role})"] = node.pid
    for kind, pids in driver.server_pids().items():
        if kind != "weir-partition-node":
            for index, pid in enumerate(pids):
                labels[kind if len(pids) == 1 else f"{kind} {index}"] = pid
    return labels


def node_counters(driver: WeirDriver) -> dict[str, dict[str, float]]:
    """Each node's counts so far, from its /metrics: "group commits" (weir_group_commit_messages_count)
    and every RPC method it served (weir_rpc_duration_seconds_count)."""
    assert driver.cluster is not None
    counts: dict[str, dict[str, float]] = {}
    for node in driver.cluster.nodes:
        with urllib.request.urlopen(f"http://127.0.0.1:{node.metrics_port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        match = _COMMIT_METRIC.search(text)
        node_counts = {"group commits": float(match.group(1)) if match else 0.0}
        node_counts.update((method, float(count)) for method, count in _RPC_METRIC.findall(text))
        counts[node.name] = node_counts
    return counts


def per_100_messages(
    before: dict[str, dict[str, float]], after: dict[str, dict[str, float]], messages: int
) -> dict[str, dict[str, float]]:
    """{node: {counter: increase per 100 messages}}, counters that did not move left out."""
    result: dict[str, dict[str, float]] = {}
    for node, counts in after.items():
        moved = {
            name: round((count - before.get(node, {}).get(name, 0.0)) * 100 / max(messages, 1), 2)
            for name, count in sorted(counts.items())
        }
        result[node] = {name: value for name, value in moved.items() if value}
    return result


async def measure(driver: WeirDriver, topic: str, messages_of: Callable[[], Awaitable[int]]) -> dict[str, Any]:
    """Run `messages_of` (returns how many messages it moved) between two CPU readings."""
    processes = process_labels(driver, topic)
    pids = list(processes.values())
    counters_before = node_counters(driver)
    before = {pid: thread_times(pid) for pid in pids}
    faults_before = {process: minor_faults(pid) for process, pid in processes.items()}
    started = time.monotonic()
    messages = await messages_of()
    elapsed_s = time.monotonic() - started
    after = {pid: thread_times(pid) for pid in pids}
    faults = {
        process: round((minor_faults(pid) - faults_before[process]) * 100 / max(messages, 1), 1)
        for process, pid in processes.items()
    }
    counters_after = node_counters(driver)
    return {
        "messages": messages,
        "msgs_per_s": round(messages / elapsed_s),
        "cpu_us_per_msg": per_message(before, after, processes, messages),
        "per_100_msgs": per_100_messages(counters_before, counters_after, messages),
        "minor_faults_per_100_msgs": faults,
    }


async def run_case(
    case: str, seconds: float, messages: int, workdir: Path, *, idempotent: bool = False, fsync: str = "always"
) -> dict[str, Any]:
    partitions = MANY_PARTITIONS if case.endswith("-p16") else 1
    replicas = 3 if case.removesuffix("-p16").endswith("r3-all") else 1
    driver = WeirDriver(replicas, fsync=fsync, idempotent=idempotent)
    await driver.start(workdir, SERVER_CPUS)
    try:
        spec = TopicSpec(
            name="profile", partitions=partitions, replicas=replicas, ack="all" if replicas > 1 else "leader"
        )
        await driver.create_topic(spec)
        producer = await driver.producer(spec)
        payloads = [os.urandom(1024) for _ in range(BATCH)]

        async def publish_for(duration_s: float) -> int:
            sent = 0
            deadline = time.monotonic() + duration_s
            next_partition = itertools.cycle(range(partitions))  # round-robin, as bench.compare sends

            async def one_in_flight() -> None:
                nonlocal sent
                while time.monotonic() < deadline:
                    await producer.send_batch(next(next_partition), payloads)
                    sent += BATCH

            await asyncio.gather(*(one_in_flight() for _ in range(IN_FLIGHT)))
            return sent

        if case.startswith("publish"):
            await publish_for(1.0)  # warm up: connections, caches, the replicator's first rounds
            return await measure(driver, spec.name, lambda: publish_for(seconds))
        if case == "fixed-rate-r3-all":
            return await fixed_rate_case(driver, spec, producer, seconds)
        for _ in range(messages // (BATCH * IN_FLIGHT)):
            await asyncio.gather(*(producer.send_batch(0, payloads) for _ in range(IN_FLIGHT)))
        consumer = await driver.consumer(spec, 0)
        wanted = messages // (BATCH * IN_FLIGHT) * BATCH * IN_FLIGHT

        async def drain() -> int:
            received = 0
            last_progress = time.monotonic()
            while received < wanted:
                got = len(await consumer.receive(0, BATCH, 1000))
                received += got
                if got:
                    last_progress = time.monotonic()
                elif time.monotonic() - last_progress > STALL_TIMEOUT_S:
                    raise BenchError(f"consume-r1: {received} of {wanted} messages, none for {STALL_TIMEOUT_S:.0f} s")
            await consumer.close()
            return received

        return await measure(driver, spec.name, drain)
    finally:
        await driver.stop()


async def fixed_rate_case(driver: WeirDriver, spec: TopicSpec, producer: Producer, seconds: float) -> dict[str, Any]:
    """bench.compare's fixed-rate phase (its defaults: 2,000 msgs/s in batches of 50, a consumer
    tailing with a 100 ms wait and acking), measured as the other cases are. It does not fail when
    the rate was missed (bench.compare does): `msgs_per_s` says what was reached."""
    settings = harness.Settings(messages=0, latency_seconds=seconds, min_rate_fraction=0.0)
    workload = harness.Workload(spec.name, partitions=spec.partitions, replicas=spec.replicas, ack=spec.ack)
    consumer = await driver.consumer(spec, 0)
    latency: dict[str, Any] = {}

    async def at_rate() -> int:
        figures = await harness.fixed_rate(
            driver, workload, settings, producers=[producer], consumers=[consumer], filler=os.urandom(1024)
        )
        latency.update(figures)
        return int(figures["messages"])

    result = await measure(driver, spec.name, at_rate)
    await consumer.close()
    result["publish_to_ack_ms"] = {
        name: round(value / 1000, 1) for name, value in latency["publish_to_ack_us"].items() if name in ("p50", "p99")
    }
    return result


async def main(
    cases: list[str], seconds: float, messages: int, *, idempotent: bool = False, fsync: str = "always"
) -> dict[str, Any]:
    os.sched_setaffinity(0, LOAD_CPUS)
    report: dict[str, Any] = {
        "server_cpus": sorted(SERVER_CPUS),
        "load_cpus": sorted(LOAD_CPUS),
        "idempotent": idempotent,
        "fsync": fsync,
        "cases": {},
    }
    for case in cases:
        with tempfile.TemporaryDirectory(prefix=f"weir-profile-{case}-") as workdir:
            report["cases"][case] = await run_case(
                case, seconds, messages, Path(workdir), idempotent=idempotent, fsync=fsync
            )
        print(f"{case}: {report['cases'][case]['msgs_per_s']:,} msgs/s", file=sys.stderr)
    return report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.cpu_profile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument(
        "--seconds", type=float, default=8.0, help="publish and fixed-rate cases: seconds of load (default 8)"
    )
    parser.add_argument("--messages", type=int, default=40_000, help="consume case: messages drained (default 40000)")
    parser.add_argument(
        "--idempotent", action="store_true", help="a msg_id on every message (the SDK's default), as weir-idempotent"
    )
    parser.add_argument(
        "--fsync",
        choices=("always", "off"),
        default="always",
        help="the nodes' WEIR_NODE_FSYNC (default always; off measures what the fsyncs cost)",
    )
    arguments = parser.parse_args(argv)
    unknown = set(arguments.cases.split(",")) - set(CASES)
    if unknown:
        parser.error(f"--cases: unknown {sorted(unknown)}; choose from {', '.join(CASES)}")
    if os.cpu_count() is None or (os.cpu_count() or 0) < 2:
        parser.error("needs 2 CPUs (servers on CPU 0, load on CPU 1)")
    return arguments


if __name__ == "__main__":
    args = parse_args()
    try:
        report = asyncio.run(
            main(args.cases.split(","), args.seconds, args.messages, idempotent=args.idempotent, fsync=args.fsync)
        )
        print(json.dumps(report, indent=2))
    except BenchError as error:
        sys.exit(f"cpu_profile: {error}")
