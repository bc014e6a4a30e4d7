"""One partition of a stream: its log, its cached totals and its group-commit loop.

Writes: every mutation of the partition (publish, retention sweep, change-feed trimming) is an item
on one bounded queue, consumed by one commit loop (`CommitLoop`, partition_commit.py). The loop takes
everything queued (up to `max_batch_messages` / `max_batch_bytes`), decides seqs and retention in the
event loop, then applies the whole batch in one transaction on a worker thread (one thread hop per
group commit, never per message), brings this partition's cached state up to it and only then
resolves the callers' futures: an acknowledged publish is on disk. What each item decides and what a
commit changes here is partition_effects.CommitEffects.

A failed commit stores nothing, fails every caller in the batch, and makes the partition refuse
further writes (`StorageFailedError`, sticky until restart), since the disk's state is then unknown.

Consumers share the loop: fetch, ack, nak, term, in-progress and consumer removal are queue items
too (`consumer_ops`, partition_consumer_ops.py). Their decisions (`consumers.py`) change the
in-memory cursors in the event loop; the changed cursors and pending entries, any dead-letter
appends and work-queue/interest removals go into the same transaction as the batch's publishes, and
callers hear back only once it is durable. A fetch therefore returns messages whose delivery is
already recorded: after a crash they are pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

from weir.errors import (
    CorruptRecordError,
    NotEnoughReplicasError,
    NotLeaderError,
    WeirError,
)
from weir.v1 import types_pb2
from weir_server.replication import InSyncTracker, ReplicationResult
from weir_server.streamconfig import DEFAULT_DUPLICATE_WINDOW_MAX_MSGS, DEFAULT_DUPLICATE_WINDOW_MS

from weir_partition_node import metrics
from weir_partition_node.batch_cache import BatchCache
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.clock import Clock
from weir_partition_node.commit_items import (
    PURGE_ALL,
    AppendItem,
    AppendOutcome,
    CommitItem,
    CommitLimits,
    DropChangesItem,
    PreparedEntry,
    ReleaseItem,
    RepairRecords,
    ReplicaEdit,
    ReplicaEditItem,
    ReplicatedRecord,
    ReplicateItem,
    SweepItem,
)
from weir_partition_node.consumers import ConsumerCursor
from weir_partition_node.delivery_horizon import PushHorizon
from weir_partition_node.partition_appends import AppendDecisions
from weir_partition_node.partition_commit import CommitLoop
from weir_partition_node.partition_consumer_ops import PartitionConsumerOps
from weir_partition_node.partition_consumers import ConsumerDecisions
from weir_partition_node.partition_effects import CommitEffects
from weir_partition_node.partition_replica import ReplicaDecisions
from weir_partition_node.partition_schedule import DelayedDelivery
from weir_partition_node.retention import LimitsBounds
from weir_partition_node.storage import rebuild
from weir_partition_node.storage.base import PartitionLog, checksum
from weir_partition_node.waiters import PartitionWaits, wait_on, wake
from weir_partition_node.watermark import PartitionReplication

logger = logging.getLogger(__name__)
AppendFuture = asyncio.Future[list[AppendOutcome]]
Settled = Sequence[tuple[str, int, int]]  # a source tail's positions (AppendItem.source_positions)


@dataclass(slots=True)
class StreamView:
    """What a partition needs to know of its stream; the node updates `bounds` on UpdateStream."""

    name: str
    bounds: LimitsBounds = field(default_factory=LimitsBounds)
    retention: int = types_pb2.RETENTION_POLICY_LIMITS
    deliver_up_to_high_watermark: bool = False
    duplicate_window_ms: int = DEFAULT_DUPLICATE_WINDOW_MS
    duplicate_window_max_msgs: int = DEFAULT_DUPLICATE_WINDOW_MAX_MSGS
    allow_scheduled_messages: bool = False


class Partition:
    def __init__(
        self,
        stream: StreamView,
        index: int,
        log: PartitionLog,
        *,
        feed: ChangeFeedClock,
        clock: Clock,
        executor: Executor | None,
        limits: CommitLimits,
        lease_refusal: Callable[[], WeirError | None] | None = None,
        rebuilding: bool = False,
        node_append_waiters: set[asyncio.Future[None]] | None = None,
        push_horizon: PushHorizon | None = None,
    ) -> None:
        self.stream = stream
        self.index = index
        self.log = log
        state = log.state()
        self.first_seq = state.first_seq
        self.last_seq = state.last_seq
        self.msg_count = state.msg_count
        self.bytes = state.bytes
        self.last_change_seq = state.last_change_seq
        # The newest change seq of a change that is not an append (truncate, remove, consumer
        # state): a feed read that leaves appends out skips this log when it starts past it. After
        # a reopen the log does not say, so it starts at the newest change of any kind.
        self.last_non_append_change_seq = state.last_change_seq
        # Replication (DESIGN §5). Standalone and single-replica partitions lead with no followers.
        self.leading = True
        self.leader_epoch = 0
        self.replica_epoch = 0
        self.epoch_start_seq = 0  # the log's end when this node last became primary (set_role)
        # The soonest per-message TTL among stored messages (0 = none): retention removes what is due.
        self.earliest_expiry_ms = log.earliest_expiry_ms()
        # The in-sync tracker, high watermark and ack-all waiters (watermark.py): their only writer.
        self.replication = PartitionReplication(stream.name, index, self.last_seq)
        # A primary with followers: its newest commits as the record batches it ships them.
        self.batch_cache = BatchCache()
        # The log was started empty in place of an unreadable file (storage/rebuild.py): it follows
        # until it caught up with its primary and never leads meanwhile.
        self.rebuilding = rebuilding
        # Clustered: the node's self-fencing (its heartbeat lease lapsed) as an error to refuse
        # appends with, checked when a commit decides them, not only when the request arrived: an
        # append queued before a pause must not be stored by a primary another node may have replaced.
        self.lease_refusal = lease_refusal
        self.consumers: dict[str, ConsumerCursor] = {}
        # Who waits for the next commit (waiters.py); the node's set ends a replication session's wait.
        self.waits = PartitionWaits(node_append_waiters if node_append_waiters is not None else set())
        self._labels = (stream.name, str(index))
        # Labelled children resolved once: `labels()` costs ~20 us, too much for every commit.
        self._last_seq_gauge = metrics.PARTITION_LAST_SEQ.labels(*self._labels)
        self._messages_gauge = metrics.PARTITION_MESSAGES.labels(*self._labels)
        self._bytes_gauge = metrics.PARTITION_BYTES.labels(*self._labels)
        # Consumer registration and ops (partition_consumer_ops.py; decisions: partition_consumers.py).
        self.consumer_ops = PartitionConsumerOps(self, put=self._put, clock=clock, push_horizon=push_horizon)
        self._start_sections(feed=feed, clock=clock, executor=executor, limits=limits)

    def _start_sections(
        self, *, feed: ChangeFeedClock, clock: Clock, executor: Executor | None, limits: CommitLimits
    ) -> None:
        """Build each section of the partition over it and start its commit loop."""
        consumer_decisions = ConsumerDecisions(self)
        self._forget_consumer_metrics = consumer_decisions.forget_all_metrics
        # Delayed delivery (partition_schedule.py): the primary's schedule index and delivery timer.
        self._delayed = DelayedDelivery(
            self,
            clock=clock,
            put=self._put,
            accepting=lambda: self._commits.accepting,
            not_leading=self.not_leading,
        )
        # Each published entry's outcome and the duplicate window (partition_appends.py).
        self._appends = AppendDecisions(self, self._delayed)
        effects = CommitEffects(
            self,
            feed=feed,
            appends=self._appends,
            consumer_decisions=consumer_decisions,
            # A secondary's decisions: replicated records (log matching) and the replicator's edits.
            replica_decisions=ReplicaDecisions(self),
            delayed=self._delayed,
        )
        # The group-commit loop (partition_commit.py): decide, plan, write, apply (partition_effects.py).
        self._commits = CommitLoop(
            self,
            feed=feed,
            clock=clock,
            executor=executor,
            limits=limits,
            effects=effects,
            store_cursor=consumer_decisions.store_cursor,
            oldest_scheduled_seq=self._delayed.oldest_seq,
        )
        self._commits.start()
        self._delayed.load()
        self.publish_gauges()

    # -- public API (event loop) -----------------------------------------------------------------

    async def append(self, entries: list[PreparedEntry], size: int, positions: Settled = ()) -> list[AppendOutcome]:
        """Queue `entries` for the next group commit, wait until durable; AppendItem says what `positions` are."""
        return await (await self._enqueue_append(entries, size, positions))

    async def append_nowait(self, entries: list[PreparedEntry], size: int) -> None:
        """Queue `entries` and return without waiting for the commit (ack level NONE)."""
        future = await self._enqueue_append(entries, size)
        future.add_done_callback(self._log_unacknowledged_failure)

    async def sweep(self) -> int:
        """Apply the Limits bounds now; returns how many messages were removed."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        await self._put(SweepItem(future))
        return await future

    async def purge(self, keep_from_seq: int | None, seqs: Sequence[int] = ()) -> int:
        """Remove every message below `keep_from_seq` (None: every message stored when the commit
        decides), or with `seqs` exactly those (reason "deleted"); returns how many were removed.
        The removal reaches the secondaries through the change feed as retention does. Errors:
        NotLeaderError (this node stopped leading)."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if seqs:
            await self._put(SweepItem(future, delete_seqs=list(seqs)))
        else:
            await self._put(SweepItem(future, purge_before_seq=PURGE_ALL if keep_from_seq is None else keep_from_seq))
        return await future

    async def drop_changes_before(self, change_seq: int) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self._put(DropChangesItem(change_seq, future))
        await future

    # -- replication (event loop) ------------------------------------------------------------------

    async def replicate(
        self, after_seq: int, records: list[ReplicatedRecord], size: int, after_crc32: int | None = None
    ) -> tuple[ReplicationResult, str]:
        """Secondary: append the primary's `records` (validated by the caller: seqs increase and
        exceed `after_seq`) after `after_seq`; returns (result_code, message): ok | out_of_order |
        divergence | not_follower. `after_crc32`: the CRC-32 of the primary's record at `after_seq`;
        holding another record there is `divergence` (log matching; nothing is stored)."""
        future: asyncio.Future[tuple[ReplicationResult, str]] = asyncio.get_running_loop().create_future()
        await self._put(ReplicateItem(after_seq, records, future, size, after_crc32))
        return await future

    async def repair(self, repairs: list[tuple[int, int, bytes]]) -> None:
        """Put stored records' bytes back from another copy ((seq, crc, record) with crc the
        checksum of record), where the stored checksum is that crc (a scrub's repair; any role)."""
        if repairs:
            await self.replica_edit(RepairRecords(repairs))

    async def replica_edit(self, edit: ReplicaEdit) -> int:
        """Queue `edit` (commit_items.ReplicaEdit) and wait until it is durable; returns how many
        messages it removed (a repair: how many records it put back)."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        await self._put(ReplicaEditItem(edit, future))
        return await future

    def set_role(self, *, leading: bool, leader_epoch: int, tracker: InSyncTracker | None, min_insync: int) -> None:
        """Become primary (with `tracker` when the partition has followers) or secondary. A
        demoted primary fails the ack_level ALL publishes still waiting. A partition still
        rebuilding never leads: it stays a follower until the controller moved its leadership."""
        if leading and self.rebuilding:
            leading, tracker = False, None
        was_leading = self.leading
        previous_epoch = self.leader_epoch
        self.leading = leading
        self.log.keep_tail(leading)
        if leading != was_leading:
            self._appends.forget_window()  # a new primary rebuilds it from what its log holds
            self._delayed.load()
        if leading and (not was_leading or leader_epoch != previous_epoch):
            # What an earlier primary may have acknowledged ends at most here: point reads of a
            # high-watermark stream wait until the watermark of this epoch covers it (reads.py).
            self.epoch_start_seq = self.last_seq
            self.consumer_ops.take_over(leader_epoch)  # an earlier primary's deliveries: redeliveries here
        if leading != was_leading or leader_epoch != previous_epoch:
            self.batch_cache.clear()
        self.leader_epoch = leader_epoch
        self.replication.set_role(tracker, min_insync)
        if was_leading and (not leading or leader_epoch != previous_epoch):
            # The epoch that appended them is over: their records may be truncated by the next
            # leader (or, led again later, hold another primary's records), so they never complete.
            self.fail_replicated_waiters(self._leadership_lost(previous_epoch))
        if leading:
            self.update_high_watermark()

    def adopt_replica_epoch(self, epoch: int) -> None:
        """This replica's log is now a prefix of epoch `epoch`'s primary's (stored by the caller)."""
        self.replica_epoch = epoch

    def finish_rebuild(self, primary_through_seq: int) -> bool:
        """Once the rebuilt log holds what its primary held (`primary_through_seq`: its last seq
        when the records were fetched), it is a replica like any other: the marker goes. True then."""
        if not self.rebuilding or self.last_seq < primary_through_seq:
            return False
        directory = getattr(self.log, "directory", None)
        if directory is not None:
            rebuild.finish(directory)
        self.rebuilding = False
        return True

    # -- delayed delivery (event loop; partition_schedule.py) -----------------------------------

    @property
    def scheduled_count(self) -> int:
        """Schedule records this primary still has to deliver (0 on a secondary)."""
        return self._delayed.count

    def clock_moved(self) -> None:
        """(Re)arm the delivery timer for the earliest schedule record (the node's clock moved)."""
        self._delayed.clock_moved()

    async def release_scheduled(self, seq: int, *, discard: bool) -> int:
        """Deliver now (or discard) the scheduled or held record at `seq`; returns the delivered
        message's seq (0 when discarded) once durable. Errors: SchedulingDisabledError,
        NoSuchMessageError, NotLeaderError."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        await self._put(ReleaseItem(seq, discard, future))
        return await future

    def list_scheduled(self, from_seq: int, limit: int, *, held_only: bool) -> tuple[list[bytes], int]:
        """The scheduled (or only held) records still to deliver, from `from_seq` in seq order, at
        most `limit`: (records, next_seq; 0 when none follow). Errors: SchedulingDisabledError,
        NotLeaderError."""
        return self._delayed.pending(from_seq, limit, held_only=held_only)

    @property
    def role(self) -> types_pb2.PartitionRole:
        """PARTITION_ROLE_PRIMARY while this copy leads, else PARTITION_ROLE_SECONDARY."""
        return types_pb2.PARTITION_ROLE_PRIMARY if self.leading else types_pb2.PARTITION_ROLE_SECONDARY

    @property
    def appends_pending(self) -> bool:
        """Whether a publish is queued or in the group commit being written: records are about to be
        appended (a primary's follower fetch may wait for them, `replica_primary.fetch_linger_ms`)."""
        return self._commits.appends_pending

    @property
    def high_watermark(self) -> int:
        return self.replication.high_watermark

    @property
    def tracker(self) -> InSyncTracker | None:
        return self.replication.tracker

    @property
    def min_insync(self) -> int:
        return self.replication.min_insync

    def in_sync_count(self) -> int:
        return self.replication.in_sync_count()

    def update_high_watermark(self) -> None:
        """Primary: recompute the high watermark and complete the publishes it now covers (or
        fail them all when the in-sync set is below min_insync_replicas)."""
        if not self.leading:
            return
        advanced = self.replication.advance(self.last_seq, self.not_enough_replicas)
        if advanced and self.stream.deliver_up_to_high_watermark:
            wake(self.waits.work)  # deliveries it held back; a replication fetch gains nothing from it

    def not_enough_replicas(self) -> NotEnoughReplicasError:
        in_sync = self.in_sync_count()
        return NotEnoughReplicasError(
            f"stream {self.stream.name!r} partition {self.index}: {in_sync} in-sync replica(s), "
            f"ack_level all needs min_insync_replicas={self.min_insync}",
            stream=self.stream.name,
            partition=self.index,
            in_sync=in_sync,
            min_insync_replicas=self.min_insync,
        )

    async def wait_replicated(self, seq: int, timeout_s: float, leader_epoch: int) -> None:
        """Primary: wait until every in-sync replica holds `seq`, appended (or found a duplicate)
        under `leader_epoch` (the AppendOutcome's), i.e. the high watermark of that same epoch
        covers it. Errors: NotEnoughReplicasError (the in-sync set shrank below the minimum, or this
        node stopped leading or moved to another epoch since the append: a seq decided under an
        older epoch may hold another record now), TimeoutError."""
        if not self.leading or self.leader_epoch != leader_epoch:
            raise self._leadership_lost(leader_epoch)
        await self.replication.wait(seq, timeout_s)

    def _leadership_lost(self, leader_epoch: int) -> NotEnoughReplicasError:
        return NotEnoughReplicasError(
            f"stream {self.stream.name!r} partition {self.index}: this node stopped leading under leader epoch "
            f"{leader_epoch} before the in-sync replicas confirmed the message (retry: with its msg_id it is "
            "stored once)",
            stream=self.stream.name,
            partition=self.index,
        )

    def append_refusal(self) -> WeirError | None:
        """Why the commit must not decide an append now (not leading, or the lease lapsed), else None."""
        if not self.leading:
            return self.not_leading()
        return self.lease_refusal() if self.lease_refusal is not None else None

    def fail_replicated_waiters(self, error: WeirError) -> None:
        self.replication.fail_waiters(error)

    def expiry_due(self, now_ms: int) -> bool:
        """Whether a stored message's TTL ran out (the primary removes it at its next commit)."""
        return 0 < self.earliest_expiry_ms <= now_ms and self.leading

    def visible_last_seq(self) -> int:
        """The last seq consumers may be delivered (the high watermark when the stream asks)."""
        if self.stream.deliver_up_to_high_watermark:
            return min(self.last_seq, self.high_watermark)
        return self.last_seq

    # -- waiting for commits (event loop) ---------------------------------------------------------

    async def wait_for_work(self, timeout_s: float) -> None:
        """Return after the next commit that appended or changed consumer state, on `wake_waiters`,
        or after `timeout_s`."""
        await wait_on(self.waits.work, timeout_s)

    async def wait_for_appends(self, timeout_s: float) -> None:
        """Return after the next commit that appended or removed records, on `wake_waiters`, or
        after `timeout_s`. A parked replication fetch waits here: a consumer's deliveries and acks
        that remove nothing do not end it (it would come back empty; consumer state reaches
        followers by the change feed)."""
        await wait_on(self.waits.appends, timeout_s)

    def wake_waiters(self) -> None:
        """Wake every waiter: `wait_for_work`'s and `wait_for_appends`', and the node's."""
        self.waits.wake_all(leading=self.leading)

    def wake_work_waiters(self) -> None:
        """Wake `wait_for_work`'s waiters only (consumer state changed: a replication fetch gains nothing)."""
        wake(self.waits.work)

    async def wait_for_progress(self, timeout_s: float) -> None:
        """Primary: return at the next follower report or commit (the next `update_high_watermark`),
        or after `timeout_s`."""
        await self.replication.wait_for_progress(timeout_s)

    async def drain(self) -> None:
        """Wait until everything queued so far (and whatever joins it meanwhile) is committed."""
        await self._commits.drain()

    async def close(self) -> None:
        """Stop accepting writes, commit what is queued, stop the loop (does not close the log)."""
        self._commits.refuse_items()
        self.clock_moved()  # closing: cancels the delivery timer
        self.wake_waiters()
        await self._commits.stop()

    # -- internals -------------------------------------------------------------------------------

    async def _enqueue_append(self, entries: list[PreparedEntry], size: int, positions: Settled = ()) -> AppendFuture:
        future: AppendFuture = asyncio.get_running_loop().create_future()
        await self._put(AppendItem(entries, future, size, list(positions)))
        return future

    async def _put(self, item: CommitItem) -> None:
        await self._commits.put(item)

    def _log_unacknowledged_failure(self, future: asyncio.Future[list[AppendOutcome]]) -> None:
        if not future.cancelled() and future.exception() is not None:
            logger.warning("ack_level=none publish to %s/%s failed: %s", *self._labels, future.exception())

    @property
    def caches_batches(self) -> bool:
        """Whether commits go to the batch cache: a primary with followers (batch_cache.py)."""
        return self.leading and self.replication.tracker is not None

    def stored_crc32(self, seq: int) -> int | None:
        """The CRC-32 of the record stored at `seq`; None when there is none (seq 0, removed) or
        its stored bytes are damaged (nothing to match against until the scrub repairs it)."""
        held = self.held_record(seq) if seq else None
        return checksum(held) if held is not None else None

    # -- decisions (event loop, before the commit) ------------------------------------------------

    def held_record(self, seq: int) -> bytes | None:
        """The record stored at `seq` for a comparison; None when there is none, or when its stored
        bytes fail their checksum (nothing to compare: the scrub repairs it from another copy, and
        replication must not stall on it meanwhile)."""
        try:
            return self.log.get(seq)
        except CorruptRecordError:
            return None

    def not_leading(self) -> NotLeaderError:
        return NotLeaderError(
            f"stream {self.stream.name!r} partition {self.index}: this node stopped leading it (leader epoch "
            f"{self.leader_epoch}) before the request was applied; refresh routes and retry",
            stream=self.stream.name,
            partition=self.index,
            leader_epoch=self.leader_epoch,
        )

    def publish_gauges(self) -> None:
        self._last_seq_gauge.set(self.last_seq)
        self._messages_gauge.set(self.msg_count)
        self._bytes_gauge.set(self.bytes)

    def forget_metrics(self) -> None:
        for gauge in (
            metrics.PARTITION_LAST_SEQ,
            metrics.PARTITION_MESSAGES,
            metrics.PARTITION_BYTES,
            metrics.HIGH_WATERMARK,
        ):
            with contextlib.suppress(KeyError):
                gauge.remove(*self._labels)
        self._forget_consumer_metrics()
