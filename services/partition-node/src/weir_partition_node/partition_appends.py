"""A primary's append decisions inside its partition's commit loop (partition.py): each published
entry becomes a stored message with the next seq, a schedule record (partition_schedule.py), or an
outcome without a write: a duplicate within the duplicate window (dedupe.py; idempotent publish,
JetStream's Nats-Msg-Id) or wrong_revision (expected_last_seq, JetStream's
Nats-Expected-Last-Subject-Sequence).

Decisions run in the event loop before the commit and note the records in the commit's
`CommitContext`; the duplicate window is the primary's, loaded from the log on first use after it
started leading.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from weir.v1 import types_pb2

from weir_partition_node import metrics
from weir_partition_node.commit_items import AppendItem, AppendOutcome, CommitContext, PreparedEntry
from weir_partition_node.dedupe import DuplicateWindow
from weir_partition_node.partition_schedule import DelayedDelivery

if TYPE_CHECKING:
    from weir_partition_node.partition import Partition


class AppendDecisions:
    """The append section of one partition's commit loop."""

    def __init__(self, partition: Partition, delayed: DelayedDelivery) -> None:
        self._partition = partition
        self._delayed = delayed
        # The duplicate window (dedupe.py): the primary's index of its recent message ids, loaded
        # from the log on the first publish that needs it after it started leading.
        self._window: DuplicateWindow | None = None
        self._duplicates_counter = metrics.PUBLISH_DUPLICATES.labels(partition.stream.name, str(partition.index))

    def forget_window(self) -> None:
        """The partition's role changed: a new primary rebuilds the window from what its log holds."""
        self._window = None

    def expire(self, now_ms: int) -> None:
        """After a commit that stored msg_ids: ids past the window leave memory as new ones come in."""
        if self._window is not None:
            self._window.expire(now_ms)

    def decide(self, item: AppendItem, context: CommitContext) -> list[AppendOutcome]:
        """One outcome per entry, in order: appended (its seq), a duplicate of a msg_id in the window
        (the original's seq), wrong_revision (expected_last_seq not the subject's last), or stored
        as a schedule record. Appended records and a tail's source positions go into `context`."""
        outcomes: list[AppendOutcome] = []
        subject_last = context.subject_last
        now_ms = context.now_ms
        partition = self._partition.index
        window: DuplicateWindow | None = None
        claimed = len(context.msg_ids)
        epoch = self._partition.leader_epoch
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
                mismatch = self._wrong_revision(entry, subject_last)
                if mismatch is not None:
                    if window is not None and msg_id:
                        window.release(msg_id)
                    outcomes.append(mismatch)
                    continue
            if entry.deliver_at_ms:
                seq = self._delayed.append_record(entry, context)
                if msg_id:
                    context.msg_ids.append((seq, msg_id, now_ms))
                outcomes.append(AppendOutcome(seq, scheduled=True, leader_epoch=epoch))
                continue
            message = _new_message(entry, partition, now_ms)
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
        for stream, source_partition, last_sourced_seq in item.source_positions:
            key = (stream, source_partition)
            context.source_positions[key] = max(context.source_positions.get(key, 0), last_sourced_seq)
        return outcomes

    def _wrong_revision(self, entry: PreparedEntry, subject_last: dict[str, int]) -> AppendOutcome | None:
        """The outcome of an entry whose expected_last_seq is not its subject's last seq (counting
        this commit's earlier appends), else None."""
        actual = subject_last.get(entry.subject)
        if actual is None:
            actual = self._partition.log.subject_last_seq(entry.subject)
        if actual == entry.expected_last_seq:
            return None
        return AppendOutcome(
            actual,
            "wrong_revision",
            f"subject {entry.subject!r} is at seq {actual}, expected {entry.expected_last_seq}",
        )

    def _duplicate_window(self, now_ms: int) -> DuplicateWindow:
        """The primary's duplicate window, loaded from the log's newest rows on first use."""
        window = self._window
        view = self._partition.stream
        if window is None:
            window = self._window = DuplicateWindow(view.duplicate_window_ms, view.duplicate_window_max_msgs)
            window.load(
                self._partition.log.recent_msg_ids(
                    now_ms - view.duplicate_window_ms + 1, view.duplicate_window_max_msgs
                ),
                now_ms,
            )
        elif (window.window_ms, window.max_msgs) != (view.duplicate_window_ms, view.duplicate_window_max_msgs):
            window.resize(view.duplicate_window_ms, view.duplicate_window_max_msgs, now_ms)
        return window


def _new_message(entry: PreparedEntry, partition: int, now_ms: int) -> types_pb2.Message:
    """The stored message of a published entry (seq and ts_ms set when the commit appends it)."""
    if entry.headers:
        message = types_pb2.Message(
            subject=entry.subject, headers=entry.headers, payload=entry.payload, partition=partition
        )
        message.msg_id = entry.msg_id
    elif entry.msg_id:  # copying an empty repeated field costs ~1.4 us a message
        message = types_pb2.Message(
            subject=entry.subject, payload=entry.payload, partition=partition, msg_id=entry.msg_id
        )
    else:
        message = types_pb2.Message(subject=entry.subject, payload=entry.payload, partition=partition)
    if entry.key is not None:
        message.key = entry.key
    if entry.ttl_ms:
        message.expires_at_ms = now_ms + entry.ttl_ms
    return message
