"""Replication benchmark of a local Weir cluster over real gRPC on 127.0.0.1: what replicas=3 with
ack_level all costs next to replicas=1 with ack_level leader, on the same cluster in the same run.

Run: ``uv run python -m bench.cluster_bench [--smoke] [--repeat N] [--workloads A,B] [--out PATH]``
(``make bench`` runs it after ``bench.node_bench``).

Starts one local cluster (``weir_cli.launcher.LocalCluster``: its own redis-server, 1 router, 3
partition nodes, 1 replicator; product default timings, the nodes' fsync setting, default
"always") in a temporary directory. When the machine has at least 2 CPUs every cluster process
(all its threads) is pinned to CPU 0 and this process to CPU 1, as node_bench pins its node: the
whole cluster shares one core, so a replicas=3 stream pays for its two extra copies (two more
nodes' appends and fsyncs, the replicator's pulls and pushes) out of the same CPU budget as the
replicas=1 stream. ``--no-pin`` leaves scheduling to the OS.

Two stream configurations, each measured on every workload in a fresh stream (file storage):

- ``replicas1_leader``: replicas=1, publishes with ack_level leader (committed and fsynced on the
  primary before the answer).
- ``replicas3_all``: replicas=3, min_insync_replicas=2, publishes with ack_level all (also held by
  every in-sync replica, as the primary's high watermark says, before the answer). The run checks
  that all three replicas stayed in sync (``min_in_sync_after``).

Workloads (every call goes straight to the partition's primary, as the route names it; the stream
is created through the router and not timed):

- ``publish_batch_100_p1``: 1 partition, PublishBatch of 100 entries, 4 calls in flight (max rate).
- ``publish_batch_100_p16``: 16 partitions spread by the router over the 3 nodes, PublishBatch of
  100 entries each aimed at one partition, one call in flight per partition (16 in all).
- ``publish_single_c1``: 1 partition, one single-message Publish at a time (publish-to-ack latency).

Before the clock starts every partition gets one warm-up publish with the run's ack level (it also
waits, for replicas=3, until the replicator ships the new partition); it is not timed or counted.
For each workload and repeat the two configurations run back to back, alternating which goes first,
on the same cluster. Correctness is checked on every run: a Publish counts when it returns a
seq > 0, a PublishBatch entry when its result_code is "ok" with a seq > 0, and a run that does not
get every message acknowledged fails. Afterwards GetStreamInfo on the internal port of every node
holding the stream must show, per partition, last_seq = the messages published there (warm-up
included), the same on all three replicas for replicas=3 (polled for up to 30 s; the wait is
``replicas_converged_s``; a run whose primary reports fewer in-sync replicas than copies afterwards
is logged, as its ack_level all waited for fewer copies). Request objects are built once per run and
reused, as in node_bench. Each run's stream is deleted afterwards (untimed), so idle replicated
partitions (the replicator's long polls) do not cost the later runs CPU.

Units in the JSON (stdout, indent=2), per workload and configuration: ``messages`` and ``calls``
counts, ``seconds`` wall-clock seconds of the timed phase, ``msgs_per_s`` messages per second,
``mib_per_s`` payload MiB (2**20 bytes) per second, ``latency_us`` microseconds per call from the
call to its answer (p50/p99 by nearest rank; for publish_batch_* one call is 100 messages),
``cpu_us_per_msg`` CPU microseconds (user + system from /proc, 10 ms tick resolution) per message
of the partition nodes together (``nodes``), the replicator, the router, redis-server and this
benchmark process (``client``, all its threads) during the timed phase, background work included
(heartbeats, placement refreshes, idle polls). ``ratio_replicas3_all_to_replicas1`` is the
replicas3_all ``msgs_per_s`` divided by the replicas1_leader one (the median runs';
``runs_ratio`` pairs the two configurations' runs of each repeat), and
``latency_ratio_replicas3_all_to_replicas1`` the same for p50/p99 latency. ``peak_rss_mib`` is
each process kind's resident-set high-water mark (VmHWM, MiB) since it started, read after the last
run (the largest of the nodes, and each node's; ``client`` is
this process's ru_maxrss). With ``--repeat N`` each (workload, configuration) runs N times and the
run with the median ``msgs_per_s`` is reported, with every run's ``msgs_per_s`` in
``runs_msgs_per_s``. Progress goes to stderr; ``--keep`` keeps the cluster's data and logs. Other
work on the machine shows up in the figures: compare ratios from one run rather than absolute
figures across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from weir.client import ACK_LEVELS, NodeClient, stream_config
from weir.cluster import WeirClient
from weir.errors import NoSuchStreamError, WeirError
from weir.options import AckLevel
from weir.v1 import streams_pb2, types_pb2
from weir_cli.launcher import LocalCluster, ProcessHandle

from bench.node_bench import (
    CALL_TIMEOUT_S,
    MIB,
    SUBJECT,
    allowed_cpus,
    event_loop_name,
    latency_figures,
    machine_facts,
    message_counts,
    parse_workloads,
    pin_this_process,
    run_event_loop,
    run_pool,
)
from bench.report import print_report

WORKLOADS = ("publish_batch_100_p1", "publish_batch_100_p16", "publish_single_c1")
# Messages per run.
DEFAULT_COUNTS = {
    "publish_batch_100_p1": 20_000,
    "publish_batch_100_p16": 19_200,
    "publish_single_c1": 400,
}
SMOKE_COUNTS = {
    "publish_batch_100_p1": 400,
    "publish_batch_100_p16": 1_600,
    "publish_single_c1": 30,
}
PARTITIONS = {"publish_batch_100_p1": 1, "publish_batch_100_p16": 16, "publish_single_c1": 1}
BATCH = 100
BATCH_IN_FLIGHT = 4  # publish_batch_100_p1; publish_batch_100_p16 has one call in flight per partition


@dataclass(frozen=True)
class StreamSetup:
    """One stream configuration under test."""

    name: str
    replicas: int
    min_insync_replicas: int
    ack_level: AckLevel


CONFIGS = (
    StreamSetup("replicas1_leader", replicas=1, min_insync_replicas=0, ack_level="leader"),
    StreamSetup("replicas3_all", replicas=3, min_insync_replicas=2, ack_level="all"),
)
RATIO_KEY = "ratio_replicas3_all_to_replicas1"
CONVERGE_TIMEOUT_S = 30.0
WARMUP_TIMEOUT_S = 30.0
ROUTERS = 1
REPLICATORS = 1
NODES = 3


def log(message: str) -> None:
    """A progress line on stderr."""
    print(f"[cluster_bench] {message}", file=sys.stderr, flush=True)


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` from /proc, 0 if unknown (for redis-server, which
    has no ProcessHandle)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def process_peak_rss_bytes(pid: int) -> int:
    """VmHWM of process `pid` in bytes, 0 if unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def pin_process(pid: int, cpus: set[int]) -> None:
    """Pin every thread of process `pid` to `cpus` (threads it starts later inherit it)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            os.sched_setaffinity(int(task), cpus)


class CpuMeter:
    """CPU seconds of the cluster's processes by kind, and of this process."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.kinds: dict[str, list[ProcessHandle]] = {
            "nodes": list(cluster.nodes),
            "replicator": list(cluster.replicators),
            "router": list(cluster.routers),
        }
        self.redis_pid = cluster.redis.process.pid if cluster.redis.process is not None else 0

    def read(self) -> dict[str, float]:
        figures = {kind: sum(handle.cpu_seconds() for handle in handles) for kind, handles in self.kinds.items()}
        figures["redis"] = process_cpu_seconds(self.redis_pid)
        figures["client"] = time.process_time()
        return figures


@dataclass
class RunResult:
    """One timed run of one configuration: counts, wall-clock seconds, per-call latencies (ns), CPU
    seconds by process kind and what the replicas reported afterwards."""

    workload: str
    setup: str
    messages: int
    calls: int
    payload_bytes: int
    seconds: float
    latencies_ns: list[int] = field(repr=False)
    cpu_s: dict[str, float]
    replicas_converged_s: float = 0.0
    min_in_sync_after: int = 0

    @property
    def msgs_per_s(self) -> float:
        """Messages per wall-clock second."""
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def figures(self) -> dict[str, Any]:
        """The JSON figures of this run (units in the module docstring)."""
        return {
            "messages": self.messages,
            "calls": self.calls,
            "seconds": round(self.seconds, 4),
            "msgs_per_s": round(self.msgs_per_s, 1),
            "mib_per_s": round(self.payload_bytes / MIB / self.seconds, 2) if self.seconds > 0 else 0.0,
            "latency_us": latency_figures(self.latencies_ns),
            "cpu_us_per_msg": {
                kind: round(seconds * 1e6 / self.messages, 2) if self.messages else 0.0
                for kind, seconds in self.cpu_s.items()
            },
            "replicas_converged_s": round(self.replicas_converged_s, 3),
            "min_in_sync_after": self.min_in_sync_after,
        }


def median_run(runs: list[RunResult]) -> RunResult:
    """The run with the median msgs_per_s (the lower middle one for an even count)."""
    ordered = sorted(runs, key=lambda run: run.msgs_per_s)
    return ordered[(len(ordered) - 1) // 2]


def ratio(numerator: float, denominator: float) -> float:
    return round(numerator / denominator, 3) if denominator > 0 else 0.0


class Bench:
    """The workloads against one cluster; `run` times one (workload, configuration) in a fresh stream."""

    def __init__(self, cluster: LocalCluster, admin: WeirClient, payload: bytes) -> None:
        self.cluster = cluster
        self.admin = admin
        self.payload = payload
        self.meter = CpuMeter(cluster)
        self._clients: dict[str, NodeClient] = {}
        self._streams = 0

    def node_client(self, address: str) -> NodeClient:
        """A cached client of a node address (client or internal port)."""
        client = self._clients.get(address)
        if client is None:
            client = self._clients[address] = NodeClient(address, timeout_s=CALL_TIMEOUT_S)
        return client

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()

    async def fresh_stream(self, workload: str, setup: StreamSetup) -> tuple[str, list[str]]:
        """Create a stream for one run; returns its name and each partition's primary (client address)."""
        self._streams += 1
        name = f"bench-{workload.replace('_', '-')}-{setup.replicas}-{self._streams}"
        config = stream_config(
            name,
            partitions=PARTITIONS[workload],
            replicas=setup.replicas,
            min_insync_replicas=setup.min_insync_replicas,
            storage="file",
        )
        await self.admin.create_stream(config)
        route = await self.admin.route(name, refresh=True)
        primaries = [entry.primary.address for entry in sorted(route.partitions, key=lambda e: e.partition)]
        if len(primaries) != PARTITIONS[workload] or not all(primaries):
            raise RuntimeError(f"stream {name}: route without a primary for every partition: {route}")
        return name, primaries

    async def warm_up(self, stream: str, primaries: list[str], ack_level: AckLevel) -> None:
        """One acknowledged publish per partition (retried while the cluster sets the stream up:
        a replicas=3 partition needs the replicator to start shipping it). One msg_id per partition:
        a retry after an ack-all timeout (the message stored, its replication slow on a busy machine)
        is answered as a duplicate at seq 1 instead of storing a second warm-up message."""

        async def one(partition: int, address: str) -> None:
            client = self.node_client(address)
            deadline = time.monotonic() + WARMUP_TIMEOUT_S
            while True:
                try:
                    response = await client.publish(
                        stream,
                        SUBJECT,
                        self.payload,
                        partition=partition,
                        ack_level=ack_level,
                        msg_id=f"warm-up-{stream}-{partition}",
                    )
                except WeirError as error:
                    if not error.retryable or time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.05)
                    continue
                if response.seq != 1:
                    raise RuntimeError(f"{stream}/{partition}: warm-up publish got seq {response.seq}")
                return

        await asyncio.gather(*(one(partition, address) for partition, address in enumerate(primaries)))

    async def run(self, workload: str, setup: StreamSetup, messages: int) -> RunResult:
        stream, primaries = await self.fresh_stream(workload, setup)
        await self.warm_up(stream, primaries, setup.ack_level)
        ack_level = ACK_LEVELS[setup.ack_level]
        latencies: list[int] = []
        if workload == "publish_single_c1":
            calls, body = self.publish_single(stream, primaries[0], ack_level, messages, latencies)
            per_partition = [messages]
        else:
            calls, body, per_partition = self.publish_batches(stream, primaries, ack_level, messages, latencies)
        cpu_before = self.meter.read()
        start = time.perf_counter()
        ok = await body
        seconds = time.perf_counter() - start
        cpu_after = self.meter.read()
        if ok != messages:
            raise RuntimeError(f"{workload} {setup.name}: {ok} of {messages} messages acknowledged")
        result = RunResult(
            workload=workload,
            setup=setup.name,
            messages=messages,
            calls=calls,
            payload_bytes=messages * len(self.payload),
            seconds=seconds,
            latencies_ns=latencies,
            cpu_s={kind: cpu_after[kind] - cpu_before[kind] for kind in cpu_before},
        )
        expected = [count + 1 for count in per_partition]  # + the warm-up message
        result.replicas_converged_s, result.min_in_sync_after = await self.check_replicas(stream, setup, expected)
        if result.min_in_sync_after < setup.replicas:
            log(f"{workload} {setup.name}: only {result.min_in_sync_after} in-sync replicas after the run")
        await self.drop_stream(stream)
        return result

    async def drop_stream(self, stream: str) -> None:
        """Delete the run's stream (untimed)."""
        await self.admin.delete_stream(stream)

    def publish_single(
        self, stream: str, primary: str, ack_level: int, messages: int, latencies: list[int]
    ) -> tuple[int, Coroutine[Any, Any, int]]:
        """(calls, coroutine making `messages` single-message Publish calls one at a time and
        returning how many were acknowledged with a seq > 0)."""
        request = streams_pb2.PublishRequest(
            stream=stream,
            subject=SUBJECT,
            payload=self.payload,
            ack_level=ack_level,  # type: ignore[arg-type]
        )
        publish = self.node_client(primary).stub.Publish
        record = latencies.append
        clock = time.perf_counter_ns

        async def call(_: int) -> int:
            begin = clock()
            response = await publish(request, timeout=CALL_TIMEOUT_S)
            record(clock() - begin)
            return 1 if response.seq > 0 else 0

        return messages, run_pool(messages, 1, call)

    def publish_batches(
        self, stream: str, primaries: list[str], ack_level: int, messages: int, latencies: list[int]
    ) -> tuple[int, Coroutine[Any, Any, int], list[int]]:
        """(calls, coroutine publishing `messages` in PublishBatch calls of BATCH entries, call i to
        partition i mod partitions on its primary, returning the entries answered "ok" with a
        seq > 0, messages per partition). One partition: BATCH_IN_FLIGHT calls in flight; more:
        one per partition."""
        partitions = len(primaries)
        sizes = [BATCH] * (messages // BATCH) + ([messages % BATCH] if messages % BATCH else [])
        requests: list[streams_pb2.PublishBatchRequest] = []
        shared: dict[tuple[int, int], streams_pb2.PublishBatchRequest] = {}
        per_partition = [0] * partitions
        for index, size in enumerate(sizes):
            partition = index % partitions
            per_partition[partition] += size
            request = shared.get((partition, size))
            if request is None:
                entry = streams_pb2.PublishEntry(subject=SUBJECT, payload=self.payload, partition=partition)
                request = shared[(partition, size)] = streams_pb2.PublishBatchRequest(
                    stream=stream,
                    entries=[entry] * size,
                    ack_level=ack_level,  # type: ignore[arg-type]
                )
            requests.append(request)
        stubs = [self.node_client(address).stub.PublishBatch for address in primaries]
        record = latencies.append
        clock = time.perf_counter_ns

        async def call(index: int) -> int:
            begin = clock()
            response = await stubs[index % partitions](requests[index], timeout=CALL_TIMEOUT_S)
            record(clock() - begin)
            return sum(1 for result in response.results if result.result_code == "ok" and result.seq > 0)

        in_flight = BATCH_IN_FLIGHT if partitions == 1 else partitions
        return len(requests), run_pool(len(requests), in_flight, call), per_partition

    async def check_replicas(self, stream: str, setup: StreamSetup, expected: list[int]) -> tuple[float, int]:
        """Poll GetStreamInfo on every node's internal port until each of `setup.replicas` copies of
        every partition ends at last_seq `expected[partition]` (untimed); returns (seconds it took,
        the smallest in-sync set a primary reported). Fails after CONVERGE_TIMEOUT_S, when a copy went
        beyond, or when a partition has another number of copies."""
        started = time.monotonic()
        while True:
            ends: list[dict[str, int]] = [{} for _ in expected]  # per partition: node -> last_seq
            in_sync: list[int] = []
            for node in self.cluster.nodes:
                try:
                    info = await self.node_client(node.internal_address).stream_info(stream)
                except NoSuchStreamError:
                    continue  # a node holding no partition of it
                for stats in info.stats.partitions:
                    ends[stats.partition][node.name] = stats.last_seq
                    if stats.role == types_pb2.PARTITION_ROLE_PRIMARY:
                        in_sync.append(len(stats.in_sync_node_ids) if setup.replicas > 1 else 1)
            wrong = [
                (partition, copies)
                for partition, copies in enumerate(ends)
                if len(copies) != setup.replicas or any(seq > expected[partition] for seq in copies.values())
            ]
            if wrong or len(in_sync) != len(expected):
                raise RuntimeError(
                    f"stream {stream}: (partition, last_seq per node) {wrong[:5]}, {len(in_sync)} primaries; "
                    f"expected {setup.replicas} copies ending at {expected}"
                )
            if all(set(copies.values()) == {expected[partition]} for partition, copies in enumerate(ends)):
                return time.monotonic() - started, min(in_sync)
            if time.monotonic() - started > CONVERGE_TIMEOUT_S:
                raise RuntimeError(f"stream {stream}: copies did not converge: {ends}, expected {expected}")
            await asyncio.sleep(0.05)


async def run_all(
    cluster: LocalCluster, payload_bytes: int, counts: dict[str, int], repeat: int, *, workloads: list[str]
) -> dict[str, dict[str, Any]]:
    """Each of `workloads` `repeat` times per configuration (the two back to back, alternating which
    goes first); the median runs' figures and the replicas3/replicas1 ratios per workload."""
    payload = os.urandom(payload_bytes)
    report: dict[str, dict[str, Any]] = {}
    async with WeirClient(cluster.router_addresses, timeout_s=CALL_TIMEOUT_S) as admin:
        bench = Bench(cluster, admin, payload)
        try:
            for workload in workloads:
                runs: dict[str, list[RunResult]] = {setup.name: [] for setup in CONFIGS}
                for attempt in range(1, repeat + 1):
                    order = CONFIGS if attempt % 2 else tuple(reversed(CONFIGS))
                    for setup in order:
                        run = await bench.run(workload, setup, counts[workload])
                        figures = run.figures()
                        log(
                            f"{workload} {setup.name} run {attempt}/{repeat}: {run.messages} msgs in "
                            f"{run.seconds:.2f} s = {run.msgs_per_s:,.0f} msgs/s, "
                            f"p50 {figures['latency_us']['p50']} us, p99 {figures['latency_us']['p99']} us, "
                            f"node cpu {figures['cpu_us_per_msg']['nodes']} us/msg, "
                            f"converged in {figures['replicas_converged_s']} s"
                        )
                        runs[setup.name].append(run)
                report[workload] = compare(runs)
            rss = peak_rss(cluster)
        finally:
            await bench.close()
    return {"workloads": report, "peak_rss_mib": rss}


def compare(runs: dict[str, list[RunResult]]) -> dict[str, Any]:
    """The median run of each configuration and the ratios between them."""
    one, three = (runs[setup.name] for setup in CONFIGS)
    entry: dict[str, Any] = {}
    for setup in CONFIGS:
        figures = median_run(runs[setup.name]).figures()
        figures["runs_msgs_per_s"] = [round(run.msgs_per_s, 1) for run in runs[setup.name]]
        entry[setup.name] = figures
    base, replicated = entry[CONFIGS[0].name], entry[CONFIGS[1].name]
    entry[RATIO_KEY] = ratio(replicated["msgs_per_s"], base["msgs_per_s"])
    entry["runs_ratio"] = [ratio(b.msgs_per_s, a.msgs_per_s) for a, b in zip(one, three, strict=True)]
    entry["latency_ratio_replicas3_all_to_replicas1"] = {
        pct: ratio(replicated["latency_us"][pct], base["latency_us"][pct]) for pct in ("p50", "p99")
    }
    return entry


def peak_rss(cluster: LocalCluster) -> dict[str, Any]:
    """Each process kind's VmHWM in MiB (the largest of several, and each node's)."""

    def mib(value: int) -> float:
        return round(value / MIB, 1)

    nodes = {node.name: mib(node.peak_rss_bytes()) for node in cluster.nodes}
    redis_pid = cluster.redis.process.pid if cluster.redis.process is not None else 0
    return {
        "node": max(nodes.values(), default=0.0),
        "nodes": nodes,
        "router": mib(max((router.peak_rss_bytes() for router in cluster.routers), default=0)),
        "replicator": mib(max((handle.peak_rss_bytes() for handle in cluster.replicators), default=0)),
        "redis": mib(process_peak_rss_bytes(redis_pid)),
        # ru_maxrss is in KiB on Linux.
        "client": mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024),
    }


def cluster_pids(cluster: LocalCluster) -> dict[str, int]:
    pids = {handle.name: handle.pid for handle in (*cluster.routers, *cluster.nodes, *cluster.replicators)}
    if cluster.redis.process is not None:
        pids["redis"] = cluster.redis.process.pid
    return pids


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--payload-bytes", type=int, default=1024, help="payload size in bytes (default 1024)")
    parser.add_argument(
        "--repeat", type=int, default=None, help="runs per workload and configuration, median reported (default 3)"
    )
    parser.add_argument("--smoke", action="store_true", help="a few hundred messages per workload, repeat 1")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON to this file")
    parser.add_argument("--fsync", choices=("always", "off"), default="always", help="the nodes' fsync setting")
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop", help="client event loop")
    parser.add_argument(
        "--keep", action="store_true", help="keep the cluster's data and logs (the temporary directory is logged)"
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin the cluster and the benchmark to CPUs")
    parser.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help=f"comma-separated workloads to run, in this order (default all: {','.join(WORKLOADS)})",
    )
    for workload in WORKLOADS:
        parser.add_argument(
            f"--{workload.replace('_', '-')}-messages",
            dest=f"{workload}_messages",
            type=int,
            default=None,
            help=f"messages per run of {workload} (default {DEFAULT_COUNTS[workload]:,})",
        )
    args = parser.parse_args(argv)
    if args.repeat is None:
        args.repeat = 1 if args.smoke else 3
    if args.repeat < 1 or args.payload_bytes < 1:
        parser.error("--repeat and --payload-bytes must be >= 1")
    args.workloads = parse_workloads(parser, args.workloads, WORKLOADS)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints the JSON report on stdout and returns the exit code."""
    args = parse_args(argv)
    counts = message_counts(args, SMOKE_COUNTS, DEFAULT_COUNTS)
    loop_name = event_loop_name(args.loop)
    cpu_count = os.cpu_count() or 1
    pinned = cpu_count >= 2 and not args.no_pin
    started = time.perf_counter()
    timestamp = datetime.now(UTC).isoformat(timespec="seconds")
    tmp_dir = Path(tempfile.mkdtemp(prefix="weir-cluster-bench-"))
    try:
        results, cluster_cpus = _run_on_cluster(args, counts, loop_name, pinned=pinned, data_dir=tmp_dir)
    finally:
        if args.keep:
            log(f"cluster data and logs kept in {tmp_dir}")
        else:
            shutil.rmtree(tmp_dir, ignore_errors=True)
    report = {
        "benchmark": "weir cluster_bench",
        "timestamp": timestamp,
        "machine": machine_facts(
            cpu_count, loop_name, pinned, cluster_cpus=",".join(sorted(set(cluster_cpus.values())))
        ),
        **_setup_facts(args, counts),
        "workloads": results["workloads"],
        "peak_rss_mib": results["peak_rss_mib"],
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    print_report(report, args.out)
    log(f"done in {report['total_seconds']} s")
    return 0


def _run_on_cluster(
    args: argparse.Namespace, counts: dict[str, int], loop_name: str, *, pinned: bool, data_dir: Path
) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Start the cluster under `data_dir`, pin it (with `pinned`), run the workloads and stop every
    process again, logging any that exits non-zero; (run_all's results, each process's cpus)."""
    started = time.perf_counter()
    # Started from the main thread, which outlives the cluster (die_with_parent).
    cluster = LocalCluster.start(
        data_dir / "cluster",
        nodes=NODES,
        routers=ROUTERS,
        replicators=REPLICATORS,
        node_env={"WEIR_NODE_FSYNC": args.fsync},
    )
    try:
        pids = cluster_pids(cluster)
        if pinned:
            for pid in pids.values():
                pin_process(pid, {0})
            pin_this_process({1})
        cluster_cpus = {name: allowed_cpus(pid) for name, pid in pids.items()}
        log(
            f"cluster up in {time.perf_counter() - started:.1f} s: routers {cluster.router_addresses}, "
            f"nodes {[node.client_address for node in cluster.nodes]}; cpus {cluster_cpus}, "
            f"bench cpus {sorted(os.sched_getaffinity(0))}"
        )
        results = run_event_loop(
            loop_name, run_all(cluster, args.payload_bytes, counts, args.repeat, workloads=args.workloads)
        )
    finally:
        handles: list[ProcessHandle] = [*cluster.replicators, *cluster.routers, *cluster.nodes]
        for process in handles:  # the order of LocalCluster.stop, with each exit code checked
            code = process.stop()
            if code != 0:
                log(f"{process.name} exited with {code}; log tail:\n{process.log_tail()}")
        cluster.redis.stop()
    return results, cluster_cpus


def _setup_facts(args: argparse.Namespace, counts: dict[str, int]) -> dict[str, Any]:
    """The report's cluster, configs and config sections: what ran, with which settings."""
    return {
        "cluster": {
            "nodes": NODES,
            "routers": ROUTERS,
            "replicators": REPLICATORS,
            "fsync": args.fsync,
            "storage": "file",
            "timings": "product defaults",
        },
        "configs": {
            setup.name: {
                "replicas": setup.replicas,
                "min_insync_replicas": setup.min_insync_replicas,
                "ack_level": setup.ack_level,
            }
            for setup in CONFIGS
        },
        "config": {
            "payload_bytes": args.payload_bytes,
            "repeat": args.repeat,
            "smoke": args.smoke,
            "messages_per_run": counts,
            "partitions": {workload: PARTITIONS[workload] for workload in args.workloads},
            "batch_entries": BATCH,
            "batch_calls_in_flight": {"1 partition": BATCH_IN_FLIGHT, "more partitions": "one per partition"},
            "selection": "median run by msgs_per_s per configuration",
        },
    }


if __name__ == "__main__":
    sys.exit(main())
