"""The duplicate window of one partition: which message ids it stored recently, and at which seq.

Source: JetStream's duplicate window (`Nats-Msg-Id`, `duplicate_window`, default 2 minutes) and
Kafka's idempotent producer. A publish that carries a `msg_id` the window holds is not stored again;
it is answered with the original seq and `duplicate = true`.

Where it lives: every copy of a partition stores `(seq, msg_id, stored_at_ms)` rows in its log, in
the same commit as the records (the primary when it appends, a secondary when it applies the
primary's records, which carry the id), so the window survives a restart and moves with
leadership. Only the primary keeps this in-memory index of the rows, built from the log's newest
rows when it first needs it (`DuplicateWindow.load`), and dropped when it stops leading. The
primary claims an id when it decides the append, before the commit is durable: a later entry of
the same commit is then a duplicate too, and a commit that fails leaves the partition refusing
writes until a restart rebuilds the window from storage.

The bounds, whichever is reached first: ids stored `window_ms` or more ago are forgotten, and the
newest `max_msgs` ids are remembered; both act on whole groups (the ids stored at one time, which
is one commit), oldest first, so up to one commit's ids more may be remembered (at most 2,000).

The index is a plain dict msg_id -> seq plus the groups (first seq, time, member ids) in order: a
claim costs one dict lookup and one store (an ordered map, or a dict used as a queue, cost two to
three times as much per message on the publish path). Forgetting a group moves the floor below
which a seq no longer counts and deletes its members' entries (those a later group did not claim
again), a group's worth of work at a time: a rebuild of the whole dict instead stalled one commit
for 25-30 ms at 100,000 ids. About 150 bytes an id.

Pure and single-threaded (the partition's commit loop owns it); times are the caller's clock in
milliseconds; seqs are claimed in increasing order (a primary's appends).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

MAX_MSG_ID_BYTES = 256


class DuplicateWindow:
    """msg_id -> seq for the ids a partition stored within the window. See the module docstring."""

    __slots__ = (
        "_at",
        "_counts",
        "_firsts",
        "_floor",
        "_head",
        "_ids",
        "_last",
        "_members",
        "_total",
        "max_msgs",
        "window_ms",
    )

    def __init__(self, window_ms: int, max_msgs: int) -> None:
        self.window_ms = window_ms
        self.max_msgs = max_msgs
        self._ids: dict[str, int] = {}
        # The groups, oldest first, from index _head on: first seq, stored-at time, ids claimed (a
        # count, and the ids: an id claimed again later is in two groups, its entry the later one's).
        self._firsts: list[int] = []
        self._at: list[int] = []
        self._counts: list[int] = []
        self._members: list[list[str]] = []
        self._head = 0
        self._total = 0  # ids claimed in the live groups
        self._floor = 0  # seqs below this are forgotten
        self._last = 0  # the highest seq remembered

    def __len__(self) -> int:
        """Ids remembered (claims in the groups still inside the bounds)."""
        return self._total

    def load(self, rows: Iterable[tuple[str, int, int]], now_ms: int) -> None:
        """Add stored `(msg_id, seq, stored_at_ms)` rows, oldest first, then apply the bounds."""
        for msg_id, seq, stored_at_ms in rows:
            self.add(msg_id, seq, stored_at_ms)
        self.expire(now_ms)

    def open_group(self, first_seq: int, now_ms: int) -> None:
        """Start the group of ids a commit stores at `now_ms` from `first_seq` on (the next seq it
        would give). Claims follow, then `close_group` with how many were remembered."""
        if self._head < len(self._at) and self._at[-1] == now_ms:
            return  # the same time as the last group: it goes on
        self._firsts.append(first_seq)
        self._at.append(now_ms)
        self._counts.append(0)
        self._members.append([])

    def claim(self, msg_id: str, seq: int, now_ms: int) -> int | None:
        """The publish path (inside `open_group` ... `close_group`): the seq `msg_id` was stored at
        when that is within the window, else None after remembering it at `seq`. A claimed id whose
        append then fails is given back with `release`."""
        ids = self._ids
        original = ids.get(msg_id)
        if original is not None and original >= self._floor and now_ms - self._stored_at(original) < self.window_ms:
            return original
        ids[msg_id] = seq
        self._members[-1].append(msg_id)
        return None

    def release(self, msg_id: str) -> None:
        """Forget an id `claim` just remembered for an append that did not happen."""
        if self._ids.pop(msg_id, None) is not None and self._members and self._members[-1][-1:] == [msg_id]:
            self._members[-1].pop()

    def close_group(self, remembered: int, last_seq: int) -> None:
        """End the group: `remembered` ids were claimed (and not released), up to `last_seq`."""
        if remembered:
            self._counts[-1] += remembered
            self._total += remembered
            self._last = max(self._last, last_seq)
            if self._total > self.max_msgs:
                self._fit_count()
        elif self._head < len(self._counts) and not self._counts[-1]:
            self._firsts.pop()  # only duplicates: no group to keep
            self._at.pop()
            self._counts.pop()
            self._members.pop()

    def seq_of(self, msg_id: str, now_ms: int) -> int | None:
        """The seq `msg_id` was stored at, if that is within the window now; else None."""
        seq = self._ids.get(msg_id)
        if seq is None or seq < self._floor or now_ms - self._stored_at(seq) >= self.window_ms:
            return None
        return seq

    def add(self, msg_id: str, seq: int, stored_at_ms: int) -> None:
        """Remember an id the partition stored (a group of its own unless the time is the last
        group's; the count bound applies at once)."""
        self.open_group(seq, stored_at_ms)
        self._ids[msg_id] = seq
        self._members[-1].append(msg_id)
        self.close_group(1, seq)

    def expire(self, now_ms: int) -> int:
        """Forget the groups stored `window_ms` or more ago and those beyond `max_msgs`; returns
        how many ids that forgot."""
        before = self._total
        cutoff = now_ms - self.window_ms
        while self._head < len(self._at) and self._at[self._head] <= cutoff:
            self._drop_oldest()
        self._fit_count()
        return before - self._total

    def resize(self, window_ms: int, max_msgs: int, now_ms: int) -> None:
        """Adopt new bounds (UpdateStream); a smaller window forgets at once."""
        self.window_ms = window_ms
        self.max_msgs = max_msgs
        self.expire(now_ms)

    # -- internals -----------------------------------------------------------------------------------

    def _stored_at(self, seq: int) -> int:
        """When the group holding `seq` (>= the floor) was stored."""
        index = bisect.bisect_right(self._firsts, seq, lo=self._head) - 1
        return self._at[max(index, self._head)]

    def _fit_count(self) -> None:
        """Forget the oldest groups while the newer ones still hold `max_msgs` ids."""
        while self._head < len(self._at) and self._total - self._counts[self._head] >= self.max_msgs:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        head = self._head
        self._total -= self._counts[head]
        members, self._members[head] = self._members[head], []
        self._head = head + 1
        # Every group forgotten: nothing remembered so far counts.
        floor = self._floor = self._firsts[self._head] if self._head < len(self._firsts) else self._last + 1
        ids = self._ids
        for msg_id in members:
            seq = ids.get(msg_id)
            if seq is not None and seq < floor:  # not claimed again by a later group
                del ids[msg_id]
        if self._head > 1024 and self._head * 2 > len(self._firsts):
            del self._firsts[: self._head], self._at[: self._head], self._counts[: self._head]
            del self._members[: self._head]
            self._head = 0
