"""Prometheus metrics of the analytics job (prometheus-client).

The cluster figures are produced at scrape time from the running state by `StatsCollector`, so
series of deleted streams and consumers disappear; the window rates are of the last window that
ended by the job's watermark, so every change inside it is counted (a window the job is still
folding is never shown).
The job's own progress uses ordinary counters and histograms.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from weir.v1 import types_pb2

BATCHES = Counter("weir_analytics_batches_total", "Micro-batches folded into the stats")
BATCH_CHANGES = Counter("weir_analytics_changes_total", "Change-feed entries processed, all nodes")
BATCH_SECONDS = Histogram(
    "weir_analytics_batch_duration_seconds",
    "Time to aggregate, store and publish one micro-batch",
    buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60),
)
LAST_BATCH = Gauge("weir_analytics_last_batch_timestamp_seconds", "When the last micro-batch was folded in")
PUBLISH_FAILURES = Counter(
    "weir_analytics_stats_publish_failures_total", "Snapshots that could not be published to the stats stream"
)


class StatsCollector(Collector):
    """Cluster figures from the latest state: `snapshot()` returns a ClusterAnalytics computed now."""

    def __init__(self, snapshot: Callable[[], types_pb2.ClusterAnalytics | None]) -> None:
        self._snapshot = snapshot
        self._lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            stats = self._snapshot()
        # Before the first batch: every family without samples, so the names are there to find.
        stats = stats if stats is not None else types_pb2.ClusterAnalytics()
        yield from _partition_metrics(stats)
        yield from _consumer_metrics(stats)
        yield from _replica_metrics(stats)
        yield from _node_metrics(stats)


def _partition_metrics(stats: types_pb2.ClusterAnalytics) -> Iterator[Metric]:
    labels = ["stream", "partition"]
    published = CounterMetricFamily(
        "weir_analytics_published_messages", "Messages appended by the partition's primaries", labels=labels
    )
    published_bytes = CounterMetricFamily(
        "weir_analytics_published_bytes", "Bytes appended by the partition's primaries", labels=labels
    )
    rate = GaugeMetricFamily(
        "weir_analytics_publish_rate_messages_per_second", "Publish rate over the last closed window", labels=labels
    )
    byte_rate = GaugeMetricFamily(
        "weir_analytics_publish_rate_bytes_per_second", "Publish byte rate over the last closed window", labels=labels
    )
    last_seq = GaugeMetricFamily("weir_analytics_partition_last_seq", "Highest appended seq", labels=labels)
    for partition in stats.partitions:
        values = [partition.stream, str(partition.partition)]
        published.add_metric(values, partition.published_messages)
        published_bytes.add_metric(values, partition.published_bytes)
        rate.add_metric(values, partition.publish_rate_messages_per_second)
        byte_rate.add_metric(values, partition.publish_rate_bytes_per_second)
        last_seq.add_metric(values, partition.last_seq)
    yield from (published, published_bytes, rate, byte_rate, last_seq)


def _consumer_metrics(stats: types_pb2.ClusterAnalytics) -> Iterator[Metric]:
    labels = ["stream", "consumer"]
    lag = GaugeMetricFamily(
        "weir_analytics_consumer_lag_messages", "Messages after the ack floor, all partitions", labels=labels
    )
    pending = GaugeMetricFamily(
        "weir_analytics_consumer_pending_messages", "Delivered and not yet acknowledged", labels=labels
    )
    ack_rate = GaugeMetricFamily(
        "weir_analytics_consumer_ack_rate_per_second", "Acks per second over the last closed window", labels=labels
    )
    counters = {
        name: CounterMetricFamily(
            f"weir_analytics_consumer_{name}", f"Messages {name.replace('_', ' ')}", labels=labels
        )
        for name in ("delivered", "redelivered", "acked", "dead_lettered", "dropped")
    }
    for consumer in stats.consumers:
        values = [consumer.stream, consumer.consumer]
        lag.add_metric(values, consumer.lag_messages)
        pending.add_metric(values, consumer.pending_count)
        ack_rate.add_metric(values, consumer.ack_rate_per_second)
        for name, family in counters.items():
            family.add_metric(values, getattr(consumer, name))
    yield from (lag, pending, ack_rate, *counters.values())


def _replica_metrics(stats: types_pb2.ClusterAnalytics) -> Iterator[Metric]:
    lag = GaugeMetricFamily(
        "weir_analytics_replication_lag_messages",
        "Seqs a partition copy is behind the partition's highest seq (0 on the primary)",
        labels=["stream", "partition", "node"],
    )
    for replica in stats.replicas:
        lag.add_metric([replica.stream, str(replica.partition), replica.node_id], replica.lag_messages)
    yield lag


def _node_metrics(stats: types_pb2.ClusterAnalytics) -> Iterator[Metric]:
    labels = ["node"]
    led = GaugeMetricFamily("weir_analytics_node_partitions_led", "Partitions this node leads", labels=labels)
    stored = GaugeMetricFamily("weir_analytics_node_messages", "Messages in the partitions it leads", labels=labels)
    stored_bytes = GaugeMetricFamily("weir_analytics_node_bytes", "Bytes in the partitions it leads", labels=labels)
    published = CounterMetricFamily(
        "weir_analytics_node_published_messages", "Messages this node appended as primary", labels=labels
    )
    rate = GaugeMetricFamily(
        "weir_analytics_node_publish_rate_messages_per_second", "Its publish rate, last closed window", labels=labels
    )
    feed_next = GaugeMetricFamily(
        "weir_analytics_feed_next_change_seq", "Next change seq the job reads from this node's feed", labels=labels
    )
    feed_skipped = CounterMetricFamily(
        "weir_analytics_feed_skipped_changes", "Changes removed by feed retention before they were read", labels=labels
    )
    for node in stats.nodes:
        led.add_metric([node.node_id], node.partitions_led)
        stored.add_metric([node.node_id], node.message_count)
        stored_bytes.add_metric([node.node_id], node.bytes)
        published.add_metric([node.node_id], node.published_messages)
        rate.add_metric([node.node_id], node.publish_rate_messages_per_second)
    for position in stats.feed_positions:
        feed_next.add_metric([position.node_id], position.next_change_seq)
        feed_skipped.add_metric([position.node_id], position.skipped_changes)
    skew = GaugeMetricFamily("weir_analytics_skew", "max - min over the nodes (seed semantics)", labels=["figure"])
    computed = GaugeMetricFamily("weir_analytics_computed_timestamp_seconds", "When these figures were computed")
    window = GaugeMetricFamily(
        "weir_analytics_window_start_timestamp_seconds",
        "Start of the window the rates are of: the last one that ended by the watermark (complete)",
    )
    watermark = GaugeMetricFamily(
        "weir_analytics_watermark_timestamp_seconds", "Every change before this time is in the figures"
    )
    if stats.computed_at_ms:
        skew.add_metric(["partitions"], stats.skew_partitions)
        skew.add_metric(["messages"], stats.skew_message_count)
        skew.add_metric(["bytes"], stats.skew_bytes)
        skew.add_metric(["window_published_messages"], stats.skew_window_published_messages)
        computed.add_metric([], stats.computed_at_ms / 1000)
        window.add_metric([], stats.window_start_ms / 1000)
        watermark.add_metric([], stats.watermark_ms / 1000)
    yield from (led, stored, stored_bytes, published, rate, feed_next, feed_skipped, skew, computed, window, watermark)
