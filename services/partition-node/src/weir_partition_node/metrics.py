"""Prometheus metrics of a partition node (prometheus-client, default registry).

Naming follows Prometheus conventions: counters end in `_total`, durations are `_seconds`
histograms, sizes are `_bytes`. Labels: `stream`, `partition`, `method`, `code`.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

PUBLISHED_MESSAGES = Counter(
    "weir_published_messages_total", "Messages committed to a partition log", ["stream", "partition"]
)
PUBLISHED_BYTES = Counter(
    "weir_published_bytes_total", "Record bytes committed to a partition log", ["stream", "partition"]
)
RETENTION_REMOVED = Counter(
    "weir_retention_removed_messages_total",
    "Messages removed by Limits retention (age, count, bytes, per subject)",
    ["stream", "partition"],
)
CHECKSUM_FAILURES = Counter(
    "weir_checksum_failures_total",
    "Stored records that failed their checksum on read",
    ["stream", "partition"],
)
GROUP_COMMIT_MESSAGES = Histogram(
    "weir_group_commit_messages",
    "Messages per group commit",
    buckets=(0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000),
)
GROUP_COMMIT_SECONDS = Histogram(
    "weir_group_commit_duration_seconds",
    "Time from taking a batch off the queue to its durable commit",
    buckets=(0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0),
)
RPC_SECONDS = Histogram(
    "weir_rpc_duration_seconds",
    "Server-side handling time of client RPCs",
    ["method"],
    buckets=(0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0, 5.0),
)
RPC_ERRORS = Counter("weir_rpc_errors_total", "Client RPCs answered with an error", ["method", "code"])
PARTITION_LAST_SEQ = Gauge("weir_partition_last_seq", "Last assigned seq of a partition", ["stream", "partition"])
PARTITION_MESSAGES = Gauge("weir_partition_messages", "Messages stored in a partition", ["stream", "partition"])
PARTITION_BYTES = Gauge("weir_partition_bytes", "Record bytes stored in a partition", ["stream", "partition"])
CHANGE_FEED_LAST_SEQ = Gauge("weir_change_feed_last_change_seq", "Horizon of the node's change feed")
STREAMS = Gauge("weir_streams", "Streams on this node")

CONSUMER_DELIVERED = Counter(
    "weir_consumer_delivered_messages_total", "First deliveries of messages to a consumer", ["stream", "consumer"]
)
CONSUMER_REDELIVERED = Counter(
    "weir_consumer_redelivered_messages_total",
    "Redeliveries (ack_wait passed or nak) of messages to a consumer",
    ["stream", "consumer"],
)
CONSUMER_ACKED = Counter(
    "weir_consumer_acked_messages_total", "Messages a consumer acknowledged", ["stream", "consumer"]
)
CONSUMER_DEAD_LETTERED = Counter(
    "weir_consumer_dead_lettered_messages_total",
    "Messages that reached max_deliver and went to the dead letter subject",
    ["stream", "consumer"],
)
CONSUMER_DROPPED = Counter(
    "weir_consumer_dropped_messages_total",
    "Messages that reached max_deliver without a dead letter subject",
    ["stream", "consumer"],
)
CONSUMER_ACK_PENDING = Gauge(
    "weir_consumer_ack_pending_messages",
    "Delivered, unacknowledged messages of a consumer in a partition",
    ["stream", "consumer", "partition"],
)
CONSUMER_ACK_FLOOR = Gauge(
    "weir_consumer_ack_floor_seq", "A consumer's ack floor in a partition", ["stream", "consumer", "partition"]
)

HEARTBEAT_LAST_SECONDS = Gauge(
    "weir_node_heartbeat_last_timestamp_seconds", "Unix time of the node's last successful heartbeat to Redis"
)
REDIS_ERRORS = Counter("weir_node_redis_errors_total", "Failed calls from the node to the metadata Redis")

# Replication (DESIGN §5).
LEADER_CHANGES = Counter(
    "weir_partition_leader_changes_total",
    "Leader epochs this node adopted for a partition (failovers, restarts into a new epoch)",
    ["stream", "partition"],
)
IN_SYNC_REPLICAS = Gauge(
    "weir_partition_in_sync_replicas",
    "Size of the in-sync replica set of a partition this node leads",
    ["stream", "partition"],
)
HIGH_WATERMARK = Gauge(
    "weir_partition_high_watermark", "Highest seq every in-sync replica holds (primary's view)", ["stream", "partition"]
)
DIVERGENT_TRUNCATED = Counter(
    "weir_partition_divergent_truncated_total",
    "Messages removed from a divergent tail when the replica adopted a newer leader epoch",
    ["stream", "partition"],
)
REPLICATION_DIVERGENCES = Counter(
    "weir_replication_divergences_total",
    "ReplicateMessage calls refused because a stored record differed from the primary's",
    ["stream", "partition"],
)
