"""A node's heartbeat lease after a pause (SIGSTOP, a stalled event loop, Redis out of reach): the
controller may have replaced the node meanwhile, so the heartbeat that finds the lease lapsed first
has the node adopt the placements Redis holds (`on_lease_regained`, the replica manager's refresh)
and only then counts the lease again. Until then the node refuses to act as primary: no ack-all
completion, no FetchReplication served (the reliability matrix once lost 4 acknowledged writes to
a primary that acknowledged on a stale follower report right after a SIGSTOP). Real redis-server;
the pause is the whole process blocking past the lease, as SIGSTOP does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from weir_cli.metadata_store import RedisHandle
from weir_partition_node.membership import Membership
from weir_partition_node.settings import NodeSettings

from tests.conftest import eventually, needs_own_processes

TTL_MS = 500


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    needs_own_processes()
    handle = RedisHandle(tmp_path / "redis", tmp_path / "redis.log").start()
    try:
        yield handle.url
    finally:
        handle.kill()


def membership(tmp_path: Path, redis_url: str) -> Membership:
    settings = NodeSettings(
        node_id="paused",
        data_dir=tmp_path / "data",
        redis_url=redis_url,
        heartbeat_interval_ms=100,
        heartbeat_ttl_ms=TTL_MS,
    )
    return Membership(settings, "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3")


async def test_a_lapsed_lease_counts_again_only_after_the_placements_were_adopted(
    tmp_path: Path, redis_url: str
) -> None:
    node = membership(tmp_path, redis_url)
    adopted = asyncio.Event()
    seen_during_adoption: list[bool] = []

    async def adopt_placements() -> None:
        seen_during_adoption.append(node.lease_valid())
        await adopted.wait()

    node.on_lease_regained = adopt_placements
    await node.register()
    try:
        assert node.lease_valid() and seen_during_adoption == []  # the first registration adopts nothing
        time.sleep(TTL_MS / 1000 + 0.2)  # noqa: ASYNC251 (the whole process stalls past its lease, as under SIGSTOP)
        assert not node.lease_valid()

        async def adopting() -> bool:
            return bool(seen_during_adoption)

        await eventually(adopting, 5, "the next heartbeat asks for the placements")
        await asyncio.sleep(0.3)  # heartbeats keep coming; the lease stays out while adopting
        assert seen_during_adoption == [False] and not node.lease_valid()
        adopted.set()

        async def valid() -> bool:
            return node.lease_valid()

        await eventually(valid, 5, "the lease counts again once the placements are adopted")
    finally:
        await node.close()


async def test_a_failed_adoption_leaves_the_lease_lapsed_and_is_tried_again(tmp_path: Path, redis_url: str) -> None:
    node = membership(tmp_path, redis_url)
    attempts: list[float] = []

    async def failing_adoption() -> None:
        attempts.append(time.monotonic())
        if len(attempts) < 3:
            raise RuntimeError("the stream records could not be read")

    node.on_lease_regained = failing_adoption
    await node.register()
    try:
        time.sleep(TTL_MS / 1000 + 0.2)  # noqa: ASYNC251 (a stall past the lease is the point)

        async def valid() -> bool:
            return node.lease_valid()

        await eventually(valid, 5, "the lease counts again after an adoption succeeded")
        assert len(attempts) == 3  # two failed adoptions kept it lapsed; the third renewed it
    finally:
        await node.close()
