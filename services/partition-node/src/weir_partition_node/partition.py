"""One partition of a stream: its log, its cached totals and its group-commit loop.

Writes: every mutation of the partition (publish, retention sweep, change-feed trimming) is an item
on one bounded queue, consumed by one commit loop. The loop takes everything queued (up to
`max_batch_messages` / `max_batch_bytes`), decides seqs and retention in the event loop, then applies
the whole batch in one transaction on a worker thread (one thread hop per group commit, never per
message) and only then resolves the callers' futures: an acknowledged publish is on disk.

A failed commit stores nothing, fails every caller in the batch, and makes the partition refuse
further writes (`StorageFailedError`, sticky until restart), since the disk's state is then unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

from weir.errors import ShuttingDownError, StorageFailedError, WeirError
from weir.v1 import types_pb2

from weir_partition_node import metrics
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.clock import Clock
from weir_partition_node.retention import LimitsBounds, NewRow, RetentionPlan, plan_retention
from weir_partition_node.storage.base import CommitBatch, PartitionLog, Record, make_record

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class PreparedEntry:
    """A validated message about to be appended."""

    subject: str
    payload: bytes
    headers: Iterable[types_pb2.Header]
    ts_ms: int  # 0 = the node's clock
    expected_last_seq: int | None


@dataclass(slots=True)
class AppendOutcome:
    seq: int
    result_code: str = "ok"
    message: str = ""


@dataclass(slots=True)
class _Append:
    entries: list[PreparedEntry]
    future: asyncio.Future[list[AppendOutcome]]
    size: int


@dataclass(slots=True)
class _Sweep:
    future: asyncio.Future[int]
    size: int = 0


@dataclass(slots=True)
class _DropChanges:
    before_change_seq: int
    future: asyncio.Future[None]
    size: int = 0


_Item = _Append | _Sweep | _DropChanges


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
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"commit:{stream.name}/{index}")
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

    async def drop_changes_before(self, change_seq: int) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        await self._put(_DropChanges(change_seq, future))
        await future

    async def close(self) -> None:
        """Stop accepting writes, commit what is queued, stop the loop (does not close the log)."""
        self._closing = True
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
        started = time.perf_counter()
        now_ms = self._clock.now_ms()
        seq = self.last_seq
        records: list[Record] = []
        outcomes: list[list[AppendOutcome]] = []
        subject_last: dict[str, int] = {}
        partition = self.index
        for item in items:
            if not isinstance(item, _Append):
                continue
            item_outcomes: list[AppendOutcome] = []
            for entry in item.entries:
                if entry.expected_last_seq is not None:
                    actual = subject_last.get(entry.subject)
                    if actual is None:
                        actual = self.log.subject_last_seq(entry.subject)
                    if actual != entry.expected_last_seq:
                        item_outcomes.append(
                            AppendOutcome(
                                actual,
                                "wrong_revision",
                                f"subject {entry.subject!r} is at seq {actual}, expected {entry.expected_last_seq}",
                            )
                        )
                        continue
                seq += 1
                ts_ms = entry.ts_ms or now_ms
                encoded = types_pb2.Message(
                    seq=seq,
                    subject=entry.subject,
                    ts_ms=ts_ms,
                    headers=entry.headers,
                    payload=entry.payload,
                    partition=partition,
                ).SerializeToString()
                records.append(make_record(seq, ts_ms, entry.subject, encoded))
                subject_last[entry.subject] = seq
                item_outcomes.append(AppendOutcome(seq))
            outcomes.append(item_outcomes)

        bounds = self.stream.bounds
        plan = RetentionPlan()
        appended_bytes = sum(record[3] for record in records)
        if bounds.any_prefix_bound or (bounds.max_msgs_per_subject and records):
            new_rows = [NewRow(r[0], r[3], r[1], r[2]) for r in records]
            plan = plan_retention(
                bounds=bounds,
                now_ms=now_ms,
                stored_count=self.msg_count,
                stored_bytes=self.bytes,
                first_seq=self.first_seq,
                new_rows=new_rows,
                oldest=self.log.oldest,
                subject_excess=self.log.subject_excess,
            )
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
        change_seqs = await self._feed.allocate(len(change_kinds)) if change_kinds else []
        stored_changes: list[tuple[int, int, bytes]] = []
        for change_seq, change in zip(change_seqs, change_kinds, strict=True):
            change.change_seq = change_seq
            change.ts_ms = now_ms
            stored_changes.append((change_seq, now_ms, change.SerializeToString()))

        batch = CommitBatch(
            records=records,
            remove_seqs=plan.remove_seqs,
            truncate_before=plan.truncate_before,
            changes=stored_changes,
            last_seq=seq,
            drop_changes_before=drop_changes_before,
        )
        try:
            if self._executor is None:
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

        # Committed: update the cached totals, then answer the callers.
        self.last_seq = seq
        self.msg_count += len(records) - plan.removed_count
        self.bytes += appended_bytes - plan.total_removed_bytes
        if plan.truncate_before:
            self.first_seq = max(self.first_seq, plan.truncate_before)
        if self.msg_count == 0:
            self.first_seq = self.last_seq + 1
        if change_seqs:
            self.last_change_seq = change_seqs[-1]
        self._feed.settle(change_seqs)

        outcome_iter = iter(outcomes)
        for item in items:
            outcome = next(outcome_iter) if isinstance(item, _Append) else None
            if item.future.done():  # the caller went away (cancelled); the data is committed anyway
                continue
            if isinstance(item, _Append):
                assert outcome is not None
                item.future.set_result(outcome)
            elif isinstance(item, _Sweep):
                item.future.set_result(plan.removed_count)
            else:
                item.future.set_result(None)

        if records:
            self._published_messages.inc(len(records))
            self._published_bytes.inc(appended_bytes)
        if plan.removed_count:
            self._retention_removed.inc(plan.removed_count)
        metrics.GROUP_COMMIT_MESSAGES.observe(len(records))
        metrics.GROUP_COMMIT_SECONDS.observe(time.perf_counter() - started)
        self._publish_gauges()

    def _change(self, **kind: Any) -> types_pb2.Change:
        return types_pb2.Change(
            stream=self.stream.name, partition=self.index, role=types_pb2.PARTITION_ROLE_PRIMARY, **kind
        )

    def _publish_gauges(self) -> None:
        self._last_seq_gauge.set(self.last_seq)
        self._messages_gauge.set(self.msg_count)
        self._bytes_gauge.set(self.bytes)

    def forget_metrics(self) -> None:
        for gauge in (metrics.PARTITION_LAST_SEQ, metrics.PARTITION_MESSAGES, metrics.PARTITION_BYTES):
            with contextlib.suppress(KeyError):
                gauge.remove(*self._labels)
