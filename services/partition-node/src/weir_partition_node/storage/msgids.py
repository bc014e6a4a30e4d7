"""How a partition log stores its duplicate-window rows (`CommitBatch.msg_ids`; see `dedupe.py`).

One stored row per commit (per stored-at time within a commit, in fact always one), holding every
(seq, msg_id) the commit stored as one `weir.v1.MsgIdBatch`: a row per message cost a B-tree
insert and later a delete per message, about 2 µs each here, a fifth of a replicas-1 publish, and
the protobuf codec packs and unpacks a row 2-3 times faster than struct calls per entry
(0.15 µs an id against 0.36 to pack, 0.15 against 0.52 to unpack). `group` and `rows_of` make the
rows, `pack` and `unpack` their blob, `trimmed` what is left of a row when a cut (divergent tail,
count bound) goes through it, `check_appended` the rule that rows only ever extend the stored
ones; `SqliteMsgIdRows` keeps them in the SQLite log's `msg_id_rows` table (the memory log keeps
the same rows in a list).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from weir.v1 import types_pb2
from weir_partition_node.storage.base import SQLITE_MAX_INTEGER, CommitBatch


@dataclass(slots=True)
class MsgIdRow:
    """Ids one commit stored at `stored_at_ms`, `entries` = (seq, msg_id) ascending by seq."""

    stored_at_ms: int
    entries: list[tuple[int, str]]

    @property
    def first_seq(self) -> int:
        return self.entries[0][0]

    @property
    def last_seq(self) -> int:
        return self.entries[-1][0]


def group(msg_ids: Sequence[tuple[int, str, int]]) -> list[MsgIdRow]:
    """(seq, msg_id, stored_at_ms) triples, ascending by seq, as rows (one per run of equal times)."""
    if msg_ids and msg_ids[0][2] == msg_ids[-1][2]:  # one commit's ids: one time, one row
        return [MsgIdRow(msg_ids[0][2], [(seq, msg_id) for seq, msg_id, _ in msg_ids])]
    rows: list[MsgIdRow] = []
    for seq, msg_id, stored_at_ms in msg_ids:
        if not rows or rows[-1].stored_at_ms != stored_at_ms:
            rows.append(MsgIdRow(stored_at_ms, []))
        rows[-1].entries.append((seq, msg_id))
    return rows


# One row as the SQLite log inserts it: (last_seq, first_seq, stored_at_ms, count, blob).
StoredRow = tuple[int, int, int, int, bytes]


def rows_of(msg_ids: Sequence[tuple[int, str, int]], stored_through: int) -> list[StoredRow]:
    """A commit's (seq, msg_id, stored_at_ms) triples as stored rows, after `check_appended`
    (the common case, one time for all, builds the blob straight from the triples)."""
    seqs = [seq for seq, _, _ in msg_ids]
    check_appended(seqs, stored_through)
    stored_at_ms = msg_ids[0][2]
    if stored_at_ms == msg_ids[-1][2]:
        blob = types_pb2.MsgIdBatch(seqs=seqs, msg_ids=[msg_id for _, msg_id, _ in msg_ids]).SerializeToString()
        return [(seqs[-1], seqs[0], stored_at_ms, len(seqs), blob)]
    return [
        (row.last_seq, row.first_seq, row.stored_at_ms, len(row.entries), pack(row.entries)) for row in group(msg_ids)
    ]


def check_appended(seqs: Sequence[int], stored_through: int) -> None:
    """New ids must follow every stored one (`stored_through`: the highest stored seq), in
    ascending order: a seq given a second id is a bug, so the commit fails (ValueError) rather than
    store it."""
    if not seqs:
        return
    if seqs[0] <= stored_through or not all(map(int.__lt__, seqs, seqs[1:])):
        raise ValueError(f"msg_id rows: seqs {list(seqs[:5])}... do not all follow seq {stored_through} in order")


def pack(entries: Sequence[tuple[int, str]]) -> bytes:
    return types_pb2.MsgIdBatch(
        seqs=[seq for seq, _ in entries], msg_ids=[msg_id for _, msg_id in entries]
    ).SerializeToString()


def unpack(blob: bytes) -> list[tuple[int, str]]:
    batch = types_pb2.MsgIdBatch.FromString(blob)
    return list(zip(batch.seqs, batch.msg_ids, strict=True))


def trimmed(row: MsgIdRow, *, keep_through: int | None = None, drop_oldest: int = 0) -> MsgIdRow | None:
    """`row` without its entries above `keep_through` and without its `drop_oldest` first entries;
    None when nothing is left."""
    entries = row.entries[drop_oldest:]
    if keep_through is not None:
        entries = [entry for entry in entries if entry[0] <= keep_through]
    return MsgIdRow(row.stored_at_ms, entries) if entries else None


class SqliteMsgIdRows:
    """The `msg_id_rows` table of a `SqlitePartitionLog`: `store` runs on the commit thread inside
    the commit's transaction, `recent` on the log's reader connection."""

    def __init__(self) -> None:
        self._count: int | None = None  # ids stored (None = not counted yet)

    def forget_count(self) -> None:
        self._count = None

    def store(self, db: sqlite3.Connection, batch: CommitBatch) -> None:
        """The duplicate-window part of a commit (see `CommitBatch`), inside its transaction; keeps
        the count of stored ids exact."""
        if self._count is None:
            (self._count,) = db.execute("SELECT coalesce(sum(count), 0) FROM msg_id_rows").fetchone()
        if batch.msg_ids_after is not None:
            after = min(batch.msg_ids_after, SQLITE_MAX_INTEGER)
            self._count -= _deleted(db, "DELETE FROM msg_id_rows WHERE first_seq > ? RETURNING count", (after,))
            for row in self._rows(db, "WHERE last_seq > ?", (after,)):  # at most one goes through the cut
                self._replace_row(db, row, trimmed(row, keep_through=after))
        if batch.msg_ids:
            (high,) = db.execute("SELECT coalesce(max(last_seq), 0) FROM msg_id_rows").fetchone()
            db.executemany(
                "INSERT INTO msg_id_rows (last_seq, first_seq, stored_at_ms, count, ids) VALUES (?, ?, ?, ?, ?)",
                rows_of(batch.msg_ids, high),
            )
            self._count += len(batch.msg_ids)
        if batch.msg_id_retention is not None:
            stored_before_ms, max_ids = batch.msg_id_retention
            # Rows are in seq order and, nearly always, in time order: cut below the oldest row still
            # inside the window (the scan stops there, so it costs what it removes).
            self._count -= _deleted(
                db,
                "DELETE FROM msg_id_rows WHERE last_seq < coalesce((SELECT last_seq FROM msg_id_rows "
                "WHERE stored_at_ms >= ? ORDER BY last_seq LIMIT 1), ?) RETURNING count",
                (stored_before_ms, SQLITE_MAX_INTEGER),
            )
            excess = self._count - max_ids
            if excess > 0:
                self._drop_oldest(db, excess)

    def _drop_oldest(self, db: sqlite3.Connection, excess: int) -> None:
        """Remove the `excess` oldest ids: whole rows without unpacking them, then the start of the
        row the cut goes through."""
        assert self._count is not None
        whole: list[tuple[int]] = []
        removed = 0
        partial: int | None = None
        cursor = db.execute("SELECT last_seq, count FROM msg_id_rows ORDER BY last_seq")
        try:
            for last_seq, count in cursor:
                if excess < count:
                    partial = last_seq
                    break
                whole.append((last_seq,))
                removed += count
                excess -= count
                if excess == 0:
                    break
        finally:
            cursor.close()
        if whole:
            db.executemany("DELETE FROM msg_id_rows WHERE last_seq = ?", whole)
            self._count -= removed
        if partial is not None and excess > 0:
            (row,) = self._rows(db, "WHERE last_seq = ?", (partial,))
            self._replace_row(db, row, trimmed(row, drop_oldest=excess))

    @staticmethod
    def _rows(db: sqlite3.Connection, where: str, args: tuple[int, ...]) -> list[MsgIdRow]:
        return [
            MsgIdRow(stored_at_ms, unpack(ids))
            for stored_at_ms, ids in db.execute(f"SELECT stored_at_ms, ids FROM msg_id_rows {where}", args).fetchall()
        ]

    def _replace_row(self, db: sqlite3.Connection, row: MsgIdRow, replacement: MsgIdRow | None) -> None:
        """Put `replacement` (what a cut left of `row`) in `row`'s place; None removes it."""
        assert self._count is not None
        db.execute("DELETE FROM msg_id_rows WHERE last_seq = ?", (row.last_seq,))
        self._count -= len(row.entries)
        if replacement is not None:
            db.execute(
                "INSERT INTO msg_id_rows (last_seq, first_seq, stored_at_ms, count, ids) VALUES (?, ?, ?, ?, ?)",
                (
                    replacement.last_seq,
                    replacement.first_seq,
                    replacement.stored_at_ms,
                    len(replacement.entries),
                    pack(replacement.entries),
                ),
            )
            self._count += len(replacement.entries)

    @staticmethod
    def recent(reader: sqlite3.Connection, stored_since_ms: int, limit: int) -> list[tuple[str, int, int]]:
        """As `PartitionLog.recent_msg_ids`: the newest rows first, read only as far as needed."""
        newest: list[tuple[str, int, int]] = []
        rows = reader.execute(
            "SELECT stored_at_ms, ids FROM msg_id_rows WHERE stored_at_ms >= ? ORDER BY last_seq DESC",
            (stored_since_ms,),
        )
        try:
            for stored_at_ms, ids in rows:
                for seq, msg_id in reversed(unpack(ids)):
                    newest.append((msg_id, seq, stored_at_ms))
                    if len(newest) >= limit:
                        return newest[::-1]
        finally:
            rows.close()
        return newest[::-1]


def _deleted(db: sqlite3.Connection, delete_returning_count: str, args: tuple[int, ...]) -> int:
    """Run a DELETE ... RETURNING count on msg_id_rows; the ids the removed rows held."""
    return sum(count for (count,) in db.execute(delete_returning_count, args).fetchall())
