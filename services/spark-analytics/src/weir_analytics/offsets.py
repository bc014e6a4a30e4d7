"""Offset planning for the `weir` source (pure: no I/O, unit-tested).

A streaming offset is a JSON object `{"feeds": {node_id: next_change_seq}, "watermarks": {node_id:
watermark_ms}}`: for every node, the first change seq not yet read, and, for the nodes read up to
their horizon when the offset was planned, the node's watermark then (every change of the node with
ts_ms below it is below next_change_seq; ReadChanges' watermark_ms). A micro-batch reads, per node,
the changes start[node] <= change_seq < end[node]; Spark stores both ends in its checkpoint before
it runs the batch, so a query restarted from its checkpoint re-reads exactly the same ranges (and
watermarks) and then goes on from the last end: no change is read twice into committed output, none
is skipped. The plain `{node_id: next_change_seq}` of earlier versions (and of startingOffsets) is
read as feeds without watermarks.

The batch's watermark is the smallest over the nodes that answered: every change with ts_ms below
it, on any of them, has been read by the end of the batch, so a time window that ends there is
complete. A node that does not answer (dead, unreachable) holds no window back; a node whose batch
was cut short by maxChangesPerTrigger keeps its previous watermark until its backlog is read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from weir.errors import InvalidArgumentError

Offsets = dict[str, int]
Watermarks = dict[str, int]
FEEDS = "feeds"
WATERMARKS = "watermarks"

# The first change seq of every feed.
FIRST_CHANGE_SEQ = 1


@dataclass(frozen=True)
class FeedRange:
    """One node's changes start <= change_seq < end: the value of one Spark input partition."""

    node_id: str
    start: int
    end: int


def parse_starting_offsets(text: str) -> str | Offsets:
    """ "earliest" | "latest" | a JSON object {node_id: next_change_seq >= 1}.
    Errors: InvalidArgumentError saying what is wrong."""
    value = text.strip()
    if value in ("earliest", "latest"):
        return value
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        raise InvalidArgumentError(
            f'startingOffsets: expected "earliest", "latest" or a JSON object {{node_id: change_seq}}, got {text!r}'
        ) from None
    return validate_offsets(parsed, "startingOffsets")


def validate_offsets(value: object, what: str = "offset") -> Offsets:
    """A checked {node_id: next_change_seq} (every seq an int >= 1). Errors: InvalidArgumentError."""
    if not isinstance(value, Mapping):
        raise InvalidArgumentError(f"{what}: expected a JSON object {{node_id: change_seq}}, got {value!r}")
    offsets: Offsets = {}
    for node_id, seq in value.items():
        if not isinstance(node_id, str) or not node_id:
            raise InvalidArgumentError(f"{what}: node ids must be non-empty strings, got {node_id!r}")
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < FIRST_CHANGE_SEQ:
            raise InvalidArgumentError(f"{what}: {node_id}: change seq must be an integer >= 1, got {seq!r}")
        offsets[node_id] = seq
    return offsets


def initial_offsets(starting: str | Offsets, horizons: Mapping[str, int]) -> Offsets:
    """Where a new query starts: every known node at its first change ("earliest"), after its
    horizon ("latest"), or as given (nodes not named start at their first change)."""
    if starting == "earliest":
        return {node_id: FIRST_CHANGE_SEQ for node_id in sorted(horizons)}
    if starting == "latest":
        return {node_id: horizon + 1 for node_id, horizon in sorted(horizons.items())}
    assert isinstance(starting, dict)
    offsets = {node_id: FIRST_CHANGE_SEQ for node_id in horizons}
    offsets.update(starting)
    return dict(sorted(offsets.items()))


def latest_offsets(start: Mapping[str, int], horizons: Mapping[str, int], max_changes: int | None) -> Offsets:
    """The end of the next micro-batch. `horizons` holds the nodes that answered (a node that did
    not keeps its start). A node seen for the first time starts at its first change. With
    `max_changes`, at most about that many changes in all: the budget is shared evenly over the
    nodes with changes to read, and what one node does not need goes to the others."""
    end: Offsets = dict(start)
    wanting: dict[str, int] = {}
    for node_id, horizon in horizons.items():
        begin = start.get(node_id, FIRST_CHANGE_SEQ)
        end.setdefault(node_id, begin)
        if horizon + 1 > begin:
            wanting[node_id] = horizon + 1 - begin
    if max_changes is None:
        for node_id, count in wanting.items():
            end[node_id] = start.get(node_id, FIRST_CHANGE_SEQ) + count
        return dict(sorted(end.items()))
    budget = max(1, max_changes)
    remaining = dict(sorted(wanting.items()))
    granted: dict[str, int] = dict.fromkeys(remaining, 0)
    while budget > 0 and remaining:
        share = max(1, budget // len(remaining))
        for node_id in list(remaining):
            take = min(share, remaining[node_id], budget)
            granted[node_id] += take
            remaining[node_id] -= take
            budget -= take
            if remaining[node_id] == 0:
                del remaining[node_id]
            if budget == 0:
                break
    for node_id, count in granted.items():
        end[node_id] = start.get(node_id, FIRST_CHANGE_SEQ) + count
    return dict(sorted(end.items()))


def plan_ranges(start: Mapping[str, int], end: Mapping[str, int], changes_per_partition: int) -> list[FeedRange]:
    """The input partitions of a micro-batch: each node's [start, end) cut into pieces of at most
    `changes_per_partition` change seqs, so a large backlog is read by several tasks at once."""
    if changes_per_partition < 1:
        raise InvalidArgumentError(f"changes per partition must be >= 1, got {changes_per_partition}")
    ranges: list[FeedRange] = []
    for node_id in sorted(end):
        begin = start.get(node_id, FIRST_CHANGE_SEQ)
        stop = end[node_id]
        while begin < stop:
            piece = min(stop, begin + changes_per_partition)
            ranges.append(FeedRange(node_id, begin, piece))
            begin = piece
    return ranges


def split_offset(value: object, what: str = "offset") -> tuple[Offsets, Watermarks]:
    """(feeds, watermarks) of a streaming offset, either form (see the module docstring).
    Errors: InvalidArgumentError."""
    if isinstance(value, Mapping) and FEEDS in value:
        watermarks = value.get(WATERMARKS) or {}
        if not isinstance(watermarks, Mapping) or not all(
            isinstance(node_id, str) and isinstance(ms, int) and not isinstance(ms, bool) and ms >= 0
            for node_id, ms in watermarks.items()
        ):
            raise InvalidArgumentError(f"{what}: watermarks must map node ids to milliseconds, got {watermarks!r}")
        return validate_offsets(value[FEEDS], what), dict(watermarks)
    return validate_offsets(value, what), {}


def join_offset(feeds: Mapping[str, int], watermarks: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """The JSON form of a streaming offset."""
    return {FEEDS: dict(sorted(feeds.items())), WATERMARKS: dict(sorted(watermarks.items()))}


def next_watermarks(
    previous: Mapping[str, int], end: Mapping[str, int], answered: Mapping[str, tuple[int, int]]
) -> Watermarks:
    """The watermarks of a batch ending at `end`: `answered` holds (horizon, watermark_ms) of the
    nodes that answered when it was planned. A node read up to its horizon takes that watermark; one
    whose batch stops short keeps its previous one (0 when it had none); a node that did not answer
    has none (it holds no window back)."""
    watermarks: Watermarks = {}
    for node_id, (horizon, watermark_ms) in answered.items():
        if end.get(node_id, FIRST_CHANGE_SEQ) > horizon:
            watermarks[node_id] = max(watermark_ms, previous.get(node_id, 0))
        else:  # its backlog is not read yet: what it holds may be older than any window
            watermarks[node_id] = previous.get(node_id, 0)
    return dict(sorted(watermarks.items()))


def batch_watermark(watermarks: Mapping[str, int]) -> int:
    """The batch's watermark: the smallest of the nodes' (0 when none has one)."""
    return min(watermarks.values(), default=0)
