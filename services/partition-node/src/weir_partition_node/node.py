"""The partition node core, transport-neutral: streams, publish, reads and the change feed.

The gRPC servicers are thin adapters over `Node`; everything here raises typed `WeirError`s and
takes/returns weir.v1 protobuf messages (the upb codec is the fastest representation we have).

Lifecycle: `await Node.open(settings)` loads the catalog, reopens every partition and recovers the
change-feed position; `await node.close()` refuses new writes (`shutting_down`), commits what is
queued, stops the background sweeps and closes storage. Shutdown never drops an acknowledged write.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
import shutil
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from weir.errors import (
    AlreadyExistsError,
    ChangeFeedTruncatedError,
    CorruptRecordError,
    InvalidArgumentError,
    NoSuchMessageError,
    NoSuchPartitionError,
    NoSuchStreamError,
    OversizeError,
    ShuttingDownError,
    SubjectRejectedError,
    WeirError,
)
from weir.partitioning import partition_for_key
from weir.subjects import SubjectFilter, validate_name, validate_subject
from weir.v1 import streams_pb2, types_pb2

from weir_partition_node import metrics
from weir_partition_node.catalog import Catalog
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.clock import Clock, SystemClock
from weir_partition_node.partition import AppendOutcome, CommitLimits, Partition, PreparedEntry, StreamView
from weir_partition_node.settings import NodeSettings
from weir_partition_node.storage.base import PartitionLog
from weir_partition_node.storage.memory import MemoryPartitionLog
from weir_partition_node.storage.sqlite import SqlitePartitionLog
from weir_partition_node.streamconfig import apply_update, bounds_of, normalize_config

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_READ_MESSAGES = 100
MAX_READ_MESSAGES = 10_000
DEFAULT_READ_BYTES = 4 * 1024 * 1024
DEFAULT_SCAN_LIMIT = 1000
DEFAULT_SUBJECT_LIST_LIMIT = 10_000
DEFAULT_CHANGES = 1000
MAX_CHANGES = 10_000
TAIL_IDLE_WAKE_S = 5.0
NO_LIMIT = 2**62  # a LIMIT that SQLite (signed 64-bit) accepts and no table reaches
_RESERVED_KEY = "change_seq_reserved_through"
_FLOOR_KEY = "change_feed_floor"


class PublishFields(Protocol):
    """The fields PublishRequest and PublishEntry share (duck-typed protobuf, read-only)."""

    @property
    def subject(self) -> str: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def headers(self) -> Iterable[types_pb2.Header]: ...
    @property
    def ts_ms(self) -> int: ...
    @property
    def expected_last_seq(self) -> int: ...
    @property
    def key(self) -> bytes: ...
    @property
    def partition(self) -> int: ...
    def HasField(self, field_name: str, /) -> bool: ...


@dataclass(slots=True)
class PublishOutcome:
    partition: int
    seq: int
    result_code: str = "ok"
    message: str = ""


@dataclass(slots=True)
class Stream:
    config: types_pb2.StreamConfig
    created_at_ms: int
    view: StreamView
    partitions: list[Partition]
    subject_filter: SubjectFilter
    round_robin: itertools.cycle[int] = field(init=False)
    max_msg_bytes: int = field(init=False)

    def __post_init__(self) -> None:
        self.round_robin = itertools.cycle(range(len(self.partitions)))
        self.max_msg_bytes = self.config.max_msg_bytes

    @property
    def name(self) -> str:
        return self.config.name


class Node:
    def __init__(self, settings: NodeSettings, clock: Clock, catalog: Catalog, feed: ChangeFeedClock) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self._clock = clock
        self._catalog = catalog
        self.feed = feed
        self._streams: dict[str, Stream] = {}
        self._lifecycle_lock = asyncio.Lock()
        self._executor = ThreadPoolExecutor(max_workers=settings.storage_threads, thread_name_prefix="weir-commit")
        self._limits = CommitLimits(settings.max_batch_messages, settings.max_batch_bytes, settings.queue_depth)
        self._change_floor = 0
        self._closing = False
        self._sweeper: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    @classmethod
    async def open(cls, settings: NodeSettings, clock: Clock | None = None) -> Node:
        data_dir = settings.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        catalog = await Catalog.open(data_dir / "catalog.sqlite")
        reserved = await catalog.get_meta(_RESERVED_KEY)
        last_stored = await catalog.max_change_seq()

        async def reserve(through: int) -> None:
            await catalog.set_meta(_RESERVED_KEY, through)

        # Start past everything ever handed out: the lease covers memory streams and trimmed feeds.
        start = max(reserved, last_stored) + 1
        feed = ChangeFeedClock(start, start - 1, reserve)
        node = cls(settings, clock or SystemClock(), catalog, feed)
        node._change_floor = await catalog.get_meta(_FLOOR_KEY)
        for name, config_bytes, created_at_ms in await catalog.load_streams():
            config = types_pb2.StreamConfig.FromString(config_bytes)
            node._streams[name] = node._open_stream(config, created_at_ms)
        node._remove_orphans()
        metrics.STREAMS.set(len(node._streams))
        node._sweeper = asyncio.get_running_loop().create_task(node._sweep_forever(), name="retention-sweeper")
        logger.info("node %s open: %d streams, change feed at %d", node.node_id, len(node._streams), start)
        return node

    def begin_shutdown(self) -> None:
        """Refuse new requests with `ShuttingDownError` and end change-feed tails and watches; work
        already accepted (queued publishes) still completes. `close()` finishes the shutdown."""
        self._closing = True
        self.feed.wake_all()

    async def close(self) -> None:
        self.begin_shutdown()
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        for stream in self._streams.values():
            for partition in stream.partitions:
                await partition.close()
                partition.log.close()
        self.feed.wake_all()
        await self._catalog.close()
        self._executor.shutdown(wait=True)

    @property
    def _streams_root(self) -> Path:
        return self.settings.data_dir / "streams"

    def _stream_dir(self, name: str) -> Path:
        """Where a stream's partition logs live: <data_dir>/streams/<name>/<partition>/."""
        return self._streams_root / name

    def _open_stream(self, config: types_pb2.StreamConfig, created_at_ms: int) -> Stream:
        view = StreamView(config.name, bounds_of(config))
        partitions = []
        for index in range(config.partitions):
            log: PartitionLog
            if config.storage == types_pb2.STORAGE_KIND_MEMORY:
                log = MemoryPartitionLog(config.name, index)
                executor = None
            else:
                log = SqlitePartitionLog(
                    self._stream_dir(config.name) / str(index),
                    config.name,
                    index,
                    self.settings.fsync,
                )
                executor = self._executor
            partitions.append(
                Partition(view, index, log, feed=self.feed, clock=self._clock, executor=executor, limits=self._limits)
            )
        return Stream(config, created_at_ms, view, partitions, SubjectFilter(config.subjects))

    def _remove_orphans(self) -> None:
        """Remove partition directories of streams the catalog does not know (a crash between
        creating files and committing the catalog row, or between deleting the row and the files)."""
        root = self._streams_root
        if not root.is_dir():
            return
        for directory in root.iterdir():
            if directory.name not in self._streams:
                logger.warning("removing orphaned stream directory %s", directory)
                shutil.rmtree(directory, ignore_errors=True)

    def _check_open(self) -> None:
        if self._closing:
            raise ShuttingDownError(f"node {self.node_id} is shutting down")

    # -- stream lifecycle --------------------------------------------------------------------------

    def _stream(self, name: str) -> Stream:
        stream = self._streams.get(name)
        if stream is None:
            validate_name(name)
            raise NoSuchStreamError(f"stream {name!r} does not exist", stream=name)
        return stream

    def _partition(self, name: str, index: int) -> Partition:
        stream = self._stream(name)
        if index >= len(stream.partitions):
            raise NoSuchPartitionError(
                f"stream {name!r} has {len(stream.partitions)} partition(s); partition {index} does not exist",
                stream=name,
                partition=index,
            )
        return stream.partitions[index]

    async def _lifecycle_change(self, name: str, **kind: Any) -> tuple[int, int, bytes]:
        (change_seq,) = await self.feed.allocate(1)
        now_ms = self._clock.now_ms()
        change = types_pb2.Change(change_seq=change_seq, ts_ms=now_ms, stream=name, **kind)
        return change_seq, now_ms, change.SerializeToString()

    async def create_stream(self, config: types_pb2.StreamConfig) -> tuple[types_pb2.StreamConfig, int]:
        """Create a stream (idempotent for an identical config). Returns (effective config,
        created_at_ms). Errors: InvalidNameError, InvalidConfigError, InvalidSubjectError,
        AlreadyExistsError."""
        self._check_open()
        effective = normalize_config(config, self.settings.max_message_bytes)
        async with self._lifecycle_lock:
            existing = self._streams.get(effective.name)
            if existing is not None:
                if existing.config == effective:
                    return existing.config, existing.created_at_ms
                raise AlreadyExistsError(
                    f"stream {effective.name!r} already exists with a different config", stream=effective.name
                )
            created_at_ms = self._clock.now_ms()
            stream = self._open_stream(effective, created_at_ms)
            change = await self._lifecycle_change(
                effective.name, stream_created=types_pb2.StreamCreatedChange(config=effective)
            )
            try:
                await self._catalog.create_stream(effective.name, effective.SerializeToString(), created_at_ms, change)
            except BaseException:
                self.feed.settle([change[0]])
                await self._destroy_partitions(stream)
                raise
            self.feed.settle([change[0]])
            self._streams[effective.name] = stream
            metrics.STREAMS.set(len(self._streams))
            return effective, created_at_ms

    async def _destroy_partitions(self, stream: Stream) -> None:
        for partition in stream.partitions:
            await partition.close()
            partition.log.destroy()
            partition.forget_metrics()
        shutil.rmtree(self._stream_dir(stream.name), ignore_errors=True)

    async def delete_stream(self, name: str) -> None:
        """Delete a stream and all its messages. Errors: NoSuchStreamError."""
        self._check_open()
        async with self._lifecycle_lock:
            stream = self._stream(name)
            del self._streams[name]  # from here on, new requests see no_such_stream
            for partition in stream.partitions:
                await partition.close()  # commits what was already queued
            archived: list[tuple[int, int, bytes]] = []
            for partition in stream.partitions:
                for change_seq, record in partition.log.read_changes(0, self.feed.horizon, NO_LIMIT):
                    archived.append((change_seq, types_pb2.Change.FromString(record).ts_ms, record))
            change = await self._lifecycle_change(name, stream_deleted=types_pb2.StreamDeletedChange())
            try:
                await self._catalog.delete_stream(name, archived, change)
            except BaseException:
                self.feed.settle([change[0]])
                self._streams[name] = self._open_stream(stream.config, stream.created_at_ms)
                raise
            self.feed.settle([change[0]])
            await self._destroy_partitions(stream)
            metrics.STREAMS.set(len(self._streams))

    def stream_info(self, name: str) -> streams_pb2.GetStreamInfoResponse:
        stream = self._stream(name)
        stats = types_pb2.StreamStats()
        for partition in stream.partitions:
            stats.msg_count += partition.msg_count
            stats.bytes += partition.bytes
            stats.partitions.add(
                partition=partition.index,
                first_seq=partition.first_seq,
                last_seq=partition.last_seq,
                msg_count=partition.msg_count,
                bytes=partition.bytes,
            )
        return streams_pb2.GetStreamInfoResponse(config=stream.config, stats=stats, created_at_ms=stream.created_at_ms)

    def list_streams(self) -> list[str]:
        return sorted(self._streams)

    async def update_stream(self, request: streams_pb2.UpdateStreamRequest) -> tuple[types_pb2.StreamConfig, int]:
        """Apply a partial update; lowering a bound prunes at once. Returns (config, pruned)."""
        self._check_open()
        async with self._lifecycle_lock:
            stream = self._stream(request.name)
            updated = apply_update(stream.config, request, self.settings.max_message_bytes)
            if updated != stream.config:
                change = await self._lifecycle_change(
                    stream.name, stream_updated=types_pb2.StreamUpdatedChange(config=updated)
                )
                try:
                    await self._catalog.update_stream(stream.name, updated.SerializeToString(), change)
                finally:
                    self.feed.settle([change[0]])
                stream.config = updated
                stream.max_msg_bytes = updated.max_msg_bytes
                stream.view.bounds = bounds_of(updated)
            pruned = 0
            for partition in stream.partitions:
                pruned += await partition.sweep()
            return updated, pruned

    # -- publish -----------------------------------------------------------------------------------

    def _prepare(self, stream: Stream, fields: PublishFields, index: int | None) -> tuple[int, PreparedEntry, int]:
        """Validate one entry and choose its partition. Errors name `entries[index]` in a batch."""
        try:
            return self._prepare_entry(stream, fields)
        except WeirError as error:
            if index is None:
                raise
            raise type(error)(f"entries[{index}]: {error.message}", index=index, **error.metadata) from None

    def _prepare_entry(self, stream: Stream, fields: PublishFields) -> tuple[int, PreparedEntry, int]:
        subject = fields.subject
        if not stream.subject_filter.accepts_valid(subject):  # validates the subject on a cache miss
            raise SubjectRejectedError(
                f"subject {subject!r} matches none of stream {stream.name!r}'s subjects {list(stream.config.subjects)}",
                stream=stream.name,
                subject=subject,
            )
        payload = fields.payload
        size = _utf8_size(subject) + len(payload)
        headers = fields.headers
        for header in headers:
            if not header.key:
                raise InvalidArgumentError("a header has an empty key")
            size += _utf8_size(header.key) + _utf8_size(header.value)
        if size > stream.max_msg_bytes:
            raise OversizeError(
                f"message is {size} bytes; stream {stream.name!r} accepts at most {stream.max_msg_bytes}",
                stream=stream.name,
                size=size,
            )
        ts_ms = fields.ts_ms
        if ts_ms < 0:
            raise InvalidArgumentError(f"ts_ms must not be negative, got {ts_ms}")
        partitions = len(stream.partitions)
        if fields.HasField("partition"):
            partition = fields.partition
            if partition >= partitions:
                raise NoSuchPartitionError(
                    f"stream {stream.name!r} has {partitions} partition(s); partition {partition} does not exist",
                    stream=stream.name,
                    partition=partition,
                )
        elif partitions == 1:
            partition = 0
        elif fields.HasField("key"):
            partition = partition_for_key(fields.key, partitions)
        else:
            partition = _ROUND_ROBIN  # assigned once the whole request is valid
        expected = fields.expected_last_seq if fields.HasField("expected_last_seq") else None
        return partition, PreparedEntry(subject, payload, headers, ts_ms, expected), size

    async def publish(
        self, stream_name: str, entries: Sequence[PublishFields], ack_level: int, *, batch: bool
    ) -> list[PublishOutcome]:
        """Validate every entry (one invalid entry rejects the request, storing nothing), then
        append per partition (one transaction per partition) and wait per `ack_level`.

        Returns one outcome per entry, in order. Errors: NoSuchStreamError, InvalidSubjectError,
        SubjectRejectedError, OversizeError, NoSuchPartitionError, InvalidArgumentError,
        ShuttingDownError, StorageFailedError.
        """
        self._check_open()
        stream = self._stream(stream_name)
        if ack_level not in _ACK_LEVELS:
            raise InvalidArgumentError(f"ack_level: unknown value {ack_level}")
        prepare = self._prepare
        prepared = [prepare(stream, fields, index if batch else None) for index, fields in enumerate(entries)]
        groups: dict[int, _PartitionGroup] = {}
        for index, (partition, entry, size) in enumerate(prepared):
            chosen = next(stream.round_robin) if partition == _ROUND_ROBIN else partition
            group = groups.get(chosen)
            if group is None:
                group = groups[chosen] = _PartitionGroup()
            group.indexes.append(index)
            group.entries.append(entry)
            group.size += size
        outcomes: list[PublishOutcome] = [PublishOutcome(0, 0)] * len(entries)
        if ack_level == streams_pb2.ACK_LEVEL_NONE:
            for partition, group in groups.items():
                await stream.partitions[partition].append_nowait(group.entries, group.size)
                for index in group.indexes:
                    outcomes[index] = PublishOutcome(partition, 0)
            return outcomes
        keys = list(groups)
        if len(keys) == 1:  # the common case: no gather() overhead
            group = groups[keys[0]]
            results = [await stream.partitions[keys[0]].append(group.entries, group.size)]
        else:
            results = await asyncio.gather(
                *(stream.partitions[key].append(groups[key].entries, groups[key].size) for key in keys)
            )
        for partition, partition_results in zip(keys, results, strict=True):
            for index, outcome in zip(groups[partition].indexes, partition_results, strict=True):
                outcomes[index] = _outcome(partition, outcome)
        return outcomes

    # -- reads ---------------------------------------------------------------------------------------

    def get_message(self, stream: str, partition_index: int, seq: int) -> bytes:
        partition = self._partition(stream, partition_index)
        record = self._read(partition, lambda: partition.log.get(seq))
        if record is None:
            raise NoSuchMessageError(
                f"stream {stream!r} partition {partition_index} has no message at seq {seq} "
                f"(stored: {partition.first_seq}..{partition.last_seq})",
                stream=stream,
                partition=partition_index,
                seq=seq,
            )
        return record

    def read_messages(
        self, stream: str, partition_index: int, from_seq: int, max_messages: int, max_bytes: int
    ) -> tuple[list[tuple[int, bytes]], int, int]:
        """(records, next_seq, last_seq) of one partition from `from_seq` (0 = first stored)."""
        partition = self._partition(stream, partition_index)
        if max_messages > MAX_READ_MESSAGES:
            raise InvalidArgumentError(f"max_messages: at most {MAX_READ_MESSAGES}, got {max_messages}")
        start = max(from_seq, partition.first_seq) if from_seq else partition.first_seq
        records = self._read(
            partition,
            lambda: partition.log.read(start, max_messages or DEFAULT_READ_MESSAGES, max_bytes or DEFAULT_READ_BYTES),
        )
        next_seq = records[-1][0] + 1 if records else max(start, partition.last_seq + 1)
        return records, next_seq, partition.last_seq

    def latest_at_subject(self, stream: str, partition_index: int, subject: str) -> bytes | None:
        partition = self._partition(stream, partition_index)
        validate_subject(subject)
        return self._read(partition, lambda: partition.log.latest_at_subject(subject))

    def subjects_with_prefix(
        self, stream: str, partition_index: int, prefix: str, limit: int
    ) -> tuple[list[str], bool]:
        partition = self._partition(stream, partition_index)
        limit = limit or DEFAULT_SUBJECT_LIST_LIMIT
        if limit > DEFAULT_SUBJECT_LIST_LIMIT:
            raise InvalidArgumentError(f"limit: at most {DEFAULT_SUBJECT_LIST_LIMIT}, got {limit}")
        subjects = partition.log.subjects_with_prefix(prefix, limit + 1)
        return subjects[:limit], len(subjects) > limit

    def scan_subject(self, stream: str, partition_index: int, subject: str, from_seq: int, limit: int) -> list[bytes]:
        partition = self._partition(stream, partition_index)
        validate_subject(subject)
        limit = limit or DEFAULT_SCAN_LIMIT
        if limit > MAX_READ_MESSAGES:
            raise InvalidArgumentError(f"limit: at most {MAX_READ_MESSAGES}, got {limit}")
        rows = self._read(partition, lambda: partition.log.scan_subject(subject, from_seq, limit))
        return [record for _, record in rows]

    def _read(self, partition: Partition, read: Callable[[], T]) -> T:
        try:
            return read()
        except CorruptRecordError:
            metrics.CHECKSUM_FAILURES.labels(partition.stream.name, str(partition.index)).inc()
            raise

    # -- change feed -----------------------------------------------------------------------------------

    async def read_changes(self, from_change_seq: int, max_changes: int) -> tuple[list[bytes], int, int]:
        """(encoded changes, next_change_seq, horizon). Errors: ChangeFeedTruncatedError."""
        if max_changes > MAX_CHANGES:
            raise InvalidArgumentError(f"max_changes: at most {MAX_CHANGES}, got {max_changes}")
        limit = max_changes or DEFAULT_CHANGES
        if from_change_seq and from_change_seq <= self._change_floor:
            raise ChangeFeedTruncatedError(
                f"changes before {self._change_floor + 1} were removed by change-feed retention",
                first_change_seq=self._change_floor + 1,
            )
        start = max(from_change_seq, self._change_floor + 1)
        horizon = self.feed.horizon
        if start > horizon:
            return [], start, horizon
        sources = [await self._catalog.read_changes(start, horizon, limit)]
        for stream in list(self._streams.values()):
            for partition in stream.partitions:
                if partition.last_change_seq >= start:
                    sources.append(partition.log.read_changes(start, horizon, limit))
        merged = list(itertools.islice(heapq.merge(*sources), limit))
        next_seq = merged[-1][0] + 1 if len(merged) == limit else horizon + 1
        return [record for _, record in merged], next_seq, horizon

    async def tail_changes(self, from_change_seq: int, max_per_batch: int) -> AsyncIterator[tuple[list[bytes], int]]:
        """Yield (changes, horizon) batches from `from_change_seq` on, live, until shutdown."""
        cursor = from_change_seq
        while not self._closing:
            changes, cursor, horizon = await self.read_changes(cursor, max_per_batch)
            if changes:
                yield changes, horizon
                continue
            await self.feed.wait_past(cursor - 1, TAIL_IDLE_WAKE_S)

    async def watch_lifecycle(self, from_change_seq: int = 0) -> AsyncIterator[types_pb2.Change]:
        """Stream created/updated/deleted changes from `from_change_seq` (0 = from now on), live,
        until shutdown. Errors: ChangeFeedTruncatedError."""
        if from_change_seq and from_change_seq <= self._change_floor:
            raise ChangeFeedTruncatedError(
                f"changes before {self._change_floor + 1} were removed by change-feed retention",
                first_change_seq=self._change_floor + 1,
            )
        cursor = from_change_seq or self.feed.horizon + 1
        while not self._closing:
            horizon = self.feed.horizon
            if horizon < cursor:
                await self.feed.wait_past(cursor - 1, TAIL_IDLE_WAKE_S)
                continue
            for _, record in await self._catalog.read_changes(cursor, horizon, NO_LIMIT):
                change = types_pb2.Change.FromString(record)
                if change.WhichOneof("kind") in ("stream_created", "stream_updated", "stream_deleted"):
                    yield change
            cursor = horizon + 1

    # -- background work -------------------------------------------------------------------------------

    async def _sweep_forever(self) -> None:
        interval_s = self.settings.retention_sweep_interval_ms / 1000
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.sweep_once()
            except WeirError as error:
                logger.warning("retention sweep: %s", error)
            except Exception:
                logger.exception("retention sweep failed")

    async def sweep_once(self) -> int:
        """Enforce max_age_ms on every partition and trim the change feed; returns messages removed."""
        removed = 0
        for stream in list(self._streams.values()):
            if stream.view.bounds.max_age_ms:
                for partition in stream.partitions:
                    if partition.msg_count:
                        removed += await partition.sweep()
        metrics.CHANGE_FEED_LAST_SEQ.set(self.feed.horizon)
        excess_floor = self.feed.horizon - self.settings.change_feed_max_changes
        if excess_floor > self._change_floor:
            await self._catalog.set_meta(_FLOOR_KEY, excess_floor)
            self._change_floor = excess_floor  # readers below this now get change_feed_truncated
            await self._catalog.drop_changes_before(excess_floor + 1)
            for stream in list(self._streams.values()):
                for partition in stream.partitions:
                    await partition.drop_changes_before(excess_floor + 1)
        return removed


_ROUND_ROBIN = -1
_ACK_LEVELS = frozenset(streams_pb2.AckLevel.values())  # resolved once: publish is the hot path


@dataclass(slots=True)
class _PartitionGroup:
    """The entries of one publish request that go to one partition."""

    indexes: list[int] = field(default_factory=list)
    entries: list[PreparedEntry] = field(default_factory=list)
    size: int = 0


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _outcome(partition: int, outcome: AppendOutcome) -> PublishOutcome:
    return PublishOutcome(partition, outcome.seq, outcome.result_code, outcome.message)
