"""One partition of a stream: its log, its cached totals and its group-commit loop.

Writes: every mutation of the partition (publish, retention sweep, change-feed trimming) is an item
on one bounded queue, consumed by one commit loop. The loop takes everything queued (up to
`max_batch_messages` / `max_batch_bytes`), decides seqs and retention in the event loop, then applies
the whole batch in one transaction on a worker thread (one thread hop per group commit, never per
message) and only then resolves the callers' futures: an acknowledged publish is on disk.

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
import heapq
import itertools
import logging
import time
import zlib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from weir.errors import (
    CorruptRecordError,
    NoSuchConsumerError,
    NoSuchMessageError,
    NotEnoughReplicasError,
    NotLeaderError,
    NotPendingError,
    PositionOutOfRangeError,
    SchedulingDisabledError,
    ShuttingDownError,
    StorageFailedError,
    WeirError,
)
from weir.subjects import RESERVED_SUBJECT_PREFIX
from weir.v1 import types_pb2
from weir_server.replication import InSyncTracker
from weir_server.streamconfig import DEFAULT_DUPLICATE_WINDOW_MAX_MSGS, DEFAULT_DUPLICATE_WINDOW_MS

from weir_partition_node import consumers, metrics, reads, scheduled
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.clock import Clock
from weir_partition_node.consumers import ConsumerCursor, ConsumerSpec, Counters, Pending
from weir_partition_node.dedupe import DuplicateWindow
from weir_partition_node.retention import LimitsBounds, NewRow, RetentionPlan, plan_replica_edits, plan_retention
from weir_partition_node.scheduled import ScheduleIndex
from weir_partition_node.storage import rebuild
from weir_partition_node.storage.base import CommitBatch, PartitionLog, Record, RowInfo, StoredConsumer, make_record

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class PreparedEntry:
    """A validated message about to be appended."""

    subject: str
    payload: bytes
    headers: Iterable[types_pb2.Header]
    ts_ms: int  # 0 = the node's clock
    expected_last_seq: int | None
    msg_id: str = ""  # idempotence key; "" = none
    key: bytes | None = None  # the publisher's partitioning key, stored with the message
    deliver_at_ms: int = 0  # > 0: store as a schedule record due then (scheduled.py)
    rollup: bool = False  # every earlier message at the subject goes in the same commit
    ttl_ms: int = 0  # > 0: removed this long after it is stored (reason "ttl")


@dataclass(slots=True)
class AppendOutcome:
    seq: int
    result_code: str = "ok"
    message: str = ""
    duplicate: bool = False  # the msg_id was stored within the duplicate window: `seq` is the original's
    scheduled: bool = False  # stored as a schedule record at `seq` (delivered later under a new seq)
    leader_epoch: int = 0  # the epoch this node led under when it decided the append (wait_replicated)


@dataclass(slots=True)
class _Append:
    entries: list[PreparedEntry]
    future: asyncio.Future[list[AppendOutcome]]
    size: int


@dataclass(slots=True)
class _Sweep:
    future: asyncio.Future[int]
    size: int = 0
    # PurgePartition: remove every seq below this (PURGE_ALL: every message stored when decided).
    purge_before_seq: int = 0
    # PurgePartition with seqs: remove exactly these (reason "deleted").
    delete_seqs: list[int] = field(default_factory=list)


@dataclass(slots=True)
class _Deliver:
    """Deliver the schedule records due now (primary only); the future gets how many."""

    future: asyncio.Future[int]
    size: int = 0


@dataclass(slots=True)
class _Release:
    """ReleaseScheduled: deliver now (or discard) the scheduled or held record at `seq` (primary only)."""

    seq: int
    discard: bool
    future: asyncio.Future[int]
    size: int = 0


@dataclass(slots=True)
class _DropChanges:
    before_change_seq: int
    future: asyncio.Future[None]
    size: int = 0


@dataclass(slots=True)
class _ConsumerOp:
    """fetch | ack | nak | term | dead_letter | in_progress | seek | remove | undeliver, for one
    consumer of this partition."""

    kind: str
    consumer: str
    future: asyncio.Future[Any]
    seqs: list[int] = field(default_factory=list)
    batch_size: int = 0
    max_bytes: int = 0
    delay_ms: int = 0
    strict: bool = True  # ack: fail the item when a seq is not pending (single Ack) or report per seq
    ack_wait_ms: int = 0  # fetch: this delivery's invisible duration (0 = the consumer's ack_wait_ms)
    deliver_counts: list[int] = field(default_factory=list)  # settles: one per seq, or empty (any delivery)
    size: int = 0
    abandoned: bool = False  # fetch: its caller went away while it was queued (the commit delivers nothing)


# One record from the primary, decoded and validated by the caller: (seq, ts_ms, subject, encoded,
# msg_id ("" = none), scheduled_seq (0 = none: else the schedule record it delivers, removed with it)).
# expires_at_ms (0 = no TTL) last.
ReplicatedRecord = tuple[int, int, str, bytes, str, int, int]


@dataclass(slots=True)
class _Replicate:
    """Records from the primary at their exact seqs (increasing, above `after_seq`), following
    `after_seq` (secondary only)."""

    after_seq: int
    records: list[ReplicatedRecord]
    future: asyncio.Future[tuple[str, str]]
    size: int
    after_crc32: int | None = None  # the primary's record at after_seq (log matching); None = not known


@dataclass(slots=True)
class _ReplicaEdit:
    """A change a secondary mirrors, or a role change needs:
    truncate_prefix (`first_seq`) | remove (`seqs`, `reason`) | truncate_tail (keep seqs <= `last_seq`)
    | consumer_snapshot (`snapshot` with the local `spec`; tombstone removes) | repair (`repairs`:
    stored records' bytes put back from another copy, see CommitBatch.repairs)."""

    kind: str
    future: asyncio.Future[int]
    first_seq: int = 0
    last_seq: int = 0
    seqs: list[int] = field(default_factory=list)
    reason: str = ""
    snapshot: Any = None
    spec: ConsumerSpec | None = None
    size: int = 0
    repairs: list[tuple[int, int, bytes]] = field(default_factory=list)


_Item = _Append | _Sweep | _DropChanges | _ConsumerOp | _Replicate | _ReplicaEdit | _Deliver | _Release
PURGE_ALL = -1  # _Sweep.purge_before_seq: every message stored when the commit decides
_EXPIRE_ROWS = 10_000  # expired messages one commit removes at most (the rest at the next sweep)
_MSG_ID_PRUNE_INTERVAL_MS = 1000  # stored duplicate-window rows are pruned at most this often


@dataclass(slots=True)
class Delivery:
    """One message a fetch delivered: the stored record and this delivery's count."""

    seq: int
    record: bytes
    deliver_count: int
    partition: int = 0


@dataclass(slots=True)
class _CommitContext:
    """What the decision phase of one group commit accumulates."""

    now_ms: int
    seq: int
    records: list[Record] = field(default_factory=list)
    subject_last: dict[str, int] = field(default_factory=dict)
    work_queue_acked: list[int] = field(default_factory=list)
    dead_lettered: list[int] = field(default_factory=list)
    touched_cursors: dict[str, ConsumerCursor] = field(default_factory=dict)
    consumer_deletes: list[str] = field(default_factory=list)
    consumers_changed: bool = False
    # Secondary edits (replication) and tail truncation, turned into the commit's removal plan.
    replica_truncate_before: int = 0
    replica_removals: dict[str, list[int]] = field(default_factory=dict)
    # Duplicate window rows this commit stores (seq, msg_id, stored_at_ms) and a divergent tail's cut.
    msg_ids: list[tuple[int, str, int]] = field(default_factory=list)
    msg_ids_after: int | None = None
    # PurgePartition (primary only): every seq below this goes, reason "purge".
    purge_before_seq: int = 0
    # Primary: schedule records this commit delivers, and the ones ReleaseScheduled discards (a
    # secondary mirrors a delivery through replica_removals["scheduled"] in `_decide_replicate`).
    scheduled_delivered: list[int] = field(default_factory=list)
    scheduled_discarded: list[int] = field(default_factory=list)
    # Records whose stored bytes the scrub found damaged, put back from another copy.
    repairs: list[tuple[int, int, bytes]] = field(default_factory=list)
    # Primary: rollup publishes of this commit, subject -> the rollup's seq (earlier ones at the
    # subject are removed, reason "rollup").
    rollups: dict[str, int] = field(default_factory=dict)
    # Per-message TTLs of this commit's records: (seq, expires_at_ms).
    expiries: list[tuple[int, int]] = field(default_factory=list)
    # PurgePartition with seqs (primary only): these go, reason "deleted".
    deleted_seqs: list[int] = field(default_factory=list)

    def append_record(self, seq: int, ts_ms: int, subject: str, encoded: bytes) -> None:
        """Add a record that already has its seq (replication)."""
        self.seq = seq
        self.records.append(make_record(seq, ts_ms, subject, encoded))
        self.subject_last[subject] = seq

    def append(self, subject: str, ts_ms: int, message: types_pb2.Message) -> int:
        """Give `message` the next seq and `ts_ms`, add its record to the commit; returns the seq."""
        self.seq += 1
        message.seq = self.seq
        message.ts_ms = ts_ms
        self.records.append(make_record(self.seq, ts_ms, subject, message.SerializeToString()))
        self.subject_last[subject] = self.seq
        return self.seq


@dataclass(slots=True)
class CommitLimits:
    max_batch_messages: int = 2000
    max_batch_bytes: int = 8 * 1024 * 1024
    queue_depth: int = 4096


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
    ) -> None:
        self.stream = stream
        self.index = index
        self.log = log
        self._feed = feed
        self._clock = clock
        self._executor = executor
        self._limits = limits
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
        self.high_watermark = self.last_seq
        self.epoch_start_seq = 0  # the log's end when this node last became primary (set_role)
        # The soonest per-message TTL among stored messages (0 = none): retention removes what is due.
        self.earliest_expiry_ms = log.earliest_expiry_ms()
        self.tracker: InSyncTracker | None = None
        self.min_insync = 1
        # The log was started empty in place of an unreadable file (storage/rebuild.py): it follows
        # until it caught up with its primary and never leads meanwhile.
        self.rebuilding = False
        self._replicated_waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        # Clustered: the node's self-fencing (its heartbeat lease lapsed) as an error to refuse
        # appends with, checked when a commit decides them, not only when the request arrived: an
        # append queued before a pause must not be stored by a primary another node may have replaced.
        self.lease_refusal: Callable[[], WeirError | None] | None = None
        # The duplicate window (dedupe.py): the primary's index of its recent message ids, loaded
        # from the log on the first publish that needs it after it started leading.
        self._duplicates: DuplicateWindow | None = None
        self._msg_ids_pruned_ms = 0
        self._waiter_ids = itertools.count()
        self.consumers: dict[str, ConsumerCursor] = {}
        self._consumer_children: dict[str, tuple[Any, ...]] = {}
        self._waiters: set[asyncio.Future[None]] = set()
        self._take_backs: set[asyncio.Task[None]] = set()
        self._progress_waiters: set[asyncio.Future[None]] = set()
        self._queue: asyncio.Queue[_Item] = asyncio.Queue(maxsize=limits.queue_depth)
        self._failure: WeirError | None = None
        self._closing = False
        self._labels = (stream.name, str(index))
        # Labelled children resolved once: `labels()` costs ~20 us, too much for every commit.
        self._published_messages = metrics.PUBLISHED_MESSAGES.labels(*self._labels)
        self._published_bytes = metrics.PUBLISHED_BYTES.labels(*self._labels)
        self._retention_removed = metrics.RETENTION_REMOVED.labels(*self._labels)
        self._last_seq_gauge = metrics.PARTITION_LAST_SEQ.labels(*self._labels)
        self._messages_gauge = metrics.PARTITION_MESSAGES.labels(*self._labels)
        self._bytes_gauge = metrics.PARTITION_BYTES.labels(*self._labels)
        self._high_watermark_gauge = metrics.HIGH_WATERMARK.labels(*self._labels)
        self._duplicates_counter = metrics.PUBLISH_DUPLICATES.labels(*self._labels)
        # Delayed delivery (scheduled.py): the primary's index of schedule records not delivered yet
        # (None on a secondary, or when the stream does not allow them) and the timer that queues
        # a _Deliver when the earliest is due.
        self._schedule: ScheduleIndex | None = None
        self._deliver_timer: asyncio.TimerHandle | None = None
        self._deliver_due_ms: int | None = None
        self._deliver_task: asyncio.Task[None] | None = None
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"commit:{stream.name}/{index}")
        self._load_schedule()
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
        await self._put(_Sweep(future))
        return await future

    async def purge(self, keep_from_seq: int | None, seqs: Sequence[int] = ()) -> int:
        """Remove every message below `keep_from_seq` (None: every message stored when the commit
        decides), or with `seqs` exactly those (reason "deleted"); returns how many were removed.
        The removal reaches the secondaries through the change feed as retention does. Errors:
        NotLeaderError (this node stopped leading)."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if seqs:
            await self._put(_Sweep(future, delete_seqs=list(seqs)))
        else:
            await self._put(_Sweep(future, purge_before_seq=PURGE_ALL if keep_from_seq is None else keep_from_seq))
        return await future

    async def drop_changes_before(self, change_seq: int) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self._put(_DropChanges(change_seq, future))
        await future

    # -- replication (event loop) ------------------------------------------------------------------

    async def replicate(
        self, after_seq: int, records: list[ReplicatedRecord], size: int, after_crc32: int | None = None
    ) -> tuple[str, str]:
        """Secondary: append the primary's `records` (validated by the caller: seqs increase and
        exceed `after_seq`) after `after_seq`; returns (result_code, message): ok | out_of_order |
        divergence | not_follower. `after_crc32`: the CRC-32 of the primary's record at `after_seq`;
        holding another record there is `divergence` (log matching; nothing is stored)."""
        future: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        await self._put(_Replicate(after_seq, records, future, size, after_crc32))
        return await future

    async def repair(self, repairs: list[tuple[int, int, bytes]]) -> None:
        """Put stored records' bytes back from another copy ((seq, crc, record) with crc the
        checksum of record), where the stored checksum is that crc (a scrub's repair; any role)."""
        if repairs:
            await self.replica_edit("repair", repairs=repairs)

    async def replica_edit(self, kind: str, **fields: Any) -> int:
        """Queue a `_ReplicaEdit` (see there) and wait until it is durable."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        await self._put(_ReplicaEdit(kind, future, **fields))
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
            self._duplicates = None  # a new primary rebuilds it from what its log holds
            self._load_schedule()
        if leading and (not was_leading or leader_epoch != previous_epoch):
            # What an earlier primary may have acknowledged ends at most here: point reads of a
            # high-watermark stream wait until the watermark of this epoch covers it (reads.py).
            self.epoch_start_seq = self.last_seq
        self.leader_epoch = leader_epoch
        self.tracker = tracker
        self.min_insync = min_insync
        if was_leading and (not leading or leader_epoch != previous_epoch):
            # The epoch that appended them is over: their records may be truncated by the next
            # leader (or, led again later, hold another primary's records), so they never complete.
            self.fail_replicated_waiters(self._leadership_lost(previous_epoch))
        if leading:
            self.update_high_watermark()

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

    # -- delayed delivery (event loop; decisions in scheduled.py) --------------------------------

    @property
    def scheduled_count(self) -> int:
        """Schedule records this primary still has to deliver (0 on a secondary)."""
        return len(self._schedule) if self._schedule is not None else 0

    def _load_schedule(self) -> None:
        """A primary of a stream with scheduled messages indexes the schedule records its log holds
        (from the subject index only: no record is read); a secondary drops its index. Records a
        commit in flight stores join the index when it completes (`_index_scheduled`)."""
        self._schedule = None
        if self.leading and self.stream.allow_scheduled_messages:
            index = ScheduleIndex()
            for prefix in (scheduled.SCHEDULED_SUBJECT_PREFIX, scheduled.HELD_SUBJECT_PREFIX):
                index.load(self.log.subjects_with_prefix(prefix, scheduled.MAX_SCHEDULED_PER_PARTITION + 1))
            self._schedule = index
        self.clock_moved()

    def clock_moved(self) -> None:
        """(Re)arm the delivery timer for the earliest schedule record: after a commit changed the
        index, a role change, or a move of the node's clock (tests' manual clock)."""
        if self._deliver_timer is not None:
            self._deliver_timer.cancel()
            self._deliver_timer = None
        schedule = self._schedule
        due_ms = schedule.next_due_ms() if schedule is not None and self.leading and not self._closing else None
        self._deliver_due_ms = due_ms
        if due_ms is None or self._deliver_task is not None:
            return  # nothing to deliver, or a delivery is queued (it re-arms when done)
        # Wake at the end of the due record's delivery tick: records due within one tick go out in
        # one commit (a commit per record would cost a thread hop each at thousands due a second).
        tick_ms = scheduled.DELIVERY_TICK_MS
        delay_s = max(0, -(-due_ms // tick_ms) * tick_ms - self._clock.now_ms()) / 1000
        self._deliver_timer = asyncio.get_running_loop().call_later(delay_s, self._queue_delivery)

    def _queue_delivery(self) -> None:
        self._deliver_timer = None
        if self._deliver_task is None and not self._closing and self._failure is None:
            self._deliver_task = asyncio.get_running_loop().create_task(
                self._deliver_due(), name=f"deliver-scheduled:{self.stream.name}/{self.index}"
            )

    async def _deliver_due(self) -> None:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        try:
            await self._put(_Deliver(future))
            await future
        except WeirError as error:  # not leading any more, closing, or a failed commit: nothing lost
            logger.debug("delivering scheduled messages of %s/%s stopped: %s", *self._labels, error)
        finally:
            self._deliver_task = None
            self.clock_moved()

    def _index_scheduled(self, records: list[Record], removed: Iterable[int], first_seq: int) -> None:
        """After a commit: index the schedule records it stored and forget the ones it removed."""
        schedule = self._schedule
        if schedule is None:
            return
        prefix = RESERVED_SUBJECT_PREFIX  # schedule and held records
        schedule.add_subjects((record[0], record[2]) for record in records if record[2].startswith(prefix))
        schedule.discard(removed)
        schedule.discard_below(first_seq)
        if schedule.next_due_ms() != self._deliver_due_ms:
            self.clock_moved()

    def _decide_deliver(self, context: _CommitContext) -> int:
        """Append the message of every schedule record due now (at most FIRE_BATCH_MESSAGES) on its
        own subject; `_plan_retention` removes the records in the same commit. A record retention
        took meanwhile delivers nothing."""
        if not self.leading or self._schedule is None:
            return 0
        due = self._schedule.take_due(context.now_ms, scheduled.FIRE_BATCH_MESSAGES)
        for seq in due:
            record = self.log.get(seq)
            if record is None:
                continue
            message = scheduled.delivered_message(record, seq, self.index)
            context.append(message.subject, context.now_ms, message)
            context.scheduled_delivered.append(seq)
        return len(context.scheduled_delivered)  # more still due: `_deliver_due` re-arms at once

    async def release_scheduled(self, seq: int, *, discard: bool) -> int:
        """Deliver now (or discard) the scheduled or held record at `seq`; returns the delivered
        message's seq (0 when discarded) once durable. Errors: SchedulingDisabledError,
        NoSuchMessageError, NotLeaderError."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        await self._put(_Release(seq, discard, future))
        return await future

    def list_scheduled(self, from_seq: int, limit: int, *, held_only: bool) -> tuple[list[bytes], int]:
        """The scheduled (or only held) records still to deliver, from `from_seq` in seq order, at
        most `limit`: (records, next_seq; 0 when none follow). Errors: SchedulingDisabledError,
        NotLeaderError."""
        schedule = self._require_schedule()
        seqs = schedule.pending_seqs(from_seq, limit + 1, held_only=held_only)
        records = [record for record in map(self.log.get, seqs[:limit]) if record is not None]
        return records, seqs[limit] if len(seqs) > limit else 0

    def _require_schedule(self) -> ScheduleIndex:
        if not self.leading:
            raise self._not_leading()
        if self._schedule is None:
            raise SchedulingDisabledError(
                f"stream {self.stream.name!r} does not accept scheduled messages: "
                "create it with allow_scheduled_messages",
                stream=self.stream.name,
            )
        return self._schedule

    def _decide_release(self, item: _Release, context: _CommitContext) -> int:
        schedule = self._require_schedule()
        record = self.log.get(item.seq) if item.seq in schedule else None
        if record is None:
            raise NoSuchMessageError(
                f"stream {self.stream.name!r} partition {self.index}: seq {item.seq} holds no scheduled or held "
                "message (delivered, discarded, or never one)",
                stream=self.stream.name,
                partition=self.index,
                seq=item.seq,
            )
        schedule.discard([item.seq])
        if item.discard:
            context.scheduled_discarded.append(item.seq)
            return 0
        message = scheduled.delivered_message(record, item.seq, self.index)
        context.scheduled_delivered.append(item.seq)
        return context.append(message.subject, context.now_ms, message)

    def in_sync_count(self) -> int:
        return len(self.tracker.in_sync) if self.tracker is not None else 1

    def update_high_watermark(self) -> None:
        """Primary: recompute the high watermark and complete the publishes it now covers (or
        fail them all when the in-sync set is below min_insync_replicas)."""
        if not self.leading:
            return
        tracker = self.tracker
        if self._progress_waiters:
            _wake(self._progress_waiters)
        hw = self.last_seq if tracker is None else tracker.compute_high_watermark(self.last_seq)
        advanced = hw > self.high_watermark
        self.high_watermark = hw
        self._high_watermark_gauge.set(hw)
        waiters = self._replicated_waiters
        if waiters and self.in_sync_count() < self.min_insync:
            self.fail_replicated_waiters(self.not_enough_replicas())
            return
        while waiters and waiters[0][0] <= hw:
            _, _, future = heapq.heappop(waiters)
            if not future.done():
                future.set_result(None)
        if advanced and self.stream.deliver_up_to_high_watermark:
            self.wake_waiters()

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
        if seq <= self.high_watermark and self.in_sync_count() >= self.min_insync:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._replicated_waiters, (seq, next(self._waiter_ids), future))
        await asyncio.wait_for(future, timeout_s)

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
        waiters, self._replicated_waiters = self._replicated_waiters, []
        for _, _, future in waiters:
            if not future.done():
                future.set_exception(error)

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
        op = self.new_op("fetch", name, batch_size=batch_size, max_bytes=max_bytes, ack_wait_ms=ack_wait_ms)
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
            "undeliver",
            name,
            seqs=[delivery.seq for delivery in deliveries],
            deliver_counts=[delivery.deliver_count for delivery in deliveries],
        )
        task = asyncio.get_running_loop().create_task(self._run_take_back(op))
        self._take_backs.add(task)  # one per abandoned fetch: bounded by the fetches in flight
        task.add_done_callback(self._take_backs.discard)

    async def _run_take_back(self, op: _ConsumerOp) -> None:
        try:
            await self.consumer_op(op)
        except WeirError as error:  # closing, failed storage, or no longer leading: the ack wait still applies
            logger.info("%s/%s: abandoned deliveries wait for their ack wait (%s)", *self._labels, error)

    async def consumer_op(self, op: _ConsumerOp) -> Any:
        await self._put(op)
        return await op.future

    def new_op(self, kind: str, consumer: str, **fields: Any) -> _ConsumerOp:
        return _ConsumerOp(kind, consumer, asyncio.get_running_loop().create_future(), **fields)

    async def wait_for_work(self, timeout_s: float) -> None:
        """Return after the next commit that appended or changed consumer state, on `wake_waiters`,
        or after `timeout_s`."""
        await _wait_on(self._waiters, timeout_s)

    def wake_waiters(self) -> None:
        _wake(self._waiters)

    async def wait_for_progress(self, timeout_s: float) -> None:
        """Primary: return at the next follower report or commit (the next `update_high_watermark`),
        or after `timeout_s`."""
        await _wait_on(self._progress_waiters, timeout_s)

    async def drain(self) -> None:
        """Wait until everything queued so far (and whatever joins it meanwhile) is committed."""
        await self._queue.join()

    async def close(self) -> None:
        """Stop accepting writes, commit what is queued, stop the loop (does not close the log)."""
        self._closing = True
        self.clock_moved()  # closing: cancels the delivery timer
        self.wake_waiters()
        await self._queue.join()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    # -- internals -------------------------------------------------------------------------------

    async def _enqueue_append(self, entries: list[PreparedEntry], size: int) -> asyncio.Future[list[AppendOutcome]]:
        future: asyncio.Future[list[AppendOutcome]] = asyncio.get_running_loop().create_future()
        await self._put(_Append(entries, future, size))
        return future

    async def _put(self, item: _Item) -> None:
        if self._closing:
            raise ShuttingDownError(f"stream {self.stream.name!r} partition {self.index} is closing")
        if self._failure is not None:
            raise self._failure
        await self._queue.put(item)  # bounded: waits when the partition is saturated (backpressure)

    def _log_unacknowledged_failure(self, future: asyncio.Future[list[AppendOutcome]]) -> None:
        if not future.cancelled() and future.exception() is not None:
            logger.warning("ack_level=none publish to %s/%s failed: %s", *self._labels, future.exception())

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            items: list[_Item] = [first]
            messages = len(first.entries) if isinstance(first, _Append) else 0
            total_bytes = first.size
            while not self._queue.empty() and messages < self._limits.max_batch_messages:
                if total_bytes >= self._limits.max_batch_bytes:
                    break
                item = self._queue.get_nowait()
                items.append(item)
                if isinstance(item, _Append):
                    messages += len(item.entries)
                total_bytes += item.size
            try:
                await self._commit(items)
            except Exception as error:  # the loop must survive anything to fail callers cleanly
                logger.exception("commit loop of %s/%s failed", *self._labels)
                self._fail_items(items, StorageFailedError(f"internal error in commit: {error}"))
            finally:
                for _ in items:
                    self._queue.task_done()

    def _fail_items(self, items: list[_Item], error: WeirError) -> None:
        for item in items:
            if not item.future.done():
                item.future.set_exception(error)

    async def _commit(self, items: list[_Item]) -> None:
        if self._failure is not None:
            self._fail_items(items, self._failure)
            return
        now_ms = self._clock.now_ms()
        # The change feed's watermark waits for this commit: its changes carry now_ms and get their
        # change seqs below; the token closes once they are settled.
        token = self._feed.open_commit(now_ms)
        try:
            await self._commit_at(items, now_ms)
        finally:
            self._feed.close_commit(token)

    async def _commit_at(self, items: list[_Item], now_ms: int) -> None:
        started = time.perf_counter()
        context = _CommitContext(now_ms, self.last_seq)
        results: list[Any] = []
        for item in items:
            if isinstance(item, _Append):
                # Queued while this node led; it may have stopped since (a new placement): a
                # follower never appends on its own, or its log would diverge from the primary's.
                refusal = self._append_refusal()
                results.append(self._decide_append(item, context) if refusal is None else refusal)
            elif isinstance(item, _ConsumerOp):
                try:
                    if not self.leading and item.kind != "remove":
                        raise self._not_leading()
                    results.append(self._decide_consumer_op(item, context))
                except WeirError as error:
                    results.append(error)
            elif isinstance(item, _Replicate):
                results.append(self._decide_replicate(item, context))
            elif isinstance(item, _ReplicaEdit):
                results.append(self._decide_replica_edit(item, context))
            elif isinstance(item, _Deliver):
                results.append(self._decide_deliver(context))
            elif isinstance(item, _Release):
                try:
                    results.append(self._decide_release(item, context))
                except WeirError as error:
                    results.append(error)
            elif isinstance(item, _Sweep) and (item.purge_before_seq or item.delete_seqs):
                if not self.leading:
                    results.append(self._not_leading())
                    continue
                if item.delete_seqs:
                    context.deleted_seqs.extend(item.delete_seqs)
                else:
                    before = context.seq + 1 if item.purge_before_seq == PURGE_ALL else item.purge_before_seq
                    context.purge_before_seq = max(context.purge_before_seq, before)
                results.append(None)
            else:
                results.append(None)
        records = context.records
        seq = context.seq
        now_ms = context.now_ms

        plan = self._plan_retention(context)
        appended_bytes = sum(record[3] for record in records)
        drop_changes_before = max(
            (item.before_change_seq for item in items if isinstance(item, _DropChanges)), default=0
        )

        change_kinds: list[types_pb2.Change] = []
        if records:
            change_kinds.append(
                self._change(
                    append=types_pb2.AppendChange(
                        first_seq=records[0][0],
                        last_seq=seq,
                        message_count=len(records),
                        bytes=appended_bytes,
                    )
                )
            )
        if plan.remove_seqs:
            change_kinds.append(
                self._change(
                    remove=types_pb2.RemoveChange(
                        seqs=plan.remove_seqs, removed_bytes=plan.removed_bytes, reason="max_msgs_per_subject"
                    )
                )
            )
        for reason, rows in plan.consumer_removals.items():
            change_kinds.append(
                self._change(
                    remove=types_pb2.RemoveChange(
                        seqs=[row.seq for row in rows], removed_bytes=sum(row.size for row in rows), reason=reason
                    )
                )
            )
        if plan.truncate_before:
            change_kinds.append(
                self._change(
                    truncate=types_pb2.TruncateChange(
                        first_seq=plan.truncate_before,
                        removed_count=plan.truncated_count,
                        removed_bytes=plan.truncated_bytes,
                        reason=plan.truncate_reason,
                    )
                )
            )
        batch = CommitBatch(
            records=records,
            remove_seqs=plan.all_remove_seqs(),
            truncate_before=plan.truncate_before,
            last_seq=seq,
            drop_changes_before=drop_changes_before,
            consumer_deletes=context.consumer_deletes,
            msg_ids=context.msg_ids,
            msg_ids_after=context.msg_ids_after,
            repairs=context.repairs,
            expiries=context.expiries,
        )
        prune_msg_ids = bool(context.msg_ids) and now_ms - self._msg_ids_pruned_ms >= _MSG_ID_PRUNE_INTERVAL_MS
        if prune_msg_ids:
            view = self.stream
            batch.msg_id_retention = (now_ms - view.duplicate_window_ms + 1, view.duplicate_window_max_msgs)
        touched_counts: list[tuple[ConsumerCursor, consumers.CommitCounts]] = []
        for cursor in context.touched_cursors.values():
            change, counts = self._store_cursor(cursor, batch)
            change_kinds.append(change)
            touched_counts.append((cursor, counts))
        change_seqs = await self._feed.allocate(len(change_kinds)) if change_kinds else []
        for change_seq, change in zip(change_seqs, change_kinds, strict=True):
            change.change_seq = change_seq
            change.ts_ms = now_ms
            batch.changes.append((change_seq, now_ms, change.SerializeToString()))

        empty = not (batch.records or batch.remove_seqs or batch.truncate_before or batch.changes or batch.repairs)
        empty = empty and not (batch.drop_changes_before or batch.consumer_deletes or batch.msg_ids_after is not None)
        try:
            if empty:
                pass  # nothing to store (say, fetches that found nothing): no thread hop
            elif self._executor is None:
                self.log.commit(batch)
            else:
                await asyncio.get_running_loop().run_in_executor(self._executor, self.log.commit, batch)
        except BaseException as error:
            self._feed.settle(change_seqs)
            self._failure = StorageFailedError(
                f"stream {self.stream.name!r} partition {self.index}: commit failed ({error}); "
                "the partition refuses writes until the node restarts",
                stream=self.stream.name,
                partition=self.index,
            )
            logger.error("%s", self._failure)
            self._fail_items(items, self._failure)
            if not isinstance(error, Exception):
                raise
            return
        finally:
            for cursor in context.touched_cursors.values():
                cursor.reset_commit()

        # Committed: update the cached totals, then answer the callers.
        self.last_seq = seq
        self.msg_count += len(records) - plan.removed_count
        self.bytes += appended_bytes - plan.total_removed_bytes
        if plan.truncate_before:
            self.first_seq = max(self.first_seq, plan.truncate_before)
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
        if change_seqs:
            self.last_change_seq = change_seqs[-1]
            for change_seq, change in zip(change_seqs, change_kinds, strict=True):
                if not change.HasField("append"):
                    self.last_non_append_change_seq = change_seq
        self._feed.settle(change_seqs)
        if prune_msg_ids:
            self._msg_ids_pruned_ms = now_ms
        if self._duplicates is not None and context.msg_ids:
            self._duplicates.expire(now_ms)  # ids past the window leave memory as new ones come in
        if self._schedule is not None:
            self._index_scheduled(records, batch.remove_seqs, self.first_seq)

        for item, result in zip(items, results, strict=True):
            if item.future.done():  # the caller went away (cancelled); the data is committed anyway
                continue
            if isinstance(result, WeirError):
                item.future.set_exception(result)
            elif isinstance(item, _Sweep):
                item.future.set_result(plan.removed_count)
            else:
                item.future.set_result(result)

        if records or context.touched_cursors or context.consumers_changed:
            self.wake_waiters()
        if records and self.leading:
            self.update_high_watermark()
        for cursor, counts in touched_counts:
            self._consumer_metrics(cursor, counts)
        for name in context.consumer_deletes:
            self._forget_consumer_metrics(name)
        if records:
            self._published_messages.inc(len(records))
            self._published_bytes.inc(appended_bytes)
        if plan.removed_count:
            self._retention_removed.inc(plan.removed_count)
        metrics.GROUP_COMMIT_MESSAGES.observe(len(records))
        metrics.GROUP_COMMIT_SECONDS.observe(time.perf_counter() - started)
        self._publish_gauges()

    # -- decisions (event loop, before the commit) ------------------------------------------------

    def _decide_append(self, item: _Append, context: _CommitContext) -> list[AppendOutcome]:
        outcomes: list[AppendOutcome] = []
        subject_last = context.subject_last
        now_ms = context.now_ms
        partition = self.index
        window: DuplicateWindow | None = None
        claimed = len(context.msg_ids)
        epoch = self.leader_epoch
        for entry in item.entries:
            msg_id = entry.msg_id
            if msg_id:
                # Claimed at the seq it gets below, before the commit is durable: a repeat later in
                # this commit is a duplicate too, and a commit that fails leaves the partition
                # refusing writes until a restart rebuilds the window from what is stored.
                if window is None:
                    window = self._duplicate_window(now_ms)
                    window.open_group(context.seq + 1, now_ms)
                original = window.claim(msg_id, context.seq + 1, now_ms)
                if original is not None:
                    outcomes.append(AppendOutcome(original, duplicate=True, leader_epoch=epoch))
                    self._duplicates_counter.inc()
                    continue
            if entry.expected_last_seq is not None:
                actual = subject_last.get(entry.subject)
                if actual is None:
                    actual = self.log.subject_last_seq(entry.subject)
                if actual != entry.expected_last_seq:
                    if window is not None and msg_id:
                        window.release(msg_id)
                    outcomes.append(
                        AppendOutcome(
                            actual,
                            "wrong_revision",
                            f"subject {entry.subject!r} is at seq {actual}, expected {entry.expected_last_seq}",
                        )
                    )
                    continue
            if entry.deliver_at_ms:
                seq = self._append_schedule_record(entry, context)
                if msg_id:
                    context.msg_ids.append((seq, msg_id, now_ms))
                outcomes.append(AppendOutcome(seq, scheduled=True, leader_epoch=epoch))
                continue
            if entry.headers:
                message = types_pb2.Message(
                    subject=entry.subject, headers=entry.headers, payload=entry.payload, partition=partition
                )
                message.msg_id = msg_id
            elif msg_id:  # copying an empty repeated field costs ~1.4 us a message
                message = types_pb2.Message(
                    subject=entry.subject, payload=entry.payload, partition=partition, msg_id=msg_id
                )
            else:
                message = types_pb2.Message(subject=entry.subject, payload=entry.payload, partition=partition)
            if entry.key is not None:
                message.key = entry.key
            if entry.ttl_ms:
                message.expires_at_ms = now_ms + entry.ttl_ms
            seq = context.append(entry.subject, entry.ts_ms or now_ms, message)
            if entry.ttl_ms:
                context.expiries.append((seq, message.expires_at_ms))
            if msg_id:
                context.msg_ids.append((seq, msg_id, now_ms))
            if entry.rollup:
                context.rollups[entry.subject] = seq
            outcomes.append(AppendOutcome(seq, leader_epoch=epoch))
        if window is not None:
            window.close_group(len(context.msg_ids) - claimed, context.seq)
        return outcomes

    def _append_schedule_record(self, entry: PreparedEntry, context: _CommitContext) -> int:
        """Store `entry` as a schedule record due at its deliver_at_ms, or a held record (deliver_at_ms
        HELD) (scheduled.py); returns its seq."""
        held = entry.deliver_at_ms >= scheduled.HELD
        seq = context.seq + 1
        subject = scheduled.held_subject(seq) if held else scheduled.scheduled_subject(entry.deliver_at_ms, seq)
        message = types_pb2.Message(
            subject=subject,
            headers=entry.headers,
            payload=entry.payload,
            partition=self.index,
            msg_id=entry.msg_id,
            deliver_at_ms=0 if held else entry.deliver_at_ms,
            scheduled_subject=entry.subject,
        )
        if entry.key is not None:
            message.key = entry.key
        return context.append(subject, entry.ts_ms or context.now_ms, message)

    def _duplicate_window(self, now_ms: int) -> DuplicateWindow:
        """The primary's duplicate window, loaded from the log's newest rows on first use."""
        window = self._duplicates
        view = self.stream
        if window is None:
            window = self._duplicates = DuplicateWindow(view.duplicate_window_ms, view.duplicate_window_max_msgs)
            window.load(
                self.log.recent_msg_ids(now_ms - view.duplicate_window_ms + 1, view.duplicate_window_max_msgs), now_ms
            )
        elif (window.window_ms, window.max_msgs) != (view.duplicate_window_ms, view.duplicate_window_max_msgs):
            window.resize(view.duplicate_window_ms, view.duplicate_window_max_msgs, now_ms)
        return window

    def _decide_consumer_op(self, op: _ConsumerOp, context: _CommitContext) -> Any:
        if op.kind == "remove":  # also clears stale stored state of a consumer not registered here
            self.consumers.pop(op.consumer, None)
            context.touched_cursors.pop(op.consumer, None)
            context.consumer_deletes.append(op.consumer)
            context.consumers_changed = True
            return None
        cursor = self.consumers.get(op.consumer)
        if cursor is None:
            raise NoSuchConsumerError(
                f"stream {self.stream.name!r} has no consumer {op.consumer!r}",
                stream=self.stream.name,
                consumer=op.consumer,
            )
        if op.kind == "fetch":
            return [] if op.abandoned else self._fetch(cursor, op, context)
        if op.kind == "undeliver":
            taken = [
                consumers.undeliver(cursor, seq, count, context.now_ms)
                for seq, count in zip(op.seqs, op.deliver_counts, strict=True)
            ]
            if any(taken):
                context.touched_cursors[cursor.spec.name] = cursor
            return sum(taken)
        if op.kind == "seek":
            return self._seek(cursor, op.seqs[0], context)
        stale = self._stale_deliveries(cursor, op)
        if op.kind == "ack":
            results = consumers.ack(cursor, [seq for seq in op.seqs if seq not in stale])
            if op.strict and (not results or results[0] is None):  # single Ack: nothing changed, the call fails
                raise self._not_pending(cursor, op.seqs[0])
            acked = [seq for seq in results if seq is not None]
            if acked:
                context.touched_cursors[cursor.spec.name] = cursor
                if self.stream.retention == types_pb2.RETENTION_POLICY_WORK_QUEUE:
                    context.work_queue_acked.extend(acked)
            return _ack_results(op.seqs, stale, results, cursor)
        (seq,) = op.seqs
        if seq not in cursor.pending:
            raise self._not_pending(cursor, seq)
        context.touched_cursors[cursor.spec.name] = cursor
        if op.kind == "nak":
            consumers.nak(cursor, seq, context.now_ms, op.delay_ms)
            return None
        if op.kind == "term":
            consumers.term(cursor, seq)
            return None
        if op.kind == "dead_letter":
            self._dead_letter(cursor, seq, context, reason="consumer")
            return None
        if op.kind == "in_progress":
            return consumers.in_progress(cursor, seq, context.now_ms)
        raise AssertionError(f"unknown consumer op {op.kind}")

    def _stale_deliveries(self, cursor: ConsumerCursor, op: _ConsumerOp) -> dict[int, str]:
        """The seqs of a settle bound to deliveries (`deliver_counts`) whose delivery is no longer
        the pending one, with why. A single-seq settle (Ack, Nak, Term) then fails as not_pending."""
        if not op.deliver_counts:
            return {}
        stale: dict[int, str] = {}
        for seq, deliver_count in zip(op.seqs, op.deliver_counts, strict=True):
            reason = consumers.stale_delivery_reason(cursor, seq, deliver_count)
            if reason is not None:
                stale[seq] = reason
        if stale and (op.strict or op.kind != "ack"):
            seq = op.seqs[0]
            raise NotPendingError(
                stale[seq], stream=self.stream.name, partition=self.index, consumer=cursor.spec.name, seq=seq
            )
        return stale

    def _decide_replicate(self, item: _Replicate, context: _CommitContext) -> tuple[str, str]:
        if self.leading:
            return "not_follower", f"this node leads partition {self.index} of {self.stream.name!r}"
        end = context.seq
        if end != self.last_seq:
            return "out_of_order", "another write to this partition is in the same commit; resend"
        if item.after_seq > end:
            return "out_of_order", f"the log ends at seq {end}; these records follow seq {item.after_seq}"
        if item.after_crc32 is not None and item.after_seq:
            held = self._held(item.after_seq)  # log matching: these records must follow the same record
            if held is not None and zlib.crc32(held) != item.after_crc32:
                return "divergence", f"seq {item.after_seq} holds another record than the primary's"
        for seq, _, _, record, _, _, _ in item.records:  # a replay must match what this replica holds
            if seq > end:
                break
            stored = self._held(seq)
            if stored is not None and stored != record:
                return "divergence", f"seq {seq} holds another record than the primary's"
        for seq, ts_ms, subject, record, msg_id, scheduled_seq, expires_at_ms in item.records:
            if seq > end:
                context.append_record(seq, ts_ms, subject, record)
                if expires_at_ms:  # indexed as on the primary: a copy that takes over expires it
                    context.expiries.append((seq, expires_at_ms))
                if scheduled_seq:  # a delivered schedule record: it goes in this commit, as on the primary
                    context.replica_removals.setdefault("scheduled", []).append(scheduled_seq)
                elif msg_id:  # (a delivered message's msg_id is its schedule record's, already indexed)
                    context.msg_ids.append((seq, msg_id, context.now_ms))
        return "ok", ""

    def _held(self, seq: int) -> bytes | None:
        """The record stored at `seq` for a comparison; None when there is none, or when its stored
        bytes fail their checksum (nothing to compare: the scrub repairs it from another copy, and
        replication must not stall on it meanwhile)."""
        try:
            return self.log.get(seq)
        except CorruptRecordError:
            return None

    def _decide_replica_edit(self, item: _ReplicaEdit, context: _CommitContext) -> int:
        if item.kind == "truncate_prefix":
            if item.first_seq > max(self.first_seq, context.replica_truncate_before):
                context.replica_truncate_before = item.first_seq
            context.seq = max(context.seq, item.first_seq - 1)
            return 0
        if item.kind == "remove":
            context.replica_removals.setdefault(item.reason or "replicated", []).extend(item.seqs)
            return 0
        if item.kind == "repair":
            context.repairs.extend(item.repairs)
            return len(item.repairs)
        if item.kind == "truncate_tail":
            keep = item.last_seq
            if context.seq <= keep:
                return 0
            context.records[:] = [record for record in context.records if record[0] <= keep]
            context.msg_ids[:] = [row for row in context.msg_ids if row[0] <= keep]
            context.msg_ids_after = keep if context.msg_ids_after is None else min(context.msg_ids_after, keep)
            tail: list[int] = []
            scan_from = keep + 1
            while scan_from <= self.last_seq:
                chunk = self.log.oldest(scan_from, 4096)
                tail.extend(row.seq for row in chunk)
                if len(chunk) < 4096:
                    break
                scan_from = chunk[-1].seq + 1
            context.replica_removals.setdefault("divergent_tail", []).extend(tail)
            context.seq = keep
            for cursor_state in self.consumers.values():
                beyond = [seq for seq in cursor_state.pending if seq > keep]
                if beyond or cursor_state.last_delivered > keep:
                    for seq in beyond:
                        del cursor_state.pending[seq]
                        cursor_state.touched.add(seq)
                    cursor_state.last_delivered = min(cursor_state.last_delivered, keep)
                    cursor_state.commit_counts()
                    context.touched_cursors[cursor_state.spec.name] = cursor_state
            return len(tail)
        if item.kind == "consumer_snapshot":
            snapshot = item.snapshot
            name = snapshot.consumer
            context.consumer_deletes.append(name)  # the stored pending set is replaced whole
            context.consumers_changed = True
            context.touched_cursors.pop(name, None)
            if snapshot.tombstone or item.spec is None:
                self.consumers.pop(name, None)
                return 0
            pending = {
                entry.seq: Pending(entry.delivered_at_ms, entry.deliver_count, entry.redeliver_at_ms)
                for entry in sorted(snapshot.pending, key=lambda entry: entry.seq)
            }
            totals = Counters(
                snapshot.delivered,
                snapshot.acked,
                snapshot.redelivered,
                snapshot.dead_lettered,
                snapshot.dropped,
                snapshot.termed,
            )
            cursor = ConsumerCursor(
                item.spec,
                snapshot.last_delivered,
                pending,
                totals,
                last_per_subject_until=snapshot.last_per_subject_until,
            )
            cursor.earliest_redeliver_ms = min(
                (entry.redeliver_at_ms for entry in pending.values()), default=consumers.NEVER
            )
            cursor.touched = set(pending)
            cursor.commit_counts()
            self.consumers[name] = cursor
            context.touched_cursors[name] = cursor
            return 0
        raise AssertionError(f"unknown replica edit {item.kind}")

    def _not_leading(self) -> NotLeaderError:
        return NotLeaderError(
            f"stream {self.stream.name!r} partition {self.index}: this node stopped leading it (leader epoch "
            f"{self.leader_epoch}) before the request was applied; refresh routes and retry",
            stream=self.stream.name,
            partition=self.index,
            leader_epoch=self.leader_epoch,
        )

    def _not_pending(self, cursor: ConsumerCursor, seq: int) -> NotPendingError:
        return NotPendingError(
            consumers.not_pending_reason(cursor, seq),
            stream=self.stream.name,
            partition=self.index,
            consumer=cursor.spec.name,
            seq=seq,
        )

    def _fetch(self, cursor: ConsumerCursor, op: _ConsumerOp, context: _CommitContext) -> list[Delivery]:
        batch_size, max_bytes, ack_wait_ms = op.batch_size, op.max_bytes, op.ack_wait_ms
        now_ms = context.now_ms
        spec = cursor.spec
        deliveries: list[Delivery] = []
        # Redeliveries are already counted in the pending set: max_ack_pending bounds new ones only
        # (as in JetStream), so a consumer at the bound still gets its overdue messages back.
        due = consumers.scan_due(cursor, now_ms, batch_size)
        for seq in due.exhausted:
            self._dead_letter(cursor, seq, context)
        used_bytes = 0
        for seq in due.redeliver:
            record = self.log.get(seq)
            if record is None:  # retention removed it meanwhile: nothing left to redeliver
                consumers.forget(cursor, seq)
                continue
            if deliveries and used_bytes + len(record) > max_bytes:
                cursor.earliest_redeliver_ms = now_ms  # the rest is still due: next fetch
                break
            used_bytes += len(record)
            deliveries.append(Delivery(seq, record, consumers.redeliver(cursor, seq, now_ms, ack_wait_ms), self.index))
        if due.exhausted or due.redeliver:
            context.touched_cursors[spec.name] = cursor
        want = min(batch_size - len(deliveries), spec.max_ack_pending - len(cursor.pending))
        if want > 0 and used_bytes < max_bytes:
            self._deliver_new(
                cursor, context, deliveries, want=want, max_bytes=max_bytes - used_bytes, ack_wait_ms=ack_wait_ms
            )
        return deliveries

    def _deliver_new(
        self,
        cursor: ConsumerCursor,
        context: _CommitContext,
        deliveries: list[Delivery],
        *,
        want: int,
        max_bytes: int,
        ack_wait_ms: int,
    ) -> None:
        """First deliveries of up to `want` messages after the cursor, within `max_bytes`, appended
        to `deliveries`: what a ReadMessages from there with the consumer's filter and
        last-per-subject horizon returns (reads.read_range: it stops at the high watermark when the
        stream asks, looks at a bounded number of rows, and says where it stopped)."""
        read = reads.read_range(
            self,
            cursor.last_delivered + 1,
            want,
            max_bytes,
            accepts=cursor.spec.accepts,
            last_per_subject_until=cursor.last_per_subject_until,
        )
        for seq, record in read.records:
            consumers.deliver_new(cursor, seq, context.now_ms, ack_wait_ms)
            deliveries.append(Delivery(seq, record, 1, self.index))
        if read.next_seq - 1 > cursor.last_delivered:  # delivered, or passed over (filter, superseded)
            cursor.last_delivered = read.next_seq - 1
            cursor.commit_counts()
            context.touched_cursors[cursor.spec.name] = cursor

    def _seek(self, cursor: ConsumerCursor, seq: int, context: _CommitContext) -> tuple[int, int]:
        """SeekConsumer's decision: `seq` 0 = the end (after every message decided so far), else a
        seq in 1..last_seq + 1, raised to the first stored seq. Returns (next_seq, dropped_pending)."""
        end = context.seq + 1
        if seq > end:
            raise PositionOutOfRangeError(
                f"seq {seq} is beyond partition {self.index} of {self.stream.name!r}: its next seq is {end}",
                stream=self.stream.name,
                partition=self.index,
            )
        next_seq = end if seq == 0 else max(seq, self.first_seq)
        dropped = consumers.seek(cursor, next_seq)
        context.touched_cursors[cursor.spec.name] = cursor
        return next_seq, dropped

    def _dead_letter(
        self, cursor: ConsumerCursor, seq: int, context: _CommitContext, reason: str = "max_deliver"
    ) -> None:
        """`seq` reached max_deliver (or its consumer said so: Term with dead_letter): append it under
        the dead letter subject, or drop it."""
        pending = consumers.forget(cursor, seq)
        spec = cursor.spec
        counts = cursor.commit_counts()
        record = self.log.get(seq)
        if not spec.dead_letter_subject or record is None:
            counts.dropped += 1
            cursor.totals.dropped += 1
            return
        original = types_pb2.Message.FromString(record)
        message = consumers.dead_letter_message(
            original,
            stream=self.stream.name,
            consumer=spec.name,
            subject=spec.dead_letter_subject,
            deliver_count=pending.deliver_count,
            reason=reason,
        )
        context.append(spec.dead_letter_subject, context.now_ms, message)
        counts.dead_lettered += 1
        cursor.totals.dead_lettered += 1
        if self.stream.retention == types_pb2.RETENTION_POLICY_WORK_QUEUE:
            context.dead_lettered.append(seq)  # moved, not copied

    def _plan_retention(self, context: _CommitContext) -> RetentionPlan:
        if not self.leading or context.replica_truncate_before or context.replica_removals:
            # A secondary never decides retention itself: it mirrors the primary's removals.
            return plan_replica_edits(
                first_seq=self.first_seq,
                truncate_before=context.replica_truncate_before,
                removals=context.replica_removals,
                oldest=self.log.oldest,
                rows=self.log.rows,
            )
        bounds = self.stream.bounds
        records = context.records
        removals: dict[str, list[RowInfo]] = {}
        if context.work_queue_acked:
            removals["work_queue_ack"] = self.log.rows(context.work_queue_acked)
        if context.dead_lettered:
            removals["dead_letter"] = self.log.rows(context.dead_lettered)
        if context.scheduled_delivered:
            removals["scheduled"] = self.log.rows(context.scheduled_delivered)
        if context.scheduled_discarded:
            removals["discarded"] = self.log.rows(context.scheduled_discarded)
        if context.rollups:
            removals["rollup"] = self._rolled_up(context)
        if context.deleted_seqs:
            removals["deleted"] = self.log.rows(sorted(set(context.deleted_seqs)))
        if self.expiry_due(context.now_ms):
            removals["ttl"] = self.log.rows(self.log.expired_seqs(context.now_ms, _EXPIRE_ROWS))
        keep_from = 0
        if self.stream.retention == types_pb2.RETENTION_POLICY_INTEREST:
            keep_from = consumers.interest_keep_from(self.consumers.values(), context.seq)
            # Consumers never see schedule records, so their acks say nothing of them: keep them.
            oldest_scheduled = self._schedule.oldest_seq() if self._schedule is not None else None
            if oldest_scheduled is not None:
                keep_from = min(keep_from, oldest_scheduled)
        needed = bounds.any_prefix_bound or (bounds.max_msgs_per_subject and records) or removals
        if not needed and keep_from <= self.first_seq and context.purge_before_seq <= self.first_seq:
            return RetentionPlan()
        new_rows = [NewRow(r[0], r[3], r[1], r[2]) for r in records]
        return plan_retention(
            bounds=bounds,
            now_ms=context.now_ms,
            stored_count=self.msg_count,
            stored_bytes=self.bytes,
            first_seq=self.first_seq,
            new_rows=new_rows,
            oldest=self.log.oldest,
            subject_excess=self.log.subject_excess,
            keep_from_seq=keep_from,
            removals=removals,
            purge_before_seq=context.purge_before_seq,
        )

    def _rolled_up(self, context: _CommitContext) -> list[RowInfo]:
        """The messages this commit's rollups remove: every stored one at a rolled-up subject, and
        the ones appended earlier in this commit at it (bounded by the stream's max_msgs_per_subject)."""
        rows: list[RowInfo] = []
        for subject in context.rollups:
            rows.extend(self.log.subject_excess(subject, 0))
        for seq, ts_ms, subject, size, _, _ in context.records:
            rollup_seq = context.rollups.get(subject)
            if rollup_seq is not None and seq < rollup_seq:
                rows.append(RowInfo(seq, size, ts_ms))
        return rows

    def _store_cursor(
        self, cursor: ConsumerCursor, batch: CommitBatch
    ) -> tuple[types_pb2.Change, consumers.CommitCounts]:
        """Put a changed cursor into `batch`; returns its ConsumerStateChange and this commit's counts."""
        spec = cursor.spec
        name = spec.name
        batch.consumer_states.append(
            (
                name,
                spec.incarnation,
                cursor.ack_floor,
                cursor.last_delivered,
                *cursor.totals.as_tuple(),
                cursor.last_per_subject_until,
            )
        )
        pending = cursor.pending
        for seq in cursor.touched:
            entry = pending.get(seq)
            if entry is None:
                batch.pending_deletes.append((name, seq))
            else:
                batch.pending_upserts.append(
                    (name, seq, entry.delivered_at_ms, entry.deliver_count, entry.redeliver_at_ms)
                )
        counts = cursor.counts or consumers.CommitCounts()
        change = self._change(
            consumer_state=types_pb2.ConsumerStateChange(
                consumer=name,
                ack_floor=cursor.ack_floor,
                last_delivered=cursor.last_delivered,
                pending_count=len(pending),
                delivered=counts.delivered,
                redelivered=counts.redelivered,
                acked=counts.acked,
                naked=counts.naked,
                termed=counts.termed,
                in_progress=counts.in_progress,
                dead_lettered=counts.dead_lettered,
                dropped=counts.dropped,
            )
        )
        return change, counts

    def _consumer_metrics(self, cursor: ConsumerCursor, counts: consumers.CommitCounts) -> None:
        children = self._consumer_children.get(cursor.spec.name)
        if children is None:
            labels = (self.stream.name, cursor.spec.name)
            partition_labels = (*labels, str(self.index))
            children = self._consumer_children[cursor.spec.name] = (
                metrics.CONSUMER_DELIVERED.labels(*labels),
                metrics.CONSUMER_REDELIVERED.labels(*labels),
                metrics.CONSUMER_ACKED.labels(*labels),
                metrics.CONSUMER_DEAD_LETTERED.labels(*labels),
                metrics.CONSUMER_DROPPED.labels(*labels),
                metrics.CONSUMER_ACK_PENDING.labels(*partition_labels),
                metrics.CONSUMER_ACK_FLOOR.labels(*partition_labels),
            )
        delivered, redelivered, acked, dead_lettered, dropped, pending, floor = children
        for counter, value in (
            (delivered, counts.delivered),
            (redelivered, counts.redelivered),
            (acked, counts.acked),
            (dead_lettered, counts.dead_lettered),
            (dropped, counts.dropped),
        ):
            if value:
                counter.inc(value)
        pending.set(len(cursor.pending))
        floor.set(cursor.ack_floor)

    def _forget_consumer_metrics(self, name: str) -> None:
        if self._consumer_children.pop(name, None) is None:
            return
        for gauge in (metrics.CONSUMER_ACK_PENDING, metrics.CONSUMER_ACK_FLOOR):
            with contextlib.suppress(KeyError):
                gauge.remove(self.stream.name, name, str(self.index))

    def _change(self, **kind: Any) -> types_pb2.Change:
        role = types_pb2.PARTITION_ROLE_PRIMARY if self.leading else types_pb2.PARTITION_ROLE_SECONDARY
        return types_pb2.Change(stream=self.stream.name, partition=self.index, role=role, **kind)

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
        for name in list(self._consumer_children):
            self._forget_consumer_metrics(name)


async def _wait_on(waiters: set[asyncio.Future[None]], timeout_s: float) -> None:
    """Join `waiters` until `_wake` resolves them or `timeout_s` passes."""
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiters.add(waiter)
    try:
        await asyncio.wait_for(waiter, timeout_s)
    except TimeoutError:
        pass
    finally:
        waiters.discard(waiter)


def _ack_results(
    seqs: list[int], stale: dict[int, str], results: list[int | None], cursor: ConsumerCursor
) -> list[tuple[int, str, str]]:
    """AckBatch's answer, one (seq, result code, message) per requested seq in order: `results` are
    consumers.ack's for the seqs not in `stale`, in their order (a seq named twice is "ok" once)."""
    answered = iter(results)
    out: list[tuple[int, str, str]] = []
    for seq in seqs:
        reason = stale.get(seq)
        if reason is None and next(answered) is not None:
            out.append((seq, "ok", ""))
        else:
            out.append((seq, "not_pending", reason or consumers.not_pending_reason(cursor, seq)))
    return out


def _wake(waiters: set[asyncio.Future[None]]) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)
    waiters.clear()
