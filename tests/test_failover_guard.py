"""The controller's failover write is guarded by what it decided from (real redis-server).

A promotion is decided from the stored in-sync set while the old primary has no heartbeat. If the
primary resumes before the write lands (a SIGSTOP that ends, a slow Redis), it beats, adopts the
placement it still finds, and may shrink its in-sync set and acknowledge writes with the replicas
left in it. The promotion must then not land: it could choose a replica without those writes. So
`MetadataStore.replace_placement` writes only while the in-sync records it was given and the dead
primaries' missing heartbeats are still what they were (WATCH/MULTI), as well as the epochs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from weir.client import stream_config
from weir.v1 import types_pb2
from weir_cli.metadata_store import RedisHandle
from weir_router.store import MetadataStore
from weir_server.metadata import InSyncRecord

from tests.conftest import needs_own_processes

PREFIX = "guard"


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[MetadataStore]:
    needs_own_processes()
    handle = RedisHandle(tmp_path / "redis", tmp_path / "redis.log").start()
    metadata = MetadataStore(handle.access(), PREFIX)
    try:
        yield metadata
    finally:
        await metadata.close()
        handle.kill()


def record_led_by(primary: str, epoch: int) -> types_pb2.StreamRecord:
    record = types_pb2.StreamRecord(config=stream_config("orders", replicas=3).to_proto())
    record.placement.partitions.add(
        partition=0,
        primary_node_id=primary,
        replica_node_ids=["b", "a", "c"],
        in_sync_node_ids=["b", "a", "c"],
        leader_epoch=epoch,
    )
    return record


async def stored_primary(store: MetadataStore) -> tuple[str, int]:
    record = await store.stream("orders")
    assert record is not None
    entry = record.placement.partitions[0]
    return entry.primary_node_id, entry.leader_epoch


async def prepare(store: MetadataStore) -> InSyncRecord:
    """Stream led by b at epoch 4 with all three in sync; b has no heartbeat (it is paused)."""
    await store.redis.set(store.keys.stream("orders"), record_led_by("b", 4).SerializeToString())
    read = InSyncRecord(4, "b", ("b", "a", "c"))
    await store.redis.set(store.keys.in_sync("orders", 0), read.to_json())
    return read


async def promote_a(store: MetadataStore, read: InSyncRecord | None) -> bool:
    return await store.replace_placement(
        record_led_by("a", 5),
        {0: 4},
        {0: InSyncRecord(5, "a", ("a", "c"))},
        read_in_sync={0: read},
        dead_nodes=["b"],
    )


async def test_a_failover_decided_from_the_current_state_lands(store: MetadataStore) -> None:
    read = await prepare(store)
    assert await promote_a(store, read)
    assert await stored_primary(store) == ("a", 5)
    assert await store.in_sync("orders", 0) == InSyncRecord(5, "a", ("a", "c"))


async def test_a_primary_that_shrank_its_in_sync_set_meanwhile_keeps_its_partition(store: MetadataStore) -> None:
    read = await prepare(store)
    # b resumed, beat, found itself still primary, and dropped a (which lagged during the pause).
    await store.redis.set(store.keys.in_sync("orders", 0), InSyncRecord(4, "b", ("b", "c")).to_json())
    await store.redis.delete(store.keys.heartbeat("b"))  # even with its heartbeat gone again
    assert not await promote_a(store, read)
    assert await stored_primary(store) == ("b", 4)
    assert await store.in_sync("orders", 0) == InSyncRecord(4, "b", ("b", "c"))


async def test_a_primary_whose_heartbeat_came_back_keeps_its_partition(store: MetadataStore) -> None:
    read = await prepare(store)
    await store.redis.set(store.keys.heartbeat("b"), "1", px=5000)
    assert not await promote_a(store, read)
    assert await stored_primary(store) == ("b", 4)
    assert await store.in_sync("orders", 0) == read


async def test_a_failover_without_a_stored_in_sync_record_checks_that_none_appeared(store: MetadataStore) -> None:
    await store.redis.set(store.keys.stream("orders"), record_led_by("b", 4).SerializeToString())
    await store.redis.set(store.keys.in_sync("orders", 0), InSyncRecord(4, "b", ("b", "c")).to_json())
    assert not await promote_a(store, None)
    await store.redis.delete(store.keys.in_sync("orders", 0))
    assert await promote_a(store, None)
    assert await stored_primary(store) == ("a", 5)


async def test_a_delete_mark_keeps_the_placement_and_survives_a_failover_write(store: MetadataStore) -> None:
    """The controller marks a stream deleting before it asks the nodes (who delete only on that
    word); a failover decided before the mark lands its placement and keeps the mark."""
    read = await prepare(store)
    assert not await store.mark_deleting("missing")
    assert await store.mark_deleting("orders")
    marked = await store.stream("orders")
    assert marked is not None and marked.deleting
    assert marked.placement == record_led_by("b", 4).placement
    assert await promote_a(store, read)  # built from a record read before the mark
    after = await store.stream("orders")
    assert after is not None and after.deleting
    assert await stored_primary(store) == ("a", 5)
