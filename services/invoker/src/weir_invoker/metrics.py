"""The invoker's Prometheus metrics (served on WEIR_INVOKER_METRICS_PORT)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

UNFINISHED = Gauge("weir_invoker_unfinished_invocations", "Invocations admitted and not finished (any state).")
RUNNING = Gauge("weir_invoker_running_invocations", "Invocations with an attempt open to their deployment.")
SUSPENDED = Gauge("weir_invoker_suspended_invocations", "Invocations suspended, waiting on a completion.")
ATTEMPTS = Counter("weir_invoker_attempts_total", "Attempts started (first attempts, retries and resumptions).")
RETRIES = Counter("weir_invoker_retries_total", "Attempts that failed and were retried after a backoff.")
FINISHED = Counter(
    "weir_invoker_finished_invocations_total",
    "Invocations that ended, by status: completed, failed (terminal failure) or cancelled.",
    ["status"],
)
ADMITTED = Counter("weir_invoker_admitted_invocations_total", "Invocations admitted, by source.", ["source"])
JOURNAL_ENTRIES = Histogram(
    "weir_invoker_journal_entries",
    "Journal length of each finished invocation (entries).",
    buckets=(1, 2, 3, 5, 8, 13, 21, 50, 100, 500, 1000, 10_000),
)
DEAD_LETTERS = Counter("weir_invoker_dead_letters_total", "Messages dead-lettered after a terminal failure.")
