"""Durable consumers as pure decisions over in-memory state: config rules, the per-partition cursor
(ack floor, last delivered, pending set), redelivery, settling (ack, nak, term, in progress) and the
dead-letter message. No I/O here: the partition's commit loop reads records, calls these functions,
stores what they changed in the same transaction as its appends, and only then answers callers.

Source: the streams seed's consumer RPCs and fields (ConsumerConfigPb, ConsumerStatePb,
PendingDeliveryPb, Fetch/Ack/Nak/Term/InProgress) and NATS JetStream's semantics where the seed is
silent (delivery policy `new`, max_ack_pending, ack floor).

Invariants of a `ConsumerCursor`:
- `pending` maps seq -> `Pending`, in ascending seq order (new deliveries always have a higher seq
  than anything pending, a redelivery updates an entry in place, storage loads rows by seq);
- every pending seq is <= `last_delivered`, and `ack_floor` < every pending seq;
- `ack_floor` = (lowest pending seq - 1) when anything is pending, else `last_delivered`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from weir.errors import InvalidConfigError
from weir.subjects import (
    SubjectFilter,
    patterns_overlap,
    subject_matches,
    validate_name,
    validate_pattern,
    validate_subject,
)
from weir.v1 import types_pb2

from weir_partition_node.delivery_horizon import NO_HORIZON, DeliveryHorizon
from weir_partition_node.scheduled import visible_to_consumers

DEFAULT_ACK_WAIT_MS = 30_000
DEFAULT_MAX_DELIVER = 5
DEFAULT_MAX_ACK_PENDING = 1_000
MAX_ACK_PENDING = 100_000
MAX_ACK_WAIT_MS = 7 * 24 * 3600 * 1000
DLQ_HEADER_PREFIX = "x-weir-dlq-"
NEVER = 2**62


def normalize_consumer_config(
    config: types_pb2.ConsumerConfig, stream: types_pb2.StreamConfig, stream_accepts: Callable[[str], bool]
) -> types_pb2.ConsumerConfig:
    """The effective config (defaults filled in). Raises InvalidNameError / InvalidSubjectError /
    InvalidConfigError naming the offending field."""
    validate_name(config.name, "consumer name")
    effective = types_pb2.ConsumerConfig()
    effective.CopyFrom(config)
    if config.filter_subject:
        validate_pattern(config.filter_subject)
        if stream.subjects and not any(patterns_overlap(p, config.filter_subject) for p in stream.subjects):
            raise InvalidConfigError(
                f"filter_subject {config.filter_subject!r} matches none of stream {stream.name!r}'s "
                f"subjects {list(stream.subjects)}"
            )
    if config.deliver_policy not in types_pb2.DeliverPolicy.values():
        raise InvalidConfigError(f"deliver_policy: unknown value {config.deliver_policy}")
    by_seq = config.deliver_policy == types_pb2.DELIVER_POLICY_BY_START_SEQ
    by_time = config.deliver_policy == types_pb2.DELIVER_POLICY_BY_START_TIME
    if by_seq and config.start_seq == 0:
        raise InvalidConfigError("start_seq: must be >= 1 with deliver_policy BY_START_SEQ")
    if not by_seq and config.start_seq:
        raise InvalidConfigError("start_seq: only valid with deliver_policy BY_START_SEQ")
    if by_time and config.start_time_ms <= 0:
        raise InvalidConfigError("start_time_ms: must be > 0 with deliver_policy BY_START_TIME")
    if not by_time and config.start_time_ms:
        raise InvalidConfigError("start_time_ms: only valid with deliver_policy BY_START_TIME")
    if config.ack_wait_ms > MAX_ACK_WAIT_MS:
        raise InvalidConfigError(f"ack_wait_ms: at most {MAX_ACK_WAIT_MS} (7 days), got {config.ack_wait_ms}")
    effective.ack_wait_ms = config.ack_wait_ms or DEFAULT_ACK_WAIT_MS
    effective.max_deliver = config.max_deliver or DEFAULT_MAX_DELIVER
    if config.max_ack_pending > MAX_ACK_PENDING:
        raise InvalidConfigError(f"max_ack_pending: at most {MAX_ACK_PENDING}, got {config.max_ack_pending}")
    effective.max_ack_pending = config.max_ack_pending or DEFAULT_MAX_ACK_PENDING
    if config.deliver_group:
        validate_name(config.deliver_group, "deliver_group")
    if config.dead_letter_subject:
        subject = config.dead_letter_subject
        validate_subject(subject)
        if not stream_accepts(subject):
            raise InvalidConfigError(
                f"dead_letter_subject {subject!r} matches none of stream {stream.name!r}'s subjects "
                f"{list(stream.subjects)}; add a pattern for it (for example 'dlq.>') to the stream"
            )
        if subject_matches(config.filter_subject or ">", subject):
            raise InvalidConfigError(
                f"dead_letter_subject {subject!r} matches the consumer's own filter "
                f"{config.filter_subject or '(every subject)'!r}: it would be delivered its own dead "
                "letters; set a filter_subject that excludes it"
            )
    return effective


@dataclass(slots=True)
class ConsumerSpec:
    """What every partition needs of a consumer's config (immutable for its lifetime)."""

    name: str
    incarnation: int  # the change seq of its creation: tells a re-created consumer from the old one
    accepts: Callable[[str], bool] | None  # None = every subject
    ack_wait_ms: int
    max_deliver: int
    dead_letter_subject: str
    max_ack_pending: int

    @classmethod
    def of(cls, config: types_pb2.ConsumerConfig, incarnation: int, *, hide_scheduled: bool = False) -> ConsumerSpec:
        """The spec of `config`. `hide_scheduled` (a stream with scheduled messages): the consumer
        also passes over schedule records (scheduled.py), whatever its filter."""
        own = SubjectFilter([config.filter_subject]).accepts if config.filter_subject else None
        accepts: Callable[[str], bool] | None = _hiding_scheduled(own) if hide_scheduled else own
        return cls(
            config.name,
            incarnation,
            accepts,
            config.ack_wait_ms,
            config.max_deliver,
            config.dead_letter_subject,
            config.max_ack_pending,
        )


@dataclass(slots=True)
class Consumer:
    """A consumer's node-wide record (node_consumers.NodeConsumers keeps them, hosted.Stream holds
    them by name); its per-partition state lives in each `Partition`."""

    config: types_pb2.ConsumerConfig
    created_at_ms: int
    spec: ConsumerSpec
    start_seqs: list[int]
    last_per_subject_until: list[int] = field(default_factory=list)  # DELIVER_POLICY_LAST_PER_SUBJECT only
    subscribers: int = 0
    deleted: bool = False


def _hiding_scheduled(accepts: Callable[[str], bool] | None) -> Callable[[str], bool]:
    if accepts is None:
        return visible_to_consumers
    own = accepts
    return lambda subject: visible_to_consumers(subject) and own(subject)


@dataclass(slots=True)
class Pending:
    """A delivered, unacknowledged message."""

    delivered_at_ms: int
    deliver_count: int
    redeliver_at_ms: int


@dataclass(slots=True)
class Counters:
    """Totals since the consumer was created (stored with the cursor)."""

    delivered: int = 0
    acked: int = 0
    redelivered: int = 0
    dead_lettered: int = 0
    dropped: int = 0
    termed: int = 0

    def as_tuple(self) -> tuple[int, int, int, int, int, int]:
        return (self.delivered, self.acked, self.redelivered, self.dead_lettered, self.dropped, self.termed)


@dataclass(slots=True)
class CommitCounts:
    """What one commit did to one cursor (becomes a ConsumerStateChange)."""

    delivered: int = 0
    redelivered: int = 0
    acked: int = 0
    naked: int = 0
    termed: int = 0
    in_progress: int = 0
    dead_lettered: int = 0
    dropped: int = 0


@dataclass(slots=True)
class ConsumerCursor:
    """A consumer's state in one partition. See the module docstring for the invariants."""

    spec: ConsumerSpec
    last_delivered: int
    pending: dict[int, Pending] = field(default_factory=dict)
    totals: Counters = field(default_factory=Counters)
    # A lower bound of every pending entry's redeliver_at_ms: lets fetch skip the pending scan.
    earliest_redeliver_ms: int = NEVER
    # Per commit: seqs whose pending entry changed (upsert if still pending, else delete).
    touched: set[int] = field(default_factory=set)
    counts: CommitCounts | None = None
    # DELIVER_POLICY_LAST_PER_SUBJECT: the partition's last seq at creation; at or below it only the
    # newest message of each subject is delivered (0 = every policy else). Stored and replicated.
    last_per_subject_until: int = 0
    # delivery_horizon.py: the highest seq that may have been delivered for the first time, as the
    # in-sync replicas know it (in memory; snapshots carry it) ...
    horizon: DeliveryHorizon = NO_HORIZON
    # ... and, on a replica that became primary, the highest seq it delivers as a redelivery.
    maybe_delivered_until: int = 0

    @property
    def dirty(self) -> bool:
        return self.counts is not None

    def commit_counts(self) -> CommitCounts:
        if self.counts is None:
            self.counts = CommitCounts()
        return self.counts

    @property
    def ack_floor(self) -> int:
        """Every seq <= ack_floor is settled (or not for this consumer); derived, never stored apart."""
        return next(iter(self.pending)) - 1 if self.pending else self.last_delivered

    def reset_commit(self) -> None:
        self.touched = set()
        self.counts = None


def pending_problem(last_delivered: int, pending_seqs: Iterable[int]) -> str | None:
    """What is wrong with a cursor's state from elsewhere (a primary's snapshot) that `check_cursor`
    would refuse, or None: every pending seq must be positive and at most `last_delivered`."""
    seqs = list(pending_seqs)
    if not seqs:
        return None
    lowest, highest = min(seqs), max(seqs)
    if lowest <= 0 or highest > last_delivered:
        return f"pending seqs {lowest}..{highest} do not lie in 1..last_delivered ({last_delivered})"
    return None


def check_cursor(cursor: ConsumerCursor) -> None:
    """Assert the module's invariants of a cursor about to be stored, in O(1): the pending seqs'
    lowest and highest (insertion order) are ordered and at most `last_delivered` (so `ack_floor`
    is below every pending seq). A failure is a bug: the commit stores nothing."""
    if not cursor.pending:
        return
    lowest = next(iter(cursor.pending))
    highest = next(reversed(cursor.pending))
    assert 0 < lowest <= highest <= cursor.last_delivered, (
        f"consumer {cursor.spec.name!r}: pending seqs {lowest}..{highest}, last_delivered {cursor.last_delivered}"
    )


@dataclass(slots=True)
class DueScan:
    """Pending entries whose redeliver time has come, split by whether they may be redelivered."""

    redeliver: list[int] = field(default_factory=list)
    exhausted: list[int] = field(default_factory=list)  # reached max_deliver: dead letter / drop


def scan_due(cursor: ConsumerCursor, now_ms: int, limit: int) -> DueScan:
    """Which pending seqs are due at `now_ms`: up to `limit` to redeliver (lowest seq first) and
    every due one that reached max_deliver. Updates `earliest_redeliver_ms` to the exact bound."""
    scan = DueScan()
    if not cursor.pending or cursor.earliest_redeliver_ms > now_ms:
        return scan
    earliest = NEVER
    max_deliver = cursor.spec.max_deliver
    for seq, pending in cursor.pending.items():
        at = pending.redeliver_at_ms
        if at > now_ms:
            earliest = min(earliest, at)
        elif pending.deliver_count >= max_deliver:
            scan.exhausted.append(seq)
        elif len(scan.redeliver) < limit:
            scan.redeliver.append(seq)
        else:
            earliest = now_ms  # still due, just not taken this time
    cursor.earliest_redeliver_ms = earliest
    return scan


def has_exhausted_due(cursor: ConsumerCursor, now_ms: int) -> bool:
    """Whether some pending entry is due at `now_ms` and reached max_deliver (to dead-letter)."""
    if cursor.earliest_redeliver_ms > now_ms:
        return False
    max_deliver = cursor.spec.max_deliver
    return any(
        entry.redeliver_at_ms <= now_ms and entry.deliver_count >= max_deliver for entry in cursor.pending.values()
    )


def deliver_new(cursor: ConsumerCursor, seq: int, now_ms: int, ack_wait_ms: int = 0) -> int:
    """Record the first delivery of `seq` by this node, invisible for `ack_wait_ms` (0 = the
    consumer's); returns its deliver_count: 1, or 2 (counted as a redelivery) at or below
    `maybe_delivered_until`, where an earlier primary may have delivered it (delivery_horizon.py)."""
    redeliver_at_ms = now_ms + (ack_wait_ms or cursor.spec.ack_wait_ms)
    deliver_count = 2 if seq <= cursor.maybe_delivered_until else 1
    cursor.pending[seq] = Pending(now_ms, deliver_count, redeliver_at_ms)
    cursor.touched.add(seq)
    counts = cursor.commit_counts()
    cursor.totals.delivered += 1
    counts.delivered += 1
    if deliver_count > 1:
        cursor.totals.redelivered += 1
        counts.redelivered += 1
    _lower_earliest(cursor, redeliver_at_ms)
    return deliver_count


def redeliver(cursor: ConsumerCursor, seq: int, now_ms: int, ack_wait_ms: int = 0) -> int:
    """Record another delivery of a pending seq, invisible for `ack_wait_ms` (0 = the consumer's);
    returns its new deliver_count."""
    pending = cursor.pending[seq]
    pending.deliver_count += 1
    pending.delivered_at_ms = now_ms
    pending.redeliver_at_ms = now_ms + (ack_wait_ms or cursor.spec.ack_wait_ms)
    cursor.touched.add(seq)
    counts = cursor.commit_counts()
    cursor.totals.redelivered += 1
    counts.redelivered += 1
    _lower_earliest(cursor, pending.redeliver_at_ms)
    return pending.deliver_count


def undeliver(cursor: ConsumerCursor, seq: int, deliver_count: int, now_ms: int) -> bool:
    """Take back delivery `deliver_count` of a pending seq whose answer never left the node (its
    fetch was cancelled: the caller went away or its deadline passed): the seq is due again at once
    and its next delivery has this delivery's count (a first delivery taken back leaves the entry at
    deliver_count 0). The consumer's counters keep it: they count the deliveries the node made, so
    the next one counts as a redelivery. False, changing nothing, when the seq was settled or
    delivered again since."""
    pending = cursor.pending.get(seq)
    if pending is None or pending.deliver_count != deliver_count or deliver_count < 1:
        return False
    pending.deliver_count -= 1
    pending.redeliver_at_ms = now_ms
    cursor.touched.add(seq)
    cursor.commit_counts()
    _lower_earliest(cursor, now_ms)
    return True


def forget(cursor: ConsumerCursor, seq: int) -> Pending:
    """Remove a pending entry (its message is gone, or it was dead-lettered)."""
    cursor.touched.add(seq)
    cursor.commit_counts()
    return cursor.pending.pop(seq)


def not_pending_reason(cursor: ConsumerCursor, seq: int) -> str:
    """Why `seq` is not in the pending set, for a person."""
    if seq == 0:
        return "seq 0 does not exist: seqs start at 1"
    if seq > cursor.last_delivered:
        return (
            f"seq {seq} was never delivered to consumer {cursor.spec.name!r} "
            f"(last delivered seq is {cursor.last_delivered})"
        )
    return (
        f"seq {seq} is not pending for consumer {cursor.spec.name!r}: it was already acknowledged, "
        "terminated or dead-lettered, or the consumer's filter skipped it"
    )


def stale_delivery_reason(cursor: ConsumerCursor, seq: int, deliver_count: int) -> str | None:
    """Why a settle of delivery `deliver_count` of `seq` no longer applies (None: it does, or
    `deliver_count` is 0 = any delivery): the message was delivered again since (a stale receipt
    handle), or is not pending at all."""
    if not deliver_count:
        return None
    pending = cursor.pending.get(seq)
    if pending is None:
        return not_pending_reason(cursor, seq)
    if pending.deliver_count != deliver_count:
        return (
            f"seq {seq}: this settles delivery {deliver_count}, but the message was delivered again since "
            f"(delivery {pending.deliver_count} is pending): a stale receipt handle"
        )
    return None


def ack(cursor: ConsumerCursor, seqs: Iterable[int]) -> list[int | None]:
    """Acknowledge `seqs`; returns, per seq, the seq when it was pending (now acknowledged) or None."""
    results: list[int | None] = []
    pending = cursor.pending
    touched = cursor.touched
    acked = 0
    for seq in seqs:
        if pending.pop(seq, None) is None:
            results.append(None)
            continue
        touched.add(seq)
        acked += 1
        results.append(seq)
    if acked:
        cursor.totals.acked += acked
        cursor.commit_counts().acked += acked
    return results


def nak(cursor: ConsumerCursor, seq: int, now_ms: int, delay_ms: int) -> None:
    """Make a pending seq due again after `delay_ms` (KeyError when not pending)."""
    pending = cursor.pending[seq]
    pending.redeliver_at_ms = now_ms + delay_ms
    cursor.touched.add(seq)
    cursor.commit_counts().naked += 1
    _lower_earliest(cursor, pending.redeliver_at_ms)


def term(cursor: ConsumerCursor, seq: int) -> None:
    """Never redeliver a pending seq (KeyError when not pending)."""
    del cursor.pending[seq]
    cursor.touched.add(seq)
    cursor.totals.termed += 1
    cursor.commit_counts().termed += 1


def in_progress(cursor: ConsumerCursor, seq: int, now_ms: int) -> int:
    """Restart a pending seq's ack_wait window at `now_ms`; returns its new redeliver time."""
    pending = cursor.pending[seq]
    pending.redeliver_at_ms = now_ms + cursor.spec.ack_wait_ms
    cursor.touched.add(seq)
    cursor.commit_counts().in_progress += 1
    return pending.redeliver_at_ms


def seek(cursor: ConsumerCursor, next_seq: int) -> int:
    """Move the cursor so the next new delivery considers `next_seq` first (>= 1; moving back
    delivers those messages again), dropping the whole pending set; returns how many pending
    entries were dropped. The totals are history and stay."""
    dropped = len(cursor.pending)
    cursor.touched.update(cursor.pending)
    cursor.pending.clear()
    cursor.earliest_redeliver_ms = NEVER
    cursor.last_delivered = next_seq - 1
    cursor.commit_counts()
    return dropped


def _lower_earliest(cursor: ConsumerCursor, at_ms: int) -> None:
    cursor.earliest_redeliver_ms = min(cursor.earliest_redeliver_ms, at_ms)


def dead_letter_message(
    original: types_pb2.Message,
    *,
    stream: str,
    consumer: str,
    subject: str,
    deliver_count: int,
    reason: str = "max_deliver",
) -> types_pb2.Message:
    """The message a dead-lettered `original` becomes: same payload, headers and key, subject
    `subject`, plus `x-weir-dlq-*` headers naming its origin (its msg_id too, when it had one: the
    copy carries none itself, so the duplicate window keeps pointing at the original) and `reason`
    ("max_deliver", or "consumer" for Term with dead_letter). seq/ts_ms are set by the caller."""
    message = types_pb2.Message(subject=subject, payload=original.payload, partition=original.partition)
    message.headers.extend(original.headers)
    if original.HasField("key"):
        message.key = original.key
    if original.msg_id:
        message.headers.add(key=DLQ_HEADER_PREFIX + "msg-id", value=original.msg_id)
    for key, value in (
        ("stream", stream),
        ("partition", str(original.partition)),
        ("seq", str(original.seq)),
        ("subject", original.subject),
        ("ts-ms", str(original.ts_ms)),
        ("consumer", consumer),
        ("deliver-count", str(deliver_count)),
        ("reason", reason),
    ):
        message.headers.add(key=DLQ_HEADER_PREFIX + key, value=value)
    return message


def interest_keep_from(cursors: Iterable[ConsumerCursor], last_seq: int) -> int:
    """Interest retention: the lowest seq some consumer still needs (every seq below it may go).
    With no consumers nothing is needed: last_seq + 1."""
    return min((cursor.ack_floor for cursor in cursors), default=last_seq) + 1
