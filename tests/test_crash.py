"""Crash and fault tests: real partition-node processes over real gRPC.

Each test starts a node of its own and then SIGKILLs it (a crash: nothing gets flushed), SIGTERMs it
(a drain) or corrupts its files between runs, and checks what the node serves after a restart on the
same data directory:

* an acknowledged publish is never lost, and what is stored is gap-free, whole and consistent with
  the stream stats (`test_sigkill_under_publish_load_loses_no_acknowledged_message`);
* a record that fails its checksum is reported as DATA_LOSS / `CorruptRecordError`, never returned
  (`test_corrupt_record_is_reported_never_returned`);
* SIGTERM drains in-flight publishes and exits 0 (`test_sigterm_drains_in_flight_publishes`);
* memory streams lose their messages but keep their config (`test_memory_stream_is_empty_after_restart`);
* the change feed survives a crash and never reuses a change seq (`test_change_feed_survives_sigkill`).
* WAL checkpoints on the node's background thread, racing commits, lose nothing across crashes
  (`test_sigkill_during_background_checkpoints_loses_nothing`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import sqlite3
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from weir.client import NodeClient, consumer_config, stream_config
from weir.errors import CorruptRecordError, NoSuchMessageError, UnavailableError, WeirError
from weir.partitioning import partition_for_key
from weir.subjects import validate_subject
from weir.v1 import streams_pb2, types_pb2
from weir_cli.launcher import NodeHandle, start_node
from weir_server.internal_clients import ChangeFeedClient

from tests.conftest import http_get, needs_own_processes
from tests.stored_records import overwrite_stored_record, stored_record, stored_rows

PAYLOAD_BYTES = 1024
PUBLISHERS = 8
BATCH_ENTRIES = 4
LOAD_SECONDS = 1.5  # load before each crash
MAX_ACKED_PER_RUN = 6000  # ... or fewer seconds when this many messages were acknowledged
MAX_REQUESTS_PER_RUN = 20_000  # hard bound on the requests of one load run
CALL_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 20.0
SERVING_TIMEOUT_S = 15.0
SUBJECT_PREFIX = "crash"

Key = tuple[int, int]  # (partition, seq)


def digest(payload: bytes) -> bytes:
    return hashlib.blake2b(payload, digest_size=16).digest()


def payload_for(label: str) -> bytes:
    """A unique 1 KiB payload that starts with `label`."""
    head = f"{label}|".encode()
    return (head * (PAYLOAD_BYTES // len(head) + 1))[:PAYLOAD_BYTES]


def log_path(handle: NodeHandle, stream: str, partition: int) -> Path:
    return handle.data_dir / "streams" / stream / str(partition) / "log.sqlite"


@dataclass
class Load:
    """What publishers sent and what the node acknowledged, over every run of one test."""

    stream: str
    partitions: int
    acked: dict[Key, bytes] = field(default_factory=dict)  # (partition, seq) -> payload digest
    sent: set[bytes] = field(default_factory=set)  # digests of every payload ever sent
    problems: list[str] = field(default_factory=list)  # anything wrong seen by a publisher
    run: int = 0
    ending: bool = False  # the node is being killed / stopped: failures are expected from here on
    over: bool = False  # the node is gone: publishers stop
    failures: list[WeirError] = field(default_factory=list)  # failed calls after `ending`
    requests: int = 0

    def start_run(self) -> None:
        self.run += 1
        self.ending = False
        self.over = False
        self.failures = []
        self.requests = 0

    def acked_in(self, partition: int) -> list[int]:
        return sorted(seq for p, seq in self.acked if p == partition)

    def record(self, partition: int, seq: int, expected_partition: int, payload: bytes) -> None:
        if partition != expected_partition:
            self.problems.append(f"acked on partition {partition}, expected {expected_partition}")
        if seq < 1:
            self.problems.append(f"acked with seq {seq}")
        if (partition, seq) in self.acked:
            self.problems.append(f"(partition {partition}, seq {seq}) acknowledged twice")
        self.acked[(partition, seq)] = digest(payload)


async def publisher(client: NodeClient, load: Load, index: int) -> None:
    """Publish until a call fails (the node went away): single publishes (explicit partition or
    key) and batches mixing both. Records an ack only once its call returned successfully."""
    n = 0
    while not load.over and load.requests < MAX_REQUESTS_PER_RUN:
        load.requests += 1
        n += 1
        try:
            if n % 3 == 0:
                targets: list[tuple[streams_pb2.PublishEntry, int, bytes]] = []
                for entry_index in range(BATCH_ENTRIES):
                    label = f"r{load.run}-w{index}-n{n}-e{entry_index}"
                    payload = payload_for(label)
                    entry = streams_pb2.PublishEntry(subject=f"{SUBJECT_PREFIX}.w{index}.batch", payload=payload)
                    if entry_index % 2:
                        expected = (index + entry_index) % load.partitions
                        entry.partition = expected
                    else:
                        key = label.encode()
                        entry.key = key
                        expected = partition_for_key(key, load.partitions)
                    load.sent.add(digest(payload))
                    targets.append((entry, expected, payload))
                results = await client.publish_batch(load.stream, [entry for entry, _, _ in targets])
                if len(results) != len(targets):
                    load.problems.append(f"{len(results)} results for {len(targets)} entries")
                for (_, expected, payload), result in zip(targets, results, strict=False):
                    if result.result_code != "ok":
                        load.problems.append(f"batch entry failed: {result.result_code} {result.message}")
                        continue
                    load.record(result.partition, result.seq, expected, payload)
            else:
                label = f"r{load.run}-w{index}-n{n}"
                payload = payload_for(label)
                load.sent.add(digest(payload))
                subject = f"{SUBJECT_PREFIX}.w{index}.single"
                if n % 2:
                    expected = n % load.partitions
                    ack = await client.publish(load.stream, subject, payload, partition=expected)
                else:
                    key = label.encode()
                    expected = partition_for_key(key, load.partitions)
                    ack = await client.publish(load.stream, subject, payload, key=key)
                load.record(ack.partition, ack.seq, expected, payload)
        except WeirError as error:
            if load.ending:
                load.failures.append(error)
            else:
                load.problems.append(f"publisher {index} failed before the node went away: {error!r}")
            return


async def run_load_then(
    client: NodeClient,
    load: Load,
    end_node: Callable[[], Awaitable[None]],
    *,
    seconds: float = LOAD_SECONDS,
    max_acked: int = MAX_ACKED_PER_RUN,
    before_end: Callable[[], Awaitable[None]] | None = None,
) -> int:
    """Run PUBLISHERS publishers for `seconds` (or until `max_acked` new acks), then `end_node()`
    while their calls are in flight (publishers keep publishing until a call fails) and wait for
    every publisher to finish. Returns how many publishers had a call in flight when the node was
    ended."""
    load.start_run()
    acked_before = len(load.acked)
    tasks = [asyncio.create_task(publisher(client, load, index)) for index in range(PUBLISHERS)]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len(load.acked) - acked_before < max_acked:
        if all(task.done() for task in tasks):
            break
        await asyncio.sleep(0.02)
    if before_end is not None:
        await before_end()
    in_flight = sum(not task.done() for task in tasks)
    load.ending = True
    await end_node()
    load.over = True
    async with asyncio.timeout(CALL_TIMEOUT_S * 2):
        await asyncio.gather(*tasks)
    assert not load.problems, load.problems[:10]
    assert len(load.acked) > acked_before, "no publish was acknowledged before the node was ended"
    return in_flight


async def stored_messages(client: NodeClient, stream: str, partition: int) -> list[types_pb2.Message]:
    return [message async for message in client.read_all(stream, partition)]


async def verify_log(client: NodeClient, load: Load) -> dict[Key, bytes]:
    """Check the stream against everything acknowledged so far; returns every stored
    (partition, seq) -> payload digest."""
    info = await client.stream_info(load.stream)
    by_partition = {stats.partition: stats for stats in info.stats.partitions}
    assert sorted(by_partition) == list(range(load.partitions))
    stored: dict[Key, bytes] = {}
    total_count = 0
    total_bytes = 0
    for partition in range(load.partitions):
        messages = await stored_messages(client, load.stream, partition)
        stats = by_partition[partition]
        last_seq = stats.last_seq
        seqs = [message.seq for message in messages]
        assert seqs == list(range(1, last_seq + 1)), f"partition {partition}: stored seqs are not 1..{last_seq}"
        acked = load.acked_in(partition)
        assert acked, f"partition {partition}: nothing acknowledged (the load did not reach it)"
        assert last_seq >= acked[-1], f"partition {partition}: last_seq {last_seq} < acknowledged seq {acked[-1]}"
        assert stats.first_seq == 1
        assert stats.msg_count == last_seq
        assert stats.bytes == sum(message.ByteSize() for message in messages)
        for message in messages:
            validate_subject(message.subject)  # decodes to a valid subject: nothing half-written
            assert message.subject.startswith(f"{SUBJECT_PREFIX}.w"), message.subject
            assert message.partition == partition
            assert message.ts_ms > 0
            assert len(message.payload) == PAYLOAD_BYTES
            stored[(partition, message.seq)] = digest(message.payload)
        total_count += stats.msg_count
        total_bytes += stats.bytes
    assert info.stats.msg_count == total_count
    assert info.stats.bytes == total_bytes
    # Every acknowledged message is stored where its ack said, with its payload.
    lost = [key for key, payload_digest in load.acked.items() if stored.get(key) != payload_digest]
    assert not lost, f"{len(lost)} acknowledged messages lost or changed, e.g. {sorted(lost)[:5]}"
    # What is stored but was never acknowledged (its ack was lost in the crash) is still something
    # a publisher sent, and nothing is stored twice.
    assert set(stored.values()) <= load.sent
    assert len(set(stored.values())) == len(stored), "a message is stored twice"
    return stored


async def spot_check(client: NodeClient, load: Load, samples: int = 30) -> None:
    """GetMessage on a spread of acknowledged messages."""
    keys = sorted(load.acked)
    for partition, seq in keys[:: max(1, len(keys) // samples)]:
        message = await client.get_message(load.stream, partition, seq)
        assert (message.partition, message.seq) == (partition, seq)
        assert digest(message.payload) == load.acked[(partition, seq)]


def check_files(handle: NodeHandle, stream: str, partitions: int) -> int:
    """With the node stopped: every stored row's checksum, size and columns match its record."""
    rows_checked = 0
    for partition in range(partitions):
        with contextlib.closing(sqlite3.connect(log_path(handle, stream, partition))) as db:
            rows = stored_rows(db)
        for seq, ts_ms, subject, size, crc, record in rows:
            assert zlib.crc32(record) == crc, f"partition {partition} seq {seq}: checksum mismatch"
            assert size == len(record)
            message = types_pb2.Message.FromString(record)
            assert (message.seq, message.ts_ms, message.subject, message.partition) == (
                seq,
                ts_ms,
                subject,
                partition,
            )
        rows_checked += len(rows)
    return rows_checked


async def until_serving(probe: Callable[[], Awaitable[object]]) -> None:
    """Retry `probe` while it fails with a transport error. A new channel to a restarted node on
    the same port can fail fast ("Connection refused") for a while: grpc shares subchannels
    process-wide, and the one the old channel used is still in reconnect backoff."""
    deadline = time.monotonic() + SERVING_TIMEOUT_S
    while True:
        try:
            await probe()
            return
        except UnavailableError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def restart(handle: NodeHandle) -> NodeClient:
    """Start the node again on its data directory and ports; a new client for it, once it answers."""
    handle.start(reuse_ports=True)
    client = NodeClient(handle.client_address, timeout_s=CALL_TIMEOUT_S)
    await until_serving(client.list_streams)
    return client


async def feed_client(handle: NodeHandle) -> ChangeFeedClient:
    feed = ChangeFeedClient(handle.internal_address, timeout_s=CALL_TIMEOUT_S)
    await until_serving(lambda: feed.read_changes(0, 1))
    return feed


# --------------------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_sigkill_under_publish_load_loses_no_acknowledged_message(
    fresh_node: NodeHandle, stream_name: str
) -> None:
    """Three SIGKILLs under concurrent publish load, a restart after each.

    After every restart: each acknowledged message is readable at its (partition, seq) with its
    payload; each partition stores exactly 1..last_seq (no gap, nothing half-written, nothing twice);
    the stats agree; and what was read after one crash is still there after the next one.
    """
    partitions = 3
    load = Load(stream_name, partitions)
    client = NodeClient(fresh_node.client_address, timeout_s=CALL_TIMEOUT_S)
    await client.create_stream(stream_config(stream_name, subjects=[f"{SUBJECT_PREFIX}.>"], partitions=partitions))
    previous: dict[Key, bytes] = {}
    previous_last: dict[int, int] = dict.fromkeys(range(partitions), 0)

    async def crash() -> None:
        fresh_node.kill()

    try:
        for cycle in range(3):
            in_flight = await run_load_then(client, load, crash)
            assert in_flight > 0, "the node was killed with no call in flight"
            assert load.failures, "calls were in flight but none failed at the crash"
            await client.close()
            client = await restart(fresh_node)
            stored = await verify_log(client, load)
            await spot_check(client, load)
            # Nothing read after an earlier crash went away in a later one.
            assert {key: stored.get(key) for key in previous} == previous, f"cycle {cycle}: stored data changed"
            last = {p: max(seq for q, seq in stored if q == p) for p in range(partitions)}
            assert all(last[p] > previous_last[p] for p in range(partitions)), (cycle, previous_last, last)
            previous, previous_last = stored, last

        # Seqs continue right after the last stored seq of each partition.
        for partition in range(partitions):
            payload = payload_for(f"after-crashes-p{partition}")
            load.sent.add(digest(payload))
            ack = await client.publish(stream_name, f"{SUBJECT_PREFIX}.w0.final", payload, partition=partition)
            assert (ack.partition, ack.seq) == (partition, previous_last[partition] + 1)
            load.record(ack.partition, ack.seq, partition, payload)
        stored = await verify_log(client, load)
    finally:
        await client.close()
    assert fresh_node.stop() == 0
    assert check_files(fresh_node, stream_name, partitions) == len(stored)


@pytest.mark.slow
async def test_a_client_kept_across_a_restart_publishes_and_consumes_again_at_once(
    fresh_node: NodeHandle, stream_name: str
) -> None:
    """NodeClient's publish_batch, fetch and ack_batch ride pooled lockstep streams. While the node
    is down they fail retryably (UnavailableError); once it is back, the same client's first call of
    each kind succeeds (a call the dead process ended is never reused)."""
    entry = streams_pb2.PublishEntry
    async with NodeClient(fresh_node.client_address, timeout_s=CALL_TIMEOUT_S) as client:
        await client.create_stream(stream_config(stream_name, subjects=["s.>"]))
        await client.create_consumer(stream_name, consumer_config("reader"))
        (first,) = await client.publish_batch(stream_name, [entry(subject="s.a", payload=b"before")])
        assert [message.seq for message in await client.fetch(stream_name, "reader")] == [first.seq] == [1]
        assert [result.result_code for result in await client.ack_batch(stream_name, "reader", 0, [1])] == ["ok"]

        fresh_node.kill()
        with pytest.raises(UnavailableError):
            await client.publish_batch(stream_name, [entry(subject="s.a", payload=b"while down")])
        await (await restart(fresh_node)).close()

        (second,) = await client.publish_batch(stream_name, [entry(subject="s.a", payload=b"after")])
        assert (second.result_code, second.seq) == ("ok", 2)
        fetched = await client.fetch(stream_name, "reader")
        assert [(message.seq, message.payload) for message in fetched] == [(2, b"after")]
        assert [result.result_code for result in await client.ack_batch(stream_name, "reader", 0, [2])] == ["ok"]


@pytest.mark.slow
async def test_corrupt_record_is_reported_never_returned(fresh_node: NodeHandle, stream_name: str) -> None:
    """A record whose bytes no longer match its stored crc (flipped on disk while the node was
    stopped) fails GetMessage and any ReadMessages range that includes it with DATA_LOSS and a
    CorruptRecordError naming stream, partition and seq; every other seq still reads, and the
    partition still takes publishes."""
    partition, bad_seq, count = 1, 5, 10
    client = NodeClient(fresh_node.client_address, timeout_s=CALL_TIMEOUT_S)
    try:
        await client.create_stream(stream_config(stream_name, partitions=2))
        payloads = {seq: payload_for(f"corrupt-{seq}") for seq in range(1, count + 1)}
        for seq, payload in payloads.items():
            ack = await client.publish(stream_name, f"corrupt.s{seq}", payload, partition=partition)
            assert ack.seq == seq
    finally:
        await client.close()
    assert fresh_node.stop() == 0

    with contextlib.closing(sqlite3.connect(log_path(fresh_node, stream_name, partition))) as db:
        record, crc = stored_record(db, bad_seq)
        damaged = bytearray(record)
        middle = len(damaged) // 2
        for index in range(middle, middle + 4):
            damaged[index] ^= 0xFF
        assert zlib.crc32(bytes(damaged)) != crc
        with db:
            overwrite_stored_record(db, bad_seq, bytes(damaged))

    client = await restart(fresh_node)
    try:
        expected_metadata = {"stream": stream_name, "partition": str(partition), "seq": str(bad_seq)}

        # On the wire: gRPC status DATA_LOSS.
        for call, request in (
            (
                client.stub.GetMessage,
                streams_pb2.GetMessageRequest(stream=stream_name, partition=partition, seq=bad_seq),
            ),
            (
                client.stub.ReadMessages,
                streams_pb2.ReadMessagesRequest(stream=stream_name, partition=partition, from_seq=1),
            ),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as raw:
                await call(request, timeout=CALL_TIMEOUT_S)
            assert raw.value.code() == grpc.StatusCode.DATA_LOSS

        # Through the client: a typed CorruptRecordError naming where.
        with pytest.raises(CorruptRecordError) as corrupt:
            await client.get_message(stream_name, partition, bad_seq)
        assert corrupt.value.metadata == expected_metadata
        assert not corrupt.value.retryable
        for from_seq, max_messages in ((0, 0), (1, 100), (bad_seq, 1), (bad_seq - 1, 2), (3, 10)):
            with pytest.raises(CorruptRecordError) as corrupt:
                await client.read_messages(stream_name, partition, from_seq, max_messages=max_messages)
            assert corrupt.value.metadata == expected_metadata, (from_seq, max_messages)
        with pytest.raises(CorruptRecordError):
            await client.scan_subject(stream_name, f"corrupt.s{bad_seq}", partition)

        # Everything else reads fine.
        for seq, payload in payloads.items():
            if seq != bad_seq:
                message = await client.get_message(stream_name, partition, seq)
                assert message.payload == payload
        before = await client.read_messages(stream_name, partition, 1, max_messages=bad_seq - 1)
        assert [m.seq for m in before.messages] == list(range(1, bad_seq))
        assert [m.payload for m in before.messages] == [payloads[seq] for seq in range(1, bad_seq)]
        after = await client.read_messages(stream_name, partition, bad_seq + 1)
        assert [m.seq for m in after.messages] == list(range(bad_seq + 1, count + 1))
        info = await client.stream_info(stream_name)
        assert info.stats.partitions[partition].last_seq == count
        ack = await client.publish(stream_name, "corrupt.more", b"still writable", partition=partition)
        assert ack.seq == count + 1
        with pytest.raises(NoSuchMessageError):
            await client.get_message(stream_name, 0, 1)
    finally:
        await client.close()


@dataclass
class Drain:
    load: Load
    exit_code: int
    stop_seconds: float
    acked_during_shutdown: int


async def sigterm_under_load(handle: NodeHandle, stream: str) -> Drain:
    """Publish to a 3-partition stream, SIGTERM the node with calls in flight (publishers keep
    publishing until a call fails), restart it and check every acknowledged message."""
    load = Load(stream, 3)
    client = NodeClient(handle.client_address, timeout_s=CALL_TIMEOUT_S)
    results: list[tuple[int, float, int]] = []

    async def terminate() -> None:
        acked_before = len(load.acked)
        started = time.monotonic()
        # In a thread, so this loop keeps serving the in-flight calls while the node drains.
        exit_code = await asyncio.to_thread(handle.stop, STOP_TIMEOUT_S)
        results.append((exit_code, time.monotonic() - started, len(load.acked) - acked_before))

    try:
        await client.create_stream(stream_config(stream, subjects=[f"{SUBJECT_PREFIX}.>"], partitions=3))
        in_flight = await run_load_then(client, load, terminate, seconds=1.0)
        assert in_flight > 0
    finally:
        await client.close()
    ((exit_code, stop_seconds, acked_during_shutdown),) = results
    assert "Traceback" not in handle.log_tail(400), handle.log_tail(400)

    client = await restart(handle)
    try:
        await verify_log(client, load)
        await spot_check(client, load)
    finally:
        await client.close()
    return Drain(load, exit_code, stop_seconds, acked_during_shutdown)


def check_shutdown_failures(failures: list[WeirError]) -> None:
    """Every call that failed while the node shut down failed with a retryable error: either the
    node's `shutting_down` (UNAVAILABLE) or a transport failure (UNAVAILABLE / CANCELLED, both
    mapped to the retryable `UnavailableError`)."""
    assert failures, "publishers never saw the node go away"
    not_retryable = [error for error in failures if not error.retryable]
    assert not not_retryable, not_retryable[:5]


@pytest.mark.slow
async def test_sigterm_drains_in_flight_publishes(fresh_node: NodeHandle, stream_name: str) -> None:
    """SIGTERM with publishes in flight (default shutdown_grace_ms): the node answers the calls in
    flight, exits 0 within the timeout, every acknowledged message is there after the restart, and
    every call that failed during shutdown failed with a retryable error (shutting_down, or a
    transport error mapped to unavailable)."""
    drain = await sigterm_under_load(fresh_node, stream_name)
    assert drain.exit_code == 0, fresh_node.log_tail()
    assert drain.stop_seconds < STOP_TIMEOUT_S
    assert drain.acked_during_shutdown > 0, "no call in flight at SIGTERM was answered"
    check_shutdown_failures(drain.load.failures)


@pytest.mark.slow
async def test_sigterm_without_grace_fails_in_flight_calls_retryably(tmp_path: Path, stream_name: str) -> None:
    """SIGTERM with WEIR_NODE_SHUTDOWN_GRACE_MS=0: calls in flight are cut off (some of them were
    committed without their ack reaching the caller), yet the node exits 0, loses no acknowledged
    message, and every cut-off call fails with a retryable error, since the caller cannot know
    whether it was committed and must be allowed to retry. See `check_shutdown_failures`."""
    needs_own_processes()
    handle = start_node(tmp_path / "data", node_id="no-grace", env={"WEIR_NODE_SHUTDOWN_GRACE_MS": "0"})
    try:
        drain = await sigterm_under_load(handle, stream_name)
    finally:
        handle.kill()
    assert drain.exit_code == 0, handle.log_tail()
    assert drain.stop_seconds < STOP_TIMEOUT_S
    check_shutdown_failures(drain.load.failures)


def checkpoints_run(handle: NodeHandle) -> float:
    """How many WAL checkpoints the node's background thread has run (its /metrics)."""
    page = http_get(f"http://127.0.0.1:{handle.metrics_port}/metrics")
    match = re.search(r"^weir_wal_checkpoint_seconds_count (\S+)$", page, re.M)
    assert match is not None, "weir_wal_checkpoint_seconds_count is not exported"
    return float(match.group(1))


@pytest.mark.slow
async def test_sigkill_during_background_checkpoints_loses_nothing(tmp_path: Path, stream_name: str) -> None:
    """With a WAL checkpoint every 64 KiB (WEIR_NODE_WAL_CHECKPOINT_BYTES), the node's checkpoint
    thread copies the WAL into the database file while publishes commit. Two SIGKILLs under load,
    each after checkpoints ran: after each restart every acknowledged message is there, and every
    stored row passes its checksum in the files."""
    needs_own_processes()
    handle = start_node(
        tmp_path / "data", node_id="checkpoints", env={"WEIR_NODE_WAL_CHECKPOINT_BYTES": str(64 * 1024)}
    )
    load = Load(stream_name, 2)
    client = NodeClient(handle.client_address, timeout_s=CALL_TIMEOUT_S)
    checkpoints: list[float] = []

    async def count_checkpoints() -> None:
        checkpoints.append(await asyncio.to_thread(checkpoints_run, handle))

    async def crash() -> None:
        handle.kill()

    try:
        await client.create_stream(stream_config(stream_name, subjects=[f"{SUBJECT_PREFIX}.>"], partitions=2))
        for _ in range(2):
            await run_load_then(client, load, crash, before_end=count_checkpoints)
            await client.close()
            client = await restart(handle)
            await verify_log(client, load)
            await spot_check(client, load)
    finally:
        await client.close()
        exit_code = handle.stop()
    assert exit_code == 0, handle.log_tail()
    assert all(count > 0 for count in checkpoints), f"no background checkpoint ran before a crash: {checkpoints}"
    assert check_files(handle, stream_name, 2) >= len(load.acked)


@pytest.mark.slow
async def test_memory_stream_is_empty_after_restart(fresh_node: NodeHandle, stream_name: str) -> None:
    """Behaviour of storage="memory" across restarts (clean SIGTERM and SIGKILL alike):

    * the stream still exists with its config (the config lives in the node's catalog);
    * its messages are gone: every partition is empty (msg_count 0, last_seq 0, first_seq 1) and
      seqs start again at 1, so a seq seen before the restart names a different message after it;
    * its append changes are gone from the change feed as well (only the catalog's stream_created
      change is kept), while change seqs handed out later are still greater than any before.
    A file stream on the same node keeps everything (control).
    """
    memory_stream, file_stream = f"{stream_name}-mem", f"{stream_name}-file"
    client = NodeClient(fresh_node.client_address, timeout_s=CALL_TIMEOUT_S)
    try:
        memory_config = await client.create_stream(stream_config(memory_stream, partitions=2, storage="memory"))
        assert memory_config.storage == types_pb2.STORAGE_KIND_MEMORY
        await client.create_stream(stream_config(file_stream))
        for partition in (0, 1):
            for n in range(5):
                ack = await client.publish(
                    memory_stream, "mem.a", f"before-{partition}-{n}".encode(), partition=partition
                )
                assert ack.seq == n + 1
        await client.publish(file_stream, "file.a", b"kept")
        info = await client.stream_info(memory_stream)
        assert info.stats.msg_count == 10
        async with ChangeFeedClient(fresh_node.internal_address, timeout_s=CALL_TIMEOUT_S) as feed:
            before = (await feed.read_changes(0, 10000)).changes
        assert any(c.stream == memory_stream and c.WhichOneof("kind") == "append" for c in before)
        max_before = max(c.change_seq for c in before)
    finally:
        await client.close()

    for how in ("sigterm", "sigkill"):
        if how == "sigterm":
            assert fresh_node.stop() == 0
        else:
            fresh_node.kill()
        client = await restart(fresh_node)
        try:
            assert await client.list_streams() == sorted([memory_stream, file_stream])
            info = await client.stream_info(memory_stream)
            assert info.config == memory_config, how
            assert info.stats.msg_count == 0
            assert info.stats.bytes == 0
            for stats in info.stats.partitions:
                assert (stats.first_seq, stats.last_seq, stats.msg_count) == (1, 0, 0), how
            for partition in (0, 1):
                response = await client.read_messages(memory_stream, partition)
                assert list(response.messages) == []
                assert response.last_seq == 0
                with pytest.raises(NoSuchMessageError):
                    await client.get_message(memory_stream, partition, 1)
            kept = await client.get_message(file_stream, 0, 1)
            assert kept.payload == b"kept"

            feed = await feed_client(fresh_node)
            async with feed:
                changes = (await feed.read_changes(0, 10000)).changes
            memory_kinds = [c.WhichOneof("kind") for c in changes if c.stream == memory_stream]
            assert memory_kinds == ["stream_created"], (how, memory_kinds)

            # Writable again, seqs from 1: the old seq 1 is gone, a new message takes it.
            ack = await client.publish(memory_stream, "mem.a", f"after-{how}".encode(), partition=0)
            assert (ack.partition, ack.seq) == (0, 1)
            assert (await client.get_message(memory_stream, 0, 1)).payload == f"after-{how}".encode()
            feed = await feed_client(fresh_node)
            async with feed:
                changes = (await feed.read_changes(max_before + 1, 10000)).changes
            appends = [c for c in changes if c.stream == memory_stream and c.WhichOneof("kind") == "append"]
            assert len(appends) == 1
            assert appends[0].change_seq > max_before
            max_before = max(c.change_seq for c in changes)
        finally:
            await client.close()


async def read_all_changes(feed: ChangeFeedClient) -> tuple[list[types_pb2.Change], int]:
    """Every retained change (from 0) and the feed's horizon."""
    response = await feed.read_changes(0, 10000)
    changes = list(response.changes)
    while response.changes and response.next_change_seq <= response.last_change_seq:
        response = await feed.read_changes(response.next_change_seq, 10000)
        changes.extend(response.changes)
    return changes, response.last_change_seq


def check_appends(changes: list[types_pb2.Change], stream: str, last_seqs: dict[int, int]) -> None:
    """The stream's append changes tile each partition's 1..last_seq exactly, in change seq order."""
    for partition, last_seq in last_seqs.items():
        appends = [
            c for c in changes if c.stream == stream and c.partition == partition and c.WhichOneof("kind") == "append"
        ]
        assert all(c.role == types_pb2.PARTITION_ROLE_PRIMARY for c in appends)
        next_seq = 1
        for change in appends:  # in change seq order; a partition commits in seq order
            append = change.append
            assert append.first_seq == next_seq, f"partition {partition}: append {append} after seq {next_seq - 1}"
            assert append.last_seq >= append.first_seq
            assert append.message_count == append.last_seq - append.first_seq + 1
            next_seq = append.last_seq + 1
        assert next_seq == last_seq + 1, f"partition {partition}: appends end at {next_seq - 1}, log at {last_seq}"


@pytest.mark.slow
async def test_change_feed_survives_sigkill(fresh_node: NodeHandle, stream_name: str) -> None:
    """After a SIGKILL under publish load and a restart, the change feed still holds the stream's
    creation and append changes covering every stored (so every acknowledged) message, with
    strictly increasing change seqs; everything read from the feed before the crash is unchanged;
    and changes made after the restart get change seqs above every one handed out before."""
    partitions = 2
    load = Load(stream_name, partitions)
    client = NodeClient(fresh_node.client_address, timeout_s=CALL_TIMEOUT_S)
    feed = ChangeFeedClient(fresh_node.internal_address, timeout_s=CALL_TIMEOUT_S)
    seen_before_crash: list[types_pb2.Change] = []

    async def read_feed_under_load() -> None:
        changes, _ = await read_all_changes(feed)
        seen_before_crash.extend(changes)

    async def crash() -> None:
        fresh_node.kill()

    try:
        config = await client.create_stream(
            stream_config(stream_name, subjects=[f"{SUBJECT_PREFIX}.>"], partitions=partitions)
        )
        in_flight = await run_load_then(client, load, crash, seconds=1.0, before_end=read_feed_under_load)
        assert in_flight > 0
    finally:
        await client.close()
        await feed.close()
    assert any(c.WhichOneof("kind") == "append" for c in seen_before_crash)

    client = await restart(fresh_node)
    feed = await feed_client(fresh_node)
    try:
        await verify_log(client, load)
        info = await client.stream_info(stream_name)
        last_seqs = {stats.partition: stats.last_seq for stats in info.stats.partitions}

        changes, horizon = await read_all_changes(feed)
        change_seqs = [c.change_seq for c in changes]
        assert change_seqs == sorted(set(change_seqs)), "change seqs are not strictly increasing"
        assert change_seqs[-1] <= horizon
        by_seq = {c.change_seq: c for c in changes}
        for change in seen_before_crash:
            assert by_seq.get(change.change_seq) == change, f"change {change.change_seq} differs after the crash"
        created = [c for c in changes if c.stream == stream_name and c.WhichOneof("kind") == "stream_created"]
        assert len(created) == 1
        assert created[0].stream_created.config == config
        assert created[0].partition == 0
        check_appends(changes, stream_name, last_seqs)
        appends = [c for c in changes if c.stream == stream_name and c.WhichOneof("kind") == "append"]
        assert all(c.change_seq > created[0].change_seq for c in appends)
        covered = {(c.partition, seq) for c in appends for seq in range(c.append.first_seq, c.append.last_seq + 1)}
        assert set(load.acked) <= covered

        # New changes after the restart: above every change seq from before the crash.
        max_before = max(change_seqs)
        await client.update_stream(streams_pb2.UpdateStreamRequest(name=stream_name, max_msgs=1_000_000))
        for partition in range(partitions):
            ack = await client.publish(stream_name, f"{SUBJECT_PREFIX}.w0.after", b"after", partition=partition)
            assert ack.seq == last_seqs[partition] + 1
            last_seqs[partition] += 1
        after, horizon = await read_all_changes(feed)
        new = [c for c in after if c.change_seq not in by_seq]
        assert [c.WhichOneof("kind") for c in new] == ["stream_updated"] + ["append"] * partitions
        assert all(c.change_seq > max_before for c in new)
        assert max(c.change_seq for c in seen_before_crash) < min(c.change_seq for c in new)
        assert [c.change_seq for c in after] == sorted({c.change_seq for c in after})
        check_appends(after, stream_name, last_seqs)
    finally:
        await client.close()
        await feed.close()
