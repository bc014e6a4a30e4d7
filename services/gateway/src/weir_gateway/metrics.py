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
