"""Weir as a Numaflow source next to the native SDK's consume, in one run (issue 30).

Run: ``uv run python -m bench.numaflow_bench [--smoke] [--messages N] [--out PATH]``
(``make bench`` runs it; ``make bench-numaflow`` alone).

Starts a local cluster (its own redis-server, 1 router, 1 partition node, replicas 1) and a
4-partition stream, publishes `messages` messages through the SDK (ack level leader, batched with
`publish_nowait`; every payload carries its number), then reads every one of them twice, once per
consumer group:

- ``native_consume``: a durable consumer, one task per partition: Fetch (batch 32) then AckBatch of
  what came (rocketmq_bench's native_consume, so the figures compare).
- ``source_read_ack``: a second group, read through one Numaflow source sidecar
  (`weir_numaflow_source`: pynumaflow's server on a Unix socket, one member of the group) called as
  Numaflow's data plane calls it (`weir_numaflow_source.data_plane.DataPlane`): ReadFn with
  num_records 500 and timeout 1,000 ms (Numaflow's default read batch and read timeout), then one
  AckFn request carrying every offset read (later source.v1, as Numaflow acks a read batch), in
  turn, until every message was read.
- ``source_read_ack_per_offset``: the same with a third group and one AckFn request per offset (the
  seed's source.v1: one offset per request; pynumaflow answers each before it takes the next, so
  each is one AckBatch exchange with the node).
  The sidecar starts with its group at the stream's end (new_group_start latest); once it serves
  and holds every partition, the clock starts and the group is moved to the first message
  (SeekConsumer), so nothing was fetched into the sidecar's buffer before the clock started and the
  sidecar's start-up is not timed.

Every message must be read exactly once in each phase (distinct payloads = published ones, none read
twice, and the group's acked total afterwards = `messages` with nothing pending), else the run fails
(exit 1, the error on stderr).

Figures (JSON on stdout): per phase ``msgs_per_s`` (read and acknowledged) and the CPU per message
(from /proc, user + system) of the partition node, of the sidecar (source phase) and of this process
(the consuming client: the SDK, or the data plane's stand-in), and the AckBatch requests the node
served per 100 messages (its /metrics); for the source also the ReadFn requests made and the seconds
the sidecar spent answering each kind of call (its /metrics). ``source_to_native_throughput`` =
source_read_ack msgs/s over native_consume msgs/s. Compare ratios from one run: this machine's speed
drifts between days.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from weir import Client, consumer_config, stream_config
from weir_cli.launcher import LocalCluster, NodeHandle, NumaflowSourceHandle
from weir_numaflow_source.data_plane import DataPlane

from bench.report import Meter, run_and_report

STREAM = "bench-numaflow"
PARTITIONS = 4
NATIVE_CONSUMER = "native"
SOURCE_GROUPS = {"source_read_ack": "numaflow-batched", "source_read_ack_per_offset": "numaflow-per-offset"}
NATIVE_FETCH_BATCH = 32  # as rocketmq_bench's native_consume
NATIVE_MAX_WAIT_MS = 200
READ_BATCH = 500  # Numaflow's default read batch size (limits.readBatchSize)
READ_TIMEOUT_MS = 1000  # Numaflow's default read timeout
SIDECAR_FETCH_BATCH = 500  # the sidecar's default: messages one partition fetch brings at most
STALL_S = 30.0  # a phase that reads nothing new for this long fails
_ACK_BATCH_CALLS = re.compile(r'^weir_rpc_duration_seconds_count\{method="AckBatch(?:Stream)?"\} (\S+)$', re.M)
_SIDECAR_CALL_SECONDS = re.compile(r'^weir_numaflow_source_call_seconds_sum\{method="(\w+)"\} (\S+)$', re.M)
SIDECAR_ENV = {
    "WEIR_NUMAFLOW_SOURCE_NEW_GROUP_START": "latest",  # moved to the first message when the clock starts
    "WEIR_NUMAFLOW_SOURCE_FETCH_BATCH": str(SIDECAR_FETCH_BATCH),
}


def scrape(metrics_port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as reply:
        text: str = reply.read().decode()
    return text


def ack_batch_calls(node: NodeHandle) -> float:
    """AckBatch + AckBatchStream requests the node has served (its /metrics)."""
    return sum(float(count) for count in _ACK_BATCH_CALLS.findall(scrape(node.metrics_port)))


def sidecar_call_seconds(sidecar: NumaflowSourceHandle) -> dict[str, float]:
    """Seconds the sidecar spent answering source.v1 calls so far, by method (its /metrics)."""
    return {method: float(seconds) for method, seconds in _SIDECAR_CALL_SECONDS.findall(scrape(sidecar.metrics_port))}


def payload(number: int) -> bytes:
    return b"numaflow bench message %d" % number


async def publish_all(client: Client, messages: int) -> dict[int, int]:
    """Publish `messages` messages (ack level leader, batched); returns {partition: messages stored}."""
    futures = [
        await client.publish_nowait(STREAM, "bench.numaflow", payload(number), ack_level="leader")
        for number in range(messages)
    ]
    await client.flush()
    per_partition = dict.fromkeys(range(PARTITIONS), 0)
    for future in futures:
        per_partition[(await future).partition] += 1
    return per_partition


def check_read_once(phase: str, read: list[bytes], messages: int) -> dict[str, int]:
    """Every published payload read exactly once, or RuntimeError saying what was not."""
    distinct = set(read)
    expected = {payload(number) for number in range(messages)}
    repeats, missing, unknown = len(read) - len(distinct), len(expected - distinct), len(distinct - expected)
    if repeats or missing or unknown:
        raise RuntimeError(
            f"{phase}: {len(distinct & expected)} of {messages} messages read: {missing} never, "
            f"{repeats} read more than once, {unknown} payloads that were not published"
        )
    return {"distinct_messages": len(distinct), "repeats": repeats}


async def check_settled(client: Client, phase: str, consumer: str, messages: int) -> None:
    """The consumer acknowledged every message and holds nothing, or RuntimeError."""
    info = await client.consumer_info(STREAM, consumer)
    state = (int(info.acked_total), int(info.num_ack_pending), int(info.num_pending))
    if state != (messages, 0, 0):
        raise RuntimeError(
            f"{phase}: consumer {consumer!r} acked {state[0]} of {messages}, {state[1]} pending acks, "
            f"{state[2]} undelivered"
        )


async def native_consume(client: Client, node: NodeHandle, per_partition: dict[int, int]) -> dict[str, Any]:
    """Phase A: one task per partition, Fetch (batch 32) then AckBatch, until each partition's
    messages came."""
    await client.create_consumer(STREAM, consumer_config(NATIVE_CONSUMER, ack_wait_ms=60_000))
    read: list[bytes] = []

    async def fetch_and_ack(partition: int, count: int) -> None:
        received = 0
        last_progress = time.monotonic()
        while received < count:
            messages = await client.fetch(
                STREAM, NATIVE_CONSUMER, partition, batch_size=NATIVE_FETCH_BATCH, max_wait_ms=NATIVE_MAX_WAIT_MS
            )
            if messages:
                await client.ack_batch(STREAM, NATIVE_CONSUMER, partition, [message.seq for message in messages])
                read.extend(message.payload for message in messages)
                received += len(messages)
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > STALL_S:
                raise RuntimeError(f"native_consume: partition {partition} gave {received} of {count} messages")

    meter = Meter({"node": node})
    acks_before = ack_batch_calls(node)
    meter.start()
    await asyncio.gather(*(fetch_and_ack(partition, count) for partition, count in per_partition.items()))
    messages = sum(per_partition.values())
    figures = meter.figures(messages)
    figures["node_ack_batch_calls_per_100"] = round((ack_batch_calls(node) - acks_before) / messages * 100, 1)
    figures.update(check_read_once("native_consume", read, messages))
    await check_settled(client, "native_consume", NATIVE_CONSUMER, messages)
    return figures


async def hold_every_partition(source: DataPlane) -> None:
    """Wait until the sidecar serves and its member holds every partition of the stream."""
    if not await source.ready():
        raise RuntimeError("the sidecar answered IsReady with ready=false")
    deadline = time.monotonic() + STALL_S
    while sorted(await source.partitions()) != list(range(PARTITIONS)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the sidecar holds partitions {await source.partitions()} after {STALL_S:.0f} s")
        await asyncio.sleep(0.05)


async def read_and_ack(source: DataPlane, messages: int, *, per_offset: bool) -> tuple[list[bytes], int]:
    """Read (500, 1 s) then ack what came (one AckFn request for the batch, or one per offset), in
    turn, until `messages` distinct payloads were read. Returns every payload read, in order, and
    the ReadFn requests made."""
    read: list[bytes] = []
    distinct: set[bytes] = set()
    reads = 0
    last_progress = time.monotonic()
    while len(distinct) < messages:
        data = await source.read(READ_BATCH, READ_TIMEOUT_MS)
        reads += 1
        if data:
            answered = await source.ack(data, one_per_request=per_offset)
            if answered != (len(data) if per_offset else 1):
                raise RuntimeError(f"source_read_ack: {answered} ack responses for {len(data)} offsets")
            read.extend(datum.payload for datum in data)
            distinct.update(datum.payload for datum in data)
            last_progress = time.monotonic()
        elif time.monotonic() - last_progress > STALL_S:
            raise RuntimeError(f"source_read_ack: nothing read for {STALL_S:.0f} s after {len(distinct)} of {messages}")
    return read, reads


async def source_phase(client: Client, cluster: LocalCluster, phase: str, messages: int) -> dict[str, Any]:
    """A source phase with a sidecar (and consumer group) of its own, stopped cleanly at the end."""
    env = {**SIDECAR_ENV, "WEIR_NUMAFLOW_SOURCE_CONSUMER": SOURCE_GROUPS[phase]}
    sidecar = await asyncio.to_thread(cluster.start_numaflow_source, f"sidecar-{SOURCE_GROUPS[phase]}", STREAM, env)
    try:
        figures = await source_read_ack(client, cluster, sidecar, phase, messages)
    except BaseException:
        print(f"the sidecar's log ends:\n{sidecar.log_tail()}", file=sys.stderr)
        raise
    finally:
        stopped = await asyncio.to_thread(sidecar.stop)
    if stopped != 0:
        raise RuntimeError(f"{phase}: the sidecar exited with {stopped}:\n{sidecar.log_tail()}")
    return figures


async def source_read_ack(
    client: Client, cluster: LocalCluster, sidecar: NumaflowSourceHandle, phase: str, messages: int
) -> dict[str, Any]:
    """A source phase: the sidecar's group read as Numaflow's data plane reads it, from the moment
    the group is moved to the first message."""
    node = cluster.nodes[0]
    group = SOURCE_GROUPS[phase]
    async with DataPlane(str(sidecar.socket_path)) as source:
        await hold_every_partition(source)
        meter = Meter({"sidecar": sidecar, "node": node})
        acks_before, calls_before = ack_batch_calls(node), sidecar_call_seconds(sidecar)
        meter.start()
        await client.seek_consumer(STREAM, group, seq=1)
        read, reads = await read_and_ack(source, messages, per_offset=phase == "source_read_ack_per_offset")
        figures = meter.figures(messages)
        acks, calls = ack_batch_calls(node) - acks_before, sidecar_call_seconds(sidecar)
        read.extend(datum.payload for datum in await source.read(READ_BATCH, 200))  # nothing more may come
        pending = await source.pending()
    figures["node_ack_batch_calls_per_100"] = round(acks / messages * 100, 1)
    figures["read_requests"] = reads
    figures["mean_read_batch"] = round(messages / reads, 1)
    figures["sidecar_seconds_answering"] = {
        method: round(seconds - calls_before.get(method, 0.0), 3) for method, seconds in sorted(calls.items())
    }
    figures.update(check_read_once(phase, read, messages))
    if pending != 0:
        raise RuntimeError(f"{phase}: the sidecar reports {pending} pending after every message was read")
    await check_settled(client, phase, group, messages)
    return figures


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster = await asyncio.to_thread(LocalCluster.start, workdir / "cluster", nodes=1, routers=1, replicators=0)
    try:
        async with Client(cluster.router_addresses) as client:
            await client.create_stream(stream_config(STREAM, partitions=PARTITIONS))
            per_partition = await publish_all(client, args.messages)
            native = await native_consume(client, cluster.nodes[0], per_partition)
            batched = await source_phase(client, cluster, "source_read_ack", args.messages)
            per_offset = await source_phase(client, cluster, "source_read_ack_per_offset", args.messages)
    finally:
        await asyncio.to_thread(cluster.stop)
    return {
        "settings": {
            "messages": args.messages,
            "partitions": PARTITIONS,
            "native_fetch_batch": NATIVE_FETCH_BATCH,
            "read_batch": READ_BATCH,
            "read_timeout_ms": READ_TIMEOUT_MS,
            "sidecar_fetch_batch": SIDECAR_FETCH_BATCH,
        },
        "native_consume": native,
        "source_read_ack": batched,
        "source_read_ack_per_offset": per_offset,
        "source_to_native_throughput": round(batched["msgs_per_s"] / native["msgs_per_s"], 3),
        "per_offset_source_to_native_throughput": round(per_offset["msgs_per_s"] / native["msgs_per_s"], 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.numaflow_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=20_000, help="messages published, then read by each phase")
    parser.add_argument("--smoke", action="store_true", help="a small count: checks it works")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.messages < 1:
        parser.error("--messages must be at least 1")
    if args.smoke:
        args.messages = min(args.messages, 1000)
    return run_and_report(run, args, "weir-bench-numaflow-")


if __name__ == "__main__":
    sys.exit(main())
