"""How a partition log remembers the resolution of its held records (`CommitBatch.held_resolutions`).

A held record (a transaction's half message, scheduled.py) waits until ReleaseScheduled delivers it
(RocketMQ's commit) or discards it (rollback); either way the record leaves the log. So that a later,
contradicting resolution can be told apart from a repeat (RocketMQ's EndTransaction: a conflicting
second one is refused, a repeated one answered as the first), each copy keeps one row per held
record: (held_seq, delivered_seq, resolved_at_ms), delivered_seq UNRESOLVED (-1) from the commit that
stores the held record, then the seq it was delivered at (commit) or 0 (rollback) from the commit
that delivers or removes it; the first resolution stands. A secondary resolves its row as it copies
the delivery (the delivered record names its held record in `scheduled_seq`) or the removal (reason
"discarded"); the unresolved row tells it the seq was a held record even when a prefix cut took the
record before either came. So the resolution is as durable as the delivery or removal, on every
copy, and a new primary after a failover answers as the old one did.

A divergent tail's cut (`CommitBatch.msg_ids_after`) drops the rows of held records and deliveries
it cut. A copy keeps the newest KEPT_ROWS rows (by held_seq); an older resolution is forgotten
(ReleaseScheduled then answers no_such_message, as before this table). `SqliteHeldResolutions`
keeps them in the SQLite log's `held_resolutions` table (created on open: an earlier log opens with
none); the memory log keeps the same rows in a dict (`merged`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from weir_partition_node.storage.base import CommitBatch, HeldResolution, HeldResolutionRow

UNRESOLVED = -1  # delivered_seq of a held record not resolved yet
KEPT_ROWS = 65_536  # resolutions a copy keeps per partition (the oldest go as newer ones come)
PRUNE_EVERY_ROWS = 1024  # the SQLite table is trimmed to KEPT_ROWS after this many new rows

TABLE = """CREATE TABLE IF NOT EXISTS held_resolutions (
    held_seq INTEGER PRIMARY KEY,
    delivered_seq INTEGER NOT NULL,
    resolved_at_ms INTEGER NOT NULL
) WITHOUT ROWID"""


def _kept(row_key: int, row: tuple[int, int], cut_after: int | None) -> bool:
    """Whether a row outlives a divergent tail's cut after `cut_after` (None: no cut)."""
    delivered_seq = row[0]
    if cut_after is None:
        return True
    return delivered_seq <= cut_after and (delivered_seq != UNRESOLVED or row_key <= cut_after)


def merged(
    stored: dict[int, tuple[int, int]], rows: Iterable[HeldResolutionRow], cut_after: int | None
) -> dict[int, tuple[int, int]]:
    """`stored` (held_seq -> (delivered_seq, resolved_at_ms)) after a commit: the rows a cut after
    `cut_after` takes dropped (None: no cut), `rows` added (a resolved row stays as it is; an
    unresolved one takes a resolution), the newest KEPT_ROWS kept. Pure; returns a new mapping."""
    result = {held: row for held, row in stored.items() if _kept(held, row, cut_after)}
    for held_seq, delivered_seq, resolved_at_ms in rows:
        if result.get(held_seq, (UNRESOLVED, 0))[0] == UNRESOLVED:
            result[held_seq] = (delivered_seq, resolved_at_ms)
    if len(result) > KEPT_ROWS:
        result = dict(sorted(result.items())[-KEPT_ROWS:])
    return result


class SqliteHeldResolutions:
    """The rows in the SQLite log's `held_resolutions` table (writes on the commit thread)."""

    def __init__(self) -> None:
        self._since_prune = 0

    @staticmethod
    def get(db: sqlite3.Connection, held_seq: int) -> HeldResolution | None:
        row = db.execute(
            "SELECT delivered_seq, resolved_at_ms FROM held_resolutions WHERE held_seq = ?", (held_seq,)
        ).fetchone()
        return None if row is None else HeldResolution(int(row[0]), int(row[1]))

    def store(self, db: sqlite3.Connection, batch: CommitBatch) -> None:
        """The batch's rows, inside the caller's transaction (see `merged` for the rules)."""
        if batch.msg_ids_after is not None:
            db.execute(
                "DELETE FROM held_resolutions WHERE delivered_seq > ?1 OR (delivered_seq = ?2 AND held_seq > ?1)",
                (batch.msg_ids_after, UNRESOLVED),
            )
        if not batch.held_resolutions:
            return
        db.executemany(
            "INSERT INTO held_resolutions (held_seq, delivered_seq, resolved_at_ms) VALUES (?, ?, ?) "
            "ON CONFLICT (held_seq) DO UPDATE SET delivered_seq = excluded.delivered_seq, "
            f"resolved_at_ms = excluded.resolved_at_ms WHERE held_resolutions.delivered_seq = {UNRESOLVED}",
            batch.held_resolutions,
        )
        self._since_prune += len(batch.held_resolutions)
        if self._since_prune >= PRUNE_EVERY_ROWS:
            self._since_prune = 0
            db.execute(
                "DELETE FROM held_resolutions WHERE held_seq < "
                "(SELECT held_seq FROM held_resolutions ORDER BY held_seq DESC LIMIT 1 OFFSET ?)",
                (KEPT_ROWS - 1,),
            )
