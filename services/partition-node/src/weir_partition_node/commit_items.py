"""What a partition's commit loop consumes and accumulates (partition.py): one type per queue item,
the records it appends, and the context one group commit's decisions fill in.

Every mutation of a partition is one of `CommitItem`, queued on the partition's bounded queue and
decided in order by its commit loop; each carries the future its caller waits on and its `size` in
bytes (what the loop counts against `CommitLimits.max_batch_bytes`).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from weir.v1 import internal_pb2, types_pb2
from weir_server.replication import ReplicationResult

from weir_partition_node.consumers import ConsumerCursor, ConsumerSpec
from weir_partition_node.delivery_horizon import NO_HORIZON, DeliveryHorizon
from weir_partition_node.record_batch import BatchRecord
from weir_partition_node.storage.base import Record, make_record

PURGE_ALL = -1  # SweepItem.purge_before_seq: every message stored when the commit decides


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
class Delivery:
    """One message a fetch delivered: the stored record and this delivery's count."""

    seq: int
    record: bytes
    deliver_count: int
    partition: int = 0


@dataclass(slots=True)
class CommitLimits:
    max_batch_messages: int = 2000
    max_batch_bytes: int = 8 * 1024 * 1024
    queue_depth: int = 4096


# -- queue items: primary --------------------------------------------------------------------------


@dataclass(slots=True)
class AppendItem:
    """Publish `entries` (primary only); the future gets one outcome per entry. A source tail's
    append also stores `source_positions`, (source stream, source partition, last_sourced_seq), in
    the same commit (sources.py); it may have no entries (messages that were all filtered out)."""

    entries: list[PreparedEntry]
    future: asyncio.Future[list[AppendOutcome]]
    size: int
    source_positions: list[tuple[str, int, int]] = field(default_factory=list)


@dataclass(slots=True)
class SweepItem:
    """Apply the stream's bounds now, or purge (primary only); the future gets how many were removed."""

    future: asyncio.Future[int]
    size: int = 0
    # PurgePartition: remove every seq below this (PURGE_ALL: every message stored when decided).
    purge_before_seq: int = 0
    # PurgePartition with seqs: remove exactly these (reason "deleted").
    delete_seqs: list[int] = field(default_factory=list)


@dataclass(slots=True)
class DeliverItem:
    """Deliver the schedule records due now (primary only); the future gets how many."""

    future: asyncio.Future[int]
    size: int = 0


@dataclass(slots=True)
class ReleaseItem:
    """ReleaseScheduled: deliver now (or discard) the scheduled or held record at `seq` (primary only)."""

    seq: int
    discard: bool
    future: asyncio.Future[int]
    size: int = 0


@dataclass(slots=True)
class DropChangesItem:
    """Drop the change feed's entries below `before_change_seq` (any role)."""

    before_change_seq: int
    future: asyncio.Future[None]
    size: int = 0


class ConsumerOpKind(enum.StrEnum):
    """What a `ConsumerOp` does to one consumer of the partition."""

    FETCH = "fetch"
    ACK = "ack"
    NAK = "nak"
    TERM = "term"
    DEAD_LETTER = "dead_letter"
    IN_PROGRESS = "in_progress"
    SEEK = "seek"
    REMOVE = "remove"
    UNDELIVER = "undeliver"


@dataclass(slots=True)
class ConsumerOp:
    """One operation on one consumer of this partition (primary only, except REMOVE)."""

    kind: ConsumerOpKind
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


# -- queue items: secondary (and role changes) ---------------------------------------------------


# One record from the primary, validated by the caller (replication_batches.py): seq, ts_ms, subject,
# the encoded record, its CRC-32, msg_id ("" = none), scheduled_seq (0 = none: else the schedule
# record it delivers, removed with it) and expires_at_ms (0 = no TTL).
ReplicatedRecord = BatchRecord


@dataclass(slots=True)
class ReplicateItem:
    """Records from the primary at their exact seqs (increasing, above `after_seq`), following
    `after_seq` (secondary only). The future gets (result code, message)."""

    after_seq: int
    records: list[ReplicatedRecord]
    future: asyncio.Future[tuple[ReplicationResult, str]]
    size: int
    after_crc32: int | None = None  # the primary's record at after_seq (log matching); None = not known


@dataclass(slots=True, frozen=True)
class TruncatePrefix:
    """Drop every message below `first_seq` (the primary's retention), raising the log's end to at
    least first_seq - 1."""

    first_seq: int


@dataclass(slots=True, frozen=True)
class RemoveSeqs:
    """Remove the seqs the primary removed one by one, with its reason."""

    seqs: list[int]
    reason: str = ""


@dataclass(slots=True, frozen=True)
class TruncateTail:
    """Keep seqs <= `last_seq`: the divergent tail above goes (a new epoch replaced it)."""

    last_seq: int


@dataclass(slots=True, frozen=True)
class ReplaceConsumerState:
    """Replace one consumer's state with the primary's `snapshot` (its tombstone, or `spec` None:
    remove it); `spec` is the consumer as registered on this node."""

    snapshot: internal_pb2.ConsumerSnapshot
    spec: ConsumerSpec | None
    defer_sync: bool = False  # ReplicateConsumerStateRequest.defer_sync
    # the snapshot's delivery horizon under the sender's leader epoch (delivery_horizon.py)
    horizon: DeliveryHorizon = NO_HORIZON


@dataclass(slots=True, frozen=True)
class RepairRecords:
    """Stored records' bytes put back from another copy, (seq, crc, record) (see CommitBatch.repairs)."""

    repairs: list[tuple[int, int, bytes]]


@dataclass(slots=True, frozen=True)
class ResealBatches:
    """Rewrite the stored batches keyed by `base_seqs` from their stored records (see
    CommitBatch.reseal_batches): the scrub found each failing its CRC32C while its records pass."""

    base_seqs: list[int]


ReplicaEdit = TruncatePrefix | RemoveSeqs | TruncateTail | ReplaceConsumerState | RepairRecords | ResealBatches


@dataclass(slots=True)
class ReplicaEditItem:
    """A change a secondary mirrors, or a role change needs (any role for a repair); the future gets
    how many messages it removed (or repaired)."""

    edit: ReplicaEdit
    future: asyncio.Future[int]
    size: int = 0


CommitItem = (
    AppendItem | SweepItem | DropChangesItem | ConsumerOp | ReplicateItem | ReplicaEditItem | DeliverItem | ReleaseItem
)


@dataclass(slots=True)
class CommitContext:
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
    # secondary mirrors a delivery through replica_removals["scheduled"] when it replicates).
    scheduled_delivered: list[int] = field(default_factory=list)
    scheduled_discarded: list[int] = field(default_factory=list)
    # How this commit resolves held records: held_seq -> (delivered_seq, resolved_at_ms), delivered_seq
    # 0 for a discard (the primary's ReleaseScheduled; a secondary's copy of the delivery or removal).
    held_resolutions: dict[int, tuple[int, int]] = field(default_factory=dict)
    # Records whose stored bytes the scrub found damaged, put back from another copy.
    repairs: list[tuple[int, int, bytes]] = field(default_factory=list)
    # Stored batches the scrub found damaged outside their records, rewritten from those records.
    reseal_batches: list[int] = field(default_factory=list)
    # Primary: rollup publishes of this commit, subject -> the rollup's seq (earlier ones at the
    # subject are removed, reason "rollup").
    rollups: dict[str, int] = field(default_factory=dict)
    # Per-message TTLs of this commit's records: (seq, expires_at_ms).
    expiries: list[tuple[int, int]] = field(default_factory=list)
    # Primary: the source positions a tail's append settles, (source stream, partition) ->
    # last_sourced_seq; the plan adds those its sourced records' msg_ids say (commit_plan.py).
    source_positions: dict[tuple[str, int], int] = field(default_factory=dict)
    # PurgePartition with seqs (primary only): these go, reason "deleted".
    deleted_seqs: list[int] = field(default_factory=list)
    # A primary with followers notes, by seq, each appended record's (msg_id, scheduled_seq,
    # expires_at_ms) when any is set: what its record batch says of it (batch_cache.py).
    note_extras: bool = False
    extras: dict[int, tuple[str, int, int]] = field(default_factory=dict)

    def append_record(self, seq: int, ts_ms: int, subject: str, encoded: bytes, crc32: int) -> None:
        """Add a record that already has its seq and checksum (replication: the primary's, checked
        by the caller)."""
        self.seq = seq
        self.records.append((seq, ts_ms, subject, len(encoded), crc32, encoded))
        self.subject_last[subject] = seq

    def append(self, subject: str, ts_ms: int, message: types_pb2.Message) -> int:
        """Give `message` the next seq and `ts_ms`, add its record to the commit; returns the seq."""
        self.seq += 1
        message.seq = self.seq
        message.ts_ms = ts_ms
        self.records.append(make_record(self.seq, ts_ms, subject, message.SerializeToString()))
        self.subject_last[subject] = self.seq
        if self.note_extras and (message.msg_id or message.scheduled_seq or message.expires_at_ms):
            self.extras[self.seq] = (message.msg_id, message.scheduled_seq, message.expires_at_ms)
        return self.seq
