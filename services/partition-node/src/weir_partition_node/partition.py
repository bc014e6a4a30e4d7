"""One partition of a stream: its log, its cached totals and its group-commit loop.

Writes: every mutation of the partition (publish, retention sweep, change-feed trimming) is an item
on one bounded queue, consumed by one commit loop (`CommitLoop`, partition_commit.py). The loop takes
everything queued (up to `max_batch_messages` / `max_batch_bytes`), decides seqs and retention in the
event loop (`decide_item`), then applies the whole batch in one transaction on a worker thread (one
thread hop per group commit, never per message), brings this partition's cached state up to it
(`apply_commit`) and only then resolves the callers' futures: an acknowledged publish is on disk.

A failed commit stores nothing, fails every caller in the batch, and makes the partition refuse
further writes (`StorageFailedError`, sticky until restart), since the disk's state is then unknown.

Consumers share the loop: fetch, ack, nak, term, in-progress and consumer removal are queue items
too. Their decisions (`consumers.py`) change the in-memory cursors in the event loop; the changed
cursors and pending entries, any dead-letter appends and work-queue/interest removals go into the
same transaction as the batch's publishes, and callers hear back only once it is durable. A fetch
therefore returns messages whose delivery is already recorded: after a crash they are pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from weir.errors import (
    CorruptRecordError,
    NotEnoughReplicasError,
    NotLeaderError,
    WeirError,
)
from weir.v1 import types_pb2
from weir_server.replication import InSyncTracker, ReplicationResult
from weir_server.streamconfig import DEFAULT_DUPLICATE_WINDOW_MAX_MSGS, DEFAULT_DUPLICATE_WINDOW_MS

from weir_partition_node import consumers, metrics
from weir_partition_node.batch_cache import BatchCache
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.clock import Clock
from weir_partition_node.commit_items import (
    PURGE_ALL,
    AppendItem,
    AppendOutcome,
    CommitContext,
    CommitItem,
    CommitLimits,
    ConsumerOp,
    ConsumerOpKind,
    DeliverItem,
    Delivery,
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
from weir_partition_node.commit_plan import CommitPlan
from weir_partition_node.consumers import ConsumerCursor, ConsumerSpec, Counters, Pending
from weir_partition_node.partition_appends import AppendDecisions
from weir_partition_node.partition_commit import CommitLoop
from weir_partition_node.partition_consumers import ConsumerDecisions
from weir_partition_node.partition_replica import ReplicaDecisions
from weir_partition_node.partition_schedule import DelayedDelivery
from weir_partition_node.retention import LimitsBounds
from weir_partition_node.storage import rebuild
from weir_partition_node.storage.base import CommitBatch, PartitionLog, StoredConsumer, checksum
from weir_partition_node.waiters import wait_on, wake
from weir_partition_node.watermark import PartitionReplication

logger = logging.getLogger(__name__)


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
    ) -> None:
        self.stream = stream
        self.index = index
        self.log = log
        self._feed = feed
        self._clock = clock
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
        # Each consumer op's decision, the cursor rows a commit stores, consumer metrics.
        self._consumer_decisions = ConsumerDecisions(self)
        # A secondary's decisions: replicated records (log matching) and the replicator's edits.
        self._replica_decisions = ReplicaDecisions(self)
        self._waiters: set[asyncio.Future[None]] = set()
        self._append_waiters: set[asyncio.Future[None]] = set()  # replication fetches: records only
        self._take_backs: set[asyncio.Task[None]] = set()
        self._labels = (stream.name, str(index))
        # Labelled children resolved once: `labels()` costs ~20 us, too much for every commit.
        self._published_messages = metrics.PUBLISHED_MESSAGES.labels(*self._labels)
        self._published_bytes = metrics.PUBLISHED_BYTES.labels(*self._labels)
        self._retention_removed = metrics.RETENTION_REMOVED.labels(*self._labels)
        self._last_seq_gauge = metrics.PARTITION_LAST_SEQ.labels(*self._labels)
        self._messages_gauge = metrics.PARTITION_MESSAGES.labels(*self._labels)
        self._bytes_gauge = metrics.PARTITION_BYTES.labels(*self._labels)
        # Delayed delivery (partition_schedule.py): the primary's schedule index and delivery timer.
        self._delayed = DelayedDelivery(
            self,
            clock=clock,
            put=self._put,
            accepting=lambda: self._commits.accepting,
            not_leading=self._not_leading,
        )
        # Each published entry's outcome and the duplicate window (partition_appends.py).
        self._appends = AppendDecisions(self, self._delayed)
        # The group-commit loop (partition_commit.py): decide, plan, write, then apply_commit here.
        self._commits = CommitLoop(
            self,
            feed=feed,
            clock=clock,
            executor=executor,
            limits=limits,
            store_cursor=self._consumer_decisions.store_cursor,
            oldest_scheduled_seq=self._delayed.oldest_seq,
        )
        self._commits.start()
        self._delayed.load()
        self._publish_gauges()

    # -- public API (event loop) -----------------------------------------------------------------

    async def append(self, entries: list[PreparedEntry], size: int) -> list[AppendOutcome]:
        """Queue `entries` for the next group commit and wait until they are durable."""
        future = await self._enqueue_append(entries, size)
        return await future

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
            wake(self._waiters)  # deliveries it held back; a replication fetch gains nothing from it

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

    def _append_refusal(self) -> WeirError | None:
        """Why the commit must not decide an append now (not leading, or the lease lapsed), else None."""
        if not self.leading:
            return self._not_leading()
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

    # -- consumers (event loop) -------------------------------------------------------------------

    def restore_consumer(
        self,
        spec: ConsumerSpec,
        start_last_delivered: int,
        stored: StoredConsumer | None,
        last_per_subject_until: int = 0,
    ) -> None:
        """Register a consumer: from its stored state when that belongs to this incarnation, else
        fresh at `start_last_delivered` (the delivery policy's start, decided at creation) with
        `last_per_subject_until` (DELIVER_POLICY_LAST_PER_SUBJECT's horizon, 0 = none)."""
        if stored is not None and stored.incarnation == spec.incarnation:
            cursor = ConsumerCursor(
                spec,
                stored.last_delivered,
                {seq: Pending(at, count, due) for seq, at, count, due in stored.pending},
                Counters(*stored.totals),
                last_per_subject_until=stored.last_per_subject_until,
            )
            cursor.earliest_redeliver_ms = min((entry[3] for entry in stored.pending), default=consumers.NEVER)
        else:
            cursor = ConsumerCursor(spec, start_last_delivered, last_per_subject_until=last_per_subject_until)
        self.consumers[spec.name] = cursor

    def ready_for(self, name: str, now_ms: int) -> bool:
        """Whether a fetch could deliver something now (cheap, in memory: no queue round trip)."""
        cursor = self.consumers.get(name)
        if cursor is None:
            return True  # let the fetch fail with no_such_consumer
        if cursor.earliest_redeliver_ms <= now_ms:
            return True
        return cursor.last_delivered < self.visible_last_seq() and len(cursor.pending) < cursor.spec.max_ack_pending

    async def fetch_ready(
        self, name: str, now_ms: int, batch_size: int, max_bytes: int, ack_wait_ms: int = 0
    ) -> list[Delivery]:
        """A fetch through the commit loop, skipped (no queue round trip) when `ready_for` says
        nothing can be delivered. `ack_wait_ms`: the deliveries' invisible duration (0 = the consumer's)."""
        if not self.ready_for(name, now_ms):
            return []
        op = self.new_op(
            ConsumerOpKind.FETCH, name, batch_size=batch_size, max_bytes=max_bytes, ack_wait_ms=ack_wait_ms
        )
        await self._put(op)
        try:  # shielded: a cancelled caller (gone, or past its deadline) must not lose what the commit delivers
            deliveries: list[Delivery] = await asyncio.shield(op.future)
        except asyncio.CancelledError:
            op.abandoned = True
            op.future.add_done_callback(functools.partial(self._take_back, name))
            raise
        return deliveries

    def _take_back(self, name: str, future: asyncio.Future[Any]) -> None:
        """An abandoned fetch's deliveries never reached its caller: queue an `undeliver` of them
        (consumers.undeliver), so they are due again at once instead of after their ack wait."""
        if future.cancelled() or future.exception() is not None or not future.result():
            return
        deliveries: list[Delivery] = future.result()
        op = self.new_op(
            ConsumerOpKind.UNDELIVER,
            name,
            seqs=[delivery.seq for delivery in deliveries],
            deliver_counts=[delivery.deliver_count for delivery in deliveries],
        )
        task = asyncio.get_running_loop().create_task(self._run_take_back(op))
        self._take_backs.add(task)  # one per abandoned fetch: bounded by the fetches in flight
        task.add_done_callback(self._take_backs.discard)

    async def _run_take_back(self, op: ConsumerOp) -> None:
        try:
            await self.consumer_op(op)
        except WeirError as error:  # closing, failed storage, or no longer leading: the ack wait still applies
            logger.info("%s/%s: abandoned deliveries wait for their ack wait (%s)", *self._labels, error)

    async def consumer_op(self, op: ConsumerOp) -> Any:
        await self._put(op)
        return await op.future

    def new_op(self, kind: ConsumerOpKind, consumer: str, **fields: Any) -> ConsumerOp:
        return ConsumerOp(kind, consumer, asyncio.get_running_loop().create_future(), **fields)

    async def wait_for_work(self, timeout_s: float) -> None:
        """Return after the next commit that appended or changed consumer state, on `wake_waiters`,
        or after `timeout_s`."""
        await wait_on(self._waiters, timeout_s)

    async def wait_for_appends(self, timeout_s: float) -> None:
        """Return after the next commit that appended or removed records, on `wake_waiters`, or
        after `timeout_s`. A parked replication fetch waits here: a consumer's deliveries and acks
        that remove nothing do not end it (it would come back empty; consumer state reaches
        followers by the change feed)."""
        await wait_on(self._append_waiters, timeout_s)

    def wake_waiters(self) -> None:
        """Wake every waiter: `wait_for_work`'s and `wait_for_appends`'."""
        wake(self._waiters)
        wake(self._append_waiters)

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

    async def _enqueue_append(self, entries: list[PreparedEntry], size: int) -> asyncio.Future[list[AppendOutcome]]:
        future: asyncio.Future[list[AppendOutcome]] = asyncio.get_running_loop().create_future()
        await self._put(AppendItem(entries, future, size))
        return future

    async def _put(self, item: CommitItem) -> None:
        await self._commits.put(item)

    def _log_unacknowledged_failure(self, future: asyncio.Future[list[AppendOutcome]]) -> None:
        if not future.cancelled() and future.exception() is not None:
            logger.warning("ack_level=none publish to %s/%s failed: %s", *self._labels, future.exception())

    def decide_item(self, item: CommitItem, context: CommitContext) -> Any:
        """Decide one item into `context`: its caller's result, or the WeirError the caller gets.
        A consumer op or a release that fails changed nothing; the other decisions raise only on
        a bug (the commit loop then fails the whole batch)."""
        if isinstance(item, AppendItem):
            # Queued while this node led; it may have stopped since (a new placement): a
            # follower never appends on its own, or its log would diverge from the primary's.
            refusal = self._append_refusal()
            return self._appends.decide(item, context) if refusal is None else refusal
        if isinstance(item, ConsumerOp):
            try:
                if not self.leading and item.kind != ConsumerOpKind.REMOVE:
                    raise self._not_leading()
                return self._consumer_decisions.decide(item, context)
            except WeirError as error:
                return error
        if isinstance(item, ReplicateItem):
            return self._replica_decisions.decide_replicate(item, context)
        if isinstance(item, ReplicaEditItem):
            return self._replica_decisions.decide_edit(item, context)
        if isinstance(item, DeliverItem):
            return self._delayed.decide_deliver(context)
        if isinstance(item, ReleaseItem):
            try:
                return self._delayed.decide_release(item, context)
            except WeirError as error:
                return error
        if isinstance(item, SweepItem):
            return self._decide_sweep(item, context)
        return None  # DropChangesItem: planned with the whole commit

    def _decide_sweep(self, item: SweepItem, context: CommitContext) -> WeirError | None:
        """A purge (primary only) adds its removals; a plain sweep needs nothing beyond the
        retention every commit plans."""
        if not (item.purge_before_seq or item.delete_seqs):
            return None
        if not self.leading:
            return self._not_leading()
        if item.delete_seqs:
            context.deleted_seqs.extend(item.delete_seqs)
        else:
            before = context.seq + 1 if item.purge_before_seq == PURGE_ALL else item.purge_before_seq
            context.purge_before_seq = max(context.purge_before_seq, before)
        return None

    def apply_commit(self, plan: CommitPlan, context: CommitContext) -> None:
        """Committed: bring the cached totals, the change feed and the in-memory indexes up to the
        stored state."""
        batch, retention = plan.batch, plan.retention
        records = batch.records
        self.last_seq = batch.last_seq
        self.msg_count += len(records) - retention.removed_count
        self.bytes += plan.appended_bytes - retention.total_removed_bytes
        if retention.truncate_before:
            self.first_seq = max(self.first_seq, retention.truncate_before)
        if self.msg_count == 0:
            self.first_seq = self.last_seq + 1
        elif batch.remove_seqs and self.first_seq in batch.remove_seqs:
            oldest = self.log.oldest(self.first_seq, 1)  # single removals took the first message
            self.first_seq = oldest[0].seq if oldest else self.last_seq + 1
        if context.expiries:
            soonest = min(at for _, at in context.expiries)
            self.earliest_expiry_ms = min(self.earliest_expiry_ms or soonest, soonest)
        if self.earliest_expiry_ms and (batch.remove_seqs or batch.truncate_before):
            self.earliest_expiry_ms = self.log.earliest_expiry_ms()  # one of them may have had the soonest
        if plan.change_seqs:
            self.last_change_seq = plan.change_seqs[-1]
            for change_seq, change in zip(plan.change_seqs, plan.changes, strict=True):
                if not change.HasField("append"):
                    self.last_non_append_change_seq = change_seq
        self._feed.settle(plan.change_seqs)
        if context.msg_ids:
            self._appends.expire(context.now_ms)
        self._delayed.index_committed(records, batch.remove_seqs, self.first_seq)
        if context.note_extras and self.caches_batches:  # (the role may have changed during the write)
            self._cache_batch(batch, context)
        elif len(self.batch_cache):
            self.batch_cache.clear()

    @property
    def caches_batches(self) -> bool:
        """Whether commits go to the batch cache: a primary with followers (batch_cache.py)."""
        return self.leading and self.replication.tracker is not None

    def _cache_batch(self, batch: CommitBatch, context: CommitContext) -> None:
        """Mirror a durable commit in the batch cache, in CommitBatch's order."""
        cache = self.batch_cache
        if batch.repairs:
            cache.clear()
        cache.add(batch.records, context.extras, leader_epoch=self.leader_epoch, previous_crc32=self.stored_crc32)
        if batch.remove_seqs:
            cache.removed(batch.remove_seqs)
        if batch.truncate_before:
            cache.truncated(batch.truncate_before)

    def stored_crc32(self, seq: int) -> int | None:
        """The CRC-32 of the record stored at `seq`; None when there is none (seq 0, removed) or
        its stored bytes are damaged (nothing to match against until the scrub repairs it)."""
        held = self.held_record(seq) if seq else None
        return checksum(held) if held is not None else None

    def after_commit(self, plan: CommitPlan, context: CommitContext) -> None:
        """Once the callers have their answers: wake readers, move the high watermark, count."""
        records = plan.batch.records
        if records or plan.batch.remove_seqs:
            # Removals reach the followers through the change feed, after a round of their fetch:
            # a parked one runs it now (a work-queue ack's removal is not held for a snapshot).
            self.wake_waiters()
        elif context.touched_cursors or context.consumers_changed:
            wake(self._waiters)
        if records and self.leading:
            self.update_high_watermark()
        for cursor, counts in plan.touched_counts:
            self._consumer_decisions.count(cursor, counts)
        for name in context.consumer_deletes:
            self._consumer_decisions.forget_metrics(name)
        if records:
            self._published_messages.inc(len(records))
            self._published_bytes.inc(plan.appended_bytes)
        if plan.retention.removed_count:
            self._retention_removed.inc(plan.retention.removed_count)
        metrics.GROUP_COMMIT_MESSAGES.observe(len(records))
        self._publish_gauges()

    # -- decisions (event loop, before the commit) ------------------------------------------------

    def held_record(self, seq: int) -> bytes | None:
        """The record stored at `seq` for a comparison; None when there is none, or when its stored
        bytes fail their checksum (nothing to compare: the scrub repairs it from another copy, and
        replication must not stall on it meanwhile)."""
        try:
            return self.log.get(seq)
        except CorruptRecordError:
            return None

    def _not_leading(self) -> NotLeaderError:
        return NotLeaderError(
            f"stream {self.stream.name!r} partition {self.index}: this node stopped leading it (leader epoch "
            f"{self.leader_epoch}) before the request was applied; refresh routes and retry",
            stream=self.stream.name,
            partition=self.index,
            leader_epoch=self.leader_epoch,
        )

    def _publish_gauges(self) -> None:
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
        self._consumer_decisions.forget_all_metrics()
