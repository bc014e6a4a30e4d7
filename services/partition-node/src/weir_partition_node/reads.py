"""Reads of stored messages outside consumers: ReadMessages (optionally filtered by subject, and
optionally only the newest message of each subject below a horizon, as a key-value watch starts),
ReadLatestAtSubject and ScanExactAtSubject.

On a stream with `deliver_up_to_high_watermark`, reads serve nothing above the partition's high
watermark, as its consumers do: a message that a failover could take back is never read, so a
reader (a key-value get or watch) never sees a value that later turns out never to have existed.
Every bound is checked by the caller (`Node`) before any work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from weir.errors import CatchingUpError
from weir.v1 import types_pb2

if TYPE_CHECKING:
    from weir_partition_node.partition import Partition

# Messages a filtered read looks at per call, at most (bounds one read's work; the answer's
# next_seq says where the next read goes on).
FILTER_SCAN_ROWS = 4096


@dataclass(frozen=True, slots=True)
class ReadResult:
    """What one ReadMessages call answers: (seq, record) in seq order, where the next read goes on,
    and the last seq readers may see (the high watermark on a stream that asks for it)."""

    records: list[tuple[int, bytes]]
    next_seq: int
    last_seq: int


def superseded(partition: Partition, seq: int, record: bytes, until_seq: int) -> bool:
    """Whether a later message of `seq`'s subject is stored at or below `until_seq`: below a
    last-per-subject horizon such a message is passed over."""
    later = partition.log.next_subject_seq(types_pb2.Message.FromString(record).subject, seq)
    return 0 < later <= until_seq


def read_range(
    partition: Partition,
    from_seq: int,
    max_messages: int,
    max_bytes: int,
    *,
    accepts: Callable[[str], bool] | None = None,
    last_per_subject_until: int = 0,
    whole_copy: bool = False,
) -> ReadResult:
    """Up to `max_messages` stored messages from `from_seq` (0 = the first stored), within
    `max_bytes` (at least one when any is readable), whose subject `accepts` (None = every one),
    passing over those superseded at or below `last_per_subject_until` (0 = none). `whole_copy`
    (an internal-port read of a copy, for inspection): up to the copy's last seq, whatever its
    high watermark."""
    start = max(from_seq, partition.first_seq) if from_seq else partition.first_seq
    visible = partition.last_seq if whole_copy else partition.visible_last_seq()
    if start > visible:
        return ReadResult([], start, visible)
    if accepts is None and not last_per_subject_until:
        rows = [row for row in partition.log.read(start, max_messages, max_bytes) if row[0] <= visible]
        next_seq = rows[-1][0] + 1 if rows else visible + 1
        return ReadResult(rows, next_seq, visible)
    return _read_matching(
        partition,
        start,
        visible,
        max_messages=max_messages,
        max_bytes=max_bytes,
        accepts=accepts,
        until_seq=last_per_subject_until,
    )


def _read_matching(
    partition: Partition,
    start: int,
    visible: int,
    *,
    max_messages: int,
    max_bytes: int,
    accepts: Callable[[str], bool] | None,
    until_seq: int,
) -> ReadResult:
    records: list[tuple[int, bytes]] = []
    budget = FILTER_SCAN_ROWS
    position = start  # the next seq to look at
    while len(records) < max_messages and max_bytes > 0 and position <= visible and budget > 0:
        rows, scanned, at_end = partition.log.read_matching(
            position, max_messages - len(records), max_bytes, accepts, budget
        )
        passed_over = False
        for seq, record in rows:
            if seq > visible:
                break
            if seq <= until_seq and superseded(partition, seq, record, until_seq):
                passed_over = True
                continue
            records.append((seq, record))
            max_bytes -= len(record)
        last = visible if at_end else min(scanned, visible)
        budget -= last - position + 1
        position = last + 1
        if not passed_over:
            break  # the read did all it could: another one would find what it found
    return ReadResult(records, position, visible)


def check_point_read(partition: Partition) -> None:
    """A point read (latest, scan, listing) of a high-watermark stream answers only what every
    acknowledged write is in: on a primary whose lease lapsed it is refused (another node may lead
    and have acknowledged newer writes), and on a primary that just took over until its watermark
    covers what the previous primary may have acknowledged (its log's end then). Without this a
    key-value Get could miss an acknowledged write. Errors: LeaderLeaseExpiredError, CatchingUpError
    (both retryable)."""
    if not (partition.stream.deliver_up_to_high_watermark and partition.leading):
        return
    refusal = partition.lease_refusal() if partition.lease_refusal is not None else None
    if refusal is not None:
        raise refusal
    if partition.high_watermark < partition.epoch_start_seq:
        raise CatchingUpError(
            f"partition {partition.index} of {partition.stream.name!r}: the new primary is confirming what "
            f"the previous one acknowledged (high watermark {partition.high_watermark} of "
            f"{partition.epoch_start_seq}); retry",
            stream=partition.stream.name,
            partition=partition.index,
        )


def latest_at_subject(partition: Partition, subject: str) -> bytes | None:
    """The newest readable message at `subject` (at or below the high watermark when the stream
    asks), or None. Errors: those of check_point_read."""
    check_point_read(partition)
    visible = partition.visible_last_seq()
    if partition.log.subject_last_seq(subject) <= visible:
        return partition.log.latest_at_subject(subject)
    newest = partition.log.subject_seq_at_or_below(subject, visible)  # rare: the newest is not replicated yet
    return partition.log.get(newest) if newest else None


def latest_by_prefix(
    partition: Partition, prefix: str, limit: int, max_bytes: int
) -> tuple[list[str], list[bytes], bool]:
    """(subjects, each one's newest readable message, truncated): the subjects starting with
    `prefix` (at most `limit`), stopping at `max_bytes` of messages (at least one subject). Errors:
    those of check_point_read."""
    check_point_read(partition)
    subjects = partition.log.subjects_with_prefix(prefix, limit + 1)
    truncated = len(subjects) > limit
    kept: list[str] = []
    records: list[bytes] = []
    total = 0
    for subject in subjects[:limit]:
        record = latest_at_subject(partition, subject)
        if record is None:
            continue
        if records and total + len(record) > max_bytes:
            return kept, records, True
        total += len(record)
        kept.append(subject)
        records.append(record)
    return kept, records, truncated


def scan_subject(partition: Partition, subject: str, from_seq: int, limit: int, max_bytes: int) -> list[bytes]:
    """Readable messages at exactly `subject` from `from_seq`, in seq order (see the storage's
    scan_subject for the bounds). Errors: those of check_point_read."""
    check_point_read(partition)
    visible = partition.visible_last_seq()
    return [record for seq, record in partition.log.scan_subject(subject, from_seq, limit, max_bytes) if seq <= visible]
