"""Delayed delivery: schedule records and the primary's index of those not yet delivered.

A publish with `delay_ms` / `deliver_at_ms` to a stream with `allow_scheduled_messages` is stored at
once, as a *schedule record*: an ordinary log record (so it is fsynced, replicated, acknowledged per
ack level and fails over like any message) under the reserved subject
`$weir.scheduled.<deliver_at_ms>.<seq>`, carrying the publisher's message with its own subject in
`scheduled_subject`. Consumers never see reserved subjects. When it is due, the partition's primary
appends the message on its own subject (a new seq, `scheduled_seq` = the schedule record's seq) and
removes the schedule record in the same commit; a secondary applying that appended record removes the
schedule record in the same commit too. So every copy holds either the schedule record or the
delivered message, never both, and a new primary after a failover delivers exactly the schedule
records its log still holds. Source: JetStream's message schedules (ADR-51: the schedule is a stored
message, the server publishes to the target at its time and removes the schedule) and RocketMQ 5's
timer messages (stored at once, visible at their time).

A *held* record (`hold`, a transaction's half message, subject `$weir.held.<seq>`) is the same
without a time: it waits for ReleaseScheduled to deliver or discard it, which also recalls a delayed
record. Every copy remembers how each held record was resolved (storage/held_resolutions.py): the
same resolution again answers as the first did, the other one is refused (AlreadyResolvedError).

Everything here is pure (no I/O, no clock): the partition feeds it what it commits and asks it what
is due.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

from weir.subjects import RESERVED_SUBJECT_PREFIX
from weir.v1 import types_pb2

SCHEDULED_SUBJECT_PREFIX = "$weir.scheduled."
HELD_SUBJECT_PREFIX = "$weir.held."
HELD = 2**62  # PreparedEntry.deliver_at_ms of a held message: never due by itself
MAX_SCHEDULE_DELAY_MS = 366 * 24 * 3600 * 1000  # a schedule at most this far ahead of the node's clock
MAX_SCHEDULED_PER_PARTITION = 1_000_000  # schedule records a partition holds at most (bounds the index)
DELIVERY_TICK_MS = 10  # records due within one tick (aligned to the clock) are delivered together
FIRE_BATCH_MESSAGES = 1000  # schedule records delivered per commit at most (bounds one commit's work)
_COMPACT_SLACK = 1024


def scheduled_subject(deliver_at_ms: int, seq: int) -> str:
    """The reserved subject of the schedule record at `seq`: unique per record (so per-subject limits
    never drop one) and readable without decoding the record (the index loads from subjects only)."""
    return f"{SCHEDULED_SUBJECT_PREFIX}{deliver_at_ms}.{seq}"


def held_subject(seq: int) -> str:
    """The reserved subject of the held record at `seq`."""
    return f"{HELD_SUBJECT_PREFIX}{seq}"


def is_held(record: bytes) -> bool:
    """Whether a stored record is a held one (its subject `$weir.held.<seq>`)."""
    return types_pb2.Message.FromString(record).subject.startswith(HELD_SUBJECT_PREFIX)


def parse_scheduled_subject(subject: str) -> tuple[int, int] | None:
    """(deliver_at_ms, seq) of a schedule record's subject ((HELD, seq) for a held record's); None
    when `subject` is neither."""
    if subject.startswith(HELD_SUBJECT_PREFIX):
        seq = subject[len(HELD_SUBJECT_PREFIX) :]
        return (HELD, int(seq)) if seq.isdigit() else None
    if not subject.startswith(SCHEDULED_SUBJECT_PREFIX):
        return None
    parts = subject[len(SCHEDULED_SUBJECT_PREFIX) :].split(".")
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        return None
    return int(parts[0]), int(parts[1])


def is_reserved(subject: str) -> bool:
    """Whether `subject` is Weir's own (`$weir.` prefix): publishers may not use it."""
    return subject.startswith(RESERVED_SUBJECT_PREFIX)


def visible_to_consumers(subject: str) -> bool:
    """The subject filter every consumer of a stream with scheduled messages applies on top of its
    own: schedule and held records (every reserved subject) are never delivered."""
    return not subject.startswith(RESERVED_SUBJECT_PREFIX)


def delivered_message(record: bytes, scheduled_seq: int, partition: int) -> types_pb2.Message:
    """The message a schedule record delivers: the publisher's subject, headers, payload, key and
    msg_id, with `scheduled_seq` naming the record (seq and ts_ms are set when it is appended)."""
    schedule = types_pb2.Message.FromString(record)
    message = types_pb2.Message(
        subject=schedule.scheduled_subject,
        headers=schedule.headers,
        payload=schedule.payload,
        partition=partition,
        msg_id=schedule.msg_id,
        scheduled_seq=scheduled_seq,
    )
    if schedule.HasField("key"):
        message.key = schedule.key
    return message


class ScheduleIndex:
    """The schedule records a primary still has to deliver: seq -> deliver_at_ms, ordered by time
    (a heap) and by seq (for the oldest one, which consumer-driven retention must keep).

    Removals (delivered, or taken by retention or a purge) are lazy in the heaps and exact in the
    map: `len()` and every answer count only live records; a heap holding more than twice the live
    records (plus a slack) is rebuilt, so memory stays proportional to them: about 200 bytes a record.
    """

    def __init__(self) -> None:
        self._deliver_at_ms: dict[int, int] = {}
        self._by_time: list[tuple[int, int]] = []
        self._by_seq: list[int] = []
        self._held: set[int] = set()  # the held records among them (never due by themselves)

    def __len__(self) -> int:
        return len(self._deliver_at_ms)

    def __contains__(self, seq: int) -> bool:
        return seq in self._deliver_at_ms

    def add(self, seq: int, deliver_at_ms: int) -> None:
        if seq in self._deliver_at_ms:
            return
        self._deliver_at_ms[seq] = deliver_at_ms
        if deliver_at_ms >= HELD:
            self._held.add(seq)
            heapq.heappush(self._by_seq, seq)
            return
        heapq.heappush(self._by_time, (deliver_at_ms, seq))
        heapq.heappush(self._by_seq, seq)
        self._compact()

    def _compact(self) -> None:
        live = len(self._deliver_at_ms)
        if len(self._by_time) > 2 * live + _COMPACT_SLACK:
            self._by_time = [(at_ms, seq) for seq, at_ms in self._deliver_at_ms.items() if at_ms < HELD]
            heapq.heapify(self._by_time)
        if len(self._by_seq) > 2 * live + _COMPACT_SLACK:
            self._by_seq = list(self._deliver_at_ms)
            heapq.heapify(self._by_seq)

    def add_subjects(self, subjects: Iterable[tuple[int, str]]) -> None:
        """Add every (seq, subject) whose subject is a schedule record's."""
        for seq, subject in subjects:
            parsed = parse_scheduled_subject(subject)
            if parsed is not None and parsed[1] == seq:
                self.add(seq, parsed[0])

    def load(self, subjects: Iterable[str]) -> None:
        """Add the schedule record behind each subject (`$weir.scheduled.<deliver_at_ms>.<seq>`);
        other subjects are passed over."""
        for subject in subjects:
            parsed = parse_scheduled_subject(subject)
            if parsed is not None:
                self.add(parsed[1], parsed[0])

    def discard(self, seqs: Iterable[int]) -> None:
        for seq in seqs:
            self._deliver_at_ms.pop(seq, None)
            self._held.discard(seq)
        self._compact()

    def discard_below(self, first_seq: int) -> None:
        """Forget every record below `first_seq` (a truncation took them)."""
        while self._by_seq and self._by_seq[0] < first_seq:
            seq = heapq.heappop(self._by_seq)
            self._deliver_at_ms.pop(seq, None)
            self._held.discard(seq)

    def next_due_ms(self) -> int | None:
        """The earliest deliver_at_ms of a live record, None when there is none."""
        heap = self._by_time
        while heap and heap[0][1] not in self._deliver_at_ms:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def oldest_seq(self) -> int | None:
        heap = self._by_seq
        while heap and heap[0] not in self._deliver_at_ms:
            heapq.heappop(heap)
        return heap[0] if heap else None

    def pending_seqs(self, from_seq: int, limit: int, *, held_only: bool) -> list[int]:
        """Up to `limit` live seqs >= `from_seq` in seq order (held ones only with `held_only`)."""
        source = self._held if held_only else self._deliver_at_ms
        return heapq.nsmallest(limit, (seq for seq in source if seq >= from_seq))

    def take_due(self, now_ms: int, limit: int) -> list[int]:
        """Remove and return up to `limit` seqs due at `now_ms`, earliest first (seq order within a
        millisecond)."""
        due: list[int] = []
        heap = self._by_time
        while heap and len(due) < limit:
            deliver_at_ms, seq = heap[0]
            if seq not in self._deliver_at_ms:
                heapq.heappop(heap)
                continue
            if deliver_at_ms > now_ms:
                break
            heapq.heappop(heap)
            del self._deliver_at_ms[seq]
            due.append(seq)
        self._compact()
        return due
