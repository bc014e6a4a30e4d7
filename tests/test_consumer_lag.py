"""The node's `weir_consumer_lag_messages{stream, consumer, partition}` gauge, scraped from real node
processes' /metrics after real gRPC calls.

The lag of a consumer in a partition is the partition's last seq minus the consumer's ack floor
(messages published and not yet delivered, or delivered and not yet acknowledged); the node
computes it when /metrics is scraped. Only a partition's primary exports it, so summing over the
nodes of a cluster counts every partition once.
"""

from __future__ import annotations

import asyncio

from prometheus_client.parser import text_string_to_metric_families
from weir.client import NodeClient, consumer_config, stream_config
from weir.cluster import WeirClient
from weir_cli.launcher import NodeHandle

from tests.conftest import ClusterAddresses, eventually, metrics_page

LAG_METRIC = "weir_consumer_lag_messages"


def lag_samples(body: str, stream: str) -> dict[tuple[str, int], float]:
    """(consumer, partition) -> lag in messages of `stream`, from a /metrics page. Fails when the page
    has no `weir_consumer_lag_messages` family at all (the collector is not registered)."""
    for family in text_string_to_metric_families(body):
        if family.name == LAG_METRIC:
            assert family.type == "gauge", family.type
            return {
                (sample.labels["consumer"], int(sample.labels["partition"])): sample.value
                for sample in family.samples
                if sample.labels["stream"] == stream
            }
    raise AssertionError(f"no {LAG_METRIC} on the page")


async def scrape_lags(metrics_address: str, stream: str) -> dict[tuple[str, int], float]:
    body = await asyncio.to_thread(metrics_page, metrics_address)
    return lag_samples(body, stream)


async def test_lag_is_last_seq_minus_the_ack_floor_and_moves_with_acks(
    node: NodeHandle, client: NodeClient, stream_name: str
) -> None:
    """A standalone node leads every partition: it exports every consumer's lag per partition."""
    metrics = f"127.0.0.1:{node.metrics_port}"
    await client.create_stream(stream_config(stream_name, subjects=["orders.>", "audit.>"], partitions=2))
    for index in range(6):
        subject = "audit.entry" if index % 3 == 0 else "orders.created"
        await client.publish(stream_name, subject, f"p0-{index}".encode(), partition=0)
    for index in range(4):
        await client.publish(stream_name, "orders.created", f"p1-{index}".encode(), partition=1)
    assert await scrape_lags(metrics, stream_name) == {}  # no consumer, no series

    await client.create_consumer(stream_name, consumer_config("billing"))
    # The filter subject is ignored: the audit consumer's lag counts the orders.* messages too.
    await client.create_consumer(stream_name, consumer_config("audit", filter_subject="audit.>"))
    everything = {("billing", 0): 6, ("billing", 1): 4, ("audit", 0): 6, ("audit", 1): 4}
    assert await scrape_lags(metrics, stream_name) == everything

    # Delivered but not acknowledged is still lag.
    fetched = await client.fetch(stream_name, "billing", 0, batch_size=4)
    assert [message.seq for message in fetched] == [1, 2, 3, 4]
    assert await scrape_lags(metrics, stream_name) == everything

    # Acknowledged: lag = published - acked while the acks are in order ...
    await client.ack_batch(stream_name, "billing", 0, [1, 2])
    assert (await scrape_lags(metrics, stream_name))[("billing", 0)] == 6 - 2
    # ... and it follows the ack floor: an ack above a gap (seq 3 pending) does not move it.
    await client.ack(stream_name, "billing", 0, 4)
    assert (await scrape_lags(metrics, stream_name))[("billing", 0)] == 4
    await client.ack(stream_name, "billing", 0, 3)
    assert (await scrape_lags(metrics, stream_name))[("billing", 0)] == 6 - 4

    # New messages raise it; the other partition and the other consumer did not move.
    for index in range(3):
        await client.publish(stream_name, "orders.created", f"late-{index}".encode(), partition=0)
    lags = await scrape_lags(metrics, stream_name)
    assert lags == {("billing", 0): 9 - 4, ("billing", 1): 4, ("audit", 0): 9, ("audit", 1): 4}

    # The gauge agrees with the consumer's own ack floor (GetConsumerInfo).
    for consumer in ("billing", "audit"):
        info = await client.consumer_info(stream_name, consumer)
        last_seqs = {
            stats.partition: stats.last_seq for stats in (await client.stream_info(stream_name)).stats.partitions
        }
        for entry in info.partitions:
            assert lags[(consumer, entry.partition)] == last_seqs[entry.partition] - entry.ack_floor

    # A deleted consumer's series go away.
    await client.delete_consumer(stream_name, "billing")
    assert await scrape_lags(metrics, stream_name) == {("audit", 0): 9, ("audit", 1): 4}


async def test_only_the_primary_exports_a_partitions_lag(
    cluster_addresses: ClusterAddresses, weir_client: WeirClient, stream_name: str
) -> None:
    """Three replicas of every partition; the secondaries hold the consumer's state too (replicated),
    yet each partition's lag comes from its primary alone, so the cluster sum is right."""
    await weir_client.create_stream(stream_config(stream_name, partitions=3, replicas=3))
    for index in range(15):
        await weir_client.publish(stream_name, "x", f"m-{index}".encode(), partition=index % 3, ack_level="all")
    await weir_client.create_consumer(stream_name, consumer_config("workers", ack_wait_ms=60_000))
    for partition in range(3):
        fetched = await weir_client.fetch(stream_name, "workers", partition, batch_size=3)
        await weir_client.ack_batch(stream_name, "workers", partition, [message.seq for message in fetched[:2]])
    route = await weir_client.route(stream_name, refresh=True)
    primaries = {entry.partition: entry.primary.node_id for entry in route.partitions}

    async def secondaries_hold_the_floor() -> bool:
        for node in cluster_addresses.nodes:
            async with NodeClient(node.internal_address) as internal:  # reads this node's copy
                info = await internal.consumer_info(stream_name, "workers")
            floors = {entry.partition: entry.ack_floor for entry in info.partitions}
            if any(floors.get(partition) != 2 for partition in range(3)):
                return False
        return True

    await eventually(secondaries_hold_the_floor, 20, "every replica holds the consumer's ack floor 2")
    exported: dict[int, list[tuple[str, float]]] = {partition: [] for partition in range(3)}
    for node in cluster_addresses.nodes:
        for (consumer, partition), lag in (await scrape_lags(node.metrics_address, stream_name)).items():
            assert consumer == "workers"
            exported[partition].append((node.node_id, lag))
    assert exported == {partition: [(primaries[partition], 5 - 2)] for partition in range(3)}
