"""The Limits retention planner, as a pure function over rows."""

from __future__ import annotations

from weir_partition_node.retention import LimitsBounds, NewRow, RetentionPlan, plan_retention
from weir_partition_node.storage.base import RowInfo


def plan(
    bounds: LimitsBounds,
    stored: list[tuple[int, str, int, int]],
    new: list[tuple[int, str, int, int]],
    now_ms: int = 10_000,
) -> RetentionPlan:
    """stored/new rows are (seq, subject, size, ts_ms)."""
    rows = {seq: RowInfo(seq, size, ts) for seq, _, size, ts in stored}
    subjects = {seq: subject for seq, subject, _, _ in stored}

    def oldest(from_seq: int, limit: int) -> list[RowInfo]:
        return [rows[s] for s in sorted(rows) if s >= from_seq][:limit]

    def subject_excess(subject: str, keep: int) -> list[RowInfo]:
        mine = [rows[s] for s in sorted(rows) if subjects[s] == subject]
        return mine[: max(0, len(mine) - keep)]

    return plan_retention(
        bounds=bounds,
        now_ms=now_ms,
        stored_count=len(stored),
        stored_bytes=sum(size for _, _, size, _ in stored),
        first_seq=min(rows) if rows else 1,
        new_rows=[NewRow(seq, size, ts, subject) for seq, subject, size, ts in new],
        oldest=oldest,
        subject_excess=subject_excess,
    )


def test_no_bounds_removes_nothing() -> None:
    result = plan(LimitsBounds(), [(1, "a", 10, 0)], [(2, "a", 10, 0)])
    assert result.removed_count == 0
    assert result.truncate_before == 0


def test_max_msgs_truncates_oldest_including_new_rows() -> None:
    result = plan(
        LimitsBounds(max_msgs=2),
        [(1, "a", 10, 0), (2, "a", 10, 0)],
        [(3, "a", 10, 0), (4, "a", 10, 0), (5, "a", 10, 0)],
    )
    assert (result.truncate_before, result.truncated_count, result.truncated_bytes) == (4, 3, 30)
    assert result.truncate_reason == "max_msgs"


def test_max_bytes_truncates_until_under() -> None:
    result = plan(LimitsBounds(max_bytes=25), [(1, "a", 10, 0), (2, "a", 10, 0)], [(3, "a", 10, 0)])
    assert (result.truncate_before, result.truncated_count, result.truncate_reason) == (2, 1, "max_bytes")


def test_max_age_stops_at_first_young_message() -> None:
    stored = [(1, "a", 1, 1000), (2, "a", 1, 2000), (3, "a", 1, 9500), (4, "a", 1, 1000)]
    result = plan(LimitsBounds(max_age_ms=1000), stored, [], now_ms=10_000)
    assert (result.truncate_before, result.truncated_count, result.truncate_reason) == (3, 2, "max_age")


def test_max_msgs_per_subject_keeps_newest_per_subject() -> None:
    stored = [(1, "kv.a", 5, 0), (2, "kv.b", 5, 0), (3, "kv.a", 5, 0)]
    result = plan(LimitsBounds(max_msgs_per_subject=2), stored, [(4, "kv.a", 5, 0)])
    assert result.remove_seqs == [1]
    assert result.removed_bytes == 5


def test_max_msgs_per_subject_drops_older_rows_of_the_same_batch() -> None:
    result = plan(LimitsBounds(max_msgs_per_subject=1), [(1, "kv.a", 5, 0)], [(2, "kv.a", 5, 0), (3, "kv.a", 5, 0)])
    assert sorted(result.remove_seqs) == [1, 2]


def test_per_subject_and_prefix_removals_are_counted_once() -> None:
    stored = [(1, "kv.a", 5, 0), (2, "kv.b", 5, 0), (3, "kv.c", 5, 0)]
    result = plan(LimitsBounds(max_msgs=2, max_msgs_per_subject=1), stored, [(4, "kv.a", 5, 0)])
    assert result.remove_seqs == [1]
    # After removing seq 1 there are 3 messages (2, 3, 4): one more must go, the oldest remaining.
    assert (result.truncate_before, result.truncated_count) == (3, 1)
    assert result.removed_count == 2
    assert result.total_removed_bytes == 10
