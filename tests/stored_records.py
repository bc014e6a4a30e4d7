"""What a SQLite partition log's file holds, read and damaged the way a test needs: records are
stored in record batches (`weir_partition_node.storage.stored_batch`) with an index row each, so a
test reads a record's bytes through its index row and damages them in place, as a bad disk would."""

from __future__ import annotations

import sqlite3

# (seq, ts_ms, subject, size, crc, record)
StoredRow = tuple[int, int, str, int, int, bytes]


def stored_rows(db: sqlite3.Connection, seq: int | None = None) -> list[StoredRow]:
    """Every stored record (or the one at `seq`) with its index row, in seq order."""
    rows = db.execute(
        "SELECT m.seq, m.ts_ms, m.subject, m.size, m.crc, substr(b.data, m.batch_offset + 1, m.size) "
        "FROM messages m JOIN batches b ON b.base_seq = m.batch_seq WHERE ?1 IS NULL OR m.seq = ?1 ORDER BY m.seq",
        (seq,),
    ).fetchall()
    return [(seq, ts_ms, subject, size, crc, bytes(record)) for seq, ts_ms, subject, size, crc, record in rows]


def stored_record(db: sqlite3.Connection, seq: int) -> tuple[bytes, int]:
    """(the record's stored bytes, its stored CRC-32) at `seq`; AssertionError when not stored."""
    found = [(row[5], row[4]) for row in stored_rows(db, seq)]
    assert found, f"seq {seq} is not stored"
    return found[0]


def overwrite_stored_record(db: sqlite3.Connection, seq: int, data: bytes) -> None:
    """Put `data` (as long as the stored record) where the record at `seq` lies in its batch,
    leaving its CRC-32 as it was; the caller commits."""
    batch_seq, offset, size = db.execute(
        "SELECT batch_seq, batch_offset, size FROM messages WHERE seq = ?", (seq,)
    ).fetchone()
    assert len(data) == size, f"seq {seq}: {len(data)} bytes do not fit the stored {size}"
    with db.blobopen("batches", "data", batch_seq) as blob:
        blob.seek(offset)
        blob.write(data)


def flip_stored_bytes(
    db: sqlite3.Connection, seq: int, at: int | None = None, count: int = 1, mask: int = 0xFF
) -> None:
    """XOR `count` bytes of the stored record at `seq` from `at` (default: its middle) with `mask`."""
    record, _ = stored_record(db, seq)
    damaged = bytearray(record)
    start = len(damaged) // 2 if at is None else at
    for index in range(start, start + count):
        damaged[index] ^= mask
    overwrite_stored_record(db, seq, bytes(damaged))
