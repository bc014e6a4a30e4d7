"""The SQLite log's records as stored batches (`stored_batch.py`): the two tables, and the writes and
reads over them that `SqlitePartitionLog` makes.

- `batches`: one row a stored batch, keyed by the base seq it was written with (the rowid, so a
  read opens the blob and takes only the bytes it needs: `Connection.blobopen`), with its last
  seq and the bytes of its records still stored (`live_bytes`).
- `messages`: the per-message index, one row a stored record: seq, ts_ms, subject, size, crc (the
  record's CRC-32), and its batch (`batch_seq`, the batch's base seq) and offset in it.

A batch row lives while any of its records does: a removal or a prefix truncation drops the index
rows, then every batch they touched that has no record left; one left with less than a quarter of
its bytes still stored is compacted (rewritten with those records alone), so records removed out of
order (a work queue's acks, dead letters) free their space.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from weir.errors import CorruptRecordError
from weir_partition_node.storage import stored_batch
from weir_partition_node.storage.base import Record, ScrubPage, checksum, verify

MESSAGES_TABLE = """
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY,
    ts_ms INTEGER NOT NULL,
    subject TEXT NOT NULL,
    size INTEGER NOT NULL,
    crc INTEGER NOT NULL,
    batch_seq INTEGER NOT NULL,
    batch_offset INTEGER NOT NULL
)"""
MESSAGES_BY_SUBJECT = "CREATE INDEX IF NOT EXISTS messages_by_subject ON messages (subject, seq)"
BATCHES_TABLE = """
CREATE TABLE IF NOT EXISTS batches (
    base_seq INTEGER PRIMARY KEY,
    last_seq INTEGER NOT NULL,
    live_bytes INTEGER NOT NULL,
    data BLOB NOT NULL
)"""

# An index row as reads use it: (seq, crc, batch_seq, batch_offset, size).
IndexRow = tuple[int, int, int, int, int]
INDEX_COLUMNS = "seq, crc, batch_seq, batch_offset, size"
_IN_CHUNK = 500  # seqs per `IN (...)` list
# A batch whose records were removed one by one down to less than 1/COMPACT_RATIO of its bytes is
# rewritten with the rest (when it is at least COMPACT_MIN_BYTES): a few records left pending in a
# queue never hold more than COMPACT_RATIO times their size on disk.
COMPACT_RATIO = 4
COMPACT_MIN_BYTES = 64 * 1024
# A read takes the records it returns from one batch in one span, unless this many bytes of others
# lie between two of them.
MAX_SPAN_GAP_BYTES = 64 * 1024


@contextlib.contextmanager
def read_transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One snapshot for every statement inside (WAL mode: a commit in between is not seen), so an
    index row read first and its batch read after agree. `db` is in autocommit mode."""
    db.execute("BEGIN")
    try:
        yield
    finally:
        db.execute("COMMIT")


def write_records(db: sqlite3.Connection, records: Sequence[Record]) -> None:
    """Store a commit's `records` (ascending by seq) as stored batches with their index rows."""
    for chunk in stored_batch.split(records):
        data, offsets = stored_batch.encode(chunk)
        base_seq = chunk[0][0]
        db.execute(
            "INSERT INTO batches (base_seq, last_seq, live_bytes, data) VALUES (?, ?, ?, ?)",
            (base_seq, chunk[-1][0], sum([record[3] for record in chunk]), data),
        )
        db.executemany(
            "INSERT INTO messages (seq, ts_ms, subject, size, crc, batch_seq, batch_offset) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (seq, ts_ms, subject, size, crc, base_seq, offset)
                for (seq, ts_ms, subject, size, crc, _), offset in zip(chunk, offsets, strict=True)
            ],
        )


def remove(db: sqlite3.Connection, seqs: Sequence[int]) -> None:
    """Remove the index rows of `seqs`; then each batch they were in goes when it has no record
    left, or is compacted when what is left is small (`_compact`)."""
    seqs = sorted(set(seqs))  # a seq named twice takes its bytes off its batch once
    removed: dict[int, int] = {}
    for start in range(0, len(seqs), _IN_CHUNK):
        chunk = seqs[start : start + _IN_CHUNK]
        marks = ",".join("?" * len(chunk))
        for batch_seq, size in db.execute(
            f"SELECT batch_seq, sum(size) FROM messages WHERE seq IN ({marks}) GROUP BY batch_seq", chunk
        ):
            removed[batch_seq] = removed.get(batch_seq, 0) + size
    db.executemany("DELETE FROM messages WHERE seq = ?", [(seq,) for seq in seqs])
    _release(db, removed)


def truncate(db: sqlite3.Connection, before_seq: int) -> None:
    """Remove every index row below `before_seq`, and the batches left without a record."""
    removed = dict(
        db.execute("SELECT batch_seq, sum(size) FROM messages WHERE seq < ? GROUP BY batch_seq", (before_seq,))
    )
    db.execute("DELETE FROM messages WHERE seq < ?", (before_seq,))
    _release(db, removed)


def _release(db: sqlite3.Connection, removed: dict[int, int]) -> None:
    """Take the removed record bytes (by batch) off each batch's live bytes; drop the batches left
    with none, and compact the ones where less than 1/COMPACT_RATIO of the data is still live."""
    db.executemany(
        "UPDATE batches SET live_bytes = live_bytes - ? WHERE base_seq = ?",
        [(size, batch_seq) for batch_seq, size in removed.items()],
    )
    db.executemany(  # (the index is asked too: a batch with a record left never goes)
        "DELETE FROM batches WHERE base_seq = ?1 AND live_bytes <= 0 AND NOT EXISTS "
        "(SELECT 1 FROM messages WHERE seq >= ?1 AND seq <= batches.last_seq AND batch_seq = ?1)",
        [(seq,) for seq in removed],
    )
    for batch_seq in removed:
        found = db.execute("SELECT live_bytes, length(data) FROM batches WHERE base_seq = ?", (batch_seq,)).fetchone()
        if found is not None and compaction_due(found[0], found[1]) and not _holds_first_record(db, batch_seq):
            _compact(db, batch_seq)


def compaction_due(live_bytes: int, data_bytes: int) -> bool:
    """Whether a stored batch of `data_bytes` with `live_bytes` of records still stored is worth
    rewriting with those alone: at least COMPACT_MIN_BYTES, less than 1/COMPACT_RATIO live."""
    return data_bytes >= COMPACT_MIN_BYTES and live_bytes * COMPACT_RATIO < data_bytes


def reseal(db: sqlite3.Connection, base_seqs: Iterable[int]) -> None:
    """Rewrite the stored batches keyed by `base_seqs` (those still stored) from their records."""
    for base_seq in base_seqs:
        if db.execute("SELECT 1 FROM batches WHERE base_seq = ?", (base_seq,)).fetchone() is not None:
            _compact(db, base_seq)


def _holds_first_record(db: sqlite3.Connection, batch_seq: int) -> bool:
    """Whether the batch holds the log's first stored record: a queue consumed in order empties
    it soon, so compacting it would mostly copy records about to go."""
    first = db.execute("SELECT batch_seq FROM messages ORDER BY seq LIMIT 1").fetchone()
    return first is not None and first[0] == batch_seq


def _compact(db: sqlite3.Connection, batch_seq: int) -> None:
    """Rewrite the batch keyed `batch_seq` with its stored records alone (their bytes and CRC-32s
    as they are: a damaged one stays detectable) and move their index rows' offsets. The row keeps
    its key; the new header's base seq is its first stored record's."""
    last_seq, data = db.execute("SELECT last_seq, data FROM batches WHERE base_seq = ?", (batch_seq,)).fetchone()
    rows = db.execute(
        "SELECT seq, ts_ms, size, crc, batch_offset FROM messages WHERE seq >= ? AND seq <= ? AND batch_seq = ? "
        "ORDER BY seq",
        (batch_seq, last_seq, batch_seq),
    ).fetchall()
    if not rows:  # no record left in it (nothing to rewrite)
        db.execute("DELETE FROM batches WHERE base_seq = ?", (batch_seq,))
        return
    records: list[Record] = [(seq, ts_ms, "", size, crc, data[at : at + size]) for seq, ts_ms, size, crc, at in rows]
    compacted, offsets = stored_batch.encode(records)
    live_bytes = sum(size for _, _, size, _, _ in rows)
    db.execute(
        "UPDATE batches SET last_seq = ?, live_bytes = ?, data = ? WHERE base_seq = ?",
        (records[-1][0], live_bytes, compacted, batch_seq),
    )
    db.executemany(
        "UPDATE messages SET batch_offset = ? WHERE seq = ?",
        [(offset, record[0]) for record, offset in zip(records, offsets, strict=True)],
    )


def repair(db: sqlite3.Connection, repairs: Iterable[tuple[int, int, bytes]]) -> None:
    """Put (seq, crc, record) back in place where the index row still has checksum `crc` and the
    record's length (another copy's intact bytes over damaged ones)."""
    for seq, crc, record in repairs:
        row = db.execute("SELECT batch_seq, batch_offset, size FROM messages WHERE seq = ? AND crc = ?", (seq, crc))
        found = row.fetchone()
        if found is None or found[2] != len(record):
            continue
        with db.blobopen("batches", "data", found[0]) as blob:
            blob.seek(found[1])
            blob.write(record)


def fetch(reader: sqlite3.Connection, stream: str, partition: int, rows: Sequence[IndexRow]) -> list[tuple[int, bytes]]:
    """The verified (seq, record) of index `rows` (in seq order), each batch's records taken in one
    read of the span they lie in (a new read where MAX_SPAN_GAP_BYTES of other records lie between
    two: a filtered read loads little it does not return). Call within one read transaction with
    the select of `rows`. Errors: CorruptRecordError for a record failing its CRC-32 or missing
    from its batch."""
    result: list[tuple[int, bytes]] = []
    start = 0
    while start < len(rows):
        batch_seq = rows[start][2]
        end = start + 1
        while (
            end < len(rows)
            and rows[end][2] == batch_seq
            and rows[end][3] - (rows[end - 1][3] + rows[end - 1][4]) <= MAX_SPAN_GAP_BYTES
        ):
            end += 1
        first_offset = rows[start][3]
        span_end = rows[end - 1][3] + rows[end - 1][4]
        try:
            with reader.blobopen("batches", "data", batch_seq, readonly=True) as blob:
                blob.seek(first_offset)
                span = blob.read(span_end - first_offset)
        except (sqlite3.OperationalError, ValueError) as error:  # no such batch row, or offsets past it
            seq = rows[start][0]
            raise CorruptRecordError(
                f"stream {stream!r} partition {partition} seq {seq}: stored batch {batch_seq} is unreadable ({error})",
                stream=stream,
                partition=partition,
                seq=seq,
            ) from None
        for seq, crc, _, offset, size in rows[start:end]:
            at = offset - first_offset
            result.append((seq, verify(stream, partition, seq, span[at : at + size], crc)))
        start = end
    return result


def scrub(db: sqlite3.Connection, from_seq: int, max_bytes: int) -> ScrubPage:
    """A scrub step from `from_seq`: every stored record from there, about `max_bytes` of them (at
    least one), each checked against its CRC-32 within its batch, and each batch it reads checked
    whole (CRC32C): a batch whose CRC32C fails while every record of it passes its own is reported
    by its base seq (`ScrubPage.corrupt_batches`; a damaged record is reported as itself)."""
    checked = size = 0
    corrupt: list[int] = []
    damaged: list[int] = []
    next_seq = from_seq
    start = db.execute("SELECT batch_seq FROM messages WHERE seq >= ? ORDER BY seq LIMIT 1", (from_seq,)).fetchone()
    if start is None:
        return ScrubPage(0, 0, (), from_seq, done=True)
    batches = db.execute("SELECT base_seq, last_seq, data FROM batches WHERE base_seq >= ? ORDER BY base_seq", start)
    try:
        for base_seq, last_seq, data in batches:
            if _damaged_outside_records(db, base_seq, last_seq, data):
                damaged.append(base_seq)
            rows = db.execute(
                "SELECT seq, crc, batch_offset, size FROM messages WHERE seq >= ? AND seq <= ? AND batch_seq = ? "
                "ORDER BY seq",
                (max(from_seq, base_seq), last_seq, base_seq),
            ).fetchall()
            for seq, crc, offset, length in rows:
                checked += 1
                size += length
                if checksum(data[offset : offset + length]) != crc:
                    corrupt.append(seq)
                next_seq = seq + 1
                if size >= max_bytes:
                    return ScrubPage(checked, size, tuple(corrupt), next_seq, False, tuple(damaged))
    finally:
        batches.close()
    return ScrubPage(checked, size, tuple(corrupt), next_seq, True, tuple(damaged))


def _damaged_outside_records(db: sqlite3.Connection, base_seq: int, last_seq: int, data: bytes) -> bool:
    """Whether the stored batch `data` fails its CRC32C while each of its stored records passes its
    CRC-32: damage in its header, its entries or a removed record's bytes."""
    try:
        stored_batch.check(data)
    except stored_batch.StoredBatchError:
        rows = db.execute(
            "SELECT crc, batch_offset, size FROM messages WHERE seq >= ? AND seq <= ? AND batch_seq = ?",
            (base_seq, last_seq, base_seq),
        )
        return all(checksum(data[offset : offset + size]) == crc for crc, offset, size in rows)
    return False
