"""The partition node's stream and partition admin (node.py's `node.admin`): create, update,
mirror and delete a stream; host and drop the copies a placement change moves; release scheduled
messages and purge a partition this node leads.

Every lifecycle change (created, updated, deleted) is stored in the catalog together with its
change-feed entry, under the node's lifecycle lock, so the change feed and WatchStreams see each
one exactly once, in order. A create or delete that fails to store leaves the node as it was: the
partitions opened for it are removed again, or the deleted stream is reopened with its consumers.
The streams themselves (`Stream`, hosted.py) are the node's registry; this section changes them.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from weir.errors import AlreadyExistsError, InvalidArgumentError, InvalidConfigError, PositionOutOfRangeError
from weir.v1 import streams_pb2, types_pb2
from weir_server.streamconfig import apply_update, differs_in_immutable_fields, normalize_config, with_defaults

from weir_partition_node import metrics
from weir_partition_node.catalog import Catalog
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.clock import Clock
from weir_partition_node.hosted import PartitionFiles, Stream, configure_view
from weir_partition_node.node_consumers import MAX_ACK_BATCH
from weir_partition_node.node_reads import DEFAULT_READ_MESSAGES, MAX_READ_MESSAGES
from weir_partition_node.partition import Partition
from weir_partition_node.settings import NodeSettings
from weir_partition_node.streamconfig import check_placement

logger = logging.getLogger(__name__)

NO_LIMIT = 2**62  # a LIMIT that SQLite (signed 64-bit) accepts and no table reaches


async def lifecycle_change(feed: ChangeFeedClock, clock: Clock, name: str, **kind: Any) -> tuple[int, int, bytes]:
    """A lifecycle change of stream `name` (`kind`: one field of weir.v1 Change) with its change seq
    allocated: (change_seq, ts_ms, serialized Change). The caller stores it with the change it
    records, then settles the change seq (ChangeFeedClock.settle), stored or not."""
    now_ms = clock.now_ms()
    (change_seq,) = await feed.allocate(1, ts_ms=now_ms)
    change = types_pb2.Change(change_seq=change_seq, ts_ms=now_ms, stream=name, **kind)
    return change_seq, now_ms, change.SerializeToString()


class NodeStreamAdmin:
    """Stream and partition admin over the node's registry `streams` (name -> Stream). Given the
    node's `stream(name)` and `led_partition(name, index)` lookups (their errors: NoSuchStreamError,
    NoSuchPartitionError, NotLeaderError), `check_open` (ShuttingDownError) and
    `attach_consumers(stream)` (the stream's consumers onto reopened partitions)."""

    def __init__(
        self,
        settings: NodeSettings,
        *,
        streams: dict[str, Stream],
        files: PartitionFiles,
        catalog: Catalog,
        feed: ChangeFeedClock,
        clock: Clock,
        lifecycle_lock: asyncio.Lock,
        stream: Callable[[str], Stream],
        led_partition: Callable[[str, int], Partition],
        check_open: Callable[[], None],
        attach_consumers: Callable[[Stream], Awaitable[None]],
    ) -> None:
        self._settings = settings
        self._streams = streams
        self._files = files
        self._catalog = catalog
        self._feed = feed
        self._clock = clock
        self._lifecycle_lock = lifecycle_lock
        self._stream_named = stream
        self._led_partition = led_partition
        self._check_open = check_open
        self._attach_consumers = attach_consumers
        self._creating: set[asyncio.Task[tuple[types_pb2.StreamConfig, int]]] = set()

    async def lifecycle_change(self, name: str, **kind: Any) -> tuple[int, int, bytes]:
        return await lifecycle_change(self._feed, self._clock, name, **kind)

    async def create_stream(
        self, config: types_pb2.StreamConfig, placement: types_pb2.StreamPlacement | None = None
    ) -> tuple[types_pb2.StreamConfig, int]:
        """Create a stream (idempotent for an identical config and placement). Returns (effective
        config, created_at_ms). `placement` (from the router) says which partitions this node hosts
        and leads; None = standalone, every partition here. Errors: InvalidNameError,
        InvalidConfigError, InvalidSubjectError, AlreadyExistsError. A caller that goes away (its
        deadline passed: a large stream takes seconds) does not stop it half-way: it finishes, so a
        retry finds the stream made (a creation cancelled between its catalog row and its in-memory
        stream failed every retry with the catalog's UNIQUE constraint)."""
        self._check_open()
        effective = normalize_config(config, self._settings.max_message_bytes, clustered=placement is not None)
        if placement is not None:
            check_placement(effective, placement, self._settings.node_id)
        task = asyncio.get_running_loop().create_task(self._create_once(effective, placement))
        self._creating.add(task)  # held until done (one a create call in flight: max_concurrent_rpcs bounds them)
        task.add_done_callback(self._creating.discard)
        return await asyncio.shield(task)

    async def _create_once(
        self, effective: types_pb2.StreamConfig, placement: types_pb2.StreamPlacement | None
    ) -> tuple[types_pb2.StreamConfig, int]:
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
            stream = await self._files.open_stream(effective, created_at_ms, placement)
            change = await self.lifecycle_change(
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
                self._feed.settle([change[0]])
                await self._destroy_partitions(stream)
                raise
            self._feed.settle([change[0]])
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
            stream = self._stream_named(name)
            del self._streams[name]  # from here on, new requests see no_such_stream
            stream.deleted = True
            for partition in stream.partitions.values():
                await partition.close()  # commits what was already queued
            archived: list[tuple[int, int, bytes]] = []
            for partition in stream.partitions.values():
                for change_seq, record in partition.log.read_changes(0, self._feed.horizon, NO_LIMIT):
                    archived.append((change_seq, types_pb2.Change.FromString(record).ts_ms, record))
            change = await self.lifecycle_change(name, stream_deleted=types_pb2.StreamDeletedChange())
            try:
                await self._catalog.delete_stream(name, archived, change)
            except BaseException:
                self._feed.settle([change[0]])
                reopened = await self._files.open_stream(stream.config, stream.created_at_ms, stream.placement)
                reopened.consumers = stream.consumers
                await self._attach_consumers(reopened)
                self._streams[name] = reopened
                raise
            self._feed.settle([change[0]])
            await self._destroy_partitions(stream)
            if stream.placement is not None:
                await self._catalog.forget_replica_epochs(name, stream.config.partitions)
            metrics.STREAMS.set(len(self._streams))
            for partition in stream.partitions.values():
                partition.wake_waiters()

    async def update_stream(self, request: streams_pb2.UpdateStreamRequest) -> tuple[types_pb2.StreamConfig, int]:
        """Apply a partial update; lowering a bound prunes at once. Returns (config, pruned)."""
        self._check_open()
        async with self._lifecycle_lock:
            stream = self._stream_named(request.name)
            updated = apply_update(stream.config, request, self._settings.max_message_bytes)
            await self._store_config(stream, updated)
            pruned = 0
            for partition in stream.partitions.values():
                pruned += await partition.sweep()
            return updated, pruned

    async def _store_config(self, stream: Stream, updated: types_pb2.StreamConfig) -> None:
        if updated == stream.config:
            return
        change = await self.lifecycle_change(stream.name, stream_updated=types_pb2.StreamUpdatedChange(config=updated))
        try:
            await self._catalog.update_stream(stream.name, updated.SerializeToString(), change)
        finally:
            self._feed.settle([change[0]])
        stream.config = updated
        stream.max_msg_bytes = updated.max_msg_bytes
        configure_view(stream.view, updated)

    async def mirror_config(self, config: types_pb2.StreamConfig) -> None:
        """Secondary: adopt the primary's config after an UpdateStream (ReplicateStreamUpdate). Only
        the mutable fields may differ; removals it causes arrive as replicated truncations.
        Errors: NoSuchStreamError, InvalidConfigError (an immutable field differs)."""
        self._check_open()
        async with self._lifecycle_lock:
            stream = self._stream_named(config.name)
            config = with_defaults(_copy(config))  # a router record written before a field existed
            if differs_in_immutable_fields(stream.config, config):
                raise InvalidConfigError(f"stream {config.name!r}: the primary's config differs in an immutable field")
            await self._store_config(stream, config)

    # -- partition admin: scheduled messages and purges ---------------------------------------------

    async def release_scheduled(self, stream_name: str, index: int, seq: int, *, discard: bool) -> int:
        """Deliver now, or discard, the scheduled or held message at `seq` of a partition this node
        leads; returns the delivered seq (0 when discarded). Errors: NoSuchStreamError,
        NoSuchPartitionError, NotLeaderError, SchedulingDisabledError, NoSuchMessageError."""
        self._check_open()
        partition = self._led_partition(stream_name, index)
        return await partition.release_scheduled(seq, discard=discard)

    def list_scheduled(
        self, stream_name: str, index: int, from_seq: int, max_messages: int, *, held_only: bool
    ) -> tuple[list[bytes], int]:
        """The scheduled (or held) records a partition this node leads still holds, from `from_seq`:
        (records, next_seq). Errors: as `release_scheduled`, InvalidArgumentError."""
        self._check_open()
        if max_messages > MAX_READ_MESSAGES:
            raise InvalidArgumentError(f"max_messages: at most {MAX_READ_MESSAGES}, got {max_messages}")
        partition = self._led_partition(stream_name, index)
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
        partition = self._led_partition(stream_name, index)
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


def _copy(config: types_pb2.StreamConfig) -> types_pb2.StreamConfig:
    copied = types_pb2.StreamConfig()
    copied.CopyFrom(config)
    return copied
