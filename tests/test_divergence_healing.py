"""A diverged secondary heals itself (issue 54; weir_replicator/heal.py): the replicator cuts the
follower's log back to the last seq where it matches the primary's and copies the rest again, and
the follower rejoins the in-sync set.

The divergence is made as the issue's fault run made it: on a plaintext cluster, a ReplicateMessage
stores a forged record on a secondary at the primary's next seq. Pure parts first: where the copies
last match, and the windows the walk compares.
"""

from __future__ import annotations

import re
import time
import zlib

import grpc
import pytest
from weir.client import stream_config
from weir.cluster import WeirClient
from weir.v1 import internal_pb2, streams_pb2, streams_pb2_grpc, types_pb2
from weir_cli.launcher import LocalCluster, NodeHandle
from weir_replicator.heal import WINDOW, last_match, window_below
from weir_server.internal_clients import ReplicationClient

from tests.conftest import eventually, http_get, needs_own_processes

pytestmark = pytest.mark.timeout(120)


def test_the_copies_part_after_the_highest_seq_both_hold_alike() -> None:
    primary = [(1, 11), (2, 12), (3, 13), (4, 14)]
    assert last_match(primary, [(1, 11), (2, 12), (3, 99)]) == 2
    assert last_match(primary, [(1, 11), (2, 12), (3, 13), (4, 14)]) == 4
    assert last_match(primary, [(1, 98), (2, 99)]) is None
    # A seq only one copy holds (removed on the other) is no match; the next one down is.
    assert last_match([(1, 11), (3, 13)], [(1, 11), (2, 12), (3, 77)]) == 1


def test_the_walk_compares_windows_down_to_the_lowest_seq_held() -> None:
    assert window_below(5000, 1) == (5000 - WINDOW + 1, WINDOW)
    assert window_below(10, 1) == (1, 10)
    assert window_below(10, 7) == (7, 4)
    assert window_below(6, 7) is None
    assert window_below(0, 0) is None


async def node_state(node: NodeHandle, stream: str) -> internal_pb2.GetReplicaStateResponse:
    async with ReplicationClient(node.internal_address) as replication:
        return await replication.replica_state(stream, 0)


async def copy_of(node: NodeHandle, stream: str) -> list[tuple[int, bytes]]:
    async with grpc.aio.insecure_channel(node.internal_address) as channel:
        response = await streams_pb2_grpc.StreamsStub(channel).ReadMessages(
            streams_pb2.ReadMessagesRequest(stream=stream, partition=0, max_messages=1000)
        )
    return [(message.seq, message.payload) for message in response.messages]


async def in_sync_of(primary: NodeHandle, stream: str) -> list[str]:
    async with grpc.aio.insecure_channel(primary.internal_address) as channel:
        info = await streams_pb2_grpc.StreamsStub(channel).GetStreamInfo(streams_pb2.GetStreamInfoRequest(name=stream))
    return sorted(info.stats.partitions[0].in_sync_node_ids)


def metric(port: int, name: str) -> float:
    page = http_get(f"http://127.0.0.1:{port}/metrics")
    return sum(float(value) for value in re.findall(r"^" + name + r"(?:\{[^}]*\})? (\S+)$", page, re.M))


async def test_a_forged_record_on_a_secondary_is_cut_and_the_copy_rejoins_in_sync(
    cluster: LocalCluster, weir_client: WeirClient, stream_name: str
) -> None:
    needs_own_processes()
    await weir_client.create_stream(stream_config(stream_name, replicas=3))
    for index in range(5):
        await weir_client.publish(stream_name, "s", b"m-%d" % index, partition=0, ack_level="all")
    states = {node.name: await node_state(node, stream_name) for node in cluster.nodes}
    primary = next(node for node in cluster.nodes if states[node.name].role == types_pb2.PARTITION_ROLE_PRIMARY)
    forged_on = next(node for node in cluster.nodes if node is not primary)
    epoch = states[primary.name].leader_epoch
    healed_before = sum(metric(r.metrics_port, "weir_replicator_divergences_healed_total") for r in cluster.replicators)

    forged = types_pb2.Message(seq=6, ts_ms=int(time.time() * 1000), subject="s", payload=b"forged").SerializeToString()
    async with ReplicationClient(forged_on.internal_address) as replication:
        reply = await replication.replicate(
            "ReplicateMessage",
            internal_pb2.ReplicateMessageRequest(
                stream=stream_name,
                partition=0,
                leader_epoch=epoch,
                after_seq=5,
                records=[forged],
                record_crc32s=[zlib.crc32(forged)],
            ),
        )
    assert (reply.result_code, reply.last_seq) == ("ok", 6)  # the copy now diverges at seq 6

    for index in range(5, 10):
        await weir_client.publish(stream_name, "s", b"m-%d" % index, partition=0, ack_level="all")
    expected = [(seq, b"m-%d" % (seq - 1)) for seq in range(1, 11)]
    assert await copy_of(primary, stream_name) == expected

    async def healed() -> bool:
        return await copy_of(forged_on, stream_name) == expected and forged_on.name in await in_sync_of(
            primary, stream_name
        )

    took_s = await eventually(healed, 10, f"{forged_on.name} healed: the primary's records and in sync again")
    assert took_s < 10
    healed_after = sum(metric(r.metrics_port, "weir_replicator_divergences_healed_total") for r in cluster.replicators)
    assert healed_after > healed_before
    assert metric(forged_on.metrics_port, "weir_partition_divergent_truncated_total") >= 1

    async def doctor_shows_it() -> bool:  # `weir doctor`'s figures, from the node's heartbeat
        nodes = {node.node_id: node for node in (await weir_client.cluster_info()).nodes}
        return nodes[forged_on.name].diverged_tails_cut >= 1

    await eventually(doctor_shows_it, 5, f"cluster info (weir doctor) shows {forged_on.name}'s healed tail")
