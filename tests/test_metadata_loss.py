"""Correctness does not depend on Redis keeping its last writes (issue 54).

Redis persists the cluster metadata to its append-only file once a second, so a Redis that is
SIGKILLed and restarted (or a replica promoted by a failover, which replicates asynchronously) can
come back without its last writes: a failover's new leader epoch among them. The nodes adopted that
epoch; the stored record now says an older one, with the old primary.

The test makes that loss certain, as Jepsen does, with a real Redis: it turns Redis's append-only
file off (`CONFIG SET appendonly no`: nothing written afterwards reaches disk), SIGKILLs a primary
so that the controller fails it over, publishes under the new epoch, then SIGKILLs Redis and starts
it again from its file, and restarts the old primary. Then:

- the nodes report the newer epoch they hold (NodeRecord.ahead_partitions) and the controller puts
  the newest placement they hold back into the store (weir_router_lost_epochs_restored_total);
- no node's leader epoch ever goes backwards;
- ack-all publishes go on, and every message acknowledged before, during and after is stored once,
  at its seq, on every copy.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import redis.asyncio
from weir.client import NodeClient, stream_config
from weir.cluster import WeirClient
from weir.errors import WeirError
from weir.v1 import types_pb2
from weir_cli.launcher import LocalCluster, NodeHandle
from weir_server.internal_clients import ReplicationClient
from weir_server.metadata import Keys

from tests.conftest import eventually, http_get, start_cluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

STREAM = "lost-epoch"


async def stored_entry(cluster: LocalCluster) -> types_pb2.PartitionPlacement:
    client = redis.asyncio.from_url(cluster.redis.url)
    try:
        raw = await client.get(Keys().stream(STREAM))
    finally:
        await client.aclose()
    assert isinstance(raw, bytes)
    return types_pb2.StreamRecord.FromString(raw).placement.partitions[0]


async def node_epochs(nodes: list[NodeHandle]) -> dict[str, int]:
    """node id -> the leader epoch it holds for partition 0 (those that answer)."""
    epochs = {}
    for node in nodes:
        try:
            async with ReplicationClient(node.internal_address, timeout_s=2) as replication:
                epochs[node.name] = (await replication.replica_state(STREAM, 0)).leader_epoch
        except WeirError:
            pass
    return epochs


async def publish_numbered(client: WeirClient, prefix: str, count: int) -> list[tuple[int, bytes]]:
    acked = []
    for index in range(count):
        payload = f"{prefix}-{index}".encode()
        ack = await client.publish(STREAM, "s", payload, partition=0, ack_level="all", msg_id=payload.decode())
        acked.append((ack.seq, payload))
    return acked


def restored_total(cluster: LocalCluster) -> float:
    total = 0.0
    for router in cluster.routers:
        for line in http_get(f"http://127.0.0.1:{router.metrics_port}/metrics").splitlines():
            if line.startswith("weir_router_lost_epochs_restored_total "):
                total += float(line.split()[1])
    return total


async def test_a_failover_the_metadata_store_forgot_is_restored_from_the_nodes(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path / "cluster")
    epochs_seen: dict[str, int] = {}
    watching = True

    async def watch_epochs() -> None:
        """No node's epoch ever goes backwards (checked every 50 ms throughout)."""
        while watching:
            for node_id, epoch in (await node_epochs(cluster.nodes)).items():
                assert epoch >= epochs_seen.get(node_id, 0), f"{node_id}: epoch {epochs_seen[node_id]} -> {epoch}"
                epochs_seen[node_id] = epoch
            await asyncio.sleep(0.05)

    watcher = asyncio.create_task(watch_epochs())
    try:
        async with WeirClient(cluster.router_addresses, retry_timeout_s=60) as client:
            await client.create_stream(stream_config(STREAM, replicas=3, min_insync_replicas=2))
            acked = await publish_numbered(client, "before", 20)
            entry = await stored_entry(cluster)
            old_primary = next(node for node in cluster.nodes if node.name == entry.primary_node_id)

            admin = redis.asyncio.from_url(cluster.redis.url)
            await admin.config_set("appendonly", "no")  # nothing from here on reaches Redis's disk
            await admin.aclose()
            old_primary.kill()
            await eventually(lambda: _newer(cluster, entry.leader_epoch), 30, "the controller failed the primary over")
            promoted = await stored_entry(cluster)
            others = [node for node in cluster.nodes if node is not old_primary]
            await eventually(lambda: _all_at(others, promoted.leader_epoch), 10, "the live nodes adopted the new epoch")
            acked += await publish_numbered(client, "promoted", 20)

            cluster.redis.kill()
            cluster.redis.start()  # from its file: without the failover
            assert (await stored_entry(cluster)).leader_epoch == entry.leader_epoch, "Redis kept the failover"
            old_primary.start(reuse_ports=True)

            await eventually(
                lambda: _newer(cluster, promoted.leader_epoch - 1), 30, "the lost placement restored in Redis"
            )
            assert restored_total(cluster) >= 1
            # the lost epoch came back as the nodes had it, not issued a second time with another start
            history = list((await stored_entry(cluster)).epoch_starts)
            assert history[: len(promoted.epoch_starts)] == list(promoted.epoch_starts), history
            started = time.monotonic()
            acked += await publish_numbered(client, "after", 20)
            print(f"ack-all publishes resumed {time.monotonic() - started:.2f} s after the restore")

            await eventually(lambda: _copies_equal(cluster), 30, "every copy equal")
            for node in cluster.nodes:
                async with NodeClient(node.internal_address, timeout_s=10) as reader:
                    stored = [(message.seq, message.payload) async for message in reader.read_all(STREAM, 0)]
                missing = set(acked) - set(stored)
                assert not missing, f"{node.name} lost acknowledged messages: {sorted(missing)[:5]}"
                payloads = [payload for _, payload in stored]
                assert len(payloads) == len(set(payloads)), f"{node.name} stored a message twice"
    finally:
        watching = False
        await asyncio.gather(watcher, return_exceptions=False)
        cluster.stop()


async def _newer(cluster: LocalCluster, than_epoch: int) -> bool:
    try:
        return (await stored_entry(cluster)).leader_epoch > than_epoch
    except (AssertionError, OSError, redis.RedisError):
        return False


async def _all_at(nodes: list[NodeHandle], epoch: int) -> bool:
    epochs = await node_epochs(nodes)
    return len(epochs) == len(nodes) and all(value >= epoch for value in epochs.values())


async def _copies_equal(cluster: LocalCluster) -> bool:
    copies = []
    for node in cluster.nodes:
        try:
            async with NodeClient(node.internal_address, timeout_s=5) as reader:
                copies.append([(message.seq, message.payload) async for message in reader.read_all(STREAM, 0)])
        except WeirError:
            return False
    return all(copy == copies[0] for copy in copies)
