"""The sidecar's Prometheus metrics (served on WEIR_NUMAFLOW_SOURCE_METRICS_PORT)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

READ_MESSAGES = Counter("weir_numaflow_source_read_messages_total", "Messages handed to Numaflow's data plane.")
ACKED_MESSAGES = Counter(
    "weir_numaflow_source_acked_messages_total", "Messages Numaflow acknowledged that were still pending."
)
NACKED_MESSAGES = Counter(
    "weir_numaflow_source_nacked_messages_total", "Messages Numaflow nacked (delivered again at once)."
)
STALE_SETTLES = Counter(
    "weir_numaflow_source_stale_settles_total",
    "Acks and nacks of a delivery that was no longer pending (it came back after ack_wait, or was settled).",
    ["kind"],
)
HANDED_BACK = Counter(
    "weir_numaflow_source_handed_back_total",
    "Buffered messages handed back unread (their partition moved to another replica, or the sidecar stopped).",
)
CALL_SECONDS = Histogram(
    "weir_numaflow_source_call_seconds",
    "Time to answer one source.v1 call, by method.",
    ["method"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
