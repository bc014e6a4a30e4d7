"""A secondary's decisions inside its partition's commit loop (partition.py): replicated records,
checked against the log before they are appended (Raft's log-matching check: the records follow
`after_seq` and, where the primary sent its CRC-32, the same record there; a replay matches what
this copy holds), and the replicator's edits (ReplicateTruncate's prefix and tail cuts, removals,
repairs, and consumer state replaced whole from the primary's snapshot).

Like every decision they run in the event loop before the commit and only note in the commit's
`CommitContext` what it must store; the consumer cursors they replace are the partition's.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

from weir_server.replication import ReplicationResult

from weir_partition_node import consumers, delivery_horizon, scheduled
from weir_partition_node.commit_items import (
    CommitContext,
    RemoveSeqs,
    RepairRecords,
    ReplaceConsumerState,
    ReplicaEditItem,
    ReplicateItem,
    ResealBatches,
    TruncatePrefix,
    TruncateTail,
)
from weir_partition_node.consumers import ConsumerCursor, Counters, Pending
from weir_partition_node.storage.held_resolutions import UNRESOLVED

if TYPE_CHECKING:
    from weir_partition_node.partition import Partition

# Stored rows one read of a divergent tail looks at.
TAIL_SCAN_ROWS = 4096
DISCARDED_REASON = "discarded"  # the removal reason of a schedule or held record ReleaseScheduled discarded


class ReplicaDecisions:
    """The secondary's section of one partition's commit loop."""

    def __init__(self, partition: Partition) -> None:
        self._partition = partition

    def decide_replicate(self, item: ReplicateItem, context: CommitContext) -> tuple[ReplicationResult, str]:
        """ReplicateMessage's decision: (OK, "") with the records that extend the log added to
        `context`, else the refusal's result code and message (nothing noted: the push stores nothing)."""
        partition = self._partition
        if partition.leading:
            return (
                ReplicationResult.NOT_FOLLOWER,
                f"this node leads partition {partition.index} of {partition.stream.name!r}",
            )
        end = context.seq
        if end != partition.last_seq:
            return ReplicationResult.OUT_OF_ORDER, "another write to this partition is in the same commit; resend"
        if item.after_seq > end:
            return (
                ReplicationResult.OUT_OF_ORDER,
                f"the log ends at seq {end}; these records follow seq {item.after_seq}",
            )
        if item.after_crc32 is not None and item.after_seq:
            held = partition.held_record(item.after_seq)  # log matching: they follow the same record
            if held is not None and zlib.crc32(held) != item.after_crc32:
                return ReplicationResult.DIVERGENCE, f"seq {item.after_seq} holds another record than the primary's"
        for seq, _, _, record, _, _, _, _ in item.records:  # a replay must match what this replica holds
            if seq > end:
                break
            stored = partition.held_record(seq)
            if stored is not None and stored != record:
                return ReplicationResult.DIVERGENCE, f"seq {seq} holds another record than the primary's"
        for seq, ts_ms, subject, record, crc32, msg_id, scheduled_seq, expires_at_ms in item.records:
            if seq > end:
                context.append_record(seq, ts_ms, subject, record, crc32)
                if subject.startswith(scheduled.HELD_SUBJECT_PREFIX):  # unresolved, as on the primary
                    context.held_resolutions[seq] = (UNRESOLVED, context.now_ms)
                if expires_at_ms:  # indexed as on the primary: a copy that takes over expires it
                    context.expiries.append((seq, expires_at_ms))
                if scheduled_seq:  # a delivered schedule record: it goes in this commit, as on the primary
                    context.replica_removals.setdefault("scheduled", []).append(scheduled_seq)
                    self._note_held_resolution(scheduled_seq, seq, context)
                elif msg_id:  # (a delivered message's msg_id is its schedule record's, already indexed)
                    context.msg_ids.append((seq, msg_id, context.now_ms))
        return ReplicationResult.OK, ""

    def decide_edit(self, item: ReplicaEditItem, context: CommitContext) -> int:
        """A replicator's edit of this copy, noted in `context`; returns how many stored records it
        removes or repairs (0 for a prefix cut, removals and consumer state: counted at the commit)."""
        edit = item.edit
        if isinstance(edit, TruncatePrefix):
            if edit.first_seq > max(self._partition.first_seq, context.replica_truncate_before):
                context.replica_truncate_before = edit.first_seq
            context.seq = max(context.seq, edit.first_seq - 1)
            return 0
        if isinstance(edit, RemoveSeqs):
            context.replica_removals.setdefault(edit.reason or "replicated", []).extend(edit.seqs)
            if edit.reason == DISCARDED_REASON:  # the primary's rollbacks of held records (and recalls)
                for seq in edit.seqs:
                    self._note_held_resolution(seq, 0, context)
            return 0
        if isinstance(edit, RepairRecords):
            context.repairs.extend(edit.repairs)
            return len(edit.repairs)
        if isinstance(edit, ResealBatches):
            context.reseal_batches.extend(edit.base_seqs)
            return 0
        if isinstance(edit, TruncateTail):
            return self._truncate_tail(edit.last_seq, context)
        self._replace_consumer(edit, context)
        return 0

    def _note_held_resolution(self, held_seq: int, delivered_seq: int, context: CommitContext) -> None:
        """Note in `context` that the primary resolved the record at `held_seq` (delivered at
        `delivered_seq`, or discarded when 0), when this copy knows it as a held record: by the
        unresolved row it stored with it (which outlives the record, so the answer is right even
        when a prefix cut took the record before its delivery or removal came), else by its subject.
        The same row as the primary's, so a new primary answers alike."""
        noted = context.held_resolutions.get(held_seq)  # stored or resolved earlier in this commit
        row = (noted[0], noted[1]) if noted is not None else None
        if row is None:
            stored = self._partition.log.held_resolution(held_seq)
            row = (stored.delivered_seq, stored.resolved_at_ms) if stored is not None else None
        if row is not None:
            held = row[0] == UNRESOLVED  # resolved already: the first resolution stands
        else:  # a held record stored before the rows existed
            record = self._partition.held_record(held_seq) if held_seq <= self._partition.last_seq else None
            held = record is not None and scheduled.is_held(record)
        if held:
            context.held_resolutions[held_seq] = (delivered_seq, context.now_ms)

    def _truncate_tail(self, keep: int, context: CommitContext) -> int:
        """Cut the log (and this commit's own records) after `keep`; consumers forget what they
        delivered beyond it. Returns how many stored messages go."""
        if context.seq <= keep:
            return 0
        context.records[:] = [record for record in context.records if record[0] <= keep]
        context.msg_ids[:] = [row for row in context.msg_ids if row[0] <= keep]
        context.msg_ids_after = keep if context.msg_ids_after is None else min(context.msg_ids_after, keep)
        tail: list[int] = []
        scan_from = keep + 1
        while scan_from <= self._partition.last_seq:
            chunk = self._partition.log.oldest(scan_from, TAIL_SCAN_ROWS)
            tail.extend(row.seq for row in chunk)
            if len(chunk) < TAIL_SCAN_ROWS:
                break
            scan_from = chunk[-1].seq + 1
        context.replica_removals.setdefault("divergent_tail", []).extend(tail)
        context.seq = keep
        for cursor_state in self._partition.consumers.values():
            beyond = [seq for seq in cursor_state.pending if seq > keep]
            if beyond or cursor_state.last_delivered > keep:
                for seq in beyond:
                    del cursor_state.pending[seq]
                    cursor_state.touched.add(seq)
                cursor_state.last_delivered = min(cursor_state.last_delivered, keep)
                cursor_state.commit_counts()
                context.touched_cursors[cursor_state.spec.name] = cursor_state
        return len(tail)

    def _replace_consumer(self, edit: ReplaceConsumerState, context: CommitContext) -> None:
        snapshot = edit.snapshot
        name = snapshot.consumer
        context.consumer_deletes.append(name)  # the stored pending set is replaced whole
        context.consumers_changed = True
        context.touched_cursors.pop(name, None)
        if snapshot.tombstone or edit.spec is None:
            self._partition.consumers.pop(name, None)
            return
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
            edit.spec, snapshot.last_delivered, pending, totals, last_per_subject_until=snapshot.last_per_subject_until
        )
        cursor.earliest_redeliver_ms = min(
            (entry.redeliver_at_ms for entry in pending.values()), default=consumers.NEVER
        )
        held = self._partition.consumers.get(name)
        if held is not None and held.spec.incarnation == edit.spec.incarnation:
            cursor.horizon = delivery_horizon.merged(held.horizon, edit.horizon)
        else:
            cursor.horizon = edit.horizon
        cursor.touched = set(pending)
        cursor.commit_counts()
        self._partition.consumers[name] = cursor
        context.touched_cursors[name] = cursor
