"""Replication sessions (issue 53): one FetchReplicationSession and one ReplicateSession exchange a
round per (primary, follower) node pair, carrying every partition of the pair
(weir_replicator/sessions.py, WEIR_REPLICATOR_REPLICATION_SESSIONS=true), over real processes.

- The session's pure rules: the back-off and the round's wait.
- A cluster whose replicator runs sessions: ack-all publishes on four partitions are acknowledged,
  every copy of every partition ends identical, the nodes served the session calls and never the
  per-partition ones, and work-queue removals reach the secondaries.
- The node's side over gRPC: an entry's error is that entry's answer, never the call's; two pushes
  for one partition are refused whole; a session's wait ends when records arrive.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Iterator

import grpc
import pytest
from weir.client import consumer_config, stream_config
from weir.cluster import WeirClient
from weir.errors import InvalidArgumentError
from weir.v1 import internal_pb2, streams_pb2, streams_pb2_grpc
from weir_cli.launcher import LocalCluster, NodeHandle
from weir_replicator.sessions import MAX_BACKOFF_S, backoff_s, session_wait_ms
from weir_server.internal_clients import ReplicationClient

from tests.conftest import (
    CLUSTER_NODE_ENV,
    CLUSTER_REPLICATOR_ENV,
    CLUSTER_ROUTER_ENV,
    eventually,
    http_get,
    needs_own_processes,
)

pytestmark = pytest.mark.timeout(240)

PARTITIONS = 4
PER_PARTITION = 30


def test_backoff_doubles_from_the_base_up_to_the_ceiling() -> None:
    assert [backoff_s(failures, 0.1) for failures in (1, 2, 3)] == [0.1, 0.2, 0.4]
    assert backoff_s(40, 0.1) == MAX_BACKOFF_S
    assert backoff_s(0, 0.1) == 0.1


def test_a_round_waits_the_shortest_wait_and_not_past_a_member_due_to_retry() -> None:
    assert session_wait_ms([400, 100, 2000], None) == 100
    assert session_wait_ms([400], 0.05) == 50
    assert session_wait_ms([400], -1.0) == 0
    assert session_wait_ms([], None) == 0


@pytest.fixture(scope="module")
def sessions_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    needs_own_processes()
    local = LocalCluster.start(
        tmp_path_factory.mktemp("sessions-cluster"),
        nodes=3,
        routers=1,
        replicators=1,
        node_env=CLUSTER_NODE_ENV,
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env={**CLUSTER_REPLICATOR_ENV, "WEIR_REPLICATOR_REPLICATION_SESSIONS": "true"},
    )
    yield local
    local.stop()


@pytest.fixture(scope="module")
async def client(sessions_cluster: LocalCluster) -> AsyncIterator[WeirClient]:
    async with WeirClient(sessions_cluster.router_addresses) as weir_client:
        yield weir_client


def rpc_count(node: NodeHandle, method: str) -> float:
    page = http_get(f"http://127.0.0.1:{node.metrics_port}/metrics")
    pattern = r'^weir_rpc_duration_seconds_count\{method="' + method + r'"\} (\S+)$'
    return sum(float(count) for count in re.findall(pattern, page, re.M))


async def copy_of(node: NodeHandle, stream: str, partition: int) -> list[tuple[int, bytes]]:
    """(seq, payload) of one node's copy of a partition, read on its internal port."""
    async with grpc.aio.insecure_channel(node.internal_address) as channel:
        stub = streams_pb2_grpc.StreamsStub(channel)
        response = await stub.ReadMessages(
            streams_pb2.ReadMessagesRequest(stream=stream, partition=partition, max_messages=10_000)
        )
    return [(message.seq, message.payload) for message in response.messages]


async def replica_states(
    cluster: LocalCluster, stream: str, partition: int
) -> list[internal_pb2.GetReplicaStateResponse]:
    states = []
    for node in cluster.nodes:
        async with ReplicationClient(node.internal_address) as replication:
            states.append(await replication.replica_state(stream, partition))
    return states


async def test_ack_all_publishes_on_four_partitions_replicate_through_sessions(
    sessions_cluster: LocalCluster, client: WeirClient, stream_name: str
) -> None:
    await client.create_stream(stream_config(stream_name, partitions=PARTITIONS, replicas=3))
    before = {node.name: rpc_count(node, "FetchReplicationSession") for node in sessions_cluster.nodes}

    async def publish_to(partition: int) -> list[int]:
        return [
            (
                await client.publish(
                    stream_name, "s", f"{partition}-{index}".encode(), partition=partition, ack_level="all"
                )
            ).seq
            for index in range(PER_PARTITION)
        ]

    seqs = await asyncio.gather(*(publish_to(partition) for partition in range(PARTITIONS)))
    assert seqs == [list(range(1, PER_PARTITION + 1))] * PARTITIONS
    for partition in range(PARTITIONS):
        expected = [(seq, f"{partition}-{seq - 1}".encode()) for seq in range(1, PER_PARTITION + 1)]
        for node in sessions_cluster.nodes:
            assert await copy_of(node, stream_name, partition) == expected, (node.name, partition)
        states = await replica_states(sessions_cluster, stream_name, partition)
        assert {state.last_seq for state in states} == {PER_PARTITION}
    # The primaries served session fetches, and nobody the per-partition calls.
    assert sum(rpc_count(node, "FetchReplicationSession") - before[node.name] for node in sessions_cluster.nodes) > 0
    for node in sessions_cluster.nodes:
        assert rpc_count(node, "FetchReplicationStream") == 0
        assert rpc_count(node, "ReplicateMessageStream") == 0


async def test_work_queue_removals_reach_the_secondaries_through_sessions(
    sessions_cluster: LocalCluster, client: WeirClient, stream_name: str
) -> None:
    await client.create_stream(stream_config(stream_name, replicas=3, retention="work_queue"))
    await client.create_consumer(stream_name, consumer_config("worker", ack_wait_ms=30_000))
    for index in range(10):
        await client.publish(stream_name, "s", b"job-%d" % index, partition=0, ack_level="all")
    acked = 0
    async with client.consume(stream_name, "worker") as messages:
        async for message in messages:
            await message.ack()
            acked += 1
            if acked == 10:
                break

    async def every_copy_empty() -> bool:
        return all([await copy_of(node, stream_name, 0) == [] for node in sessions_cluster.nodes])

    await eventually(every_copy_empty, 20, "the work-queue acks removed the messages on every copy")


async def test_an_entrys_error_is_its_answer_and_the_others_are_served(
    sessions_cluster: LocalCluster, client: WeirClient, stream_name: str
) -> None:
    await client.create_stream(stream_config(stream_name, replicas=3))
    await client.publish(stream_name, "s", b"one", partition=0, ack_level="all")
    (entry,) = (await client.route(stream_name)).partitions
    by_id = {node.name: node for node in sessions_cluster.nodes}
    primary = by_id[entry.primary.node_id]
    follower = entry.secondaries[0].node_id
    good = internal_pb2.FetchReplicationRequest(
        stream=stream_name,
        partition=0,
        leader_epoch=entry.leader_epoch,
        follower_node_id=follower,
        follower_last_seq=0,
        want_record_batch=True,
    )
    unknown = internal_pb2.FetchReplicationRequest(
        stream=stream_name + "-missing", partition=0, leader_epoch=1, follower_node_id=follower
    )
    async with ReplicationClient(primary.internal_address) as replication:
        session = replication.fetch_session_stream()
        try:
            response = await session.exchange(internal_pb2.FetchSessionRequest(fetches=[good, unknown]), timeout_s=10)
        finally:
            session.close()
    assert [answer.result_code for answer in response.answers] == ["ok", "no_such_stream"]
    assert response.answers[0].record_count == 1 and response.answers[0].last_seq == 1

    async with ReplicationClient(by_id[follower].internal_address) as replication:
        pushes = replication.replicate_session_stream()
        push = internal_pb2.ReplicateMessageRequest(stream=stream_name, partition=0, leader_epoch=entry.leader_epoch)
        try:
            with pytest.raises(InvalidArgumentError, match="at most one per partition"):
                await pushes.exchange(internal_pb2.ReplicateSessionRequest(pushes=[push, push]), timeout_s=10)
        finally:
            pushes.close()
    states = await replica_states(sessions_cluster, stream_name, 0)
    assert {state.last_seq for state in states} == {1}  # the refused push stored nothing


async def test_a_session_wait_ends_when_records_arrive(
    sessions_cluster: LocalCluster, client: WeirClient, stream_name: str
) -> None:
    await client.create_stream(stream_config(stream_name, replicas=3))
    await client.publish(stream_name, "s", b"one", partition=0, ack_level="all")
    (entry,) = (await client.route(stream_name)).partitions
    primary = next(node for node in sessions_cluster.nodes if node.name == entry.primary.node_id)
    caught_up = internal_pb2.FetchReplicationRequest(
        stream=stream_name,
        partition=0,
        leader_epoch=entry.leader_epoch,
        follower_node_id=entry.secondaries[0].node_id,
        follower_last_seq=1,
        want_record_batch=True,
    )
    async with ReplicationClient(primary.internal_address) as replication:
        session = replication.fetch_session_stream()
        try:
            started = time.monotonic()
            waiting = asyncio.ensure_future(
                session.exchange(internal_pb2.FetchSessionRequest(fetches=[caught_up], max_wait_ms=20_000), 30)
            )
            await asyncio.sleep(0.3)
            assert not waiting.done()
            await client.publish(stream_name, "s", b"two", partition=0, ack_level="leader")
            response = await waiting
        finally:
            session.close()
    assert time.monotonic() - started < 10
    (answer,) = response.answers
    assert (answer.result_code, answer.record_count, answer.last_seq) == ("ok", 1, 2)
