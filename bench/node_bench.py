"""Single-node benchmark of a Weir partition node over real gRPC on 127.0.0.1.

Run: ``uv run python -m bench.node_bench [--smoke] [--repeat N] [--out PATH]`` (``make bench``).

Starts one partition node (``weir.launcher.start_node``) in a temporary directory, pinned to CPU 0
while this process runs on CPU 1 when the machine has at least 2 CPUs, and measures five workloads,
each in a fresh stream (1 partition, file storage, the node's fsync setting, default "always"):

- ``publish_single_c1``: one Publish at a time (latency of one acknowledged publish).
- ``publish_single_c64``: single-message Publish calls, 64 in flight.
- ``publish_batch_100`` / ``publish_batch_1000``: PublishBatch with 100 / 1000 entries per call,
  4 calls in flight.
- ``read_1000``: ReadMessages with max_messages=1000 from seq 1 to the end of a stream filled
  beforehand (the fill is not timed).

Every publish uses the default ack level (leader: committed and fsynced before the answer) and is
checked: a Publish counts when it returns a seq > 0, a PublishBatch entry when its result_code is
"ok"; reads check that seqs are gap-free and count payload bytes. A workload that does not get every
message acknowledged (or read back) fails the run. Request objects are built once per workload and
reused (every call is still serialized, sent, stored and answered): the harness measures the node,
not protobuf object construction in the client.

Units in the JSON (stdout, indent=2): ``messages`` and ``calls`` are counts, ``seconds`` is
wall-clock seconds of the timed phase, ``msgs_per_s`` messages per second, ``mib_per_s`` payload
MiB (2**20 bytes) per second, ``latency_us`` microseconds per call (publish to ack for publishes,
one ReadMessages call for reads; p50/p99 by nearest rank), ``server_cpu_us_per_msg`` node process
CPU microseconds (user + system, from /proc, 10 ms tick resolution) per message,
``client_cpu_us_per_msg`` the same for this benchmark process (all its threads), and
``node_peak_rss_mib`` the node's resident-set high-water mark (VmHWM, MiB) since it started, read
after the run. With ``--repeat N`` each workload runs N times and the run with the median
``msgs_per_s`` is reported, with every run's ``msgs_per_s`` in ``runs_msgs_per_s``. Progress goes to
stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import __version__ as protobuf_version
from weir.client import NodeClient, stream_config
from weir.launcher import NodeHandle, start_node
from weir.v1 import streams_pb2

WORKLOADS = (
    "publish_single_c1",
    "publish_single_c64",
    "publish_batch_100",
    "publish_batch_1000",
    "read_1000",
)
# Messages per run (for read_1000: messages filled, then read back).
DEFAULT_COUNTS = {
    "publish_single_c1": 4_000,
    "publish_single_c64": 8_000,
    "publish_batch_100": 100_000,
    "publish_batch_1000": 100_000,
    "read_1000": 50_000,
}
SMOKE_COUNTS = {
    "publish_single_c1": 200,
    "publish_single_c64": 640,
    "publish_batch_100": 1_000,
    "publish_batch_1000": 2_000,
    "read_1000": 2_000,
}
SINGLE_CONCURRENCY = 64
BATCH_IN_FLIGHT = 4
READ_MAX_MESSAGES = 1000
FILL_BATCH = 1000
CALL_TIMEOUT_S = 60.0
SUBJECT = "bench.msg"
MIB = 1024 * 1024


def log(message: str) -> None:
    """A progress line on stderr."""
    print(f"[node_bench] {message}", file=sys.stderr, flush=True)


@dataclass
class RunResult:
    """One timed run: counts, wall-clock seconds, per-call latencies (ns), node CPU seconds and RSS bytes."""

    workload: str
    messages: int
    calls: int
    payload_bytes: int
    seconds: float
    latencies_ns: list[int] = field(repr=False)
    server_cpu_s: float
    client_cpu_s: float
    node_peak_rss_bytes: int

    @property
    def msgs_per_s(self) -> float:
        """Messages per wall-clock second."""
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def us_per_msg(self, seconds: float) -> float:
        """`seconds` as microseconds per message."""
        return round(seconds * 1e6 / self.messages, 2) if self.messages else 0.0

    def figures(self) -> dict[str, Any]:
        """The JSON figures of this run (units in the module docstring)."""
        return {
            "messages": self.messages,
            "calls": self.calls,
            "seconds": round(self.seconds, 4),
            "msgs_per_s": round(self.msgs_per_s, 1),
            "mib_per_s": round(self.payload_bytes / MIB / self.seconds, 2) if self.seconds > 0 else 0.0,
            "latency_us": {
                "p50": round(percentile(self.latencies_ns, 50) / 1000, 1),
                "p99": round(percentile(self.latencies_ns, 99) / 1000, 1),
            },
            "server_cpu_us_per_msg": self.us_per_msg(self.server_cpu_s),
            "client_cpu_us_per_msg": self.us_per_msg(self.client_cpu_s),
            "node_peak_rss_mib": round(self.node_peak_rss_bytes / MIB, 1),
        }


def percentile(values: list[int], pct: float) -> float:
    """Nearest-rank percentile `pct` (0..100] of `values` (same unit as the values); 0 when empty."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return float(ordered[rank - 1])


def median_run(runs: list[RunResult]) -> RunResult:
    """The run with the median msgs_per_s (the lower middle one for an even count)."""
    ordered = sorted(runs, key=lambda run: run.msgs_per_s)
    return ordered[(len(ordered) - 1) // 2]


async def run_pool(calls: int, concurrency: int, call: Callable[[int], Awaitable[int]]) -> int:
    """Make `calls` calls (indices 0..calls-1) with at most `concurrency` in flight; returns the sum
    of what the calls return (acknowledged messages)."""

    async def worker(first: int) -> int:
        ok = 0
        for index in range(first, calls, concurrency):
            ok += await call(index)
        return ok

    counts = await asyncio.gather(*(worker(first) for first in range(min(concurrency, calls))))
    return sum(counts)


class Bench:
    """The workloads against one node; every method that times something returns a `RunResult`."""

    def __init__(self, node: NodeHandle, client: NodeClient, payload: bytes) -> None:
        self.node = node
        self.client = client
        self.stub = client.stub
        self.payload = payload
        self._streams = 0

    async def fresh_stream(self, workload: str) -> str:
        """Create a new 1-partition file-storage stream and return its name."""
        self._streams += 1
        name = f"bench-{workload.replace('_', '-')}-{self._streams}"
        await self.client.create_stream(stream_config(name, partitions=1, storage="file"))
        return name

    async def drop_stream(self, name: str) -> None:
        await self.client.delete_stream(name)

    async def last_seq(self, name: str) -> int:
        info = await self.client.stream_info(name)
        return int(info.stats.partitions[0].last_seq)

    async def timed(
        self, workload: str, messages: int, calls: int, body: Coroutine[Any, Any, int], latencies: list[int]
    ) -> RunResult:
        """Run `body` (returns the count of acknowledged/read messages) between the clock and node
        CPU readings; fail unless every one of `messages` was acknowledged/read."""
        cpu_before = self.node.cpu_seconds()
        client_cpu_before = time.process_time()
        start = time.perf_counter()
        ok = await body
        seconds = time.perf_counter() - start
        client_cpu = time.process_time() - client_cpu_before
        cpu = self.node.cpu_seconds() - cpu_before
        if ok != messages:
            raise RuntimeError(f"{workload}: {ok} of {messages} messages acknowledged/read")
        return RunResult(
            workload=workload,
            messages=messages,
            calls=calls,
            payload_bytes=messages * len(self.payload),
            seconds=seconds,
            latencies_ns=latencies,
            server_cpu_s=cpu,
            client_cpu_s=client_cpu,
            node_peak_rss_bytes=self.node.peak_rss_bytes(),
        )

    async def publish_single(self, workload: str, messages: int, concurrency: int) -> RunResult:
        """`messages` single-message Publish calls, `concurrency` in flight."""
        stream = await self.fresh_stream(workload)
        request = streams_pb2.PublishRequest(stream=stream, subject=SUBJECT, payload=self.payload)
        publish = self.stub.Publish
        latencies: list[int] = []
        record = latencies.append
        clock = time.perf_counter_ns

        async def call(_: int) -> int:
            start = clock()
            response = await publish(request, timeout=CALL_TIMEOUT_S)
            record(clock() - start)
            return 1 if response.seq > 0 else 0

        result = await self.timed(workload, messages, messages, run_pool(messages, concurrency, call), latencies)
        await self.check_stored(stream, messages)
        await self.drop_stream(stream)
        return result

    def batch_requests(self, stream: str, messages: int, batch: int) -> list[streams_pb2.PublishBatchRequest]:
        """The PublishBatch requests for `messages` messages, `batch` per call (the last may be smaller);
        equal-sized requests share one object."""
        entry = streams_pb2.PublishEntry(subject=SUBJECT, payload=self.payload)
        full = streams_pb2.PublishBatchRequest(stream=stream, entries=[entry] * batch)
        requests = [full] * (messages // batch)
        if messages % batch:
            requests.append(streams_pb2.PublishBatchRequest(stream=stream, entries=[entry] * (messages % batch)))
        return requests

    async def publish_batches(
        self, stream: str, messages: int, batch: int, in_flight: int, latencies: list[int]
    ) -> tuple[int, Coroutine[Any, Any, int]]:
        """(calls, coroutine publishing `messages` in PublishBatch calls of `batch`, `in_flight` at once,
        returning the count of entries answered "ok")."""
        requests = self.batch_requests(stream, messages, batch)
        publish = self.stub.PublishBatch
        record = latencies.append
        clock = time.perf_counter_ns

        async def call(index: int) -> int:
            start = clock()
            response = await publish(requests[index], timeout=CALL_TIMEOUT_S)
            record(clock() - start)
            return [result.result_code for result in response.results].count("ok")

        return len(requests), run_pool(len(requests), in_flight, call)

    async def publish_batch(self, workload: str, messages: int, batch: int, in_flight: int) -> RunResult:
        """`messages` messages in PublishBatch calls of `batch` entries, `in_flight` calls at once."""
        stream = await self.fresh_stream(workload)
        latencies: list[int] = []
        calls, body = await self.publish_batches(stream, messages, batch, in_flight, latencies)
        result = await self.timed(workload, messages, calls, body, latencies)
        await self.check_stored(stream, messages)
        await self.drop_stream(stream)
        return result

    async def read(self, workload: str, messages: int, max_messages: int) -> RunResult:
        """Fill a fresh stream with `messages` (untimed), then read it from seq 1 to the end with
        ReadMessages calls of up to `max_messages`."""
        stream = await self.fresh_stream(workload)
        _, fill = await self.publish_batches(stream, messages, FILL_BATCH, BATCH_IN_FLIGHT, [])
        if await fill != messages:
            raise RuntimeError(f"{workload}: fill of {messages} messages not fully acknowledged")
        await self.check_stored(stream, messages)
        read = self.stub.ReadMessages
        latencies: list[int] = []
        clock = time.perf_counter_ns
        calls = 0
        payload_bytes = 0

        async def body() -> int:
            nonlocal calls, payload_bytes
            received = 0
            from_seq = 1
            # Every call returns at least one message while any is left: at most `messages` calls.
            for _ in range(messages):
                request = streams_pb2.ReadMessagesRequest(
                    stream=stream, partition=0, from_seq=from_seq, max_messages=max_messages
                )
                start = clock()
                response = await read(request, timeout=CALL_TIMEOUT_S)
                latencies.append(clock() - start)
                calls += 1
                batch = response.messages
                if not batch:
                    break
                if batch[0].seq != from_seq or batch[-1].seq != from_seq + len(batch) - 1:
                    raise RuntimeError(f"{workload}: gap in seqs read from {from_seq}")
                payload_bytes += sum(len(message.payload) for message in batch)
                received += len(batch)
                from_seq = response.next_seq
                if from_seq > response.last_seq:
                    break
            return received

        result = await self.timed(workload, messages, 0, body(), latencies)
        result.calls = calls
        if payload_bytes != messages * len(self.payload):
            raise RuntimeError(
                f"{workload}: read {payload_bytes} payload bytes, expected {messages * len(self.payload)}"
            )
        await self.drop_stream(stream)
        return result

    async def check_stored(self, stream: str, messages: int) -> None:
        """Fail unless the stream's partition ends at seq `messages` (untimed)."""
        last = await self.last_seq(stream)
        if last != messages:
            raise RuntimeError(f"stream {stream}: last_seq {last}, expected {messages}")

    async def run_workload(self, workload: str, messages: int) -> RunResult:
        if workload == "publish_single_c1":
            return await self.publish_single(workload, messages, 1)
        if workload == "publish_single_c64":
            return await self.publish_single(workload, messages, SINGLE_CONCURRENCY)
        if workload == "publish_batch_100":
            return await self.publish_batch(workload, messages, 100, BATCH_IN_FLIGHT)
        if workload == "publish_batch_1000":
            return await self.publish_batch(workload, messages, 1000, BATCH_IN_FLIGHT)
        if workload == "read_1000":
            return await self.read(workload, messages, READ_MAX_MESSAGES)
        raise ValueError(f"unknown workload {workload}")


async def run_all(
    node: NodeHandle, payload_bytes: int, counts: dict[str, int], repeat: int
) -> dict[str, dict[str, Any]]:
    """Every workload `repeat` times against `node`; the median run's figures per workload."""
    payload = os.urandom(payload_bytes)
    report: dict[str, dict[str, Any]] = {}
    async with NodeClient(node.client_address, timeout_s=CALL_TIMEOUT_S) as client:
        await asyncio.wait_for(client.channel.channel_ready(), CALL_TIMEOUT_S)
        bench = Bench(node, client, payload)
        for workload in WORKLOADS:
            runs: list[RunResult] = []
            for attempt in range(1, repeat + 1):
                run = await bench.run_workload(workload, counts[workload])
                figures = run.figures()
                log(
                    f"{workload} run {attempt}/{repeat}: {run.messages} msgs in {run.seconds:.2f} s = "
                    f"{run.msgs_per_s:,.0f} msgs/s, p50 {figures['latency_us']['p50']} us, "
                    f"p99 {figures['latency_us']['p99']} us, "
                    f"node cpu {figures['server_cpu_us_per_msg']} us/msg"
                )
                runs.append(run)
            figures = median_run(runs).figures()
            figures["runs_msgs_per_s"] = [round(run.msgs_per_s, 1) for run in runs]
            report[workload] = figures
    return report


def pin_this_process(cpus: set[int]) -> None:
    """Pin every thread of this process (and threads started later) to `cpus`."""
    os.sched_setaffinity(0, cpus)
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(task), cpus)


def allowed_cpus(pid: int) -> str:
    """The Cpus_allowed_list of process `pid` ("?" if unknown)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def run_event_loop(loop_name: str, main: Coroutine[Any, Any, dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Run `main` on uvloop (when asked for and importable) or the stdlib asyncio loop."""
    if loop_name == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.node_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--payload-bytes", type=int, default=1024, help="payload size in bytes (default 1024)")
    parser.add_argument("--repeat", type=int, default=None, help="runs per workload, median reported (default 3)")
    parser.add_argument("--smoke", action="store_true", help="a few hundred messages per workload, repeat 1")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON to this file")
    parser.add_argument("--fsync", choices=("always", "off"), default="always", help="the node's fsync setting")
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop", help="client event loop")
    parser.add_argument("--no-pin", action="store_true", help="do not pin the node and the benchmark to CPUs")
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
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints the JSON report on stdout and returns the exit code."""
    args = parse_args(argv)
    counts = dict(SMOKE_COUNTS if args.smoke else DEFAULT_COUNTS)
    for workload in WORKLOADS:
        override = getattr(args, f"{workload}_messages")
        if override is not None:
            if override < 1:
                raise SystemExit(f"--{workload.replace('_', '-')}-messages must be >= 1")
            counts[workload] = override
    loop_name = args.loop
    if loop_name == "uvloop":
        try:
            import uvloop  # noqa: F401
        except ImportError:
            loop_name = "asyncio"
    cpu_count = os.cpu_count() or 1
    pinned = cpu_count >= 2 and not args.no_pin
    if pinned:
        pin_this_process({1})
    started = time.perf_counter()
    timestamp = datetime.now(UTC).isoformat(timespec="seconds")
    tmp_dir = Path(tempfile.mkdtemp(prefix="weir-node-bench-"))
    try:
        node = start_node(
            tmp_dir / "data",
            node_id="bench",
            env={"WEIR_NODE_FSYNC": args.fsync},
            taskset_cpus="0" if pinned else None,
        )
        try:
            node_cpus = allowed_cpus(node.pid)
            log(
                f"node {node.client_address} pid {node.pid} cpus {node_cpus}; "
                f"bench cpus {sorted(os.sched_getaffinity(0))}"
            )
            workloads = run_event_loop(loop_name, run_all(node, args.payload_bytes, counts, args.repeat))
        finally:
            code = node.stop()
            if code != 0:
                log(f"node exited with {code}; log tail:\n{node.log_tail()}")
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    report = {
        "benchmark": "weir node_bench",
        "timestamp": timestamp,
        "machine": {
            "cpu_count": cpu_count,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "grpcio": grpc.__version__,
            "protobuf": protobuf_version,
            "event_loop": loop_name,
            "pinned": pinned,
            "node_cpus": node_cpus,
            "bench_cpus": ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0))),
        },
        "node": {"fsync": args.fsync, "storage": "file", "partitions": 1, "ack_level": "leader"},
        "config": {
            "payload_bytes": args.payload_bytes,
            "repeat": args.repeat,
            "smoke": args.smoke,
            "messages_per_run": counts,
            "single_c64_in_flight": SINGLE_CONCURRENCY,
            "batch_calls_in_flight": BATCH_IN_FLIGHT,
            "read_max_messages": READ_MAX_MESSAGES,
            "selection": "median run by msgs_per_s",
        },
        "workloads": workloads,
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    log(f"done in {report['total_seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
