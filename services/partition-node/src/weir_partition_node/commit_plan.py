"""The plan of one group commit (partition.py: decide -> plan -> write -> apply): the transaction
the decisions call for, and the change-feed entries that describe it.

Pure: `data_changes` turns a commit's appended records and its retention plan into the change
protos (DESIGN §4's change feed: one append, one remove per reason, one truncate) and is
unit-tested directly; the consumer-state changes are added by the partition, which owns the cursors.
`source_position_rows` gives the source positions the commit stores (sources.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from weir.v1 import types_pb2
from weir_server.sources import SOURCE_MSG_ID_PREFIX, parse_source_msg_id

from weir_partition_node import consumers
from weir_partition_node.consumers import ConsumerCursor
from weir_partition_node.retention import RetentionPlan
from weir_partition_node.storage.base import CommitBatch, Record, SourcePositionRow

# The reason of the removals `plan_retention` decides by itself (RetentionPlan.remove_seqs).
MAX_MSGS_PER_SUBJECT_REASON = "max_msgs_per_subject"


@dataclass(slots=True)
class CommitPlan:
    """One commit's transaction: `batch` (what the log stores), the `retention` it applies, its
    change-feed entries with their allocated `change_seqs` (one each, in order), and the consumer
    cursors it stores with this commit's counts."""

    batch: CommitBatch
    retention: RetentionPlan
    changes: list[types_pb2.Change]
    change_seqs: list[int]
    touched_counts: list[tuple[ConsumerCursor, consumers.CommitCounts]] = field(default_factory=list)
    prune_msg_ids: bool = False  # the commit prunes the stored duplicate window (batch.msg_id_retention)
    appended_bytes: int = 0  # the stored size of batch.records

    @property
    def empty(self) -> bool:
        """Nothing to store (fetches that found nothing, say): the commit skips the write."""
        batch = self.batch
        return not (
            batch.records
            or batch.remove_seqs
            or batch.truncate_before
            or batch.changes
            or batch.repairs
            or batch.reseal_batches
            or batch.drop_changes_before
            or batch.consumer_deletes
            or batch.msg_ids_after is not None
            or batch.source_positions
            or batch.held_resolutions
        )


def source_position_rows(
    msg_ids: Iterable[tuple[int, str, int]], settled: dict[tuple[str, int], int], at_seq: int
) -> list[SourcePositionRow]:
    """The source positions a commit stores, each at `at_seq` (the log's end after the commit):
    what a source tail's append settled (`settled`, the primary's: filtered-over messages
    included), raised to the source seq named by each sourced record's msg_id (`msg_ids`: (seq,
    msg_id, stored_at_ms) of the commit's records). A secondary's commits carry no `settled`: the
    msg_ids of the records it copies give it the position they settle, in the commit that stores
    them, whatever retention later removes."""
    positions = dict(settled)
    prefix = SOURCE_MSG_ID_PREFIX
    for _, msg_id, _ in msg_ids:
        if msg_id[:1] == "$" and msg_id.startswith(prefix):
            where = parse_source_msg_id(msg_id)
            if where is not None:
                key = where[:2]
                positions[key] = max(positions.get(key, 0), where[2])
    return [(stream, partition, at_seq, seq) for (stream, partition), seq in positions.items()]


def data_changes(
    stream: str,
    partition: int,
    role: types_pb2.PartitionRole,
    *,
    records: list[Record],
    appended_bytes: int,
    last_seq: int,
    retention: RetentionPlan,
) -> list[types_pb2.Change]:
    """The change-feed entries of a commit's data (seqs and ts set later, when allocated): an
    AppendChange for `records` (seq, ts_ms, subject, size, crc, record tuples, ascending;
    `appended_bytes` their stored size) up to `last_seq` (the log's end after the commit), a
    RemoveChange for the subject limit's removals and one per consumer-driven reason, and a
    TruncateChange for a prefix cut. Order: append, removes, truncate."""

    def change(**kind: object) -> types_pb2.Change:
        return types_pb2.Change(stream=stream, partition=partition, role=role, **kind)  # type: ignore[arg-type]

    changes: list[types_pb2.Change] = []
    if records:
        appended = types_pb2.AppendChange(
            first_seq=records[0][0],
            last_seq=last_seq,
            message_count=len(records),
            bytes=appended_bytes,
        )
        changes.append(change(append=appended))
    if retention.remove_seqs:
        removed = types_pb2.RemoveChange(
            seqs=retention.remove_seqs, removed_bytes=retention.removed_bytes, reason=MAX_MSGS_PER_SUBJECT_REASON
        )
        changes.append(change(remove=removed))
    for reason, rows in retention.consumer_removals.items():
        removed = types_pb2.RemoveChange(
            seqs=[row.seq for row in rows], removed_bytes=sum(row.size for row in rows), reason=reason
        )
        changes.append(change(remove=removed))
    if retention.truncate_before:
        truncated = types_pb2.TruncateChange(
            first_seq=retention.truncate_before,
            removed_count=retention.truncated_count,
            removed_bytes=retention.truncated_bytes,
            reason=retention.truncate_reason,
        )
        changes.append(change(truncate=truncated))
    return changes
