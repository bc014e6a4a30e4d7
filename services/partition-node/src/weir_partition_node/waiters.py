"""Wait sets: futures that callers join to be woken at the next event (a commit, a follower
report), or after a timeout. Used by the partition and its replication state."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field


async def wait_on(waiters: set[asyncio.Future[None]], timeout_s: float) -> None:
    """Join `waiters` until `wake` resolves them or `timeout_s` passes."""
    await wait_on_any((waiters,), timeout_s)


def wake(waiters: set[asyncio.Future[None]]) -> None:
    """Resolve every future in `waiters` (each removes itself once its wait ends)."""
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)


async def wait_on_any(waiter_sets: Sequence[set[asyncio.Future[None]]], timeout_s: float) -> None:
    """Join every set of `waiter_sets` with one future until a `wake` of any of them resolves it, or
    `timeout_s` passes: one future however many sets (a replication session waits on the
    partitions it fetches for this way, issue 53)."""
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    for waiters in waiter_sets:
        waiters.add(waiter)
    try:
        await asyncio.wait_for(waiter, timeout_s)
    except TimeoutError:
        pass
    finally:
        for waiters in waiter_sets:
            waiters.discard(waiter)


@dataclass(slots=True)
class PartitionWaits:
    """A partition's wait sets: `work` (any commit that appended or changed consumer state),
    `appends` (commits that appended or removed records: replication fetches) and `node` (the
    node's, shared by every partition: woken by the appends of a partition that leads)."""

    node: set[asyncio.Future[None]] = field(default_factory=set)
    work: set[asyncio.Future[None]] = field(default_factory=set)
    appends: set[asyncio.Future[None]] = field(default_factory=set)

    def wake_all(self, *, leading: bool) -> None:
        wake(self.work)
        wake(self.appends)
        if leading and self.node:
            wake(self.node)
