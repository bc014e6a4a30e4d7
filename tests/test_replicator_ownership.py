"""A replicator's partition leases (weir_replicator/ownership.py) in a real Redis: the shared
cluster's metadata Redis, under a key prefix of the test's own, so nothing the cluster holds is read
or changed. `Ownership.hold_all` takes or renews every lease of a tick in one call per chunk, with
the same rules the single-lease calls had: acquire only a free lease, renew only one's own."""

from __future__ import annotations

import uuid

from weir_cli.launcher import LocalCluster
from weir_replicator.ownership import HOLD_CHUNK, Ownership
from weir_server.metadata import Keys


async def test_hold_all_acquires_free_leases_renews_its_own_and_never_takes_another_s(cluster: LocalCluster) -> None:
    redis = cluster.metadata_access().client()
    keys = Keys(f"test-ownership-{uuid.uuid4().hex[:8]}")
    mine, theirs = Ownership(redis, keys, "rep-a", lease_ms=30_000), Ownership(redis, keys, "rep-b", lease_ms=30_000)
    try:
        assert await mine.hold_all([("s", 0, False), ("s", 1, False)]) == [True, True]
        # another instance neither acquires nor renews a lease it does not hold
        assert await theirs.hold_all([("s", 0, False), ("s", 1, True), ("s", 2, False)]) == [False, False, True]
        assert await redis.get(keys.replicator_lease("s", 1)) == b"rep-a"
        # renewing: ours (0, 1) held, theirs (2) refused; a lease we thought we held but lost is refused
        assert await mine.hold_all([("s", 0, True), ("s", 1, True), ("s", 2, True)]) == [True, True, False]
        assert 25_000 < await redis.pttl(keys.replicator_lease("s", 0)) <= 30_000  # renewed: lease_ms from now
        await redis.delete(keys.replicator_lease("s", 0))
        assert await mine.hold_all([("s", 0, True)]) == [False]  # expired: renew does not re-create it
        assert await mine.hold_all([]) == []
        # more leases than one call takes: every one answered, in order
        many = [("m", partition, False) for partition in range(HOLD_CHUNK + 3)]
        assert await mine.hold_all(many) == [True] * len(many)
        assert await theirs.hold_all(many) == [False] * len(many)
    finally:
        stored = [key async for key in redis.scan_iter(match=f"{keys.prefix}:*")]
        if stored:
            await redis.delete(*stored)
        await redis.aclose()
