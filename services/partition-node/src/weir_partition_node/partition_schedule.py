"""A partition's delayed delivery (the rules and the index are scheduled.py's): the primary's
index of the schedule records its log holds, the timer that queues a `DeliverItem` when the
earliest is due, and the decisions of the commit loop that store, deliver, release or discard
schedule records (partition.py).

Everything runs in the event loop. The index changes only after a commit is durable
(`index_committed`), or when the partition's role changes (`load`); a secondary keeps none.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from weir.errors import AlreadyResolvedError, NoSuchMessageError, NotLeaderError, SchedulingDisabledError, WeirError
from weir.subjects import RESERVED_SUBJECT_PREFIX
from weir.v1 import types_pb2

from weir_partition_node import scheduled
from weir_partition_node.clock import Clock
from weir_partition_node.commit_items import CommitContext, CommitItem, DeliverItem, PreparedEntry, ReleaseItem
from weir_partition_node.scheduled import ScheduleIndex
from weir_partition_node.storage.base import HeldResolution, Record
from weir_partition_node.storage.held_resolutions import UNRESOLVED

if TYPE_CHECKING:
    from weir_partition_node.partition import Partition

logger = logging.getLogger(__name__)


class DelayedDelivery:
    """One partition's schedule: `put` queues an item on its commit loop, `accepting` says whether
    the loop still takes work (not closing, storage not failed), `not_leading` builds the error a
    secondary answers with."""

    def __init__(
        self,
        partition: Partition,
        *,
        clock: Clock,
        put: Callable[[CommitItem], Awaitable[None]],
        accepting: Callable[[], bool],
        not_leading: Callable[[], NotLeaderError],
    ) -> None:
        self._partition = partition
        self._clock = clock
        self._put = put
        self._accepting = accepting
        self._not_leading = not_leading
        # The primary's index of schedule records not delivered yet (None on a secondary, or when
        # the stream does not allow them), and the timer that queues a delivery when one is due.
        self._index: ScheduleIndex | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._due_ms: int | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def count(self) -> int:
        """Schedule records this primary still has to deliver (0 on a secondary)."""
        return len(self._index) if self._index is not None else 0

    def oldest_seq(self) -> int | None:
        """The seq of the oldest schedule record still to deliver; None when there is none."""
        return self._index.oldest_seq() if self._index is not None else None

    def load(self) -> None:
        """A primary of a stream with scheduled messages indexes the schedule records its log holds
        (from the subject index only: no record is read); a secondary drops its index. Records a
        commit in flight stores join the index when it completes (`index_committed`)."""
        partition = self._partition
        self._index = None
        if partition.leading and partition.stream.allow_scheduled_messages:
            index = ScheduleIndex()
            for prefix in (scheduled.SCHEDULED_SUBJECT_PREFIX, scheduled.HELD_SUBJECT_PREFIX):
                index.load(partition.log.subjects_with_prefix(prefix, scheduled.MAX_SCHEDULED_PER_PARTITION + 1))
            self._index = index
        self.clock_moved()

    def clock_moved(self) -> None:
        """(Re)arm the delivery timer for the earliest schedule record: after a commit changed the
        index, a role change, a move of the node's clock (tests' manual clock), or closing (which
        only cancels it)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        index = self._index
        active = index is not None and self._partition.leading and self._accepting()
        due_ms = index.next_due_ms() if active and index is not None else None
        self._due_ms = due_ms
        if due_ms is None or self._task is not None:
            return  # nothing to deliver, or a delivery is queued (it re-arms when done)
        # Wake at the end of the due record's delivery tick: records due within one tick go out in
        # one commit (a commit per record would cost a thread hop each at thousands due a second).
        tick_ms = scheduled.DELIVERY_TICK_MS
        delay_s = max(0, -(-due_ms // tick_ms) * tick_ms - self._clock.now_ms()) / 1000
        self._timer = asyncio.get_running_loop().call_later(delay_s, self._queue_delivery)

    def _queue_delivery(self) -> None:
        self._timer = None
        if self._task is None and self._accepting():
            partition = self._partition
            self._task = asyncio.get_running_loop().create_task(
                self._deliver_due(), name=f"deliver-scheduled:{partition.stream.name}/{partition.index}"
            )

    async def _deliver_due(self) -> None:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        try:
            await self._put(DeliverItem(future))
            await future
        except WeirError as error:  # not leading any more, closing, or a failed commit: nothing lost
            partition = self._partition
            logger.debug(
                "delivering scheduled messages of %s/%s stopped: %s", partition.stream.name, partition.index, error
            )
        finally:
            self._task = None
            self.clock_moved()

    def index_committed(self, records: list[Record], removed: Iterable[int], first_seq: int) -> None:
        """After a commit: index the schedule records it stored and forget the ones it removed."""
        index = self._index
        if index is None:
            return
        prefix = RESERVED_SUBJECT_PREFIX  # schedule and held records
        index.add_subjects((record[0], record[2]) for record in records if record[2].startswith(prefix))
        index.discard(removed)
        index.discard_below(first_seq)
        if index.next_due_ms() != self._due_ms:
            self.clock_moved()

    # -- decisions (the commit loop, event loop) ------------------------------------------------

    def append_record(self, entry: PreparedEntry, context: CommitContext) -> int:
        """Store `entry` as a schedule record due at its deliver_at_ms, or a held record (deliver_at_ms
        HELD) (scheduled.py); returns its seq."""
        held = entry.deliver_at_ms >= scheduled.HELD
        seq = context.seq + 1
        subject = scheduled.held_subject(seq) if held else scheduled.scheduled_subject(entry.deliver_at_ms, seq)
        message = types_pb2.Message(
            subject=subject,
            headers=entry.headers,
            payload=entry.payload,
            partition=self._partition.index,
            msg_id=entry.msg_id,
            deliver_at_ms=0 if held else entry.deliver_at_ms,
            scheduled_subject=entry.subject,
        )
        if entry.key is not None:
            message.key = entry.key
        appended = context.append(subject, entry.ts_ms or context.now_ms, message)
        if held:  # its row, unresolved: every copy stores one (storage/held_resolutions.py)
            context.held_resolutions[appended] = (UNRESOLVED, context.now_ms)
        return appended

    def decide_deliver(self, context: CommitContext) -> int:
        """Append the message of every schedule record due now (at most FIRE_BATCH_MESSAGES) on its
        own subject; the commit's retention plan removes the records in the same commit. A record
        retention took meanwhile delivers nothing. Returns how many were delivered."""
        partition = self._partition
        if not partition.leading or self._index is None:
            return 0
        due = self._index.take_due(context.now_ms, scheduled.FIRE_BATCH_MESSAGES)
        for seq in due:
            record = partition.log.get(seq)
            if record is None:
                continue
            message = scheduled.delivered_message(record, seq, partition.index)
            context.append(message.subject, context.now_ms, message)
            context.scheduled_delivered.append(seq)
        return len(context.scheduled_delivered)  # more still due: `_deliver_due` re-arms at once

    def decide_release(self, item: ReleaseItem, context: CommitContext) -> int:
        """ReleaseScheduled's decision: deliver (or discard) the record at `item.seq`; returns the
        delivered message's seq (0 when discarded). A held record's resolution is noted in
        `context` (stored with it); a release of a held record resolved already answers as the
        first one did, or raises AlreadyResolvedError when it contradicts it. Errors:
        SchedulingDisabledError, NoSuchMessageError, AlreadyResolvedError, NotLeaderError."""
        partition = self._partition
        index = self.require()
        record = partition.log.get(item.seq) if item.seq in index else None
        if record is None:
            return self._resolved_already(item, context)
        index.discard([item.seq])
        held = scheduled.is_held(record)
        if item.discard:
            context.scheduled_discarded.append(item.seq)
            if held:
                context.held_resolutions[item.seq] = (0, context.now_ms)
            return 0
        message = scheduled.delivered_message(record, item.seq, partition.index)
        context.scheduled_delivered.append(item.seq)
        delivered_seq = context.append(message.subject, context.now_ms, message)
        if held:
            context.held_resolutions[item.seq] = (delivered_seq, context.now_ms)
        return delivered_seq

    def _resolved_already(self, item: ReleaseItem, context: CommitContext) -> int:
        """The answer to a release of a seq this partition holds no schedule record at: the first
        answer when it repeats a held record's resolution (delivered seq, or 0 for a discard).
        Errors: AlreadyResolvedError (it contradicts that resolution), NoSuchMessageError (no
        resolution of it is known: delivered on time, never one, or forgotten)."""
        partition = self._partition
        name = partition.stream.name
        noted = context.held_resolutions.get(item.seq)  # resolved earlier in this very commit
        resolution = HeldResolution(*noted) if noted is not None else partition.log.held_resolution(item.seq)
        if resolution is None or resolution.delivered_seq == UNRESOLVED:
            raise NoSuchMessageError(
                f"stream {name!r} partition {partition.index}: seq {item.seq} holds no scheduled "
                "or held message (delivered, discarded, or never one)",
                stream=name,
                partition=partition.index,
                seq=item.seq,
            )
        if resolution.committed == item.discard:
            first, asked = ("commit", "rollback") if resolution.committed else ("rollback", "commit")
            delivered = f" (delivered at seq {resolution.delivered_seq})" if resolution.committed else ""
            raise AlreadyResolvedError(
                f"stream {name!r} partition {partition.index}: the held message at seq {item.seq} was resolved "
                f"already by a {first}{delivered} at {resolution.resolved_at_ms} ms; a {asked} cannot undo it",
                stream=name,
                partition=partition.index,
                seq=item.seq,
                resolution=first,
                delivered_seq=resolution.delivered_seq,
                resolved_at_ms=resolution.resolved_at_ms,
            )
        return resolution.delivered_seq

    def pending(self, from_seq: int, limit: int, *, held_only: bool) -> tuple[list[bytes], int]:
        """The scheduled (or only held) records still to deliver, from `from_seq` in seq order, at
        most `limit`: (records, next_seq; 0 when none follow). Errors: SchedulingDisabledError,
        NotLeaderError."""
        seqs = self.require().pending_seqs(from_seq, limit + 1, held_only=held_only)
        records = [record for record in map(self._partition.log.get, seqs[:limit]) if record is not None]
        return records, seqs[limit] if len(seqs) > limit else 0

    def require(self) -> ScheduleIndex:
        """The index, on a primary of a stream that allows scheduled messages. Errors:
        NotLeaderError, SchedulingDisabledError."""
        if not self._partition.leading:
            raise self._not_leading()
        if self._index is None:
            name = self._partition.stream.name
            raise SchedulingDisabledError(
                f"stream {name!r} does not accept scheduled messages: create it with allow_scheduled_messages",
                stream=name,
            )
        return self._index
