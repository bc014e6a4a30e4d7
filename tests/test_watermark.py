"""A partition's replication state (weir_partition_node.watermark.PartitionReplication): the high
watermark's rules on a primary and a secondary, and the ack-all waiters it completes or fails."""

from __future__ import annotations

import asyncio

import pytest
from weir.errors import NotEnoughReplicasError
from weir_partition_node.watermark import PartitionReplication
from weir_server.replication import InSyncTracker


def three_copies(high_watermark: int = 0) -> InSyncTracker:
    return InSyncTracker.start(
        "lead", ["lead", "f1", "f2"], ["lead", "f1", "f2"], lag_max_ms=1000, now_ms=0, high_watermark=high_watermark
    )


def shortfall() -> NotEnoughReplicasError:
    return NotEnoughReplicasError("too few in sync")


async def test_waiters_complete_in_seq_order_as_the_followers_report() -> None:
    state = PartitionReplication("orders", 0, 0)
    state.set_role(three_copies(), min_insync=2)
    first = asyncio.create_task(state.wait(3, 5))
    second = asyncio.create_task(state.wait(6, 5))
    await asyncio.sleep(0)
    assert state.tracker is not None
    state.tracker.report("f1", 4, 6, now_ms=1)
    state.tracker.report("f2", 3, 6, now_ms=1)
    assert state.advance(6, shortfall)
    assert state.high_watermark == 3
    await asyncio.wait_for(first, 1)
    assert not second.done()
    state.tracker.report("f2", 6, 6, now_ms=2)
    state.tracker.report("f1", 6, 6, now_ms=2)
    state.advance(6, shortfall)
    await asyncio.wait_for(second, 1)
    assert not state.advance(6, shortfall)  # nothing new: not advanced


async def test_too_few_in_sync_fails_every_waiter() -> None:
    state = PartitionReplication("orders", 0, 0)
    tracker = three_copies()
    tracker.set_in_sync(["lead"], now_ms=0)
    state.set_role(tracker, min_insync=2)
    waiting = asyncio.create_task(state.wait(1, 5))
    await asyncio.sleep(0)
    state.advance(1, shortfall)
    with pytest.raises(NotEnoughReplicasError):
        await waiting


def test_the_watermark_never_goes_down_under_one_primary() -> None:
    state = PartitionReplication("orders", 0, 10)
    state.set_role(three_copies(high_watermark=10), min_insync=2)
    assert state.advance(12, shortfall) is False  # followers have not reported: it stays at 10
    state.set_role(None, min_insync=1)
    with pytest.raises(AssertionError, match="would go down"):
        state.advance(7, shortfall)  # a primary's log never ends below its own watermark


def test_a_secondary_learns_the_primarys_watermark_up_to_its_own_log_and_forgets_a_cut_tail() -> None:
    state = PartitionReplication("orders", 0, 0)
    state.learn(8, last_seq=5)
    assert state.high_watermark == 5
    state.learn(3, last_seq=9)  # an older answer never lowers it
    assert state.high_watermark == 5
    state.clamp(4)  # the divergent tail after seq 4 was cut
    assert state.high_watermark == 4
    state.forget(0)  # restarted: nothing known to be replicated
    assert state.high_watermark == 0
