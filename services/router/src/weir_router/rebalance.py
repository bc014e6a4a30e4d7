"""Preferred-leader rebalance decisions of the controller (pure; Kafka's preferred replica election).

Placement spreads primaries evenly and records each partition's replicas in preference order
(`PartitionPlacement.replica_node_ids`: the first is the preferred leader). A failover moves
leadership to another in-sync replica and leaves it there, so after a node comes back every
partition it led is led elsewhere and the load is skewed (issue 22: after a crash run every
partition was led by one node). `handovers` names the partitions whose preferred leader is alive
and in sync again while another alive node leads them; the controller moves each back with a
fenced handover (`TransferLeadership` on the primary, then a new leader epoch), one at a time.
`handed_over` is the placement after such a move.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from weir.v1 import types_pb2


@dataclass(frozen=True, slots=True)
class Handover:
    stream: str
    partition: int
    leader_epoch: int
    from_node_id: str
    to_node_id: str


def preferred_leader(entry: types_pb2.PartitionPlacement) -> str:
    """The replica that should lead: the first one placed (the current primary on records placed
    before preferences were recorded)."""
    return entry.replica_node_ids[0] if entry.replica_node_ids else entry.primary_node_id


def handovers(
    records: Iterable[types_pb2.StreamRecord],
    in_sync: Mapping[tuple[str, int], Sequence[str]],
    alive: set[str],
    damaged: Mapping[str, Collection[tuple[str, int]]] | None = None,
) -> list[Handover]:
    """Partitions whose leadership should move, in stream and partition order:
    - a primary that holds damaged records of its partition (`damaged`: node -> (stream, partition),
      from the nodes' scrubs) hands it to the first replica in preference order that is alive, in
      the in-sync set (`in_sync`, keyed by (stream, partition), for the current epoch) and intact;
      the old primary then repairs its records as a follower (issue 32);
    - else back to the preferred leader when it is alive, in sync and intact, unless the partition
      is pinned (`pinned_partitions`).
    The current primary must be alive (a dead primary is failover's business)."""
    damaged = damaged or {}
    moves: list[Handover] = []
    for record in sorted(records, key=lambda record: record.config.name):
        name = record.config.name
        for entry in record.placement.partitions:
            key, primary = (name, entry.partition), entry.primary_node_id
            if primary not in alive:
                continue
            synced = in_sync.get(key, ())
            eligible = [
                node_id
                for node_id in list(entry.replica_node_ids) or [primary, *entry.secondary_node_ids]
                if node_id in alive and node_id in synced and key not in damaged.get(node_id, ())
            ]
            if key in damaged.get(primary, ()):
                target = next((node_id for node_id in eligible if node_id != primary), None)
            elif entry.partition in record.pinned_partitions:
                target = None  # an operator pinned it: its leader stays where it is
            else:
                preferred = preferred_leader(entry)
                target = preferred if preferred != primary and preferred in eligible else None
            if target is not None:
                moves.append(Handover(name, entry.partition, entry.leader_epoch, primary, target))
    return moves


def handed_over(
    entry: types_pb2.PartitionPlacement, to_node_id: str, last_seq: int, in_sync: Sequence[str]
) -> types_pb2.PartitionPlacement:
    """The placement after the primary handed leadership to `to_node_id` at `last_seq` (the end of
    the log both hold): a new leader epoch starting after it, the other replicas as secondaries in
    preference order, the in-sync set unchanged (new primary first)."""
    epoch = entry.leader_epoch + 1
    result = types_pb2.PartitionPlacement()
    result.CopyFrom(entry)
    replicas = list(entry.replica_node_ids) or [entry.primary_node_id, *entry.secondary_node_ids]
    result.primary_node_id = to_node_id
    del result.secondary_node_ids[:]
    result.secondary_node_ids.extend(node_id for node_id in replicas if node_id != to_node_id)
    result.leader_epoch = epoch
    if not result.epoch_starts:
        result.epoch_starts.add(leader_epoch=entry.leader_epoch or 1, start_seq=1)
    result.epoch_starts.add(leader_epoch=epoch, start_seq=last_seq + 1)
    del result.in_sync_node_ids[:]
    result.in_sync_node_ids.extend([to_node_id, *(node_id for node_id in in_sync if node_id != to_node_id)])
    return result
