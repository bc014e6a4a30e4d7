"""Publishing on a partition node (Node's publish section): each entry validated and routed to a
partition (all of a request before anything is appended: a failed request stores nothing), appended
per partition in one group commit, then, for ack_level ALL, the wait for the in-sync replicas.

Source: weir.v1 Streams.Publish / PublishBatch (and the streams seed's Publish): subject rules,
expected_last_seq, msg_id (idempotence), key, delay_ms / deliver_at_ms / hold, rollup, ttl_ms.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from weir.errors import (
    InvalidArgumentError,
    InvalidSubjectError,
    LeaderLeaseExpiredError,
    NoSuchPartitionError,
    OverloadedError,
    OversizeError,
    ReplicationTimeoutError,
    SchedulingDisabledError,
    SubjectRejectedError,
    WeirError,
)
from weir.partitioning import partition_for_key
from weir.subjects import RESERVED_SUBJECT_PREFIX
from weir.v1 import streams_pb2, types_pb2

from weir_partition_node import scheduled
from weir_partition_node.clock import Clock
from weir_partition_node.commit_items import AppendOutcome, PreparedEntry
from weir_partition_node.dedupe import MAX_MSG_ID_BYTES
from weir_partition_node.partition import Partition

if TYPE_CHECKING:
    from weir_partition_node.hosted import Stream

MAX_PUBLISH_BATCH_ENTRIES = 10_000


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
    @property
    def msg_id(self) -> str: ...
    @property
    def delay_ms(self) -> int: ...
    @property
    def deliver_at_ms(self) -> int: ...
    @property
    def hold(self) -> bool: ...
    @property
    def rollup(self) -> bool: ...
    @property
    def ttl_ms(self) -> int: ...
    def HasField(self, field_name: str, /) -> bool: ...


@dataclass(slots=True)
class PublishOutcome:
    partition: int
    seq: int
    result_code: str = "ok"
    message: str = ""
    duplicate: bool = False
    scheduled: bool = False


_ROUND_ROBIN = -1
_ACK_LEVELS = frozenset(streams_pb2.AckLevel.values())  # resolved once: publish is the hot path


@dataclass(slots=True)
class _PartitionGroup:
    """The entries of one publish request that go to one partition."""

    indexes: list[int] = field(default_factory=list)
    entries: list[PreparedEntry] = field(default_factory=list)
    size: int = 0
    scheduled: int = 0  # entries with a deliver_at_ms


class NodePublisher:
    """The node's publish path. Of the node it takes `stream(name)` (NoSuchStreamError),
    `check_open()` (ShuttingDownError), `lease_valid()` / `lease_expired()` (a clustered node
    refuses to act as a primary while its heartbeat lease lapsed), its clock and the default
    replication timeout of ack_level ALL (ms)."""

    def __init__(
        self,
        *,
        stream: Callable[[str], Stream],
        check_open: Callable[[], None],
        lease_valid: Callable[[], bool],
        lease_expired: Callable[[], LeaderLeaseExpiredError],
        clock: Clock,
        replication_timeout_ms: int,
    ) -> None:
        self._stream = stream
        self._check_open = check_open
        self._lease_valid = lease_valid
        self._lease_expired = lease_expired
        self._clock = clock
        self._replication_timeout_ms = replication_timeout_ms

    def _prepare(self, stream: Stream, fields: PublishFields, index: int | None) -> tuple[int, PreparedEntry, int]:
        """Validate one entry and choose its partition. Errors name `entries[index]` in a batch; a
        msg_id beginning with `$weir.` is InvalidArgumentError (a sourced message's id says the
        source position it settles: storage/source_positions.py)."""
        try:
            if fields.msg_id[:1] == "$" and fields.msg_id.startswith(RESERVED_SUBJECT_PREFIX):
                raise InvalidArgumentError(
                    f"msg_id {fields.msg_id[:80]!r}: ids beginning with {RESERVED_SUBJECT_PREFIX!r} are Weir's own "
                    "(a sourced message's)",
                    stream=stream.name,
                )
            return self._prepare_entry(stream, fields)
        except WeirError as error:
            if index is None:
                raise
            raise type(error)(f"entries[{index}]: {error.message}", index=index, **error.metadata) from None

    def prepare_entry(self, stream: Stream, fields: PublishFields) -> tuple[int, PreparedEntry, int]:
        """(partition, entry, size) of one message to append, validated as a publish is (a source
        tail's): InvalidSubjectError, SubjectRejectedError, OversizeError, InvalidArgumentError."""
        return self._prepare_entry(stream, fields)

    def _prepare_entry(self, stream: Stream, fields: PublishFields) -> tuple[int, PreparedEntry, int]:
        subject = fields.subject
        if subject[:1] == "$" and scheduled.is_reserved(subject):
            raise InvalidSubjectError(
                f"subject {subject!r}: subjects beginning with {RESERVED_SUBJECT_PREFIX!r} are Weir's own",
                subject=subject,
            )
        if not stream.subject_filter.accepts_valid(subject):  # validates the subject on a cache miss
            raise SubjectRejectedError(
                f"subject {subject!r} matches none of stream {stream.name!r}'s subjects {list(stream.config.subjects)}",
                stream=stream.name,
                subject=subject,
            )
        payload = fields.payload
        key = fields.key if fields.HasField("key") else None
        size = _utf8_size(subject) + len(payload) + (len(key) if key is not None else 0)
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
        msg_id = fields.msg_id
        # At most 4 bytes a character: only an id of over 64 characters can be too long.
        if len(msg_id) > MAX_MSG_ID_BYTES // 4 and _utf8_size(msg_id) > MAX_MSG_ID_BYTES:
            raise InvalidArgumentError(
                f"msg_id: at most {MAX_MSG_ID_BYTES} bytes of UTF-8, got {_utf8_size(msg_id)}", stream=stream.name
            )
        partition = _partition_of(stream, fields, key, msg_id)
        expected = fields.expected_last_seq if fields.HasField("expected_last_seq") else None
        entry = PreparedEntry(subject, payload, headers, ts_ms, expected, msg_id, key)
        if fields.delay_ms or fields.deliver_at_ms or fields.hold:
            entry.deliver_at_ms = self._deliver_at_ms(stream, fields, expected)
        if fields.rollup:
            entry.rollup = _check_rollup(stream, entry)
        if fields.ttl_ms:
            entry.ttl_ms = _check_ttl(stream, entry, fields.ttl_ms)
        return partition, entry, size

    def _deliver_at_ms(self, stream: Stream, fields: PublishFields, expected_last_seq: int | None) -> int:
        """When a publish with delay_ms / deliver_at_ms is due (0: at once, a time already past;
        scheduled.HELD for `hold`). Errors: SchedulingDisabledError, InvalidArgumentError."""
        if not stream.config.allow_scheduled_messages:
            raise SchedulingDisabledError(
                f"stream {stream.name!r} does not accept scheduled or held messages (delay_ms / deliver_at_ms "
                "/ hold): create it with allow_scheduled_messages",
                stream=stream.name,
            )
        if (fields.delay_ms and fields.deliver_at_ms) or (fields.hold and (fields.delay_ms or fields.deliver_at_ms)):
            raise InvalidArgumentError("delay_ms, deliver_at_ms and hold: set at most one", stream=stream.name)
        if expected_last_seq is not None:
            raise InvalidArgumentError(
                "expected_last_seq cannot go with delay_ms / deliver_at_ms / hold: the subject's last seq is "
                "checked when a message is stored, and a scheduled or held one is delivered later",
                stream=stream.name,
            )
        if fields.hold:
            return scheduled.HELD
        now_ms = self._clock.now_ms()
        if fields.deliver_at_ms < 0:
            raise InvalidArgumentError(f"deliver_at_ms must not be negative, got {fields.deliver_at_ms}")
        delay_ms = fields.delay_ms or max(0, fields.deliver_at_ms - now_ms)
        if delay_ms == 0:
            return 0
        limit_ms = scheduled.MAX_SCHEDULE_DELAY_MS
        max_age_ms = stream.config.limits.max_age_ms if stream.config.limits.HasField("max_age_ms") else 0
        if max_age_ms and max_age_ms <= limit_ms:
            if delay_ms >= max_age_ms:
                raise InvalidArgumentError(
                    f"a delay of {delay_ms} ms reaches past stream {stream.name!r}'s max_age_ms ({max_age_ms}): "
                    "retention would remove the message before its time",
                    stream=stream.name,
                )
        elif delay_ms > limit_ms:
            raise InvalidArgumentError(
                f"a delay of {delay_ms} ms is more than the {limit_ms} ms (366 days) a message can be scheduled ahead",
                stream=stream.name,
            )
        return now_ms + delay_ms

    async def publish(
        self,
        stream_name: str,
        entries: Sequence[PublishFields],
        ack_level: int,
        *,
        batch: bool,
        replication_timeout_ms: int = 0,
    ) -> list[PublishOutcome]:
        """Validate every entry (one invalid entry rejects the request, storing nothing), then
        append per partition (one transaction per partition) and wait per `ack_level`.

        An entry whose msg_id the partition stored within the duplicate window stores nothing and
        gets the original seq with `duplicate=True` (then waits per `ack_level` like the others, for
        the original). `replication_timeout_ms` bounds the wait of ack_level ALL (0 = the node's
        `replication_timeout_ms` setting).

        Returns one outcome per entry, in order. Errors: NoSuchStreamError, InvalidSubjectError,
        SubjectRejectedError, OversizeError, NoSuchPartitionError, InvalidArgumentError,
        ShuttingDownError, StorageFailedError, NotEnoughReplicasError, ReplicationTimeoutError.
        """
        self._check_open()
        stream = self._stream(stream_name)
        if ack_level not in _ACK_LEVELS:
            raise InvalidArgumentError(f"ack_level: unknown value {ack_level}")
        if len(entries) > MAX_PUBLISH_BATCH_ENTRIES:
            raise InvalidArgumentError(
                f"entries: at most {MAX_PUBLISH_BATCH_ENTRIES} per request, got {len(entries)}", stream=stream_name
            )
        if not self._lease_valid():
            raise self._lease_expired()
        replicated = ack_level == streams_pb2.ACK_LEVEL_ALL and stream.config.replicas > 1
        prepare = self._prepare
        prepared = [prepare(stream, fields, index if batch else None) for index, fields in enumerate(entries)]
        groups = _group_by_partition(stream, prepared, replicated=replicated)
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
        if replicated:
            await self._wait_replicated(stream, keys, results, replication_timeout_ms or self._replication_timeout_ms)
        return outcomes

    async def _wait_replicated(
        self, stream: Stream, keys: list[int], results: Sequence[list[AppendOutcome]], timeout_ms: int
    ) -> None:
        """ack_level ALL: wait until every in-sync replica of each partition holds what was appended
        (or, for a duplicate, the original)."""
        timeout_s = timeout_ms / 1000
        waits = []
        for partition_index, partition_results in zip(keys, results, strict=True):
            decided = [outcome for outcome in partition_results if outcome.result_code == "ok"]
            if decided:  # one commit decides a request's appends to a partition: one epoch
                last = max(outcome.seq for outcome in decided)
                partition = stream.partitions[partition_index]
                waits.append(partition.wait_replicated(last, timeout_s, decided[0].leader_epoch))
        try:
            await asyncio.gather(*waits)
        except TimeoutError:
            raise ReplicationTimeoutError(
                f"stream {stream.name!r}: the in-sync replicas did not confirm the publish within "
                f"{timeout_ms} ms; it is stored on the primary and may be lost on a failover (a retry "
                "with the same msg_id stores it once)",
                stream=stream.name,
                timeout_ms=timeout_ms,
            ) from None


def _check_schedule_room(stream: Stream, partition: Partition, count: int) -> None:
    """Refuse (retryable OverloadedError) `count` more schedule records on a partition that holds
    the most it indexes; checked before anything is queued, so the bound may be passed by what is
    in flight at most."""
    if partition.scheduled_count + count > scheduled.MAX_SCHEDULED_PER_PARTITION:
        raise OverloadedError(
            f"stream {stream.name!r} partition {partition.index} holds {partition.scheduled_count} scheduled "
            f"messages, the most it keeps is {scheduled.MAX_SCHEDULED_PER_PARTITION}; retry once some are delivered",
            stream=stream.name,
            partition=partition.index,
        )


def _check_ttl(stream: Stream, entry: PreparedEntry, ttl_ms: int) -> int:
    """A per-message TTL's bounds (streams.proto PublishRequest.ttl_ms). Errors: InvalidArgumentError."""
    if ttl_ms > scheduled.MAX_SCHEDULE_DELAY_MS:
        raise InvalidArgumentError(
            f"ttl_ms: at most {scheduled.MAX_SCHEDULE_DELAY_MS} (366 days), got {ttl_ms}", stream=stream.name
        )
    if entry.deliver_at_ms:
        raise InvalidArgumentError(
            "ttl_ms cannot go with delay_ms / deliver_at_ms / hold: a message's TTL starts when it is stored",
            stream=stream.name,
        )
    return ttl_ms


def _partition_of(stream: Stream, fields: PublishFields, key: bytes | None, msg_id: str) -> int:
    """The partition an entry goes to: the one it names, else by key, else by msg_id (a retry
    finds its original in the same partition's duplicate window), else _ROUND_ROBIN (assigned once
    the whole request is valid). Errors: NoSuchPartitionError."""
    partitions = stream.config.partitions
    if fields.HasField("partition"):
        partition = fields.partition
        if partition >= partitions:
            raise NoSuchPartitionError(
                f"stream {stream.name!r} has {partitions} partition(s); partition {partition} does not exist",
                stream=stream.name,
                partition=partition,
            )
        return partition
    if partitions == 1:
        return 0
    if key is not None:
        return partition_for_key(key, partitions)
    if msg_id:
        return partition_for_key(msg_id.encode("utf-8", "surrogatepass"), partitions)
    return _ROUND_ROBIN


def _group_by_partition(
    stream: Stream, prepared: list[tuple[int, PreparedEntry, int]], *, replicated: bool
) -> dict[int, _PartitionGroup]:
    """A request's prepared entries by partition (round-robin ones assigned now), checked before
    anything is appended, so a failed request stores nothing: each partition is led here, has
    enough in-sync replicas for ack_level ALL (`replicated`) and room for its scheduled entries.
    Errors: NotLeaderError, NotEnoughReplicasError, and those of _check_schedule_room."""
    groups: dict[int, _PartitionGroup] = {}
    for index, (partition, entry, size) in enumerate(prepared):
        chosen = next(stream.round_robin) if partition == _ROUND_ROBIN else partition
        group = groups.get(chosen)
        if group is None:
            if chosen not in stream.led_set:
                raise stream.not_leader(chosen)
            if replicated:
                target = stream.partitions[chosen]
                if target.in_sync_count() < target.min_insync:
                    raise target.not_enough_replicas()
            group = groups[chosen] = _PartitionGroup()
        group.indexes.append(index)
        group.entries.append(entry)
        group.size += size
        if entry.deliver_at_ms:
            group.scheduled += 1
    for chosen, group in groups.items():
        if group.scheduled:
            _check_schedule_room(stream, stream.partitions[chosen], group.scheduled)
    return groups


def _check_rollup(stream: Stream, entry: PreparedEntry) -> bool:
    """A rollup publish's preconditions (streams.proto PublishRequest.rollup). Errors:
    InvalidArgumentError."""
    limits = stream.config.limits
    if not (limits.HasField("max_msgs_per_subject") and limits.max_msgs_per_subject):
        raise InvalidArgumentError(
            f"rollup needs a stream with limits.max_msgs_per_subject (it bounds what one rollup removes); "
            f"stream {stream.name!r} has none",
            stream=stream.name,
        )
    if entry.deliver_at_ms:
        raise InvalidArgumentError(
            "rollup cannot go with delay_ms / deliver_at_ms / hold: a rollup replaces its subject's messages "
            "when it is stored",
            stream=stream.name,
        )
    return True


def _utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _outcome(partition: int, outcome: AppendOutcome) -> PublishOutcome:
    return PublishOutcome(
        partition, outcome.seq, outcome.result_code, outcome.message, outcome.duplicate, outcome.scheduled
    )
