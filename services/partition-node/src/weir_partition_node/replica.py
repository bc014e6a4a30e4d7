"""A clustered node's side of replication (DESIGN §5): roles, leader epochs, fencing, the in-sync
set, and the Replication service's transport-neutral core.

- **Roles and epochs.** The stream records in Redis (written by the router's controller) say which
  node leads each partition under which leader epoch. `apply_record` adopts a record: a partition
  whose log belongs to an older epoch first truncates its divergent tail (`valid_log_end` over the
  record's epoch history), the new epoch is stored with the placement in the catalog, and only then
  does the node lead or follow under it. Records arrive by the controller's ApplyPlacement push, by
  a poll every `placement_refresh_ms`, and at start (before the node serves).
- **Fencing.** A replica refuses replication under an older epoch (`fenced`); a node whose heartbeat
  lease lapsed (Redis unreachable for longer than `heartbeat_ttl_ms`) refuses to act as primary,
  since the controller may already have replaced it (`Membership.lease_valid`).
- **In-sync set.** The primary's `InSyncTracker` hears each follower's applied seq with every
  FetchReplication; `ReplicaManager.in_sync` (replica_insync.py) persists in-sync changes in Redis
  (compare-and-set on the epoch) before applying them, so the controller never promotes a replica
  the primary stopped waiting for.
- **The primary's side** (FetchReplication, GetConsumerSnapshots) is `ReplicaManager.primary`,
  replica_primary.py; **the secondary's side** (the pushes that change its copy: ReplicateMessage,
  ReplicateTruncate, ReplicateWorkQueueAck, ReplicateConsumerState) is `ReplicaManager.secondary`,
  replica_secondary.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from redis.exceptions import RedisError
from weir.errors import (
    NoSuchStreamError,
    WeirError,
)
from weir.subjects import validate_name
from weir.v1 import internal_pb2, types_pb2
from weir_server.replication import ReplicationResult, valid_log_end

from weir_partition_node import metrics
from weir_partition_node.commit_items import (
    TruncateTail,
)
from weir_partition_node.hosted import Stream
from weir_partition_node.membership import Membership
from weir_partition_node.node import Node
from weir_partition_node.partition import Partition
from weir_partition_node.replica_insync import InSyncMaintenance
from weir_partition_node.replica_primary import PrimaryReplication
from weir_partition_node.replica_secondary import SecondaryReplication
from weir_partition_node.streamconfig import hosted_partitions

logger = logging.getLogger(__name__)


def epochs_ahead(stream: Stream, record: types_pb2.StreamRecord) -> dict[tuple[str, int], int]:
    """(stream, partition) -> this node's leader epoch, for each hosted partition whose epoch in
    `record` (the metadata store's) is lower than the one this node adopted (pure)."""
    entries = record.placement.partitions
    return {
        (stream.name, index): partition.leader_epoch
        for index, partition in stream.partitions.items()
        if index < len(entries) and entries[index].leader_epoch < partition.leader_epoch
    }


class ReplicaManager:
    def __init__(self, node: Node, membership: Membership) -> None:
        self.node = node
        self.membership = membership
        self._locks: dict[str, asyncio.Lock] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._refresh_now = asyncio.Event()
        # (stream, partition) -> this node's leader epoch, where the metadata store records an older
        # one (it lost writes): reported with the heartbeat (NodeRecord.ahead_partitions).
        self.ahead: dict[tuple[str, int], int] = {}
        # The in-sync sets of the partitions this node leads (replica_insync.py).
        self.in_sync = InSyncMaintenance(node, membership, self._refresh_now)
        # ReplicateMessage, ReplicateTruncate, ReplicateWorkQueueAck, ReplicateConsumerState.
        self.secondary = SecondaryReplication(node, refresh_stream=self.refresh_stream, check_epoch=self.check_epoch)
        # FetchReplication(Stream) and GetConsumerSnapshots.
        self.primary = PrimaryReplication(
            node, membership, check_epoch=self.check_epoch, maybe_join=self.in_sync.maybe_join
        )

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Adopt the current records from Redis (before the node serves), then keep polling."""
        await self.refresh()
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._refresh_forever(), name="placement-refresh"),
            loop.create_task(self.in_sync.run_forever(), name="in-sync-maintenance"),
        ]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def stream_lock(self, stream: str) -> asyncio.Lock:
        lock = self._locks.get(stream)
        if lock is None:
            lock = self._locks[stream] = asyncio.Lock()
        return lock

    # -- adopting placements ------------------------------------------------------------------------

    async def refresh(self) -> None:
        """Read the records of every hosted stream and adopt the changed ones."""
        streams = self.node.hosted_streams()
        if not streams:
            return
        records = await self.membership.stream_records([stream.name for stream in streams])
        ahead: dict[tuple[str, int], int] = {}
        for stream in streams:
            record = records.get(stream.name)
            if record is None:
                continue  # deleted (or never recorded: a create the router rolled back)
            if self._differs(stream, record):
                await self.apply_record(record)
            ahead.update(epochs_ahead(stream, record))
        if ahead != self.ahead:
            for (name, index), epoch in sorted(ahead.items() - self.ahead.items()):
                logger.error(
                    "%s/%d: the metadata store records leader epoch %d, older than this node's %d: it lost "
                    "writes (a Redis restarted without its last writes?); reported to the controller, which "
                    "restores the newest placement the nodes hold",
                    name,
                    index,
                    records[name].placement.partitions[index].leader_epoch,
                    epoch,
                )
        self.ahead = ahead

    def _differs(self, stream: Stream, record: types_pb2.StreamRecord) -> bool:
        if stream.placement is None:
            return False
        hosted, _ = hosted_partitions(record.config, record.placement, self.node.node_id)
        if set(hosted) != set(stream.partitions):  # a move added or removed a copy here
            return True
        for index, partition in stream.partitions.items():
            entry = record.placement.partitions[index]
            if entry.leader_epoch != partition.leader_epoch:
                return True
        return False

    async def apply_record(self, record: types_pb2.StreamRecord) -> list[internal_pb2.GetReplicaStateResponse]:
        """Adopt `record` for the partitions this node hosts (see the module docstring). Returns the
        node's state per hosted partition afterwards. Records older than what the node knows are
        ignored (their epochs are lower)."""
        name = record.config.name
        async with self.stream_lock(name):
            stream = self.node.hosted_stream(name)
            if stream is None or stream.placement is None:
                return []
            placement = record.placement
            primaries_before = {entry.partition: entry.primary_node_id for entry in stream.placement.partitions}
            changed: list[int] = []
            for index, partition in stream.partitions.items():
                entry = placement.partitions[index]
                if entry.leader_epoch < partition.leader_epoch:  # an older record (a late push): ignore it
                    return [self.state_of(hosted) for hosted in stream.partitions.values()]
                if entry.leader_epoch > partition.leader_epoch:
                    changed.append(index)
            if not await self._adopt_hosting(stream, placement):
                return []  # no copy of the stream is left here
            changed = [index for index in changed if index in stream.partitions]
            if changed:
                await self._enter_epochs(stream, placement, changed)
            stream.placement = placement
            led = {
                index for index in stream.partitions if placement.partitions[index].primary_node_id == self.node.node_id
            }
            for index in changed:
                await self._take_role(
                    stream, index, placement.partitions[index], leading=index in led, primaries_before=primaries_before
                )
            stream.set_led(led)
            return [self.state_of(partition) for partition in stream.partitions.values()]

    async def _enter_epochs(self, stream: Stream, placement: types_pb2.StreamPlacement, changed: list[int]) -> None:
        """The `changed` partitions (a newer leader epoch in `placement`) stop leading first, so no
        write lands while they truncate; each drops the tail its log holds beyond what the new
        epoch's history keeps (`valid_log_end`); the new epochs are stored with the placement, and
        only then adopted."""
        name = stream.name
        stream.fenced -= set(changed)  # a handover's fence ends with the epoch it fenced
        stream.set_led(set(stream.led) - set(changed))
        epochs: dict[int, int] = {}
        for index in changed:
            partition = stream.partitions[index]
            entry = placement.partitions[index]
            history = [(item.leader_epoch, item.start_seq) for item in entry.epoch_starts]
            partition.set_role(leading=False, leader_epoch=entry.leader_epoch, tracker=None, min_insync=1)
            # A commit decided while it still led may be landing now: let it land (what is
            # queued behind it is refused) before judging where the log ends, or its records
            # would survive the truncation as a divergent tail.
            await partition.drain()
            keep = valid_log_end(partition.replica_epoch, partition.last_seq, history)
            if keep < partition.last_seq:
                dropped = await partition.replica_edit(TruncateTail(keep))
                logger.warning(
                    "%s/%d: truncated a divergent tail of %d message(s) after seq %d (epoch %d -> %d)",
                    name,
                    index,
                    dropped,
                    keep,
                    partition.replica_epoch,
                    entry.leader_epoch,
                )
                metrics.DIVERGENT_TRUNCATED.labels(name, str(index)).inc(dropped)
            partition.replication.clamp(partition.last_seq)
            epochs[index] = entry.leader_epoch
        await self.node.catalog.set_replica_state(name, placement.SerializeToString(), epochs)
        for index in changed:
            stream.partitions[index].adopt_replica_epoch(epochs[index])

    async def _take_role(
        self,
        stream: Stream,
        index: int,
        entry: types_pb2.PartitionPlacement,
        *,
        leading: bool,
        primaries_before: dict[int, str],
    ) -> None:
        """Lead (with an in-sync tracker from the stored in-sync set) or follow the partition under
        `entry`'s epoch; a new lead is recorded in the change feed."""
        name = stream.name
        partition = stream.partitions[index]
        tracker = None
        if leading:
            in_sync = await self._stored_in_sync(name, index, entry)
            tracker = self.node.new_tracker(stream.config, entry, in_sync, partition.high_watermark)
        partition.set_role(
            leading=leading,
            leader_epoch=entry.leader_epoch,
            tracker=tracker,
            min_insync=stream.config.min_insync_replicas or 1,
        )
        metrics.LEADER_CHANGES.labels(name, str(index)).inc()
        if leading and primaries_before.get(index) != self.node.node_id:
            await self.node.record_leadership(name, index, entry)
        logger.info(
            "%s/%d: %s under leader epoch %d (log %d..%d)",
            name,
            index,
            "leading" if leading else f"following {entry.primary_node_id}",
            entry.leader_epoch,
            partition.first_seq,
            partition.last_seq,
        )

    async def _adopt_hosting(self, stream: Stream, placement: types_pb2.StreamPlacement) -> bool:
        """Open the partitions `placement` newly gives this node and remove the copies it no longer
        places here (a partition move: issue 29), storing the placement with the new copies' epochs;
        deletes the local stream when no copy is left. Returns whether the stream is still here."""
        hosted, _ = hosted_partitions(stream.config, placement, self.node.node_id)
        added = [index for index in hosted if index not in stream.partitions]
        removed = [index for index in stream.partitions if index not in hosted]
        if not added and not removed:
            return True
        if not hosted:
            await self.node.admin.delete_stream(stream.name)
            logger.info("%s: no copy of it is placed here any more; removed", stream.name)
            return False
        await self.node.admin.drop_partitions(stream, removed)
        self.node.admin.host_partitions(stream, added, placement)
        epochs = {index: placement.partitions[index].leader_epoch for index in added}
        await self.node.catalog.set_replica_state(stream.name, placement.SerializeToString(), epochs)
        stream.placement = placement
        return True

    async def _stored_in_sync(self, stream: str, index: int, entry: types_pb2.PartitionPlacement) -> list[str]:
        try:
            stored = await self.membership.in_sync_record(stream, index)
        except (RedisError, OSError):
            metrics.REDIS_ERRORS.inc()
            stored = None
        if stored is not None and stored.leader_epoch == entry.leader_epoch:
            return list(stored.in_sync)
        return list(entry.in_sync_node_ids)

    def state_of(self, partition: Partition) -> internal_pb2.GetReplicaStateResponse:
        stream = self.node.hosted_stream(partition.stream.name)
        placement = stream.placement if stream is not None else None
        return internal_pb2.GetReplicaStateResponse(
            node_id=self.node.node_id,
            role=partition.role,
            replica_epoch=partition.replica_epoch,
            leader_epoch=partition.leader_epoch,
            first_seq=partition.first_seq,
            last_seq=partition.last_seq,
            high_watermark=partition.high_watermark,
            rebuilding=partition.rebuilding,
            placement=(
                placement.partitions[partition.index]
                if placement is not None and partition.index < len(placement.partitions)
                else None
            ),
        )

    async def _refresh_forever(self) -> None:
        interval_s = self.node.settings.placement_refresh_ms / 1000
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval_s):
                    await self._refresh_now.wait()
            self._refresh_now.clear()
            try:
                await self.refresh()
            except (RedisError, OSError) as error:
                metrics.REDIS_ERRORS.inc()
                logger.warning("placement refresh: %s", error)
            except WeirError as error:
                logger.warning("placement refresh: %s", error)
            except Exception:
                logger.exception("placement refresh failed")

    # -- primary side -----------------------------------------------------------------------------------

    def check_epoch(self, partition: Partition, epoch: int) -> tuple[ReplicationResult, str] | None:
        if epoch < partition.leader_epoch:
            return (
                ReplicationResult.FENCED,
                f"leader epoch {epoch} is older than this replica's {partition.leader_epoch}",
            )
        if epoch > partition.leader_epoch:
            self._refresh_now.set()
            return (
                ReplicationResult.STALE_EPOCH,
                f"this replica is at leader epoch {partition.leader_epoch}, not yet {epoch}; retry",
            )
        return None

    # -- secondary side ---------------------------------------------------------------------------------

    async def apply_pushed(self, record: types_pb2.StreamRecord) -> list[internal_pb2.GetReplicaStateResponse]:
        """ApplyPlacement: the controller wrote a record to Redis and pushed it. Adopt what Redis
        holds for that stream, never the pushed copy: the push only saves waiting for the next
        poll, and a pushed record that is malformed, stale or not the router's cannot change a
        replica. Returns the node's state per hosted partition (empty for a stream it does not host
        or Redis does not record). Errors: InvalidNameError (the record's stream name)."""
        validate_name(record.config.name)
        stored = (await self.membership.stream_records([record.config.name])).get(record.config.name)
        if stored is None:
            return []
        return await self.apply_record(stored)

    async def refresh_stream(self, stream: str) -> None:
        records = await self.membership.stream_records([stream])
        record = records.get(stream)
        if record is not None:
            await self.apply_record(record)

    async def replicate_stream_create(
        self, request: internal_pb2.ReplicateStreamCreateRequest
    ) -> internal_pb2.ReplicateResponse:
        record = request.record
        validate_name(record.config.name)
        response = internal_pb2.ReplicateResponse()
        current = (await self.membership.stream_records([record.config.name])).get(record.config.name)
        if current is None or current.deleting or current.config != record.config:
            # Deleted, being deleted (the router removes the copies before the record: a copy made
            # now would outlive it), or re-created otherwise by the router meanwhile: never resurrect
            # a copy.
            response.result_code = ReplicationResult.NOT_PLACED
            response.message = f"stream {record.config.name!r} is not (or no longer) placed like this by the router"
            return response
        record = current
        if self.node.hosted_stream(record.config.name) is None:
            await self.node.admin.create_stream(record.config, record.placement)
        await self.apply_record(record)
        response.result_code, response.success = ReplicationResult.OK, True
        return response

    async def replicate_stream_update(
        self, request: internal_pb2.ReplicateStreamUpdateRequest
    ) -> internal_pb2.ReplicateResponse:
        """Adopt the config only when it is the router's current one (the record in Redis): a
        replayed or stale update must not change a copy behind the router's back."""
        validate_name(request.config.name)
        records = await self.membership.stream_records([request.config.name])
        record = records.get(request.config.name)
        if record is None or record.config != request.config:
            return internal_pb2.ReplicateResponse(
                result_code=ReplicationResult.STALE_CONFIG,
                message=f"stream {request.config.name!r}: the config is not the router's current one; not applied",
            )
        await self.node.admin.mirror_config(request.config)
        return internal_pb2.ReplicateResponse(result_code=ReplicationResult.OK, success=True)

    async def replicate_stream_delete(
        self, request: internal_pb2.ReplicateStreamDeleteRequest
    ) -> internal_pb2.ReplicateResponse:
        """Delete a copy the router no longer places (a node that missed the router's delete) or
        whose record the controller marked deleting; a stream the router still places is refused
        (`still_placed`). Idempotent."""
        validate_name(request.stream)
        record = (await self.membership.stream_records([request.stream])).get(request.stream)
        if record is not None and not record.deleting:
            return internal_pb2.ReplicateResponse(
                result_code=ReplicationResult.STILL_PLACED,
                message=f"stream {request.stream!r} is still recorded by the router; not deleted",
            )
        with contextlib.suppress(NoSuchStreamError):
            await self.node.admin.delete_stream(request.stream)
        return internal_pb2.ReplicateResponse(result_code=ReplicationResult.OK, success=True)

    def replica_state(self, request: internal_pb2.GetReplicaStateRequest) -> internal_pb2.GetReplicaStateResponse:
        return self.state_of(self.node.hosted_partition(request.stream, request.partition))
