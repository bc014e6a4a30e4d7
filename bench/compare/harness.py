"""OpenMessaging-Benchmark-style workloads run side by side against Weir, NATS JetStream and Redis
Streams on the same machine in the same run.

Run: ``uv run python -m bench.compare [--smoke] [--repeat N] [--workloads A,B] [--systems A,B]
[--messages N] [--rate R] [--out PATH] [--report PATH]`` (``make bench``, ``weir bench``).

Method (issue 8): every server process (all its threads) is pinned to CPU 0 and this process, which
runs every producer and consumer, to CPU 1 when the machine has 2 or more CPUs (``--no-pin`` leaves
scheduling to the OS). Each system is started once per replication factor the chosen workloads need
and kept for the whole run; for every repeat and workload the systems run one after another, the
order rotating per repeat (alternating runs), each on a fresh topic that is deleted afterwards.
Reported figures are medians over the repeats (each figure's own median), with every repeat's
throughput listed.

One run of a workload on one system has three phases on one topic:

1. ``publish``: `producers` producers (one connection each) publish `messages` messages of
   `message_bytes` bytes at the highest rate they can: each producer keeps `in_flight` batches of
   `batch` messages outstanding, batch i going to partition i mod partitions. Latency is
   publish-to-ack of a batch (every message in it waits that long).
2. ``consume``: `consumers` members of one consumer group drain what phase 1 stored (partitions
   spread round-robin over the members; a member serves its partitions concurrently), each
   receive taking up to `batch` messages and acknowledging them before the next. Every message must
   arrive exactly once (payloads carry their index), or the run fails.
3. ``latency``: producers publish at a fixed `rate` (msgs/s) for `latency_seconds`, in batches of
   `rate_batch` sent on a fixed schedule (a late batch keeps its scheduled send time, so queueing
   counts: no coordinated omission), while the consumers tail the topic. Publish-to-ack and
   end-to-end (scheduled send to receipt by a consumer) latency per message. At most 1,024
   batches may be unacknowledged; a system that falls so far behind that the schedule slips by
   more than 10 % fails this phase (reported as ``{"error": ...}``; the median is over the runs that
   held the rate).

Units in the JSON (stdout): msgs/s, MiB/s (payload bytes, 2**20), latencies in microseconds
(p50/p99/p99.9 by nearest rank), ``server_cpu_us_per_msg`` user+system CPU of every server process
of the deployment during the phase divided by its messages (``/proc``, 10 ms tick), the same for
this process as ``client_cpu_us_per_msg``, ``peak_rss_mib`` per server process kind (VmHWM, the
largest of that kind's processes) read at the end. A run whose messages are not all acknowledged,
received exactly once fails the workload for that system (reported under ``failures``), never as
a figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import platform
import shutil
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.compare.driver import AckLevel, BenchError, Consumer, Driver, Producer, TopicSpec
from bench.report import print_report

MIB = 2**20
RECEIVE_GRACE_S = 10.0  # past a receive's own wait, for the receives in flight when a phase ends
HEADER = struct.Struct(">QQ")  # scheduled send time (perf_counter_ns, 0 for max-rate), message index


@dataclass(frozen=True)
class Workload:
    """One OMB-style workload: topic shape and acknowledgement level."""

    name: str
    partitions: int
    replicas: int
    ack: AckLevel


WORKLOADS = (
    Workload("p1-r1-leader", partitions=1, replicas=1, ack="leader"),
    Workload("p16-r1-leader", partitions=16, replicas=1, ack="leader"),
    Workload("p1-r3-leader", partitions=1, replicas=3, ack="leader"),
    Workload("p1-r3-all", partitions=1, replicas=3, ack="all"),
    Workload("p16-r3-all", partitions=16, replicas=3, ack="all"),
)
SYSTEMS = ("weir", "weir-idempotent", "nats-jetstream", "nats-jetstream-sync", "redis-streams")
SMOKE_WORKLOADS = ("p1-r1-leader", "p16-r3-all")


@dataclass(frozen=True)
class Settings:
    """What every run uses (CLI flags of the same names)."""

    messages: int = 50_000
    message_bytes: int = 1024
    producers: int = 1
    consumers: int = 1
    batch: int = 100
    in_flight: int = 4
    rate: int = 2_000
    rate_batch: int = 50
    latency_seconds: float = 5.0
    wait_ms: int = 100
    # The fixed-rate phase fails when the harness issued under this fraction of `rate` (its latency
    # figures would describe a lighter load). The smoke run sets 0: one second of 20 batches on a busy
    # CI machine misses 90% after a single 110 ms stall, and the smoke run checks that it works.
    min_rate_fraction: float = 0.9


def log(message: str) -> None:
    """A progress line on stderr."""
    print(f"[bench.compare] {message}", file=sys.stderr, flush=True)


def make_driver(system: str, replicas: int, routers: list[str] | None = None) -> Driver:
    """A driver for one of SYSTEMS (anchors imported lazily: they need the dev tools' clients);
    `routers`: Weir runs against that existing cluster instead of one it starts."""
    if system in ("weir", "weir-idempotent"):
        from bench.compare.weir_driver import WeirDriver

        return WeirDriver(replicas, idempotent=system == "weir-idempotent", routers=routers)
    if system in ("nats-jetstream", "nats-jetstream-sync"):
        from bench.compare.nats_driver import NatsDriver

        return NatsDriver(replicas, sync_always=system.endswith("-sync"))
    if system == "redis-streams":
        from bench.compare.redis_driver import RedisDriver

        return RedisDriver(replicas)
    raise ValueError(f"unknown system {system!r}; known: {', '.join(SYSTEMS)}")


# -- measurement helpers -------------------------------------------------------------------------


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` (all threads) from /proc; 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def process_peak_rss_mib(pid: int) -> float:
    """VmHWM of process `pid` in MiB; 0 if unknown."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def server_cpu_seconds(driver: Driver) -> float:
    return sum(process_cpu_seconds(pid) for pids in driver.server_pids().values() for pid in pids)


def percentiles_us(latencies_ns: Sequence[int]) -> dict[str, float]:
    """p50/p99/p99.9 (nearest rank) of nanosecond latencies, in microseconds."""
    if not latencies_ns:
        return {"p50": 0.0, "p99": 0.0, "p99_9": 0.0}
    ordered = sorted(latencies_ns)

    def rank(pct: float) -> float:
        index = max(0, math.ceil(pct / 100 * len(ordered)) - 1)
        return round(ordered[index] / 1000, 1)

    return {"p50": rank(50), "p99": rank(99), "p99_9": rank(99.9)}


class Meter:
    """CPU seconds of the deployment's servers and of this process over one phase."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.server = server_cpu_seconds(driver)
        self.client = time.process_time()
        self.wall = time.perf_counter()

    def figures(self, messages: int) -> dict[str, float]:
        wall = time.perf_counter() - self.wall
        server = server_cpu_seconds(self.driver) - self.server
        client = time.process_time() - self.client
        per_message = max(messages, 1)
        return {
            "seconds": round(wall, 3),
            "server_cpu_us_per_msg": round(server / per_message * 1e6, 1),
            "client_cpu_us_per_msg": round(client / per_message * 1e6, 1),
        }


# -- one run ---------------------------------------------------------------------------------------


def payload(index: int, scheduled_ns: int, size: int, filler: bytes) -> bytes:
    """A payload of `size` bytes carrying its scheduled send time and index (HEADER) then filler."""
    return HEADER.pack(scheduled_ns, index) + filler[: size - HEADER.size]


@dataclass
class Received:
    """Exactly-once bookkeeping for the consumers: which indexes arrived."""

    expected: int
    seen: bytearray = field(init=False)
    count: int = 0
    done: asyncio.Event = field(default_factory=asyncio.Event)
    end_to_end_ns: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.seen = bytearray(self.expected)

    def add(self, payloads: Sequence[bytes], now_ns: int, first_index: int, timed: bool) -> None:
        for item in payloads:
            scheduled_ns, index = HEADER.unpack_from(item)
            slot = index - first_index
            if not 0 <= slot < self.expected:
                raise BenchError(f"received a message with index {index} outside this phase")
            if self.seen[slot]:
                raise BenchError(f"message {index} was delivered twice")
            self.seen[slot] = 1
            if timed:
                self.end_to_end_ns.append(now_ns - scheduled_ns)
        self.count += len(payloads)
        if self.count >= self.expected:
            self.done.set()


async def consume_until(
    consumers: Sequence[Consumer],
    partitions: int,
    received: Received,
    *,
    first_index: int,
    settings: Settings,
    timed: bool,
    deadline_s: float,
) -> None:
    """Every member receives from its partitions (round-robin assignment) until `received` has
    every expected message; fails after `deadline_s` seconds."""
    clock = time.perf_counter_ns

    async def serve(consumer: Consumer, partition: int) -> None:
        while not received.done.is_set():
            payloads = await consumer.receive(partition, settings.batch, settings.wait_ms)
            if payloads:
                received.add(payloads, clock(), first_index, timed)

    tasks = [
        asyncio.create_task(serve(consumers[partition % len(consumers)], partition)) for partition in range(partitions)
    ]
    done = asyncio.create_task(received.done.wait())
    try:
        # A partition's receive loop that failed ends the phase with its error at once (waiting for
        # the deadline would only report the messages it left behind).
        finished, _ = await asyncio.wait([done, *tasks], timeout=deadline_s, return_when=asyncio.FIRST_COMPLETED)
        failed = [task for task in finished if task is not done and task.exception() is not None]
        if failed:
            raise failed[0].exception()  # type: ignore[misc]
        if done not in finished:
            raise BenchError(f"consumers got {received.count} of {received.expected} messages in {deadline_s:.0f}s")
    finally:
        done.cancel()
        if received.done.is_set():
            # Each receive loop ends after the receive it is in (it checks `received.done`):
            # cancelling a receive mid-call can leave messages delivered to nobody, back only after
            # the ack wait, in the next phase.
            await asyncio.wait(tasks, timeout=settings.wait_ms / 1000 + RECEIVE_GRACE_S)
        for task in tasks:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            raise result


async def run_pool(jobs: int, concurrency: int, job: Callable[[int], Awaitable[None]]) -> None:
    """Run job(0..jobs-1) with at most `concurrency` at a time, in index order."""
    counter = iter(range(jobs))

    async def worker() -> None:
        for index in counter:
            await job(index)

    await asyncio.gather(*(worker() for _ in range(min(concurrency, jobs))))


async def run_once(driver: Driver, workload: Workload, settings: Settings, run_id: int) -> dict[str, Any]:
    """The three phases on a fresh topic of `driver`; returns the run's figures."""
    spec = TopicSpec(f"bench-{workload.name}-{run_id}", workload.partitions, workload.replicas, workload.ack)
    await driver.create_topic(spec)
    producers = [await driver.producer(spec) for _ in range(settings.producers)]
    consumers = [await driver.consumer(spec, member) for member in range(settings.consumers)]
    filler = os.urandom(settings.message_bytes)
    try:
        figures: dict[str, Any] = {}
        # 1. publish at max rate. Payloads are built before the clock starts.
        batches = math.ceil(settings.messages / settings.batch)
        prepared = [
            [
                payload(index, 0, settings.message_bytes, filler)
                for index in range(start, min(start + settings.batch, settings.messages))
            ]
            for start in range(0, settings.messages, settings.batch)
        ]
        latencies: list[int] = []
        clock = time.perf_counter_ns

        async def publish(batch_index: int) -> None:
            producer = producers[batch_index % len(producers)]
            begin = clock()
            await producer.send_batch(batch_index % workload.partitions, prepared[batch_index])
            latencies.append(clock() - begin)

        meter = Meter(driver)
        await run_pool(batches, settings.in_flight * len(producers), publish)
        phase = meter.figures(settings.messages)
        figures["publish"] = {
            **phase,
            "msgs_per_s": round(settings.messages / phase["seconds"]),
            "mib_per_s": round(settings.messages * settings.message_bytes / MIB / phase["seconds"], 1),
            "latency_us": percentiles_us(latencies),
        }
        prepared.clear()  # release the payloads before the next phases
        # 2. consume the backlog.
        received = Received(settings.messages)
        meter = Meter(driver)
        deadline = max(60.0, settings.messages / 500)
        await consume_until(
            consumers, workload.partitions, received, first_index=0, settings=settings, timed=False, deadline_s=deadline
        )
        phase = meter.figures(settings.messages)
        figures["consume"] = {
            **phase,
            "msgs_per_s": round(settings.messages / phase["seconds"]),
            "mib_per_s": round(settings.messages * settings.message_bytes / MIB / phase["seconds"], 1),
        }
        # 3. fixed rate with live consumers.
        try:
            figures["latency"] = await fixed_rate(
                driver, workload, settings, producers=producers, consumers=consumers, filler=filler
            )
        except BenchError as error:  # the max-rate figures stand; the report says why this one is missing
            log(f"{workload.name} on {driver.label}: fixed-rate phase failed: {error}")
            figures["latency"] = {"error": str(error)}
        return figures
    finally:
        closers = [producer.close for producer in producers] + [consumer.close for consumer in consumers]
        for close in closers:
            with contextlib.suppress(Exception):
                await close()
        with contextlib.suppress(Exception):
            await driver.delete_topic(spec)


async def fixed_rate(
    driver: Driver,
    workload: Workload,
    settings: Settings,
    *,
    producers: Sequence[Producer],
    consumers: Sequence[Consumer],
    filler: bytes,
) -> dict[str, Any]:
    """Phase 3: `rate` msgs/s for `latency_seconds` in scheduled batches, consumers tailing."""
    first_index = settings.messages
    count = max(settings.rate_batch, int(settings.rate * settings.latency_seconds))
    count -= count % settings.rate_batch
    batches = count // settings.rate_batch
    interval_ns = int(settings.rate_batch / settings.rate * 1e9)
    received = Received(count)
    ack_latencies: list[int] = []
    clock = time.perf_counter_ns
    failures: list[BaseException] = []

    async def send(batch_index: int, scheduled_ns: int) -> None:
        try:
            start = first_index + batch_index * settings.rate_batch
            payloads = [
                payload(index, scheduled_ns, settings.message_bytes, filler)
                for index in range(start, start + settings.rate_batch)
            ]
            await producers[batch_index % len(producers)].send_batch(batch_index % workload.partitions, payloads)
            ack_latencies.extend([clock() - scheduled_ns] * settings.rate_batch)
        except BaseException as error:
            failures.append(error)

    consuming = asyncio.create_task(
        consume_until(
            consumers,
            workload.partitions,
            received,
            first_index=first_index,
            settings=settings,
            timed=True,
            deadline_s=settings.latency_seconds + 60,
        )
    )
    meter = Meter(driver)
    issued_ns = await send_on_schedule(batches, interval_ns, send, failures)
    if failures:
        consuming.cancel()
        with contextlib.suppress(BaseException):
            await consuming
        raise failures[0]
    await consuming
    phase = meter.figures(count)
    achieved = count / (issued_ns / 1e9)
    if achieved < settings.min_rate_fraction * settings.rate:
        raise BenchError(
            f"could not send at {settings.rate} msgs/s ({_RATE_IN_FLIGHT} batches in flight): {achieved:.0f} msgs/s"
        )
    return {
        **phase,
        "rate_msgs_per_s": settings.rate,
        "messages": count,
        "achieved_msgs_per_s": round(achieved),
        "publish_to_ack_us": percentiles_us(ack_latencies),
        "end_to_end_us": percentiles_us(received.end_to_end_ns),
    }


_RATE_IN_FLIGHT = 1024  # batches: bounded, so a system that falls far behind fails the rate check


async def send_on_schedule(
    batches: int,
    interval_ns: int,
    send: Callable[[int, int], Awaitable[None]],
    failures: Sequence[BaseException],
) -> int:
    """Start `send(batch_index, scheduled_ns)` for batch 0 … `batches` - 1 at its slot, `interval_ns`
    apart, with at most `_RATE_IN_FLIGHT` in flight, stopping early once `failures` holds one; waits
    for every send started. Returns the ns from the first slot to the end of the last one."""
    in_flight = asyncio.Semaphore(_RATE_IN_FLIGHT)
    sends: set[asyncio.Task[None]] = set()
    clock = time.perf_counter_ns

    async def bounded(batch_index: int, scheduled_ns: int) -> None:
        try:
            await send(batch_index, scheduled_ns)
        finally:
            in_flight.release()

    started = clock()
    for batch_index in range(batches):
        scheduled = started + batch_index * interval_ns
        delay = (scheduled - clock()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        await in_flight.acquire()
        task = asyncio.create_task(bounded(batch_index, scheduled))
        sends.add(task)
        task.add_done_callback(sends.discard)
        if failures:
            break
    issued_ns = clock() - started + interval_ns  # the last batch's slot ends one interval after it starts
    if sends:
        await asyncio.wait(list(sends))
    return issued_ns


# -- the whole run ---------------------------------------------------------------------------------


def median_figures(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each numeric figure's median over the runs (same nested shape)."""
    first = runs[0]
    merged: dict[str, Any] = {}
    for key, value in first.items():
        if isinstance(value, dict):
            merged[key] = median_figures([run[key] for run in runs])
        elif isinstance(value, int | float):
            middle = statistics.median(run[key] for run in runs)
            merged[key] = round(middle, 1) if isinstance(middle, float) else middle
        else:
            merged[key] = value
    return merged


def pin_this_process(cpus: set[int]) -> None:
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(int(task), cpus)


async def run_all(
    workloads: Sequence[Workload],
    systems: Sequence[str],
    settings: Settings,
    *,
    repeat: int,
    workdir: Path,
    server_cpus: set[int],
    routers: list[str] | None = None,
) -> dict[str, Any]:
    """Start each system once per replica count the workloads need, run every workload `repeat`
    rounds (rotating which system goes first), stop them all; {"workloads": the report per workload
    and system (`report_workloads`), "failures": {workload: {system: error}}}."""
    drivers: dict[tuple[str, int], Driver] = {}
    results: dict[str, dict[str, list[dict[str, Any]]]] = {w.name: {s: [] for s in systems} for w in workloads}
    failures: dict[str, dict[str, str]] = {}
    try:
        for system in systems:
            for replicas in sorted({workload.replicas for workload in workloads}):
                driver = make_driver(system, replicas, routers)
                drivers[(system, replicas)] = driver
                log(f"starting {system} with {replicas} replica(s)")
                await driver.start(workdir / f"{system}-r{replicas}", server_cpus)
        await _run_rounds(
            workloads, systems, settings, repeat=repeat, drivers=drivers, results=results, failures=failures
        )
        peak_rss = {
            driver.label: {
                kind: round(max((process_peak_rss_mib(pid) for pid in pids), default=0.0), 1)
                for kind, pids in driver.server_pids().items()
            }
            for driver in drivers.values()
        }
    finally:
        for driver in drivers.values():
            with contextlib.suppress(Exception):
                await driver.stop()
    return {"workloads": report_workloads(workloads, systems, results, drivers, peak_rss), "failures": failures}


async def _run_rounds(
    workloads: Sequence[Workload],
    systems: Sequence[str],
    settings: Settings,
    *,
    repeat: int,
    drivers: dict[tuple[str, int], Driver],
    results: dict[str, dict[str, list[dict[str, Any]]]],
    failures: dict[str, dict[str, str]],
) -> None:
    """`repeat` rounds of every workload on every system, appending each run's figures to
    `results[workload][system]`; a run that fails is recorded in `failures` and its system skips
    that workload from then on."""
    run_id = 0
    for round_index in range(repeat):
        for workload in workloads:
            shift = round_index % len(systems)
            for system in (*systems[shift:], *systems[:shift]):
                if system in failures.get(workload.name, {}):
                    continue
                run_id += 1
                driver = drivers[(system, workload.replicas)]
                log(f"round {round_index + 1}/{repeat} {workload.name} on {system}")
                try:
                    figures = await run_once(driver, workload, settings, run_id)
                except BenchError as error:
                    log(f"{workload.name} on {system} failed: {error}")
                    failures.setdefault(workload.name, {})[system] = str(error)
                    continue
                results[workload.name][system].append(figures)
                log(
                    f"  publish {figures['publish']['msgs_per_s']} msgs/s, consume "
                    f"{figures['consume']['msgs_per_s']} msgs/s, e2e p50 "
                    f"{figures['latency'].get('end_to_end_us', {}).get('p50', '-')} us"
                )


def report_workloads(
    workloads: Sequence[Workload],
    systems: Sequence[str],
    results: dict[str, dict[str, list[dict[str, Any]]]],
    drivers: dict[tuple[str, int], Driver],
    peak_rss: dict[str, dict[str, float]],
) -> dict[str, Any]:
    """Per workload, each system's median publish and consume figures over its runs, the median
    latency over the runs whose latency phase held (else the first run's error), every run's rates,
    its servers' peak RSS (MiB, from `peak_rss` by driver label), variant and semantics. A system
    with no run is left out."""
    report: dict[str, Any] = {}
    for workload in workloads:
        per_system: dict[str, Any] = {}
        for system in systems:
            runs = results[workload.name][system]
            if not runs:
                continue
            driver = drivers[(system, workload.replicas)]
            held = [run for run in runs if "error" not in run["latency"]]
            medians = median_figures([{key: run[key] for key in ("publish", "consume")} for run in runs])
            medians["latency"] = median_figures([run["latency"] for run in held]) if held else runs[0]["latency"]
            per_system[system] = {
                **medians,
                "runs_publish_msgs_per_s": [run["publish"]["msgs_per_s"] for run in runs],
                "runs_consume_msgs_per_s": [run["consume"]["msgs_per_s"] for run in runs],
                "peak_rss_mib": peak_rss[driver.label],
                "variant": driver.variant,
                "semantics": driver.semantics[workload.ack],
            }
        report[workload.name] = {
            "partitions": workload.partitions,
            "replicas": workload.replicas,
            "ack": workload.ack,
            "systems": per_system,
        }
    return report


def machine_facts(pinned: bool, server_cpus: set[int], client_cpus: set[int]) -> dict[str, Any]:
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "pinned": pinned,
        "server_cpus": sorted(server_cpus),
        "client_cpus": sorted(client_cpus),
    }


# -- report --------------------------------------------------------------------------------------


def markdown(report: dict[str, Any], command: str) -> str:
    """The report as Markdown: one table per workload, then semantics and failures."""
    settings = report["settings"]
    machine = report["machine"]
    lines = [
        f"# Weir vs NATS JetStream vs Redis Streams ({machine['date']})",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {machine['cpus']} CPUs, {machine['platform']}, Python {machine['python']}; servers pinned to "
        f"CPU {machine['server_cpus']}, load to CPU {machine['client_cpus']} (pinned: {machine['pinned']}). "
        f"{settings['message_bytes']}-byte messages; {settings['messages']:,} messages per publish/consume phase; "
        f"batches of {settings['batch']}, {settings['in_flight']} in flight per producer; {settings['producers']} "
        f"producer(s), {settings['consumers']} consumer(s); fixed rate {settings['rate']:,} msgs/s for "
        f"{settings['latency_seconds']} s in batches of {settings['rate_batch']}. Medians of {report['repeat']} "
        "alternating runs.",
        "",
    ]
    header = (
        "| system | publish msgs/s | MiB/s | publish-to-ack p50/p99/p99.9 µs (batch) | consume msgs/s | "
        "at fixed rate: publish-to-ack p50/p99/p99.9 µs | end-to-end p50/p99/p99.9 µs | "
        "server CPU µs/msg publish / consume | peak RSS MiB | runs publish msgs/s |"
    )
    for name, workload in report["workloads"].items():
        lines += [
            f"## {name}: {workload['partitions']} partition(s), replicas {workload['replicas']}, ack {workload['ack']}",
            "",
            header,
            "|" + "---|" * 10,
        ]
        for system, figures in workload["systems"].items():
            publish, consume, latency = figures["publish"], figures["consume"], figures["latency"]

            def triple(values: dict[str, float]) -> str:
                return f"{values['p50']:,.0f} / {values['p99']:,.0f} / {values['p99_9']:,.0f}"

            rss = ", ".join(f"{kind} {value:.0f}" for kind, value in figures["peak_rss_mib"].items())
            if "error" in latency:
                at_rate = end_to_end = f"failed: {latency['error']}"
            else:
                at_rate, end_to_end = triple(latency["publish_to_ack_us"]), triple(latency["end_to_end_us"])
            lines.append(
                f"| {system} | {publish['msgs_per_s']:,} | {publish['mib_per_s']} | {triple(publish['latency_us'])} | "
                f"{consume['msgs_per_s']:,} | {at_rate} | "
                f"{end_to_end} | {publish['server_cpu_us_per_msg']} / "
                f"{consume['server_cpu_us_per_msg']} | {rss} | "
                f"{', '.join(f'{value:,}' for value in figures['runs_publish_msgs_per_s'])} |"
            )
        lines.append("")
    lines += ["## What an acknowledgement means", ""]
    seen: set[tuple[str, str]] = set()
    for workload in report["workloads"].values():
        for system, figures in workload["systems"].items():
            key = (system, figures["semantics"])
            if key not in seen:
                seen.add(key)
                lines.append(f"- **{system}** ({figures['variant']}), ack {workload['ack']}: {figures['semantics']}")
    if report["failures"]:
        lines += ["", "## Failed runs", ""]
        for workload_name, systems in report["failures"].items():
            for system, error in systems.items():
                lines.append(f"- {workload_name} on {system}: {error}")
    return "\n".join(lines) + "\n"


# -- command line --------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    defaults = Settings()
    parser = argparse.ArgumentParser(
        prog="python -m bench.compare", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--smoke", action="store_true", help="tiny counts, 1 repeat, 2 workloads: checks it works")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs per workload and system (median)")
    parser.add_argument("--workloads", default="", help=f"comma-separated subset of {[w.name for w in WORKLOADS]}")
    parser.add_argument("--systems", default="", help=f"comma-separated subset of {list(SYSTEMS)}")
    parser.add_argument("--messages", type=int, default=defaults.messages, help="messages per publish phase")
    parser.add_argument("--message-bytes", type=int, default=defaults.message_bytes)
    parser.add_argument("--producers", type=int, default=defaults.producers)
    parser.add_argument("--consumers", type=int, default=defaults.consumers)
    parser.add_argument("--batch", type=int, default=defaults.batch, help="messages per publish batch and receive")
    parser.add_argument("--in-flight", type=int, default=defaults.in_flight, help="batches in flight per producer")
    parser.add_argument("--rate", type=int, default=defaults.rate, help="msgs/s of the fixed-rate latency phase")
    parser.add_argument("--rate-batch", type=int, default=defaults.rate_batch)
    parser.add_argument("--latency-seconds", type=float, default=defaults.latency_seconds)
    parser.add_argument("--no-pin", action="store_true", help="do not pin servers and load to separate CPUs")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--report", type=Path, help="write the Markdown report here")
    parser.add_argument("--keep", action="store_true", help="keep the servers' data and logs")
    parser.add_argument(
        "--router",
        help="run Weir against this existing cluster (host:port[,host:port]; only --systems weir by default; "
        "its server CPU is not metered; it needs as many nodes as the workloads' replicas)",
    )
    args = parser.parse_args(argv)
    for flag in ("repeat", "messages", "producers", "consumers", "batch", "in_flight", "rate", "rate_batch"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1")
    if args.message_bytes < HEADER.size:
        parser.error(f"--message-bytes must be at least {HEADER.size} (the index and timestamp header)")
    if args.latency_seconds <= 0:
        parser.error("--latency-seconds must be positive")
    known = {workload.name: workload for workload in WORKLOADS}
    names = [name for name in args.workloads.split(",") if name] or (
        list(SMOKE_WORKLOADS) if args.smoke else list(known)
    )
    unknown = [name for name in names if name not in known]
    if unknown:
        parser.error(f"unknown workload(s) {unknown}; known: {list(known)}")
    args.workload_list = [known[name] for name in names]
    args.system_list = [name for name in args.systems.split(",") if name] or (
        ["weir"] if args.router else list(SYSTEMS)
    )
    unknown = [name for name in args.system_list if name not in SYSTEMS]
    if unknown:
        parser.error(f"unknown system(s) {unknown}; known: {list(SYSTEMS)}")
    if args.smoke:
        args.repeat = 1
        args.messages = min(args.messages, 1_000)
        args.rate = min(args.rate, 1_000)
        args.latency_seconds = min(args.latency_seconds, 1.0)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    settings = Settings(
        messages=args.messages,
        message_bytes=args.message_bytes,
        producers=args.producers,
        consumers=args.consumers,
        batch=args.batch,
        in_flight=args.in_flight,
        rate=args.rate,
        rate_batch=args.rate_batch,
        latency_seconds=args.latency_seconds,
        min_rate_fraction=0.0 if args.smoke else Settings.min_rate_fraction,
    )
    cpus = sorted(os.sched_getaffinity(0))
    pinned = not args.no_pin and len(cpus) >= 2
    server_cpus = {cpus[0]} if pinned else set(cpus)
    client_cpus = {cpus[1]} if pinned else set(cpus)
    if pinned:
        pin_this_process(client_cpus)
    workdir = Path(tempfile.mkdtemp(prefix="weir-bench-compare-"))
    try:
        import uvloop

        body = run_all(
            args.workload_list,
            args.system_list,
            settings,
            repeat=args.repeat,
            workdir=workdir,
            server_cpus=server_cpus,
            routers=[address.strip() for address in args.router.split(",") if address.strip()] if args.router else None,
        )
        results = uvloop.run(body)
    finally:
        if args.keep:
            log(f"data and logs kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    report = {
        "machine": machine_facts(pinned, server_cpus, client_cpus),
        "settings": settings.__dict__,
        "repeat": args.repeat,
        **results,
    }
    print_report(report, args.out)
    if args.report:
        command = "python -m bench.compare " + " ".join(argv if argv is not None else sys.argv[1:])
        args.report.write_text(markdown(report, command.strip()))
        log(f"report written to {args.report}")
    return 1 if results["failures"] else 0
