"""Placement of a new stream's partitions on nodes (pure; DESIGN §4).

Rules: every partition gets `replicas` distinct nodes; primaries are spread evenly (weighted by node
capacity, counting the primaries each node already leads in other streams); secondaries go to the
least-loaded other nodes. Ties break by node id, so the same inputs always give the same placement.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from weir.errors import NotEnoughNodesError
from weir.v1 import types_pb2


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """A live node and what it already carries."""

    node_id: str
    capacity: int = 1
    primaries: int = 0
    replicas: int = 0  # every partition copy it hosts, primaries included


def loads_from(
    node_ids: Iterable[str], capacities: Mapping[str, int], placements: Iterable[types_pb2.StreamPlacement]
) -> list[NodeLoad]:
    """NodeLoad of each of `node_ids`, counted over existing placements."""
    primaries = dict.fromkeys(node_ids, 0)
    replicas = dict.fromkeys(node_ids, 0)
    for placement in placements:
        for entry in placement.partitions:
            if entry.primary_node_id in primaries:
                primaries[entry.primary_node_id] += 1
            for node_id in (entry.primary_node_id, *entry.secondary_node_ids):
                if node_id in replicas:
                    replicas[node_id] += 1
    return [
        NodeLoad(node_id, max(1, capacities.get(node_id, 1)), primaries[node_id], replicas[node_id])
        for node_id in sorted(primaries)
    ]


def place_stream(partitions: int, replicas: int, nodes: Sequence[NodeLoad]) -> types_pb2.StreamPlacement:
    """Placement of `partitions` partitions with `replicas` copies each over `nodes`, at leader epoch 1.

    Errors: NotEnoughNodesError when fewer nodes than `replicas` are given."""
    if partitions < 1 or replicas < 1:
        raise ValueError(f"partitions and replicas must be >= 1, got {partitions}, {replicas}")
    if len(nodes) < replicas:
        raise NotEnoughNodesError(
            f"replicas: {replicas} requested, but only {len(nodes)} partition node(s) are alive",
            alive_nodes=len(nodes),
        )
    capacity = {node.node_id: node.capacity for node in nodes}
    primaries = {node.node_id: node.primaries for node in nodes}
    copies = {node.node_id: node.replicas for node in nodes}
    placement = types_pb2.StreamPlacement()
    for index in range(partitions):
        primary = min(capacity, key=lambda node_id: (primaries[node_id] / capacity[node_id], copies[node_id], node_id))
        others = sorted(
            (node_id for node_id in capacity if node_id != primary),
            key=lambda node_id: (copies[node_id] / capacity[node_id], node_id),
        )
        secondaries = others[: replicas - 1]
        primaries[primary] += 1
        for node_id in (primary, *secondaries):
            copies[node_id] += 1
        placement.partitions.add(
            partition=index,
            primary_node_id=primary,
            secondary_node_ids=secondaries,
            leader_epoch=1,
            in_sync_node_ids=[primary, *secondaries],
            epoch_starts=[types_pb2.EpochStart(leader_epoch=1, start_seq=1)],
            replica_node_ids=[primary, *secondaries],
        )
    return placement
