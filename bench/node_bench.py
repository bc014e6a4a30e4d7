"""Single-node benchmark of a Weir partition node over real gRPC on 127.0.0.1.

Run: ``uv run python -m bench.node_bench [--smoke] [--repeat N] [--workloads A,B] [--out PATH]``
(``make bench``).

Starts one partition node (``weir_cli.launcher.start_node``) in a temporary directory, pinned to CPU 0
while this process runs on CPU 1 when the machine has at least 2 CPUs, and measures seven workloads
(``--workloads`` picks some), each in a fresh stream (1 partition, file storage, the node's fsync
setting, default "always"):

- ``publish_single_c1``: one Publish at a time (latency of one acknowledged publish).
- ``publish_single_c64``: single-message Publish calls, 64 in flight.
- ``publish_batch_100`` / ``publish_batch_1000``: PublishBatch with 100 / 1000 entries per call,
  4 calls in flight.
- ``read_1000``: ReadMessages with max_messages=1000 from seq 1 to the end of a stream filled
  beforehand (the fill is not timed).
- ``consume_fetch_100_ack``: a durable consumer (default config: ack_wait 30 s) drains a stream filled
  beforehand (not timed): ``--consume-loops`` (default 4) concurrent loops against the same consumer
  and partition, each doing Fetch(batch_size=100) then AckBatch of the fetched seqs until a fetch
  comes back empty. The loops get disjoint messages; every seq must be delivered exactly once
  (deliver_count 1) and acknowledged "ok" exactly once, and the consumer must end with ack_floor at
  the last seq and nothing pending.
- ``subscribe_latency_idle``: a Subscribe open on an idle stream (warmed up with one message, not
  timed); then one message at a time: a normal Publish, wait until the subscriber has it, Ack it.
  Every message must arrive once, in seq order, with deliver_count 1.

Every publish uses the default ack level (leader: committed and fsynced before the answer) and is
checked: a Publish counts when it returns a seq > 0, a PublishBatch entry when its result_code is
"ok"; reads check that seqs are gap-free and count payload bytes. A workload that does not get every
message acknowledged (or read back) fails the run. Request objects are built once per workload and
reused (every call is still serialized, sent, stored and answered): the harness measures the node,
not protobuf object construction in the client.

Units in the JSON (stdout, indent=2): ``messages`` and ``calls`` are counts, ``seconds`` is
wall-clock seconds of the timed phase, ``msgs_per_s`` messages per second, ``mib_per_s`` payload
MiB (2**20 bytes) per second, ``latency_us`` microseconds per call (publish to ack for publishes,
one ReadMessages call for reads, one Fetch + AckBatch cycle for ``consume_fetch_100_ack`` whose
``calls`` counts those cycles, and from just before the Publish call until the subscriber received
the message for ``subscribe_latency_idle``, which also reports the Publish call alone as
``publish_ack_latency_us``; p50/p99 by nearest rank), ``server_cpu_us_per_msg`` node process
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
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import __version__ as protobuf_version
from weir.client import NodeClient, consumer_config, stream_config
from weir.v1 import streams_pb2
from weir_cli.launcher import NodeHandle, start_node

from bench.report import print_report

WORKLOADS = (
    "publish_single_c1",
    "publish_single_c64",
    "publish_batch_100",
    "publish_batch_1000",
    "read_1000",
    "consume_fetch_100_ack",
    "subscribe_latency_idle",
)
# Messages per run (for read_1000: messages filled, then read back).
DEFAULT_COUNTS = {
    "publish_single_c1": 4_000,
    "publish_single_c64": 8_000,
    "publish_batch_100": 100_000,
    "publish_batch_1000": 100_000,
    "read_1000": 50_000,
    "consume_fetch_100_ack": 50_000,
    "subscribe_latency_idle": 300,
}
SMOKE_COUNTS = {
    "publish_single_c1": 200,
    "publish_single_c64": 640,
    "publish_batch_100": 1_000,
    "publish_batch_1000": 2_000,
    "read_1000": 2_000,
    "consume_fetch_100_ack": 2_000,
    "subscribe_latency_idle": 50,
}
SINGLE_CONCURRENCY = 64
BATCH_IN_FLIGHT = 4
READ_MAX_MESSAGES = 1000
CONSUME_FETCH_BATCH = 100
CONSUME_LOOPS = 4
CONSUMER = "bench"
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
    # Workload-specific figures added to the JSON (for example a second latency).
    extra: dict[str, Any] = field(default_factory=dict)

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
            "latency_us": latency_figures(self.latencies_ns),
            "server_cpu_us_per_msg": self.us_per_msg(self.server_cpu_s),
            "client_cpu_us_per_msg": self.us_per_msg(self.client_cpu_s),
            "node_peak_rss_mib": round(self.node_peak_rss_bytes / MIB, 1),
            **self.extra,
        }


def latency_figures(latencies_ns: list[int]) -> dict[str, float]:
    """p50/p99 of nanosecond latencies, in microseconds."""
    return {
        "p50": round(percentile(latencies_ns, 50) / 1000, 1),
        "p99": round(percentile(latencies_ns, 99) / 1000, 1),
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

    def __init__(self, node: NodeHandle, client: NodeClient, payload: bytes, consume_loops: int) -> None:
        self.node = node
        self.client = client
        self.stub = client.stub
        self.payload = payload
        self.consume_loops = consume_loops
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
        await self.fill(workload, stream, messages)
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

    async def fill(self, workload: str, stream: str, messages: int) -> None:
        """Publish `messages` into `stream` in batches (not timed) and check they are all stored."""
        _, fill = await self.publish_batches(stream, messages, FILL_BATCH, BATCH_IN_FLIGHT, [])
        if await fill != messages:
            raise RuntimeError(f"{workload}: fill of {messages} messages not fully acknowledged")
        await self.check_stored(stream, messages)

    async def consume_fetch_ack(self, workload: str, messages: int, batch: int, loops: int) -> RunResult:
        """Fill a fresh stream with `messages` (untimed), create a consumer, then drain it with
        `loops` concurrent Fetch(`batch`) + AckBatch loops on the same consumer and partition."""
        stream = await self.fresh_stream(workload)
        await self.fill(workload, stream, messages)
        await self.client.create_consumer(stream, consumer_config(CONSUMER))
        fetch_request = streams_pb2.FetchRequest(stream=stream, consumer=CONSUMER, partition=0, batch_size=batch)
        fetch = self.stub.Fetch
        ack_batch = self.stub.AckBatch
        delivered = bytearray(messages + 1)  # per seq: deliveries seen
        acked = bytearray(messages + 1)  # per seq: "ok" acks seen
        problems: list[str] = []
        latencies: list[int] = []
        record = latencies.append
        clock = time.perf_counter_ns
        cycles = 0
        payload_bytes = 0

        async def loop() -> int:
            nonlocal cycles, payload_bytes
            ok = 0
            # Every cycle delivers at least one message while any is left: at most `messages` cycles.
            for _ in range(messages + 1):
                start = clock()
                response = await fetch(fetch_request, timeout=CALL_TIMEOUT_S)
                batch_messages = response.messages
                if not batch_messages:
                    return ok
                seqs = [message.seq for message in batch_messages]
                request = streams_pb2.AckBatchRequest(stream=stream, consumer=CONSUMER, partition=0, seqs=seqs)
                answer = await ack_batch(request, timeout=CALL_TIMEOUT_S)
                record(clock() - start)
                cycles += 1
                for message in batch_messages:
                    if not 1 <= message.seq <= messages or message.deliver_count != 1:
                        problems.append(f"delivered seq {message.seq} deliver_count {message.deliver_count}")
                        continue
                    delivered[message.seq] += 1
                    payload_bytes += len(message.payload)
                for result in answer.results:
                    if result.result_code == "ok" and 1 <= result.seq <= messages:
                        acked[result.seq] += 1
                        ok += 1
                    else:
                        problems.append(f"ack of seq {result.seq}: {result.result_code} {result.message}")
            raise RuntimeError(f"{workload}: the fetch loop did not end")

        async def body() -> int:
            return sum(await asyncio.gather(*(loop() for _ in range(loops))))

        result = await self.timed(workload, messages, 0, body(), latencies)
        result.calls = cycles
        if problems:
            raise RuntimeError(f"{workload}: {len(problems)} problems, e.g. {problems[:5]}")
        if delivered[1:] != bytes([1]) * messages or acked[1:] != bytes([1]) * messages:
            raise RuntimeError(f"{workload}: not every seq was delivered and acknowledged exactly once")
        if payload_bytes != messages * len(self.payload):
            raise RuntimeError(f"{workload}: fetched {payload_bytes} payload bytes")
        info = await self.client.consumer_info(stream, CONSUMER)
        (state,) = info.partitions
        if (state.ack_floor, state.num_ack_pending, info.redelivered_total, info.acked_total) != (
            messages,
            0,
            0,
            messages,
        ):
            raise RuntimeError(f"{workload}: consumer state after the run: {info}")
        await self.drop_stream(stream)
        return result

    async def subscribe_latency(self, workload: str, messages: int) -> RunResult:
        """A Subscribe open on an idle stream; `messages` times: Publish one message, wait until the
        subscriber has it, Ack it. Latency from before the Publish call to the subscriber's receipt."""
        stream = await self.fresh_stream(workload)
        await self.client.create_consumer(stream, consumer_config(CONSUMER))
        publish_request = streams_pb2.PublishRequest(stream=stream, subject=SUBJECT, payload=self.payload)
        publish = self.stub.Publish
        ack = self.stub.Ack
        clock = time.perf_counter_ns
        received: asyncio.Queue[tuple[int, int, int, int]] = asyncio.Queue()  # seq, count, bytes, ns
        call = self.stub.Subscribe(streams_pb2.SubscribeRequest(stream=stream, consumer=CONSUMER, partitions=[0]))

        async def reader() -> None:
            async for event in call:
                kind = event.WhichOneof("event")
                if kind == "stopped":
                    received.put_nowait((-1, 0, 0, clock()))
                    return
                now = clock()
                for message in event.batch.messages if kind == "batch" else [event.message]:
                    received.put_nowait((message.seq, message.deliver_count, len(message.payload), now))

        reading = asyncio.create_task(reader())
        latencies: list[int] = []
        publish_latencies: list[int] = []
        problems: list[str] = []

        async def one(record: bool) -> int:
            start = clock()
            response = await publish(publish_request, timeout=CALL_TIMEOUT_S)
            published = clock()
            seq, count, size, arrived = await asyncio.wait_for(received.get(), CALL_TIMEOUT_S)
            if (seq, count, size) != (response.seq, 1, len(self.payload)):
                problems.append(f"published seq {response.seq}, received seq {seq} deliver_count {count}")
                return 0
            await ack(
                streams_pb2.AckRequest(stream=stream, consumer=CONSUMER, partition=0, seq=seq), timeout=CALL_TIMEOUT_S
            )
            if record:
                latencies.append(arrived - start)
                publish_latencies.append(published - start)
            return 1

        async def body() -> int:
            ok = 0
            for _ in range(messages):
                ok += await one(True)
            return ok

        try:
            if await one(False) != 1:  # warm-up: the subscription is bound and serving
                raise RuntimeError(f"{workload}: warm-up message not received: {problems}")
            result = await self.timed(workload, messages, messages, body(), latencies)
        finally:
            call.cancel()
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                await reading
        if problems or not received.empty():
            raise RuntimeError(f"{workload}: {problems[:5]}, {received.qsize()} unexpected deliveries")
        result.extra["publish_ack_latency_us"] = latency_figures(publish_latencies)
        await self.check_stored(stream, messages + 1)
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
        if workload == "consume_fetch_100_ack":
            return await self.consume_fetch_ack(workload, messages, CONSUME_FETCH_BATCH, self.consume_loops)
        if workload == "subscribe_latency_idle":
            return await self.subscribe_latency(workload, messages)
        raise ValueError(f"unknown workload {workload}")


async def run_all(
    node: NodeHandle,
    payload_bytes: int,
    counts: dict[str, int],
    repeat: int,
    *,
    workloads: list[str],
    consume_loops: int,
) -> dict[str, dict[str, Any]]:
    """Each of `workloads` `repeat` times against `node`; the median run's figures per workload."""
    payload = os.urandom(payload_bytes)
    report: dict[str, dict[str, Any]] = {}
    async with NodeClient(node.client_address, timeout_s=CALL_TIMEOUT_S) as client:
        await asyncio.wait_for(client.channel.channel_ready(), CALL_TIMEOUT_S)
        bench = Bench(node, client, payload, consume_loops)
        for workload in workloads:
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
    parser.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help=f"comma-separated workloads to run, in this order (default all: {','.join(WORKLOADS)})",
    )
    parser.add_argument(
        "--consume-loops",
        type=int,
        default=CONSUME_LOOPS,
        help=f"concurrent Fetch+AckBatch loops of consume_fetch_100_ack (default {CONSUME_LOOPS})",
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
    if args.repeat < 1 or args.payload_bytes < 1 or args.consume_loops < 1:
        parser.error("--repeat, --payload-bytes and --consume-loops must be >= 1")
    args.workloads = parse_workloads(parser, args.workloads, WORKLOADS)
    return args


def parse_workloads(parser: argparse.ArgumentParser, text: str, known: Sequence[str]) -> list[str]:
    """The comma-separated `--workloads` value, checked against `known` (parser.error otherwise)."""
    workloads = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in workloads if name not in known]
    if unknown or not workloads:
        parser.error(f"--workloads: unknown {unknown} (choose from {', '.join(known)})")
    if len(set(workloads)) != len(workloads):
        parser.error("--workloads: a workload is named twice")
    return workloads


def message_counts(args: argparse.Namespace, smoke: Mapping[str, int], default: Mapping[str, int]) -> dict[str, int]:
    """Messages per chosen workload: the smoke or default count, or `--<workload>-messages`."""
    base = smoke if args.smoke else default
    counts = {workload: base[workload] for workload in args.workloads}
    for workload in args.workloads:
        override = getattr(args, f"{workload}_messages")
        if override is not None:
            if override < 1:
                raise SystemExit(f"--{workload.replace('_', '-')}-messages must be >= 1")
            counts[workload] = override
    return counts


def machine_facts(cpu_count: int, loop_name: str, pinned: bool, **cpus: str) -> dict[str, Any]:
    """The report's "machine" entry: versions, event loop, pinning; `cpus` names the servers' CPUs."""
    return {
        "cpu_count": cpu_count,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "grpcio": grpc.__version__,
        "protobuf": protobuf_version,
        "event_loop": loop_name,
        "pinned": pinned,
        **cpus,
        "bench_cpus": ",".join(str(cpu) for cpu in sorted(os.sched_getaffinity(0))),
    }


def event_loop_name(requested: str) -> str:
    """`requested`, or "asyncio" when uvloop is asked for but not installed."""
    if requested == "uvloop":
        try:
            import uvloop  # noqa: F401
        except ImportError:
            return "asyncio"
    return requested


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; prints the JSON report on stdout and returns the exit code."""
    args = parse_args(argv)
    counts = message_counts(args, SMOKE_COUNTS, DEFAULT_COUNTS)
    loop_name = event_loop_name(args.loop)
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
            workloads = run_event_loop(
                loop_name,
                run_all(
                    node,
                    args.payload_bytes,
                    counts,
                    args.repeat,
                    workloads=args.workloads,
                    consume_loops=args.consume_loops,
                ),
            )
        finally:
            code = node.stop()
            if code != 0:
                log(f"node exited with {code}; log tail:\n{node.log_tail()}")
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    report = {
        "benchmark": "weir node_bench",
        "timestamp": timestamp,
        "machine": machine_facts(cpu_count, loop_name, pinned, node_cpus=node_cpus),
        "node": {"fsync": args.fsync, "storage": "file", "partitions": 1, "ack_level": "leader"},
        "config": {
            "payload_bytes": args.payload_bytes,
            "repeat": args.repeat,
            "smoke": args.smoke,
            "messages_per_run": counts,
            "single_c64_in_flight": SINGLE_CONCURRENCY,
            "batch_calls_in_flight": BATCH_IN_FLIGHT,
            "read_max_messages": READ_MAX_MESSAGES,
            "consume_fetch_batch": CONSUME_FETCH_BATCH,
            "consume_loops": args.consume_loops,
            "selection": "median run by msgs_per_s",
        },
        "workloads": workloads,
        "total_seconds": round(time.perf_counter() - started, 1),
    }
    print_report(report, args.out)
    log(f"done in {report['total_seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
