"""The spark-analytics service's pure decisions, tested without Spark, processes or network.

- `offsets`: parsing and checking startingOffsets, where a query starts, how far the next
  micro-batch reads (with a maxChangesPerTrigger budget shared over the nodes) and how a batch's
  ranges are cut into input partitions;
- `state`: folding each batch's aggregates into the running `ClusterStats` and deriving the
  published weir.v1.ClusterAnalytics (publish totals and rates, consumer lag, replication lag,
  node loads and skew, feed coverage), and saving / restoring it as JSON;
- `rows.change_row`: a weir.v1.Change flattened to the source's row;
- `feed.parse_addresses` / `feed.parse_static_nodes`.

Every figure is asserted exactly, from small hand-built batches whose expected values are worked
out in the test.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from weir.errors import InvalidArgumentError
from weir.v1 import types_pb2
from weir_analytics import rows
from weir_analytics.feed import FeedNode, parse_addresses, parse_static_nodes
from weir_analytics.offsets import (
    FIRST_CHANGE_SEQ,
    FeedRange,
    batch_watermark,
    initial_offsets,
    join_offset,
    latest_offsets,
    next_watermarks,
    parse_starting_offsets,
    plan_ranges,
    split_offset,
    validate_offsets,
)
from weir_analytics.state import (
    BatchAggregates,
    ClusterStats,
    ConsumerDelta,
    ConsumerWindow,
    FeedCoverage,
    LifecycleEvent,
    PublishWindow,
    ReplicaDelta,
)

PRIMARY_ROLE = types_pb2.PARTITION_ROLE_PRIMARY
SECONDARY_ROLE = types_pb2.PARTITION_ROLE_SECONDARY

# ---------------------------------------------------------------------------------------------------
# offsets: parsing and validation
# ---------------------------------------------------------------------------------------------------


def test_parse_starting_offsets_keywords_and_object() -> None:
    assert parse_starting_offsets("earliest") == "earliest"
    assert parse_starting_offsets("  latest\n") == "latest"
    assert parse_starting_offsets(' {"node-1": 7, "node-2": 1} ') == {"node-1": 7, "node-2": 1}
    assert parse_starting_offsets("{}") == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", 'startingOffsets: expected "earliest", "latest" or a JSON object'),
        ("{node: 1}", "got '{node: 1}'"),
        ("[1, 2]", "startingOffsets: expected a JSON object {node_id: change_seq}, got [1, 2]"),
        ("5", "startingOffsets: expected a JSON object {node_id: change_seq}, got 5"),
        ('"earliest"', "startingOffsets: expected a JSON object {node_id: change_seq}, got 'earliest'"),
        ('{"n1": 0}', "startingOffsets: n1: change seq must be an integer >= 1, got 0"),
        ('{"n1": true}', "startingOffsets: n1: change seq must be an integer >= 1, got True"),
        ('{"n1": -3}', "startingOffsets: n1: change seq must be an integer >= 1, got -3"),
        ('{"n1": 2.5}', "startingOffsets: n1: change seq must be an integer >= 1, got 2.5"),
        ('{"n1": "4"}', "startingOffsets: n1: change seq must be an integer >= 1, got '4'"),
        ('{"n1": null}', "startingOffsets: n1: change seq must be an integer >= 1, got None"),
        ('{"": 3}', "startingOffsets: node ids must be non-empty strings, got ''"),
    ],
)
def test_parse_starting_offsets_errors_name_the_problem(text: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        parse_starting_offsets(text)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([["n1", 1]], "start offset: expected a JSON object {node_id: change_seq}, got [['n1', 1]]"),
        (None, "start offset: expected a JSON object {node_id: change_seq}, got None"),
        ({1: 2}, "start offset: node ids must be non-empty strings, got 1"),
        ({"": 2}, "start offset: node ids must be non-empty strings, got ''"),
        ({"n1": 0}, "start offset: n1: change seq must be an integer >= 1, got 0"),
        ({"n1": False}, "start offset: n1: change seq must be an integer >= 1, got False"),
        ({"n1": True}, "start offset: n1: change seq must be an integer >= 1, got True"),
        ({"n1": 3, "n2": -1}, "start offset: n2: change seq must be an integer >= 1, got -1"),
    ],
)
def test_validate_offsets_errors_name_the_problem(value: object, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        validate_offsets(value, "start offset")


def test_validate_offsets_default_label_and_valid_value() -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape("offset: n1: change seq must be an integer >= 1")):
        validate_offsets({"n1": 0})
    checked = validate_offsets({"n1": 1, "n2": 2**40})
    assert checked == {"n1": 1, "n2": 2**40}
    assert type(checked) is dict


# ---------------------------------------------------------------------------------------------------
# offsets: where a query starts and how far a batch reads
# ---------------------------------------------------------------------------------------------------


def test_initial_offsets_earliest_latest_and_explicit() -> None:
    horizons = {"n2": 0, "n1": 10, "n3": 4}
    earliest = initial_offsets("earliest", horizons)
    assert earliest == {"n1": 1, "n2": 1, "n3": 1}
    assert list(earliest) == ["n1", "n2", "n3"]
    latest = initial_offsets("latest", horizons)
    assert latest == {"n1": 11, "n2": 1, "n3": 5}
    assert list(latest) == ["n1", "n2", "n3"]
    # named nodes as given (even one no node answered for), unnamed ones at their first change
    explicit = initial_offsets({"n3": 3, "n9": 7}, horizons)
    assert explicit == {"n1": FIRST_CHANGE_SEQ, "n2": FIRST_CHANGE_SEQ, "n3": 3, "n9": 7}
    assert list(explicit) == ["n1", "n2", "n3", "n9"]
    assert initial_offsets("earliest", {}) == {}


def test_latest_offsets_without_budget_reads_to_each_horizon() -> None:
    start = {"a": 3, "b": 5, "d": 9, "e": 4}
    # a: behind; b: caught up (horizon 4 = start - 1); c: new with changes; d: did not answer;
    # e: its horizon is below its start (never goes back); f: new with an empty feed
    horizons = {"a": 10, "b": 4, "c": 7, "e": 1, "f": 0}
    end = latest_offsets(start, horizons, None)
    assert end == {"a": 11, "b": 5, "c": 8, "d": 9, "e": 4, "f": 1}
    assert list(end) == ["a", "b", "c", "d", "e", "f"]
    # the input is not modified
    assert start == {"a": 3, "b": 5, "d": 9, "e": 4}


def test_latest_offsets_budget_is_shared_and_leftovers_go_to_other_nodes() -> None:
    start = {"a": 1, "b": 1, "c": 1}
    horizons = {"a": 100, "b": 2, "c": 100}
    # 10 // 3 = 3 each (b needs only 2), then the 2 left: 1 each to a and c
    assert latest_offsets(start, horizons, 10) == {"a": 5, "b": 3, "c": 5}
    # one node with nothing to read leaves the whole budget to the other
    assert latest_offsets({"a": 101, "b": 1}, {"a": 100, "b": 50}, 30) == {"a": 101, "b": 31}
    # a budget larger than the backlog reads everything
    assert latest_offsets(start, horizons, 1_000) == {"a": 101, "b": 3, "c": 101}
    # a budget smaller than the number of nodes still never reads more than the budget
    end = latest_offsets(start, horizons, 2)
    assert sum(end[node] - start[node] for node in end) == 2
    # a new node starts at its first change and takes its share
    assert latest_offsets({"a": 1}, {"a": 100, "z": 100}, 10) == {"a": 6, "z": 6}
    # a node that did not answer keeps its start and takes no share
    assert latest_offsets({"a": 1, "b": 1}, {"a": 100}, 10) == {"a": 11, "b": 1}


NODE_IDS = ("a", "b", "c", "d", "e")


@st.composite
def feed_positions(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, int]]:
    start = draw(st.dictionaries(st.sampled_from(NODE_IDS), st.integers(1, 80)))
    horizons = draw(st.dictionaries(st.sampled_from(NODE_IDS), st.integers(0, 80)))
    return start, horizons


def _wanted(start: dict[str, int], horizons: dict[str, int]) -> dict[str, int]:
    return {node: max(0, horizon + 1 - start.get(node, FIRST_CHANGE_SEQ)) for node, horizon in horizons.items()}


@settings(max_examples=300, deadline=None)
@given(feed_positions(), st.integers(1, 40))
def test_latest_offsets_budget_loop_loses_nothing(
    positions: tuple[dict[str, int], dict[str, int]], budget: int
) -> None:
    start, horizons = positions
    wanted = _wanted(start, horizons)
    remaining = sum(wanted.values())
    expected = {node: start.get(node, FIRST_CHANGE_SEQ) for node in {*start, *horizons}}
    for node, count in wanted.items():
        expected[node] += count
    current = dict(start)
    calls = 0
    while True:
        end = latest_offsets(current, horizons, budget)
        assert set(end) == set(current) | set(horizons)
        assert all(end[node] >= current.get(node, FIRST_CHANGE_SEQ) for node in end)
        assert all(end[node] == current[node] for node in current if node not in horizons)
        assert all(end[node] <= max(current.get(node, 1), horizons[node] + 1) for node in horizons)
        read = sum(end[node] - current.get(node, FIRST_CHANGE_SEQ) for node in end)
        # never over the budget, and the whole budget is used while there is enough to read
        assert read == min(budget, remaining)
        remaining -= read
        current = end
        if read == 0:
            break
        calls += 1
    assert current == expected
    assert all(current[node] == horizons[node] + 1 for node in horizons if wanted[node])
    assert calls == math.ceil(sum(wanted.values()) / budget)


@settings(max_examples=300, deadline=None)
@given(feed_positions(), st.integers(1, 40))
def test_latest_offsets_budget_is_shared_evenly(positions: tuple[dict[str, int], dict[str, int]], budget: int) -> None:
    """Water-filling: a node that did not get all it wanted got at most 1 less than any other node."""
    start, horizons = positions
    wanted = _wanted(start, horizons)
    end = latest_offsets(start, horizons, budget)
    granted = {node: end[node] - start.get(node, FIRST_CHANGE_SEQ) for node in horizons}
    for node, count in granted.items():
        assert 0 <= count <= wanted[node]
        if count < wanted[node]:
            assert all(count >= other - 1 for other in granted.values())


def test_plan_ranges_cuts_each_node_into_pieces() -> None:
    start = {"a": 1, "b": 5, "z": 4}
    end = {"c": 3, "a": 8, "b": 5}
    assert plan_ranges(start, end, 3) == [
        FeedRange("a", 1, 4),
        FeedRange("a", 4, 7),
        FeedRange("a", 7, 8),
        FeedRange("c", 1, 3),
    ]
    assert plan_ranges(start, end, 100) == [FeedRange("a", 1, 8), FeedRange("c", 1, 3)]
    assert plan_ranges({"a": 4}, {"a": 4}, 1) == []


@pytest.mark.parametrize("per_partition", [0, -1])
def test_plan_ranges_refuses_fewer_than_one_change_per_partition(per_partition: int) -> None:
    with pytest.raises(
        InvalidArgumentError, match=re.escape(f"changes per partition must be >= 1, got {per_partition}")
    ):
        plan_ranges({"a": 1}, {"a": 10}, per_partition)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from(NODE_IDS), st.tuples(st.integers(1, 200), st.integers(0, 200))),
    st.integers(1, 50),
)
def test_plan_ranges_tiles_every_range_exactly(bounds: dict[str, tuple[int, int]], per_partition: int) -> None:
    start = {node: begin for node, (begin, _) in bounds.items()}
    end = {node: begin + length for node, (begin, length) in bounds.items()}
    ranges = plan_ranges(start, end, per_partition)
    assert [piece.node_id for piece in ranges] == sorted(piece.node_id for piece in ranges)
    for node in bounds:
        pieces = [piece for piece in ranges if piece.node_id == node]
        assert all(1 <= piece.end - piece.start <= per_partition for piece in pieces)
        cursor = start[node]
        for piece in pieces:
            assert piece.start == cursor
            cursor = piece.end
        assert cursor == end[node]
        assert len(pieces) == math.ceil((end[node] - start[node]) / per_partition)


# ---------------------------------------------------------------------------------------------------
# state: helpers
# ---------------------------------------------------------------------------------------------------

S = "orders"


def replica(
    node_id: str,
    partition: int = 0,
    *,
    stream: str = S,
    role: str = rows.PRIMARY,
    ts: int = 1_000,
    last_seq: int = 0,
    first_seq: int = 0,
    appended: tuple[int, int] = (0, 0),
    removed: tuple[int, int] = (0, 0),
    published: tuple[int, int] | None = None,
) -> ReplicaDelta:
    """A ReplicaDelta; `published` defaults to `appended` on a primary and to nothing on a secondary."""
    if published is None:
        published = appended if role == rows.PRIMARY else (0, 0)
    return ReplicaDelta(
        node_id=node_id,
        stream=stream,
        partition=partition,
        role=role,
        last_ts_ms=ts,
        last_seq=last_seq,
        first_seq=first_seq,
        appended_messages=appended[0],
        appended_bytes=appended[1],
        removed_messages=removed[0],
        removed_bytes=removed[1],
        published_messages=published[0],
        published_bytes=published[1],
    )


def consumer(
    consumer_name: str,
    partition: int = 0,
    *,
    stream: str = S,
    node_id: str = "n1",
    ts: int = 1_000,
    ack_floor: int = 0,
    last_delivered: int = 0,
    pending: int = 0,
    **counts: int,
) -> ConsumerDelta:
    return ConsumerDelta(
        node_id=node_id,
        stream=stream,
        consumer=consumer_name,
        partition=partition,
        last_ts_ms=ts,
        ack_floor=ack_floor,
        last_delivered=last_delivered,
        pending_count=pending,
        **counts,
    )


def event(node_id: str, kind: str, ts: int, *, stream: str = S, seq: int = 1, **fields: Any) -> LifecycleEvent:
    return LifecycleEvent(node_id=node_id, change_seq=seq, ts_ms=ts, kind=kind, stream=stream, **fields)


def batch(batch_id: int, **parts: Any) -> BatchAggregates:
    parts.setdefault("end_offsets", {})
    return BatchAggregates(batch_id=batch_id, **parts)


def fold(*batches: BatchAggregates, window_ms: int = 10_000, windows_kept: int = 60) -> ClusterStats:
    stats = ClusterStats(window_ms=window_ms, windows_kept=windows_kept)
    for item in batches:
        stats.apply(item)
    return stats


def partitions_of(out: types_pb2.ClusterAnalytics) -> dict[tuple[str, int], types_pb2.AnalyticsPartition]:
    return {(entry.stream, entry.partition): entry for entry in out.partitions}


def replicas_of(out: types_pb2.ClusterAnalytics) -> dict[tuple[str, int, str], types_pb2.AnalyticsReplica]:
    return {(entry.stream, entry.partition, entry.node_id): entry for entry in out.replicas}


def consumers_of(out: types_pb2.ClusterAnalytics) -> dict[tuple[str, str], types_pb2.AnalyticsConsumer]:
    return {(entry.stream, entry.consumer): entry for entry in out.consumers}


def nodes_of(out: types_pb2.ClusterAnalytics) -> dict[str, types_pb2.AnalyticsNode]:
    return {entry.node_id: entry for entry in out.nodes}


# ---------------------------------------------------------------------------------------------------
# state: folding
# ---------------------------------------------------------------------------------------------------


def test_apply_refuses_a_batch_at_or_below_the_current_one() -> None:
    stats = fold(batch(0, replicas=[replica("n1", last_seq=5, appended=(5, 50))]))
    assert stats.batch_id == 0
    replay = batch(0, replicas=[replica("n1", last_seq=5, appended=(5, 50))])
    with pytest.raises(ValueError, match=re.escape("batch 0 was already folded in (state is at batch 0)")):
        stats.apply(replay)
    stats.apply(batch(3))
    for stale in (3, 2, 0, -1):
        with pytest.raises(ValueError, match=f"batch {stale} was already folded in"):
            stats.apply(batch(stale, replicas=[replica("n1", last_seq=9, appended=(4, 40))]))
    assert stats.batch_id == 3
    out = stats.snapshot(0)
    assert out.batch_id == 3
    assert partitions_of(out)[(S, 0)].published_messages == 5
    assert replicas_of(out)[(S, 0, "n1")].message_count == 5


def test_snapshot_of_an_empty_state() -> None:
    out = ClusterStats().snapshot(25_000)
    assert out.batch_id == 0
    assert out.computed_at_ms == 25_000
    assert out.window_ms == 10_000
    assert out.window_start_ms == 10_000
    assert list(out.partitions) == []
    assert list(out.nodes) == []
    assert out.skew_partitions == 0


def test_published_counts_only_primary_deltas() -> None:
    stats = fold(
        batch(
            1,
            end_offsets={"n1": 2, "n2": 2, "n3": 2},
            replicas=[
                replica("n1", role=rows.PRIMARY, last_seq=10, appended=(10, 1_000)),
                # the secondaries' appends are replication: counted for their copy only
                replica("n2", role=rows.SECONDARY, last_seq=10, appended=(10, 1_000)),
                replica("n3", role=rows.SECONDARY, last_seq=8, appended=(8, 800)),
            ],
        ),
        batch(2, replicas=[replica("n1", ts=2_000, last_seq=12, appended=(2, 300))]),
    )
    out = stats.snapshot(0)
    partition = partitions_of(out)[(S, 0)]
    assert (partition.published_messages, partition.published_bytes) == (12, 1_300)
    assert partition.primary_node_id == "n1"
    assert partition.last_seq == 12
    nodes = nodes_of(out)
    assert (nodes["n1"].published_messages, nodes["n1"].published_bytes) == (12, 1_300)
    assert (nodes["n2"].published_messages, nodes["n2"].published_bytes) == (0, 0)
    assert (nodes["n3"].published_messages, nodes["n3"].published_bytes) == (0, 0)
    copies = replicas_of(out)
    assert [(copies[(S, 0, n)].message_count, copies[(S, 0, n)].bytes) for n in ("n1", "n2", "n3")] == [
        (12, 1_300),
        (10, 1_000),
        (8, 800),
    ]


def test_published_figures_are_taken_as_given_not_recomputed_from_role() -> None:
    # published_* is what the node appended while primary, whatever its role at the batch's end
    stats = fold(
        batch(1, replicas=[replica("n1", role=rows.SECONDARY, last_seq=7, appended=(7, 70), published=(3, 30))])
    )
    out = stats.snapshot(0)
    assert partitions_of(out)[(S, 0)].published_messages == 3
    assert partitions_of(out)[(S, 0)].published_bytes == 30
    assert nodes_of(out)["n1"].published_messages == 3


def test_replica_message_count_and_bytes_are_appended_minus_removed() -> None:
    stats = fold(
        batch(1, replicas=[replica("n1", last_seq=10, appended=(10, 1_000))]),
        batch(2, replicas=[replica("n1", ts=2_000, last_seq=12, first_seq=5, appended=(2, 200), removed=(4, 400))]),
        batch(3, replicas=[replica("n1", ts=3_000, removed=(1, 150))]),
    )
    copy = replicas_of(stats.snapshot(0))[(S, 0, "n1")]
    assert (copy.message_count, copy.bytes) == (7, 650)
    assert copy.last_seq == 12
    assert stats.first_seq_of(S, 0) == 5
    # removals never drive a copy below zero
    stats.apply(batch(4, replicas=[replica("n1", ts=4_000, removed=(100, 10_000))]))
    copy = replicas_of(stats.snapshot(0))[(S, 0, "n1")]
    assert (copy.message_count, copy.bytes) == (0, 0)


def test_replication_lag_per_copy_and_zero_on_the_primary() -> None:
    stats = fold(
        batch(
            1,
            replicas=[
                replica("n1", last_seq=10, appended=(10, 100)),
                replica("n2", role=rows.SECONDARY, last_seq=7, appended=(7, 70)),
                replica("n3", role=rows.SECONDARY, last_seq=10, appended=(10, 100)),
                # partition 1: the primary is behind a secondary (after a failover): still lag 0
                replica("n2", 1, last_seq=4, appended=(4, 40)),
                replica("n3", 1, role=rows.SECONDARY, last_seq=6, appended=(6, 60)),
                replica("n1", 1, role=rows.SECONDARY, last_seq=1, appended=(1, 10)),
            ],
        )
    )
    copies = replicas_of(stats.snapshot(0))
    lag = {key: (entry.role, entry.last_seq, entry.lag_messages) for key, entry in copies.items()}
    assert lag == {
        (S, 0, "n1"): (PRIMARY_ROLE, 10, 0),
        (S, 0, "n2"): (SECONDARY_ROLE, 7, 3),
        (S, 0, "n3"): (SECONDARY_ROLE, 10, 0),
        (S, 1, "n1"): (SECONDARY_ROLE, 1, 5),
        (S, 1, "n2"): (PRIMARY_ROLE, 4, 0),
        (S, 1, "n3"): (SECONDARY_ROLE, 6, 0),
    }
    assert [(entry.stream, entry.partition, entry.node_id) for entry in stats.snapshot(0).replicas] == sorted(copies)
    assert partitions_of(stats.snapshot(0))[(S, 1)].last_seq == 6


def test_primary_of_picks_the_most_recent_primary_after_a_failover() -> None:
    stats = fold(
        batch(
            1,
            replicas=[
                replica("n1", ts=1_000, last_seq=10, appended=(10, 100)),
                replica("n2", role=rows.SECONDARY, ts=1_000, last_seq=10, appended=(10, 100)),
            ],
        ),
        # n1 went away (its copy still says primary); n2 was promoted and took publishes
        batch(2, replicas=[replica("n2", ts=5_000, last_seq=13, appended=(3, 30))]),
    )
    assert stats.replicas[(S, 0, "n1")].role == rows.PRIMARY
    assert stats.primary_of(S, 0) == "n2"
    assert stats.primary_of(S, 9) == ""
    assert stats.primary_of("other", 0) == ""
    out = stats.snapshot(0)
    assert partitions_of(out)[(S, 0)].primary_node_id == "n2"
    assert partitions_of(out)[(S, 0)].published_messages == 13
    copies = replicas_of(out)
    assert (copies[(S, 0, "n1")].role, copies[(S, 0, "n1")].lag_messages) == (SECONDARY_ROLE, 3)
    assert (copies[(S, 0, "n2")].role, copies[(S, 0, "n2")].lag_messages) == (PRIMARY_ROLE, 0)
    nodes = nodes_of(out)
    assert (nodes["n1"].partitions_led, nodes["n2"].partitions_led) == (0, 1)
    assert (nodes["n2"].message_count, nodes["n2"].bytes) == (13, 130)
    # an older delta (read late from the old primary) does not take the role back
    stats.apply(batch(3, replicas=[replica("n1", ts=900, last_seq=10)]))
    assert stats.primary_of(S, 0) == "n2"


def test_consumer_lag_sums_last_seq_minus_floor_over_partitions() -> None:
    stats = fold(
        batch(
            1,
            lifecycle=[event("n1", rows.STREAM_CREATED, 500, partitions=3)],
            replicas=[
                replica("n1", 0, last_seq=100, appended=(100, 1_000)),
                # partition 1 was truncated up to seq 30: first_seq 31
                replica("n2", 1, last_seq=50, first_seq=31, appended=(50, 500), removed=(30, 300)),
                replica("n3", 2, last_seq=20, appended=(20, 200)),
            ],
            consumers=[
                consumer("c", 0, ack_floor=40, last_delivered=45, pending=5, delivered=45, acked=40),
                # an ack floor below the truncation point counts from first_seq - 1
                consumer("c", 1, node_id="n2", ack_floor=10, last_delivered=12, pending=2, delivered=12, acked=10),
                # partition 2: no consumer state yet, so everything is lag
            ],
        )
    )
    assert stats.streams == {S: 3}
    # 100 - 40 + 50 - max(10, 30) + 20 - 0
    assert stats.consumer_lag(S, "c") == 60 + 20 + 20
    # a consumer the state knows nothing about lags by the whole stream (its floors are 0 / first_seq - 1)
    assert stats.consumer_lag(S, "unknown") == 100 + 20 + 20
    assert stats.consumer_lag("no-such-stream", "c") == 0
    entry = consumers_of(stats.snapshot(0))[(S, "c")]
    assert (entry.lag_messages, entry.pending_count, entry.delivered, entry.acked) == (100, 7, 57, 50)

    # a later state replaces the partition's floor; the counters add up; an older state is ignored
    stats.apply(
        batch(
            2,
            consumers=[
                consumer("c", 0, ts=2_000, ack_floor=90, last_delivered=100, pending=10, delivered=55, acked=50),
                consumer("c", 2, node_id="n3", ts=2_000, ack_floor=20, last_delivered=20, delivered=20, acked=20),
                consumer("c", 1, node_id="n2", ts=500, ack_floor=49, redelivered=1),
            ],
        )
    )
    assert stats.consumer_lag(S, "c") == 10 + 20 + 0
    entry = consumers_of(stats.snapshot(0))[(S, "c")]
    assert (entry.lag_messages, entry.pending_count) == (30, 12)
    assert (entry.delivered, entry.redelivered, entry.acked) == (132, 1, 120)


def test_consumer_counters_all_add_up() -> None:
    counts = {"delivered": 7, "redelivered": 6, "acked": 5, "naked": 4, "termed": 3, "dead_lettered": 2, "dropped": 1}
    deltas = [
        consumer(
            "c",
            partition,
            ts=1_000 + partition,
            delivered=7,
            redelivered=6,
            acked=5,
            naked=4,
            termed=3,
            dead_lettered=2,
            dropped=1,
        )
        for partition in (0, 1)
    ]
    stats = fold(batch(1, consumers=deltas[:1]), batch(2, consumers=deltas[1:]))
    entry = consumers_of(stats.snapshot(0))[(S, "c")]
    assert {name: getattr(entry, name) for name in counts} == {name: 2 * value for name, value in counts.items()}


def _stream_on_two_nodes() -> list[BatchAggregates]:
    """Batch 1: stream S (1 partition: n1 primary, n2 secondary) with consumer c; stream "keep" on n1."""
    return [
        batch(
            1,
            lifecycle=[
                event("n1", rows.STREAM_CREATED, 100, partitions=1),
                event("n2", rows.STREAM_CREATED, 100, partitions=1),
                event("n1", rows.CONSUMER_CREATED, 110, consumer="c"),
                event("n1", rows.STREAM_CREATED, 120, stream="keep", partitions=1),
            ],
            replicas=[
                replica("n1", ts=1_000, last_seq=10, appended=(10, 1_000)),
                replica("n2", role=rows.SECONDARY, ts=1_000, last_seq=10, appended=(10, 1_000)),
                replica("n1", stream="keep", ts=1_000, last_seq=4, appended=(4, 40)),
            ],
            consumers=[consumer("c", ack_floor=6, pending=2, delivered=8, acked=6)],
        )
    ]


def test_stream_deleted_on_every_node_drops_its_partitions_and_consumers() -> None:
    stats = fold(*_stream_on_two_nodes())
    stats.apply(batch(2, lifecycle=[event("n1", rows.STREAM_DELETED, 5_000)]))
    # the first delete read ends the stream: its totals and consumers go; n2's copy stays listed
    # until n2's own delete is read
    out = stats.snapshot(0)
    assert S not in stats.streams
    assert set(replicas_of(out)) == {(S, 0, "n2"), ("keep", 0, "n1")}
    assert partitions_of(out)[(S, 0)].published_messages == 0
    assert (S, "c") not in consumers_of(out)

    stats.apply(batch(3, lifecycle=[event("n2", rows.STREAM_DELETED, 5_001)]))
    out = stats.snapshot(0)
    assert stats.streams == {"keep": 1}
    assert set(partitions_of(out)) == {("keep", 0)}
    assert set(replicas_of(out)) == {("keep", 0, "n1")}
    assert list(out.consumers) == []
    assert partitions_of(out)[("keep", 0)].published_messages == 4
    # the node's own totals (what it accepted as primary) are not taken back
    assert nodes_of(out)["n1"].published_messages == 14


def test_stream_deleted_and_created_again_in_one_batch_keeps_the_new_stream() -> None:
    stats = fold(*_stream_on_two_nodes())
    stats.apply(
        batch(
            2,
            # listed out of order on purpose: lifecycle events are applied in ts order
            lifecycle=[
                event("n1", rows.CONSUMER_CREATED, 6_100, consumer="c2", seq=9),
                event("n1", rows.STREAM_CREATED, 6_000, partitions=2, seq=8),
                event("n2", rows.STREAM_DELETED, 5_001, seq=7),
                event("n2", rows.STREAM_CREATED, 6_001, partitions=2, seq=8),
                event("n1", rows.STREAM_DELETED, 5_000, seq=7),
            ],
            # only what the new stream did (after each node's delete)
            replicas=[
                replica("n1", ts=7_000, last_seq=3, appended=(3, 30)),
                replica("n2", role=rows.SECONDARY, ts=7_000, last_seq=2, appended=(2, 20)),
            ],
            consumers=[consumer("c2", ts=7_000, ack_floor=1, last_delivered=2, pending=1, delivered=2, acked=1)],
        )
    )
    out = stats.snapshot(0)
    assert stats.streams == {S: 2, "keep": 1}
    partition = partitions_of(out)[(S, 0)]
    assert (partition.published_messages, partition.published_bytes, partition.last_seq) == (3, 30, 3)
    copies = replicas_of(out)
    assert (copies[(S, 0, "n1")].message_count, copies[(S, 0, "n1")].last_seq) == (3, 3)
    assert (copies[(S, 0, "n2")].message_count, copies[(S, 0, "n2")].lag_messages) == (2, 1)
    assert set(consumers_of(out)) == {(S, "c2")}
    entry = consumers_of(out)[(S, "c2")]
    # partition 0: 3 - 1; partition 1 of the new stream: nothing yet
    assert (entry.lag_messages, entry.delivered, entry.acked) == (2, 2, 1)


def test_stream_recreated_before_a_slower_node_reports_its_delete_starts_from_zero() -> None:
    stats = fold(*_stream_on_two_nodes())
    # n1's feed is read past the delete and the re-create; n2's delete comes in the next batch
    stats.apply(
        batch(
            2,
            lifecycle=[
                event("n1", rows.STREAM_DELETED, 5_000, seq=7),
                event("n1", rows.STREAM_CREATED, 6_000, partitions=1, seq=8),
            ],
            replicas=[replica("n1", ts=7_000, last_seq=3, appended=(3, 30))],
        )
    )
    stats.apply(
        batch(
            3,
            lifecycle=[
                event("n2", rows.STREAM_DELETED, 5_001, seq=7),
                event("n2", rows.STREAM_CREATED, 6_001, partitions=1, seq=8),
            ],
            replicas=[replica("n2", role=rows.SECONDARY, ts=7_000, last_seq=3, appended=(3, 30))],
        )
    )
    out = stats.snapshot(0)
    # the old stream got a stream_deleted on every node: only the new stream's figures remain
    assert partitions_of(out)[(S, 0)].published_messages == 3
    assert list(out.consumers) == []


def test_consumer_deleted_drops_the_consumer() -> None:
    stats = fold(*_stream_on_two_nodes())
    stats.apply(batch(2, consumers=[consumer("d", ts=2_000, ack_floor=3, delivered=3, acked=3)]))
    assert set(consumers_of(stats.snapshot(0))) == {(S, "c"), (S, "d")}
    stats.apply(batch(3, lifecycle=[event("n1", rows.CONSUMER_DELETED, 3_000, consumer="c")]))
    assert set(consumers_of(stats.snapshot(0))) == {(S, "d")}
    # deleting it again (from a secondary's feed) or an unknown consumer changes nothing
    stats.apply(
        batch(
            4,
            lifecycle=[
                event("n2", rows.CONSUMER_DELETED, 3_001, consumer="c"),
                event("n2", rows.CONSUMER_DELETED, 3_002, consumer="ghost"),
            ],
        )
    )
    assert set(consumers_of(stats.snapshot(0))) == {(S, "d")}
    # created again: it starts from zero
    stats.apply(batch(5, lifecycle=[event("n1", rows.CONSUMER_CREATED, 4_000, consumer="c")]))
    entry = consumers_of(stats.snapshot(0))[(S, "c")]
    assert (entry.delivered, entry.acked, entry.pending_count, entry.lag_messages) == (0, 0, 0, 10)


def test_snapshot_reports_the_last_closed_window_and_its_rates() -> None:
    def windows(batch_id: int, scale: int) -> BatchAggregates:
        return batch(
            batch_id,
            replicas=[replica("n1", last_seq=1), replica("n2", 1, last_seq=1)],
            consumers=[consumer("c", ts=batch_id)],
            publish_windows=[
                PublishWindow(0, S, 0, "n1", 5 * scale, 500 * scale),
                PublishWindow(10_000, S, 0, "n1", 30 * scale, 3_000 * scale),
                PublishWindow(10_000, S, 1, "n2", 10 * scale, 1_500 * scale),
                PublishWindow(20_000, S, 0, "n1", 7 * scale, 700 * scale),
            ],
            consumer_windows=[
                ConsumerWindow(10_000, S, "c", acked=20 * scale, redelivered=3 * scale, dead_lettered=scale, dropped=1),
                ConsumerWindow(20_000, S, "c", acked=99),
            ],
        )

    # the same windows reached in two batches add up
    stats = fold(windows(1, 1), windows(2, 1))
    assert stats.closed_window(25_000) == 10_000
    assert stats.closed_window(20_000) == 10_000
    assert stats.closed_window(19_999) == 0
    assert stats.closed_window(30_000) == 20_000

    out = stats.snapshot(25_000)
    assert (out.window_start_ms, out.window_ms) == (10_000, 10_000)
    partitions = partitions_of(out)
    assert (partitions[(S, 0)].window_published_messages, partitions[(S, 0)].window_published_bytes) == (60, 6_000)
    assert partitions[(S, 0)].publish_rate_messages_per_second == 6.0
    assert partitions[(S, 0)].publish_rate_bytes_per_second == 600.0
    assert (partitions[(S, 1)].window_published_messages, partitions[(S, 1)].window_published_bytes) == (20, 3_000)
    assert partitions[(S, 1)].publish_rate_messages_per_second == 2.0
    assert partitions[(S, 1)].publish_rate_bytes_per_second == 300.0
    nodes = nodes_of(out)
    assert (nodes["n1"].window_published_messages, nodes["n1"].publish_rate_messages_per_second) == (60, 6.0)
    assert (nodes["n2"].window_published_messages, nodes["n2"].publish_rate_messages_per_second) == (20, 2.0)
    assert out.skew_window_published_messages == 40
    entry = consumers_of(out)[(S, "c")]
    assert (entry.window_acked, entry.window_redelivered, entry.window_dead_lettered) == (40, 6, 2)
    assert entry.ack_rate_per_second == 4.0

    # the still open window [20000, 30000) is not reported before it closes
    later = stats.snapshot(30_000)
    assert later.window_start_ms == 20_000
    assert partitions_of(later)[(S, 0)].window_published_messages == 14
    assert partitions_of(later)[(S, 1)].window_published_messages == 0
    assert consumers_of(later)[(S, "c")].window_acked == 198

    # a window the state holds nothing for reports zeros
    empty = stats.snapshot(100_000)
    assert partitions_of(empty)[(S, 0)].window_published_messages == 0
    assert partitions_of(empty)[(S, 0)].publish_rate_messages_per_second == 0.0
    assert consumers_of(empty)[(S, "c")].ack_rate_per_second == 0.0


def test_offsets_carry_watermarks_and_read_the_earlier_form() -> None:
    assert split_offset({"n1": 5, "n2": 1}) == ({"n1": 5, "n2": 1}, {})  # a checkpoint of before
    joined = join_offset({"n2": 3, "n1": 5}, {"n1": 1_500})
    assert joined == {"feeds": {"n1": 5, "n2": 3}, "watermarks": {"n1": 1_500}}
    assert split_offset(joined) == ({"n1": 5, "n2": 3}, {"n1": 1_500})
    for bad in ({"feeds": {"n1": 0}}, {"feeds": {"n1": 1}, "watermarks": {"n1": -1}}, {"feeds": {}, "watermarks": 5}):
        with pytest.raises(InvalidArgumentError):
            split_offset(bad)


def test_a_node_read_to_its_horizon_gives_its_watermark_one_cut_short_keeps_its_old_one() -> None:
    previous = {"n1": 1_000, "n2": 1_000, "gone": 900}
    answered = {"n1": (10, 2_000), "n2": (50, 2_000), "new": (3, 2_100), "late": (7, 2_200)}
    end = {"n1": 11, "n2": 31, "new": 4, "late": 2, "gone": 8}
    # n1 and new read to their horizons; n2 and late cut short by maxChangesPerTrigger (late has
    # no watermark yet: it holds every window back until read); gone did not answer: it holds none
    assert next_watermarks(previous, end, answered) == {"n1": 2_000, "n2": 1_000, "new": 2_100, "late": 0}
    assert batch_watermark(next_watermarks(previous, end, answered)) == 0
    assert batch_watermark({"n1": 2_000, "n2": 1_500}) == 1_500
    assert batch_watermark({}) == 0
    # a watermark never goes back (a node whose clock stepped back)
    assert next_watermarks({"n1": 5_000}, {"n1": 11}, {"n1": (10, 4_000)}) == {"n1": 5_000}


def test_window_figures_are_of_the_last_window_complete_by_the_watermark() -> None:
    """A window the job may still be folding is never reported: the rates come from the last window
    that ended by the watermark, however late the wall clock is; with no watermark (a source of
    before) the wall clock decides as it used to."""
    stats = fold(
        batch(
            1,
            replicas=[replica("n1", last_seq=1)],
            publish_windows=[PublishWindow(10_000, S, 0, "n1", 30, 3_000), PublishWindow(20_000, S, 0, "n1", 7, 7)],
            watermark_ms=29_999,
        )
    )
    out = stats.snapshot(35_000)  # by the wall clock [20000, 30000) ended; the watermark says not all is in
    assert (out.window_start_ms, out.watermark_ms) == (10_000, 29_999)
    assert partitions_of(out)[(S, 0)].publish_rate_messages_per_second == 3.0
    stats.apply(batch(2, publish_windows=[PublishWindow(20_000, S, 0, "n1", 13, 13)], watermark_ms=30_000))
    assert partitions_of(stats.snapshot(35_000))[(S, 0)].window_published_messages == 20
    # an idle cluster: batches with nothing but a later watermark close windows with zeros
    stats.apply(batch(3, watermark_ms=41_000))
    idle = stats.snapshot(41_000)
    assert (idle.window_start_ms, partitions_of(idle)[(S, 0)].publish_rate_messages_per_second) == (30_000, 0.0)
    # a batch without a watermark (a node cut short) never moves it back
    stats.apply(batch(4, watermark_ms=0))
    assert stats.snapshot(99_000).window_start_ms == 30_000
    assert ClusterStats.from_json(stats.to_json()).watermark_ms == 41_000
    legacy = fold(batch(1, publish_windows=[PublishWindow(10_000, S, 0, "n1", 30, 3_000)]))
    assert legacy.snapshot(25_000).window_start_ms == 10_000


def test_rates_use_the_window_length_in_seconds() -> None:
    stats = fold(
        batch(
            1,
            replicas=[replica("n1", last_seq=1)],
            lifecycle=[event("n1", rows.CONSUMER_CREATED, 10, consumer="c")],
            publish_windows=[PublishWindow(4_000, S, 0, "n1", 10, 1_000)],
            consumer_windows=[ConsumerWindow(4_000, S, "c", acked=5)],
        ),
        window_ms=4_000,
    )
    out = stats.snapshot(9_000)
    assert out.window_start_ms == 4_000
    assert partitions_of(out)[(S, 0)].publish_rate_messages_per_second == 2.5
    assert partitions_of(out)[(S, 0)].publish_rate_bytes_per_second == 250.0
    assert nodes_of(out)["n1"].publish_rate_messages_per_second == 2.5
    assert consumers_of(out)[(S, "c")].ack_rate_per_second == 1.25


def test_windows_kept_bounds_the_windows_held() -> None:
    stats = ClusterStats(window_ms=1_000, windows_kept=3)
    for batch_id in range(6):
        stats.apply(
            batch(
                batch_id,
                publish_windows=[PublishWindow(batch_id * 1_000, S, 0, "n1", batch_id + 1, 1)],
                consumer_windows=[ConsumerWindow(batch_id * 1_000, S, "c", acked=batch_id + 1)],
            )
        )
        assert len(stats.publish_windows) == min(batch_id + 1, 3)
        assert len(stats.consumer_windows) == min(batch_id + 1, 3)
    assert sorted(stats.publish_windows) == [3_000, 4_000, 5_000]
    assert sorted(stats.consumer_windows) == [3_000, 4_000, 5_000]
    # a late batch for a window older than every kept one does not stay
    stats.apply(batch(6, publish_windows=[PublishWindow(0, S, 0, "n1", 9, 9)]))
    assert sorted(stats.publish_windows) == [3_000, 4_000, 5_000]
    # a new window pushes the oldest out
    stats.apply(batch(7, publish_windows=[PublishWindow(9_000, S, 0, "n1", 1, 1)]))
    assert sorted(stats.publish_windows) == [4_000, 5_000, 9_000]
    assert stats.publish_windows[5_000] == {(S, 0, "n1"): [6, 1]}


def test_node_loads_and_skew_count_a_node_without_partitions_as_zero() -> None:
    stats = fold(
        batch(
            1,
            end_offsets={"n1": 20, "n2": 10, "n3": 5},
            replicas=[
                replica("n1", 0, last_seq=30, appended=(30, 3_000)),
                replica("n1", 1, last_seq=12, appended=(12, 1_000)),
                replica("n2", 2, last_seq=5, appended=(5, 800)),
                # copies held as secondary are not load
                replica("n2", 0, role=rows.SECONDARY, last_seq=30, appended=(30, 3_000)),
                replica("n3", 1, role=rows.SECONDARY, last_seq=12, appended=(12, 1_000)),
            ],
            publish_windows=[
                PublishWindow(10_000, S, 0, "n1", 8, 80),
                PublishWindow(10_000, S, 2, "n2", 3, 30),
            ],
        )
    )
    out = stats.snapshot(20_000)
    loads = {
        entry.node_id: (entry.partitions_led, entry.message_count, entry.bytes, entry.window_published_messages)
        for entry in out.nodes
    }
    assert loads == {"n1": (2, 42, 4_000, 8), "n2": (1, 5, 800, 3), "n3": (0, 0, 0, 0)}
    assert [entry.node_id for entry in out.nodes] == ["n1", "n2", "n3"]
    assert (out.skew_partitions, out.skew_message_count, out.skew_bytes) == (2, 42, 4_000)
    assert out.skew_window_published_messages == 8


def test_skew_is_zero_when_balanced() -> None:
    stats = fold(
        batch(
            1,
            replicas=[
                replica("n1", 0, last_seq=10, appended=(10, 100)),
                replica("n2", 1, last_seq=10, appended=(10, 100)),
            ],
        )
    )
    out = stats.snapshot(0)
    assert (out.skew_partitions, out.skew_message_count, out.skew_bytes, out.skew_window_published_messages) == (
        0,
        0,
        0,
        0,
    )


def test_feed_coverage_adds_up_and_counts_repeated_changes() -> None:
    stats = fold(
        batch(
            1, end_offsets={"n1": 11, "n2": 4}, coverage=[FeedCoverage("n1", 10, 1, 10), FeedCoverage("n2", 3, 1, 3)]
        ),
        batch(2, end_offsets={"n1": 16}, coverage=[FeedCoverage("n1", 3, 13, 15, skipped_changes=2)]),
    )
    assert stats.feeds["n1"].repeated_changes == 0
    positions = {entry.node_id: entry for entry in stats.snapshot(0).feed_positions}
    assert [entry.node_id for entry in stats.snapshot(0).feed_positions] == ["n1", "n2"]
    assert (positions["n1"].next_change_seq, positions["n1"].changes, positions["n1"].skipped_changes) == (16, 13, 2)
    assert (positions["n2"].next_change_seq, positions["n2"].changes, positions["n2"].skipped_changes) == (4, 3, 0)

    # changes 14..20 again: 14 and 15 were counted before
    stats.apply(batch(3, end_offsets={"n1": 21}, coverage=[FeedCoverage("n1", 7, 14, 20)]))
    assert stats.feeds["n1"].repeated_changes == 2
    assert stats.feeds["n1"].last_change_seq == 20
    # a batch entirely at or below what was counted: every change is repeated (at most its count)
    stats.apply(batch(4, coverage=[FeedCoverage("n1", 3, 2, 9)]))
    assert stats.feeds["n1"].repeated_changes == 5
    assert stats.feeds["n1"].last_change_seq == 20
    # a batch with only a feed gap (no changes) repeats nothing
    stats.apply(batch(5, end_offsets={"n1": 31}, coverage=[FeedCoverage("n1", 0, 0, 0, skipped_changes=10)]))
    assert stats.feeds["n1"].repeated_changes == 5
    feed = {entry.node_id: entry for entry in stats.snapshot(0).feed_positions}["n1"]
    assert (feed.next_change_seq, feed.changes, feed.skipped_changes) == (31, 23, 12)
    assert stats.feeds["n2"].repeated_changes == 0
    assert batch(9, coverage=[FeedCoverage("n1", 4, 1, 4), FeedCoverage("n2", 6, 1, 6)]).changes == 10


def _rich_state() -> ClusterStats:
    stats = fold(*_stream_on_two_nodes(), window_ms=5_000, windows_kept=4)
    stats.apply(
        batch(
            2,
            end_offsets={"n1": 40, "n2": 30, "n3": 2},
            coverage=[FeedCoverage("n1", 39, 1, 39), FeedCoverage("n2", 29, 1, 29, skipped_changes=1)],
            replicas=[
                replica("n2", 1, ts=2_000, last_seq=9, first_seq=3, appended=(9, 90), removed=(2, 20)),
                replica("n1", 1, role=rows.SECONDARY, ts=2_000, last_seq=7, appended=(7, 70)),
            ],
            consumers=[consumer("c", 1, node_id="n2", ts=2_000, ack_floor=4, last_delivered=6, pending=2, naked=1)],
            publish_windows=[PublishWindow(5_000, S, 1, "n2", 9, 90), PublishWindow(0, S, 0, "n1", 10, 1_000)],
            consumer_windows=[ConsumerWindow(5_000, S, "c", acked=4, redelivered=1, dead_lettered=1, dropped=1)],
        )
    )
    return stats


def test_to_json_from_json_round_trips() -> None:
    stats = _rich_state()
    text = stats.to_json()
    restored = ClusterStats.from_json(text)
    assert restored == stats
    assert restored.to_json() == text
    for now in (0, 7_000, 12_345):
        assert restored.snapshot(now) == stats.snapshot(now)
    snapshot = restored.snapshot(12_345)
    assert snapshot.batch_id == 2
    assert partitions_of(snapshot)[(S, 1)].window_published_messages == 9
    assert consumers_of(snapshot)[(S, "c")].lag_messages == (10 - 6) + (9 - 4)
    # the restored state goes on exactly like the original, and refuses what was folded in
    follow_up = batch(3, replicas=[replica("n1", ts=3_000, last_seq=11, appended=(1, 10))])
    stats.apply(follow_up)
    restored.apply(follow_up)
    assert restored.snapshot(12_345) == stats.snapshot(12_345)
    with pytest.raises(ValueError, match="batch 2 was already folded in"):
        ClusterStats.from_json(text).apply(batch(2))


def test_from_json_of_an_empty_state() -> None:
    empty = ClusterStats(window_ms=2_000, windows_kept=5)
    restored = ClusterStats.from_json(empty.to_json())
    assert restored == empty
    assert (restored.window_ms, restored.windows_kept, restored.batch_id) == (2_000, 5, -1)


# ---------------------------------------------------------------------------------------------------
# rows.change_row
# ---------------------------------------------------------------------------------------------------


def row_of(node_id: str, change: types_pb2.Change) -> dict[str, Any]:
    row = rows.change_row(node_id, change)
    assert len(row) == len(rows.COLUMNS)
    return dict(zip(rows.COLUMNS, row, strict=True))


def expected_row(**values: Any) -> dict[str, Any]:
    return {column: values.get(column) for column in rows.COLUMNS}


def _change(**fields: Any) -> types_pb2.Change:
    return types_pb2.Change(change_seq=42, ts_ms=1_700_000_000_123, stream=S, **fields)


HEAD = {"node_id": "n7", "change_seq": 42, "ts_ms": 1_700_000_000_123, "stream": S}


def test_columns_follow_the_schema() -> None:
    assert rows.COLUMNS[:7] == ["node_id", "change_seq", "ts_ms", "stream", "partition", "role", "kind"]
    assert len(rows.COLUMNS) == 24
    assert rows.COLUMNS[-1] == "dropped"


def test_change_row_append_and_role_mapping() -> None:
    append = types_pb2.AppendChange(first_seq=5, last_seq=9, message_count=5, bytes=512)
    secondary = _change(partition=3, role=SECONDARY_ROLE, append=append)
    assert row_of("n7", secondary) == expected_row(
        **HEAD, partition=3, role="secondary", kind="append", first_seq=5, last_seq=9, message_count=5, bytes=512
    )
    primary = _change(partition=3, role=PRIMARY_ROLE, append=append)
    assert row_of("n7", primary)["role"] == "primary"
    # the default (unset) role is the primary
    assert row_of("n7", _change(append=append))["role"] == rows.PRIMARY


def test_change_row_truncate() -> None:
    truncate = types_pb2.TruncateChange(first_seq=31, removed_count=30, removed_bytes=3_000, reason="max_msgs")
    assert row_of("n7", _change(partition=1, truncate=truncate)) == expected_row(
        **HEAD,
        partition=1,
        role="primary",
        kind="truncate",
        first_seq=31,
        message_count=30,
        bytes=3_000,
        reason="max_msgs",
    )


def test_change_row_remove() -> None:
    remove = types_pb2.RemoveChange(seqs=[3, 5, 9], removed_bytes=300, reason="work_queue_ack")
    assert row_of("n7", _change(role=SECONDARY_ROLE, remove=remove)) == expected_row(
        **HEAD, partition=0, role="secondary", kind="remove", message_count=3, bytes=300, reason="work_queue_ack"
    )


def test_change_row_stream_lifecycle() -> None:
    config = types_pb2.StreamConfig(name=S, partitions=4)
    created = _change(stream_created=types_pb2.StreamCreatedChange(config=config))
    assert row_of("n7", created) == expected_row(
        **HEAD, partition=0, role="primary", kind="stream_created", partitions=4
    )
    updated = _change(stream_updated=types_pb2.StreamUpdatedChange(config=config))
    assert row_of("n7", updated) == expected_row(
        **HEAD, partition=0, role="primary", kind="stream_updated", partitions=4
    )
    deleted = _change(stream_deleted=types_pb2.StreamDeletedChange())
    assert row_of("n7", deleted) == expected_row(**HEAD, partition=0, role="primary", kind="stream_deleted")


def test_change_row_consumer_created_and_deleted() -> None:
    created = _change(
        consumer_created=types_pb2.ConsumerCreatedChange(config=types_pb2.ConsumerConfig(name="c1", max_deliver=3))
    )
    assert row_of("n7", created) == expected_row(
        **HEAD, partition=0, role="primary", kind="consumer_created", consumer="c1"
    )
    deleted = _change(consumer_deleted=types_pb2.ConsumerDeletedChange(consumer="c1"))
    assert row_of("n7", deleted) == expected_row(
        **HEAD, partition=0, role="primary", kind="consumer_deleted", consumer="c1"
    )


def test_change_row_consumer_state() -> None:
    state = types_pb2.ConsumerStateChange(
        consumer="c1",
        ack_floor=10,
        last_delivered=15,
        pending_count=5,
        delivered=6,
        redelivered=2,
        acked=3,
        naked=1,
        termed=4,
        in_progress=7,
        dead_lettered=8,
        dropped=9,
    )
    change = _change(partition=2, role=SECONDARY_ROLE, consumer_state=state)
    assert row_of("n7", change) == expected_row(
        **HEAD,
        partition=2,
        role="secondary",
        kind="consumer_state",
        consumer="c1",
        ack_floor=10,
        last_delivered=15,
        pending_count=5,
        delivered=6,
        redelivered=2,
        acked=3,
        naked=1,
        termed=4,
        dead_lettered=8,
        dropped=9,
    )


def test_change_row_without_a_kind() -> None:
    assert row_of("n7", _change()) == expected_row(**HEAD, partition=0, role="primary", kind="")


# ---------------------------------------------------------------------------------------------------
# feed: address parsing
# ---------------------------------------------------------------------------------------------------


def test_parse_addresses() -> None:
    assert parse_addresses("localhost:7600") == ["localhost:7600"]
    assert parse_addresses(" r1:7600 , 10.0.0.2:7601,,") == ["r1:7600", "10.0.0.2:7601"]
    assert parse_addresses("[::1]:7600") == ["[::1]:7600"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "give at least one address as host:port[,host:port]"),
        (" , ,", "give at least one address as host:port[,host:port]"),
        ("localhost", "not a host:port address: 'localhost'"),
        ("localhost:", "not a host:port address: 'localhost:'"),
        (":7600", "not a host:port address: ':7600'"),
        ("r1:7600,r2:http", "not a host:port address: 'r2:http'"),
        ("r1:-1", "not a host:port address: 'r1:-1'"),
    ],
)
def test_parse_addresses_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        parse_addresses(text)


def test_parse_static_nodes() -> None:
    assert parse_static_nodes("node-1=h1:7601, node-2 = h2:7602 ,") == [
        FeedNode("node-1", "h1:7601"),
        FeedNode("node-2", "h2:7602"),
    ]
    assert parse_static_nodes("n=h:1")[0].alive is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "nodes: give at least one node_id=host:port"),
        (" , ", "nodes: give at least one node_id=host:port"),
        ("h1:7601", "nodes: expected node_id=host:port, got 'h1:7601'"),
        ("=h1:7601", "nodes: expected node_id=host:port, got '=h1:7601'"),
        (" =h1:7601", "nodes: expected node_id=host:port, got '=h1:7601'"),
        ("n1=h1:7601,n2", "nodes: expected node_id=host:port, got 'n2'"),
        ("n1=", "give at least one address as host:port"),
        ("n1=h1", "not a host:port address: 'h1'"),
    ],
)
def test_parse_static_nodes_errors(text: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        parse_static_nodes(text)


def test_a_saved_state_without_its_checkpoint_is_refused(tmp_path: Path) -> None:
    """A new Spark query numbers batches from 0 again: with the old state it would skip them all."""
    from weir_analytics import history
    from weir_analytics.job import AnalyticsJob
    from weir_analytics.settings import AnalyticsSettings

    stats = ClusterStats(window_ms=10_000)
    stats.apply(BatchAggregates(batch_id=0, end_offsets={"n1": 5}))
    history.save_state(tmp_path, stats)
    job_settings = AnalyticsSettings(data_dir=tmp_path, window_ms=10_000)
    with pytest.raises(RuntimeError, match=r"checkpoint .* is gone"):
        AnalyticsJob(job_settings, publisher=None)
    (tmp_path / "checkpoint" / "offsets").mkdir(parents=True)
    assert AnalyticsJob(job_settings, publisher=None).stats.batch_id == 0
    # a state computed with another window length is refused too
    with pytest.raises(ValueError, match="window_ms=10000"):
        AnalyticsJob(AnalyticsSettings(data_dir=tmp_path, window_ms=5_000), publisher=None)
