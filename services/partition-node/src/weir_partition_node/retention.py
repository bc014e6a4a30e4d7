"""Limits retention as a pure decision: which messages a commit (or a sweep) must remove.

Semantics (NATS JetStream's Limits, per partition): `max_msgs_per_subject` keeps the N newest
messages of each subject; then the oldest messages are removed while the partition holds more than
`max_msgs` messages, more than `max_bytes` record bytes, or the oldest message is older than
`max_age_ms`. Removal of the oldest messages is a prefix truncation (everything below a seq), so the
log stays a contiguous range apart from per-subject removals.

Consumers add two causes: Interest retention removes the prefix below `keep_from_seq` (the lowest
ack floor + 1 over the stream's consumers), and WorkQueue retention removes acknowledged messages
(`removals`, decided by the consumer code and counted here so the Limits bounds see them gone).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from weir_partition_node.storage.base import RowInfo

SCAN_CHUNK_ROWS = 1024


@dataclass(slots=True, frozen=True)
class LimitsBounds:
    """Limits in force; 0 means no bound on that dimension."""

    max_age_ms: int = 0
    max_msgs: int = 0
    max_bytes: int = 0
    max_msgs_per_subject: int = 0

    @property
    def any_prefix_bound(self) -> bool:
        return bool(self.max_age_ms or self.max_msgs or self.max_bytes)


@dataclass(slots=True)
class RetentionPlan:
    remove_seqs: list[int] = field(default_factory=list)
    removed_bytes: int = 0
    truncate_before: int = 0
    truncated_count: int = 0
    truncated_bytes: int = 0
    truncate_reason: str = ""
    # Removals decided by consumers, by reason ("work_queue_ack", "dead_letter").
    consumer_removals: dict[str, list[RowInfo]] = field(default_factory=dict)
    consumer_removed_count: int = 0
    consumer_removed_bytes: int = 0

    @property
    def removed_count(self) -> int:
        return len(self.remove_seqs) + self.truncated_count + self.consumer_removed_count

    @property
    def total_removed_bytes(self) -> int:
        return self.removed_bytes + self.truncated_bytes + self.consumer_removed_bytes

    def all_remove_seqs(self) -> list[int]:
        seqs = list(self.remove_seqs)
        for rows in self.consumer_removals.values():
            seqs.extend(row.seq for row in rows)
        return seqs


@dataclass(slots=True, frozen=True)
class NewRow:
    seq: int
    size: int
    ts_ms: int
    subject: str


def plan_retention(
    *,
    bounds: LimitsBounds,
    now_ms: int,
    stored_count: int,
    stored_bytes: int,
    first_seq: int,
    new_rows: Sequence[NewRow],
    oldest: Callable[[int, int], list[RowInfo]],
    subject_excess: Callable[[str, int], list[RowInfo]],
    keep_from_seq: int = 0,
    removals: Mapping[str, Sequence[RowInfo]] | None = None,
    purge_before_seq: int = 0,
) -> RetentionPlan:
    """Decide removals for a partition holding `stored_count`/`stored_bytes` from `first_seq` on,
    about to append `new_rows`.

    `oldest(from_seq, limit)` lists stored rows (oldest first) and `subject_excess(subject, keep)`
    the stored rows of a subject beyond its `keep` newest; both read committed storage only.
    `keep_from_seq` (Interest) removes every seq below it; `removals` (stored rows, by reason) are
    removed whatever the bounds say; `purge_before_seq` (PurgePartition) removes every seq below it,
    reason "purge".
    """
    plan = RetentionPlan()
    removed: set[int] = set()
    _plan_removals(plan, removed, removals or {}, first_seq)
    if bounds.max_msgs_per_subject:
        _plan_subject_limit(plan, removed, bounds.max_msgs_per_subject, new_rows, subject_excess)
    if not bounds.any_prefix_bound and keep_from_seq <= first_seq and purge_before_seq <= first_seq:
        return plan

    count = stored_count + len(new_rows) - len(removed)
    total = stored_bytes + sum(row.size for row in new_rows) - plan.removed_bytes - plan.consumer_removed_bytes
    age_cutoff = now_ms - bounds.max_age_ms if bounds.max_age_ms else None
    for candidate in _rows_in_order(first_seq, new_rows, oldest):
        if candidate.seq in removed:
            continue
        reason = _prefix_reason(
            bounds,
            count=count,
            total=total,
            age_cutoff=age_cutoff,
            candidate=candidate,
            purge_before_seq=purge_before_seq,
            keep_from_seq=keep_from_seq,
        )
        if not reason:
            break
        plan.truncate_reason = plan.truncate_reason or reason
        plan.truncate_before = candidate.seq + 1
        plan.truncated_count += 1
        plan.truncated_bytes += candidate.size
        count -= 1
        total -= candidate.size
    return plan


def _plan_removals(
    plan: RetentionPlan, removed: set[int], removals: Mapping[str, Sequence[RowInfo]], first_seq: int
) -> None:
    """Removals decided elsewhere (stored rows by reason): each stored seq once, first reason wins."""
    for reason, stored_rows in removals.items():
        kept: list[RowInfo] = []
        for stored in stored_rows:
            if stored.seq >= first_seq and stored.seq not in removed:
                removed.add(stored.seq)
                kept.append(stored)
                plan.consumer_removed_count += 1
                plan.consumer_removed_bytes += stored.size
        if kept:
            plan.consumer_removals[reason] = kept


def _plan_subject_limit(
    plan: RetentionPlan,
    removed: set[int],
    max_msgs_per_subject: int,
    new_rows: Sequence[NewRow],
    subject_excess: Callable[[str, int], list[RowInfo]],
) -> None:
    """max_msgs_per_subject: per subject the new rows get, the oldest stored (then new) rows beyond it."""
    by_subject: dict[str, list[NewRow]] = {}
    for row in new_rows:
        by_subject.setdefault(row.subject, []).append(row)
    for subject, rows in by_subject.items():
        keep_stored = max_msgs_per_subject - len(rows)
        doomed: list[tuple[int, int]] = [(r.seq, r.size) for r in subject_excess(subject, max(0, keep_stored))]
        if keep_stored < 0:
            doomed.extend((r.seq, r.size) for r in rows[:-keep_stored])
        for seq, size in doomed:
            if seq in removed:
                continue
            removed.add(seq)
            plan.remove_seqs.append(seq)
            plan.removed_bytes += size


def _prefix_reason(
    bounds: LimitsBounds,
    *,
    count: int,
    total: int,
    age_cutoff: int | None,
    candidate: RowInfo | NewRow,
    purge_before_seq: int,
    keep_from_seq: int,
) -> str:
    """Why the oldest remaining row goes ("" = it stays, and so does everything after it), given
    the partition's `count` messages and `total` bytes with it."""
    if bounds.max_msgs and count > bounds.max_msgs:
        return "max_msgs"
    if bounds.max_bytes and total > bounds.max_bytes:
        return "max_bytes"
    if age_cutoff is not None and candidate.ts_ms < age_cutoff:
        return "max_age"
    if candidate.seq < purge_before_seq:
        return "purge"
    if candidate.seq < keep_from_seq:
        return "interest"
    return ""


def _rows_in_order(
    first_seq: int, new_rows: Sequence[NewRow], oldest: Callable[[int, int], list[RowInfo]]
) -> Iterator[RowInfo | NewRow]:
    cursor = first_seq
    while True:
        chunk = oldest(cursor, SCAN_CHUNK_ROWS)
        yield from chunk
        if len(chunk) < SCAN_CHUNK_ROWS:
            break
        cursor = chunk[-1].seq + 1
    yield from new_rows


def plan_replica_edits(
    *,
    first_seq: int,
    truncate_before: int,
    removals: Mapping[str, Sequence[int]],
    oldest: Callable[[int, int], list[RowInfo]],
    rows: Callable[[list[int]], list[RowInfo]],
) -> RetentionPlan:
    """The removals a secondary mirrors from its primary (or a replica makes when it truncates a
    divergent tail), as a plan the commit applies like retention: every stored message below
    `truncate_before` (reason "replicated"), then the stored ones among `removals` (by reason)."""
    plan = RetentionPlan()
    if truncate_before > first_seq:
        for row in rows_below(first_seq, truncate_before, oldest):
            plan.truncate_before = truncate_before
            plan.truncated_count += 1
            plan.truncated_bytes += row.size
        plan.truncate_before = truncate_before
        plan.truncate_reason = "replicated"
    removed: set[int] = set()
    for reason, seqs in removals.items():
        kept = [row for row in rows(sorted(set(seqs))) if row.seq >= truncate_before and row.seq not in removed]
        if kept:
            removed.update(row.seq for row in kept)
            plan.consumer_removals[reason] = kept
            plan.consumer_removed_count += len(kept)
            plan.consumer_removed_bytes += sum(row.size for row in kept)
    return plan


def rows_below(first_seq: int, before_seq: int, oldest: Callable[[int, int], list[RowInfo]]) -> Iterator[RowInfo]:
    """Stored rows with first_seq <= seq < before_seq, oldest first (read in chunks)."""
    cursor = first_seq
    while cursor < before_seq:
        chunk = oldest(cursor, SCAN_CHUNK_ROWS)
        for row in chunk:
            if row.seq >= before_seq:
                return
            yield row
        if len(chunk) < SCAN_CHUNK_ROWS:
            return
        cursor = chunk[-1].seq + 1
