"""The storage interface of one partition: `PartitionLog`.

A partition log stores records keyed by seq, plus the partition's share of the node's change feed,
and applies one `CommitBatch` atomically: new records, a prefix truncation, individual removals and
change entries either all become durable or none does. Writes come from one writer at a time (the
partition's commit loop); reads may run concurrently with a commit and see the last committed state.

Every record carries a CRC32 of its encoded bytes; reads verify it and raise `CorruptRecordError`
naming the stream, partition and seq on a mismatch. Implementations: `SqlitePartitionLog` (durable,
one SQLite database in WAL mode) and `MemoryPartitionLog` (ephemeral streams).

The same log is the partition's consumer store (`ConsumerStore`): each consumer's cursor (ack floor,
last delivered, totals) and pending set are rows committed in the same `CommitBatch` as the appends
and removals they cause, so a dead letter, a work-queue removal and the ack behind it are atomic.
It also keeps a sourcing stream's source positions (`source_positions`, storage/source_positions.py)
beside the records, committed with the records they describe, and how each held record was resolved
(`held_resolution`, storage/held_resolutions.py), committed with the delivery or removal it records.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from weir.errors import CorruptRecordError

SQLITE_MAX_INTEGER = 2**63 - 1  # API seqs are uint64; SQLite integers are signed 64-bit


def checksum(record: bytes) -> int:
    """CRC32 (zlib) of an encoded record."""
    return zlib.crc32(record)


# One stored message, as the tuple (seq, ts_ms, subject, size, crc, record) in the column order the
# SQLite log inserts: `record` is the encoded weir.v1.Message with seq and ts_ms set, `size` its
# length and `crc` its checksum. A plain tuple because the commit path builds one per message.
Record = tuple[int, int, str, int, int, bytes]


def make_record(seq: int, ts_ms: int, subject: str, encoded: bytes) -> Record:
    return (seq, ts_ms, subject, len(encoded), checksum(encoded), encoded)


@dataclass(slots=True, frozen=True)
class RowInfo:
    """What retention needs to know of a stored message."""

    seq: int
    size: int
    ts_ms: int


# (consumer, incarnation, ack_floor, last_delivered, delivered, acked, redelivered, dead_lettered,
#  dropped, termed)
# (consumer, incarnation, ack_floor, last_delivered, delivered, acked, redelivered, dead_lettered,
# dropped, termed, last_per_subject_until)
ConsumerStateRow = tuple[str, int, int, int, int, int, int, int, int, int, int]
# (consumer, seq, delivered_at_ms, deliver_count, redeliver_at_ms)
PendingRow = tuple[str, int, int, int, int]


# (source stream, source partition, at_seq, last_sourced_seq): every message of that source
# partition up to last_sourced_seq is settled by this log's records up to at_seq (sources.py).
SourcePositionRow = tuple[str, int, int, int]


@dataclass(slots=True, frozen=True)
class SourcePosition:
    """How far a sourcing stream has read one source partition: every source seq up to
    `last_sourced_seq` was appended, filtered out or reported, by records at seqs up to `at_seq`."""

    last_sourced_seq: int
    at_seq: int


# (held_seq, delivered_seq, resolved_at_ms): the held record at held_seq (a transaction's half
# message) was delivered at delivered_seq (committed), or removed undelivered when 0 (rolled back),
# at resolved_at_ms (ms since the Unix epoch, the resolving copy's clock); -1 while it is unresolved.
HeldResolutionRow = tuple[int, int, int]


@dataclass(slots=True, frozen=True)
class HeldResolution:
    """How a held record was resolved: `delivered_seq` > 0 = committed (delivered at that seq),
    0 = rolled back (discarded); `resolved_at_ms` when (ms since the Unix epoch)."""

    delivered_seq: int
    resolved_at_ms: int

    @property
    def committed(self) -> bool:
        return self.delivered_seq > 0


@dataclass(slots=True)
class StoredConsumer:
    """One consumer's stored state in a partition; `pending` ordered by seq as
    (seq, delivered_at_ms, deliver_count, redeliver_at_ms). `ack_floor` is derived from the pending
    set and last_delivered; it is stored for inspection and snapshots, not needed to restore."""

    incarnation: int
    ack_floor: int
    last_delivered: int
    totals: tuple[int, int, int, int, int, int]
    pending: list[tuple[int, int, int, int]]
    last_per_subject_until: int = 0  # DELIVER_POLICY_LAST_PER_SUBJECT's creation horizon (0 = none)


@dataclass(slots=True)
class CommitBatch:
    """One atomic write to a partition log.

    Order of application: insert `records` (ascending by seq), put `repairs` back, remove
    `remove_seqs`, remove every seq below `truncate_before` (when > 0), store `changes` (change_seq,
    encoded weir.v1.Change), and set the stored last_seq to `last_seq`.
    """

    records: list[Record] = field(default_factory=list)
    # (seq, crc, record): a stored record's bytes put back from another copy (the scrub's repair),
    # only where the stored checksum is `crc`, which the caller checked `record` against.
    repairs: list[tuple[int, int, bytes]] = field(default_factory=list)
    # Stored batches (by base seq) to rewrite from their stored records, as they are: a batch whose
    # CRC32C fails while each of its records passes its own (the scrub's repair; storage that keeps
    # record batches, `storage/stored_batch.py`; others ignore it).
    reseal_batches: list[int] = field(default_factory=list)
    remove_seqs: list[int] = field(default_factory=list)
    truncate_before: int = 0
    changes: list[tuple[int, int, bytes]] = field(default_factory=list)  # (change_seq, ts_ms, record)
    last_seq: int = 0
    drop_changes_before: int = 0
    # Consumer store, applied after the messages: drop consumers, then upsert cursors, then pending.
    consumer_deletes: list[str] = field(default_factory=list)
    consumer_states: list[ConsumerStateRow] = field(default_factory=list)
    pending_upserts: list[PendingRow] = field(default_factory=list)
    pending_deletes: list[tuple[str, int]] = field(default_factory=list)  # (consumer, seq)
    # Duplicate window rows (`dedupe.py`), applied last: drop the rows of seqs above `msg_ids_after`
    # (a divergent tail; None = none), store `msg_ids` as (seq, msg_id, stored_at_ms) ascending by
    # seq, then with `msg_id_retention` = (stored_before_ms, max_rows) drop the rows stored before
    # that time and the oldest beyond max_rows. Removing a message keeps its row: an id is
    # remembered for the window whatever retention does to the message.
    msg_ids: list[tuple[int, str, int]] = field(default_factory=list)
    msg_ids_after: int | None = None
    msg_id_retention: tuple[int, int] | None = None
    # Per-message TTLs of this commit's records, (seq, expires_at_ms); a removed message's expiry
    # goes with it.
    expiries: list[tuple[int, int]] = field(default_factory=list)
    # Source positions (a sourcing stream's, storage/source_positions.py), applied with the duplicate
    # window: drop the rows with at_seq above `msg_ids_after` (a divergent tail), then store these.
    # Never records: no seq, no count, no API shows them.
    source_positions: list[SourcePositionRow] = field(default_factory=list)
    # Held records' rows (storage/held_resolutions.py), applied with the duplicate window: drop the
    # rows a cut after `msg_ids_after` takes (a divergent tail), then store these (unresolved rows
    # take a resolution; a resolved one keeps its first). Never records.
    held_resolutions: list[HeldResolutionRow] = field(default_factory=list)
    # False: the commit may return before it reaches the disk (no fsync under fsync=always); the
    # log's next synced commit takes it there, and a SQLite log syncs at least every
    # MAX_DEFERRED_SYNC_S (storage/sqlite.py) all the same. Only for what another copy holds and
    # ships again (a secondary's consumer state).
    sync: bool = True


@dataclass(slots=True, frozen=True)
class LogState:
    """Committed totals: stored message count and record bytes, first/last seq, last change seq."""

    msg_count: int
    bytes: int
    first_seq: int
    last_seq: int
    last_change_seq: int


@dataclass(slots=True, frozen=True)
class ScrubPage:
    """One step of a scrub over stored records: how many records and bytes were re-read and
    checked, the seqs whose record failed its checksum, where the next step starts, whether the
    log has nothing past it (or was closed), and the stored batches the step read whose own CRC32C
    failed (by base seq; a log that stores record batches, `storage/stored_batch.py`)."""

    checked_records: int
    checked_bytes: int
    corrupt_seqs: tuple[int, ...]
    next_seq: int
    done: bool
    corrupt_batches: tuple[int, ...] = ()


class PartitionLog(Protocol):
    """One partition's append log. See the module docstring for the contract."""

    stream: str
    partition: int

    def state(self) -> LogState:
        """Committed totals, read from storage (used at open; the partition caches them)."""
        ...

    def commit(self, batch: CommitBatch) -> None:
        """Apply `batch` atomically and durably (per the log's fsync policy). Raises on failure,
        in which case nothing of the batch is stored."""
        ...

    def read(self, from_seq: int, max_messages: int, max_bytes: int) -> list[tuple[int, bytes]]:
        """Verified (seq, record) pairs with seq >= from_seq, in order; at least one when any
        exists, then bounded by max_messages and max_bytes. Reads no record past the bounds (a
        large max_messages over large records never loads more than max_bytes and one record)."""
        ...

    def scrub(self, from_seq: int, max_bytes: int) -> ScrubPage:
        """Re-read stored records from `from_seq`, about `max_bytes` of them, and check each against
        its checksum without raising (a background scrub's step; runs on a worker thread, beside
        commits and reads). A closed log answers done."""
        ...

    def integrity(self, timeout_s: float, *, full: bool = False) -> str:
        """The storage's own consistency check (SQLite's quick_check, or integrity_check with
        `full`), stopped after `timeout_s`: "ok", "interrupted", or what it found."""
        ...

    def get(self, seq: int) -> bytes | None:
        """The verified record at `seq`, or None when not stored."""
        ...

    def latest_at_subject(self, subject: str) -> bytes | None: ...

    def subject_last_seq(self, subject: str) -> int:
        """Seq of the newest stored message at `subject`, 0 when none."""
        ...

    def expired_seqs(self, now_ms: int, limit: int) -> list[int]:
        """Stored messages whose TTL ran out at or before `now_ms`, soonest first, at most `limit`."""
        ...

    def earliest_expiry_ms(self) -> int:
        """The soonest expiry of a stored message with a TTL, 0 when none has one."""
        ...

    def subject_seq_at_or_below(self, subject: str, max_seq: int) -> int:
        """Seq of the newest stored message at `subject` with seq <= max_seq, 0 when none."""
        ...

    def next_subject_seq(self, subject: str, after_seq: int) -> int:
        """Seq of the first stored message at `subject` after `after_seq`, 0 when none."""
        ...

    def subjects_with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Distinct subjects starting with `prefix`, sorted, at most `limit`."""
        ...

    def scan_subject(self, subject: str, from_seq: int, limit: int, max_bytes: int) -> list[tuple[int, bytes]]:
        """Verified (seq, record) of the messages at `subject` with seq >= from_seq, in order: at
        least one when any exists, then bounded by `limit` and `max_bytes`."""
        ...

    def subject_excess(self, subject: str, keep: int) -> list[RowInfo]:
        """Stored messages at `subject` beyond the `keep` newest (oldest first)."""
        ...

    def oldest(self, from_seq: int, limit: int) -> list[RowInfo]:
        """Stored messages with seq >= from_seq, oldest first, at most `limit`."""
        ...

    def checksums(self, from_seq: int, limit: int) -> list[tuple[int, int]]:
        """(seq, stored CRC-32) of the stored messages with seq >= from_seq, in order, at most
        `limit`: the checksums the index holds, no record read (log matching against a primary)."""
        ...

    def read_changes(self, from_change_seq: int, to_change_seq: int, limit: int) -> list[tuple[int, bytes]]:
        """(change_seq, encoded Change) with from <= change_seq <= to, ordered, at most `limit`."""
        ...

    # -- consumer support ---------------------------------------------------------------------------

    def read_matching(
        self, from_seq: int, max_messages: int, max_bytes: int, accepts: Callable[[str], bool] | None, scan_limit: int
    ) -> tuple[list[tuple[int, bytes]], int, bool]:
        """Verified (seq, record) of messages with seq >= from_seq whose subject `accepts` (None =
        all), in order, bounded like `read`; looks at no more than `scan_limit` messages. Returns
        (rows, last seq looked at (from_seq - 1 when none), whether the log has nothing further)."""
        ...

    def rows(self, seqs: list[int]) -> list[RowInfo]:
        """RowInfo of the stored messages among `seqs` (missing ones are skipped)."""
        ...

    def count_matching(self, after_seq: int, accepts: Callable[[str], bool] | None) -> int:
        """Stored messages with seq > after_seq whose subject `accepts` (None = all)."""
        ...

    def count_newest_per_subject(self, after_seq: int, until_seq: int, accepts: Callable[[str], bool] | None) -> int:
        """Subjects (that `accepts`, None = all) whose newest stored message at or below `until_seq`
        has seq > after_seq: what a DELIVER_POLICY_LAST_PER_SUBJECT consumer at `after_seq` has
        still to deliver below its horizon. Costs one pass over the distinct subjects."""
        ...

    def last_matching_seq(self, accepts: Callable[[str], bool] | None) -> int:
        """Seq of the newest stored message whose subject `accepts`, 0 when none."""
        ...

    def first_seq_at_time(self, ts_ms: int) -> int:
        """The lowest stored seq with ts_ms >= `ts_ms`, 0 when none."""
        ...

    def load_consumers(self) -> dict[str, StoredConsumer]:
        """Every consumer's stored state in this partition."""
        ...

    def source_positions(self) -> dict[tuple[str, int], SourcePosition]:
        """The newest stored position of each source partition, by (source stream, source partition);
        empty for a stream without sources."""
        ...

    def held_resolution(self, held_seq: int) -> HeldResolution | None:
        """The row of the held record at `held_seq` (delivered_seq -1 while unresolved); None when
        this copy has none (never held, or older than the newest held_resolutions.KEPT_ROWS)."""
        ...

    def recent_msg_ids(self, stored_since_ms: int, limit: int) -> list[tuple[str, int, int]]:
        """(msg_id, seq, stored_at_ms) of the newest `limit` duplicate-window rows stored at or
        after `stored_since_ms`, oldest first (what a new primary's window starts from)."""
        ...

    def keep_tail(self, enabled: bool) -> None:
        """Keep the newest records in memory for reads near the head (a primary's followers and
        consumers) or stop (a secondary, which serves no such reads). No-op where all is memory."""
        ...

    def stop_checkpoints(self) -> None:
        """Wait for a background checkpoint of this log in progress (10-50 ms at most here) and
        make later ones no-ops. Blocking: the node calls it from a worker thread before `close`,
        which then does not wait. No-op where there is no checkpointer."""
        ...

    def close(self) -> None: ...

    def destroy(self) -> None:
        """Close and remove every trace of this log."""
        ...


def verify(stream: str, partition: int, seq: int, record: bytes, crc: int) -> bytes:
    """`record` when its checksum is `crc`; else raise `CorruptRecordError`."""
    if checksum(record) != crc:
        raise CorruptRecordError(
            f"stream {stream!r} partition {partition} seq {seq}: stored record fails its checksum",
            stream=stream,
            partition=partition,
            seq=seq,
        )
    return record
