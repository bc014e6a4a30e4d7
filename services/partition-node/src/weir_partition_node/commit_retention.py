"""A commit's retention plan (partition.py's commit loop): what the commit removes, gathered from
the partition's state and the commit's decisions, then planned by the pure planners of
retention.py. Runs in the event loop, before the write."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from weir.v1 import types_pb2

from weir_partition_node import consumers
from weir_partition_node.commit_items import CommitContext
from weir_partition_node.retention import NewRow, RetentionPlan, plan_replica_edits, plan_retention
from weir_partition_node.storage.base import PartitionLog, RowInfo

if TYPE_CHECKING:
    from weir_partition_node.partition import Partition

EXPIRE_ROWS = 10_000  # expired messages one commit removes at most (the rest at the next sweep)


def plan_commit_retention(
    partition: Partition, context: CommitContext, oldest_scheduled: Callable[[], int | None]
) -> RetentionPlan:
    """What one commit removes: on a secondary (or for the replicator's edits) the primary's
    removals mirrored (`plan_replica_edits`); on a primary, the Limits bounds, the interest floor
    (never past `oldest_scheduled()`, the oldest schedule record still to deliver) and the removals
    this commit's decisions asked for (work-queue acks, dead letters, delivered or discarded schedule
    records, rollups, deletes, expired TTLs), planned by `plan_retention` (retention.py)."""
    if not partition.leading or context.replica_truncate_before or context.replica_removals:
        # A secondary never decides retention itself: it mirrors the primary's removals.
        return plan_replica_edits(
            first_seq=partition.first_seq,
            truncate_before=context.replica_truncate_before,
            removals=context.replica_removals,
            oldest=partition.log.oldest,
            rows=partition.log.rows,
        )
    bounds = partition.stream.bounds
    records = context.records
    removals: dict[str, list[RowInfo]] = {}
    if context.work_queue_acked:
        removals["work_queue_ack"] = partition.log.rows(context.work_queue_acked)
    if context.dead_lettered:
        removals["dead_letter"] = partition.log.rows(context.dead_lettered)
    if context.scheduled_delivered:
        removals["scheduled"] = partition.log.rows(context.scheduled_delivered)
    if context.scheduled_discarded:
        removals["discarded"] = partition.log.rows(context.scheduled_discarded)
    if context.rollups:
        removals["rollup"] = _rolled_up(partition.log, context)
    if context.deleted_seqs:
        removals["deleted"] = partition.log.rows(sorted(set(context.deleted_seqs)))
    if partition.expiry_due(context.now_ms):
        removals["ttl"] = partition.log.rows(partition.log.expired_seqs(context.now_ms, EXPIRE_ROWS))
    keep_from = 0
    if partition.stream.retention == types_pb2.RETENTION_POLICY_INTEREST:
        keep_from = consumers.interest_keep_from(partition.consumers.values(), context.seq)
        # Consumers never see schedule records, so their acks say nothing of them: keep them.
        oldest = oldest_scheduled()
        if oldest is not None:
            keep_from = min(keep_from, oldest)
    needed = bounds.any_prefix_bound or (bounds.max_msgs_per_subject and records) or removals
    if not needed and keep_from <= partition.first_seq and context.purge_before_seq <= partition.first_seq:
        return RetentionPlan()
    new_rows = [NewRow(r[0], r[3], r[1], r[2]) for r in records]
    return plan_retention(
        bounds=bounds,
        now_ms=context.now_ms,
        stored_count=partition.msg_count,
        stored_bytes=partition.bytes,
        first_seq=partition.first_seq,
        new_rows=new_rows,
        oldest=partition.log.oldest,
        subject_excess=partition.log.subject_excess,
        keep_from_seq=keep_from,
        removals=removals,
        purge_before_seq=context.purge_before_seq,
    )


def _rolled_up(log: PartitionLog, context: CommitContext) -> list[RowInfo]:
    """The messages this commit's rollups remove: every stored one at a rolled-up subject, and
    the ones appended earlier in this commit at it (bounded by the stream's max_msgs_per_subject)."""
    rows: list[RowInfo] = []
    for subject in context.rollups:
        rows.extend(log.subject_excess(subject, 0))
    for seq, ts_ms, subject, size, _, _ in context.records:
        rollup_seq = context.rollups.get(subject)
        if rollup_seq is not None and seq < rollup_seq:
            rows.append(RowInfo(seq, size, ts_ms))
    return rows
