"""One partition's replication state on this node (DESIGN §5): the in-sync tracker, the high
watermark and the ack-all publishes waiting for it.

`PartitionReplication` is the only writer of these. As primary it owns the tracker (the followers'
reported progress, weir_server.replication.InSyncTracker) and recomputes the high watermark from it
after every commit and every follower report; an ack-all publish waits here until the watermark
covers its seq. As secondary it keeps the watermark its primary last sent, never beyond its own log.

Invariant (asserted): under one tracker (one primary's term) the high watermark never goes down.
It is lowered only outside that: when a new term starts lower (`set_role`), when a divergent tail
is cut (`clamp`), or after a restart of a replicated partition, where what the other copies hold is
not known yet (`forget`).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable

from weir.errors import WeirError
from weir_server.replication import InSyncTracker

from weir_partition_node import metrics
from weir_partition_node.waiters import wait_on, wake


class PartitionReplication:
    """The high watermark, in-sync tracker and replicated-waiters of one partition."""

    def __init__(self, stream: str, partition: int, high_watermark: int) -> None:
        self.tracker: InSyncTracker | None = None  # primary with followers only
        self.min_insync = 1
        self._high_watermark = high_watermark
        # (seq, tie-breaker, future) of ack-all publishes waiting for the watermark, lowest seq first.
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._waiter_ids = itertools.count()
        self._progress_waiters: set[asyncio.Future[None]] = set()
        self._gauge = metrics.HIGH_WATERMARK.labels(stream, str(partition))

    @property
    def high_watermark(self) -> int:
        """The highest seq every in-sync replica holds (the primary's view; a secondary's is what
        its primary last sent, capped at its own log end)."""
        return self._high_watermark

    def in_sync_count(self) -> int:
        return len(self.tracker.in_sync) if self.tracker is not None else 1

    def enough_in_sync(self) -> bool:
        return self.in_sync_count() >= self.min_insync

    def set_role(self, tracker: InSyncTracker | None, min_insync: int) -> None:
        """Lead with `tracker` (None: no followers, or following) and `min_insync`. A new tracker
        starts a new term: the watermark restarts where the tracker starts (the node builds it from
        the current watermark; a lower start is a term that has confirmed less so far)."""
        self.tracker = tracker
        self.min_insync = min_insync
        if tracker is not None:
            self._high_watermark = tracker.high_watermark

    def advance(self, last_seq: int, shortfall: Callable[[], WeirError]) -> bool:
        """Primary: recompute the watermark for a log ending at `last_seq` and complete the waiters
        it now covers; with fewer in-sync replicas than `min_insync`, fail every waiter with
        `shortfall()` instead. Returns whether the watermark moved up."""
        wake(self._progress_waiters)
        tracker = self.tracker
        high_watermark = last_seq if tracker is None else tracker.compute_high_watermark(last_seq)
        assert high_watermark >= self._high_watermark, (
            f"the high watermark would go down under one primary: {self._high_watermark} -> {high_watermark}"
        )
        advanced = high_watermark > self._high_watermark
        self._high_watermark = high_watermark
        self._gauge.set(high_watermark)
        waiters = self._waiters
        if waiters and not self.enough_in_sync():
            self.fail_waiters(shortfall())
            return advanced
        while waiters and waiters[0][0] <= high_watermark:
            _, _, future = heapq.heappop(waiters)
            if not future.done():
                future.set_result(None)
        return advanced

    def learn(self, primary_high_watermark: int, last_seq: int) -> None:
        """Secondary: the primary's watermark arrived with records this replica applied; it holds
        no more than its log (`last_seq`) and never goes down here."""
        self._high_watermark = max(self._high_watermark, min(primary_high_watermark, last_seq))

    def clamp(self, last_seq: int) -> None:
        """The log was cut after `last_seq` (a divergent tail): nothing beyond it is replicated."""
        self._high_watermark = min(self._high_watermark, last_seq)

    def forget(self, through_seq: int) -> None:
        """After a restart, what the other copies hold is not known: nothing past `through_seq`
        (the log's start - 1) counts as replicated until the followers report again."""
        self._high_watermark = through_seq

    async def wait(self, seq: int, timeout_s: float) -> None:
        """Until the watermark covers `seq` with enough replicas in sync. Errors: what `advance`
        or `fail_waiters` fails the waiters with, TimeoutError."""
        if seq <= self._high_watermark and self.enough_in_sync():
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (seq, next(self._waiter_ids), future))
        await asyncio.wait_for(future, timeout_s)

    def fail_waiters(self, error: WeirError) -> None:
        waiters, self._waiters = self._waiters, []
        for _, _, future in waiters:
            if not future.done():
                future.set_exception(error)

    async def wait_for_progress(self, timeout_s: float) -> None:
        """Until the next `advance` (a follower report or a commit), or `timeout_s`."""
        await wait_on(self._progress_waiters, timeout_s)
