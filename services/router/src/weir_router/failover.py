"""Failover decisions of the controller (pure; DESIGN §5).

When a partition's primary is dead, the controller asks the alive in-sync replicas what they hold
(`ReplicaView`: the epoch their log belongs to and its end) and promotes the one whose log keeps
the most of the partition's history (`valid_log_end`, so a replica's divergent tail never counts).
Only in-sync replicas are eligible: each of them holds every message an ack_level ALL publish was
acknowledged for, so the promoted log holds them all. With none alive, the partition stays
unavailable (no unclean election) until one returns.

When the metadata store lost writes (a Redis restarted without its last second), nodes can hold a
newer leader epoch than the stored record. Deciding from the older record would issue an epoch a
second time, with an epoch history that does not know the lost epoch's start. The controller first
puts back the newest placement entry a node holds (`newest_placement`), then decides as usual.

A missing heartbeat is judged only by a controller that could have seen it renewed
(`awaiting_heartbeat`): when the metadata store was out of reach (a Redis failover, a partition
between the services and Redis), every node's heartbeat key expires at once, though no node died.
A router that takes the controller role gives each node one heartbeat TTL to beat again, as a new
ZooKeeper leader renews every session's timeout and a new Kafka controller every broker's session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from weir.v1 import types_pb2
from weir_server.metadata import NodeRecord
from weir_server.replication import valid_log_end

# The heartbeat TTL assumed for a node that did not register its own (a node of an earlier version):
# the node's WEIR_NODE_HEARTBEAT_TTL_MS default.
DEFAULT_HEARTBEAT_TTL_MS = 2000


@dataclass(frozen=True, slots=True)
class ReplicaView:
    node_id: str
    replica_epoch: int
    last_seq: int


@dataclass(frozen=True, slots=True)
class Promotion:
    leader: str
    valid_end: int


def epoch_history(entry: types_pb2.PartitionPlacement) -> list[tuple[int, int]]:
    return [(item.leader_epoch, item.start_seq) for item in entry.epoch_starts]


def choose_leader(
    entry: types_pb2.PartitionPlacement, in_sync: Sequence[str], views: Mapping[str, ReplicaView]
) -> Promotion | None:
    """The in-sync replica (other than the current primary) that answered with the longest valid
    log; ties go to the earlier one in the placement's secondary order. None when no in-sync
    replica answered."""
    history = epoch_history(entry)
    order = {node_id: position for position, node_id in enumerate(entry.secondary_node_ids)}
    best: Promotion | None = None
    best_key: tuple[int, int] | None = None
    for node_id in in_sync:
        view = views.get(node_id)
        if node_id == entry.primary_node_id or view is None:
            continue
        end = valid_log_end(view.replica_epoch, view.last_seq, history)
        key = (end, -order.get(node_id, len(order)))
        if best_key is None or key > best_key:
            best, best_key = Promotion(node_id, end), key
    return best


def promoted(
    entry: types_pb2.PartitionPlacement, promotion: Promotion, in_sync: Iterable[str], alive: set[str]
) -> types_pb2.PartitionPlacement:
    """The partition's placement after `promotion`: a new leader epoch starting after the new
    primary's valid log; the old primary becomes the last secondary (it rejoins when it returns);
    the in-sync set keeps the alive members."""
    old_primary = entry.primary_node_id
    epoch = entry.leader_epoch + 1
    result = types_pb2.PartitionPlacement()
    result.CopyFrom(entry)
    result.primary_node_id = promotion.leader
    del result.secondary_node_ids[:]
    result.secondary_node_ids.extend(
        [node_id for node_id in entry.secondary_node_ids if node_id != promotion.leader] + [old_primary]
    )
    result.leader_epoch = epoch
    if not result.epoch_starts:
        result.epoch_starts.add(leader_epoch=entry.leader_epoch or 1, start_seq=1)
    result.epoch_starts.add(leader_epoch=epoch, start_seq=promotion.valid_end + 1)
    del result.in_sync_node_ids[:]
    result.in_sync_node_ids.extend(
        [promotion.leader]
        + [node_id for node_id in in_sync if node_id not in (promotion.leader, old_primary) and node_id in alive]
    )
    return result


def newest_placement(
    entry: types_pb2.PartitionPlacement, copies: Iterable[types_pb2.PartitionPlacement]
) -> types_pb2.PartitionPlacement | None:
    """Of the nodes' `copies` of a partition's placement entry, the one with the highest leader
    epoch, if it is higher than the stored `entry`'s (the store lost it); None otherwise. A copy
    for another partition is never taken."""
    best: types_pb2.PartitionPlacement | None = None
    for copy in copies:
        if copy.partition != entry.partition or copy.leader_epoch <= entry.leader_epoch:
            continue
        if best is None or copy.leader_epoch > best.leader_epoch:
            best = copy
    return best


def awaiting_heartbeat(nodes: Iterable[tuple[NodeRecord, bool]], *, controller_for_ms: float) -> frozenset[str]:
    """The ids of the nodes whose missing heartbeat the controller may not judge yet: registered
    alive (`state`), heartbeat key absent (the bool is False), while this router has held the
    controller role for less than the node's `heartbeat_ttl_ms` (DEFAULT_HEARTBEAT_TTL_MS when
    unknown). Until then such a node is neither marked dead nor are its partitions failed over, and
    it is no candidate for others'. A node that is really gone is judged one TTL later than usual."""
    return frozenset(
        record.node_id
        for record, alive in nodes
        if not alive
        and record.state == "alive"
        and controller_for_ms < (record.heartbeat_ttl_ms or DEFAULT_HEARTBEAT_TTL_MS)
    )
