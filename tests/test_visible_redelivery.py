"""A message delivered again after a failover says so: deliver_count 2, counted as a redelivery
(delivery_horizon.py), through real nodes, a real replicator and a SIGKILL.

The replicator here ships consumer snapshots at most every 10 minutes, so the copy that takes over
holds the consumer as it was before the deliveries: only the horizon the primary pushed before it
answered the fetch tells it that seqs 1..10 may have reached the consumer.
"""

from __future__ import annotations

from pathlib import Path

from weir import Client, consumer_config, stream_config
from weir_cli.launcher import LocalCluster
from weir_partition_node import delivery_horizon
from weir_partition_node.delivery_horizon import DeliveryHorizon

from tests.conftest import (
    CLUSTER_NODE_ENV,
    CLUSTER_REPLICATOR_ENV,
    CLUSTER_ROUTER_ENV,
    eventually,
    needs_own_processes,
)

STREAM = "flagged"


def test_a_replica_keeps_the_newer_start_and_of_one_start_the_higher_seq() -> None:
    older, newer = DeliveryHorizon(50, 3, 1_000), DeliveryHorizon(7, 3, 2_000)  # newer: a seek back to 7
    assert delivery_horizon.merged(older, newer) == newer
    assert delivery_horizon.merged(newer, older) == newer  # a snapshot from before the seek arrives late
    pushed = DeliveryHorizon(9, 3, 2_000)
    assert delivery_horizon.merged(newer, pushed) == pushed
    assert delivery_horizon.merged(pushed, newer) == pushed  # a snapshot taken before the push
    next_primary = DeliveryHorizon(0, 4, 5)  # another primary's clock may be behind: the epoch decides
    assert delivery_horizon.merged(pushed, next_primary) == next_primary


def test_a_restart_is_newer_even_when_the_clock_stood_still() -> None:
    held = DeliveryHorizon(9, 3, 2_000)
    restarted = delivery_horizon.restarted(held, 4, 3, now_ms=2_000)
    assert restarted == DeliveryHorizon(4, 3, 2_001) and restarted.newer_than(held)
    assert delivery_horizon.restarted(held, 9, 4, now_ms=10) == DeliveryHorizon(9, 4, 10)


def test_what_a_new_primary_flags_and_what_a_fetch_must_announce() -> None:
    held = DeliveryHorizon(10, 3, 2_000)
    assert delivery_horizon.maybe_delivered_until(held, last_delivered=4) == 10
    assert delivery_horizon.maybe_delivered_until(held, last_delivered=10) == 0
    assert delivery_horizon.to_announce(held, [8, 9, 10]) == 0  # under the horizon: no push
    assert delivery_horizon.to_announce(held, [9, 12, 11]) == 12
    assert delivery_horizon.to_announce(held, [9, 12, 11], ahead=1000) == 1012  # the next fetches stay under
    assert delivery_horizon.to_announce(held, []) == 0
    assert delivery_horizon.as_snapshot_fields(held, last_delivered=12) == {
        "delivery_horizon": 12,
        "horizon_since_ms": 2_000,
    }


def _cluster_with_rare_snapshots(data_dir: Path) -> LocalCluster:
    needs_own_processes()
    return LocalCluster.start(
        data_dir,
        nodes=3,
        routers=1,
        replicators=1,
        node_env=CLUSTER_NODE_ENV,
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env={**CLUSTER_REPLICATOR_ENV, "WEIR_REPLICATOR_SNAPSHOT_INTERVAL_MS": "600000"},
    )


async def _fail_over(client: Client, cluster: LocalCluster) -> None:
    victim_id = (await client.route(STREAM)).partitions[0].primary.node_id
    next(node for node in cluster.nodes if node.name == victim_id).kill()

    async def failed_over() -> bool:
        entry = (await client.route(STREAM, refresh=True)).partitions[0]
        return entry.primary.node_id != victim_id and entry.primary.alive

    await eventually(failed_over, 30, "a new primary for partition 0")


async def _ten_messages_and_a_consumer(client: Client, *, replicas: int) -> None:
    """A one-partition stream of `replicas` copies with 10 messages (ack all) and consumer "c", whose
    ack wait (10 min) never runs out in a test: only the delivery horizon can make a message come again."""
    await client.create_stream(stream_config(STREAM, subjects=["f.>"], partitions=1, replicas=replicas))
    await client.create_consumer(STREAM, consumer_config("c", ack_wait_ms=600_000))
    for n in range(10):
        await client.publish(STREAM, "f.x", b"%d" % n, partition=0, ack_level="all")


async def test_deliveries_the_new_primary_cannot_rule_out_come_with_deliver_count_two(tmp_path: Path) -> None:
    cluster = _cluster_with_rare_snapshots(tmp_path / "cluster")
    try:
        async with Client(cluster.router_addresses) as client:
            await _ten_messages_and_a_consumer(client, replicas=3)
            first = await client.fetch(STREAM, "c", 0, batch_size=100)
            assert [(m.seq, m.deliver_count) for m in first] == [(seq, 1) for seq in range(1, 11)]

            await _fail_over(client, cluster)
            for n in range(10, 15):
                await client.publish(STREAM, "f.x", b"%d" % n, partition=0, ack_level="all")
            # the ack wait (10 min) has not passed: only the horizon makes 1..10 come again now
            again = await client.fetch(STREAM, "c", 0, batch_size=100)
            assert [(m.seq, m.deliver_count) for m in again] == [
                *((seq, 2) for seq in range(1, 11)),
                *((seq, 1) for seq in range(11, 16)),  # beyond the horizon: never delivered before
            ]
            info = await client.consumer_info(STREAM, "c")
            assert info.redelivered_total == 10
            assert info.partitions[0].num_redelivered == 10
            for message in again:
                await message.ack()
            assert (await client.consumer_info(STREAM, "c")).num_ack_pending == 0
    finally:
        cluster.stop()


async def test_a_planned_handover_flags_nothing(tmp_path: Path) -> None:
    """A partition moved while it serves (a fenced, drained handover) hands its successor the
    consumers' exact state: what was never delivered comes as a first delivery, though the horizon
    the replicas held covered it ahead."""
    cluster = _cluster_with_rare_snapshots(tmp_path / "cluster")
    try:
        async with Client(cluster.router_addresses) as client:
            await _ten_messages_and_a_consumer(client, replicas=2)
            first = await client.fetch(STREAM, "c", 0, batch_size=4)
            assert [(m.seq, m.deliver_count) for m in first] == [(seq, 1) for seq in range(1, 5)]
            entry = (await client.route(STREAM)).partitions[0]
            copies = {entry.primary.node_id, *(broker.node_id for broker in entry.secondaries)}
            spare = next(node.name for node in cluster.nodes if node.name not in copies)
            steps = [progress.step async for progress in client.move_partition(STREAM, 0, entry.primary.node_id, spare)]
            assert "hand_over" in steps and steps[-1] == "done"
            rest = await client.fetch(STREAM, "c", 0, batch_size=100)
            assert [(m.seq, m.deliver_count) for m in rest] == [(seq, 1) for seq in range(5, 11)]
            assert (await client.consumer_info(STREAM, "c")).redelivered_total == 0
    finally:
        cluster.stop()
