"""Consumer decisions (consumers.py) and the consumer-driven retention planner inputs, as pure
functions over in-memory state: no node, no storage, no clock."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from weir.errors import InvalidConfigError, InvalidNameError, InvalidSubjectError, WeirError
from weir.subjects import SubjectFilter
from weir.v1 import types_pb2
from weir_partition_node import consumers
from weir_partition_node.consumers import (
    DEFAULT_ACK_WAIT_MS,
    DEFAULT_MAX_ACK_PENDING,
    DEFAULT_MAX_DELIVER,
    MAX_ACK_PENDING,
    MAX_ACK_WAIT_MS,
    NEVER,
    CommitCounts,
    ConsumerCursor,
    ConsumerSpec,
    Counters,
    Pending,
    normalize_consumer_config,
)
from weir_partition_node.retention import LimitsBounds, NewRow, RetentionPlan, plan_retention
from weir_partition_node.storage.base import RowInfo

from tests.proto_configs import consumer_config

STREAM = types_pb2.StreamConfig(name="orders", subjects=["orders.>", "dlq.>"])
ACCEPTS = SubjectFilter(STREAM.subjects).accepts
T0 = 1_700_000_000_000


def normalize(config: types_pb2.ConsumerConfig, stream: types_pb2.StreamConfig = STREAM) -> types_pb2.ConsumerConfig:
    return normalize_consumer_config(config, stream, SubjectFilter(stream.subjects).accepts)


def spec(
    *, ack_wait_ms: int = 1000, max_deliver: int = 3, dead_letter_subject: str = "", max_ack_pending: int = 100
) -> ConsumerSpec:
    return ConsumerSpec("c", 7, None, ack_wait_ms, max_deliver, dead_letter_subject, max_ack_pending)


def cursor(
    pending: dict[int, Pending] | None = None,
    *,
    last_delivered: int = 0,
    ack_wait_ms: int = 1000,
    max_deliver: int = 3,
) -> ConsumerCursor:
    entries = dict(sorted((pending or {}).items()))
    made = ConsumerCursor(spec(ack_wait_ms=ack_wait_ms, max_deliver=max_deliver), last_delivered, entries)
    made.earliest_redeliver_ms = min((entry.redeliver_at_ms for entry in entries.values()), default=NEVER)
    return made


# -- normalize_consumer_config -------------------------------------------------------------------------


def test_normalize_fills_defaults_and_keeps_the_input() -> None:
    config = consumer_config("work", filter_subject="orders.eu.*")
    effective = normalize(config)
    assert (effective.ack_wait_ms, effective.max_deliver, effective.max_ack_pending) == (
        DEFAULT_ACK_WAIT_MS,
        DEFAULT_MAX_DELIVER,
        DEFAULT_MAX_ACK_PENDING,
    )
    assert (DEFAULT_ACK_WAIT_MS, DEFAULT_MAX_DELIVER, DEFAULT_MAX_ACK_PENDING) == (30_000, 5, 1000)
    assert (effective.name, effective.filter_subject, effective.deliver_policy) == (
        "work",
        "orders.eu.*",
        types_pb2.DELIVER_POLICY_ALL,
    )
    assert (config.ack_wait_ms, config.max_deliver, config.max_ack_pending) == (0, 0, 0)  # not mutated
    assert normalize(effective) == effective  # idempotent: an effective config normalizes to itself


def test_normalize_keeps_explicit_values_and_bounds_are_inclusive() -> None:
    config = consumer_config(
        "w:1_x-y",
        filter_subject="orders.>",
        deliver_policy="by_start_seq",
        start_seq=42,
        ack_wait_ms=MAX_ACK_WAIT_MS,
        max_deliver=9,
        dead_letter_subject="dlq.work",
        max_ack_pending=MAX_ACK_PENDING,
        deliver_group="grp",
    )
    assert normalize(config) == config
    by_time = consumer_config("t", deliver_policy="by_start_time", start_time_ms=1)
    assert normalize(by_time).start_time_ms == 1


def test_normalize_filter_on_stream_without_subjects_accepts_anything() -> None:
    anything = types_pb2.StreamConfig(name="free")
    assert normalize(consumer_config("c", filter_subject="x.y.>"), anything).filter_subject == "x.y.>"


@pytest.mark.parametrize(
    ("config", "error", "fragment"),
    [
        (consumer_config(""), InvalidNameError, "consumer name"),
        (consumer_config("bad name"), InvalidNameError, "consumer name 'bad name'"),
        (consumer_config("a" * 129), InvalidNameError, "consumer name"),
        (consumer_config("c", filter_subject="orders..x"), InvalidSubjectError, "empty token"),
        (consumer_config("c", filter_subject="orders.>.x"), InvalidSubjectError, "'>' must be the last token"),
        (consumer_config("c", filter_subject="orders.a*"), InvalidSubjectError, "whole tokens"),
        (consumer_config("c", filter_subject="invoices.>"), InvalidConfigError, "filter_subject 'invoices.>'"),
        (
            types_pb2.ConsumerConfig(name="c", deliver_policy=99),  # type: ignore[arg-type]
            InvalidConfigError,
            "deliver_policy: unknown value 99",
        ),
        (consumer_config("c", deliver_policy="by_start_seq"), InvalidConfigError, "start_seq: must be >= 1"),
        (consumer_config("c", start_seq=3), InvalidConfigError, "start_seq: only valid with"),
        (consumer_config("c", deliver_policy="new", start_seq=3), InvalidConfigError, "start_seq: only valid"),
        (consumer_config("c", deliver_policy="by_start_time"), InvalidConfigError, "start_time_ms: must be > 0"),
        (
            consumer_config("c", deliver_policy="by_start_time", start_time_ms=-5),
            InvalidConfigError,
            "start_time_ms: must be > 0",
        ),
        (consumer_config("c", start_time_ms=5), InvalidConfigError, "start_time_ms: only valid with"),
        (
            consumer_config("c", deliver_policy="by_start_seq", start_seq=1, start_time_ms=5),
            InvalidConfigError,
            "start_time_ms: only valid with",
        ),
        (consumer_config("c", ack_wait_ms=MAX_ACK_WAIT_MS + 1), InvalidConfigError, "ack_wait_ms: at most"),
        (
            consumer_config("c", max_ack_pending=MAX_ACK_PENDING + 1),
            InvalidConfigError,
            "max_ack_pending: at most 100000, got 100001",
        ),
        (consumer_config("c", deliver_group="bad group"), InvalidNameError, "deliver_group 'bad group'"),
        (
            consumer_config("c", filter_subject="orders.>", dead_letter_subject="dlq.*"),
            InvalidSubjectError,
            "wildcard",
        ),
        (
            consumer_config("c", filter_subject="orders.>", dead_letter_subject="dlq..x"),
            InvalidSubjectError,
            "empty token",
        ),
        (
            consumer_config("c", filter_subject="orders.>", dead_letter_subject="dead.letters"),
            InvalidConfigError,
            "dead_letter_subject 'dead.letters' matches none of stream 'orders'",
        ),
        (
            consumer_config("c", filter_subject="orders.>", dead_letter_subject="orders.dlq"),
            InvalidConfigError,
            "matches the consumer's own filter 'orders.>'",
        ),
        (
            consumer_config("c", dead_letter_subject="dlq.x"),
            InvalidConfigError,
            "matches the consumer's own filter '(every subject)'",
        ),
    ],
)
def test_normalize_rejects_with_typed_error(
    config: types_pb2.ConsumerConfig, error: type[WeirError], fragment: str
) -> None:
    with pytest.raises(error) as caught:
        normalize(config)
    assert fragment in caught.value.message
    assert type(caught.value) is error


def test_normalize_dead_letter_needs_stream_pattern_hint() -> None:
    with pytest.raises(InvalidConfigError) as caught:
        normalize(consumer_config("c", filter_subject="orders.>", dead_letter_subject="dead.x"))
    assert "add a pattern for it" in caught.value.message


def test_consumer_spec_of_effective_config() -> None:
    effective = normalize(
        consumer_config("c", filter_subject="orders.*", max_deliver=4, dead_letter_subject="dlq.c", ack_wait_ms=250)
    )
    made = ConsumerSpec.of(effective, 11)
    assert (made.name, made.incarnation, made.ack_wait_ms, made.max_deliver) == ("c", 11, 250, 4)
    assert (made.dead_letter_subject, made.max_ack_pending) == ("dlq.c", 1000)
    assert made.accepts is not None
    assert [made.accepts(s) for s in ("orders.a", "orders.a.b", "dlq.c", "orders")] == [True, False, False, False]
    assert ConsumerSpec.of(normalize(consumer_config("all")), 1).accepts is None


# -- scan_due -------------------------------------------------------------------------------------------


def test_scan_due_splits_due_from_not_due_and_sets_earliest_exactly() -> None:
    state = cursor(
        {
            1: Pending(T0, 1, T0 + 500),
            2: Pending(T0, 1, T0 + 100),  # due at exactly now
            3: Pending(T0, 3, T0 + 50),  # exhausted (max_deliver 3)
            4: Pending(T0, 2, T0 + 700),
            5: Pending(T0, 1, T0 + 10),
        },
        last_delivered=5,
    )
    scan = consumers.scan_due(state, T0 + 100, limit=10)
    assert (scan.redeliver, scan.exhausted) == ([2, 5], [3])
    assert state.earliest_redeliver_ms == T0 + 500
    assert state.counts is None  # a scan decides, it changes nothing
    assert sorted(state.pending) == [1, 2, 3, 4, 5]


def test_scan_due_limit_keeps_earliest_at_now_for_what_was_left() -> None:
    state = cursor({seq: Pending(T0, 1, T0 + seq) for seq in range(1, 6)}, last_delivered=5)
    scan = consumers.scan_due(state, T0 + 10, limit=2)
    assert (scan.redeliver, scan.exhausted) == ([1, 2], [])
    assert state.earliest_redeliver_ms == T0 + 10


def test_scan_due_limit_zero_still_reports_every_exhausted() -> None:
    state = cursor(
        {1: Pending(T0, 3, T0), 2: Pending(T0, 1, T0), 3: Pending(T0, 5, T0), 4: Pending(T0, 3, T0 + 99)},
        last_delivered=4,
    )
    scan = consumers.scan_due(state, T0, limit=0)
    assert (scan.redeliver, scan.exhausted) == ([], [1, 3])
    assert state.earliest_redeliver_ms == T0  # seq 2 is due but was not taken


def test_scan_due_everything_taken_means_never() -> None:
    state = cursor({1: Pending(T0, 1, T0), 2: Pending(T0, 1, T0 + 1)}, last_delivered=2)
    scan = consumers.scan_due(state, T0 + 1, limit=5)
    assert scan.redeliver == [1, 2]
    assert state.earliest_redeliver_ms == NEVER


def test_scan_due_trusts_the_earliest_bound() -> None:
    state = cursor({1: Pending(T0, 1, T0)}, last_delivered=1)
    state.earliest_redeliver_ms = T0 + 1  # a bound above now: the scan is skipped
    scan = consumers.scan_due(state, T0, limit=5)
    assert (scan.redeliver, scan.exhausted, state.earliest_redeliver_ms) == ([], [], T0 + 1)
    empty = cursor(last_delivered=3)
    assert consumers.scan_due(empty, T0, 5).redeliver == []
    assert empty.earliest_redeliver_ms == NEVER


# -- settling ------------------------------------------------------------------------------------------


def test_deliver_new_records_pending_totals_and_counts() -> None:
    state = cursor(last_delivered=0, ack_wait_ms=1000)
    consumers.deliver_new(state, 1, T0)
    consumers.deliver_new(state, 4, T0 + 5)
    assert state.pending == {1: Pending(T0, 1, T0 + 1000), 4: Pending(T0 + 5, 1, T0 + 1005)}
    assert state.touched == {1, 4}
    assert state.totals == Counters(delivered=2)
    assert state.counts == CommitCounts(delivered=2)
    assert state.earliest_redeliver_ms == T0 + 1000
    assert state.dirty


def test_redeliver_bumps_count_and_restarts_ack_wait() -> None:
    state = cursor({3: Pending(T0, 1, T0 + 1000)}, last_delivered=3, ack_wait_ms=1000)
    state.earliest_redeliver_ms = NEVER  # as after a scan that took it
    assert consumers.redeliver(state, 3, T0 + 1200) == 2
    assert consumers.redeliver(state, 3, T0 + 2500) == 3
    assert state.pending[3] == Pending(T0 + 2500, 3, T0 + 3500)
    assert state.totals == Counters(redelivered=2)
    assert state.counts == CommitCounts(redelivered=2)
    assert state.earliest_redeliver_ms == T0 + 2200  # a lower bound: the first redelivery's due time
    assert state.touched == {3}


def test_undeliver_takes_back_only_the_delivery_it_names() -> None:
    state = cursor({3: Pending(T0, 1, T0 + 1000), 4: Pending(T0, 2, T0 + 1000)}, last_delivered=5)
    assert consumers.undeliver(state, 3, 1, T0 + 10)  # a first delivery: back to 0, due now
    assert consumers.undeliver(state, 4, 2, T0 + 10)  # a redelivery: back to the delivery before it
    assert state.pending == {3: Pending(T0, 0, T0 + 10), 4: Pending(T0, 1, T0 + 10)}
    assert state.earliest_redeliver_ms == T0 + 10
    assert state.touched == {3, 4}
    assert consumers.scan_due(state, T0 + 10, 10).redeliver == [3, 4]
    assert consumers.redeliver(state, 3, T0 + 20) == 1  # the next delivery has the taken-back one's count
    assert not consumers.undeliver(state, 3, 2, T0 + 30)  # a delivery that is not the pending one
    assert not consumers.undeliver(state, 5, 1, T0 + 30)  # not pending (settled, or never delivered)
    assert not consumers.undeliver(state, 4, 0, T0 + 30)  # 0 names no delivery
    assert state.pending[3] == Pending(T0 + 20, 1, T0 + 1020)
    assert state.totals == Counters(redelivered=1)  # counters count the deliveries the node made


def test_ack_reports_per_seq_and_counts_only_pending() -> None:
    state = cursor({seq: Pending(T0, 1, T0 + 1000) for seq in (2, 3, 5)}, last_delivered=6)
    assert consumers.ack(state, [3, 4, 3, 5, 9]) == [3, None, None, 5, None]
    assert list(state.pending) == [2]
    assert state.touched == {3, 5}
    assert state.totals == Counters(acked=2)
    assert state.counts == CommitCounts(acked=2)
    assert state.ack_floor == 1


def test_ack_of_nothing_pending_leaves_the_cursor_clean() -> None:
    state = cursor({2: Pending(T0, 1, T0 + 1000)}, last_delivered=2)
    assert consumers.ack(state, [1, 7]) == [None, None]
    assert (state.counts, state.touched, state.totals) == (None, set(), Counters())
    assert not state.dirty


def test_nak_term_in_progress_forget() -> None:
    state = cursor({seq: Pending(T0, 2, T0 + 1000) for seq in (1, 2, 3, 4)}, last_delivered=4, ack_wait_ms=1000)
    consumers.nak(state, 1, T0 + 10, 0)
    consumers.nak(state, 2, T0 + 10, 5000)
    assert (state.pending[1], state.pending[2]) == (Pending(T0, 2, T0 + 10), Pending(T0, 2, T0 + 5010))
    assert state.earliest_redeliver_ms == T0 + 10
    assert consumers.in_progress(state, 3, T0 + 400) == T0 + 1400
    assert state.pending[3] == Pending(T0, 2, T0 + 1400)  # deliver_count and delivered_at unchanged
    consumers.term(state, 4)
    assert 4 not in state.pending
    forgotten = consumers.forget(state, 1)
    assert forgotten == Pending(T0, 2, T0 + 10)
    assert list(state.pending) == [2, 3]
    assert state.totals == Counters(termed=1)  # forget changes no total
    assert state.counts == CommitCounts(naked=2, termed=1, in_progress=1)
    assert state.touched == {1, 2, 3, 4}
    for call in (
        lambda: consumers.nak(state, 9, T0, 0),
        lambda: consumers.term(state, 4),
        lambda: consumers.in_progress(state, 1, T0),
        lambda: consumers.forget(state, 1),
    ):
        with pytest.raises(KeyError):
            call()
    state.reset_commit()
    assert state.touched == set()
    assert state.counts is None
    assert not state.dirty


def test_ack_floor_and_interest_keep_from() -> None:
    state = cursor({5: Pending(T0, 1, T0), 8: Pending(T0, 1, T0)}, last_delivered=9)
    assert state.ack_floor == 4
    consumers.ack(state, [5])
    assert state.ack_floor == 7
    consumers.ack(state, [8])
    assert state.ack_floor == 9  # nothing pending: the floor is last_delivered
    slow = cursor({3: Pending(T0, 1, T0)}, last_delivered=3)
    assert consumers.interest_keep_from([state, slow], last_seq=12) == 3
    assert consumers.interest_keep_from([state], last_seq=12) == 10
    assert consumers.interest_keep_from([], last_seq=12) == 13


def test_not_pending_reason_names_the_case() -> None:
    state = cursor({2: Pending(T0, 1, T0)}, last_delivered=4)
    assert consumers.not_pending_reason(state, 5) == (
        "seq 5 was never delivered to consumer 'c' (last delivered seq is 4)"
    )
    assert "seq 3 is not pending for consumer 'c': it was already acknowledged" in consumers.not_pending_reason(
        state, 3
    )


def test_dead_letter_message_keeps_payload_headers_and_names_origin() -> None:
    original = types_pb2.Message(
        seq=17,
        subject="orders.eu.1",
        ts_ms=T0 + 3,
        payload=b"\x00body",
        partition=2,
        deliver_count=5,
        headers=[types_pb2.Header(key="trace", value="abc"), types_pb2.Header(key="trace", value="def")],
    )
    message = consumers.dead_letter_message(
        original, stream="orders", consumer="work", subject="dlq.work", deliver_count=5
    )
    assert (message.subject, message.payload, message.partition) == ("dlq.work", b"\x00body", 2)
    assert (message.seq, message.ts_ms, message.deliver_count) == (0, 0, 0)  # set by the caller
    assert [(h.key, h.value) for h in message.headers] == [
        ("trace", "abc"),
        ("trace", "def"),
        ("x-weir-dlq-stream", "orders"),
        ("x-weir-dlq-partition", "2"),
        ("x-weir-dlq-seq", "17"),
        ("x-weir-dlq-subject", "orders.eu.1"),
        ("x-weir-dlq-ts-ms", str(T0 + 3)),
        ("x-weir-dlq-consumer", "work"),
        ("x-weir-dlq-deliver-count", "5"),
        ("x-weir-dlq-reason", "max_deliver"),
    ]
    assert len(original.headers) == 2  # the original is not changed


# -- property: cursor invariants ---------------------------------------------------------------------

Op = tuple[str, int, int]  # (kind, pick, amount)
OPS = st.lists(
    st.tuples(
        st.sampled_from(["deliver", "ack", "nak", "term", "redeliver", "advance"]),
        st.integers(0, 50),
        st.integers(0, 3000),
    ),
    max_size=80,
)


def check_invariants(state: ConsumerCursor, model: dict[int, int], now: int) -> None:
    seqs = list(state.pending)
    assert seqs == sorted(seqs)
    assert set(seqs) == set(model)
    assert all(seq <= state.last_delivered for seq in seqs)
    if seqs:
        assert state.ack_floor < min(seqs)
        assert state.ack_floor == min(seqs) - 1
    else:
        assert state.ack_floor == state.last_delivered
    assert all(state.pending[seq].deliver_count == count for seq, count in model.items())
    # fetch skips the pending scan while earliest_redeliver_ms > now: it must never hide a due entry
    # (a scan that left a due entry behind may set it to the scan's `now`, which time only passes)
    assert all(state.earliest_redeliver_ms <= max(now, entry.redeliver_at_ms) for entry in state.pending.values())
    totals = state.totals
    assert totals.delivered == totals.acked + totals.termed + len(seqs)


@settings(max_examples=300, deadline=None)
@given(ops=OPS)
def test_cursor_invariants_hold_for_any_sequence(ops: list[Op]) -> None:
    state = cursor(last_delivered=0, ack_wait_ms=1000, max_deliver=1000)
    model: dict[int, int] = {}  # seq -> deliver_count
    now = T0
    for kind, pick, amount in ops:
        pending = sorted(model)
        chosen = pending[pick % len(pending)] if pending else state.last_delivered + 1 + pick % 3
        if kind == "deliver":
            # the partition delivers the next matching seqs, possibly skipping some
            for seq in range(state.last_delivered + 1 + pick % 3, state.last_delivered + 2 + pick % 3 + amount % 4):
                consumers.deliver_new(state, seq, now)
                state.last_delivered = seq
                model[seq] = 1
        elif kind == "ack":
            result = consumers.ack(state, [chosen])
            assert result == [chosen if chosen in model else None]
            model.pop(chosen, None)
        elif kind == "nak" and chosen in model:
            consumers.nak(state, chosen, now, amount)
        elif kind == "term" and chosen in model:
            consumers.term(state, chosen)
            del model[chosen]
        elif kind == "redeliver":
            scan = consumers.scan_due(state, now, limit=pick % 5)
            assert scan.exhausted == []
            assert scan.redeliver == sorted(scan.redeliver)
            for seq in scan.redeliver:
                assert state.pending[seq].redeliver_at_ms <= now
                model[seq] = consumers.redeliver(state, seq, now)
        elif kind == "advance":
            now += amount
        check_invariants(state, model, now)
        state.reset_commit()


# -- plan_retention: interest and consumer removals -----------------------------------------------------


Row = tuple[int, str, int, int]  # (seq, subject, size, ts_ms)


def plan(
    stored: list[Row],
    new: Sequence[Row] = (),
    *,
    bounds: LimitsBounds | None = None,
    keep_from_seq: int = 0,
    removals: dict[str, list[int]] | None = None,
    first_seq: int | None = None,
) -> RetentionPlan:
    rows = {seq: RowInfo(seq, size, ts) for seq, _, size, ts in stored}
    subjects = {seq: subject for seq, subject, _, _ in stored}

    def oldest(from_seq: int, limit: int) -> list[RowInfo]:
        return [rows[s] for s in sorted(rows) if s >= from_seq][:limit]

    def subject_excess(subject: str, keep: int) -> list[RowInfo]:
        mine = [rows[s] for s in sorted(rows) if subjects[s] == subject]
        return mine[: max(0, len(mine) - keep)]

    return plan_retention(
        bounds=bounds or LimitsBounds(),
        now_ms=10_000,
        stored_count=len(stored),
        stored_bytes=sum(size for _, _, size, _ in stored),
        first_seq=first_seq if first_seq is not None else (min(rows) if rows else 1),
        new_rows=[NewRow(seq, size, ts, subject) for seq, subject, size, ts in new],
        oldest=oldest,
        subject_excess=subject_excess,
        keep_from_seq=keep_from_seq,
        removals={
            reason: [RowInfo(seq, rows[seq].size if seq in rows else 1, 0) for seq in seqs]
            for reason, seqs in (removals or {}).items()
        },
    )


def rows_of(*sizes: int, subject: str = "a", start: int = 1) -> list[Row]:
    return [(start + index, subject, size, 0) for index, size in enumerate(sizes)]


def test_interest_removes_the_prefix_below_keep_from() -> None:
    result = plan(rows_of(10, 20, 30, 40, 50), keep_from_seq=4)
    assert (result.truncate_before, result.truncated_count, result.truncated_bytes) == (4, 3, 60)
    assert result.truncate_reason == "interest"
    assert (result.remove_seqs, result.consumer_removals) == ([], {})
    assert (result.removed_count, result.total_removed_bytes) == (3, 60)


def test_interest_at_or_below_first_seq_removes_nothing() -> None:
    for keep_from in (0, 1, 3):
        result = plan(rows_of(10, 20, start=3), keep_from_seq=keep_from)
        assert (result.removed_count, result.truncate_before, result.truncate_reason) == (0, 0, "")


def test_interest_includes_new_rows_of_the_same_commit() -> None:
    result = plan(rows_of(10, 20), rows_of(5, 7, 9, start=3), keep_from_seq=5)
    assert (result.truncate_before, result.truncated_count, result.truncated_bytes) == (5, 4, 42)
    assert result.truncate_reason == "interest"


def test_interest_without_consumers_removes_everything_including_new_rows() -> None:
    # no consumers: keep_from = last_seq + 1
    result = plan(rows_of(10), rows_of(3, 4, start=2), keep_from_seq=4)
    assert (result.truncate_before, result.truncated_count, result.truncated_bytes) == (4, 3, 17)
    only_new = plan([], rows_of(3, 4), keep_from_seq=3)
    assert (only_new.truncate_before, only_new.truncated_count, only_new.truncated_bytes) == (3, 2, 7)


def test_interest_and_limits_the_first_reason_names_the_truncation() -> None:
    result = plan(rows_of(1, 1, 1, 1, 1), bounds=LimitsBounds(max_msgs=4), keep_from_seq=4)
    assert (result.truncate_before, result.truncated_count, result.truncate_reason) == (4, 3, "max_msgs")
    bigger = plan(rows_of(1, 1, 1, 1, 1), bounds=LimitsBounds(max_msgs=1), keep_from_seq=2)
    assert (bigger.truncate_before, bigger.truncated_count, bigger.truncate_reason) == (5, 4, "max_msgs")


def test_removals_by_reason_are_counted_exactly() -> None:
    stored = rows_of(10, 20, 30, 40, 50)
    result = plan(stored, removals={"work_queue_ack": [2, 4], "dead_letter": [5]})
    assert {reason: [r.seq for r in rows] for reason, rows in result.consumer_removals.items()} == {
        "work_queue_ack": [2, 4],
        "dead_letter": [5],
    }
    assert (result.consumer_removed_count, result.consumer_removed_bytes) == (3, 110)
    assert (result.removed_count, result.total_removed_bytes) == (3, 110)
    assert sorted(result.all_remove_seqs()) == [2, 4, 5]
    assert (result.truncate_before, result.remove_seqs) == (0, [])


def test_removals_below_first_seq_and_duplicates_are_ignored() -> None:
    stored = rows_of(10, 20, 30, start=4)
    result = plan(stored, removals={"work_queue_ack": [1, 3, 4, 4], "dead_letter": [4, 6]})
    assert {reason: [r.seq for r in rows] for reason, rows in result.consumer_removals.items()} == {
        "work_queue_ack": [4],
        "dead_letter": [6],
    }
    assert (result.consumer_removed_count, result.consumer_removed_bytes) == (2, 40)
    empty = plan(stored, removals={"work_queue_ack": [2]})
    assert (empty.consumer_removals, empty.removed_count) == ({}, 0)


def test_removals_count_as_gone_for_max_msgs_and_max_bytes() -> None:
    stored = rows_of(10, 10, 10, 10, 10)
    within = plan(stored, bounds=LimitsBounds(max_msgs=4), removals={"work_queue_ack": [3]})
    assert (within.truncate_before, within.removed_count) == (0, 1)
    within_bytes = plan(stored, bounds=LimitsBounds(max_bytes=40), removals={"work_queue_ack": [5]})
    assert (within_bytes.truncate_before, within_bytes.removed_count) == (0, 1)
    # One more than the bound: the oldest remaining goes, skipping the already removed seq 1.
    over = plan(stored, rows_of(10, start=6), bounds=LimitsBounds(max_msgs=4), removals={"dead_letter": [1]})
    assert (over.truncate_before, over.truncated_count, over.truncated_bytes) == (3, 1, 10)
    assert (over.removed_count, over.total_removed_bytes) == (2, 20)


def test_removals_inside_an_interest_prefix_are_not_counted_twice() -> None:
    result = plan(rows_of(10, 20, 30, 40, 50), keep_from_seq=4, removals={"work_queue_ack": [2, 5]})
    assert (result.truncate_before, result.truncated_count, result.truncated_bytes) == (4, 2, 40)
    assert (result.consumer_removed_count, result.consumer_removed_bytes) == (2, 70)
    assert (result.removed_count, result.total_removed_bytes) == (4, 110)


def test_removals_and_max_msgs_per_subject_do_not_double_count() -> None:
    stored = [(1, "kv.a", 5, 0), (2, "kv.b", 6, 0), (3, "kv.a", 7, 0)]
    result = plan(
        stored,
        [(4, "kv.a", 8, 0)],
        bounds=LimitsBounds(max_msgs_per_subject=1),
        removals={"work_queue_ack": [1]},
    )
    assert result.remove_seqs == [3]  # seq 1 is already a consumer removal
    assert result.removed_bytes == 7
    assert [r.seq for r in result.consumer_removals["work_queue_ack"]] == [1]
    assert (result.removed_count, result.total_removed_bytes) == (2, 12)
    assert sorted(result.all_remove_seqs()) == [1, 3]
