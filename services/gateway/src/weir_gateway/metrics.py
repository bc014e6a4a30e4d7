"""The gateway's Prometheus metrics (served on WEIR_GATEWAY_METRICS_PORT)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

RPC_SECONDS = Histogram(
    "weir_gateway_rpc_seconds",
    "Time to answer one foreign-protocol RPC, by protocol and method.",
    ["protocol", "method"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
RPC_ERRORS = Counter(
    "weir_gateway_rpc_errors_total",
    "Foreign-protocol RPCs that failed, by protocol, method and Weir result code.",
    ["protocol", "method", "result_code"],
)
GROUPS_SERVED = Gauge(
    "weir_gateway_groups_served",
    "(topic, group) memberships this instance holds for a protocol's consumers.",
    ["protocol"],
)
ROCKETMQ_FILTERED_MESSAGES = Counter(
    "weir_gateway_rocketmq_filtered_messages_total",
    "Messages a RocketMQ ReceiveMessage fetched whose tag its filter expression excludes: acknowledged by the "
    "gateway and not returned (RocketMQ's server-side tag filter).",
)
ROCKETMQ_DEAD_LETTERS = Counter(
    "weir_gateway_rocketmq_dead_letters_total",
    "Messages the RocketMQ front door moved to their group's dead letter subject, by cause "
    "(nack = NackMessage at max_delivery_attempts, forward = ForwardMessageToDeadLetterQueue).",
    ["cause"],
)
ROCKETMQ_TRANSACTIONS = Counter(
    "weir_gateway_rocketmq_transactions_total",
    "EndTransaction calls by resolution (commit, rollback), source (client, server_check) and outcome "
    "(resolved: applied, or a repeat of the first resolution; conflicting: refused, the other came first; "
    "unknown: no record of its resolution is left, answered ok).",
    ["resolution", "source", "outcome"],
)
ROCKETMQ_ORPHAN_CHECKS = Counter(
    "weir_gateway_rocketmq_orphan_checks_total",
    "RecoverOrphanedTransactionRequests sent to polling RocketMQ producers.",
)
ROCKETMQ_WAITING_POLLS = Gauge(
    "weir_gateway_rocketmq_waiting_polls",
    "RocketMQ producers' MultiplexingCall polls waiting on this instance.",
)
