"""Prometheus metrics of a partition node (prometheus-client, default registry).

Naming follows Prometheus conventions: counters end in `_total`, durations are `_seconds`
histograms, sizes are `_bytes`. Labels: `stream`, `partition`, `method`, `code`, `consumer`.

Most metrics are updated on the data path (labelled children resolved once per partition). The
consumer lag is not: `ConsumerLagCollector` computes it when /metrics is scraped.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

logger = logging.getLogger(__name__)

PUBLISHED_MESSAGES = Counter(
    "weir_published_messages_total", "Messages committed to a partition log", ["stream", "partition"]
)
PUBLISH_DUPLICATES = Counter(
    "weir_publish_duplicates_total",
    "Publishes whose msg_id the partition stored within the duplicate window (answered with the original seq)",
    ["stream", "partition"],
)
PUBLISHED_BYTES = Counter(
    "weir_published_bytes_total", "Record bytes committed to a partition log", ["stream", "partition"]
)
RETENTION_REMOVED = Counter(
    "weir_retention_removed_messages_total",
    "Messages removed by Limits retention (age, count, bytes, per subject)",
    ["stream", "partition"],
)
SCRUB_BYTES = Counter("weir_scrub_bytes_total", "Stored record bytes the background scrub re-read and checked")
SCRUB_RECORDS = Counter("weir_scrub_records_total", "Stored records the background scrub re-read and checked")
SCRUB_PASSES = Counter("weir_scrub_passes_total", "Complete passes of the background scrub over every partition")
PARTITIONS_REBUILT = Counter(
    "weir_partitions_rebuilt_total",
    "Partition files found unreadable at start-up (truncated, overwritten), moved aside and rebuilt from another copy",
)
SCRUB_REPAIRED = Counter(
    "weir_scrub_repaired_records_total", "Damaged stored records the scrub put back from another replica's copy"
)
SCRUB_RESEALED = Counter(
    "weir_scrub_resealed_batches_total",
    "Stored record batches the scrub rewrote from their records (damaged outside every stored record)",
)
SCRUB_CORRUPT = Gauge(
    "weir_scrub_corrupt_records",
    "Records whose stored bytes failed their checksum in the scrub's last pass over the partition",
    ["stream", "partition"],
)
CHECKSUM_FAILURES = Counter(
    "weir_checksum_failures_total",
    "Stored records that failed their checksum on read",
    ["stream", "partition"],
)
WAL_CHECKPOINT_SECONDS = Histogram(
    "weir_wal_checkpoint_seconds",
    "Duration of the WAL checkpoints the node ran on its background thread (all partitions)",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5),
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
    "Redeliveries: ack_wait passed, a nak, or a message an earlier primary may have delivered (after a failover)",
    ["stream", "consumer"],
)
HORIZON_PUSHES = Counter(
    "weir_consumer_horizon_pushes_total",
    "Delivery horizon pushes to in-sync replicas (a fetch past the horizon moves it 1000 seqs ahead)",
)
HORIZON_PUSH_FAILURES = Counter(
    "weir_consumer_horizon_push_failures_total",
    "Delivery horizon pushes an in-sync replica did not confirm in time (the fetch was answered anyway)",
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
REPLICATION_BATCHES = Counter(
    "weir_replication_batches_total",
    "Record batches a primary shipped to followers, by where they came from: cache (built when the "
    "commit was durable) or log (read and packed for a follower elsewhere in the log)",
    ["source"],
)
REPLICATION_FETCH_LINGERS = Counter(
    "weir_replication_fetch_lingers_total",
    "Follower fetches a primary held for a group commit in flight (replication_linger_ms), so that one "
    "answer carried that commit too",
)
REPLICATION_DIVERGENCES = Counter(
    "weir_replication_divergences_total",
    "ReplicateMessage calls refused because a stored record differed from the primary's",
    ["stream", "partition"],
)


# Consumer lag (computed at scrape time, see ConsumerLagCollector).
CONSUMER_LAG_NAME = "weir_consumer_lag_messages"
CONSUMER_LAG_HELP = (
    "Messages of a partition after a consumer's ack floor (last seq - max(ack floor, first seq - 1)): "
    "published and not yet delivered, or delivered and not yet acknowledged. Counts every message, also "
    "those the consumer's filter subject skips. Exported by the partition's primary only (sum over "
    "nodes = the cluster's lag); computed when /metrics is scraped"
)
CONSUMER_LAG_LABELS = ("stream", "consumer", "partition")


@dataclass(frozen=True, slots=True)
class ConsumerLag:
    """One consumer's lag in one partition: `lag_messages` >= 0."""

    stream: str
    consumer: str
    partition: int
    lag_messages: int


class ConsumerLagCollector(Collector):
    """`weir_consumer_lag_messages{stream, consumer, partition}` (gauge, messages), computed when
    /metrics is scraped: nothing on the publish or ack path updates it.

    `read` (`Node.consumer_lags`) runs on `loop`, the node's event loop, because the
    node's state is only consistent there; a scrape (on prometheus-client's HTTP thread) waits for
    it up to `timeout_s`. If the loop does not answer in time or is closed, the scrape still succeeds,
    with no lag samples (logged)."""

    def __init__(
        self, read: Callable[[], list[ConsumerLag]], loop: asyncio.AbstractEventLoop, timeout_s: float = 5.0
    ) -> None:
        self._read = read
        self._loop = loop
        self._timeout_s = timeout_s

    def describe(self) -> list[GaugeMetricFamily]:
        """The family without samples: registering must not run `read` (the default registry
        calls `collect` to learn the names of a collector without `describe`)."""
        return [GaugeMetricFamily(CONSUMER_LAG_NAME, CONSUMER_LAG_HELP, labels=CONSUMER_LAG_LABELS)]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(CONSUMER_LAG_NAME, CONSUMER_LAG_HELP, labels=CONSUMER_LAG_LABELS)
        for lag in self._lags():
            family.add_metric([lag.stream, lag.consumer, str(lag.partition)], lag.lag_messages)
        yield family

    def _lags(self) -> list[ConsumerLag]:
        try:
            on_loop = asyncio.get_running_loop() is self._loop
        except RuntimeError:  # no loop in this thread: the metrics HTTP server's thread
            on_loop = False
        if on_loop:
            return self._read()
        answer: concurrent.futures.Future[list[ConsumerLag]] = concurrent.futures.Future()

        def read_on_loop() -> None:
            if not answer.set_running_or_notify_cancel():
                return
            try:
                answer.set_result(self._read())
            except BaseException as error:
                answer.set_exception(error)

        try:
            self._loop.call_soon_threadsafe(read_on_loop)
        except RuntimeError:  # the loop is closed: the node is shutting down
            return []
        try:
            return answer.result(timeout=self._timeout_s)
        except concurrent.futures.TimeoutError:
            answer.cancel()
            logger.warning("consumer lag: the event loop did not answer within %.1fs; no samples", self._timeout_s)
            return []
        except Exception:
            logger.exception("consumer lag: reading the node's consumers failed; no samples")
            return []
