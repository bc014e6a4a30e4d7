"""SeekConsumer (a durable consumer's position: by seq, by time, to the end) and PurgePartition
(remove a partition's messages below a seq, or all), on a real node over gRPC, surviving a restart,
and replicated: after a SIGKILL of the primary the new primary serves the moved position and the
purged log. The pure decisions are tested here too (consumers.seek, retention's purge)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from weir import Client, consumer_config, stream_config
from weir.client import NodeClient
from weir.errors import (
    InvalidArgumentError,
    NoSuchConsumerError,
    NoSuchMessageError,
    PositionOutOfRangeError,
)
from weir.v1 import streams_pb2, types_pb2
from weir_cli.launcher import NodeHandle
from weir_partition_node import consumers
from weir_partition_node.retention import LimitsBounds, plan_retention
from weir_partition_node.storage.base import RowInfo

from tests.conftest import eventually, start_cluster


def test_seek_drops_pending_and_moves_last_delivered() -> None:
    spec = consumers.ConsumerSpec.of(types_pb2.ConsumerConfig(name="c"), incarnation=1)
    cursor = consumers.ConsumerCursor(spec, 0)
    for seq in (1, 2, 3):
        consumers.deliver_new(cursor, seq, now_ms=1000)
    cursor.last_delivered = 3
    cursor.reset_commit()
    assert consumers.seek(cursor, 2) == 3
    assert (cursor.pending, cursor.last_delivered, cursor.ack_floor) == ({}, 1, 1)
    assert cursor.touched == {1, 2, 3} and cursor.dirty  # the stored pending rows go too
    assert cursor.earliest_redeliver_ms == consumers.NEVER
    assert consumers.seek(cursor, 10) == 0 and cursor.last_delivered == 9


def test_retention_purges_below_the_seq_with_reason_purge() -> None:
    rows = [RowInfo(seq, 10, 100) for seq in range(1, 11)]

    def oldest(from_seq: int, limit: int) -> list[RowInfo]:
        return [row for row in rows if row.seq >= from_seq][:limit]

    plan = plan_retention(
        bounds=LimitsBounds(),
        now_ms=1000,
        stored_count=10,
        stored_bytes=100,
        first_seq=1,
        new_rows=[],
        oldest=oldest,
        subject_excess=lambda subject, keep: [],
        purge_before_seq=4,
    )
    assert (plan.truncate_before, plan.truncated_count, plan.truncated_bytes) == (4, 3, 30)
    assert plan.truncate_reason == "purge"


async def publish(client: NodeClient, stream: str, count: int) -> None:
    for n in range(count):
        await client.publish(stream, f"{stream}.x", b"%d" % n)


async def fetched_seqs(client: NodeClient, stream: str, consumer: str) -> list[tuple[int, int]]:
    messages = await client.fetch(stream, consumer, 0, batch_size=100)
    return [(message.seq, message.deliver_count) for message in messages]


async def test_seek_by_seq_time_and_end(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name, subjects=[f"{stream_name}.>"]))
    await client.create_consumer(stream_name, consumer_config("c", ack_wait_ms=60_000))
    await publish(client, stream_name, 5)
    assert [seq for seq, _ in await fetched_seqs(client, stream_name, "c")] == [1, 2, 3, 4, 5]

    moved = await client.seek_consumer(stream_name, "c", 0, seq=2)
    assert (moved.next_seq, moved.dropped_pending) == (2, 5)
    assert await fetched_seqs(client, stream_name, "c") == [(2, 1), (3, 1), (4, 1), (5, 1)]
    info = await client.consumer_info(stream_name, "c")
    assert (info.num_ack_pending, info.partitions[0].ack_floor) == (4, 1)

    moved = await client.seek_consumer(stream_name, "c", 0, end=True)
    assert (moved.next_seq, moved.dropped_pending) == (6, 4)
    assert await fetched_seqs(client, stream_name, "c") == []
    cutoff_ms = (await client.get_message(stream_name, 0, 5)).ts_ms + 1
    await asyncio.sleep(0.01)  # the next publishes are stored at or after cutoff_ms
    await publish(client, stream_name, 2)  # seqs 6, 7, stored after cutoff_ms
    moved = await client.seek_consumer(stream_name, "c", 0, time_ms=cutoff_ms)
    assert moved.next_seq == 6
    assert [seq for seq, _ in await fetched_seqs(client, stream_name, "c")] == [6, 7]
    moved = await client.seek_consumer(stream_name, "c", 0, time_ms=cutoff_ms + 3_600_000)
    assert moved.next_seq == 8  # nothing stored at or after it: the end

    with pytest.raises(PositionOutOfRangeError, match="next seq is 8"):
        await client.seek_consumer(stream_name, "c", 0, seq=9)
    with pytest.raises(NoSuchConsumerError):
        await client.seek_consumer(stream_name, "nobody", 0, seq=1)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        await client.seek_consumer(stream_name, "c", 0)


async def test_seek_requests_without_a_position_are_refused(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name, subjects=[f"{stream_name}.>"]))
    await client.create_consumer(stream_name, consumer_config("c"))
    for request, message in (
        (streams_pb2.SeekConsumerRequest(stream=stream_name, consumer="c"), "give seq, time_ms or end"),
        (streams_pb2.SeekConsumerRequest(stream=stream_name, consumer="c", seq=0), "seqs start at 1"),
        (streams_pb2.SeekConsumerRequest(stream=stream_name, consumer="c", end=False), "set it to true"),
        (streams_pb2.SeekConsumerRequest(stream=stream_name, consumer="c", time_ms=-1), ">= 0"),
    ):
        with pytest.raises(InvalidArgumentError, match=message):
            await client._call(client.stub.SeekConsumer, request)


async def test_purge_below_a_seq_then_all(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name, subjects=[f"{stream_name}.>"]))
    await client.create_consumer(stream_name, consumer_config("c", ack_wait_ms=1))
    await publish(client, stream_name, 10)
    assert len(await fetched_seqs(client, stream_name, "c")) == 10  # all pending, due again at once

    purged = await client.purge_partition(stream_name, 0, keep_from_seq=4)
    assert (purged.purged, purged.first_seq) == (3, 4)
    with pytest.raises(NoSuchMessageError):
        await client.get_message(stream_name, 0, 3)
    assert [seq for seq, _ in await fetched_seqs(client, stream_name, "c")] == list(range(4, 11))  # 1-3 forgotten

    purged = await client.purge_partition(stream_name, 0)
    assert (purged.purged, purged.first_seq) == (7, 11)
    ack = await client.publish(stream_name, f"{stream_name}.x", b"after")
    assert ack.seq == 11  # seqs keep counting
    stats = (await client.stream_info(stream_name)).stats.partitions[0]
    assert (stats.first_seq, stats.last_seq, stats.msg_count) == (11, 11, 1)
    assert (await client.purge_partition(stream_name, 0, keep_from_seq=1)).purged == 0
    with pytest.raises(PositionOutOfRangeError, match="next seq is 12"):
        await client.purge_partition(stream_name, 0, keep_from_seq=13)  # as Kafka's DeleteRecords


async def test_seek_and_purge_survive_a_restart(fresh_node: NodeHandle, stream_name: str) -> None:
    async with NodeClient(fresh_node.client_address) as node:
        await node.create_stream(stream_config(stream_name, subjects=[f"{stream_name}.>"]))
        await node.create_consumer(stream_name, consumer_config("c", ack_wait_ms=60_000))
        await publish(node, stream_name, 6)
        await fetched_seqs(node, stream_name, "c")
        await node.purge_partition(stream_name, 0, keep_from_seq=3)
        await node.seek_consumer(stream_name, "c", 0, seq=4)
    fresh_node.kill()
    fresh_node.restart()
    async with NodeClient(fresh_node.client_address) as node:
        stats = (await node.stream_info(stream_name)).stats.partitions[0]
        assert (stats.first_seq, stats.msg_count) == (3, 4)
        assert await fetched_seqs(node, stream_name, "c") == [(4, 1), (5, 1), (6, 1)]


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_seek_and_purge_reach_the_new_primary_after_a_failover(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path / "cluster")
    try:
        async with Client(cluster.router_addresses) as client:
            stream = "moved"
            await client.create_stream(stream_config(stream, subjects=["moved.>"], partitions=2, replicas=3))
            await client.create_consumer(stream, consumer_config("c", ack_wait_ms=60_000))
            for n in range(20):
                await client.publish(stream, "moved.x", b"%d" % n, partition=n % 2, ack_level="all")
            for partition in (0, 1):
                assert len(await client.fetch(stream, "c", partition, batch_size=100)) == 10
            assert await client.purge_stream(stream, keep_from_seq=4) == 6
            assert await client.seek_consumer(stream, "c", seq=7) == {0: 7, 1: 7}
            await client.publish(stream, "moved.x", b"last", partition=0, ack_level="all")  # replicated past both
            route = await client.route(stream)
            victim_id = route.partitions[0].primary.node_id
            victim = next(node for node in cluster.nodes if node.name == victim_id)
            await eventually(
                lambda: _consumer_replicated(cluster, victim_id, stream),
                20,
                "the secondaries hold the moved consumer",
            )
            victim.kill()

            async def failed_over() -> bool:
                entry = (await client.route(stream, refresh=True)).partitions[0]
                return entry.primary.node_id != victim_id and entry.primary.alive

            await eventually(failed_over, 30, "a new primary for partition 0")
            info = await client.stream_info(stream)
            assert info.partitions[0].first_seq == 4
            messages = await client.fetch(stream, "c", 0, batch_size=100)
            assert [(m.seq, m.deliver_count) for m in messages] == [(7, 1), (8, 1), (9, 1), (10, 1), (11, 1)]
    finally:
        cluster.stop()


async def _consumer_replicated(cluster: object, primary_id: str, stream: str) -> bool:
    from weir_cli.launcher import LocalCluster

    assert isinstance(cluster, LocalCluster)
    for node in cluster.nodes:
        if node.name == primary_id:
            continue
        async with NodeClient(node.internal_address) as internal:
            info = await internal.consumer_info(stream, "c")
        partition = next(p for p in info.partitions if p.partition == 0)
        if partition.last_delivered != 6 or partition.num_ack_pending:
            return False
    return True
