"""Stream config rules of the partition node: Limits bounds and the router's placements (pure).

The config rules shared with the router (validation, defaults, partial update) are in
`weir_server.streamconfig`.
"""

from __future__ import annotations

from weir.errors import InvalidConfigError
from weir.v1 import types_pb2

from weir_partition_node.retention import LimitsBounds


def bounds_of(config: types_pb2.StreamConfig) -> LimitsBounds:
    limits = config.limits
    return LimitsBounds(
        max_age_ms=limits.max_age_ms,
        max_msgs=limits.max_msgs,
        max_bytes=limits.max_bytes,
        max_msgs_per_subject=limits.max_msgs_per_subject,
    )


def check_placement(config: types_pb2.StreamConfig, placement: types_pb2.StreamPlacement, node_id: str) -> None:
    """A placement from the router must name every partition once, in order, with `replicas`
    distinct nodes each (one more while a move adds the new copy before it removes the old one),
    and include this node. Errors: InvalidConfigError."""
    if len(placement.partitions) != config.partitions:
        raise InvalidConfigError(
            f"placement: {len(placement.partitions)} partition(s) placed, the stream has {config.partitions}"
        )
    involved = False
    for index, entry in enumerate(placement.partitions):
        nodes = [entry.primary_node_id, *entry.secondary_node_ids]
        if entry.partition != index or not entry.primary_node_id:
            raise InvalidConfigError(f"placement: entry {index} must place partition {index} with a primary")
        if len(set(nodes)) != len(nodes) or len(nodes) not in (config.replicas, config.replicas + 1):
            raise InvalidConfigError(
                f"placement: partition {index} needs {config.replicas} distinct node(s), got {nodes}"
            )
        involved = involved or node_id in nodes
    if not involved:
        raise InvalidConfigError(f"placement: node {node_id!r} hosts no partition of stream {config.name!r}")


def hosted_partitions(
    config: types_pb2.StreamConfig, placement: types_pb2.StreamPlacement | None, node_id: str
) -> tuple[list[int], list[int]]:
    """(partitions this node hosts, partitions it leads), ascending. Standalone: all and all."""
    if placement is None:
        every = list(range(config.partitions))
        return every, every
    hosted = [
        entry.partition
        for entry in placement.partitions
        if entry.primary_node_id == node_id or node_id in entry.secondary_node_ids
    ]
    led = [entry.partition for entry in placement.partitions if entry.primary_node_id == node_id]
    return hosted, led
