"""The upgrade of a SQLite log written one row per message (before issue 25) to stored batches.

Before issue 25 every record was a row of `messages` with its bytes in a `record` column. A log
opened in that layout is upgraded in place, in one transaction, when it is opened: its records are
read in seq order and stored again as record batches (`sqlite_batches.write_records`, a batch per
`UPGRADE_BATCH_RECORDS` records) with their index rows, and the old table goes. A crash in between
leaves the old layout whole (the transaction rolls back) and the next open upgrades again. Each
record keeps its stored CRC-32, so a record that was damaged before the upgrade is still found
(and served as DATA_LOSS) after it. Progress is logged every `LOG_EVERY_RECORDS` records.
"""

from __future__ import annotations

import logging
import sqlite3
import time

from weir_partition_node.storage import sqlite_batches
from weir_partition_node.storage.base import Record

logger = logging.getLogger(__name__)

UPGRADE_BATCH_RECORDS = 1000
LOG_EVERY_RECORDS = 100_000


def needs_upgrade(db: sqlite3.Connection) -> bool:
    """Whether the log in `db` stores its records one row per message (the old layout)."""
    return any(row[1] == "record" for row in db.execute("PRAGMA table_info(messages)"))


def upgrade(db: sqlite3.Connection, name: str) -> int:
    """Upgrade the log in `db` (autocommit mode, the log's writer) to stored batches when it is in
    the old layout; how many records were moved (0: nothing to do). `name` is for the log lines."""
    if not needs_upgrade(db):
        return 0
    (total,) = db.execute("SELECT count(*) FROM messages").fetchone()
    logger.info("upgrading log %s to record batches: %d records", name, total)
    started = time.monotonic()
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("DROP INDEX IF EXISTS messages_by_subject")
        db.execute("ALTER TABLE messages RENAME TO messages_rows")
        db.execute(sqlite_batches.MESSAGES_TABLE)
        db.execute(sqlite_batches.BATCHES_TABLE)
        moved = _move_records(db, name, total)
        db.execute("DROP TABLE messages_rows")
        db.execute(sqlite_batches.MESSAGES_BY_SUBJECT)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    logger.info("upgraded log %s: %d records in %.1f s", name, moved, time.monotonic() - started)
    return moved


def _move_records(db: sqlite3.Connection, name: str, total: int) -> int:
    moved = 0
    after = -1
    while True:
        chunk: list[Record] = db.execute(
            "SELECT seq, ts_ms, subject, size, crc, record FROM messages_rows WHERE seq > ? ORDER BY seq LIMIT ?",
            (after, UPGRADE_BATCH_RECORDS),
        ).fetchall()
        if not chunk:
            return moved
        sqlite_batches.write_records(db, chunk)
        after = chunk[-1][0]
        previous, moved = moved, moved + len(chunk)
        if moved // LOG_EVERY_RECORDS > previous // LOG_EVERY_RECORDS:
            logger.info("upgrading log %s: %d of %d records", name, moved, total)
