"""The partition node core, transport-neutral: streams, publish, reads, consumers and the change feed.

`Node` holds the registry of hosted streams, the node's lifecycle (open, shutdown, the retention
sweep) and the lookups every section shares; the rest is in its sections, each a module of its own:
`node.admin` (node_admin.py: create, update, delete, placement changes, purges, scheduled
releases), `node.publisher` (node_publish.py), `node.consumers` (node_consumers.py: consumer
lifecycle, fetch and settling), `node.subscriptions` (node_subscriptions.py: push delivery),
`node.reads` (node_reads.py) and `node.changes` (feed_reads.py); the `Stream` record and how partitions open from
their files are in hosted.py (`PartitionFiles`).

The gRPC servicers are thin adapters over `Node`; everything here raises typed `WeirError`s and
takes/returns weir.v1 protobuf messages (the upb codec is the fastest representation we have).

Lifecycle: `await Node.open(settings)` loads the catalog, reopens every partition and recovers the
change-feed position; `await node.close()` refuses new writes (`shutting_down`), commits what is
queued, stops the background sweeps and closes storage. Shutdown never drops an acknowledged write.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from weir.errors import (
    LeaderLeaseExpiredError,
    NoSuchPartitionError,
    NoSuchStreamError,
    ShuttingDownError,
    WeirError,
)
from weir.subjects import (
    validate_name,
)
from weir.v1 import streams_pb2, types_pb2
from weir_server.replication import InSyncTracker
from weir_server.streamconfig import with_defaults

from weir_partition_node import metrics
from weir_partition_node.catalog import Catalog
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.clock import Clock, ManualClock, SystemClock, monotonic_ms
from weir_partition_node.delivery_horizon import PushHorizon
from weir_partition_node.feed_reads import ChangeFeedReader
from weir_partition_node.hosted import PartitionFiles, Stream
from weir_partition_node.node_admin import NodeStreamAdmin, lifecycle_change
from weir_partition_node.node_consumers import NodeConsumers
from weir_partition_node.node_publish import NodePublisher
from weir_partition_node.node_reads import (
    NodeReads,
)
from weir_partition_node.node_subscriptions import NodeSubscriptions
from weir_partition_node.partition import Partition
from weir_partition_node.settings import NodeSettings

logger = logging.getLogger(__name__)
T = TypeVar("T")

_RESERVED_KEY = "change_seq_reserved_through"
_FLOOR_KEY = "change_feed_floor"


class Node:
    def __init__(self, settings: NodeSettings, clock: Clock, catalog: Catalog, feed: ChangeFeedClock) -> None:
        self.settings = settings
        self.node_id = settings.node_id
        self._clock = clock
        self._catalog = catalog
        self.feed = feed
        self._streams: dict[str, Stream] = {}
        self._lifecycle_lock = asyncio.Lock()
        # Where partitions live on disk and how each opens (hosted.py): storage threads, checkpointer.
        self._files = PartitionFiles(
            settings, feed=feed, clock=clock, lease_refusal=self._lease_refusal, new_tracker=self.new_tracker
        )
        # Woken when any hosted partition appends or removes records (a replication session waits on it).
        self.append_waiters = self._files.append_waiters
        self._change_floor = 0
        self._closing = False
        self._sweeper: asyncio.Task[None] | None = None
        # Clustered: whether the node's heartbeat lease in Redis is still valid (set by the server);
        # while it is not, the node refuses to act as a primary (self-fencing, DESIGN §5).
        self.lease_valid: Callable[[], bool] | None = None
        # The source tails' status of a sourcing stream this node leads (set by the server: sources.py).
        self.source_status: Callable[[str], list[types_pb2.SourceStatus]] | None = None
        self._build_sections(settings, clock, catalog, feed)

    def _build_sections(self, settings: NodeSettings, clock: Clock, catalog: Catalog, feed: ChangeFeedClock) -> None:
        """The node's sections, each a module of its own, over its registry and lookups."""
        self.reads = NodeReads(
            partition=self._partition, hosted_partition=self.hosted_partition, closing=lambda: self._closing
        )
        self.publisher = NodePublisher(
            stream=self._stream,
            check_open=self._check_open,
            lease_valid=lambda: self.lease_valid is None or self.lease_valid(),
            lease_expired=self.lease_expired,
            clock=clock,
            replication_timeout_ms=settings.replication_timeout_ms,
        )
        self.consumers = NodeConsumers(
            streams=self._streams,
            stream=self._stream,
            partition=self._partition,
            check_open=self._check_open,
            closing=lambda: self._closing,
            clock=clock,
            catalog=catalog,
            feed=feed,
            lifecycle_lock=self._lifecycle_lock,
            lifecycle_change=functools.partial(lifecycle_change, feed, clock),
        )
        self.admin = NodeStreamAdmin(
            settings,
            streams=self._streams,
            files=self._files,
            catalog=catalog,
            feed=feed,
            clock=clock,
            lifecycle_lock=self._lifecycle_lock,
            stream=self._stream,
            led_partition=self._partition,
            check_open=self._check_open,
            attach_consumers=self.consumers.attach,
        )
        self.subscriptions = NodeSubscriptions(
            stream=self._stream,
            partition=self._partition,
            consumer=self.consumers.consumer,
            check_open=self._check_open,
            closing=lambda: self._closing,
            clock=clock,
        )
        self.changes = ChangeFeedReader(
            feed=feed,
            clock=clock,
            catalog=catalog,
            streams=self._streams,
            change_floor=lambda: self._change_floor,
            closing=lambda: self._closing,
        )

    # -- lifecycle -------------------------------------------------------------------------------

    @classmethod
    async def open(cls, settings: NodeSettings, clock: Clock | None = None) -> Node:
        if clock is None:
            clock = ManualClock(SystemClock().now_ms()) if settings.test_clock else SystemClock()
        data_dir = settings.data_dir
        data_dir.mkdir(parents=True, exist_ok=True)
        catalog = await Catalog.open(data_dir / "catalog.sqlite")
        reserved = await catalog.get_meta(_RESERVED_KEY)
        last_stored = await catalog.max_change_seq()

        async def reserve(through: int) -> None:
            await catalog.set_meta(_RESERVED_KEY, through)

        # Start past everything ever handed out: the lease covers memory streams and trimmed feeds.
        start = max(reserved, last_stored) + 1
        feed = ChangeFeedClock(start, start - 1, reserve)
        node = cls(settings, clock, catalog, feed)
        try:
            await node._open_streams()
        except BaseException:
            # What opened closes again (the catalog's and the checkpointer's threads would keep the
            # process from exiting with the error)
            await node.close()
            raise
        node._files.remove_orphans(node._streams)
        for stream_name, index, finding, detail in node._files.findings_at_open:
            await node.record_storage_finding(stream_name, index, finding, detail=detail)
        node._files.findings_at_open.clear()
        await node.consumers.restore(await catalog.load_consumers())
        if isinstance(node._clock, ManualClock):
            node._clock.on_advance(node._wake_all_partitions)
        metrics.STREAMS.set(len(node._streams))
        node._sweeper = asyncio.get_running_loop().create_task(node._sweep_forever(), name="retention-sweeper")
        logger.info("node %s open: %d streams, change feed at %d", node.node_id, len(node._streams), start)
        return node

    async def _open_streams(self) -> None:
        """Every stream of the catalog, opened (start-up; each partition file checked)."""
        self._change_floor = await self._catalog.get_meta(_FLOOR_KEY)
        for name, config_bytes, created_at_ms, placement_bytes in await self._catalog.load_streams():
            config = with_defaults(types_pb2.StreamConfig.FromString(config_bytes))
            placement = types_pb2.StreamPlacement.FromString(placement_bytes) if placement_bytes else None
            epochs = await self._catalog.replica_epochs(name) if placement is not None else None
            self._streams[name] = await self._files.open_stream(config, created_at_ms, placement, epochs, check=True)

    def use_horizon_pusher(self, push: PushHorizon) -> None:
        """Clustered: how every partition raises a consumer's delivery horizon on its in-sync
        replicas before it answers a fetch (delivery_horizon.py)."""
        self._files.push_horizon = push

    def begin_shutdown(self) -> None:
        """Refuse new requests with `ShuttingDownError` and end change-feed tails and watches; work
        already accepted (queued publishes) still completes. `close()` finishes the shutdown."""
        self._closing = True
        self.feed.wake_all()
        self._wake_all_partitions()

    def _wake_all_partitions(self) -> None:
        for stream in self._streams.values():
            for partition in stream.partitions.values():
                partition.wake_waiters()
                partition.clock_moved()  # the manual clock moved: schedule records may be due

    @property
    def clock(self) -> Clock:
        return self._clock

    async def close(self) -> None:
        self.begin_shutdown()
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        for stream in self._streams.values():
            for partition in stream.partitions.values():
                await partition.close()
                partition.log.close()
        self.feed.wake_all()
        await self._catalog.close()
        await self._files.close()

    def rebuilding_partitions(self) -> tuple[tuple[str, int], ...]:
        """(stream, partition) this node rebuilds from another copy (its heartbeat carries them)."""
        return tuple(
            (name, index)
            for name, stream in sorted(self._streams.items())
            for index, partition in sorted(stream.partitions.items())
            if partition.rebuilding
        )

    def new_tracker(
        self,
        config: types_pb2.StreamConfig,
        entry: types_pb2.PartitionPlacement,
        in_sync: list[str],
        high_watermark: int,
    ) -> InSyncTracker | None:
        """The in-sync tracker of a partition this node starts leading (None without followers: one
        copy, unless a move is adding one)."""
        if not entry.secondary_node_ids:
            return None
        return InSyncTracker.start(
            self.node_id,
            [entry.primary_node_id, *entry.secondary_node_ids],
            in_sync,
            lag_max_ms=self.settings.replica_lag_max_ms,
            now_ms=monotonic_ms(),
            high_watermark=high_watermark,
        )

    def _check_open(self) -> None:
        if self._closing:
            raise ShuttingDownError(f"node {self.node_id} is shutting down")

    # -- stream lifecycle --------------------------------------------------------------------------

    def _stream(self, name: str) -> Stream:
        stream = self._streams.get(name)
        if stream is None:
            validate_name(name)
            raise NoSuchStreamError(f"stream {name!r} does not exist", stream=name)
        return stream

    def _partition(self, name: str, index: int) -> Partition:
        """The partition `index` of a stream, which this node must lead. Errors: NoSuchStreamError,
        NoSuchPartitionError, NotLeaderError (hosted as a secondary, or placed on another node)."""
        stream = self._stream(name)
        if index >= stream.config.partitions:
            raise NoSuchPartitionError(
                f"stream {name!r} has {stream.config.partitions} partition(s); partition {index} does not exist",
                stream=name,
                partition=index,
            )
        if index not in stream.led_set:
            raise stream.not_leader(index)
        if self.lease_valid is not None and not self.lease_valid():
            raise self.lease_expired()
        return stream.partitions[index]

    def hosted_partition(self, name: str, index: int) -> Partition:
        """Partition `index` of a stream hosted here in any role (replication, internal reads).
        Errors: NoSuchStreamError, NoSuchPartitionError (not hosted here)."""
        stream = self._stream(name)
        partition = stream.partitions.get(index)
        if partition is None:
            raise NoSuchPartitionError(
                f"node {self.node_id} hosts no partition {index} of stream {name!r}", stream=name, partition=index
            )
        return partition

    def hosted_stream(self, name: str) -> Stream | None:
        return self._streams.get(name)

    def hosted_streams(self) -> list[Stream]:
        """The streams the router placed here (a clustered node's)."""
        return [stream for stream in self._streams.values() if stream.placement is not None]

    def sourcing_streams(self) -> list[Stream]:
        """The streams with sources this node leads (partition 0), standalone or clustered."""
        return [
            stream
            for stream in self._streams.values()
            if stream.config.sources and not stream.deleted and 0 in stream.led_set
        ]

    def all_partitions(self) -> list[tuple[str, int, Partition]]:
        """(stream, index, partition) of every partition this node stores, in any role."""
        return [
            (name, index, partition)
            for name, stream in self._streams.items()
            for index, partition in stream.partitions.items()
        ]

    def _lease_refusal(self) -> LeaderLeaseExpiredError | None:
        """The error a primary refuses writes with while its heartbeat lease is lapsed, else None."""
        if self.lease_valid is not None and not self.lease_valid():
            return self.lease_expired()
        return None

    def lease_expired(self) -> LeaderLeaseExpiredError:
        return LeaderLeaseExpiredError(
            f"node {self.node_id} has not renewed its heartbeat lease in Redis in time; another node may lead "
            "its partitions now, so it refuses to act as primary until Redis answers again",
            node_id=self.node_id,
        )

    @property
    def catalog(self) -> Catalog:
        return self._catalog

    async def record_leadership(self, stream: str, partition: int, entry: types_pb2.PartitionPlacement) -> None:
        """A change-feed entry (LeaderChange) saying this node took the lead of the partition under
        `entry`'s epoch (WatchStreams' LEADER_CHANGED); failures to store it are logged, not raised."""
        preferred = entry.replica_node_ids[0] if entry.replica_node_ids else entry.primary_node_id
        change = types_pb2.LeaderChange(
            leader_epoch=entry.leader_epoch, primary_node_id=entry.primary_node_id, preferred_leader_node_id=preferred
        )
        await self._record_node_change(stream, partition, "the leader change", leader_changed=change)

    async def record_storage_finding(
        self, stream: str, partition: int, finding: str, seqs: Sequence[int] = (), detail: str = ""
    ) -> None:
        """A change-feed entry (StorageFindingChange) for what a storage check found in `stream`'s
        `partition`: `finding` is one of the kinds types.proto lists, `seqs` the records (at most
        100 are kept). Errors of storing it are logged, not raised: the finding is also logged and
        counted by whoever found it (allocating its change seq can raise, like any change's)."""
        change = types_pb2.StorageFindingChange(finding=finding, seqs=list(seqs)[:100], detail=detail)
        await self._record_node_change(stream, partition, f"the {finding} finding", storage_finding=change)

    async def _record_node_change(self, stream: str, partition: int, what: str, **kind: Any) -> None:
        """A change of this node's own (not replicated) in its feed; a failure to store it is logged
        (allocating its change seq can raise, like any change's)."""
        now_ms = self._clock.now_ms()
        (change_seq,) = await self.feed.allocate(1, ts_ms=now_ms)
        try:
            change = types_pb2.Change(change_seq=change_seq, ts_ms=now_ms, stream=stream, partition=partition, **kind)
            await self._catalog.add_change((change_seq, now_ms, change.SerializeToString()))
        except Exception as error:
            logger.warning("%s/%d: could not add %s to the change feed: %r", stream, partition, what, error)
        finally:
            self.feed.settle([change_seq])

    def stream_info(self, name: str) -> streams_pb2.GetStreamInfoResponse:
        stream = self._stream(name)
        stats = types_pb2.StreamStats()
        for partition in stream.partitions.values():
            stats.msg_count += partition.msg_count
            stats.bytes += partition.bytes
            stats.partitions.add(
                partition=partition.index,
                first_seq=partition.first_seq,
                last_seq=partition.last_seq,
                msg_count=partition.msg_count,
                bytes=partition.bytes,
                role=partition.role,
                leader_epoch=partition.leader_epoch,
                high_watermark=partition.high_watermark,
                in_sync_node_ids=partition.tracker.in_sync_sorted() if partition.tracker is not None else [],
            )
        info = streams_pb2.GetStreamInfoResponse(config=stream.config, stats=stats, created_at_ms=stream.created_at_ms)
        if stream.config.sources and self.source_status is not None:
            info.sources_status.extend(self.source_status(name))
        return info

    def list_streams(self) -> list[str]:
        return sorted(self._streams)

    def consumer_lags(self) -> list[metrics.ConsumerLag]:
        """Every live consumer's lag in every partition this node leads (a secondary's copy is
        skipped, so the cluster's sum counts each partition once): last seq - max(ack floor,
        first seq - 1), so messages removed by retention are not lag. Event loop only."""
        lags: list[metrics.ConsumerLag] = []
        for name in self.list_streams():
            stream = self._streams[name]
            if stream.deleted:
                continue
            live = {consumer for consumer, record in stream.consumers.items() if not record.deleted}
            for index, partition in sorted(stream.partitions.items()):
                if not partition.leading:
                    continue
                removed_through = max(partition.first_seq - 1, 0)
                for consumer, cursor in sorted(partition.consumers.items()):
                    if consumer in live:
                        floor = max(cursor.ack_floor, removed_through)
                        lags.append(metrics.ConsumerLag(name, consumer, index, max(partition.last_seq - floor, 0)))
        return lags

    # -- background work -------------------------------------------------------------------------------

    async def _sweep_forever(self) -> None:
        interval_s = self.settings.retention_sweep_interval_ms / 1000
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.sweep_once()
            except WeirError as error:
                logger.warning("retention sweep: %s", error)
            except Exception:
                logger.exception("retention sweep failed")

    async def sweep_once(self) -> int:
        """Enforce max_age_ms on every partition, dead-letter exhausted pending messages and trim
        the change feed; returns messages removed."""
        removed = 0
        await self.consumers.expire_exhausted()
        now_ms = self._clock.now_ms()
        for stream in list(self._streams.values()):
            by_age = bool(stream.view.bounds.max_age_ms)
            for partition in stream.partitions.values():
                if partition.msg_count and partition.leading and (by_age or partition.expiry_due(now_ms)):
                    removed += await partition.sweep()
        metrics.CHANGE_FEED_LAST_SEQ.set(self.feed.horizon)
        excess_floor = self.feed.horizon - self.settings.change_feed_max_changes
        if excess_floor > self._change_floor:
            await self._catalog.set_meta(_FLOOR_KEY, excess_floor)
            self._change_floor = excess_floor  # readers below this now get change_feed_truncated
            await self._catalog.drop_changes_before(excess_floor + 1)
            for stream in list(self._streams.values()):
                for partition in stream.partitions.values():
                    await partition.drop_changes_before(excess_floor + 1)
        return removed
