"""A partition's side of its commit loop (partition_commit.CommitLoop): the decision of each queue
item, what a durable commit changes in the partition, and what follows once its callers heard back.

- `decide`, in the event loop before the write: one item at a time, in queue order, by its type
  (commit_items); each section decides its own (partition_appends, partition_consumers,
  partition_replica, partition_schedule), and a refusal (not leading, the lease lapsed) is the
  caller's error, never a stored record.
- `apply`, once the commit is on disk: the partition's cached totals (first and last seq, count,
  bytes, soonest TTL, change seqs), the change feed's settled marks, the duplicate window, the
  schedule index and the batch cache. This is the only writer of those totals after start-up.
- `after`, once the callers have their answers: wake readers and parked fetches, move the high
  watermark, count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from weir.errors import WeirError

from weir_partition_node import metrics
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.commit_items import (
    PURGE_ALL,
    AppendItem,
    CommitContext,
    CommitItem,
    ConsumerOp,
    ConsumerOpKind,
    DeliverItem,
    ReleaseItem,
    ReplicaEditItem,
    ReplicateItem,
    SweepItem,
)
from weir_partition_node.commit_plan import CommitPlan
from weir_partition_node.partition_appends import AppendDecisions
from weir_partition_node.partition_consumers import ConsumerDecisions
from weir_partition_node.partition_replica import ReplicaDecisions
from weir_partition_node.partition_schedule import DelayedDelivery
from weir_partition_node.storage.base import CommitBatch

if TYPE_CHECKING:
    from weir_partition_node.partition import Partition


class CommitEffects:
    """Decide, apply and follow up each commit of one partition."""

    def __init__(
        self,
        partition: Partition,
        *,
        feed: ChangeFeedClock,
        appends: AppendDecisions,
        consumer_decisions: ConsumerDecisions,
        replica_decisions: ReplicaDecisions,
        delayed: DelayedDelivery,
    ) -> None:
        self._partition = partition
        self._feed = feed
        self._appends = appends
        self._consumer_decisions = consumer_decisions
        self._replica_decisions = replica_decisions
        self._delayed = delayed
        labels = (partition.stream.name, str(partition.index))
        # Labelled children resolved once: `labels()` costs ~20 us, too much for every commit.
        self._published_messages = metrics.PUBLISHED_MESSAGES.labels(*labels)
        self._published_bytes = metrics.PUBLISHED_BYTES.labels(*labels)
        self._retention_removed = metrics.RETENTION_REMOVED.labels(*labels)

    def decide(self, item: CommitItem, context: CommitContext) -> Any:
        """Decide one item into `context`: its caller's result, or the WeirError the caller gets.
        A consumer op or a release that fails changed nothing; the other decisions raise only on
        a bug (the commit loop then fails the whole batch)."""
        partition = self._partition
        if isinstance(item, AppendItem):
            # Queued while this node led; it may have stopped since (a new placement): a
            # follower never appends on its own, or its log would diverge from the primary's.
            refusal = partition.append_refusal()
            return self._appends.decide(item, context) if refusal is None else refusal
        if isinstance(item, ConsumerOp):
            try:
                if not partition.leading and item.kind != ConsumerOpKind.REMOVE:
                    raise partition.not_leading()
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
        if not self._partition.leading:
            return self._partition.not_leading()
        if item.delete_seqs:
            context.deleted_seqs.extend(item.delete_seqs)
        else:
            before = context.seq + 1 if item.purge_before_seq == PURGE_ALL else item.purge_before_seq
            context.purge_before_seq = max(context.purge_before_seq, before)
        return None

    def apply(self, plan: CommitPlan, context: CommitContext) -> None:
        """Committed: bring the cached totals, the change feed and the in-memory indexes up to the
        stored state."""
        partition = self._partition
        batch, retention = plan.batch, plan.retention
        records = batch.records
        partition.last_seq = batch.last_seq
        partition.msg_count += len(records) - retention.removed_count
        partition.bytes += plan.appended_bytes - retention.total_removed_bytes
        if retention.truncate_before:
            partition.first_seq = max(partition.first_seq, retention.truncate_before)
        if partition.msg_count == 0:
            partition.first_seq = partition.last_seq + 1
        elif batch.remove_seqs and partition.first_seq in batch.remove_seqs:
            oldest = partition.log.oldest(partition.first_seq, 1)  # single removals took the first message
            partition.first_seq = oldest[0].seq if oldest else partition.last_seq + 1
        if context.expiries:
            soonest = min(at for _, at in context.expiries)
            partition.earliest_expiry_ms = min(partition.earliest_expiry_ms or soonest, soonest)
        if partition.earliest_expiry_ms and (batch.remove_seqs or batch.truncate_before):
            partition.earliest_expiry_ms = partition.log.earliest_expiry_ms()  # one of them may have had the soonest
        if plan.change_seqs:
            partition.last_change_seq = plan.change_seqs[-1]
            for change_seq, change in zip(plan.change_seqs, plan.changes, strict=True):
                if not change.HasField("append"):
                    partition.last_non_append_change_seq = change_seq
        self._feed.settle(plan.change_seqs)
        if context.msg_ids:
            self._appends.expire(context.now_ms)
        self._delayed.index_committed(records, batch.remove_seqs, partition.first_seq)
        if context.note_extras and partition.caches_batches:  # (the role may have changed during the write)
            self._cache_batch(batch, context)
        elif len(partition.batch_cache):
            partition.batch_cache.clear()

    def _cache_batch(self, batch: CommitBatch, context: CommitContext) -> None:
        """Mirror a durable commit in the batch cache, in CommitBatch's order."""
        partition = self._partition
        cache = partition.batch_cache
        if batch.repairs:
            cache.clear()
        cache.add(
            batch.records, context.extras, leader_epoch=partition.leader_epoch, previous_crc32=partition.stored_crc32
        )
        if batch.remove_seqs:
            cache.removed(batch.remove_seqs)
        if batch.truncate_before:
            cache.truncated(batch.truncate_before)

    def after(self, plan: CommitPlan, context: CommitContext) -> None:
        """Once the callers have their answers: wake readers, move the high watermark, count."""
        partition = self._partition
        records = plan.batch.records
        if records or plan.batch.remove_seqs:
            # Removals reach the followers through the change feed, after a round of their fetch:
            # a parked one runs it now (a work-queue ack's removal is not held for a snapshot).
            partition.wake_waiters()
        elif context.touched_cursors or context.consumers_changed:
            partition.wake_work_waiters()
        if records and partition.leading:
            partition.update_high_watermark()
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
        partition.publish_gauges()
