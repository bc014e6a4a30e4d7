"""The node's change feed: change seq allocation, the committed horizon, and waiting for changes.

Every mutation on a node (append, truncate, removal, stream create/update/delete; consumer changes
later) is stored with a node-wide `change_seq`, in the same transaction as the mutation itself (the
partition's database for partition changes, the catalog for stream lifecycle). Partitions commit
concurrently, so change seqs can commit out of order; readers therefore read only up to the
**horizon**: the highest seq below which every allocated seq has settled (committed or failed). A
reader that stops at the horizon never skips a change that commits later.

Allocation is leased from the catalog in blocks (`reserve`), so seqs handed out before a crash are
never handed out again after it, even for memory streams whose changes are not persisted. Gaps in
the seq are therefore possible (failed commits, restarts); order and uniqueness are not broken.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from weir.v1 import types_pb2

RESERVE_BLOCK = 10_000
# The change kinds a partition's log records (the others are stream lifecycle, in the catalog).
PARTITION_KINDS = frozenset({"append", "truncate", "remove", "consumer_state", "storage_finding"})


@dataclass(frozen=True, slots=True)
class ChangeFilter:
    """Which changes a read of the feed returns (TailChangesRequest `stream`, `partition`,
    `exclude_appends`). Pure: the node asks it which partition logs to read at all and which stored
    change records to keep; the default keeps everything without decoding a record.

    - `stream`: "" = every stream; else that stream's lifecycle changes (kept from the catalog) and
      its partitions' changes.
    - `partition`: None = every partition of the stream; else only that partition's changes (the
      stream's lifecycle changes still pass). Needs `stream`.
    - `exclude_appends`: leave out AppendChange records."""

    stream: str = ""
    partition: int | None = None
    exclude_appends: bool = False

    def __post_init__(self) -> None:
        if self.partition is not None and not self.stream:
            raise ValueError("a partition filter needs a stream")

    def reads_partition(self, stream: str, partition: int) -> bool:
        """Whether `stream`/`partition`'s log can hold a change this filter keeps."""
        if self.stream and stream != self.stream:
            return False
        return self.partition is None or partition == self.partition

    def keeps(self, change: types_pb2.Change) -> bool:
        """Whether the filter keeps `change` (decoded): the whole rule, for records whose origin
        says nothing (the catalog holds lifecycle changes and a deleted stream's archived ones)."""
        if self.stream and change.stream != self.stream:
            return False
        kind = change.WhichOneof("kind")
        if self.exclude_appends and kind == "append":
            return False
        return self.partition is None or kind not in PARTITION_KINDS or change.partition == self.partition

    def record_check(self, *, from_partition_log: bool) -> Callable[[bytes], bool] | None:
        """What decides on a stored change record, or None when every record read passes (no
        decoding). A partition log that `reads_partition` chose already matches the stream and
        partition, so its records need decoding only to leave out appends; catalog records
        (lifecycle, and a deleted stream's archived changes) need the whole rule."""
        needed = self.exclude_appends if from_partition_log else self != EVERY_CHANGE
        if not needed:
            return None
        return lambda record: self.keeps(types_pb2.Change.FromString(record))


EVERY_CHANGE = ChangeFilter()


class ChangeFeedClock:
    """Allocates change seqs and tracks the horizon. Single event loop; not thread-safe."""

    def __init__(self, next_change_seq: int, reserved_through: int, reserve: Callable[[int], Awaitable[None]]) -> None:
        assert next_change_seq >= 1
        self._next = next_change_seq
        self._reserved_through = reserved_through
        self._reserve = reserve
        self._reserve_lock = asyncio.Lock()
        self._in_flight: set[int] = set()
        self._horizon = next_change_seq - 1
        # The watermark (`watermark_ms`): the change times of commits that may still allocate or
        # settle change seqs (token -> ts_ms), and of allocated, unsettled seqs given a time.
        self._open_commits: dict[int, int] = {}
        self._commit_tokens = itertools.count(1)
        self._seq_times: dict[int, int] = {}
        self._changed = asyncio.get_running_loop().create_future()

    @property
    def horizon(self) -> int:
        """Every change seq <= horizon has settled."""
        return self._horizon

    def open_commit(self, ts_ms: int) -> int:
        """A commit whose changes will carry `ts_ms` begins (call it in the same step that reads the
        clock): until `close_commit(token)`, after its seqs are settled, the watermark stays at or
        below `ts_ms`. Returns the token."""
        token = next(self._commit_tokens)
        self._open_commits[token] = ts_ms
        return token

    def close_commit(self, token: int) -> None:
        self._open_commits.pop(token, None)

    def watermark_ms(self, now_ms: int) -> int:
        """A time such that every change of this node with ts_ms below it has a change seq at or
        below the horizon read at the same moment (or later): `now_ms` (the node's clock now), or
        the time of the oldest commit still in progress. Analytics reports a window only once every
        node's watermark passed its end."""
        return min((now_ms, *self._open_commits.values(), *self._seq_times.values()))

    async def allocate(self, count: int, ts_ms: int | None = None) -> list[int]:
        """`count` fresh change seqs; each must later be `settle`d exactly once. `ts_ms`: the time
        the caller gives these changes, when no `open_commit` covers them (held in the watermark
        from now until they settle)."""
        token = self.open_commit(ts_ms) if ts_ms is not None else None
        try:
            seqs = await self._allocate(count)
        finally:
            if token is not None:
                self.close_commit(token)
        if ts_ms is not None:
            self._seq_times.update(dict.fromkeys(seqs, ts_ms))
        return seqs

    async def _allocate(self, count: int) -> list[int]:
        while self._next + count - 1 > self._reserved_through:
            async with self._reserve_lock:
                if self._next + count - 1 > self._reserved_through:
                    target = self._next + count - 1 + RESERVE_BLOCK
                    await self._reserve(target)
                    self._reserved_through = target
        seqs = list(range(self._next, self._next + count))
        self._next += count
        self._in_flight.update(seqs)
        return seqs

    def settle(self, seqs: Iterable[int]) -> None:
        """Mark seqs committed (or abandoned after a failed commit) and advance the horizon."""
        for seq in seqs:
            self._in_flight.discard(seq)
            self._seq_times.pop(seq, None)
        horizon = min(self._in_flight) - 1 if self._in_flight else self._next - 1
        if horizon > self._horizon:
            self._horizon = horizon
            changed, self._changed = self._changed, asyncio.get_running_loop().create_future()
            changed.set_result(None)

    async def wait_past(self, change_seq: int, timeout_s: float) -> bool:
        """Wait until the horizon is past `change_seq` (or `timeout_s`); True if it is."""
        if self._horizon > change_seq:
            return True
        try:
            async with asyncio.timeout(timeout_s):
                while self._horizon <= change_seq:
                    await asyncio.shield(self._changed)
        except TimeoutError:
            return False
        return True

    def wake_all(self) -> None:
        """Wake every waiter (used at shutdown so tails can end)."""
        changed, self._changed = self._changed, asyncio.get_running_loop().create_future()
        changed.set_result(None)
