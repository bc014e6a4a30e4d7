"""Prometheus metrics of the replicator (prometheus-client)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

PARTITIONS_OWNED = Gauge("weir_replicator_partitions_owned", "Partitions this replicator instance ships")
LIVE_INSTANCES = Gauge("weir_replicator_live_instances", "Replicator instances registered and alive")
SHIPPED_MESSAGES = Counter(
    "weir_replicator_shipped_messages_total", "Records pushed to secondaries", ["stream", "partition"]
)
SHIPPED_BYTES = Counter(
    "weir_replicator_shipped_bytes_total",
    "Record batch bytes pushed to secondaries (records and their batch headers)",
    ["stream", "partition"],
)
FETCHES = Counter(
    "weir_replicator_fetches_total",
    "FetchReplication exchanges with primaries, by whether they brought records (empty: a long poll "
    "that timed out or woke for consumer state)",
    ["stream", "partition", "outcome"],
)
FETCHED_FOR = Counter(
    "weir_replicator_fetched_for_followers_total",
    "Followers FetchReplication exchanges spoke for: more than the exchanges when followers in step "
    "share one (weir_replicator.fetch_rounds)",
    ["stream", "partition"],
)
SNAPSHOT_READS = Counter(
    "weir_replicator_consumer_snapshot_reads_total",
    "Reads of a primary's consumer state (GetConsumerSnapshots); one serves every follower that needs no newer one",
    ["stream", "partition"],
)
SNAPSHOTS_SHIPPED = Counter(
    "weir_replicator_consumer_snapshots_total",
    "Consumer-state snapshots pushed to secondaries",
    ["stream", "partition"],
)
REPLICATION_LAG = Gauge(
    "weir_replication_lag_messages",
    "Primary's last seq minus the secondary's, as of the last pull",
    ["stream", "partition", "follower"],
)
ERRORS = Counter("weir_replicator_errors_total", "Failed or refused replication calls by result code", ["code"])
REDIS_ERRORS = Counter("weir_replicator_redis_errors_total", "Failed calls from the replicator to the metadata Redis")
SESSIONS = Gauge(
    "weir_replicator_sessions", "Replication sessions running: one per (primary, follower) node pair with partitions"
)
SESSION_EXCHANGES = Counter(
    "weir_replicator_session_exchanges_total",
    "Replication session exchanges (fetch: FetchReplicationSession with a primary, push: ReplicateSession with a "
    "follower), each carrying every partition of its node pair; *_failed: the exchange failed",
    ["kind"],
)
DIVERGENCES_HEALED = Counter(
    "weir_replicator_divergences_healed_total",
    "Followers whose diverged tail was cut back to where they last matched the primary, to be copied again",
    ["stream", "partition"],
)
