"""ConsumerInfo totals from per-partition figures (shared by the node and the router; pure).

Each `ConsumerPartitionState` carries its partition's counters since the consumer was created.
Every copy of a replicated partition holds them (consumer snapshots carry them), so a total over a
cluster must count each partition once: the router merges each partition's state from its primary
and sums those (`add_partition_totals`); summing whole nodes' totals would count every copy.
"""

from __future__ import annotations

from weir.v1 import types_pb2

_TOTALS = (
    "delivered_total",
    "acked_total",
    "redelivered_total",
    "dead_lettered_total",
    "dropped_total",
    "termed_total",
)


def add_partition_totals(info: types_pb2.ConsumerInfo) -> types_pb2.ConsumerInfo:
    """Set `info`'s totals (pending, ack pending and every *_total) to the sums over its
    `partitions`; returns `info`."""
    info.num_ack_pending = sum(state.num_ack_pending for state in info.partitions)
    info.num_pending = sum(state.num_pending for state in info.partitions)
    for name in _TOTALS:
        setattr(info, name, sum(getattr(state, name) for state in info.partitions))
    return info
