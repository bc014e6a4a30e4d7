"""The rebalance planner (pure): which partition copies to move so that every alive node holds its
share of copies and of primaries (Kafka's kafka-reassign-partitions `--generate`, JetStream's
placement after a peer joins). `weir cluster rebalance` runs the plan move by move
(Router.MovePartition); a node added to a running cluster takes its share that way.

A node's share is proportional to its capacity (NodeRecord.capacity). The plan moves one copy at a
time from the node with the most copies per unit of capacity to the one with the fewest, while the
move leaves the first at least as loaded as the second (ties: the one leading more first); among
the copies it could move it takes a leading one when the first leads more than its fair share of
primaries and the second, given one more, would not (the move hands leadership to the new copy),
else one it does not lead. Pinned partitions, deleting streams and copies the target
already holds are never chosen. Dead nodes neither give nor take copies (failover's business).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from weir.v1 import types_pb2

from weir_router.moves import replicas_of

DEFAULT_MAX_MOVES = 100
MAX_MOVES = 10_000


@dataclass(frozen=True, slots=True)
class PlannedMove:
    stream: str
    partition: int
    from_node_id: str
    to_node_id: str
    leading: bool  # the copy moved leads: leadership moves with it


@dataclass(slots=True)
class _Copy:
    stream: str
    partition: int
    nodes: list[str]  # every copy of the partition
    leader: str
    pinned: bool


def plan_rebalance(
    records: Iterable[types_pb2.StreamRecord],
    alive: Sequence[str],
    capacity: Mapping[str, int],
    max_moves: int = DEFAULT_MAX_MOVES,
) -> list[PlannedMove]:
    """At most `max_moves` moves, in the order to run them (see the module docstring)."""
    if len(alive) < 2:
        return []
    partitions = [
        _Copy(
            record.config.name,
            entry.partition,
            replicas_of(entry),
            entry.primary_node_id,
            entry.partition in record.pinned_partitions,
        )
        for record in sorted(records, key=lambda record: record.config.name)
        if not record.deleting
        for entry in record.placement.partitions
    ]
    weight = {node_id: max(1, capacity.get(node_id, 1)) for node_id in alive}
    total_weight = sum(weight.values())
    fair_leads = {node_id: len(partitions) * weight[node_id] / total_weight for node_id in alive}
    moves: list[PlannedMove] = []
    while len(moves) < max_moves:
        held = {node_id: [copy for copy in partitions if node_id in copy.nodes] for node_id in alive}
        leads = {node_id: sum(copy.leader == node_id for copy in held[node_id]) for node_id in alive}
        most = max(alive, key=lambda node_id: (len(held[node_id]) / weight[node_id], leads[node_id], node_id))
        least = min(alive, key=lambda node_id: (len(held[node_id]) / weight[node_id], leads[node_id], node_id))
        if (len(held[most]) - 1) / weight[most] < (len(held[least]) + 1) / weight[least]:
            break
        move_lead = leads[most] > fair_leads[most] and leads[least] + 1 <= fair_leads[least] + 0.5
        move = _choose(held, most, least, move_lead)
        if move is None:
            break
        moves.append(move)
    return moves


def _choose(held: Mapping[str, list[_Copy]], most: str, least: str, move_lead: bool) -> PlannedMove | None:
    """The copy to move from `most` to `least` (applied to the state), or None when none can go:
    a leading one when `move_lead`, else one `most` does not lead (either, when only one kind can)."""
    movable = [copy for copy in held[most] if not copy.pinned and least not in copy.nodes]
    if not movable:
        return None
    chosen = next((copy for copy in movable if (copy.leader == most) == move_lead), movable[0])
    leading = chosen.leader == most
    chosen.nodes = [least if node_id == most else node_id for node_id in chosen.nodes]
    if leading:
        chosen.leader = least
    return PlannedMove(chosen.stream, chosen.partition, most, least, leading)


def copies_per_node(records: Iterable[types_pb2.StreamRecord], nodes: Iterable[str]) -> dict[str, tuple[int, int]]:
    """node -> (copies it holds, partitions it leads)."""
    counts = {node_id: [0, 0] for node_id in nodes}
    for record in records:
        for entry in record.placement.partitions:
            for node_id in replicas_of(entry):
                counts.setdefault(node_id, [0, 0])[0] += 1
            counts.setdefault(entry.primary_node_id, [0, 0])[1] += 1
    return {node_id: (copies, leads) for node_id, (copies, leads) in counts.items()}


def shares_after(shares: Mapping[str, tuple[int, int]], moves: Iterable[PlannedMove]) -> dict[str, tuple[int, int]]:
    """`copies_per_node` after `moves` ran."""
    after = {node_id: list(counts) for node_id, counts in shares.items()}
    for move in moves:
        after.setdefault(move.from_node_id, [0, 0])[0] -= 1
        after.setdefault(move.to_node_id, [0, 0])[0] += 1
        if move.leading:
            after[move.from_node_id][1] -= 1
            after[move.to_node_id][1] += 1
    return {node_id: (copies, leads) for node_id, (copies, leads) in after.items()}
