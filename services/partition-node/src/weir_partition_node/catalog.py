"""The node catalog: stream and consumer configs, their lifecycle changes and feed bookkeeping.

One SQLite database (``<data_dir>/catalog.sqlite``, WAL, synchronous=FULL) accessed through
aiosqlite: catalog writes are rare (create/update/delete stream, a change-seq lease every 10,000
changes), so an async connection with its own thread is simpler than the partitions' group commit
and costs nothing on the message path. Each lifecycle write stores the stream row and its change
entry in one transaction.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import aiosqlite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS streams (
    name TEXT PRIMARY KEY,
    config BLOB NOT NULL,
    created_at_ms INTEGER NOT NULL,
    placement BLOB
);
CREATE TABLE IF NOT EXISTS changes (
    change_seq INTEGER PRIMARY KEY,
    ts_ms INTEGER NOT NULL,
    record BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS consumers (
    stream TEXT NOT NULL,
    name TEXT NOT NULL,
    config BLOB NOT NULL,
    created_at_ms INTEGER NOT NULL,
    incarnation INTEGER NOT NULL,
    start_seqs TEXT NOT NULL,
    last_per_subject_until TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (stream, name)
);
"""


@dataclass(slots=True, frozen=True)
class ConsumerRow:
    """A consumer as the catalog stores it: config, creation time, incarnation (the change seq of
    its creation) and, per partition, the last_delivered it started from (its delivery policy) and,
    for DELIVER_POLICY_LAST_PER_SUBJECT, the partition's last seq at creation (empty otherwise)."""

    stream: str
    name: str
    config: bytes
    created_at_ms: int
    incarnation: int
    start_seqs: list[int]
    last_per_subject_until: list[int] = field(default_factory=list)


StoredChange = tuple[int, int, bytes]  # (change_seq, ts_ms, encoded weir.v1.Change)


def replica_epoch_key(stream: str, partition: int) -> str:
    return f"replica_epoch:{stream}:{partition}"


class Catalog:
    """All access goes through `_lock`: the connection is shared, and without the lock a statement
    of one coroutine (say, a change-seq lease) could run inside another's open transaction and be
    rolled back with it."""

    def __init__(self, db: aiosqlite.Connection, last_change_seq: int = 0) -> None:
        self._db = db
        self._lock = asyncio.Lock()
        self._pending: set[asyncio.Future[None]] = set()
        # The highest change seq committed into `changes`: feed readers skip the catalog (a query
        # on its connection's thread) when they start past it, which is the steady state.
        self.last_change_seq = last_change_seq

    @classmethod
    async def open(cls, path: Path) -> Catalog:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = await aiosqlite.connect(path, isolation_level=None)
        await db.execute("PRAGMA journal_mode=WAL")
        await db.execute("PRAGMA synchronous=FULL")
        await db.executescript(_SCHEMA)
        columns = {row[1] for row in await db.execute_fetchall("PRAGMA table_info(streams)")}
        if "placement" not in columns:  # a catalog written before clustering existed
            await db.execute("ALTER TABLE streams ADD COLUMN placement BLOB")
        columns = {row[1] for row in await db.execute_fetchall("PRAGMA table_info(consumers)")}
        if "last_per_subject_until" not in columns:  # a catalog written before that delivery policy
            await db.execute("ALTER TABLE consumers ADD COLUMN last_per_subject_until TEXT NOT NULL DEFAULT '[]'")
        rows = list(await db.execute_fetchall("SELECT coalesce(max(change_seq), 0) FROM changes"))
        return cls(db, int(rows[0][0]))

    async def close(self) -> None:
        await self._db.close()

    async def load_streams(self) -> list[tuple[str, bytes, int, bytes | None]]:
        """(name, config, created_at_ms, placement or None when standalone) per stream."""
        async with self._lock:
            rows = await self._db.execute_fetchall(
                "SELECT name, config, created_at_ms, placement FROM streams ORDER BY name"
            )
        return [
            (str(name), bytes(config), int(created), bytes(placement) if placement is not None else None)
            for name, config, created, placement in rows
        ]

    async def get_meta(self, key: str, default: int = 0) -> int:
        async with self._lock:
            rows = list(await self._db.execute_fetchall("SELECT value FROM meta WHERE key = ?", (key,)))
        return int(rows[0][0]) if rows else default

    async def set_meta(self, key: str, value: int) -> None:
        async with self._lock:
            await self._db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    async def max_change_seq(self) -> int:
        async with self._lock:
            rows = list(await self._db.execute_fetchall("SELECT coalesce(max(change_seq), 0) FROM changes"))
        return int(rows[0][0])

    async def _transaction(self, statements: list[tuple[str, tuple[object, ...] | list[tuple[object, ...]]]]) -> None:
        """Run `statements` in one transaction. Shielded from the caller's cancellation: a cancelled
        RPC must not leave the shared connection inside an open transaction (every later catalog
        write would then fail); the transaction finishes (or rolls back) on its own."""
        task = asyncio.ensure_future(self._run_transaction(statements))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)
        await asyncio.shield(task)

    async def _run_transaction(
        self, statements: list[tuple[str, tuple[object, ...] | list[tuple[object, ...]]]]
    ) -> None:
        db = self._db
        async with self._lock:
            await db.execute("BEGIN IMMEDIATE")
            try:
                for sql, parameters in statements:
                    if isinstance(parameters, list):
                        await db.executemany(sql, parameters)
                    else:
                        await db.execute(sql, parameters)
                await db.execute("COMMIT")
            except BaseException:
                await db.execute("ROLLBACK")
                raise
            for sql, parameters in statements:
                if "INTO changes" in sql:  # (change_seq, ts_ms, record) rows
                    rows = parameters if isinstance(parameters, list) else [parameters]
                    self.last_change_seq = max(self.last_change_seq, *(cast(int, row[0]) for row in rows))

    async def create_stream(
        self, name: str, config: bytes, created_at_ms: int, change: StoredChange, placement: bytes | None = None
    ) -> None:
        await self._transaction(
            [
                (
                    "INSERT INTO streams (name, config, created_at_ms, placement) VALUES (?, ?, ?, ?)",
                    (name, config, created_at_ms, placement),
                ),
                ("INSERT INTO changes (change_seq, ts_ms, record) VALUES (?, ?, ?)", change),
            ]
        )

    async def set_replica_state(self, name: str, placement: bytes, replica_epochs: dict[int, int]) -> None:
        """Store a stream's new placement and, per hosted partition, the leader epoch its log is now
        a prefix of (`meta` keys ``replica_epoch:<stream>:<partition>``), in one transaction."""
        await self._transaction(
            [
                ("UPDATE streams SET placement = ? WHERE name = ?", (placement, name)),
                (
                    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    [(replica_epoch_key(name, index), epoch) for index, epoch in replica_epochs.items()],
                ),
            ]
        )

    async def replica_epochs(self, name: str) -> dict[int, int]:
        """The stored replica epoch per partition of a stream (absent: never set)."""
        prefix = replica_epoch_key(name, 0)[:-1]
        async with self._lock:
            rows = await self._db.execute_fetchall(
                "SELECT key, value FROM meta WHERE key >= ? AND key < ?", (prefix, prefix + "\uffff")
            )
        return {int(str(key)[len(prefix) :]): int(value) for key, value in rows if str(key)[len(prefix) :].isdigit()}

    async def forget_replica_epochs(self, name: str, partitions: int) -> None:
        await self._transaction(
            [("DELETE FROM meta WHERE key = ?", [(replica_epoch_key(name, index),) for index in range(partitions)])]
        )

    async def update_stream(self, name: str, config: bytes, change: StoredChange) -> None:
        await self._transaction(
            [
                ("UPDATE streams SET config = ? WHERE name = ?", (config, name)),
                ("INSERT INTO changes (change_seq, ts_ms, record) VALUES (?, ?, ?)", change),
            ]
        )

    async def delete_stream(self, name: str, archived: list[StoredChange], change: StoredChange) -> None:
        """Remove the stream; keep its partitions' retained changes (`archived`) in the catalog so
        feed readers that have not reached them yet still see them."""
        statements: list[tuple[str, tuple[object, ...] | list[tuple[object, ...]]]] = [
            ("DELETE FROM streams WHERE name = ?", (name,)),
            ("DELETE FROM consumers WHERE stream = ?", (name,)),
            ("INSERT INTO changes (change_seq, ts_ms, record) VALUES (?, ?, ?)", change),
        ]
        if archived:
            statements.append(
                ("INSERT OR IGNORE INTO changes (change_seq, ts_ms, record) VALUES (?, ?, ?)", list(archived))
            )
        await self._transaction(statements)

    async def load_consumers(self) -> list[ConsumerRow]:
        async with self._lock:
            rows = await self._db.execute_fetchall(
                "SELECT stream, name, config, created_at_ms, incarnation, start_seqs, last_per_subject_until "
                "FROM consumers ORDER BY stream, name"
            )
        return [
            ConsumerRow(
                str(stream),
                str(name),
                bytes(config),
                int(created),
                int(incarnation),
                json.loads(starts),
                json.loads(until),
            )
            for stream, name, config, created, incarnation, starts, until in rows
        ]

    async def create_consumer(self, row: ConsumerRow, change: StoredChange) -> None:
        await self._transaction(
            [
                (
                    "INSERT INTO consumers (stream, name, config, created_at_ms, incarnation, start_seqs, "
                    "last_per_subject_until) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (
                        row.stream,
                        row.name,
                        row.config,
                        row.created_at_ms,
                        row.incarnation,
                        json.dumps(row.start_seqs),
                        json.dumps(row.last_per_subject_until),
                    ),
                ),
                ("INSERT INTO changes (change_seq, ts_ms, record) VALUES (?, ?, ?)", change),
            ]
        )

    async def delete_consumer(self, stream: str, name: str, change: StoredChange) -> None:
        await self._transaction(
            [
                ("DELETE FROM consumers WHERE stream = ? AND name = ?", (stream, name)),
                ("INSERT INTO changes (change_seq, ts_ms, record) VALUES (?, ?, ?)", change),
            ]
        )

    async def add_change(self, change: StoredChange) -> None:
        """Store a change that changes nothing else here (a storage finding)."""
        await self._transaction([("INSERT INTO changes (change_seq, ts_ms, record) VALUES (?, ?, ?)", change)])

    async def read_changes(self, from_change_seq: int, to_change_seq: int, limit: int) -> list[tuple[int, bytes]]:
        async with self._lock:
            rows = await self._db.execute_fetchall(
                "SELECT change_seq, record FROM changes WHERE change_seq >= ? AND change_seq <= ? "
                "ORDER BY change_seq LIMIT ?",
                (min(from_change_seq, 2**63 - 1), min(to_change_seq, 2**63 - 1), limit),
            )
        return [(int(seq), bytes(record)) for seq, record in rows]

    async def drop_changes_before(self, change_seq: int) -> None:
        async with self._lock:
            await self._db.execute("DELETE FROM changes WHERE change_seq < ?", (change_seq,))
