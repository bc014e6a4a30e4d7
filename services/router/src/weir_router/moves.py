"""Partition move decisions (pure; Kafka's partition reassignment, JetStream's peer moves).

A move of one partition's copy from node A to node D runs in three placement changes, each under a
new leader epoch that starts after everything the primary wrote under the old one (the primary
fences, drains and answers its log end first: `TransferLeadership` to itself):

1. `with_added_copy`: D joins as the last secondary (and last in preference), outside the in-sync
   set; the replicator copies the log and the consumer state to it, and the primary adds it to the
   in-sync set once it caught up (the in-sync rules of DESIGN §5).
2. If A leads, leadership moves to D with a fenced handover (`rebalance.handed_over`), and D takes
   A's place in the preference order, so the preferred-leader rebalance keeps it there.
3. `with_copy_removed`: A leaves the placement; it drops its copy when it adopts the record.

A move to a node that already holds a copy, from the primary, is step 2 alone: leadership (and the
preference) moves, every copy stays (the seed's RebalanceStreams onto a replica).

Each step is a valid placement by itself (at most `replicas + 1` copies), written only if the record
is still at the epoch the step was decided from, so a failover or another move in between makes the
move stop with a clear error rather than undo anything; running it again goes on from where it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from weir.errors import FailedPreconditionError, InvalidArgumentError
from weir.v1 import types_pb2

# A placement change of one partition, given its entry (with the live in-sync set) and the log end
# the primary answered when it fenced the partition.
EntryChange = Callable[[types_pb2.PartitionPlacement, int], types_pb2.PartitionPlacement]


@dataclass(frozen=True, slots=True)
class MovePlan:
    stream: str
    partition: int
    from_node_id: str
    to_node_id: str


def replicas_of(entry: types_pb2.PartitionPlacement) -> list[str]:
    """The partition's copies in preference order."""
    return list(entry.replica_node_ids) or [entry.primary_node_id, *entry.secondary_node_ids]


def check_move(record: types_pb2.StreamRecord, plan: MovePlan, alive: set[str]) -> None:
    """Errors (before anything changes): InvalidArgumentError for a partition the stream does not
    have or a move onto the same node; FailedPreconditionError for a stream being deleted, a pinned
    partition, a source that holds no copy, a target that is not alive or already holds one."""
    name = record.config.name
    if plan.partition >= len(record.placement.partitions):
        count = len(record.placement.partitions)
        raise InvalidArgumentError(
            f"stream {name!r} has {count} partition(s); partition {plan.partition} does not exist"
        )
    if plan.from_node_id == plan.to_node_id:
        raise InvalidArgumentError(f"from and to are the same node ({plan.to_node_id!r}): nothing to move")
    if record.deleting:
        raise FailedPreconditionError(f"stream {name!r} is being deleted")
    if plan.partition in record.pinned_partitions:
        raise FailedPreconditionError(f"{name}/{plan.partition} is pinned: unpin it before moving it")
    copies = replicas_of(record.placement.partitions[plan.partition])
    if plan.from_node_id not in copies and plan.to_node_id not in copies:
        raise FailedPreconditionError(
            f"{name}/{plan.partition} has no copy on {plan.from_node_id!r} (its copies: {copies})"
        )
    if plan.to_node_id not in alive:
        raise FailedPreconditionError(f"node {plan.to_node_id!r} is not alive: a copy cannot move there")
    if (
        leadership_only(record, plan)
        and record.placement.partitions[plan.partition].primary_node_id != plan.from_node_id
    ):
        raise FailedPreconditionError(
            f"{name}/{plan.partition} already has a copy on {plan.to_node_id!r}, and {plan.from_node_id!r} does not "
            "lead it: there is no leadership to move either"
        )


def leadership_only(record: types_pb2.StreamRecord, plan: MovePlan) -> bool:
    """Whether the target already holds one of the partition's `replicas` copies: then a move from
    the primary moves leadership (and the preference) only, and keeps every copy."""
    copies = replicas_of(record.placement.partitions[plan.partition])
    return plan.to_node_id in copies and plan.from_node_id in copies and len(copies) == record.config.replicas


def _next_epoch(entry: types_pb2.PartitionPlacement, last_seq: int) -> types_pb2.PartitionPlacement:
    """A copy of `entry` under the next leader epoch, starting after `last_seq`."""
    result = types_pb2.PartitionPlacement()
    result.CopyFrom(entry)
    if not result.replica_node_ids:
        result.replica_node_ids.extend(replicas_of(entry))
    if not result.epoch_starts:
        result.epoch_starts.add(leader_epoch=entry.leader_epoch or 1, start_seq=1)
    result.leader_epoch = entry.leader_epoch + 1
    result.epoch_starts.add(leader_epoch=result.leader_epoch, start_seq=last_seq + 1)
    return result


def with_added_copy(
    entry: types_pb2.PartitionPlacement, to_node_id: str, last_seq: int
) -> types_pb2.PartitionPlacement:
    """Step 1: `to_node_id` as the last secondary and last in preference, not in sync yet."""
    result = _next_epoch(entry, last_seq)
    result.secondary_node_ids.append(to_node_id)
    result.replica_node_ids.append(to_node_id)
    return result


def with_preference_taken(
    entry: types_pb2.PartitionPlacement, from_node_id: str, to_node_id: str
) -> types_pb2.PartitionPlacement:
    """After step 2's handover: `to_node_id` takes `from_node_id`'s place in the preference order
    (the one it leaves goes last, until step 3 removes it)."""
    result = types_pb2.PartitionPlacement()
    result.CopyFrom(entry)
    order = [node_id for node_id in replicas_of(entry) if node_id != to_node_id]
    order = [to_node_id if node_id == from_node_id else node_id for node_id in order] + [from_node_id]
    del result.replica_node_ids[:]
    result.replica_node_ids.extend(order)
    return result


def with_copy_removed(
    entry: types_pb2.PartitionPlacement, from_node_id: str, last_seq: int, *, taken_by: str = ""
) -> types_pb2.PartitionPlacement:
    """Step 3: `from_node_id` out of the secondaries, the preference order and the in-sync set;
    `taken_by` (the move's new copy) takes its place in the preference order when it stands later
    (a handover already put it there). Errors: FailedPreconditionError when it still leads (step 2
    must come first)."""
    if entry.primary_node_id == from_node_id:
        raise FailedPreconditionError(f"{from_node_id!r} still leads: hand leadership over before removing its copy")
    order = replicas_of(entry)
    if taken_by in order and from_node_id in order and order.index(taken_by) > order.index(from_node_id):
        entry = with_preference_taken(entry, from_node_id, taken_by)
    result = _next_epoch(entry, last_seq)
    for field in (result.secondary_node_ids, result.replica_node_ids, result.in_sync_node_ids):
        kept = [node_id for node_id in field if node_id != from_node_id]
        del field[:]
        field.extend(kept)
    return result
