"""A primary's in-sync set (DESIGN §5): who counts for the high watermark, stored in Redis.

The in-sync tracker (weir_server.replication.InSyncTracker) proposes changes from the followers'
reported progress: a follower that lags past replica_lag_max_ms leaves, one that caught up joins.
`InSyncMaintenance` stores each change with a compare-and-set on the partition's leader epoch
before it applies it, so the controller never promotes a copy the set did not hold, and a primary
that lost its epoch cannot overwrite its successor's set. While its heartbeat lease is lapsed the
primary fails its waiting ack-all publishes instead (self-fencing).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from redis.exceptions import RedisError
from weir_server.metadata import IN_SYNC_CAS, InSyncRecord

from weir_partition_node import metrics
from weir_partition_node.clock import monotonic_ms
from weir_partition_node.membership import Membership
from weir_partition_node.partition import Partition

if TYPE_CHECKING:
    from weir_partition_node.node import Node

logger = logging.getLogger(__name__)


class InSyncMaintenance:
    """The in-sync sets of the partitions this node leads; `refresh_now` is set when the
    placement must be re-read (a refused write)."""

    def __init__(self, node: Node, membership: Membership, refresh_now: asyncio.Event) -> None:
        self._node = node
        self._membership = membership
        self._refresh_now = refresh_now
        self._in_sync_writes: set[tuple[str, int]] = set()  # (stream, partition) with a write in flight
        self._background: set[asyncio.Task[None]] = set()
        self._lease_lapsed = False  # at the last `maintain`: the lag clocks restart when it returns
        self._gauged: dict[tuple[str, int], int] = {}  # the in-sync size last set on the gauge
        self._cas = membership.raw.register_script(IN_SYNC_CAS)

    async def run_forever(self) -> None:
        """`maintain` every lag_max / 10 (at least 50 ms): a dead follower leaves within lag_max +
        one interval (+ the Redis write)."""
        interval_s = max(0.05, self._node.settings.replica_lag_max_ms / 10_000)
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self.maintain()
            except Exception:
                logger.exception("in-sync maintenance failed")

    async def maintain(self) -> None:
        """Per led partition: fail waiting ack-all publishes when the lease lapsed; persist and apply
        in-sync changes (laggards out, caught-up followers in). When the lease comes back, the
        followers' lag clocks restart first: a Redis failover (every node's lease lapses, the
        replicator pauses) must not leave each partition with its primary alone in sync."""
        lease_ok = self._membership.lease_valid()
        regained, self._lease_lapsed = lease_ok and self._lease_lapsed, not lease_ok
        now_ms = monotonic_ms()
        for stream in self._node.hosted_streams():
            for index in list(stream.led):
                partition = stream.partitions[index]
                if not lease_ok:
                    partition.fail_replicated_waiters(self._node.lease_expired())
                    continue
                tracker = partition.tracker
                if tracker is None:
                    continue
                if regained:  # the followers' lag while this primary refused their fetches is not theirs
                    tracker.restart_lag_clocks(now_ms)
                if not tracker.at_rest():  # an idle partition has nothing to decide (most, at scale)
                    proposed = tracker.proposed(now_ms)
                    if proposed is not None:
                        await self._write_in_sync(stream.name, partition, proposed)
                self._gauge(stream.name, index, len(tracker.in_sync))

    def _gauge(self, stream: str, index: int, size: int) -> None:
        """Set the partition's in-sync gauge when its size changed (a labelled set costs microseconds,
        ten times a second for every partition led)."""
        if self._gauged.get((stream, index)) != size:
            self._gauged[(stream, index)] = size
            metrics.IN_SYNC_REPLICAS.labels(stream, str(index)).set(size)

    def maybe_join(self, stream: str, partition: Partition) -> None:
        """After a follower's fetch reported progress: store a larger in-sync set, in the
        background, when a follower caught up (InSyncTracker.joining) and no write for the
        partition is in flight."""
        tracker = partition.tracker
        if tracker is None or (stream, partition.index) in self._in_sync_writes:
            return
        joining = tracker.joining(monotonic_ms())
        if joining:
            proposed = tracker.in_sync | set(joining)
            task = asyncio.get_running_loop().create_task(self._write_in_sync(stream, partition, proposed))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _write_in_sync(self, stream: str, partition: Partition, members: set[str]) -> None:
        """Store `members` as the partition's in-sync set under its leader epoch (a compare-and-set
        in Redis, IN_SYNC_CAS), then adopt it; a refused write (the epoch moved on) refreshes the
        placement instead."""
        key = (stream, partition.index)
        tracker = partition.tracker
        if key in self._in_sync_writes or tracker is None:
            return
        self._in_sync_writes.add(key)
        # A joiner counts for the high watermark from now on: once the write below lands, the
        # controller may promote it, so nothing may be acknowledged without it meanwhile. It keeps
        # counting until a write's outcome is known (an error may hide a write that landed).
        tracker.pending_joiners |= members - tracker.in_sync
        try:
            value = InSyncRecord(
                partition.leader_epoch,
                self._node.node_id,
                tuple([tracker.leader_id, *sorted(members - {tracker.leader_id})]),
            )
            try:
                written = await self._cas(
                    keys=[self._membership.keys.in_sync(stream, partition.index)],
                    args=[partition.leader_epoch, value.to_json()],
                )
            except (RedisError, OSError) as error:  # outcome unknown: joiners stay pending
                metrics.REDIS_ERRORS.inc()
                logger.warning("%s/%d: could not store the in-sync set: %s", stream, partition.index, error)
                return
            tracker.pending_joiners = set()  # the stored set is now known: `members`, or not ours
            if not written:  # the controller moved the epoch on: adopt the new record instead
                logger.warning("%s/%d: in-sync write refused (epoch moved on); refreshing", stream, partition.index)
                self._refresh_now.set()
                return
            if partition.tracker is tracker:
                before = set(tracker.in_sync)
                tracker.set_in_sync(members, monotonic_ms())
                left = sorted(before - tracker.in_sync)
                joined = sorted(tracker.in_sync - before)
                logger.info(
                    "%s/%d: in-sync set %s (left %s, joined %s)",
                    stream,
                    partition.index,
                    tracker.in_sync_sorted(),
                    left,
                    joined,
                )
                metrics.IN_SYNC_REPLICAS.labels(stream, str(partition.index)).set(len(tracker.in_sync))
                partition.update_high_watermark()
        finally:
            self._in_sync_writes.discard(key)
