"""`SqlitePartitionLog`: one SQLite database per partition, WAL mode.

Durability: with fsync policy ``always`` the database runs with ``synchronous=FULL``, so a commit
returns only after the WAL is fsynced; ``off`` uses ``synchronous=NORMAL`` (survives a process
crash, may lose the last commits on power loss). A batch with ``sync`` False (a secondary's copy
of consumer state) commits without the fsync; the next synced commit takes it to the disk, and one
comes at least every `MAX_DEFERRED_SYNC_S`. Writes use a dedicated connection driven from one
thread at a time (the partition's commit loop hands whole batches to a worker thread: one thread hop
per group commit); reads use a second, query-only connection on the caller's thread, which in WAL
mode sees the last committed state without blocking the writer. The newest records are also kept
in memory after each commit (`TailCache`, `tail_cache_bytes`), so followers and consumers reading
near the head of the log do not query SQLite.

Checkpoints: given a `WalCheckpointer`, the log hands its WAL checkpoints to that background thread
(about every `checkpoint_bytes` committed) instead of letting SQLite run them inside a commit, which
made one commit in ~150 take 10-15 ms (see `storage/checkpoint.py`). Without one, SQLite's automatic
checkpoint applies as usual.
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from pathlib import Path
from typing import Literal

from weir_partition_node.storage import held_resolutions, layout_upgrade, source_positions, sqlite_batches
from weir_partition_node.storage.base import (
    CommitBatch,
    HeldResolution,
    LogState,
    RowInfo,
    ScrubPage,
    SourcePosition,
)
from weir_partition_node.storage.checkpoint import WalCheckpointer
from weir_partition_node.storage.msgids import SqliteMsgIdRows
from weir_partition_node.storage.sqlite_batches import BATCHES_TABLE, INDEX_COLUMNS, MESSAGES_BY_SUBJECT, MESSAGES_TABLE
from weir_partition_node.storage.sqlite_consumer_reads import SqliteConsumerReads, clamp
from weir_partition_node.storage.tailcache import TailCache

FsyncPolicy = Literal["always", "off"]
PAGE_SIZE_BYTES = 16384
DEFAULT_TAIL_CACHE_BYTES = 4 * 1024 * 1024
DEFAULT_CHECKPOINT_BYTES = 8 * 1024 * 1024
# A checkpointer that falls behind: the writer checkpoints itself (SQLite's automatic checkpoint)
# once the WAL holds this many times `checkpoint_bytes`.
CHECKPOINT_VALVE_FACTOR = 4
# Checkpoint passes in a row while commits keep adding frames: each pass copies what the last one
# left (less and less), and the WAL starts over only once a pass caught up with the writer.
CHECKPOINT_PASSES = 8
# Rows besides records (pending deliveries, consumer states, changes) are counted at this size when
# estimating what a commit added to the WAL; every commit also rewrites at least a few pages.
_SMALL_ROW_BYTES = 64
_PAGES_PER_COMMIT = 2
# A commit that may skip its fsync (CommitBatch.sync False) still syncs when the last synced commit
# is this old: what a power loss can take back stays bounded in time.
MAX_DEFERRED_SYNC_S = 1.0


_SCHEMA = f"""
{MESSAGES_TABLE};
{MESSAGES_BY_SUBJECT};
{BATCHES_TABLE};
CREATE TABLE IF NOT EXISTS expiries (seq INTEGER PRIMARY KEY, expires_at_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS expiries_by_time ON expiries (expires_at_ms, seq);
CREATE TABLE IF NOT EXISTS changes (
    change_seq INTEGER PRIMARY KEY,
    ts_ms INTEGER NOT NULL,
    record BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS consumers (
    name TEXT PRIMARY KEY,
    incarnation INTEGER NOT NULL,
    ack_floor INTEGER NOT NULL,
    last_delivered INTEGER NOT NULL,
    delivered INTEGER NOT NULL,
    acked INTEGER NOT NULL,
    redelivered INTEGER NOT NULL,
    dead_lettered INTEGER NOT NULL,
    dropped INTEGER NOT NULL,
    termed INTEGER NOT NULL,
    last_per_subject_until INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS pending (
    consumer TEXT NOT NULL,
    seq INTEGER NOT NULL,
    delivered_at_ms INTEGER NOT NULL,
    deliver_count INTEGER NOT NULL,
    redeliver_at_ms INTEGER NOT NULL,
    PRIMARY KEY (consumer, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS msg_id_rows (
    last_seq INTEGER PRIMARY KEY,
    first_seq INTEGER NOT NULL,
    stored_at_ms INTEGER NOT NULL,
    count INTEGER NOT NULL,
    ids BLOB NOT NULL
);
{source_positions.TABLE};
{held_resolutions.TABLE};
"""


def _add_missing_columns(db: sqlite3.Connection) -> None:
    """Columns added since a log file was first written (CREATE TABLE IF NOT EXISTS keeps the old
    table): a log of an earlier version opens with their defaults."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(consumers)")}
    if "last_per_subject_until" not in columns:
        db.execute("ALTER TABLE consumers ADD COLUMN last_per_subject_until INTEGER NOT NULL DEFAULT 0")


def _write_messages(db: sqlite3.Connection, batch: CommitBatch) -> None:
    """The batch's message rows, in CommitBatch's order: insert, repair, index expiries, remove, cut."""
    if batch.records:
        sqlite_batches.write_records(db, batch.records)
    if batch.repairs:
        sqlite_batches.repair(db, batch.repairs)
    if batch.reseal_batches:
        sqlite_batches.reseal(db, batch.reseal_batches)
    if batch.expiries:
        db.executemany("INSERT OR REPLACE INTO expiries (seq, expires_at_ms) VALUES (?, ?)", batch.expiries)
    if batch.remove_seqs:
        sqlite_batches.remove(db, batch.remove_seqs)
        db.executemany("DELETE FROM expiries WHERE seq = ?", [(seq,) for seq in batch.remove_seqs])
    if batch.truncate_before > 0:
        sqlite_batches.truncate(db, batch.truncate_before)
        db.execute("DELETE FROM expiries WHERE seq < ?", (batch.truncate_before,))


def _write_consumers(db: sqlite3.Connection, batch: CommitBatch) -> None:
    """The batch's consumer store: drop consumers, then upsert cursors, then pending entries."""
    if batch.consumer_deletes:
        names = [(name,) for name in batch.consumer_deletes]
        db.executemany("DELETE FROM consumers WHERE name = ?", names)
        db.executemany("DELETE FROM pending WHERE consumer = ?", names)
    if batch.consumer_states:
        db.executemany(
            "INSERT OR REPLACE INTO consumers (name, incarnation, ack_floor, last_delivered, delivered, "
            "acked, redelivered, dead_lettered, dropped, termed, last_per_subject_until) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            batch.consumer_states,
        )
    if batch.pending_deletes:
        db.executemany("DELETE FROM pending WHERE consumer = ? AND seq = ?", batch.pending_deletes)
    if batch.pending_upserts:
        db.executemany(
            "INSERT OR REPLACE INTO pending (consumer, seq, delivered_at_ms, deliver_count, redeliver_at_ms) "
            "VALUES (?, ?, ?, ?, ?)",
            batch.pending_upserts,
        )


class SqlitePartitionLog(SqliteConsumerReads):
    """A `PartitionLog` in ``<directory>/log.sqlite``."""

    def __init__(
        self,
        directory: Path,
        stream: str,
        partition: int,
        fsync: FsyncPolicy = "always",
        *,
        tail_cache_bytes: int = DEFAULT_TAIL_CACHE_BYTES,
        checkpointer: WalCheckpointer | None = None,
        checkpoint_bytes: int = DEFAULT_CHECKPOINT_BYTES,
    ) -> None:
        self.stream = stream
        self.partition = partition
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "log.sqlite"
        self._writer = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        # 16 KiB pages hold ~15 records of 1 KiB instead of 3: measured ~25 % less CPU per inserted
        # row (bench/compare, docs/benchmarks.md). Takes effect when the database is created only.
        self._writer.execute(f"PRAGMA page_size={PAGE_SIZE_BYTES}")
        self._writer.execute("PRAGMA journal_mode=WAL")
        self._writer.execute(f"PRAGMA synchronous={'FULL' if fsync == 'always' else 'NORMAL'}")
        self._fsync_always = fsync == "always"
        self._synced_at = time.monotonic()  # the last commit that waited for the disk (commit thread)
        self._writer.execute("PRAGMA cache_size=-16000")
        layout_upgrade.upgrade(self._writer, f"{stream}/{partition}")  # a log of the row-per-message layout
        # one transaction: one WAL commit (and fsync) for the whole schema instead of one a
        # statement, which halves the ~15 ms a new partition's file cost
        self._writer.executescript(f"BEGIN;\n{_SCHEMA}\nCOMMIT;")
        _add_missing_columns(self._writer)
        self._reader = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._reader.execute("PRAGMA query_only=1")
        self._reader.execute("PRAGMA cache_size=-16000")
        (self._page_bytes,) = self._writer.execute("PRAGMA page_size").fetchone()
        self._checkpointer = checkpointer
        self.checkpoint_bytes = checkpoint_bytes
        self._checkpointer_db: sqlite3.Connection | None = None
        # Held while a checkpoint runs and while the log closes (a checkpoint never uses a closed
        # connection).
        self._checkpoint_lock = threading.Lock()
        # Held by a scrub step or an integrity check (their own connection) and by `close`.
        self._scrub_lock = threading.Lock()
        self._scrub_db: sqlite3.Connection | None = None
        self._closed = False
        self._wal_bytes_estimate = 0  # committed since the last checkpoint request (commit thread only)
        if checkpointer is not None:
            valve_pages = max(1, CHECKPOINT_VALVE_FACTOR * checkpoint_bytes // self._page_bytes)
            self._writer.execute(f"PRAGMA wal_autocheckpoint={valve_pages}")
            self._checkpointer_db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._msg_ids = SqliteMsgIdRows()  # the duplicate window's rows (commit thread only)
        self._source_positions = source_positions.SqliteSourcePositions()  # a sourcing stream's (commit thread)
        self._held_resolutions = held_resolutions.SqliteHeldResolutions()  # held records' (commit thread)
        self.tail_cache_bytes = tail_cache_bytes
        self._tail: TailCache | None = None
        self._tail_wanted = tail_cache_bytes > 0
        # Held around every use of the cache (the commit thread updates it, the event loop reads
        # it) and while it is started: a cache started between a commit and its update would
        # otherwise miss that commit's records.
        self._tail_lock = threading.Lock()

    def keep_tail(self, enabled: bool) -> None:
        """Allow the tail cache (it starts with the first read after this, so a log nobody reads
        pays nothing for it) or drop it."""
        with self._tail_lock:
            self._tail_wanted = enabled and self.tail_cache_bytes > 0
            if not self._tail_wanted:
                self._tail = None

    def _cache(self) -> TailCache | None:
        """The tail cache for a read; call with `_tail_lock` held. Started (empty, past the newest
        stored seq) on the first read it is wanted for: a commit whose update is still waiting for
        the lock is then already counted as stored (applying it empties the cache), a later one is
        applied to it."""
        if self._tail is None and self._tail_wanted:
            (high,) = self._reader.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()
            self._tail = TailCache(self.tail_cache_bytes, int(high))
        return self._tail

    # -- writes (one caller at a time, any thread) ----------------------------------------------

    def commit(self, batch: CommitBatch) -> None:
        db = self._writer
        deferred = not batch.sync and self._fsync_always and time.monotonic() - self._synced_at < MAX_DEFERRED_SYNC_S
        if deferred:
            db.execute("PRAGMA synchronous=NORMAL")  # WAL mode: this commit writes the WAL, no fsync
        try:
            self._commit(db, batch)
        finally:
            if deferred:
                db.execute("PRAGMA synchronous=FULL")
        if self._fsync_always and not deferred:
            self._synced_at = time.monotonic()
        with self._tail_lock:
            if self._tail is not None:
                self._tail.apply(batch)
        if self._checkpointer is not None:
            self._count_wal_bytes(batch)

    def _commit(self, db: sqlite3.Connection, batch: CommitBatch) -> None:
        """The batch as one transaction (rolled back on any error)."""
        db.execute("BEGIN IMMEDIATE")
        try:
            _write_messages(db, batch)
            if batch.changes:
                db.executemany("INSERT INTO changes (change_seq, ts_ms, record) VALUES (?, ?, ?)", batch.changes)
            if batch.drop_changes_before > 0:
                db.execute("DELETE FROM changes WHERE change_seq < ?", (batch.drop_changes_before,))
            _write_consumers(db, batch)
            if batch.msg_ids or batch.msg_ids_after is not None or batch.msg_id_retention is not None:
                self._msg_ids.store(db, batch)
            self._source_positions.store(db, batch)
            self._held_resolutions.store(db, batch)
            if batch.truncate_before > 0 or batch.remove_seqs:
                # max(seq) stops being the last seq only when messages are removed: record it then.
                db.execute(
                    "INSERT INTO meta (key, value) VALUES ('last_seq', ?) "
                    "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (batch.last_seq,),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            self._msg_ids.forget_count()  # unknown after a rollback: counted again when next needed
            raise

    def _count_wal_bytes(self, batch: CommitBatch) -> None:
        """Estimate what `batch` added to the WAL; ask for a checkpoint every `checkpoint_bytes`."""
        small_rows = len(batch.changes) + len(batch.consumer_states) + len(batch.pending_upserts)
        small_rows += len(batch.pending_deletes) + len(batch.remove_seqs)
        self._wal_bytes_estimate += sum([row[3] for row in batch.records]) + small_rows * _SMALL_ROW_BYTES
        self._wal_bytes_estimate += _PAGES_PER_COMMIT * self._page_bytes
        if self._checkpointer is not None and self._wal_bytes_estimate >= self.checkpoint_bytes:
            self._wal_bytes_estimate = 0
            self._checkpointer.request(self)

    def checkpoint(self) -> None:
        """Copy the WAL's committed pages into the database file (``PRAGMA wal_checkpoint(PASSIVE)``:
        never waits for the writer or readers; what a reader still needs waits for the next one).
        Called by the `WalCheckpointer` thread; a no-op once the log is closed."""
        with self._checkpoint_lock:
            if self._closed or self._checkpointer_db is None:
                return
            for _ in range(CHECKPOINT_PASSES):
                _, wal_frames, copied_frames = self._checkpointer_db.execute(
                    "PRAGMA wal_checkpoint(PASSIVE)"
                ).fetchone()
                if copied_frames >= wal_frames:
                    return

    # -- reads -----------------------------------------------------------------------------------

    def state(self) -> LogState:
        count, total, first, last = self._reader.execute(
            "SELECT count(*), coalesce(sum(size), 0), min(seq), max(seq) FROM messages"
        ).fetchone()
        row = self._reader.execute("SELECT value FROM meta WHERE key = 'last_seq'").fetchone()
        stored_last = row[0] if row else 0
        last_seq = max(stored_last, last or 0)
        (last_change,) = self._reader.execute("SELECT coalesce(max(change_seq), 0) FROM changes").fetchone()
        return LogState(
            msg_count=count,
            bytes=total,
            first_seq=first if first is not None else last_seq + 1,
            last_seq=last_seq,
            last_change_seq=last_change,
        )

    def read(self, from_seq: int, max_messages: int, max_bytes: int) -> list[tuple[int, bytes]]:
        with self._tail_lock:
            tail = self._cache()
            cached = tail.read(from_seq, max_messages, max_bytes) if tail is not None else None
        if cached is not None:
            return cached
        return self._records(
            f"SELECT {INDEX_COLUMNS} FROM messages WHERE seq >= ? ORDER BY seq LIMIT ?",
            (clamp(from_seq), max_messages),
            max_bytes,
        )

    def _records(self, sql: str, parameters: tuple[object, ...], max_bytes: int) -> list[tuple[int, bytes]]:
        """Verified (seq, record) of the index rows `sql` selects (INDEX_COLUMNS, in seq order), up
        to the one that would pass `max_bytes` (the first always goes): the index and the batches
        are read in one read transaction, and no record past the bounds is loaded."""
        with sqlite_batches.read_transaction(self._reader):
            chosen: list[sqlite_batches.IndexRow] = []
            total = 0
            rows = self._reader.execute(sql, parameters)
            try:
                for row in rows:
                    total += row[4]
                    if chosen and total > max_bytes:
                        break
                    chosen.append(row)
            finally:
                rows.close()
            return sqlite_batches.fetch(self._reader, self.stream, self.partition, chosen)

    def get(self, seq: int) -> bytes | None:
        with self._tail_lock:
            tail = self._cache()
            answered, record = tail.get(seq) if tail is not None else (False, None)
        if answered:
            return record
        found = self._records(f"SELECT {INDEX_COLUMNS} FROM messages WHERE seq = ?", (clamp(seq),), 0)
        return found[0][1] if found else None

    def latest_at_subject(self, subject: str) -> bytes | None:
        found = self._records(
            f"SELECT {INDEX_COLUMNS} FROM messages WHERE subject = ? ORDER BY seq DESC LIMIT 1", (subject,), 0
        )
        return found[0][1] if found else None

    def subject_last_seq(self, subject: str) -> int:
        row = self._reader.execute(
            "SELECT seq FROM messages WHERE subject = ? ORDER BY seq DESC LIMIT 1", (subject,)
        ).fetchone()
        return int(row[0]) if row else 0

    def expired_seqs(self, now_ms: int, limit: int) -> list[int]:
        rows = self._reader.execute(
            "SELECT seq FROM expiries WHERE expires_at_ms <= ? ORDER BY expires_at_ms, seq LIMIT ?",
            (clamp(now_ms), limit),
        ).fetchall()
        return [int(row[0]) for row in rows]

    def earliest_expiry_ms(self) -> int:
        (earliest,) = self._reader.execute("SELECT coalesce(min(expires_at_ms), 0) FROM expiries").fetchone()
        return int(earliest)

    def subject_seq_at_or_below(self, subject: str, max_seq: int) -> int:
        row = self._reader.execute(
            "SELECT seq FROM messages WHERE subject = ? AND seq <= ? ORDER BY seq DESC LIMIT 1",
            (subject, clamp(max_seq)),
        ).fetchone()
        return int(row[0]) if row else 0

    def next_subject_seq(self, subject: str, after_seq: int) -> int:
        row = self._reader.execute(
            "SELECT seq FROM messages WHERE subject = ? AND seq > ? ORDER BY seq LIMIT 1", (subject, clamp(after_seq))
        ).fetchone()
        return int(row[0]) if row else 0

    def subjects_with_prefix(self, prefix: str, limit: int) -> list[str]:
        if prefix:
            # Range scan on the subject index: [prefix, prefix + U+10FFFF).
            rows = self._reader.execute(
                "SELECT DISTINCT subject FROM messages WHERE subject >= ? AND subject < ? ORDER BY subject LIMIT ?",
                (prefix, prefix + "\U0010ffff", limit),
            ).fetchall()
        else:
            rows = self._reader.execute(
                "SELECT DISTINCT subject FROM messages ORDER BY subject LIMIT ?", (limit,)
            ).fetchall()
        return [row[0] for row in rows]

    def scan_subject(self, subject: str, from_seq: int, limit: int, max_bytes: int) -> list[tuple[int, bytes]]:
        return self._records(
            f"SELECT {INDEX_COLUMNS} FROM messages WHERE subject = ? AND seq >= ? ORDER BY seq LIMIT ?",
            (subject, clamp(from_seq), limit),
            max_bytes,
        )

    def subject_excess(self, subject: str, keep: int) -> list[RowInfo]:
        rows = self._reader.execute(
            "SELECT seq, size, ts_ms FROM messages WHERE subject = ? ORDER BY seq DESC LIMIT -1 OFFSET ?",
            (subject, clamp(keep)),
        ).fetchall()
        return [RowInfo(seq, size, ts) for seq, size, ts in reversed(rows)]

    def oldest(self, from_seq: int, limit: int) -> list[RowInfo]:
        rows = self._reader.execute(
            "SELECT seq, size, ts_ms FROM messages WHERE seq >= ? ORDER BY seq LIMIT ?", (clamp(from_seq), limit)
        ).fetchall()
        return [RowInfo(seq, size, ts) for seq, size, ts in rows]

    def checksums(self, from_seq: int, limit: int) -> list[tuple[int, int]]:
        rows = self._reader.execute(
            "SELECT seq, crc FROM messages WHERE seq >= ? ORDER BY seq LIMIT ?", (clamp(from_seq), limit)
        ).fetchall()
        return [(seq, crc) for seq, crc in rows]

    def read_changes(self, from_change_seq: int, to_change_seq: int, limit: int) -> list[tuple[int, bytes]]:
        rows = self._reader.execute(
            "SELECT change_seq, record FROM changes WHERE change_seq >= ? AND change_seq <= ? "
            "ORDER BY change_seq LIMIT ?",
            (clamp(from_change_seq), clamp(to_change_seq), limit),
        ).fetchall()
        return [(int(seq), bytes(record)) for seq, record in rows]

    def recent_msg_ids(self, stored_since_ms: int, limit: int) -> list[tuple[str, int, int]]:
        return self._msg_ids.recent(self._reader, stored_since_ms, limit)

    def source_positions(self) -> dict[tuple[str, int], SourcePosition]:
        return source_positions.newest(source_positions.SqliteSourcePositions.load(self._reader))

    def held_resolution(self, held_seq: int) -> HeldResolution | None:
        return held_resolutions.SqliteHeldResolutions.get(self._reader, held_seq)

    # -- lifecycle -------------------------------------------------------------------------------

    def scrub(self, from_seq: int, max_bytes: int) -> ScrubPage:
        """See PartitionLog.scrub: on a connection of the scrub's own (made on first use), held
        under a lock that `close` takes too, so a step never uses a closed connection."""
        with self._scrub_lock:
            if self._closed:
                return ScrubPage(0, 0, (), from_seq, done=True)
            if self._scrub_db is None:
                self._scrub_db = self._connect_for_checks()
            with sqlite_batches.read_transaction(self._scrub_db):
                return sqlite_batches.scrub(self._scrub_db, clamp(from_seq), max_bytes)

    def integrity(self, timeout_s: float, *, full: bool = False) -> str:
        """See PartitionLog.integrity: SQLite's quick_check (or integrity_check), interrupted by a
        progress handler once `timeout_s` passed."""
        with self._scrub_lock:
            if self._closed:
                return "ok"
            if self._scrub_db is None:
                self._scrub_db = self._connect_for_checks()
            return check_integrity(self._scrub_db, timeout_s, full=full)

    def _connect_for_checks(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.directory / "log.sqlite", isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA query_only=1")
        db.execute("PRAGMA cache_size=-2000")  # a scrub reads each page once: no use caching much
        return db

    def stop_checkpoints(self) -> None:
        with self._checkpoint_lock, self._scrub_lock:  # a checkpoint or scrub step in progress holds them
            self._closed = True

    def close(self) -> None:
        """Close the connections. Waits for a checkpoint of this log in progress (one at most:
        10-50 ms here; none after `stop_checkpoints`), so a checkpoint never uses a closed
        connection."""
        with self._checkpoint_lock, self._scrub_lock:
            self._closed = True
            if self._checkpointer_db is not None:
                self._checkpointer_db.close()
            if self._scrub_db is not None:
                self._scrub_db.close()
        self._reader.close()
        self._writer.close()

    def destroy(self) -> None:
        self.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def check_integrity(db: sqlite3.Connection, timeout_s: float, *, full: bool = False) -> str:
    """SQLite's quick_check (or integrity_check) on `db`, stopped after `timeout_s` (a progress
    handler interrupts it): "ok", "interrupted", or its findings joined with "; " (the first 10)."""
    deadline = time.monotonic() + timeout_s
    db.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
    try:
        rows = db.execute(f"PRAGMA {'integrity_check' if full else 'quick_check'}(10)").fetchall()
    except sqlite3.OperationalError as error:
        return "interrupted" if "interrupt" in str(error) else f"failed: {error}"
    except sqlite3.DatabaseError as error:  # e.g. "database disk image is malformed"
        return f"failed: {error}"
    finally:
        db.set_progress_handler(None, 0)
    found = [str(row[0]) for row in rows]
    return "ok" if found == ["ok"] else "; ".join(found)
