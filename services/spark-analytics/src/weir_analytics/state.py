"""Cumulative cluster stats (pure: no Spark, no I/O; unit-tested).

Spark reduces each micro-batch of changes to a few aggregate rows (`BatchAggregates`, see
`aggregate.py`); `ClusterStats.apply` folds them into the running state, and `snapshot` derives
the published figures (weir.v1.ClusterAnalytics): publish totals and rates per partition, lag and
ack rate per consumer, replication lag per replica, load per node and the seed's skew.

The state is saved as JSON after every batch together with the batch id (`to_json`/`from_json`),
so a restarted job resumes from it and skips the batches it already folded in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from weir.v1 import types_pb2

from weir_analytics import rows

# (stream, partition) -> (primary node id, its last seq, its first seq), from the copies' reports.
PartitionIndex = dict[tuple[str, int], tuple[str, int, int]]

# --- what Spark hands over per micro-batch -------------------------------------------------------


@dataclass(frozen=True)
class ReplicaDelta:
    """One partition copy on one node: what this batch's changes did to it (only the changes after
    the node's last stream_deleted for the stream in this batch)."""

    node_id: str
    stream: str
    partition: int
    role: str
    last_ts_ms: int
    # highest appended seq (0 = none appended in the batch)
    last_seq: int = 0
    # highest truncate first_seq (0 = no truncate in the batch)
    first_seq: int = 0
    appended_messages: int = 0
    appended_bytes: int = 0
    removed_messages: int = 0
    removed_bytes: int = 0
    # appended while this node was the partition's primary (publishes and dead-letter copies)
    published_messages: int = 0
    published_bytes: int = 0


@dataclass(frozen=True)
class ConsumerDelta:
    """One consumer in one partition on the partition's primary: this batch's counts, and its
    state after the batch's last change (only changes after its last delete in the batch)."""

    node_id: str
    stream: str
    consumer: str
    partition: int
    last_ts_ms: int
    ack_floor: int
    last_delivered: int
    pending_count: int
    delivered: int = 0
    redelivered: int = 0
    acked: int = 0
    naked: int = 0
    termed: int = 0
    dead_lettered: int = 0
    dropped: int = 0


@dataclass(frozen=True)
class LifecycleEvent:
    """A stream or consumer created / deleted on one node."""

    node_id: str
    change_seq: int
    ts_ms: int
    kind: str
    stream: str
    consumer: str = ""
    partitions: int = 0


@dataclass(frozen=True)
class PublishWindow:
    """Primary appends of one partition on one node inside one window."""

    window_start_ms: int
    stream: str
    partition: int
    node_id: str
    messages: int
    bytes: int


@dataclass(frozen=True)
class ConsumerWindow:
    """One consumer's counts inside one window (all partitions)."""

    window_start_ms: int
    stream: str
    consumer: str
    acked: int = 0
    redelivered: int = 0
    dead_lettered: int = 0
    dropped: int = 0


@dataclass(frozen=True)
class FeedCoverage:
    """Which changes of one node the batch held."""

    node_id: str
    changes: int
    first_change_seq: int
    last_change_seq: int
    skipped_changes: int = 0


@dataclass
class BatchAggregates:
    batch_id: int
    # the batch's end offset {node_id: next_change_seq}
    end_offsets: dict[str, int]
    # every change with ts_ms below this has been read by the end of the batch (0: not known)
    watermark_ms: int = 0
    replicas: list[ReplicaDelta] = field(default_factory=list)
    consumers: list[ConsumerDelta] = field(default_factory=list)
    lifecycle: list[LifecycleEvent] = field(default_factory=list)
    publish_windows: list[PublishWindow] = field(default_factory=list)
    consumer_windows: list[ConsumerWindow] = field(default_factory=list)
    coverage: list[FeedCoverage] = field(default_factory=list)

    @property
    def changes(self) -> int:
        return sum(entry.changes for entry in self.coverage)


# --- the running state -----------------------------------------------------------------------------


@dataclass
class Replica:
    role: str = rows.PRIMARY
    last_ts_ms: int = 0
    last_seq: int = 0
    first_seq: int = 0
    message_count: int = 0
    bytes: int = 0


@dataclass
class PartitionTotals:
    published_messages: int = 0
    published_bytes: int = 0


@dataclass
class ConsumerPartition:
    node_id: str
    last_ts_ms: int
    ack_floor: int
    last_delivered: int
    pending_count: int


@dataclass
class ConsumerTotals:
    delivered: int = 0
    redelivered: int = 0
    acked: int = 0
    naked: int = 0
    termed: int = 0
    dead_lettered: int = 0
    dropped: int = 0
    partitions: dict[int, ConsumerPartition] = field(default_factory=dict)


@dataclass
class FeedPosition:
    next_change_seq: int = 1
    changes: int = 0
    skipped_changes: int = 0
    # changes seen again at or below a change seq already counted (must stay 0)
    repeated_changes: int = 0
    last_change_seq: int = 0
    published_messages: int = 0
    published_bytes: int = 0


_CONSUMER_COUNTERS = ("delivered", "redelivered", "acked", "naked", "termed", "dead_lettered", "dropped")
_WINDOW_CONSUMER_COUNTERS = ("acked", "redelivered", "dead_lettered", "dropped")


@dataclass
class ClusterStats:
    """Everything the job knows, folded from every batch so far."""

    window_ms: int = 10_000
    windows_kept: int = 60
    # the last batch folded in (-1 = none yet)
    batch_id: int = -1
    # every change with ts_ms below this has been folded in (0: no watermark yet; see `report_time`)
    watermark_ms: int = 0
    streams: dict[str, int] = field(default_factory=dict)
    # newest stream_created ts_ms seen per stream (any node): tells an old copy's late delete apart
    stream_created_ms: dict[str, int] = field(default_factory=dict)
    replicas: dict[tuple[str, int, str], Replica] = field(default_factory=dict)
    partitions: dict[tuple[str, int], PartitionTotals] = field(default_factory=dict)
    consumers: dict[tuple[str, str], ConsumerTotals] = field(default_factory=dict)
    feeds: dict[str, FeedPosition] = field(default_factory=dict)
    # window_start_ms -> (stream, partition, node_id) -> [messages, bytes]
    publish_windows: dict[int, dict[tuple[str, int, str], list[int]]] = field(default_factory=dict)
    # window_start_ms -> (stream, consumer) -> [acked, redelivered, dead_lettered, dropped]
    consumer_windows: dict[int, dict[tuple[str, str], list[int]]] = field(default_factory=dict)

    # -- folding ------------------------------------------------------------------------------------

    def apply(self, batch: BatchAggregates) -> None:
        """Fold one micro-batch in. Batches must come in batch id order; a batch at or below
        `batch_id` was folded in before and is refused (ValueError), so a replay cannot count twice."""
        if batch.batch_id <= self.batch_id:
            raise ValueError(f"batch {batch.batch_id} was already folded in (state is at batch {self.batch_id})")
        for event in sorted(batch.lifecycle, key=lambda item: (item.ts_ms, item.node_id, item.change_seq)):
            self._apply_lifecycle(event)
        for delta in batch.replicas:
            self._apply_replica(delta)
        for consumer_delta in batch.consumers:
            self._apply_consumer(consumer_delta)
        for window in batch.publish_windows:
            bucket = self.publish_windows.setdefault(window.window_start_ms, {})
            figures = bucket.setdefault((window.stream, window.partition, window.node_id), [0, 0])
            figures[0] += window.messages
            figures[1] += window.bytes
        for consumer_window in batch.consumer_windows:
            consumer_bucket = self.consumer_windows.setdefault(consumer_window.window_start_ms, {})
            counts = consumer_bucket.setdefault((consumer_window.stream, consumer_window.consumer), [0, 0, 0, 0])
            for index, name in enumerate(_WINDOW_CONSUMER_COUNTERS):
                counts[index] += getattr(consumer_window, name)
        self._trim_windows()
        self.watermark_ms = max(self.watermark_ms, batch.watermark_ms)
        for node_id, next_change_seq in batch.end_offsets.items():
            self.feeds.setdefault(node_id, FeedPosition()).next_change_seq = next_change_seq
        for coverage in batch.coverage:
            position = self.feeds.setdefault(coverage.node_id, FeedPosition())
            if coverage.changes and coverage.first_change_seq <= position.last_change_seq:
                overlap = position.last_change_seq - coverage.first_change_seq + 1
                position.repeated_changes += min(overlap, coverage.changes)
            position.changes += coverage.changes
            position.skipped_changes += coverage.skipped_changes
            position.last_change_seq = max(position.last_change_seq, coverage.last_change_seq)
        self.batch_id = batch.batch_id

    def _apply_lifecycle(self, event: LifecycleEvent) -> None:
        if event.kind == rows.STREAM_CREATED:
            self.streams[event.stream] = max(event.partitions, 1)
            self.stream_created_ms[event.stream] = max(self.stream_created_ms.get(event.stream, 0), event.ts_ms)
        elif event.kind == rows.STREAM_DELETED:
            # the node's copy is gone in any case
            for key in [key for key in self.replicas if key[0] == event.stream and key[2] == event.node_id]:
                del self.replicas[key]
            # The first delete read of the current stream ends it: its totals and consumers go. A
            # delete older than the newest create is a slower node's delete of the stream before
            # it was created again (its feed is read behind the others'): it touches only its copy.
            if event.ts_ms >= self.stream_created_ms.get(event.stream, 0):
                self.streams.pop(event.stream, None)
                for partition_key in [key for key in self.partitions if key[0] == event.stream]:
                    del self.partitions[partition_key]
                for consumer_key in [key for key in self.consumers if key[0] == event.stream]:
                    del self.consumers[consumer_key]
        elif event.kind == rows.CONSUMER_CREATED:
            self.consumers.setdefault((event.stream, event.consumer), ConsumerTotals())
        elif event.kind == rows.CONSUMER_DELETED:
            self.consumers.pop((event.stream, event.consumer), None)

    def _apply_replica(self, delta: ReplicaDelta) -> None:
        replica = self.replicas.setdefault((delta.stream, delta.partition, delta.node_id), Replica())
        if delta.last_ts_ms >= replica.last_ts_ms:
            replica.role = delta.role
            replica.last_ts_ms = delta.last_ts_ms
        replica.last_seq = max(replica.last_seq, delta.last_seq)
        replica.first_seq = max(replica.first_seq, delta.first_seq)
        replica.message_count = max(0, replica.message_count + delta.appended_messages - delta.removed_messages)
        replica.bytes = max(0, replica.bytes + delta.appended_bytes - delta.removed_bytes)
        if delta.published_messages or delta.published_bytes:
            totals = self.partitions.setdefault((delta.stream, delta.partition), PartitionTotals())
            totals.published_messages += delta.published_messages
            totals.published_bytes += delta.published_bytes
            feed = self.feeds.setdefault(delta.node_id, FeedPosition())
            feed.published_messages += delta.published_messages
            feed.published_bytes += delta.published_bytes
        self.streams.setdefault(delta.stream, delta.partition + 1)
        self.streams[delta.stream] = max(self.streams[delta.stream], delta.partition + 1)

    def _apply_consumer(self, delta: ConsumerDelta) -> None:
        totals = self.consumers.setdefault((delta.stream, delta.consumer), ConsumerTotals())
        for name in _CONSUMER_COUNTERS:
            setattr(totals, name, getattr(totals, name) + getattr(delta, name))
        current = totals.partitions.get(delta.partition)
        if current is None or delta.last_ts_ms >= current.last_ts_ms:
            totals.partitions[delta.partition] = ConsumerPartition(
                delta.node_id, delta.last_ts_ms, delta.ack_floor, delta.last_delivered, delta.pending_count
            )

    def _trim_windows(self) -> None:
        for windows in (self.publish_windows, self.consumer_windows):
            for start in sorted(windows)[: max(0, len(windows) - self.windows_kept)]:
                del windows[start]

    # -- derived figures ----------------------------------------------------------------------------

    def primary_of(self, stream: str, partition: int) -> str:
        """The node that most recently acted as the partition's primary ("" if none seen)."""
        return self._partition_index().get((stream, partition), ("", 0, 0))[0]

    def last_seq_of(self, stream: str, partition: int) -> int:
        """The partition's highest appended seq over all its copies."""
        return self._partition_index().get((stream, partition), ("", 0, 0))[1]

    def first_seq_of(self, stream: str, partition: int) -> int:
        """The partition's highest truncation point (first retained seq) over its copies."""
        return self._partition_index().get((stream, partition), ("", 0, 0))[2]

    def _partition_index(self) -> PartitionIndex:
        """(stream, partition) -> (primary_of, last_seq_of, first_seq_of) in one pass over the copies."""
        best: dict[tuple[str, int], tuple[int, str]] = {}
        index: PartitionIndex = {}
        for (stream, partition, node_id), replica in self.replicas.items():
            key = (stream, partition)
            _, last_seq, first_seq = index.get(key, ("", 0, 0))
            if replica.role == rows.PRIMARY:
                candidate = (replica.last_ts_ms, node_id)
                if key not in best or candidate > best[key]:
                    best[key] = candidate
            index[key] = ("", max(last_seq, replica.last_seq), max(first_seq, replica.first_seq))
        return {key: (best[key][1] if key in best else "", last, first) for key, (_, last, first) in index.items()}

    def closed_window(self, now_ms: int) -> int:
        """Start of the last window that ended at or before `now_ms`."""
        return (now_ms // self.window_ms) * self.window_ms - self.window_ms

    def report_time(self, now_ms: int) -> int:
        """The time the window figures are reported as of: the watermark (every window that ended by
        then is complete: each of its changes is folded in), or `now_ms` for a state from a source
        that gave no watermark."""
        return self.watermark_ms or now_ms

    def consumer_lag(self, stream: str, consumer: str, index: PartitionIndex | None = None) -> int:
        """Sum over the stream's partitions of last_seq - max(ack_floor, first_seq - 1)."""
        index = self._partition_index() if index is None else index
        totals = self.consumers.get((stream, consumer))
        lag = 0
        for partition in range(self.streams.get(stream, 0)):
            _, last_seq, first_seq = index.get((stream, partition), ("", 0, 0))
            floor = max(0, first_seq - 1)
            state = totals.partitions.get(partition) if totals else None
            if state is not None:
                floor = max(floor, state.ack_floor)
            lag += max(0, last_seq - floor)
        return lag

    def node_loads(
        self, window_start_ms: int, index: PartitionIndex | None = None
    ) -> dict[str, types_pb2.AnalyticsNode]:
        index = self._partition_index() if index is None else index
        nodes = {node_id: types_pb2.AnalyticsNode(node_id=node_id) for node_id in self.feeds}
        for (stream, partition, node_id), replica in self.replicas.items():
            if replica.role == rows.PRIMARY and index[(stream, partition)][0] == node_id:
                node = nodes.setdefault(node_id, types_pb2.AnalyticsNode(node_id=node_id))
                node.partitions_led += 1
                node.message_count += replica.message_count
                node.bytes += replica.bytes
        for node_id, feed in self.feeds.items():
            nodes[node_id].published_messages = feed.published_messages
            nodes[node_id].published_bytes = feed.published_bytes
        for (_, _, node_id), figures in self.publish_windows.get(window_start_ms, {}).items():
            node = nodes.setdefault(node_id, types_pb2.AnalyticsNode(node_id=node_id))
            node.window_published_messages += figures[0]
        for node in nodes.values():
            node.publish_rate_messages_per_second = node.window_published_messages * 1000 / self.window_ms
        return dict(sorted(nodes.items()))

    def snapshot(
        self, now_ms: int, lag_overrides: Mapping[tuple[str, str], int] | None = None
    ) -> types_pb2.ClusterAnalytics:
        """The published figures as of `now_ms` (see weir.v1.ClusterAnalytics); window figures are of
        the last complete window (`report_time`). `lag_overrides`: (stream, consumer) -> lag, for
        consumers whose lag the change feed cannot give (a filter subject: the feed's appends do
        not say which subjects they hold), as their partitions' primaries count it."""
        window_start = self.closed_window(self.report_time(now_ms))
        out = types_pb2.ClusterAnalytics(
            computed_at_ms=now_ms,
            batch_id=max(self.batch_id, 0),
            window_ms=self.window_ms,
            window_start_ms=window_start,
            watermark_ms=self.watermark_ms,
        )
        index = self._partition_index()
        self._add_partitions(out, window_start, index)
        self._add_consumers(out, window_start, index, lag_overrides or {})
        self._add_replicas(out, index)
        self._add_nodes(out, window_start, index)
        for node_id, feed in sorted(self.feeds.items()):
            out.feed_positions.add(
                node_id=node_id,
                next_change_seq=feed.next_change_seq,
                changes=feed.changes,
                skipped_changes=feed.skipped_changes,
            )
        return out

    def _add_partitions(self, out: types_pb2.ClusterAnalytics, window_start: int, index: PartitionIndex) -> None:
        """Each partition's totals and its publish rate in the window starting at `window_start`."""
        seconds = self.window_ms / 1000
        window_sums: dict[tuple[str, int], tuple[int, int]] = {}
        for (stream, partition, _), figures in self.publish_windows.get(window_start, {}).items():
            messages, size = window_sums.get((stream, partition), (0, 0))
            window_sums[(stream, partition)] = (messages + figures[0], size + figures[1])
        partition_keys = sorted(set(self.partitions) | {(stream, partition) for stream, partition, _ in self.replicas})
        for stream, partition in partition_keys:
            totals = self.partitions.get((stream, partition), PartitionTotals())
            window_messages, window_bytes = window_sums.get((stream, partition), (0, 0))
            out.partitions.add(
                stream=stream,
                partition=partition,
                primary_node_id=index.get((stream, partition), ("", 0, 0))[0],
                last_seq=index.get((stream, partition), ("", 0, 0))[1],
                published_messages=totals.published_messages,
                published_bytes=totals.published_bytes,
                window_published_messages=window_messages,
                window_published_bytes=window_bytes,
                publish_rate_messages_per_second=window_messages / seconds,
                publish_rate_bytes_per_second=window_bytes / seconds,
            )

    def _add_consumers(
        self,
        out: types_pb2.ClusterAnalytics,
        window_start: int,
        index: PartitionIndex,
        overrides: Mapping[tuple[str, str], int],
    ) -> None:
        """Each consumer's lag, pending and counters, and its ack rate in the window."""
        seconds = self.window_ms / 1000
        consumer_window = self.consumer_windows.get(window_start, {})
        for (stream, consumer), totals_of in sorted(self.consumers.items()):
            counts = consumer_window.get((stream, consumer), [0, 0, 0, 0])
            out.consumers.add(
                stream=stream,
                consumer=consumer,
                lag_messages=overrides.get((stream, consumer), self.consumer_lag(stream, consumer, index)),
                pending_count=sum(state.pending_count for state in totals_of.partitions.values()),
                window_acked=counts[0],
                ack_rate_per_second=counts[0] / seconds,
                window_redelivered=counts[1],
                window_dead_lettered=counts[2],
                **{name: getattr(totals_of, name) for name in _CONSUMER_COUNTERS},
            )

    def _add_replicas(self, out: types_pb2.ClusterAnalytics, index: PartitionIndex) -> None:
        """Each copy of each partition, with its lag behind the primary."""
        for (stream, partition, node_id), replica in sorted(self.replicas.items()):
            primary_node_id, top, _ = index[(stream, partition)]
            primary = primary_node_id == node_id
            out.replicas.add(
                stream=stream,
                partition=partition,
                node_id=node_id,
                role=types_pb2.PARTITION_ROLE_PRIMARY if primary else types_pb2.PARTITION_ROLE_SECONDARY,
                last_seq=replica.last_seq,
                lag_messages=0 if primary else max(0, top - replica.last_seq),
                message_count=replica.message_count,
                bytes=replica.bytes,
            )

    def _add_nodes(self, out: types_pb2.ClusterAnalytics, window_start: int, index: PartitionIndex) -> None:
        """Each node's load and the skew between the nodes."""
        loads = self.node_loads(window_start, index)
        out.nodes.extend(loads.values())
        if loads:
            out.skew_partitions = _spread(node.partitions_led for node in loads.values())
            out.skew_message_count = _spread(node.message_count for node in loads.values())
            out.skew_bytes = _spread(node.bytes for node in loads.values())
            out.skew_window_published_messages = _spread(node.window_published_messages for node in loads.values())

    # -- persistence ---------------------------------------------------------------------------------

    def to_json(self) -> str:
        return json.dumps(
            {
                "window_ms": self.window_ms,
                "windows_kept": self.windows_kept,
                "batch_id": self.batch_id,
                "watermark_ms": self.watermark_ms,
                "streams": self.streams,
                "stream_created_ms": self.stream_created_ms,
                "replicas": [[*key, asdict(value)] for key, value in self.replicas.items()],
                "partitions": [[*key, asdict(value)] for key, value in self.partitions.items()],
                "consumers": [
                    [
                        *key,
                        {
                            **{name: getattr(value, name) for name in _CONSUMER_COUNTERS},
                            "partitions": {str(p): asdict(state) for p, state in value.partitions.items()},
                        },
                    ]
                    for key, value in self.consumers.items()
                ],
                "feeds": {node_id: asdict(value) for node_id, value in self.feeds.items()},
                "publish_windows": {
                    str(start): [[*key, figures] for key, figures in bucket.items()]
                    for start, bucket in self.publish_windows.items()
                },
                "consumer_windows": {
                    str(start): [[*key, counts] for key, counts in bucket.items()]
                    for start, bucket in self.consumer_windows.items()
                },
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> ClusterStats:
        data: dict[str, Any] = json.loads(text)
        stats = cls(window_ms=data["window_ms"], windows_kept=data["windows_kept"], batch_id=data["batch_id"])
        stats.watermark_ms = int(data.get("watermark_ms", 0))
        stats.streams = dict(data["streams"])
        stats.stream_created_ms = dict(data["stream_created_ms"])
        stats.replicas = {(s, p, n): Replica(**value) for s, p, n, value in data["replicas"]}
        stats.partitions = {(s, p): PartitionTotals(**value) for s, p, value in data["partitions"]}
        for stream, consumer, value in data["consumers"]:
            partitions = {int(p): ConsumerPartition(**state) for p, state in value.pop("partitions").items()}
            stats.consumers[(stream, consumer)] = ConsumerTotals(**value, partitions=partitions)
        stats.feeds = {node_id: FeedPosition(**value) for node_id, value in data["feeds"].items()}
        stats.publish_windows = {
            int(start): {(s, p, n): figures for s, p, n, figures in bucket}
            for start, bucket in data["publish_windows"].items()
        }
        stats.consumer_windows = {
            int(start): {(s, c): counts for s, c, counts in bucket}
            for start, bucket in data["consumer_windows"].items()
        }
        return stats


def _spread(values: Iterable[int]) -> int:
    collected = list(values)
    return max(collected) - min(collected) if collected else 0
