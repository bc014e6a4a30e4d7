"""A partition's consumers inside its commit loop (partition.py): the decision of each consumer op
(fetch, ack, nak, term, dead letter, in progress, undeliver, seek, remove), dead-lettering, the
cursor rows a commit stores with its ConsumerStateChange, and the consumer metrics.

Decisions run in the event loop, one queue item at a time, before the commit: they change the
partition's cursors in memory (`Partition.consumers`, rules in consumers.py) and note in the
commit's `CommitContext` what it must store (touched cursors, dead-letter appends, work-queue
removals). A caller hears back only once that commit is durable.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from weir.errors import NoSuchConsumerError, NotPendingError, PositionOutOfRangeError
from weir.v1 import types_pb2

from weir_partition_node import consumers, delivery_horizon, metrics, reads
from weir_partition_node.commit_items import CommitContext, ConsumerOp, ConsumerOpKind, Delivery
from weir_partition_node.consumers import ConsumerCursor
from weir_partition_node.storage.base import CommitBatch

if TYPE_CHECKING:
    from weir_partition_node.partition import Partition


class ConsumerDecisions:
    """The consumer section of one partition's commit loop; it reads the partition's log, stream
    and cursors and writes only the cursors and the commit's context."""

    def __init__(self, partition: Partition) -> None:
        self._partition = partition
        # Labelled metric children per consumer, resolved once (`labels()` costs ~20 us).
        self._metric_children: dict[str, tuple[Any, ...]] = {}

    def decide(self, op: ConsumerOp, context: CommitContext) -> Any:
        """The answer of one consumer op (by `op.kind`): FETCH the deliveries (list[Delivery]), ACK
        the per-seq results, UNDELIVER how many went back, SEEK (next_seq, dropped_pending), the
        others None. Errors: NoSuchConsumerError, NotPendingError, PositionOutOfRangeError (nothing
        changed)."""
        if op.kind == ConsumerOpKind.REMOVE:  # also clears stale stored state of a consumer not registered here
            self._partition.consumers.pop(op.consumer, None)
            context.touched_cursors.pop(op.consumer, None)
            context.consumer_deletes.append(op.consumer)
            context.consumers_changed = True
            return None
        cursor = self._partition.consumers.get(op.consumer)
        if cursor is None:
            raise NoSuchConsumerError(
                f"stream {self._partition.stream.name!r} has no consumer {op.consumer!r}",
                stream=self._partition.stream.name,
                consumer=op.consumer,
            )
        if op.kind == ConsumerOpKind.FETCH:
            return [] if op.abandoned else self._fetch(cursor, op, context)
        if op.kind == ConsumerOpKind.UNDELIVER:
            taken = [
                consumers.undeliver(cursor, seq, count, context.now_ms)
                for seq, count in zip(op.seqs, op.deliver_counts, strict=True)
            ]
            if any(taken):
                context.touched_cursors[cursor.spec.name] = cursor
            return sum(taken)
        if op.kind == ConsumerOpKind.SEEK:
            return self._seek(cursor, op.seqs[0], context)
        return self._decide_settle(cursor, op, context)

    def _decide_settle(self, cursor: ConsumerCursor, op: ConsumerOp, context: CommitContext) -> Any:
        """ack (many seqs), nak, term, dead_letter or in_progress (one seq) of `cursor`'s deliveries.
        Errors: NotPendingError."""
        stale = self._stale_deliveries(cursor, op)
        if op.kind == ConsumerOpKind.ACK:
            results = consumers.ack(cursor, [seq for seq in op.seqs if seq not in stale])
            if op.strict and (not results or results[0] is None):  # single Ack: nothing changed, the call fails
                raise self._not_pending(cursor, op.seqs[0])
            acked = [seq for seq in results if seq is not None]
            if acked:
                context.touched_cursors[cursor.spec.name] = cursor
                if self._partition.stream.retention == types_pb2.RETENTION_POLICY_WORK_QUEUE:
                    context.work_queue_acked.extend(acked)
            return _ack_results(op.seqs, stale, results, cursor)
        (seq,) = op.seqs
        if seq not in cursor.pending:
            raise self._not_pending(cursor, seq)
        context.touched_cursors[cursor.spec.name] = cursor
        if op.kind == ConsumerOpKind.NAK:
            consumers.nak(cursor, seq, context.now_ms, op.delay_ms)
            return None
        if op.kind == ConsumerOpKind.TERM:
            consumers.term(cursor, seq)
            return None
        if op.kind == ConsumerOpKind.DEAD_LETTER:
            self._dead_letter(cursor, seq, context, reason="consumer")
            return None
        if op.kind == ConsumerOpKind.IN_PROGRESS:
            return consumers.in_progress(cursor, seq, context.now_ms)
        raise AssertionError(f"unknown consumer op {op.kind}")

    def _stale_deliveries(self, cursor: ConsumerCursor, op: ConsumerOp) -> dict[int, str]:
        """The seqs of a settle bound to deliveries (`deliver_counts`) whose delivery is no longer
        the pending one, with why. A single-seq settle (Ack, Nak, Term) then fails as not_pending."""
        if not op.deliver_counts:
            return {}
        stale: dict[int, str] = {}
        for seq, deliver_count in zip(op.seqs, op.deliver_counts, strict=True):
            reason = consumers.stale_delivery_reason(cursor, seq, deliver_count)
            if reason is not None:
                stale[seq] = reason
        if stale and (op.strict or op.kind != ConsumerOpKind.ACK):
            seq = op.seqs[0]
            raise NotPendingError(
                stale[seq],
                stream=self._partition.stream.name,
                partition=self._partition.index,
                consumer=cursor.spec.name,
                seq=seq,
            )
        return stale

    def _not_pending(self, cursor: ConsumerCursor, seq: int) -> NotPendingError:
        return NotPendingError(
            consumers.not_pending_reason(cursor, seq),
            stream=self._partition.stream.name,
            partition=self._partition.index,
            consumer=cursor.spec.name,
            seq=seq,
        )

    def _fetch(self, cursor: ConsumerCursor, op: ConsumerOp, context: CommitContext) -> list[Delivery]:
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
            record = self._partition.log.get(seq)
            if record is None:  # retention removed it meanwhile: nothing left to redeliver
                consumers.forget(cursor, seq)
                continue
            if deliveries and used_bytes + len(record) > max_bytes:
                cursor.earliest_redeliver_ms = now_ms  # the rest is still due: next fetch
                break
            used_bytes += len(record)
            deliveries.append(
                Delivery(seq, record, consumers.redeliver(cursor, seq, now_ms, ack_wait_ms), self._partition.index)
            )
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
        context: CommitContext,
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
            self._partition,
            cursor.last_delivered + 1,
            want,
            max_bytes,
            accepts=cursor.spec.accepts,
            last_per_subject_until=cursor.last_per_subject_until,
        )
        for seq, record in read.records:
            deliver_count = consumers.deliver_new(cursor, seq, context.now_ms, ack_wait_ms)
            deliveries.append(Delivery(seq, record, deliver_count, self._partition.index))
        if read.next_seq - 1 > cursor.last_delivered:  # delivered, or passed over (filter, superseded)
            cursor.last_delivered = read.next_seq - 1
            cursor.commit_counts()
            context.touched_cursors[cursor.spec.name] = cursor

    def _seek(self, cursor: ConsumerCursor, seq: int, context: CommitContext) -> tuple[int, int]:
        """SeekConsumer's decision: `seq` 0 = the end (after every message decided so far), else a
        seq in 1..last_seq + 1, raised to the first stored seq. Returns (next_seq, dropped_pending)."""
        partition = self._partition
        end = context.seq + 1
        if seq > end:
            raise PositionOutOfRangeError(
                f"seq {seq} is beyond partition {partition.index} of {partition.stream.name!r}: its next seq is {end}",
                stream=partition.stream.name,
                partition=partition.index,
            )
        next_seq = end if seq == 0 else max(seq, partition.first_seq)
        dropped = consumers.seek(cursor, next_seq)
        # what follows a seek are first deliveries: the horizon starts anew there (delivery_horizon.py)
        cursor.horizon = delivery_horizon.restarted(
            cursor.horizon, next_seq - 1, partition.leader_epoch, context.now_ms
        )
        cursor.maybe_delivered_until = 0
        context.touched_cursors[cursor.spec.name] = cursor
        return next_seq, dropped

    def _dead_letter(
        self, cursor: ConsumerCursor, seq: int, context: CommitContext, reason: str = "max_deliver"
    ) -> None:
        """`seq` reached max_deliver (or its consumer said so: Term with dead_letter): append it under
        the dead letter subject, or drop it."""
        pending = consumers.forget(cursor, seq)
        spec = cursor.spec
        counts = cursor.commit_counts()
        record = self._partition.log.get(seq)
        if not spec.dead_letter_subject or record is None:
            counts.dropped += 1
            cursor.totals.dropped += 1
            return
        original = types_pb2.Message.FromString(record)
        message = consumers.dead_letter_message(
            original,
            stream=self._partition.stream.name,
            consumer=spec.name,
            subject=spec.dead_letter_subject,
            deliver_count=pending.deliver_count,
            reason=reason,
        )
        context.append(spec.dead_letter_subject, context.now_ms, message)
        counts.dead_lettered += 1
        cursor.totals.dead_lettered += 1
        if self._partition.stream.retention == types_pb2.RETENTION_POLICY_WORK_QUEUE:
            context.dead_lettered.append(seq)  # moved, not copied

    def store_cursor(
        self, cursor: ConsumerCursor, batch: CommitBatch
    ) -> tuple[types_pb2.Change, consumers.CommitCounts]:
        """Put a changed cursor into `batch`; returns its ConsumerStateChange and this commit's counts."""
        consumers.check_cursor(cursor)
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

    def count(self, cursor: ConsumerCursor, counts: consumers.CommitCounts) -> None:
        """After a commit: add its `counts` to the consumer's counters, set its pending and ack floor gauges."""
        children = self._metric_children.get(cursor.spec.name)
        if children is None:
            labels = (self._partition.stream.name, cursor.spec.name)
            partition_labels = (*labels, str(self._partition.index))
            children = self._metric_children[cursor.spec.name] = (
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

    def forget_metrics(self, name: str) -> None:
        """A removed consumer: drop its per-partition gauges (its counters stay, as Prometheus expects)."""
        if self._metric_children.pop(name, None) is None:
            return
        for gauge in (metrics.CONSUMER_ACK_PENDING, metrics.CONSUMER_ACK_FLOOR):
            with contextlib.suppress(KeyError):
                gauge.remove(self._partition.stream.name, name, str(self._partition.index))

    def forget_all_metrics(self) -> None:
        for name in list(self._metric_children):
            self.forget_metrics(name)

    def _change(self, **kind: Any) -> types_pb2.Change:
        partition = self._partition
        return types_pb2.Change(stream=partition.stream.name, partition=partition.index, role=partition.role, **kind)


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
