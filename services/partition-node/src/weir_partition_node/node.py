"""The partition node core, transport-neutral: streams, publish, reads, consumers and the change feed.

`Node` holds the hosted streams, their lifecycle and admin (create, update, delete, placement,
purges, scheduled releases); the rest is in its sections, each a module of its own:
`node.publisher` (node_publish.py), `node.consumers` (node_consumers.py), `node.reads`
(node_reads.py) and `node.changes` (feed_reads.py); the `Stream` record and how partitions open from
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
import logging
import shutil
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from weir.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    InvalidConfigError,
    LeaderLeaseExpiredError,
    NoSuchPartitionError,
    NoSuchStreamError,
    PositionOutOfRangeError,
    ShuttingDownError,
    WeirError,
)
from weir.subjects import (
    validate_name,
)
from weir.v1 import streams_pb2, types_pb2
from weir_server.replication import InSyncTracker
from weir_server.streamconfig import apply_update, differs_in_immutable_fields, normalize_config, with_defaults

from weir_partition_node import metrics
from weir_partition_node.catalog import Catalog
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.clock import Clock, ManualClock, SystemClock, monotonic_ms
from weir_partition_node.feed_reads import ChangeFeedReader
from weir_partition_node.hosted import PartitionFiles, Stream, configure_view
from weir_partition_node.node_consumers import MAX_ACK_BATCH, NodeConsumers
from weir_partition_node.node_publish import NodePublisher
from weir_partition_node.node_reads import (
    DEFAULT_READ_MESSAGES,
    MAX_READ_MESSAGES,
    NodeReads,
)
from weir_partition_node.partition import Partition
from weir_partition_node.settings import NodeSettings
from weir_partition_node.streamconfig import check_placement

logger = logging.getLogger(__name__)
T = TypeVar("T")

NO_LIMIT = 2**62  # a LIMIT that SQLite (signed 64-bit) accepts and no table reaches
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
        self._change_floor = 0
        self._closing = False
        self._sweeper: asyncio.Task[None] | None = None
        # Clustered: whether the node's heartbeat lease in Redis is still valid (set by the server);
        # while it is not, the node refuses to act as a primary (self-fencing, DESIGN §5).
        self.lease_valid: Callable[[], bool] | None = None
        # The source tails' status of a sourcing stream this node leads (set by the server: sources.py).
        self.source_status: Callable[[str], list[types_pb2.SourceStatus]] | None = None
        # The node's sections besides stream admin, publish and consumers (its own modules).
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
            lifecycle_change=self._lifecycle_change,
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
            self._streams[name] = self._files.open_stream(config, created_at_ms, placement, epochs, check=True)

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

    async def _lifecycle_change(self, name: str, **kind: Any) -> tuple[int, int, bytes]:
        now_ms = self._clock.now_ms()
        (change_seq,) = await self.feed.allocate(1, ts_ms=now_ms)
        change = types_pb2.Change(change_seq=change_seq, ts_ms=now_ms, stream=name, **kind)
        return change_seq, now_ms, change.SerializeToString()

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

    async def create_stream(
        self, config: types_pb2.StreamConfig, placement: types_pb2.StreamPlacement | None = None
    ) -> tuple[types_pb2.StreamConfig, int]:
        """Create a stream (idempotent for an identical config and placement). Returns (effective
        config, created_at_ms). `placement` (from the router) says which partitions this node hosts
        and leads; None = standalone, every partition here. Errors: InvalidNameError,
        InvalidConfigError, InvalidSubjectError, AlreadyExistsError."""
        self._check_open()
        effective = normalize_config(config, self.settings.max_message_bytes, clustered=placement is not None)
        if placement is not None:
            check_placement(effective, placement, self.node_id)
        async with self._lifecycle_lock:
            existing = self._streams.get(effective.name)
            if existing is not None:
                if existing.config == effective and existing.placement == placement:
                    return existing.config, existing.created_at_ms
                what = "config" if existing.config != effective else "placement"
                raise AlreadyExistsError(
                    f"stream {effective.name!r} already exists with a different {what}", stream=effective.name
                )
            created_at_ms = self._clock.now_ms()
            stream = self._files.open_stream(effective, created_at_ms, placement)
            change = await self._lifecycle_change(
                effective.name, stream_created=types_pb2.StreamCreatedChange(config=effective)
            )
            try:
                await self._catalog.create_stream(
                    effective.name,
                    effective.SerializeToString(),
                    created_at_ms,
                    change,
                    placement.SerializeToString() if placement is not None else None,
                )
            except BaseException:
                self.feed.settle([change[0]])
                await self._destroy_partitions(stream)
                raise
            self.feed.settle([change[0]])
            self._streams[effective.name] = stream
            metrics.STREAMS.set(len(self._streams))
            return effective, created_at_ms

    async def _destroy_partitions(self, stream: Stream) -> None:
        """Close and remove the stream's partition logs. What can take long runs off the event loop,
        so the node's other partitions go on meanwhile: waiting for a WAL checkpoint in progress
        (10-50 ms) and removing the files (a large log takes long). Closing the connections, which
        the event loop's reads use, stays on it."""
        for partition in stream.partitions.values():
            await self._close_partition(partition)
        await asyncio.to_thread(shutil.rmtree, self._files.stream_dir(stream.name), ignore_errors=True)

    async def _close_partition(self, partition: Partition) -> None:
        """Commit what is queued and close the log (a WAL checkpoint in progress is waited for off
        the event loop; closing the connections, which the loop's reads use, stays on it)."""
        await partition.close()
        await asyncio.to_thread(partition.log.stop_checkpoints)
        partition.log.close()
        partition.forget_metrics()

    def host_partitions(self, stream: Stream, indexes: Sequence[int], placement: types_pb2.StreamPlacement) -> None:
        """Open the partitions a placement change gives this node (a move adds it as a copy):
        empty logs that follow their primary, under the placement's epochs, with the stream's
        consumers attached (their state arrives from the primary with replication). The caller
        stores the placement (ReplicaManager.apply_record)."""
        for index in indexes:
            partition = self._files.open_partition(
                stream.config, stream.view, index, leading=False, placement=placement, replica_epochs=None, check=False
            )
            stream.partitions[index] = partition
            for consumer in stream.consumers.values():
                partition.consumer_ops.restore(consumer.spec, 0, None, 0)
            logger.info("%s/%d: hosted here now (a new copy, following its primary)", stream.name, index)

    async def drop_partitions(self, stream: Stream, indexes: Sequence[int]) -> None:
        """Close and remove the copies a placement change took from this node (a move removed it);
        the stream's other partitions stay. Nothing here leads them any more (the router moved
        leadership first)."""
        for index in indexes:
            partition = stream.partitions.pop(index)
            stream.fenced.discard(index)
            await self._close_partition(partition)
            partition.wake_waiters()
            await asyncio.to_thread(shutil.rmtree, self._files.stream_dir(stream.name) / str(index), ignore_errors=True)
            logger.info("%s/%d: copy removed from this node (moved elsewhere)", stream.name, index)
        stream.set_led(set(stream.led) - set(indexes))

    async def delete_stream(self, name: str) -> None:
        """Delete a stream and all its messages. Errors: NoSuchStreamError."""
        self._check_open()
        async with self._lifecycle_lock:
            stream = self._stream(name)
            del self._streams[name]  # from here on, new requests see no_such_stream
            stream.deleted = True
            for partition in stream.partitions.values():
                await partition.close()  # commits what was already queued
            archived: list[tuple[int, int, bytes]] = []
            for partition in stream.partitions.values():
                for change_seq, record in partition.log.read_changes(0, self.feed.horizon, NO_LIMIT):
                    archived.append((change_seq, types_pb2.Change.FromString(record).ts_ms, record))
            change = await self._lifecycle_change(name, stream_deleted=types_pb2.StreamDeletedChange())
            try:
                await self._catalog.delete_stream(name, archived, change)
            except BaseException:
                self.feed.settle([change[0]])
                reopened = self._files.open_stream(stream.config, stream.created_at_ms, stream.placement)
                reopened.consumers = stream.consumers
                await self.consumers.attach(reopened)
                self._streams[name] = reopened
                raise
            self.feed.settle([change[0]])
            await self._destroy_partitions(stream)
            if stream.placement is not None:
                await self._catalog.forget_replica_epochs(name, stream.config.partitions)
            metrics.STREAMS.set(len(self._streams))
            for partition in stream.partitions.values():
                partition.wake_waiters()

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

    async def update_stream(self, request: streams_pb2.UpdateStreamRequest) -> tuple[types_pb2.StreamConfig, int]:
        """Apply a partial update; lowering a bound prunes at once. Returns (config, pruned)."""
        self._check_open()
        async with self._lifecycle_lock:
            stream = self._stream(request.name)
            updated = apply_update(stream.config, request, self.settings.max_message_bytes)
            await self._store_config(stream, updated)
            pruned = 0
            for partition in stream.partitions.values():
                pruned += await partition.sweep()
            return updated, pruned

    async def _store_config(self, stream: Stream, updated: types_pb2.StreamConfig) -> None:
        if updated == stream.config:
            return
        change = await self._lifecycle_change(stream.name, stream_updated=types_pb2.StreamUpdatedChange(config=updated))
        try:
            await self._catalog.update_stream(stream.name, updated.SerializeToString(), change)
        finally:
            self.feed.settle([change[0]])
        stream.config = updated
        stream.max_msg_bytes = updated.max_msg_bytes
        configure_view(stream.view, updated)

    async def mirror_config(self, config: types_pb2.StreamConfig) -> None:
        """Secondary: adopt the primary's config after an UpdateStream (ReplicateStreamUpdate). Only
        the mutable fields may differ; removals it causes arrive as replicated truncations.
        Errors: NoSuchStreamError, InvalidConfigError (an immutable field differs)."""
        self._check_open()
        async with self._lifecycle_lock:
            stream = self._stream(config.name)
            config = with_defaults(_copy(config))  # a router record written before a field existed
            if differs_in_immutable_fields(stream.config, config):
                raise InvalidConfigError(f"stream {config.name!r}: the primary's config differs in an immutable field")
            await self._store_config(stream, config)

    # -- scheduled messages and purges ------------------------------------------------------------

    async def release_scheduled(self, stream_name: str, index: int, seq: int, *, discard: bool) -> int:
        """Deliver now, or discard, the scheduled or held message at `seq` of a partition this node
        leads; returns the delivered seq (0 when discarded). Errors: NoSuchStreamError,
        NoSuchPartitionError, NotLeaderError, SchedulingDisabledError, NoSuchMessageError."""
        self._check_open()
        partition = self._partition(stream_name, index)
        return await partition.release_scheduled(seq, discard=discard)

    def list_scheduled(
        self, stream_name: str, index: int, from_seq: int, max_messages: int, *, held_only: bool
    ) -> tuple[list[bytes], int]:
        """The scheduled (or held) records a partition this node leads still holds, from `from_seq`:
        (records, next_seq). Errors: as `release_scheduled`, InvalidArgumentError."""
        self._check_open()
        if max_messages > MAX_READ_MESSAGES:
            raise InvalidArgumentError(f"max_messages: at most {MAX_READ_MESSAGES}, got {max_messages}")
        partition = self._partition(stream_name, index)
        return partition.list_scheduled(from_seq, max_messages or DEFAULT_READ_MESSAGES, held_only=held_only)

    async def purge_partition(
        self, stream_name: str, index: int, keep_from_seq: int | None, seqs: Sequence[int] = ()
    ) -> tuple[int, int]:
        """Remove the partition's messages below `keep_from_seq` (None: all stored now), or with
        `seqs` exactly those (at most MAX_ACK_BATCH). Returns (purged, first_seq afterwards).
        Errors: PositionOutOfRangeError (keep_from_seq beyond the next seq, as Kafka's
        DeleteRecords), InvalidArgumentError (seqs with keep_from_seq, or too many),
        NoSuchStreamError, NoSuchPartitionError, NotLeaderError, ShuttingDownError."""
        self._check_open()
        partition = self._partition(stream_name, index)
        if seqs and keep_from_seq is not None:
            raise InvalidArgumentError("seqs and keep_from_seq: give one of them", stream=stream_name)
        if len(seqs) > MAX_ACK_BATCH:
            raise InvalidArgumentError(f"seqs: at most {MAX_ACK_BATCH}, got {len(seqs)}", stream=stream_name)
        if keep_from_seq is not None and keep_from_seq > partition.last_seq + 1:
            raise PositionOutOfRangeError(
                f"keep_from_seq {keep_from_seq} is beyond partition {index} of {stream_name!r}: its next seq is "
                f"{partition.last_seq + 1} (omit it to purge everything)",
                stream=stream_name,
                partition=index,
            )
        purged = await partition.purge(keep_from_seq, seqs)
        return purged, partition.first_seq

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


def _copy(config: types_pb2.StreamConfig) -> types_pb2.StreamConfig:
    copied = types_pb2.StreamConfig()
    copied.CopyFrom(config)
    return copied
