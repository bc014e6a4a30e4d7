"""Prometheus metrics of the router (prometheus-client)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

RPC_SECONDS = Histogram(
    "weir_router_rpc_duration_seconds",
    "Router RPC latency",
    ["method"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0, 5.0),
)
RPC_ERRORS = Counter("weir_router_rpc_errors_total", "Router RPCs answered with an error", ["method", "code"])
IS_CONTROLLER = Gauge("weir_router_is_controller", "1 while this router holds the controller lease")
CONTROLLER_CHANGES = Counter("weir_router_controller_acquired_total", "Times this router acquired the lease")
NODES = Gauge("weir_router_nodes", "Registered partition nodes by liveness", ["state"])
NODES_MARKED_DEAD = Counter("weir_router_nodes_marked_dead_total", "Nodes the controller marked dead")
REDIS_ERRORS = Counter("weir_router_redis_errors_total", "Failed calls from the router to the metadata Redis")
GROUP_REBALANCES = Counter(
    "weir_router_group_generation_changes_total", "Consumer-group assignment changes", ["stream", "group"]
)
LEADER_TRANSFERS = Counter(
    "weir_router_leader_transfers_total",
    "Preferred-leader handovers the controller attempted, by outcome (ok, or the primary's refusal)",
    ["outcome"],
)
LEADER_ELECTIONS = Counter(
    "weir_router_leader_elections_total", "Partitions whose dead primary the controller replaced (failovers)"
)
LOST_EPOCHS_RESTORED = Counter(
    "weir_router_lost_epochs_restored_total",
    "Partition placements the metadata store had lost (nodes held a newer leader epoch) that the controller "
    "decided to restore from the nodes' copies (counted when decided; a write the store refused as stale is "
    "decided again at the next tick)",
)
