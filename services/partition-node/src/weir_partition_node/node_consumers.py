"""Durable consumers on a partition node (Node's consumers section): their node-wide records, their
lifecycle (create, delete, restore at open), fetch and settling (ack, nak, term, in progress,
seek); push delivery over them is node_subscriptions.py. The per-partition decisions are consumers.py's, applied by each
partition's commit loop; this is where requests are checked and routed to the right partition.

Source: weir.v1 Streams' consumer RPCs and the streams seed's (CreateConsumer ... Subscribe).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from weir.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    InvalidConfigError,
    NoSuchConsumerError,
    WeirError,
)
from weir.subjects import patterns_overlap, validate_name
from weir.v1 import types_pb2
from weir_server.consumer_info import add_partition_totals

from weir_partition_node import consumers
from weir_partition_node.catalog import Catalog, ConsumerRow
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.clock import Clock
from weir_partition_node.commit_items import ConsumerOpKind, Delivery
from weir_partition_node.consumers import (
    MAX_ACK_WAIT_MS,
    NEVER,
    Consumer,
    ConsumerCursor,
    ConsumerSpec,
    normalize_consumer_config,
)
from weir_partition_node.node_reads import DEFAULT_READ_BYTES, MAX_FETCH_WAIT_MS, check_max_bytes
from weir_partition_node.partition import Partition

if TYPE_CHECKING:
    from weir_partition_node.hosted import Stream

logger = logging.getLogger(__name__)

DEFAULT_FETCH_BATCH = 100
MAX_FETCH_BATCH = 10_000
MAX_ACK_BATCH = 10_000

# (change seq, ts_ms, encoded change) of a lifecycle change the node has allocated (settle it).
LifecycleChange = Callable[..., Awaitable[tuple[int, int, bytes]]]


class NodeConsumers:
    """The node's consumers. Of the node it takes: `streams` (its live map of hosted streams),
    `stream(name)` and `partition(name, index)` (errors: NoSuchStreamError, NoSuchPartitionError,
    NotLeaderError), `check_open()` (ShuttingDownError), `closing()`, and for the lifecycle its
    `lifecycle_lock`, `lifecycle_change(stream, **change)`, catalog and change feed."""

    def __init__(
        self,
        *,
        streams: Mapping[str, Stream],
        stream: Callable[[str], Stream],
        partition: Callable[[str, int], Partition],
        check_open: Callable[[], None],
        closing: Callable[[], bool],
        clock: Clock,
        catalog: Catalog,
        feed: ChangeFeedClock,
        lifecycle_lock: asyncio.Lock,
        lifecycle_change: LifecycleChange,
    ) -> None:
        self._streams = streams
        self._stream = stream
        self._partition = partition
        self._check_open = check_open
        self._closing = closing
        self._clock = clock
        self._catalog = catalog
        self._feed = feed
        self._lifecycle_lock = lifecycle_lock
        self._lifecycle_change = lifecycle_change

    async def restore(self, rows: list[ConsumerRow]) -> None:
        """At open: attach each catalog consumer to its stream and every partition's stored state;
        remove partition state the catalog no longer knows (a crash inside a delete) first."""
        by_stream: dict[str, list[ConsumerRow]] = {}
        for row in rows:
            by_stream.setdefault(row.stream, []).append(row)
        for stream in self._streams.values():
            for row in by_stream.get(stream.name, []):
                config = types_pb2.ConsumerConfig.FromString(row.config)
                spec = ConsumerSpec.of(config, row.incarnation, hide_scheduled=hides_reserved(stream.config))
                stream.consumers[row.name] = Consumer(
                    config, row.created_at_ms, spec, row.start_seqs, row.last_per_subject_until
                )
            await self.attach(stream)

    async def attach(self, stream: Stream) -> None:
        for partition in stream.partitions.values():
            stored = partition.log.load_consumers()
            for name, state in stored.items():
                consumer = stream.consumers.get(name)
                if consumer is None or consumer.spec.incarnation != state.incarnation:
                    logger.warning("removing stale state of consumer %s/%s/%d", stream.name, name, partition.index)
                    await partition.consumer_ops.run(ConsumerOpKind.REMOVE, name)
            memory = stream.config.storage == types_pb2.STORAGE_KIND_MEMORY
            for name, consumer in stream.consumers.items():
                start = _of_partition(consumer.start_seqs, partition.index)
                until = _of_partition(consumer.last_per_subject_until, partition.index)
                if memory:  # the log restarted empty (seqs from 1 again): start within it
                    start, until = min(start, partition.last_seq), min(until, partition.last_seq)
                partition.consumer_ops.restore(consumer.spec, start, stored.get(name), until)

    def consumer(self, stream: Stream, name: str) -> Consumer:
        """The consumer `name` of `stream`. Errors: InvalidNameError, NoSuchConsumerError."""
        consumer = stream.consumers.get(name)
        if consumer is None:
            validate_name(name, "consumer name")
            raise NoSuchConsumerError(
                f"stream {stream.name!r} has no consumer {name!r}", stream=stream.name, consumer=name
            )
        return consumer

    def _start_positions(self, stream: Stream, config: types_pb2.ConsumerConfig, accepts: Any) -> list[int]:
        """Per partition, the last_delivered a new consumer starts from (its delivery policy)."""
        policy = config.deliver_policy
        starts: list[int] = [0] * stream.config.partitions  # 0 for partitions hosted elsewhere
        for partition in stream.partitions.values():
            if policy in (types_pb2.DELIVER_POLICY_ALL, types_pb2.DELIVER_POLICY_LAST_PER_SUBJECT):
                start = 0  # (last per subject: its horizon passes over what a later message superseded)
            elif policy == types_pb2.DELIVER_POLICY_NEW:
                start = partition.last_seq
            elif policy == types_pb2.DELIVER_POLICY_LAST:
                last = partition.log.last_matching_seq(accepts)
                start = last - 1 if last else partition.last_seq
            elif policy == types_pb2.DELIVER_POLICY_BY_START_SEQ:
                start = config.start_seq - 1
            else:
                first = partition.log.first_seq_at_time(config.start_time_ms)
                start = first - 1 if first else partition.last_seq
            starts[partition.index] = start
        return starts

    async def create_consumer(self, stream_name: str, config: types_pb2.ConsumerConfig) -> types_pb2.ConsumerInfo:
        """Create a durable consumer (idempotent for an identical config); returns its info.

        Errors: NoSuchStreamError, InvalidNameError / InvalidSubjectError / InvalidConfigError,
        AlreadyExistsError (another config under the name, or an overlapping work-queue filter)."""
        self._check_open()
        stream = self._stream(stream_name)
        effective = normalize_consumer_config(config, stream.config, stream.subject_filter.accepts)
        async with self._lifecycle_lock:
            stream = self._stream(stream_name)
            existing = stream.consumers.get(effective.name)
            if existing is not None:
                if existing.config == effective:
                    return self.consumer_info(stream_name, effective.name)
                raise AlreadyExistsError(
                    f"stream {stream_name!r} already has a consumer {effective.name!r} with a different config",
                    stream=stream_name,
                    consumer=effective.name,
                )
            if stream.config.retention == types_pb2.RETENTION_POLICY_WORK_QUEUE:
                for other in stream.consumers.values():
                    if patterns_overlap(other.config.filter_subject or ">", effective.filter_subject or ">"):
                        raise AlreadyExistsError(
                            f"work-queue stream {stream_name!r}: consumer {other.config.name!r} already takes "
                            f"filter {other.config.filter_subject or '(every subject)'!r}, which overlaps "
                            f"{effective.filter_subject or '(every subject)'!r}; each message goes to one consumer",
                            stream=stream_name,
                            consumer=effective.name,
                        )
            spec = ConsumerSpec.of(effective, 0, hide_scheduled=hides_reserved(stream.config))
            starts = self._start_positions(stream, effective, spec.accepts)
            until = _last_per_subject_until(stream, effective)
            change_seq, now_ms, record = await self._lifecycle_change(
                stream_name, consumer_created=types_pb2.ConsumerCreatedChange(config=effective)
            )
            row = ConsumerRow(
                stream_name, effective.name, effective.SerializeToString(), now_ms, change_seq, starts, until
            )
            try:
                await self._catalog.create_consumer(row, (change_seq, now_ms, record))
            finally:
                self._feed.settle([change_seq])
            spec.incarnation = change_seq
            consumer = Consumer(effective, now_ms, spec, starts, until)
            stream.consumers[effective.name] = consumer
            for partition in stream.partitions.values():
                partition.consumer_ops.restore(
                    spec, starts[partition.index], None, _of_partition(until, partition.index)
                )
            return self.consumer_info(stream_name, effective.name)

    async def delete_consumer(self, stream_name: str, name: str) -> None:
        """Delete a consumer and its state in every partition. Errors: NoSuchStreamError,
        NoSuchConsumerError."""
        self._check_open()
        async with self._lifecycle_lock:
            stream = self._stream(stream_name)
            consumer = self.consumer(stream, name)
            change_seq, now_ms, record = await self._lifecycle_change(
                stream_name, consumer_deleted=types_pb2.ConsumerDeletedChange(consumer=name)
            )
            try:
                await self._catalog.delete_consumer(stream_name, name, (change_seq, now_ms, record))
            finally:
                self._feed.settle([change_seq])
            del stream.consumers[name]
            consumer.deleted = True
            for partition in stream.partitions.values():
                await partition.consumer_ops.run(ConsumerOpKind.REMOVE, name)

    def consumer_info(self, stream_name: str, name: str) -> types_pb2.ConsumerInfo:
        stream = self._stream(stream_name)
        consumer = self.consumer(stream, name)
        info = types_pb2.ConsumerInfo(stream=stream_name, config=consumer.config, created_at_ms=consumer.created_at_ms)
        for partition in stream.partitions.values():
            cursor = partition.consumers.get(name)
            if cursor is None:
                continue
            num_pending = _num_pending(partition, cursor)
            redelivered = sum(1 for entry in cursor.pending.values() if entry.deliver_count > 1)
            totals = cursor.totals
            info.partitions.add(
                partition=partition.index,
                ack_floor=cursor.ack_floor,
                last_delivered=cursor.last_delivered,
                num_ack_pending=len(cursor.pending),
                num_pending=num_pending,
                num_redelivered=redelivered,
                last_per_subject_until=cursor.last_per_subject_until,
                delivered_total=totals.delivered,
                acked_total=totals.acked,
                redelivered_total=totals.redelivered,
                dead_lettered_total=totals.dead_lettered,
                dropped_total=totals.dropped,
                termed_total=totals.termed,
            )
        add_partition_totals(info)
        return info

    def list_consumers(self, stream_name: str) -> list[types_pb2.ConsumerInfo]:
        stream = self._stream(stream_name)
        return [self.consumer_info(stream_name, name) for name in sorted(stream.consumers)]

    def _consumer_partition(self, stream_name: str, name: str, index: int) -> tuple[Stream, Consumer, Partition]:
        self._check_open()
        stream = self._stream(stream_name)
        consumer = self.consumer(stream, name)
        return stream, consumer, self._partition(stream_name, index)

    async def fetch(
        self,
        stream_name: str,
        name: str,
        index: int,
        *,
        batch_size: int,
        max_wait_ms: int = 0,
        max_bytes: int = 0,
        ack_wait_ms: int = 0,
    ) -> list[Delivery]:
        """Deliver up to `batch_size` messages of one partition (redeliveries first), waiting up to
        `max_wait_ms` when none is ready; they stay invisible for `ack_wait_ms` (0 = the consumer's).
        Errors: NoSuchStreamError, NoSuchConsumerError, NoSuchPartitionError, InvalidArgumentError,
        ShuttingDownError, StorageFailedError."""
        stream, consumer, partition = self._consumer_partition(stream_name, name, index)
        if batch_size > MAX_FETCH_BATCH:
            raise InvalidArgumentError(f"batch_size: at most {MAX_FETCH_BATCH}, got {batch_size}")
        if max_wait_ms > MAX_FETCH_WAIT_MS:
            raise InvalidArgumentError(f"max_wait_ms: at most {MAX_FETCH_WAIT_MS}, got {max_wait_ms}")
        if ack_wait_ms > MAX_ACK_WAIT_MS:
            raise InvalidArgumentError(f"ack_wait_ms: at most {MAX_ACK_WAIT_MS} (7 days), got {ack_wait_ms}")
        check_max_bytes(max_bytes)
        batch_size = batch_size or DEFAULT_FETCH_BATCH
        max_bytes = max_bytes or DEFAULT_READ_BYTES
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        while True:
            deliveries = await partition.consumer_ops.fetch_ready(
                name, self._clock.now_ms(), batch_size, max_bytes, ack_wait_ms
            )
            if deliveries:
                return deliveries
            remaining = deadline - loop.time()
            if remaining <= 0 or self._closing() or consumer.deleted or stream.deleted:
                return []
            await partition.wait_for_work(wait_s(partition, name, remaining, self._clock.now_ms()))

    async def ack(self, stream_name: str, name: str, index: int, seq: int, deliver_count: int = 0) -> None:
        """Acknowledge one pending seq (only its delivery `deliver_count` when > 0: a receipt
        handle's). Errors: NotPendingError (also for a stale delivery) and those of `fetch`."""
        _, _, partition = self._consumer_partition(stream_name, name, index)
        await partition.consumer_ops.run(ConsumerOpKind.ACK, name, seqs=[seq], deliver_counts=_bound(deliver_count))

    async def ack_batch(
        self, stream_name: str, name: str, index: int, seqs: Sequence[int], deliver_counts: Sequence[int] = ()
    ) -> list[tuple[int, str, str]]:
        """Acknowledge many seqs of one partition: (seq, "ok" | "not_pending", message) per seq.
        `deliver_counts`: empty, or one per seq (0 = any delivery) as in `ack`."""
        _, _, partition = self._consumer_partition(stream_name, name, index)
        if not seqs:
            raise InvalidArgumentError("seqs: at least one seq is needed")
        if len(seqs) > MAX_ACK_BATCH:
            raise InvalidArgumentError(f"seqs: at most {MAX_ACK_BATCH}, got {len(seqs)}")
        if deliver_counts and len(deliver_counts) != len(seqs):
            raise InvalidArgumentError(f"deliver_counts: none, or one per seq ({len(seqs)}); got {len(deliver_counts)}")
        counts = list(deliver_counts) if any(deliver_counts) else []
        result: list[tuple[int, str, str]] = await partition.consumer_ops.run(
            ConsumerOpKind.ACK, name, seqs=list(seqs), strict=False, deliver_counts=counts
        )
        return result

    async def nak(
        self, stream_name: str, name: str, index: int, seq: int, delay_ms: int, *, deliver_count: int = 0
    ) -> None:
        """Redeliver a pending seq after `delay_ms` (`deliver_count` as in `ack`). Errors:
        NotPendingError, InvalidArgumentError."""
        _, _, partition = self._consumer_partition(stream_name, name, index)
        if delay_ms > MAX_ACK_WAIT_MS:
            raise InvalidArgumentError(f"delay_ms: at most {MAX_ACK_WAIT_MS} (7 days), got {delay_ms}")
        await partition.consumer_ops.run(
            ConsumerOpKind.NAK, name, seqs=[seq], delay_ms=delay_ms, deliver_counts=_bound(deliver_count)
        )

    async def term(
        self, stream_name: str, name: str, index: int, seq: int, deliver_count: int = 0, *, dead_letter: bool = False
    ) -> None:
        """Never redeliver a pending seq (`deliver_count` as in `ack`); with `dead_letter`, move it
        under the consumer's dead_letter_subject now. Errors: NotPendingError, InvalidConfigError
        (dead_letter without a dead_letter_subject)."""
        _, consumer, partition = self._consumer_partition(stream_name, name, index)
        if dead_letter and not consumer.config.dead_letter_subject:
            raise InvalidConfigError(
                f"consumer {name!r} of stream {stream_name!r} has no dead_letter_subject: nowhere to dead-letter "
                "to (create it with one)",
                stream=stream_name,
                consumer=name,
            )
        kind = ConsumerOpKind.DEAD_LETTER if dead_letter else ConsumerOpKind.TERM
        await partition.consumer_ops.run(kind, name, seqs=[seq], deliver_counts=_bound(deliver_count))

    async def seek_consumer(
        self, stream_name: str, name: str, index: int, *, seq: int = 0, time_ms: int | None = None
    ) -> tuple[int, int]:
        """Move a consumer's position in one partition: deliver from `seq` on (1 = the start), from
        the first message stored at or after `time_ms`, or (seq 0, no time) from the end. Drops the
        partition's pending set. Returns (next_seq, dropped_pending). Errors: PositionOutOfRangeError
        (seq beyond the next seq), InvalidArgumentError (negative time), and those of `fetch`."""
        _, _, partition = self._consumer_partition(stream_name, name, index)
        if time_ms is not None:
            if time_ms < 0:
                raise InvalidArgumentError(f"time_ms: milliseconds since the Unix epoch, >= 0; got {time_ms}")
            seq = partition.log.first_seq_at_time(time_ms) or 0  # none stored at or after it: the end
        result: tuple[int, int] = await partition.consumer_ops.run(ConsumerOpKind.SEEK, name, seqs=[seq])
        return result

    async def in_progress(self, stream_name: str, name: str, index: int, seq: int) -> int:
        """Restart a pending seq's ack_wait; returns the new redeliver time (ms since the epoch)."""
        _, _, partition = self._consumer_partition(stream_name, name, index)
        redeliver_at_ms: int = await partition.consumer_ops.run(ConsumerOpKind.IN_PROGRESS, name, seqs=[seq])
        return redeliver_at_ms

    async def expire_exhausted(self) -> int:
        """Dead-letter (or drop) pending messages that reached max_deliver and are due, even when no
        one fetches; returns how many consumer partitions were processed."""
        now_ms = self._clock.now_ms()
        processed = 0
        for stream in list(self._streams.values()):
            for partition in stream.partitions.values():
                if not partition.leading:
                    continue
                for name, cursor in list(partition.consumers.items()):
                    if consumers.has_exhausted_due(cursor, now_ms):
                        try:
                            await partition.consumer_ops.run(ConsumerOpKind.FETCH, name, batch_size=0, max_bytes=1)
                        except WeirError as error:
                            logger.warning("dead-lettering for %s/%s: %s", stream.name, name, error)
                        processed += 1
        return processed


def wait_s(partition: Partition, name: str, limit_s: float, now_ms: int) -> float:
    """How long a waiting fetch or push sleeps before consumer `name` may have something in
    `partition`: until its next redelivery is due, at most `limit_s` (appends and acks wake the
    waiter earlier)."""
    cursor = partition.consumers.get(name)
    if cursor is None or cursor.earliest_redeliver_ms >= NEVER:
        return limit_s
    return max(0.001, min(limit_s, (cursor.earliest_redeliver_ms - now_ms) / 1000))


def hides_reserved(config: types_pb2.StreamConfig) -> bool:
    """Whether the stream stores records at reserved subjects that consumers must not see: schedule
    records (allow_scheduled_messages) or source positions (sources)."""
    return config.allow_scheduled_messages or bool(config.sources)


def _bound(deliver_count: int) -> list[int]:
    """A single settle's deliver_counts: bound to that delivery, or (0) to any."""
    return [deliver_count] if deliver_count else []


def _num_pending(partition: Partition, cursor: ConsumerCursor) -> int:
    """Stored messages the consumer has still to deliver a first time: below a
    DELIVER_POLICY_LAST_PER_SUBJECT horizon, one per subject (its newest there)."""
    accepts, until = cursor.spec.accepts, cursor.last_per_subject_until
    if cursor.last_delivered >= until:
        return partition.log.count_matching(cursor.last_delivered, accepts)
    return partition.log.count_newest_per_subject(cursor.last_delivered, until, accepts) + (
        partition.log.count_matching(until, accepts)
    )


def _last_per_subject_until(stream: Stream, config: types_pb2.ConsumerConfig) -> list[int]:
    """DELIVER_POLICY_LAST_PER_SUBJECT: each hosted partition's last seq now (the horizon below which
    only the newest message of each subject is delivered); empty for every other policy."""
    if config.deliver_policy != types_pb2.DELIVER_POLICY_LAST_PER_SUBJECT:
        return []
    until = [0] * stream.config.partitions
    for partition in stream.partitions.values():
        until[partition.index] = partition.last_seq
    return until


def _of_partition(per_partition: list[int], index: int) -> int:
    """A per-partition position of a consumer's catalog row (start seq or last-per-subject
    horizon; 0 for a partition it does not list)."""
    return per_partition[index] if index < len(per_partition) else 0
