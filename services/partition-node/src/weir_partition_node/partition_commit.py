"""`CommitLoop`: one partition's group-commit loop (partition.py), decide -> plan -> write -> apply.

Every mutation of a partition is an item on one bounded queue (`put`), consumed by one task. The
task takes everything queued (up to `max_batch_messages` / `max_batch_bytes`) and commits it in
four steps:

1. **decide**, in the event loop, each item in queue order (`CommitEffects.decide`): the caller's
   result, and what the commit must store, noted in a `CommitContext`;
2. **plan** the transaction the decisions call for (`CommitPlan`): the rows, the retention they
   trigger, one change-feed entry per effect with its change seq;
3. **write** it in one transaction on a worker thread (one thread hop per group commit);
4. **apply** it to the partition's cached state (`CommitEffects.apply`), and only then answer
   the callers: an acknowledged write is on disk (then `CommitEffects.after`).

A failed write stores nothing, fails every caller in the batch, and makes the loop refuse further
items (`StorageFailedError`, sticky until restart), since the disk's state is then unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TYPE_CHECKING

from weir.errors import ShuttingDownError, StorageFailedError, WeirError
from weir.v1 import types_pb2

from weir_partition_node import consumers, metrics
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.clock import Clock
from weir_partition_node.commit_items import (
    AppendItem,
    CommitContext,
    CommitItem,
    CommitLimits,
    DropChangesItem,
    ReplaceConsumerState,
    ReplicaEditItem,
    SweepItem,
)
from weir_partition_node.commit_plan import CommitPlan, data_changes, source_position_rows
from weir_partition_node.commit_retention import plan_commit_retention
from weir_partition_node.consumers import ConsumerCursor
from weir_partition_node.storage.base import CommitBatch

if TYPE_CHECKING:
    from weir_partition_node.partition import Partition
    from weir_partition_node.partition_effects import CommitEffects

logger = logging.getLogger(__name__)

MSG_ID_PRUNE_INTERVAL_MS = 1000  # stored duplicate-window rows are pruned at most this often


class CommitLoop:
    """See the module docstring. `effects` decides, applies and follows up each commit
    (partition_effects.py); `store_cursor` adds a touched consumer cursor's rows to a batch and
    returns its change and counts (ConsumerDecisions.store_cursor); `oldest_scheduled_seq` is the
    oldest schedule record still to deliver, which retention keeps (None: none)."""

    def __init__(
        self,
        partition: Partition,
        *,
        feed: ChangeFeedClock,
        clock: Clock,
        executor: Executor | None,
        limits: CommitLimits,
        effects: CommitEffects,
        store_cursor: Callable[[ConsumerCursor, CommitBatch], tuple[types_pb2.Change, consumers.CommitCounts]],
        oldest_scheduled_seq: Callable[[], int | None],
    ) -> None:
        self._partition = partition
        self._feed = feed
        self._clock = clock
        self._executor = executor
        self._limits = limits
        self._effects = effects
        self._store_cursor = store_cursor
        self._oldest_scheduled_seq = oldest_scheduled_seq
        self._queue: asyncio.Queue[CommitItem] = asyncio.Queue(maxsize=limits.queue_depth)
        self._appends_in_flight = 0  # AppendItems queued or in the commit being written
        self._failure: WeirError | None = None  # set once a write failed: every later item gets it
        self._closing = False
        self._msg_ids_pruned_ms = 0  # when the stored duplicate window was last pruned
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        name = f"commit:{self._partition.stream.name}/{self._partition.index}"
        self._task = asyncio.get_running_loop().create_task(self._run(), name=name)

    @property
    def accepting(self) -> bool:
        """Whether `put` takes items: not closing, no failed write."""
        return not self._closing and self._failure is None

    @property
    def appends_pending(self) -> bool:
        """Whether a publish is queued or in the commit being written."""
        return self._appends_in_flight > 0

    async def put(self, item: CommitItem) -> None:
        """Queue `item` for the next group commit; waits while the queue is full (backpressure).
        Errors: ShuttingDownError (closing), the StorageFailedError of an earlier failed write."""
        partition = self._partition
        if self._closing:
            raise ShuttingDownError(f"stream {partition.stream.name!r} partition {partition.index} is closing")
        if self._failure is not None:
            raise self._failure
        await self._queue.put(item)
        if isinstance(item, AppendItem):
            self._appends_in_flight += 1

    async def drain(self) -> None:
        """Wait until everything queued so far (and whatever joins it meanwhile) is committed."""
        await self._queue.join()

    def refuse_items(self) -> None:
        """From now on `put` raises ShuttingDownError; what is queued is still committed."""
        self._closing = True

    async def stop(self) -> None:
        """Refuse new items, commit what is queued, end the task."""
        self.refuse_items()
        await self._queue.join()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            items = await self._take_batch()
            try:
                await self._commit(items)
            except Exception as error:  # the loop must survive anything to fail callers cleanly
                logger.exception("commit loop of %s/%s failed", self._partition.stream.name, self._partition.index)
                fail_items(items, StorageFailedError(f"internal error in commit: {error}"))
            finally:
                for item in items:
                    if isinstance(item, AppendItem):
                        self._appends_in_flight -= 1
                    self._queue.task_done()

    async def _take_batch(self) -> list[CommitItem]:
        """The next item and whatever is queued behind it, within the batch limits."""
        first = await self._queue.get()
        items: list[CommitItem] = [first]
        messages = len(first.entries) if isinstance(first, AppendItem) else 0
        total_bytes = first.size
        while not self._queue.empty() and messages < self._limits.max_batch_messages:
            if total_bytes >= self._limits.max_batch_bytes:
                break
            item = self._queue.get_nowait()
            items.append(item)
            if isinstance(item, AppendItem):
                messages += len(item.entries)
            total_bytes += item.size
        return items

    async def _commit(self, items: list[CommitItem]) -> None:
        if self._failure is not None:
            fail_items(items, self._failure)
            return
        now_ms = self._clock.now_ms()
        # The change feed's watermark waits for this commit: its changes carry now_ms and get their
        # change seqs below; the token closes once they are settled.
        token = self._feed.open_commit(now_ms)
        try:
            await self._commit_at(items, now_ms)
        finally:
            self._feed.close_commit(token)

    async def _commit_at(self, items: list[CommitItem], now_ms: int) -> None:
        """One group commit: decide every item in order, plan the transaction, write it, and only
        then apply it to the cached state and answer the callers."""
        started = time.perf_counter()
        partition = self._partition
        context = CommitContext(now_ms, partition.last_seq, note_extras=partition.caches_batches)
        results = [self._effects.decide(item, context) for item in items]
        plan = await self._plan(items, context)
        if not await self._write(plan, items, context):
            return
        self._effects.apply(plan, context)
        if plan.prune_msg_ids:
            self._msg_ids_pruned_ms = now_ms
        for item, result in zip(items, results, strict=True):
            if item.future.done():  # the caller went away (cancelled); the data is committed anyway
                continue
            if isinstance(result, WeirError):
                item.future.set_exception(result)
            elif isinstance(item, SweepItem):
                item.future.set_result(plan.retention.removed_count)
            else:
                item.future.set_result(result)
        self._effects.after(plan, context)
        metrics.GROUP_COMMIT_SECONDS.observe(time.perf_counter() - started)

    async def _plan(self, items: list[CommitItem], context: CommitContext) -> CommitPlan:
        """The transaction the decisions call for: the rows, the retention they trigger, and one
        change-feed entry per effect (with its change seq: settle them whatever happens next)."""
        partition = self._partition
        now_ms = context.now_ms
        retention = plan_commit_retention(partition, context, self._oldest_scheduled_seq)
        drop_changes_before = max(
            (item.before_change_seq for item in items if isinstance(item, DropChangesItem)), default=0
        )
        batch = CommitBatch(
            records=context.records,
            remove_seqs=retention.all_remove_seqs(),
            truncate_before=retention.truncate_before,
            last_seq=context.seq,
            drop_changes_before=drop_changes_before,
            consumer_deletes=context.consumer_deletes,
            msg_ids=context.msg_ids,
            msg_ids_after=context.msg_ids_after,
            repairs=context.repairs,
            reseal_batches=context.reseal_batches,
            expiries=context.expiries,
            source_positions=source_position_rows(context.msg_ids, context.source_positions, context.seq),
            held_resolutions=[(held, *resolution) for held, resolution in context.held_resolutions.items()],
            sync=not all(defers_sync(item) for item in items),
        )
        prune_msg_ids = bool(context.msg_ids) and now_ms - self._msg_ids_pruned_ms >= MSG_ID_PRUNE_INTERVAL_MS
        if prune_msg_ids:
            view = partition.stream
            batch.msg_id_retention = (now_ms - view.duplicate_window_ms + 1, view.duplicate_window_max_msgs)
        appended_bytes = sum(record[3] for record in context.records)
        changes = data_changes(
            partition.stream.name,
            partition.index,
            partition.role,
            records=context.records,
            appended_bytes=appended_bytes,
            last_seq=context.seq,
            retention=retention,
        )
        touched_counts: list[tuple[ConsumerCursor, consumers.CommitCounts]] = []
        for cursor in context.touched_cursors.values():
            change, counts = self._store_cursor(cursor, batch)
            changes.append(change)
            touched_counts.append((cursor, counts))
        change_seqs = await self._feed.allocate(len(changes)) if changes else []
        for change_seq, change in zip(change_seqs, changes, strict=True):
            change.change_seq = change_seq
            change.ts_ms = now_ms
            batch.changes.append((change_seq, now_ms, change.SerializeToString()))
        return CommitPlan(batch, retention, changes, change_seqs, touched_counts, prune_msg_ids, appended_bytes)

    async def _write(self, plan: CommitPlan, items: list[CommitItem], context: CommitContext) -> bool:
        """Store the planned transaction; False when it failed (every item failed, the loop
        refuses items from now on: the disk's state is unknown)."""
        partition = self._partition
        try:
            if plan.empty:
                pass  # nothing to store (say, fetches that found nothing): no thread hop
            elif self._executor is None:
                partition.log.commit(plan.batch)
            else:
                await asyncio.get_running_loop().run_in_executor(self._executor, partition.log.commit, plan.batch)
        except BaseException as error:
            self._feed.settle(plan.change_seqs)
            self._failure = StorageFailedError(
                f"stream {partition.stream.name!r} partition {partition.index}: commit failed ({error}); "
                "the partition refuses writes until the node restarts",
                stream=partition.stream.name,
                partition=partition.index,
            )
            logger.error("%s", self._failure)
            fail_items(items, self._failure)
            if not isinstance(error, Exception):
                raise
            return False
        finally:
            for cursor in context.touched_cursors.values():
                cursor.reset_commit()
        return True


def fail_items(items: list[CommitItem], error: WeirError) -> None:
    """Fail every item whose caller still waits with `error`."""
    for item in items:
        if not item.future.done():
            item.future.set_exception(error)


def defers_sync(item: CommitItem) -> bool:
    """A secondary's copy of consumer state that the replicator marked as needing no fsync
    (ReplicateConsumerStateRequest.defer_sync); a commit of nothing else skips its fsync."""
    return isinstance(item, ReplicaEditItem) and isinstance(item.edit, ReplaceConsumerState) and item.edit.defer_sync
