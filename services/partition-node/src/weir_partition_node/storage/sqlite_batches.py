"""The SQLite log's records as stored batches (`stored_batch.py`): the two tables, and the writes and
reads over them that `SqlitePartitionLog` makes.

- `batches`: one row a stored batch, keyed by its base seq (the rowid, so a read opens the blob
  and takes only the bytes it needs: `Connection.blobopen`).
- `messages`: the per-message index, one row a stored record: seq, ts_ms, subject, size, crc (the
  record's CRC-32), and its batch (`batch_seq`, the batch's base seq) and offset in it.

A batch row lives while any of its records does: a removal or a prefix truncation drops the index
rows, then every batch they touched that has no record left.
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
    data BLOB NOT NULL
)"""

# An index row as reads use it: (seq, crc, batch_seq, batch_offset, size).
IndexRow = tuple[int, int, int, int, int]
INDEX_COLUMNS = "seq, crc, batch_seq, batch_offset, size"
_IN_CHUNK = 500  # seqs per `IN (...)` list


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
        db.execute("INSERT INTO batches (base_seq, last_seq, data) VALUES (?, ?, ?)", (base_seq, chunk[-1][0], data))
        db.executemany(
            "INSERT INTO messages (seq, ts_ms, subject, size, crc, batch_seq, batch_offset) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (seq, ts_ms, subject, size, crc, base_seq, offset)
                for (seq, ts_ms, subject, size, crc, _), offset in zip(chunk, offsets, strict=True)
            ],
        )


def remove(db: sqlite3.Connection, seqs: Sequence[int]) -> None:
    """Remove the index rows of `seqs`, then the batches left without a record."""
    touched: set[int] = set()
    for start in range(0, len(seqs), _IN_CHUNK):
        chunk = seqs[start : start + _IN_CHUNK]
        marks = ",".join("?" * len(chunk))
        touched.update(
            row[0] for row in db.execute(f"SELECT DISTINCT batch_seq FROM messages WHERE seq IN ({marks})", chunk)
        )
    db.executemany("DELETE FROM messages WHERE seq = ?", [(seq,) for seq in seqs])
    _drop_emptied(db, touched)


def truncate(db: sqlite3.Connection, before_seq: int) -> None:
    """Remove every index row below `before_seq`, the batches wholly below it, and the batch it cuts
    through when that has no record left."""
    row = db.execute("SELECT batch_seq FROM messages WHERE seq < ? ORDER BY seq DESC LIMIT 1", (before_seq,)).fetchone()
    db.execute("DELETE FROM messages WHERE seq < ?", (before_seq,))
    db.execute("DELETE FROM batches WHERE base_seq < ? AND last_seq < ?", (before_seq, before_seq))
    if row is not None:
        _drop_emptied(db, {row[0]})


def _drop_emptied(db: sqlite3.Connection, batch_seqs: Iterable[int]) -> None:
    db.executemany(
        "DELETE FROM batches WHERE base_seq = ?1 AND NOT EXISTS "
        "(SELECT 1 FROM messages WHERE seq >= ?1 AND seq <= batches.last_seq AND batch_seq = ?1)",
        [(batch_seq,) for batch_seq in batch_seqs],
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
    read of the span they lie in. Errors: CorruptRecordError for a record failing its CRC-32 or
    missing from its batch. Call within one read transaction with the select of `rows`."""
    result: list[tuple[int, bytes]] = []
    start = 0
    while start < len(rows):
        batch_seq = rows[start][2]
        end = start + 1
        while end < len(rows) and rows[end][2] == batch_seq:
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
