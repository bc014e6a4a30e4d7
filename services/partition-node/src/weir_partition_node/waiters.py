"""Wait sets: futures that callers join to be woken at the next event (a commit, a follower
report), or after a timeout. Used by the partition and its replication state."""

from __future__ import annotations

import asyncio


async def wait_on(waiters: set[asyncio.Future[None]], timeout_s: float) -> None:
    """Join `waiters` until `wake` resolves them or `timeout_s` passes."""
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiters.add(waiter)
    try:
        await asyncio.wait_for(waiter, timeout_s)
    except TimeoutError:
        pass
    finally:
        waiters.discard(waiter)


def wake(waiters: set[asyncio.Future[None]]) -> None:
    """Resolve every future in `waiters` (each removes itself once its wait ends)."""
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)
