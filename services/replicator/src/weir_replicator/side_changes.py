"""Shipping to one secondary what does not come with records (DESIGN §5): after each pull-and-push
round, the removals seen before the pull (work-queue acks, dead-letter moves,
max_msgs_per_subject), a stream update, consumer tombstones, the consumers' snapshots (at most every
`snapshot_interval_ms`, one read at the primary shared by the followers) and a stream deletion, in
that order. Every Replicate* call here is idempotent, so shipping one again after a failure is safe."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from weir.errors import ResultCode
from weir.v1 import internal_pb2, types_pb2
from weir_server.internal_clients import ReplicationClient
from weir_server.replication import ReplicationResult

from weir_replicator import metrics
from weir_replicator.followers import FollowerState, Removal
from weir_replicator.snapshot_reads import SnapshotReads

REMOVAL_BATCH = 10_000  # seqs per ReplicateWorkQueueAck


class SideChangeShipper:
    """One partition's side changes for one leader epoch; `read_config` reads the stream's config
    from the primary (for a stream update)."""

    def __init__(
        self,
        *,
        stream: str,
        partition: int,
        leader_epoch: int,
        snapshot_reads: SnapshotReads,
        snapshot_interval_ms: int,
        read_config: Callable[[], Awaitable[types_pb2.StreamConfig]],
    ) -> None:
        self.stream = stream
        self.partition = partition
        self.leader_epoch = leader_epoch
        self._snapshot_reads = snapshot_reads
        self._snapshot_interval_s = snapshot_interval_ms / 1000
        self._read_config = read_config
        self._labels = (stream, str(partition))

    async def ship(self, follower: FollowerState, target: ReplicationClient, removals: list[Removal]) -> None:
        """Ship what `follower` needs, `removals` first (those it saw before the round's pull), then
        drop them from its list. Consumer snapshots that could not be read leave it dirty and end the
        round (the deletion, if any, goes next round). Errors: WeirError from a Replicate* call."""
        if removals:
            await self._ship_removals(target, removals)
            del follower.removals[: len(removals)]
        if follower.config_dirty:
            follower.config_dirty = False
            config = await self._read_config()
            await target.replicate("ReplicateStreamUpdate", internal_pb2.ReplicateStreamUpdateRequest(config=config))
        if follower.tombstones:
            await self._ship_tombstones(target, sorted(follower.tombstones))
            follower.tombstones.clear()
        if not await self._ship_snapshots_due(follower, target):
            return
        if follower.delete_stream:
            follower.delete_stream = False
            await target.replicate(
                "ReplicateStreamDelete", internal_pb2.ReplicateStreamDeleteRequest(stream=self.stream)
            )

    async def _ship_removals(self, target: ReplicationClient, removals: list[Removal]) -> None:
        """The removed seqs by reason, REMOVAL_BATCH a call."""
        by_reason: dict[str, list[int]] = {}
        for removal in removals:
            by_reason.setdefault(removal.reason, []).extend(removal.seqs)
        for reason, seqs in by_reason.items():
            for start in range(0, len(seqs), REMOVAL_BATCH):
                await target.replicate(
                    "ReplicateWorkQueueAck",
                    internal_pb2.ReplicateWorkQueueAckRequest(
                        stream=self.stream,
                        partition=self.partition,
                        leader_epoch=self.leader_epoch,
                        seqs=seqs[start : start + REMOVAL_BATCH],
                        reason=reason,
                    ),
                )

    async def _ship_tombstones(self, target: ReplicationClient, consumers: list[str]) -> None:
        """One tombstone snapshot per deleted consumer: the follower removes its state."""
        for name in consumers:
            await target.replicate(
                "ReplicateConsumerState",
                internal_pb2.ReplicateConsumerStateRequest(
                    stream=self.stream,
                    leader_epoch=self.leader_epoch,
                    snapshot=internal_pb2.ConsumerSnapshot(consumer=name, partition=self.partition, tombstone=True),
                ),
            )

    async def _ship_snapshots_due(self, follower: FollowerState, target: ReplicationClient) -> bool:
        """The consumers' snapshots, when their state changed and the last went out at least
        `snapshot_interval_ms` ago; a snapshot the follower refused (other than for a consumer it
        no longer has) leaves it dirty. False when the snapshots could not be read."""
        now_s = time.monotonic()
        if not follower.consumers_dirty or now_s - follower.last_snapshot_s < self._snapshot_interval_s:
            return True
        follower.consumers_dirty = False
        follower.last_snapshot_s = now_s
        snapshots = await self._snapshot_reads.since(follower.consumers_generation)
        if snapshots.result_code != ReplicationResult.OK:
            follower.consumers_dirty = True
            return False
        for snapshot in snapshots.snapshots:
            reply = await target.replicate(
                "ReplicateConsumerState",
                internal_pb2.ReplicateConsumerStateRequest(
                    stream=self.stream, leader_epoch=self.leader_epoch, snapshot=snapshot, defer_sync=True
                ),
            )
            if reply.result_code not in (ReplicationResult.OK, ResultCode.NO_SUCH_CONSUMER):
                follower.consumers_dirty = True
        metrics.SNAPSHOTS_SHIPPED.labels(*self._labels).inc(len(snapshots.snapshots))
        return True
