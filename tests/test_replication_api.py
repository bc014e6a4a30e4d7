"""The node's weir.v1.Replication service over real gRPC, against real processes (DESIGN §5).

Most tests run on a cluster of this module's own started WITHOUT a replicator (`manual`): the test
plays the replicator, pulling with FetchReplication from a partition's primary and pushing with the
Replicate* calls to its secondaries, so every answer (result code, gRPC status, the follower's log
afterwards) is the direct effect of the call. A refused call must change nothing: the follower's
copy (ReadMessages on its internal port, which reads a secondary's copy), its GetReplicaState, and
the primary's high watermark and in-sync set are compared before and after.

The stream-level calls (ReplicateStreamUpdate / Delete / Create, ApplyPlacement) are driven by hand
too; they follow the router's record of the stream in Redis: an update is applied only when its
config is the recorded one (`stale_config` otherwise), and a delete is refused (`still_placed`) while
the router still records the stream. The last tests use the shared cluster (with its replicator;
only its addresses, so they also run against an external one, WEIR_TEST_ROUTERS): an ack_level ALL
publish on a three-replica stream completes and leaves identical copies on all three nodes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
import redis.asyncio
from google.rpc import error_details_pb2, status_pb2
from weir.client import NodeClient, consumer_config, stream_config
from weir.cluster import WeirClient
from weir.errors import InvalidArgumentError, InvalidConfigError, NoSuchStreamError, NotLeaderError, WeirError
from weir.v1 import internal_pb2, internal_pb2_grpc, router_pb2_grpc, streams_pb2, streams_pb2_grpc, types_pb2
from weir_cli.launcher import LocalCluster, NodeHandle
from weir_partition_node import record_batch
from weir_partition_node.storage.base import checksum
from weir_server.internal_clients import ReplicationClient
from weir_server.metadata import Keys

from tests.conftest import ClusterAddresses, NodeAddress, eventually, start_cluster

pytestmark = pytest.mark.timeout(240)

# A node as these tests use it: its id (`name`) and its client and internal addresses; a process
# handle of the module's own cluster or the address of a node of the shared (maybe external) one.
ClusterNode = NodeHandle | NodeAddress

TIMEOUT_S = 15.0
PRIMARY = types_pb2.PARTITION_ROLE_PRIMARY
SECONDARY = types_pb2.PARTITION_ROLE_SECONDARY


# -- fixtures ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def manual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A cluster with no replicator: nothing but the test calls Replicate* on the secondaries."""
    local = start_cluster(tmp_path_factory.mktemp("replication-api"), routers=1, replicators=0)
    yield local
    local.stop()


@pytest.fixture(scope="module")
async def manual_client(manual: LocalCluster) -> AsyncIterator[WeirClient]:
    async with WeirClient(manual.router_addresses) as client:
        yield client


# -- helpers -------------------------------------------------------------------------------------------


def replication(node: ClusterNode) -> ReplicationClient:
    """weir.v1.Replication on the node's internal port (`async with` closes it)."""
    return ReplicationClient(node.internal_address, timeout_s=TIMEOUT_S)


def internal(node: ClusterNode) -> NodeClient:
    """weir.v1.Streams on the node's internal port (reads a secondary's copy too)."""
    return NodeClient(node.internal_address, timeout_s=TIMEOUT_S)


def client_port(node: ClusterNode) -> NodeClient:
    """weir.v1.Streams on the node's client port."""
    return NodeClient(node.client_address, timeout_s=TIMEOUT_S)


@dataclass
class Placed:
    """A one-partition, three-replica stream and where the router put it."""

    stream: str
    epoch: int
    primary: ClusterNode
    secondaries: list[ClusterNode]

    @property
    def first(self) -> ClusterNode:
        return self.secondaries[0]

    @property
    def second(self) -> ClusterNode:
        return self.secondaries[1]


async def place(cluster: LocalCluster | ClusterAddresses, client: WeirClient, stream: str, **config: Any) -> Placed:
    await client.create_stream(stream_config(stream, partitions=1, replicas=3, **config))
    (entry,) = (await client.route(stream)).partitions
    by_id: dict[str, ClusterNode] = {node.name: node for node in cluster.nodes}
    return Placed(
        stream,
        entry.leader_epoch,
        by_id[entry.primary.node_id],
        [by_id[broker.node_id] for broker in entry.secondaries],
    )


async def publish(placed: Placed, count: int, prefix: str = "m") -> list[int]:
    """`count` ack_level leader publishes straight to the primary; their seqs."""
    async with client_port(placed.primary) as node:
        acks = [
            await node.publish(placed.stream, f"orders.{index}", f"{prefix}-{index}".encode(), ack_level="leader")
            for index in range(count)
        ]
    return [ack.seq for ack in acks]


async def copy_of(node: ClusterNode, stream: str, partition: int = 0) -> list[types_pb2.Message]:
    """Every message of one node's copy of a partition (its internal port reads secondaries too)."""
    async with internal(node) as client:
        return [message async for message in client.read_all(stream, partition)]


def seqs(messages: list[types_pb2.Message]) -> list[int]:
    return [message.seq for message in messages]


async def state_of(node: ClusterNode, stream: str, partition: int = 0) -> internal_pb2.GetReplicaStateResponse:
    async with replication(node) as client:
        return await client.replica_state(stream, partition)


async def stats_of(node: ClusterNode, stream: str, partition: int = 0) -> types_pb2.PartitionStats:
    """The node's own PartitionStats (GetStreamInfo on its internal port)."""
    async with internal(node) as client:
        info = await client.stream_info(stream)
    return next(entry for entry in info.stats.partitions if entry.partition == partition)


async def fetch(
    placed: Placed,
    follower: ClusterNode,
    follower_last_seq: int,
    *,
    node: ClusterNode | None = None,
    epoch: int | None = None,
    **fields: Any,
) -> internal_pb2.FetchReplicationResponse:
    """FetchReplication on `node` (default: the primary) for `follower`."""
    request = internal_pb2.FetchReplicationRequest(
        stream=placed.stream,
        partition=0,
        leader_epoch=placed.epoch if epoch is None else epoch,
        follower_node_id=follower.name,
        follower_last_seq=follower_last_seq,
        **fields,
    )
    async with replication(node or placed.primary) as client:
        return await client.fetch(request, timeout_s=TIMEOUT_S + request.max_wait_ms / 1000)


async def replicate(node: ClusterNode, method: str, request: Any) -> internal_pb2.ReplicateResponse:
    async with replication(node) as client:
        return await client.replicate(method, request)


def message_request(
    placed: Placed, after_seq: int, records: list[bytes], *, epoch: int | None = None, **fields: Any
) -> internal_pb2.ReplicateMessageRequest:
    return internal_pb2.ReplicateMessageRequest(
        stream=placed.stream,
        partition=0,
        leader_epoch=placed.epoch if epoch is None else epoch,
        after_seq=after_seq,
        records=records,
        **fields,
    )


def record(seq: int, payload: bytes, subject: str = "orders.x", ts_ms: int = 1_700_000_000_000) -> bytes:
    """An encoded Message as a primary stores it (seq and ts_ms set)."""
    return types_pb2.Message(seq=seq, subject=subject, payload=payload, ts_ms=ts_ms, partition=0).SerializeToString()


async def ship(placed: Placed, follower: ClusterNode, after_seq: int = 0) -> internal_pb2.ReplicateResponse:
    """One replicator round by hand: fetch for `follower` from the primary, push what came back."""
    pulled = await fetch(placed, follower, after_seq)
    assert pulled.result_code == "ok", pulled.message
    reply = await replicate(
        follower,
        "ReplicateMessage",
        message_request(placed, after_seq, list(pulled.records), high_watermark=pulled.high_watermark),
    )
    assert (reply.result_code, reply.success) == ("ok", True), reply.message
    return reply


@dataclass(frozen=True)
class Failure:
    code: grpc.StatusCode
    reason: str
    message: str


async def raw_failure(
    address: str, method: str, request: Any, stub: Any = internal_pb2_grpc.ReplicationStub
) -> Failure:
    """Call `method` with a raw stub; the call must fail. Returns its status code, the ErrorInfo
    reason (empty when there is none) and the status message."""
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            await getattr(stub(channel), method)(request, timeout=TIMEOUT_S)
        except grpc.aio.AioRpcError as error:
            reason = ""
            for key, value in error.trailing_metadata() or ():
                if key == "grpc-status-details-bin" and isinstance(value, bytes):
                    for detail in status_pb2.Status.FromString(value).details:
                        info = error_details_pb2.ErrorInfo()
                        if detail.Unpack(info):
                            reason = info.reason
            return Failure(error.code(), reason, error.details() or "")
    raise AssertionError(f"{method} on {address} succeeded; a failure was expected")


async def stream_record(cluster: LocalCluster, stream: str) -> types_pb2.StreamRecord:
    """The router's record of `stream` (config, placement, epochs) as stored in the cluster's Redis."""
    client = redis.asyncio.from_url(cluster.redis.url)
    try:
        raw = await client.get(Keys().stream(stream))
    finally:
        await client.aclose()
    assert isinstance(raw, bytes) and raw, f"no record of {stream}"
    return types_pb2.StreamRecord.FromString(raw)


@dataclass(frozen=True)
class Snapshot:
    """What a replica holds of a partition: its messages and its replica state."""

    messages: list[types_pb2.Message]
    state: internal_pb2.GetReplicaStateResponse


async def snapshot(node: ClusterNode, stream: str) -> Snapshot:
    return Snapshot(await copy_of(node, stream), await state_of(node, stream))


# -- 1. where the service is served -------------------------------------------------------------------


async def test_replication_is_served_on_the_internal_port_and_never_on_the_client_port(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    placed = await place(manual, manual_client, stream_name)
    calls: list[tuple[str, Any]] = [
        ("GetReplicaState", internal_pb2.GetReplicaStateRequest(stream=stream_name, partition=0)),
        (
            "FetchReplication",
            internal_pb2.FetchReplicationRequest(
                stream=stream_name, leader_epoch=placed.epoch, follower_node_id=placed.first.name
            ),
        ),
        ("ReplicateMessage", message_request(placed, 0, [record(1, b"sneaked in")])),
        ("ReplicateTruncate", internal_pb2.ReplicateTruncateRequest(stream=stream_name, leader_epoch=1, first_seq=5)),
        ("ReplicateStreamDelete", internal_pb2.ReplicateStreamDeleteRequest(stream=stream_name)),
    ]
    for node in manual.nodes:
        for method, request in calls:
            failure = await raw_failure(node.client_address, method, request)
            assert failure.code == grpc.StatusCode.UNIMPLEMENTED, (node.name, method, failure)

    # The same node answers on its internal port, in the role the router placed it in.
    for node in manual.nodes:
        state = await state_of(node, stream_name)
        assert state.node_id == node.name
        assert state.role == (PRIMARY if node is placed.primary else SECONDARY)
        assert (state.leader_epoch, state.replica_epoch) == (placed.epoch, placed.epoch)
        assert (state.first_seq, state.last_seq) == (1, 0)
    # ... and nothing reached any copy through the client port (the stream still exists everywhere).
    for node in manual.nodes:
        assert await copy_of(node, stream_name) == []

    missing = await raw_failure(
        placed.primary.internal_address,
        "GetReplicaState",
        internal_pb2.GetReplicaStateRequest(stream=f"{stream_name}-missing", partition=0),
    )
    assert (missing.code, missing.reason) == (grpc.StatusCode.NOT_FOUND, "no_such_stream")
    no_partition = await raw_failure(
        placed.primary.internal_address,
        "GetReplicaState",
        internal_pb2.GetReplicaStateRequest(stream=stream_name, partition=1),
    )
    assert (no_partition.code, no_partition.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "no_such_partition")


# -- 2. ReplicateMessage ------------------------------------------------------------------------------


async def test_replicate_message_applies_the_primarys_records_and_a_replay_is_idempotent(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    placed = await place(manual, manual_client, stream_name)
    assert await publish(placed, 3) == [1, 2, 3]
    primary_copy = await copy_of(placed.primary, stream_name)
    assert seqs(primary_copy) == [1, 2, 3]

    pulled = await fetch(placed, placed.first, 0)
    assert pulled.result_code == "ok", pulled.message
    assert [types_pb2.Message.FromString(raw) for raw in pulled.records] == primary_copy
    assert (pulled.first_seq, pulled.last_seq, pulled.leader_epoch) == (1, 3, placed.epoch)

    request = message_request(placed, 0, list(pulled.records), high_watermark=pulled.high_watermark)
    applied = await replicate(placed.first, "ReplicateMessage", request)
    assert (applied.result_code, applied.success) == ("ok", True), applied.message
    assert (applied.first_seq, applied.last_seq, applied.leader_epoch) == (1, 3, placed.epoch)
    assert await copy_of(placed.first, stream_name) == primary_copy  # the primary's seqs, timestamps, bytes

    # A replay (the replicator lost the answer) and an overlapping resend are accepted, nothing doubles.
    replay = await replicate(placed.first, "ReplicateMessage", request)
    assert (replay.result_code, replay.success, replay.last_seq) == ("ok", True, 3), replay.message
    overlap = await replicate(placed.first, "ReplicateMessage", message_request(placed, 1, list(pulled.records[1:])))
    assert (overlap.result_code, overlap.last_seq) == ("ok", 3), overlap.message
    assert await copy_of(placed.first, stream_name) == primary_copy

    state = await state_of(placed.first, stream_name)
    assert (state.role, state.first_seq, state.last_seq) == (SECONDARY, 1, 3)
    assert (state.replica_epoch, state.leader_epoch) == (placed.epoch, placed.epoch)
    stats = await stats_of(placed.first, stream_name)
    assert (stats.msg_count, stats.first_seq, stats.last_seq) == (3, 1, 3)

    # Records published later follow on at their seqs; the other secondary was never touched.
    await publish(placed, 2, prefix="later")
    await ship(placed, placed.first, after_seq=3)
    assert await copy_of(placed.first, stream_name) == await copy_of(placed.primary, stream_name)
    assert seqs(await copy_of(placed.first, stream_name)) == [1, 2, 3, 4, 5]
    untouched = await state_of(placed.second, stream_name)
    assert (untouched.first_seq, untouched.last_seq) == (1, 0)
    assert await copy_of(placed.second, stream_name) == []


async def test_replicate_message_refusals_change_nothing(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 3)
    pulled = await fetch(placed, placed.first, 0)
    real = list(pulled.records)
    first_two = await replicate(placed.first, "ReplicateMessage", message_request(placed, 0, real[:2]))
    assert (first_two.result_code, first_two.last_seq) == ("ok", 2)
    before = await snapshot(placed.first, stream_name)
    primary_before = await snapshot(placed.primary, stream_name)
    assert seqs(before.messages) == [1, 2]

    async def refused(
        request: internal_pb2.ReplicateMessageRequest, code: str, node: ClusterNode = placed.first
    ) -> None:
        reply = await replicate(node, "ReplicateMessage", request)
        assert (reply.result_code, reply.success) == (code, False), (code, reply)
        assert reply.message
        if code not in ("no_such_stream", "no_such_partition"):
            held = before.state if node is placed.first else primary_before.state
            assert (reply.first_seq, reply.last_seq, reply.leader_epoch) == (
                held.first_seq,
                held.last_seq,
                placed.epoch,
            )

    # The follower's log ends at 2: records said to follow seq 3 cannot be placed (resend from 2).
    await refused(message_request(placed, 3, [record(4, b"four")]), "out_of_order")
    await refused(message_request(placed, 10, [record(11, b"far ahead")]), "out_of_order")
    # Another record at a seq the follower holds: divergence, and the new record after it is not kept.
    await refused(message_request(placed, 1, [record(2, b"not what the primary wrote"), real[2]]), "divergence")
    await refused(message_request(placed, 0, [real[0], record(2, b"other"), real[2]]), "divergence")
    # Under an older leader epoch (a deposed primary's replicator): fenced; a newer one: stale_epoch.
    await refused(message_request(placed, 2, real[2:], epoch=placed.epoch - 1), "fenced")
    await refused(message_request(placed, 2, real[2:], epoch=placed.epoch + 1), "stale_epoch")
    await refused(message_request(placed, 2, real[2:], epoch=placed.epoch + 1000), "stale_epoch")
    # The primary never takes replicated records.
    await refused(message_request(placed, 3, [record(4, b"into the primary")]), "not_follower", placed.primary)
    await refused(message_request(placed, 0, real), "not_follower", placed.primary)
    # Unknown stream or partition: in-band result codes.
    unknown = message_request(placed, 2, real[2:])
    unknown.stream = f"{stream_name}-missing"
    await refused(unknown, "no_such_stream")
    unknown_partition = message_request(placed, 2, real[2:])
    unknown_partition.partition = 7
    await refused(unknown_partition, "no_such_partition")

    # Malformed: seqs that do not increase after after_seq.
    for bad in (
        message_request(placed, 2, [record(4, b"a"), record(3, b"b")]),
        message_request(placed, 2, [record(3, b"a"), record(3, b"b")]),
        message_request(placed, 2, [record(2, b"at after_seq")]),
        message_request(placed, 2, [record(0, b"no seq")]),
    ):
        failure = await raw_failure(placed.first.internal_address, "ReplicateMessage", bad)
        assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"), failure
        assert "seq" in failure.message

    assert await snapshot(placed.first, stream_name) == before
    assert await snapshot(placed.primary, stream_name) == primary_before
    assert await copy_of(placed.second, stream_name) == []

    # After all that, the right call still applies.
    rest = await replicate(placed.first, "ReplicateMessage", message_request(placed, 2, real[2:]))
    assert (rest.result_code, rest.last_seq) == ("ok", 3)
    assert await copy_of(placed.first, stream_name) == primary_before.messages


async def test_replicate_message_with_an_undecodable_record_is_invalid_argument(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """Records are decoded and checked before anything is queued: a record that is not an encoded
    weir.v1.Message fails the call with INVALID_ARGUMENT naming it, and nothing of the batch (not
    even the valid records before it) is stored."""
    placed = await place(manual, manual_client, stream_name)
    before = await snapshot(placed.first, stream_name)
    for records, index in (
        ([b"\xff\xff\xff not a message"], 0),
        ([record(1, b"fine"), b"\xff\xff\xff not a message"], 1),
    ):
        failure = await raw_failure(
            placed.first.internal_address, "ReplicateMessage", message_request(placed, 0, records)
        )
        assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"), failure
        assert f"records[{index}]" in failure.message, failure
        assert await snapshot(placed.first, stream_name) == before
    good = await replicate(placed.first, "ReplicateMessage", message_request(placed, 0, [record(1, b"fine")]))
    assert (good.result_code, good.last_seq) == ("ok", 1)  # the partition was not left failed
    assert seqs(await copy_of(placed.first, stream_name)) == [1]


# -- 2b. record batches (issue 25: what this version's replicator ships) -------------------------------


def batch_request(
    placed: Placed, after_seq: int, batches: list[bytes], **fields: Any
) -> internal_pb2.ReplicateMessageRequest:
    return internal_pb2.ReplicateMessageRequest(
        stream=placed.stream,
        partition=0,
        leader_epoch=placed.epoch,
        after_seq=after_seq,
        record_batches=batches,
        **fields,
    )


async def test_record_batches_from_the_primary_apply_on_a_secondary_as_the_records_would(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """FetchReplication with want_record_batch answers record batches (no record list), one per
    commit, each following the one before, holding what the primary stores, indexed without
    decoding: subject, timestamp, msg_id. Pushed as they came, the secondary's copy is the
    primary's; batches out of order, or said to follow another seq than after_seq, are refused
    whole."""
    placed = await place(manual, manual_client, stream_name)
    async with client_port(placed.primary) as node:
        await node.publish(stream_name, "orders.a", b"one", msg_id="order-1")
        await node.publish(stream_name, "orders.b", b"two")
    pulled = await fetch(placed, placed.first, 0, want_record_batch=True)
    assert pulled.result_code == "ok", pulled.message
    assert (list(pulled.records), pulled.record_count, len(pulled.record_batches)) == ([], 2, 2)
    first, second = (record_batch.decode(data) for data in pulled.record_batches)
    primary_copy = await copy_of(placed.primary, stream_name)
    entries = first.records + second.records
    assert [types_pb2.Message.FromString(entry.record) for entry in entries] == primary_copy
    assert [(entry.seq, entry.subject, entry.msg_id) for entry in entries] == [
        (1, "orders.a", "order-1"),
        (2, "orders.b", ""),
    ]
    assert [entry.ts_ms for entry in entries] == [message.ts_ms for message in primary_copy]
    assert (first.previous_seq, first.previous_crc32, first.leader_epoch) == (0, None, placed.epoch)
    assert (second.previous_seq, second.previous_crc32) == (1, first.records[0].crc32)

    batches = list(pulled.record_batches)
    for bad, says in (
        (batch_request(placed, 1, batches), "after_seq is 1"),
        (batch_request(placed, 0, batches[::-1]), "follows seq 1"),
        (batch_request(placed, 0, [batches[0], batches[0]]), "does not follow record_batches[0]"),
        (batch_request(placed, 0, batches, records=[record(1, b"one")]), "not both"),
    ):
        failure = await raw_failure(placed.first.internal_address, "ReplicateMessage", bad)
        assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"), failure
        assert says in failure.message, failure
    assert await copy_of(placed.first, stream_name) == []

    applied = await replicate(placed.first, "ReplicateMessage", batch_request(placed, 0, batches))
    assert (applied.result_code, applied.last_seq) == ("ok", 2), applied.message
    assert await copy_of(placed.first, stream_name) == primary_copy
    await publish(placed, 2, prefix="later")
    after = await fetch(placed, placed.first, 2, want_record_batch=True)
    following = record_batch.decode(after.record_batches[0])
    assert (following.previous_seq, following.previous_crc32) == (2, second.records[0].crc32)
    applied = await replicate(placed.first, "ReplicateMessage", batch_request(placed, 2, list(after.record_batches)))
    assert (applied.result_code, applied.last_seq) == ("ok", 4), applied.message
    assert await copy_of(placed.first, stream_name) == await copy_of(placed.primary, stream_name)


async def test_a_follower_inside_a_commit_or_behind_a_removal_gets_what_the_log_holds(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """A follower whose log ends inside a commit gets the rest from the log, as one batch that
    follows its last seq; a message the primary removed after its commit is never shipped again
    (its commit's batch is no longer used)."""
    placed = await place(manual, manual_client, stream_name)
    entries = [streams_pb2.PublishEntry(subject=f"orders.{index}", payload=b"p%d" % index) for index in range(4)]
    async with client_port(placed.primary) as node:
        await node.publish_batch(stream_name, entries)  # one commit: seqs 1-4
        inside = await fetch(placed, placed.first, 2, want_record_batch=True)
        (batch,) = (record_batch.decode(data) for data in inside.record_batches)
        assert ([entry.seq for entry in batch.records], batch.previous_seq) == ([3, 4], 2)
        assert batch.previous_crc32 == checksum((await node.get_message(stream_name, 0, 2)).SerializeToString())
        await node.purge_partition(stream_name, 0, seqs=[3])
    pulled = await fetch(placed, placed.first, 0, want_record_batch=True)
    shipped = [entry.seq for data in pulled.record_batches for entry in record_batch.decode(data).records]
    assert shipped == [1, 2, 4]
    applied = await replicate(placed.first, "ReplicateMessage", batch_request(placed, 0, list(pulled.record_batches)))
    assert (applied.result_code, applied.last_seq) == ("ok", 4), applied.message
    assert seqs(await copy_of(placed.first, stream_name)) == [1, 2, 4]


async def test_a_follower_behind_the_primarys_retention_gets_a_batch_that_follows_the_truncation(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """Retention removed what a follower has not read: the batch follows the seq before the
    primary's first stored one, which is where the follower's log ends once the replicator has
    truncated it (ReplicateTruncate, sent before the push), so the push applies at once."""
    placed = await place(manual, manual_client, stream_name, max_msgs=2)
    await publish(placed, 5)  # the primary keeps seqs 4 and 5
    pulled = await fetch(placed, placed.first, 0, want_record_batch=True)
    assert pulled.first_seq == 4
    (batch,) = (record_batch.decode(data) for data in pulled.record_batches)
    assert ([entry.seq for entry in batch.records], batch.previous_seq, batch.previous_crc32) == ([4, 5], 3, None)
    truncate = internal_pb2.ReplicateTruncateRequest(
        stream=stream_name, partition=0, leader_epoch=placed.epoch, first_seq=pulled.first_seq
    )
    cut = await replicate(placed.first, "ReplicateTruncate", truncate)
    assert (cut.result_code, cut.last_seq) == ("ok", 3)
    applied = await replicate(placed.first, "ReplicateMessage", batch_request(placed, 3, list(pulled.record_batches)))
    assert (applied.result_code, applied.first_seq, applied.last_seq) == ("ok", 4, 5), applied.message
    assert await copy_of(placed.first, stream_name) == await copy_of(placed.primary, stream_name)


async def test_a_record_batch_damaged_in_flight_is_refused_whole_and_nothing_is_stored(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """One flipped byte anywhere in a relayed batch (header, index section, a record) fails the
    push with INVALID_ARGUMENT saying it is damaged; the secondary stores none of the request (not
    the undamaged batch before it either), and the undamaged batches apply afterwards."""
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 3)
    pulled = await fetch(placed, placed.first, 0, want_record_batch=True)
    batches = list(pulled.record_batches)
    assert len(batches) == 3
    data = batches[-1]
    before = await snapshot(placed.first, stream_name)
    for index in (4, 9, record_batch.HEADER.size + 2, len(data) // 2, len(data) - 1):
        damaged = bytearray(data)
        damaged[index] ^= 0x10
        request = batch_request(placed, 0, [*batches[:-1], bytes(damaged)])
        failure = await raw_failure(placed.first.internal_address, "ReplicateMessage", request)
        assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"), failure
        assert "record_batches[2]" in failure.message and "damaged" in failure.message, failure
        assert "nothing stored" in failure.message, failure
        assert await snapshot(placed.first, stream_name) == before
    applied = await replicate(placed.first, "ReplicateMessage", batch_request(placed, 0, batches))
    assert (applied.result_code, applied.last_seq) == ("ok", 3), applied.message
    assert await copy_of(placed.first, stream_name) == await copy_of(placed.primary, stream_name)


async def test_a_record_batch_that_does_not_extend_the_followers_log_is_a_divergence(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """The log-matching check travels inside the batch: one whose record at after_seq (by its
    CRC-32) is not the follower's is refused as a divergence, with nothing stored."""
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 3)
    await ship(placed, placed.first)
    before = await snapshot(placed.first, stream_name)
    body = record(4, b"four")
    forged = record_batch.encode(
        [record_batch.BatchRecord(4, 1_700_000_000_000, "orders.x", body, checksum(body))],
        leader_epoch=placed.epoch,
        previous_seq=3,
        previous_crc32=checksum(record(3, b"not the follower's seq 3")),
    )
    reply = await replicate(placed.first, "ReplicateMessage", batch_request(placed, 3, [forged]))
    assert (reply.result_code, reply.success) == ("divergence", False), reply
    assert await snapshot(placed.first, stream_name) == before
    stale = record_batch.encode(
        [record_batch.BatchRecord(4, 1, "orders.x", body, checksum(body))],
        leader_epoch=placed.epoch - 1,
        previous_seq=3,
        previous_crc32=None,
    )
    failure = await raw_failure(placed.first.internal_address, "ReplicateMessage", batch_request(placed, 3, [stale]))
    assert "relayed under leader epoch" in failure.message
    assert await snapshot(placed.first, stream_name) == before


# -- 3. FetchReplication ------------------------------------------------------------------------------


async def test_fetch_replication_progress_reports_raise_the_high_watermark(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 4)

    # Both followers pull and apply everything, then report it with their next fetch.
    for follower in placed.secondaries:
        await ship(placed, follower)
    first_report = await fetch(placed, placed.first, 4)
    assert first_report.result_code == "ok"
    assert list(first_report.records) == []  # nothing after 4
    assert first_report.last_seq == 4
    # The high watermark is the lowest end among the in-sync replicas: while the second follower
    # (which reported 0 so far) is in sync, it holds the watermark at 0; when it already left the
    # set (it lags for longer than the lag bound), the primary alone decides.
    in_sync = list(first_report.in_sync_node_ids)
    assert in_sync[0] == placed.primary.name
    assert first_report.high_watermark == (0 if placed.second.name in in_sync else 4), first_report

    second_report = await fetch(placed, placed.second, 4)
    assert (second_report.result_code, second_report.high_watermark) == ("ok", 4)

    expected = [placed.primary.name, *sorted(node.name for node in placed.secondaries)]

    async def all_in_sync() -> bool:
        for follower in placed.secondaries:  # keep reporting, as a replicator's fetch loop does
            await fetch(placed, follower, 4)
        stats = await stats_of(placed.primary, stream_name)
        return list(stats.in_sync_node_ids) == expected

    await eventually(all_in_sync, TIMEOUT_S, f"in-sync set {expected}")
    state = await state_of(placed.primary, stream_name)
    assert (state.role, state.last_seq, state.high_watermark) == (PRIMARY, 4, 4)
    routed = (await manual_client.stream_info(stream_name)).partitions[0]
    assert (routed.high_watermark, routed.last_seq) == (4, 4)
    assert list(routed.in_sync_node_ids) == expected
    # The secondaries learned the watermark from the ReplicateMessage that carried it, not beyond their log.
    for follower in placed.secondaries:
        assert (await state_of(follower, stream_name)).high_watermark <= 4


async def test_one_fetch_for_followers_in_step_reports_each_of_them(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """issue 25: a replicator fetches once for the followers whose logs end at the same seq
    (sharing_node_ids); the primary counts the fetch as each one's report."""
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 4)
    for follower in placed.secondaries:
        await ship(placed, follower)

    alone = await fetch(placed, placed.first, 4)
    assert (alone.result_code, alone.sharing_reported) == ("ok", False)
    shared = await fetch(placed, placed.first, 4, sharing_node_ids=[placed.second.name])
    assert (shared.result_code, shared.sharing_reported, shared.last_seq) == ("ok", True, 4), shared
    # Both reported 4 in one call: the watermark no longer waits for the second follower.
    assert shared.high_watermark == 4, shared
    expected = [placed.primary.name, *sorted(node.name for node in placed.secondaries)]

    async def all_in_sync() -> bool:
        await fetch(placed, placed.second, 4, sharing_node_ids=[placed.first.name])
        return list((await stats_of(placed.primary, stream_name)).in_sync_node_ids) == expected

    await eventually(all_in_sync, TIMEOUT_S, f"in-sync set {expected} from shared fetches alone")

    # A shared long poll answers both with the same records when a publish arrives.
    poll = asyncio.get_running_loop().create_task(
        fetch(
            placed, placed.first, 4, sharing_node_ids=[placed.second.name], max_wait_ms=20_000, want_record_batch=True
        )
    )
    await asyncio.sleep(0.3)
    assert not poll.done()
    await publish(placed, 1, prefix="wake")
    answer = await asyncio.wait_for(poll, TIMEOUT_S)
    assert (answer.result_code, answer.record_count, len(answer.record_batches)) == ("ok", 1, 1), answer


async def test_fetch_replication_refusals_record_no_progress(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 3)

    # With nobody replicating, both followers drop out of the in-sync set after the lag bound.
    async def followers_dropped() -> bool:
        return list((await stats_of(placed.primary, stream_name)).in_sync_node_ids) == [placed.primary.name]

    await eventually(followers_dropped, TIMEOUT_S, "the followers left the in-sync set")
    before = await state_of(placed.primary, stream_name)
    assert before.high_watermark == 3

    bad_arguments: list[tuple[dict[str, Any], str]] = [
        ({"max_messages": 10_001}, "max_messages"),
        ({"max_wait_ms": 30_001}, "max_wait_ms"),
        ({"sharing_node_ids": [placed.first.name]}, "sharing_node_ids"),
        ({"sharing_node_ids": [placed.second.name, placed.second.name]}, "sharing_node_ids"),
        ({"sharing_node_ids": [""]}, "sharing_node_ids"),
        ({"sharing_node_ids": [f"node-{index}" for index in range(16)]}, "sharing_node_ids: at most 15"),
    ]
    for fields, fragment in bad_arguments:
        request = internal_pb2.FetchReplicationRequest(
            stream=stream_name,
            leader_epoch=placed.epoch,
            follower_node_id=placed.first.name,
            follower_last_seq=3,
            **fields,
        )
        failure = await raw_failure(placed.primary.internal_address, "FetchReplication", request)
        assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"), failure
        assert fragment in failure.message
    anonymous = internal_pb2.FetchReplicationRequest(stream=stream_name, leader_epoch=placed.epoch, follower_last_seq=3)
    failure = await raw_failure(placed.primary.internal_address, "FetchReplication", anonymous)
    assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"), failure
    assert "follower_node_id" in failure.message

    fenced = await fetch(placed, placed.first, 0, epoch=placed.epoch - 1)
    assert (fenced.result_code, fenced.leader_epoch, list(fenced.records)) == ("fenced", placed.epoch, [])
    stale = await fetch(placed, placed.first, 0, epoch=placed.epoch + 1)
    assert (stale.result_code, stale.leader_epoch, list(stale.records)) == ("stale_epoch", placed.epoch, [])
    for secondary in placed.secondaries:
        refused = await fetch(placed, placed.first, 0, node=secondary)
        assert (refused.result_code, list(refused.records)) == ("not_leader", []), refused
        assert refused.message

    # Refused fetches reported nothing: no follower came back into the in-sync set.
    for follower in placed.secondaries:
        await fetch(placed, follower, 3, epoch=placed.epoch - 1)
        await fetch(placed, follower, 3, node=follower)
    await asyncio.sleep(0.5)
    assert await followers_dropped()
    assert await state_of(placed.primary, stream_name) == before

    # The limits themselves are accepted, and a valid report lets the follower rejoin.
    at_limits = await fetch(placed, placed.first, 0, max_messages=10_000, max_wait_ms=30_000)
    assert (at_limits.result_code, len(at_limits.records)) == ("ok", 3)
    one = await fetch(placed, placed.first, 0, max_messages=1)
    assert [types_pb2.Message.FromString(raw).seq for raw in one.records] == [1]

    async def rejoined() -> bool:
        await fetch(placed, placed.first, 3)
        return placed.first.name in (await stats_of(placed.primary, stream_name)).in_sync_node_ids

    await eventually(rejoined, TIMEOUT_S, f"{placed.first.name} rejoined after a valid report")


async def test_fetch_replication_long_polls_until_a_publish_arrives(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 2)

    started = time.monotonic()
    empty = await fetch(placed, placed.first, 2, max_wait_ms=400)
    waited = time.monotonic() - started
    assert (empty.result_code, list(empty.records), empty.last_seq) == ("ok", [], 2)
    assert waited >= 0.35, f"answered after {waited:.2f}s, before max_wait_ms"

    loop = asyncio.get_running_loop()
    started = time.monotonic()
    poll = loop.create_task(fetch(placed, placed.first, 2, max_wait_ms=20_000))
    await asyncio.sleep(0.5)
    assert not poll.done(), "the fetch answered before anything new was published"
    await publish(placed, 1, prefix="wake")
    answer = await asyncio.wait_for(poll, TIMEOUT_S)
    took = time.monotonic() - started
    assert answer.result_code == "ok"
    (message,) = [types_pb2.Message.FromString(raw) for raw in answer.records]
    assert (message.seq, message.payload) == (3, b"wake-0")
    assert took < 10.0, f"the long poll took {took:.1f}s to see the publish"


async def test_a_fetch_waiting_for_records_only_sleeps_through_deliveries(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """wait_for_records_only (issue 25): a consumer's deliveries commit on the primary without
    ending the fetch's wait, a publish ends it; without it, a delivery ends the wait with an empty
    answer (what an earlier replicator relies on to ship consumer state soon)."""
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 2)
    await manual_client.create_consumer(stream_name, consumer_config("workers", ack_wait_ms=60_000))
    loop = asyncio.get_running_loop()
    records_only = loop.create_task(fetch(placed, placed.first, 2, max_wait_ms=20_000, wait_for_records_only=True))
    either = loop.create_task(fetch(placed, placed.second, 2, max_wait_ms=20_000))
    await asyncio.sleep(0.5)
    assert not records_only.done() and not either.done(), "a fetch answered before anything happened"
    async with client_port(placed.primary) as direct:
        delivered = await direct.fetch(stream_name, "workers", 0, batch_size=2)
    assert seqs(delivered) == [1, 2]
    woken = await asyncio.wait_for(either, 10)
    assert (woken.result_code, list(woken.records), woken.last_seq) == ("ok", [], 2)
    await asyncio.sleep(0.5)
    assert not records_only.done(), "the deliveries ended a wait for records only"
    await publish(placed, 1, prefix="wake")
    answer = await asyncio.wait_for(records_only, 10)
    (message,) = [types_pb2.Message.FromString(raw) for raw in answer.records]
    assert (message.seq, message.payload) == (3, b"wake-0")


async def test_a_work_queue_ack_ends_a_wait_for_records_only(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """An ack on a work-queue stream removes the message on the primary; the removal reaches the
    followers after a round of their fetch, so it ends even a wait for records only (it is not
    held back until the next consumer snapshot)."""
    placed = await place(manual, manual_client, stream_name, retention="work_queue")
    await publish(placed, 2)
    await manual_client.create_consumer(stream_name, consumer_config("workers", ack_wait_ms=60_000))
    async with client_port(placed.primary) as direct:
        delivered = await direct.fetch(stream_name, "workers", 0, batch_size=2)
        records_only = asyncio.get_running_loop().create_task(
            fetch(placed, placed.first, 2, max_wait_ms=20_000, wait_for_records_only=True)
        )
        await asyncio.sleep(0.5)
        assert not records_only.done(), "the fetch answered before anything happened"
        await direct.ack_batch(stream_name, "workers", 0, [message.seq for message in delivered])
    woken = await asyncio.wait_for(records_only, 10)
    assert (woken.result_code, list(woken.records), woken.last_seq) == ("ok", [], 2)
    assert (await stats_of(placed.primary, stream_name)).msg_count == 0


async def test_fetch_replication_for_an_unknown_stream_or_partition_fails_the_call(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """internal.proto: FetchReplication's unknown stream is an error (NOT_FOUND, ErrorInfo reason
    no_such_stream), not an in-band result code; an unknown partition is no_such_partition, which is
    INVALID_ARGUMENT as everywhere else in the API. Neither records any progress."""
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 2)
    before = await state_of(placed.primary, stream_name)
    in_sync_before = list((await stats_of(placed.primary, stream_name)).in_sync_node_ids)

    def request(stream: str, partition: int = 0) -> internal_pb2.FetchReplicationRequest:
        return internal_pb2.FetchReplicationRequest(
            stream=stream,
            partition=partition,
            leader_epoch=placed.epoch,
            follower_node_id=placed.first.name,
            follower_last_seq=2,
        )

    for node in manual.nodes:  # the primary and the secondaries alike
        missing = await raw_failure(node.internal_address, "FetchReplication", request(f"{stream_name}-missing"))
        assert (missing.code, missing.reason) == (grpc.StatusCode.NOT_FOUND, "no_such_stream"), missing
        assert f"{stream_name}-missing" in missing.message
    no_partition = await raw_failure(placed.primary.internal_address, "FetchReplication", request(stream_name, 7))
    assert (no_partition.code, no_partition.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "no_such_partition",
    ), no_partition

    assert await state_of(placed.primary, stream_name) == before
    assert list((await stats_of(placed.primary, stream_name)).in_sync_node_ids) == in_sync_before


# -- 3b. the lockstep streams (what the replicator uses) -------------------------------------------------


async def test_lockstep_streams_answer_like_the_unary_calls_and_an_error_ends_only_that_call(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """FetchReplicationStream and ReplicateMessageStream answer each request, in order, on one call,
    exactly as FetchReplication and ReplicateMessage do (same records, result codes, progress). A
    request the unary call would fail ends the stream with the same status (the client's
    LockstepStream raises the same typed error, and its next exchange opens a new call)."""
    placed = await place(manual, manual_client, stream_name)
    assert await publish(placed, 3) == [1, 2, 3]

    def pull(follower_last_seq: int, stream: str = stream_name) -> internal_pb2.FetchReplicationRequest:
        return internal_pb2.FetchReplicationRequest(
            stream=stream,
            partition=0,
            leader_epoch=placed.epoch,
            follower_node_id=placed.first.name,
            follower_last_seq=follower_last_seq,
        )

    async with replication(placed.primary) as primary, replication(placed.first) as follower:
        fetches, pushes = primary.fetch_stream(), follower.replicate_message_stream()
        try:
            pulled = await fetches.exchange(pull(0), TIMEOUT_S)
            assert pulled == await primary.fetch(pull(0))
            assert (pulled.result_code, pulled.first_seq, pulled.last_seq) == ("ok", 1, 3)
            applied = await pushes.exchange(message_request(placed, 0, list(pulled.records)), TIMEOUT_S)
            assert (applied.result_code, applied.last_seq) == ("ok", 3), applied.message
            assert await copy_of(placed.first, stream_name) == await copy_of(placed.primary, stream_name)

            # A refusal travels in-band and keeps the call: out_of_order names where the log ends.
            gap = await pushes.exchange(message_request(placed, 5, [record(6, b"ahead")]), TIMEOUT_S)
            assert (gap.result_code, gap.last_seq) == ("out_of_order", 3)
            # The next pull reports the follower's progress on the same call: nothing new to send.
            caught_up = await fetches.exchange(pull(3), TIMEOUT_S)
            assert (caught_up.result_code, list(caught_up.records)) == ("ok", [])

            # An error ends the call with the unary call's status; the next exchange opens a new one.
            with pytest.raises(NoSuchStreamError):
                await fetches.exchange(pull(3, f"{stream_name}-missing"), TIMEOUT_S)
            with pytest.raises(InvalidArgumentError, match=r"records\[0\]"):
                await pushes.exchange(message_request(placed, 3, [b"\xff\xff not a message"]), TIMEOUT_S)
            await publish(placed, 1, prefix="later")
            again = await fetches.exchange(pull(3), TIMEOUT_S)
            assert [types_pb2.Message.FromString(raw).seq for raw in again.records] == [4]
            applied = await pushes.exchange(message_request(placed, 3, list(again.records)), TIMEOUT_S)
            assert (applied.result_code, applied.last_seq) == ("ok", 4), applied.message
        finally:
            fetches.close()
            pushes.close()
    assert seqs(await copy_of(placed.first, stream_name)) == [1, 2, 3, 4]


async def test_only_an_applied_replicate_message_moves_the_followers_high_watermark(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """The follower takes the request's high_watermark only with result ok, and never beyond its
    own log: a refused call (divergence, out_of_order, fenced) leaves it where it was."""
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 3)
    real = list((await fetch(placed, placed.first, 0)).records)
    first_two = await replicate(placed.first, "ReplicateMessage", message_request(placed, 0, real[:2]))
    assert (first_two.result_code, first_two.last_seq) == ("ok", 2)
    before = await snapshot(placed.first, stream_name)
    assert before.state.high_watermark == 0

    refused = [
        (message_request(placed, 1, [record(2, b"not the primary's"), real[2]], high_watermark=3), "divergence"),
        (message_request(placed, 5, [record(6, b"far ahead")], high_watermark=3), "out_of_order"),
        (message_request(placed, 2, real[2:], high_watermark=3, epoch=placed.epoch - 1), "fenced"),
    ]
    for request, code in refused:
        reply = await replicate(placed.first, "ReplicateMessage", request)
        assert (reply.result_code, reply.last_seq) == (code, 2), reply
        assert await snapshot(placed.first, stream_name) == before

    # An accepted replay with a high watermark beyond the follower's log: raised to its log's end only.
    replay = await replicate(placed.first, "ReplicateMessage", message_request(placed, 0, real[:2], high_watermark=3))
    assert (replay.result_code, replay.last_seq) == ("ok", 2)
    assert (await state_of(placed.first, stream_name)).high_watermark == 2
    # A lower one never lowers it.
    rest = await replicate(placed.first, "ReplicateMessage", message_request(placed, 2, real[2:], high_watermark=1))
    assert (rest.result_code, rest.last_seq) == ("ok", 3)
    assert (await state_of(placed.first, stream_name)).high_watermark == 2
    caught_up = await replicate(placed.first, "ReplicateMessage", message_request(placed, 3, [], high_watermark=3))
    assert caught_up.result_code == "ok"
    assert (await state_of(placed.first, stream_name)).high_watermark == 3


# -- 4. truncation, removals, consumer state -------------------------------------------------------------


async def test_replicate_truncate_drops_older_messages_on_the_secondary(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 5)
    await ship(placed, placed.first)
    primary_before = await snapshot(placed.primary, stream_name)

    def truncate(first_seq: int, epoch: int | None = None) -> internal_pb2.ReplicateTruncateRequest:
        return internal_pb2.ReplicateTruncateRequest(
            stream=stream_name, partition=0, leader_epoch=placed.epoch if epoch is None else epoch, first_seq=first_seq
        )

    cut = await replicate(placed.first, "ReplicateTruncate", truncate(3))
    assert (cut.result_code, cut.success, cut.dropped, cut.first_seq, cut.last_seq) == ("ok", True, 2, 3, 5)
    assert await copy_of(placed.first, stream_name) == primary_before.messages[2:]
    after_cut = await snapshot(placed.first, stream_name)
    assert (after_cut.state.first_seq, after_cut.state.last_seq) == (3, 5)

    # Idempotent, and an older first_seq brings nothing back.
    for first_seq in (3, 2, 0):
        again = await replicate(placed.first, "ReplicateTruncate", truncate(first_seq))
        assert (again.result_code, again.dropped, again.first_seq, again.last_seq) == ("ok", 0, 3, 5)
    assert await snapshot(placed.first, stream_name) == after_cut

    # Refused: older / newer epoch, and the primary (whose retention decides for itself).
    fenced = await replicate(placed.first, "ReplicateTruncate", truncate(5, epoch=placed.epoch - 1))
    assert (fenced.result_code, fenced.success, fenced.dropped) == ("fenced", False, 0)
    stale = await replicate(placed.first, "ReplicateTruncate", truncate(5, epoch=placed.epoch + 1))
    assert (stale.result_code, stale.dropped) == ("stale_epoch", 0)
    not_follower = await replicate(placed.primary, "ReplicateTruncate", truncate(5))
    assert (not_follower.result_code, not_follower.dropped) == ("not_follower", 0)
    assert await snapshot(placed.first, stream_name) == after_cut
    assert await snapshot(placed.primary, stream_name) == primary_before

    # Past the end of an empty follower: its log then starts (and ends) there.
    beyond = await replicate(placed.second, "ReplicateTruncate", truncate(10))
    assert (beyond.result_code, beyond.dropped, beyond.first_seq, beyond.last_seq) == ("ok", 0, 10, 9)
    state = await state_of(placed.second, stream_name)
    assert (state.first_seq, state.last_seq) == (10, 9)
    late = await replicate(placed.second, "ReplicateMessage", message_request(placed, 3, [record(4, b"x")]))
    assert (late.result_code, late.last_seq) == ("ok", 9)  # below its start: nothing to store
    assert await copy_of(placed.second, stream_name) == []


async def test_replicate_work_queue_ack_removes_the_given_seqs(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 5)
    await ship(placed, placed.first)
    primary_before = await snapshot(placed.primary, stream_name)

    def removal(seq_list: list[int], epoch: int | None = None) -> internal_pb2.ReplicateWorkQueueAckRequest:
        return internal_pb2.ReplicateWorkQueueAckRequest(
            stream=stream_name,
            partition=0,
            leader_epoch=placed.epoch if epoch is None else epoch,
            seqs=seq_list,
            reason="work_queue_ack",
        )

    removed = await replicate(placed.first, "ReplicateWorkQueueAck", removal([2, 4, 4, 99]))
    assert (removed.result_code, removed.success, removed.dropped) == ("ok", True, 2)
    assert (removed.first_seq, removed.last_seq) == (1, 5)
    assert seqs(await copy_of(placed.first, stream_name)) == [1, 3, 5]

    # Missing seqs (removed already, never stored) are success; removing the first moves first_seq.
    first = await replicate(placed.first, "ReplicateWorkQueueAck", removal([1, 2, 1000]))
    assert (first.result_code, first.dropped, first.first_seq, first.last_seq) == ("ok", 1, 3, 5)
    after = await snapshot(placed.first, stream_name)
    assert seqs(after.messages) == [3, 5]
    assert after.messages == [primary_before.messages[2], primary_before.messages[4]]
    stats = await stats_of(placed.first, stream_name)
    assert (stats.msg_count, stats.first_seq, stats.last_seq) == (2, 3, 5)

    fenced = await replicate(placed.first, "ReplicateWorkQueueAck", removal([3], epoch=placed.epoch - 1))
    assert (fenced.result_code, fenced.dropped) == ("fenced", 0)
    not_follower = await replicate(placed.primary, "ReplicateWorkQueueAck", removal([1, 2, 3]))
    assert (not_follower.result_code, not_follower.dropped) == ("not_follower", 0)
    missing = removal([3])
    missing.stream = f"{stream_name}-missing"
    gone = await replicate(placed.first, "ReplicateWorkQueueAck", missing)
    assert (gone.result_code, gone.success) == ("no_such_stream", False)
    assert await snapshot(placed.first, stream_name) == after
    assert await snapshot(placed.primary, stream_name) == primary_before


async def test_replicate_consumer_state_applies_a_snapshot_and_a_tombstone_removes_it(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 5)
    await ship(placed, placed.first)
    await manual_client.create_consumer(stream_name, consumer_config("workers", ack_wait_ms=60_000))

    async def info_on(node: ClusterNode) -> types_pb2.ConsumerInfo:
        async with internal(node) as client:
            return await client.consumer_info(stream_name, "workers")

    def per_partition(info: types_pb2.ConsumerInfo) -> list[tuple[int, ...]]:
        return [
            (e.partition, e.ack_floor, e.last_delivered, e.num_ack_pending, e.num_pending, e.num_redelivered)
            for e in info.partitions
        ]

    fresh = await info_on(placed.first)
    assert per_partition(fresh) == [(0, 0, 0, 0, 5, 0)]
    async with client_port(placed.primary) as direct:
        delivered = await direct.fetch(stream_name, "workers", 0, batch_size=2)
    assert seqs(delivered) == [1, 2]
    primary_info = await info_on(placed.primary)
    assert per_partition(primary_info) == [(0, 0, 2, 2, 3, 0)]

    # Only the primary answers GetConsumerSnapshots (under its epoch), with its committed state.
    async with replication(placed.first) as secondary:
        refused = await secondary.consumer_snapshots(stream_name, 0, placed.epoch)
    assert (refused.result_code, list(refused.snapshots)) == ("not_leader", [])
    async with replication(placed.primary) as primary:
        answered = await primary.consumer_snapshots(stream_name, 0, placed.epoch)
        fenced_snapshots = await primary.consumer_snapshots(stream_name, 0, placed.epoch - 1)
    assert (fenced_snapshots.result_code, list(fenced_snapshots.snapshots)) == ("fenced", [])
    assert answered.result_code == "ok", answered.message
    (primary_snapshot,) = answered.snapshots
    assert (primary_snapshot.consumer, primary_snapshot.partition) == ("workers", 0)
    assert (primary_snapshot.ack_floor, primary_snapshot.last_delivered, primary_snapshot.delivered) == (0, 2, 2)
    assert [(entry.seq, entry.deliver_count) for entry in primary_snapshot.pending] == [(1, 1), (2, 1)]
    assert not primary_snapshot.tombstone

    def state_request(snapshot_: internal_pb2.ConsumerSnapshot, epoch: int | None = None) -> Any:
        return internal_pb2.ReplicateConsumerStateRequest(
            stream=stream_name, leader_epoch=placed.epoch if epoch is None else epoch, snapshot=snapshot_
        )

    # The primary's snapshot, applied to the secondary, makes its consumer state the primary's.
    applied = await replicate(placed.first, "ReplicateConsumerState", state_request(primary_snapshot))
    assert (applied.result_code, applied.success) == ("ok", True), applied.message
    mirrored = await info_on(placed.first)
    assert per_partition(mirrored) == per_partition(primary_info)
    assert (mirrored.delivered_total, mirrored.num_ack_pending) == (primary_info.delivered_total, 2)

    # A snapshot replaces the state whole (pending set, cursor, totals).
    replacement = internal_pb2.ConsumerSnapshot(
        consumer="workers",
        partition=0,
        ack_floor=1,
        last_delivered=4,
        pending=[
            types_pb2.PendingDelivery(seq=2, delivered_at_ms=1_000, deliver_count=1, redeliver_at_ms=61_000),
            types_pb2.PendingDelivery(seq=4, delivered_at_ms=2_000, deliver_count=3, redeliver_at_ms=62_000),
        ],
        delivered=6,
        acked=2,
        redelivered=2,
    )
    replaced = await replicate(placed.first, "ReplicateConsumerState", state_request(replacement))
    assert (replaced.result_code, replaced.success) == ("ok", True), replaced.message
    mirrored = await info_on(placed.first)
    assert per_partition(mirrored) == [(0, 1, 4, 2, 1, 1)]
    assert (mirrored.delivered_total, mirrored.acked_total, mirrored.redelivered_total) == (6, 2, 2)
    assert await info_on(placed.primary) == primary_info  # the primary's consumer is its own

    # Refused snapshots change nothing: unknown consumer, older epoch, sent to the primary.
    unknown = internal_pb2.ConsumerSnapshot()
    unknown.CopyFrom(replacement)
    unknown.consumer = "nobody"
    no_consumer = await replicate(placed.first, "ReplicateConsumerState", state_request(unknown))
    assert (no_consumer.result_code, no_consumer.success) == ("no_such_consumer", False)
    emptied = internal_pb2.ConsumerSnapshot(consumer="workers", partition=0)
    fenced = await replicate(placed.first, "ReplicateConsumerState", state_request(emptied, epoch=placed.epoch - 1))
    assert (fenced.result_code, fenced.success) == ("fenced", False)
    to_primary = await replicate(placed.primary, "ReplicateConsumerState", state_request(emptied))
    assert (to_primary.result_code, to_primary.success) == ("not_follower", False)
    assert await info_on(placed.first) == mirrored
    assert await info_on(placed.primary) == primary_info

    # A tombstone removes the consumer's state from this partition; replaying it is fine.
    tombstone = internal_pb2.ConsumerSnapshot(consumer="workers", partition=0, tombstone=True)
    for _ in range(2):
        removed = await replicate(placed.first, "ReplicateConsumerState", state_request(tombstone))
        assert (removed.result_code, removed.success) == ("ok", True), removed.message
    after = await info_on(placed.first)
    assert per_partition(after) == []
    assert (after.num_ack_pending, after.delivered_total) == (0, 0)
    assert await info_on(placed.primary) == primary_info


async def test_a_snapshot_whose_pending_set_lies_beyond_its_cursor_is_refused_and_the_replica_goes_on(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """Two reads of the primary's consumer tables that a commit fell between once produced a
    snapshot with a pending seq above its last_delivered; the secondary's commit loop refused it
    with an assertion and stopped. Such a snapshot is INVALID_ARGUMENT before it is queued: nothing
    stored, and the partition keeps taking snapshots and records."""
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 5)
    await ship(placed, placed.first)
    await manual_client.create_consumer(stream_name, consumer_config("workers", ack_wait_ms=60_000))

    def state_request(snapshot_: internal_pb2.ConsumerSnapshot) -> internal_pb2.ReplicateConsumerStateRequest:
        return internal_pb2.ReplicateConsumerStateRequest(
            stream=stream_name, leader_epoch=placed.epoch, snapshot=snapshot_
        )

    valid = internal_pb2.ConsumerSnapshot(
        consumer="workers",
        partition=0,
        last_delivered=4,
        pending=[types_pb2.PendingDelivery(seq=4, delivered_at_ms=1_000, deliver_count=1, redeliver_at_ms=61_000)],
        delivered=4,
        acked=3,
    )
    applied = await replicate(placed.first, "ReplicateConsumerState", state_request(valid))
    assert applied.result_code == "ok", applied.message

    async def state_on_follower() -> tuple[Snapshot, types_pb2.ConsumerInfo]:
        async with internal(placed.first) as client:
            return await snapshot(placed.first, stream_name), await client.consumer_info(stream_name, "workers")

    before = await state_on_follower()
    for bad_seq in (5, 0):
        torn = internal_pb2.ConsumerSnapshot()
        torn.CopyFrom(valid)
        torn.pending.add(seq=bad_seq, delivered_at_ms=3_000, deliver_count=1, redeliver_at_ms=63_000)
        failure = await raw_failure(placed.first.internal_address, "ReplicateConsumerState", state_request(torn))
        assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_argument"), failure
        assert "last_delivered (4)" in failure.message and "nothing stored" in failure.message, failure
        assert await state_on_follower() == before
    valid.last_delivered = valid.delivered = 5
    again = await replicate(placed.first, "ReplicateConsumerState", state_request(valid))
    assert again.result_code == "ok", again.message
    await publish(placed, 1, prefix="later")
    assert (await ship(placed, placed.first, after_seq=5)).last_seq == 6


async def test_a_last_per_subject_horizon_is_the_primarys_and_the_consumer_snapshot_carries_it(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """A follower behind the primary when a DELIVER_POLICY_LAST_PER_SUBJECT consumer is created
    starts with a horizon of its own log; the primary's consumer snapshot gives it the primary's,
    so after a failover it would pass over exactly what the primary would have."""
    placed = await place(manual, manual_client, stream_name)
    async with client_port(placed.primary) as node:
        for subject in ("orders.a", "orders.b", "orders.c"):
            await node.publish(stream_name, subject, b"v", ack_level="leader")
        await ship(placed, placed.first)  # the first secondary holds 1..3
        for _ in range(3):
            await node.publish(stream_name, "orders.a", b"v", ack_level="leader")  # 4..6: the primary only
    await manual_client.create_consumer(stream_name, consumer_config("watch", deliver_policy="last_per_subject"))

    async def horizon_and_pending(node: ClusterNode) -> tuple[int, int]:
        async with internal(node) as client:
            (entry,) = (await client.consumer_info(stream_name, "watch")).partitions
        return entry.last_per_subject_until, entry.num_pending

    assert await horizon_and_pending(placed.primary) == (6, 3)  # orders.b 2, orders.c 3, orders.a 6
    assert await horizon_and_pending(placed.first) == (3, 3)  # its own log at creation: 1, 2, 3
    async with client_port(placed.primary) as direct:
        assert seqs(await direct.fetch(stream_name, "watch", 0, batch_size=1)) == [2]
    async with replication(placed.primary) as primary:
        (snapshot,) = (await primary.consumer_snapshots(stream_name, 0, placed.epoch)).snapshots
    assert (snapshot.last_delivered, snapshot.last_per_subject_until) == (2, 6)

    await ship(placed, placed.first, after_seq=3)
    assert await horizon_and_pending(placed.first) == (3, 6)  # its own horizon: 1, 2, 3, then 4, 5, 6
    request = internal_pb2.ReplicateConsumerStateRequest(
        stream=stream_name, leader_epoch=placed.epoch, snapshot=snapshot
    )
    applied = await replicate(placed.first, "ReplicateConsumerState", request)
    assert (applied.result_code, applied.success) == ("ok", True), applied.message
    assert await horizon_and_pending(placed.first) == (6, 2)  # the primary's: 3, then 6


async def test_reads_of_a_high_watermark_stream_serve_nothing_a_failover_could_take_back(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """ReadMessages, ReadLatestAtSubject and ScanExactAtSubject on a stream with
    deliver_up_to_high_watermark stop at the high watermark, as its consumers do."""
    placed = await place(manual, manual_client, stream_name, deliver_up_to_high_watermark=True)
    async with client_port(placed.primary) as node:
        await node.publish(stream_name, "orders.a", b"v1", ack_level="leader")
        for follower in placed.secondaries:
            await ship(placed, follower)
            await fetch(placed, follower, 1)  # both hold seq 1 and say so

        async def watermark() -> int:
            return (await state_of(placed.primary, stream_name)).high_watermark

        await eventually(lambda: _equals(watermark(), 1), TIMEOUT_S, "the high watermark at 1")
        await node.publish(stream_name, "orders.a", b"v2", ack_level="leader")  # seq 2: the primary only
        read = await node.read_messages(stream_name)
        latest = await node.latest_at_subject(stream_name, "orders.a")
        history = await node.scan_subject(stream_name, "orders.a")
        high_watermark = await watermark()
    # A follower lagging longer than the lag bound leaves the in-sync set and the primary alone
    # decides: then seq 2 may be readable. Either way nothing above the watermark was read.
    visible = [1] if high_watermark < 2 else [1, 2]
    assert latest is not None and latest.seq <= high_watermark
    assert (seqs(list(read.messages)), read.last_seq) == (visible, visible[-1])
    assert [message.seq for message in history] == visible
    for follower in placed.secondaries:
        await ship(placed, follower, after_seq=1)
        await fetch(placed, follower, 2)
    await eventually(lambda: _equals(watermark(), 2), TIMEOUT_S, "the high watermark at 2")
    async with client_port(placed.primary) as node:
        assert seqs(list((await node.read_messages(stream_name)).messages)) == [1, 2]
        assert (await node.latest_at_subject(stream_name, "orders.a")).seq == 2  # type: ignore[union-attr]


async def _equals(value: Awaitable[int], expected: int) -> bool:
    return await value == expected


async def config_on(node: ClusterNode, stream: str) -> types_pb2.StreamConfig:
    """The node's own copy of the stream's config (GetStreamInfo on its internal port)."""
    async with internal(node) as client:
        return (await client.stream_info(stream)).config


async def put_stream_record(cluster: LocalCluster, record_: types_pb2.StreamRecord) -> None:
    """Overwrite the router's record of a stream in the cluster's Redis (the key the router writes
    and the nodes read)."""
    client = redis.asyncio.from_url(cluster.redis.url)
    try:
        await client.set(Keys().stream(record_.config.name), record_.SerializeToString())
    finally:
        await client.aclose()


async def drop_stream_record(cluster: LocalCluster, stream: str) -> None:
    """Remove the record key of a stream from the cluster's Redis, as the router's delete does."""
    client = redis.asyncio.from_url(cluster.redis.url)
    try:
        await client.delete(Keys().stream(stream))
    finally:
        await client.aclose()


async def test_replicate_stream_update_applies_only_the_routers_current_config(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 3)
    await ship(placed, placed.first)
    record_now = await stream_record(manual, stream_name)
    original = await config_on(placed.first, stream_name)
    assert original == record_now.config == await config_on(placed.primary, stream_name)
    primary_before = await snapshot(placed.primary, stream_name)
    first_before = await snapshot(placed.first, stream_name)

    async def update(node: ClusterNode, config: types_pb2.StreamConfig) -> internal_pb2.ReplicateResponse:
        return await replicate(node, "ReplicateStreamUpdate", internal_pb2.ReplicateStreamUpdateRequest(config=config))

    def changed(**limits: int) -> types_pb2.StreamConfig:
        config = types_pb2.StreamConfig()
        config.CopyFrom(original)
        for name, value in limits.items():
            setattr(config.limits, name, value)
        return config

    # Not the router's config (a replayed or made-up update, or an immutable change): stale_config, nothing changes.
    immutable = changed()
    immutable.subjects.append("elsewhere.>")
    for config in (changed(max_msgs=2), immutable):
        for node in (placed.first, placed.primary):
            refused = await update(node, config)
            assert (refused.result_code, refused.success) == ("stale_config", False), refused
            assert stream_name in refused.message
    assert await config_on(placed.first, stream_name) == original
    assert await config_on(placed.primary, stream_name) == original
    assert await snapshot(placed.first, stream_name) == first_before

    # The router's current config: ok (it is already this copy's: nothing to change).
    same = await update(placed.first, record_now.config)
    assert (same.result_code, same.success) == ("ok", True), same
    assert await snapshot(placed.first, stream_name) == first_before

    # A secondary that missed an update the router recorded: the recorded config is adopted (the
    # mutable fields), the secondary prunes nothing itself; replaying it is fine; the older one is now stale.
    recorded = types_pb2.StreamRecord()
    recorded.CopyFrom(record_now)
    recorded.config.CopyFrom(changed(max_msgs=2))
    await put_stream_record(manual, recorded)
    try:
        for _ in range(2):
            mirrored = await update(placed.first, recorded.config)
            assert (mirrored.result_code, mirrored.success) == ("ok", True), mirrored
        assert await config_on(placed.first, stream_name) == recorded.config
        assert seqs(await copy_of(placed.first, stream_name)) == [1, 2, 3]
        stale = await update(placed.first, original)
        assert stale.result_code == "stale_config", stale
        assert await config_on(placed.first, stream_name) == recorded.config

        # Even when recorded, an immutable field that differs from the copy's is refused by the node.
        recorded_immutable = types_pb2.StreamRecord()
        recorded_immutable.CopyFrom(recorded)
        recorded_immutable.config.subjects.append("elsewhere.>")
        await put_stream_record(manual, recorded_immutable)
        failure = await raw_failure(
            placed.first.internal_address,
            "ReplicateStreamUpdate",
            internal_pb2.ReplicateStreamUpdateRequest(config=recorded_immutable.config),
        )
        assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_config"), failure
        assert await config_on(placed.first, stream_name) == recorded.config
    finally:
        await put_stream_record(manual, record_now)
    restored = await update(placed.first, original)
    assert (restored.result_code, restored.success) == ("ok", True), restored
    assert await snapshot(placed.first, stream_name) == first_before
    assert await snapshot(placed.primary, stream_name) == primary_before
    assert await config_on(placed.primary, stream_name) == original

    # An UpdateStream through the router changes every copy and the record; replaying the config
    # from before it is then stale and changes nothing.
    await manual_client.update_stream(stream_name, max_msgs=10)
    current = (await stream_record(manual, stream_name)).config
    assert current.limits.max_msgs == 10
    for node in manual.nodes:
        assert await config_on(node, stream_name) == current, node.name
    replayed = await update(placed.second, original)
    assert replayed.result_code == "stale_config", replayed
    assert await config_on(placed.second, stream_name) == current


async def test_apply_placement_adopts_the_current_record_and_ignores_an_older_one(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    placed = await place(manual, manual_client, stream_name)
    record_now = await stream_record(manual, stream_name)
    assert record_now.placement.partitions[0].leader_epoch == placed.epoch
    second_before = await state_of(placed.second, stream_name)
    async with replication(placed.second) as client:
        adopted = await client.apply_placement(record_now)
        older = types_pb2.StreamRecord()
        older.CopyFrom(record_now)
        older.placement.partitions[0].leader_epoch = placed.epoch - 1
        older.placement.partitions[0].primary_node_id = placed.second.name
        ignored = await client.apply_placement(older)
        # A pushed record is only a wake-up: a forged newer epoch (the issue 23 attack that made a
        # replica truncate) or a malformed one changes nothing; the node adopts what Redis holds.
        forged = types_pb2.StreamRecord()
        forged.CopyFrom(record_now)
        forged.placement.partitions[0].leader_epoch = placed.epoch + 1
        forged.placement.partitions[0].primary_node_id = placed.second.name
        forged.placement.partitions[0].epoch_starts.add(leader_epoch=placed.epoch + 1, start_seq=1)
        ignored_forged = await client.apply_placement(forged)
        malformed = types_pb2.StreamRecord(config=record_now.config)  # no placement at all
        ignored_malformed = await client.apply_placement(malformed)
        unknown = await client.apply_placement(
            types_pb2.StreamRecord(config=stream_config(f"{stream_name}-nope").to_proto())
        )
    assert list(adopted.partitions) == [second_before]
    assert list(ignored.partitions) == [second_before]
    assert list(ignored_forged.partitions) == [second_before]
    assert list(ignored_malformed.partitions) == [second_before]
    assert list(unknown.partitions) == []
    assert await state_of(placed.second, stream_name) == second_before


async def test_while_the_router_records_a_stream_delete_is_refused_and_create_adopts_the_record(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """ReplicateStreamDelete answers still_placed on every replica, the primary included: no copy
    or message is deleted. ReplicateStreamCreate is ok only with the recorded config (not_placed
    otherwise), finds the existing copy and adopts the router's current placement, not the
    request's; the replicas keep working."""
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 3)
    await ship(placed, placed.first)
    before = {node.name: await snapshot(node, stream_name) for node in manual.nodes}
    delete = internal_pb2.ReplicateStreamDeleteRequest(stream=stream_name)
    for node in (placed.second, placed.first, placed.primary):
        for _ in range(2):
            reply = await replicate(node, "ReplicateStreamDelete", delete)
            assert (reply.result_code, reply.success) == ("still_placed", False), (node.name, reply)
            assert stream_name in reply.message
    for node in manual.nodes:
        async with internal(node) as direct:
            assert stream_name in await direct.list_streams(), node.name
        assert await snapshot(node, stream_name) == before[node.name], node.name

    record_now = await stream_record(manual, stream_name)
    other_config = types_pb2.StreamRecord()
    other_config.CopyFrom(record_now)
    other_config.config.limits.max_msgs = 2
    refused = await replicate(
        placed.second, "ReplicateStreamCreate", internal_pb2.ReplicateStreamCreateRequest(record=other_config)
    )
    assert (refused.result_code, refused.success) == ("not_placed", False), refused
    assert await config_on(placed.second, stream_name) == record_now.config

    # The recorded config with an older placement naming this node primary: the current record wins.
    older = types_pb2.StreamRecord()
    older.CopyFrom(record_now)
    older.placement.partitions[0].leader_epoch = placed.epoch - 1
    older.placement.partitions[0].primary_node_id = placed.second.name
    for record_ in (record_now, older, record_now):
        created = await replicate(
            placed.second, "ReplicateStreamCreate", internal_pb2.ReplicateStreamCreateRequest(record=record_)
        )
        assert (created.result_code, created.success) == ("ok", True), created
    for node in manual.nodes:
        assert await snapshot(node, stream_name) == before[node.name], node.name
    # The second secondary still follows: one replicator round brings it the primary's records.
    await ship(placed, placed.second)
    assert await copy_of(placed.second, stream_name) == before[placed.primary.name].messages
    assert await snapshot(placed.primary, stream_name) == before[placed.primary.name]


async def test_replicate_stream_delete_removes_a_copy_the_router_no_longer_records(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """After the router deleted a stream, ReplicateStreamCreate does not bring it back (not_placed)
    and ReplicateStreamDelete is ok everywhere (idempotent). A copy left on a node that missed the
    router's delete (made here by recording the stream again, creating the copy and removing the
    record, the router's delete) is removed by ReplicateStreamDelete."""
    placed = await place(manual, manual_client, stream_name)
    await publish(placed, 2)
    record_now = await stream_record(manual, stream_name)
    await manual_client.delete_stream(stream_name)
    assert stream_name not in await manual_client.list_streams()
    for node in manual.nodes:
        async with internal(node) as direct:
            assert stream_name not in await direct.list_streams(), node.name

    delete = internal_pb2.ReplicateStreamDeleteRequest(stream=stream_name)
    create = internal_pb2.ReplicateStreamCreateRequest(record=record_now)

    async def hosted_anywhere() -> list[str]:
        names = []
        for node in manual.nodes:
            async with internal(node) as direct:
                if stream_name in await direct.list_streams():
                    names.append(node.name)
        return names

    for node in manual.nodes:
        gone = await replicate(node, "ReplicateStreamDelete", delete)
        assert (gone.result_code, gone.success) == ("ok", True), (node.name, gone)
        late = await replicate(node, "ReplicateStreamCreate", create)
        assert (late.result_code, late.success) == ("not_placed", False), (node.name, late)
        assert stream_name in late.message
    assert await hosted_anywhere() == []

    await put_stream_record(manual, record_now)
    try:
        created = await replicate(placed.second, "ReplicateStreamCreate", create)
        assert (created.result_code, created.success) == ("ok", True), created
        leftover = await state_of(placed.second, stream_name)
        assert (leftover.role, leftover.replica_epoch, leftover.leader_epoch) == (SECONDARY, placed.epoch, placed.epoch)
        assert (leftover.first_seq, leftover.last_seq) == (1, 0)
        still = await replicate(placed.second, "ReplicateStreamDelete", delete)
        assert (still.result_code, still.success) == ("still_placed", False), still
    finally:
        await drop_stream_record(manual, stream_name)
    assert await hosted_anywhere() == [placed.second.name]

    for _ in range(2):
        deleted = await replicate(placed.second, "ReplicateStreamDelete", delete)
        assert (deleted.result_code, deleted.success) == ("ok", True), deleted
    missing = await raw_failure(
        placed.second.internal_address,
        "GetReplicaState",
        internal_pb2.GetReplicaStateRequest(stream=stream_name, partition=0),
    )
    assert (missing.code, missing.reason) == (grpc.StatusCode.NOT_FOUND, "no_such_stream")
    assert await hosted_anywhere() == []


# -- 5. with the replicator: ack_level ALL --------------------------------------------------------------


async def test_ack_all_publish_leaves_identical_copies_on_all_three_replicas(
    cluster_addresses: ClusterAddresses, weir_client: WeirClient, stream_name: str
) -> None:
    cluster = cluster_addresses
    placed = await place(cluster, weir_client, stream_name)
    acks = [
        await weir_client.publish(stream_name, f"orders.{index}", f"all-{index}".encode(), ack_level="all")
        for index in range(10)
    ]
    assert [(ack.partition, ack.seq) for ack in acks] == [(0, seq) for seq in range(1, 11)]
    futures = [
        await weir_client.publish_nowait(stream_name, "orders.batch", f"batch-{index}".encode(), ack_level="all")
        for index in range(40)
    ]
    batch = await asyncio.gather(*futures)
    assert sorted(ack.seq for ack in batch) == list(range(11, 51))

    primary_copy = await copy_of(placed.primary, stream_name)
    assert seqs(primary_copy) == list(range(1, 51))
    assert primary_copy[0].payload == b"all-0"

    async def identical() -> bool:
        return all([await copy_of(node, stream_name) == primary_copy for node in placed.secondaries])

    await eventually(identical, TIMEOUT_S, "every replica holds the primary's records at the same seqs")
    for node in cluster.nodes:
        state = await state_of(node, stream_name)
        assert (state.first_seq, state.last_seq) == (1, 50), node.name
        assert state.role == (PRIMARY if node is placed.primary else SECONDARY)
        assert (state.replica_epoch, state.leader_epoch) == (placed.epoch, placed.epoch)
    primary_state = await state_of(placed.primary, stream_name)
    assert primary_state.high_watermark == 50


async def test_min_insync_replicas_above_replicas_is_invalid_config(
    cluster_addresses: ClusterAddresses, weir_client: WeirClient, stream_name: str
) -> None:
    cluster = cluster_addresses
    names_before = await weir_client.list_streams()
    with pytest.raises(InvalidConfigError) as raised:
        await weir_client.create_stream(stream_config(stream_name, partitions=1, replicas=2, min_insync_replicas=3))
    assert raised.value.status_code == grpc.StatusCode.INVALID_ARGUMENT
    assert "min_insync_replicas" in raised.value.message

    request = streams_pb2.CreateStreamRequest(
        config=stream_config(stream_name, partitions=1, replicas=3, min_insync_replicas=4).to_proto()
    )
    for address in cluster.router_addresses:
        failure = await raw_failure(address, "CreateStream", request, router_pb2_grpc.RouterStub)
        assert (failure.code, failure.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "invalid_config"), failure
        assert "min_insync_replicas" in failure.message

    assert await weir_client.list_streams() == names_before
    for node in cluster.nodes:
        async with client_port(node) as direct:
            assert stream_name not in await direct.list_streams()


async def test_consumer_totals_count_each_partition_once_on_a_replicated_stream(
    cluster_addresses: ClusterAddresses, weir_client: WeirClient, stream_name: str
) -> None:
    """Issue 22: three messages acked once on a replicas-3 stream reported delivered_total 9 and
    acked_total 9, because every node summed its secondary copies too."""
    cluster = cluster_addresses
    placed = await place(cluster, weir_client, stream_name)
    await weir_client.create_consumer(stream_name, consumer_config("billing"))
    for index in range(3):
        await weir_client.publish(stream_name, "orders.new", f"m{index}".encode(), ack_level="all")
    delivered = await weir_client.fetch(stream_name, "billing", 0, batch_size=10)
    assert [message.seq for message in delivered] == [1, 2, 3]
    assert await weir_client.ack_batch(stream_name, "billing", 0, [1, 2, 3]) == ["ok"] * 3

    async def snapshots_on_every_copy() -> bool:
        for node in placed.secondaries:
            async with internal(node) as client:
                info = await client.consumer_info(stream_name, "billing")
            if [(state.acked_total, state.ack_floor) for state in info.partitions] != [(3, 3)]:
                return False
        return True

    await eventually(snapshots_on_every_copy, TIMEOUT_S, "the consumer's snapshot on both secondaries")
    info = await weir_client.consumer_info(stream_name, "billing")
    assert (info.delivered_total, info.acked_total, info.redelivered_total) == (3, 3, 0)
    assert [(state.partition, state.delivered_total, state.acked_total) for state in info.partitions] == [(0, 3, 3)]
    assert (info.num_ack_pending, info.num_pending) == (0, 0)


async def test_an_ack_all_publish_waits_as_long_as_its_caller_allows(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """Issue 22: the wait for the in-sync replicas is the caller's (timeout_ms, else the gRPC
    deadline less a margin), answered as replication_timeout, never the deadline's DEADLINE_EXCEEDED.
    Nothing replicates here (no replicator), so every ack-all publish waits until its time is up;
    the followers stay in sync for replica_lag_max_ms after the placement, which is when this runs
    (a slow start that lets them leave first is retried on a new stream)."""

    async def publish_with(
        placed: Placed, *, timeout_ms: int = 0, deadline_s: float = TIMEOUT_S
    ) -> tuple[grpc.StatusCode, str, float]:
        request = streams_pb2.PublishRequest(
            stream=placed.stream, subject="orders.x", ack_level=streams_pb2.ACK_LEVEL_ALL, timeout_ms=timeout_ms
        )
        started = time.monotonic()
        async with grpc.aio.insecure_channel(placed.primary.client_address) as channel:
            try:
                await streams_pb2_grpc.StreamsStub(channel).Publish(request, timeout=deadline_s)
            except grpc.aio.AioRpcError as error:
                reason = WeirError.from_rpc_error(error).result_code.value
                return error.code(), reason, time.monotonic() - started
        raise AssertionError("an ack-all publish with nothing replicating must fail")

    for attempt in range(3):
        placed = await place(manual, manual_client, f"{stream_name}-{attempt}")
        by_timeout = await publish_with(placed, timeout_ms=100)
        by_deadline = await publish_with(placed, deadline_s=0.4)
        if "not_enough_replicas" not in (by_timeout[1], by_deadline[1]):
            break
    assert by_timeout[:2] == (grpc.StatusCode.UNAVAILABLE, "replication_timeout"), by_timeout
    assert 0.09 <= by_timeout[2] < 0.4, by_timeout
    assert by_deadline[:2] == (grpc.StatusCode.UNAVAILABLE, "replication_timeout"), by_deadline
    assert 0.3 <= by_deadline[2] < 0.4, by_deadline


async def test_a_handover_gives_the_target_the_consumers_latest_state_before_it_answers(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """Acks made just before a handover reach the new primary with it, not after their ack wait:
    inside the fence the primary hands the target every consumer's committed state itself (nothing
    else ships consumer state here: the test plays the replicator for records only). The other
    secondary is not the target and gets nothing."""
    placed = await place(manual, manual_client, stream_name)
    await manual_client.create_consumer(stream_name, consumer_config("c1", ack_wait_ms=60_000))
    assert await publish(placed, 3) == [1, 2, 3]
    for secondary in placed.secondaries:
        await ship(placed, secondary)
        await fetch(placed, secondary, 3)
    async with client_port(placed.primary) as node:
        assert seqs(await node.fetch(stream_name, "c1", 0, batch_size=3)) == [1, 2, 3]
        await node.ack_batch(stream_name, "c1", 0, [1, 2])

    async def cursor_on(copy: ClusterNode) -> tuple[int, int, int]:
        async with internal(copy) as client:
            (entry,) = (await client.consumer_info(stream_name, "c1")).partitions
        return entry.ack_floor, entry.last_delivered, entry.num_ack_pending

    assert await cursor_on(placed.first) == (0, 0, 0)  # nothing shipped it yet
    async with replication(placed.primary) as primary:
        handed = await primary.transfer_leadership(stream_name, 0, placed.epoch, placed.first.name, timeout_ms=1500)
    assert handed.result_code == "ok", handed
    assert await cursor_on(placed.first) == (2, 3, 1)
    assert await cursor_on(placed.second) == (0, 0, 0)


async def test_transfer_leadership_fences_the_primary_until_a_new_epoch_or_its_timeout(
    manual: LocalCluster, manual_client: WeirClient, stream_name: str
) -> None:
    """The primary's side of the preferred-leader rebalance: it hands over only to an in-sync
    replica holding its whole log, refuses clients meanwhile, and leads again when no new epoch
    arrives within the timeout. The test plays the replicator."""
    placed = await place(manual, manual_client, stream_name)
    await manual_client.create_consumer(stream_name, consumer_config("c1"))
    assert await publish(placed, 3) == [1, 2, 3]
    for secondary in placed.secondaries:  # both hold seq 3 and say so: the high watermark covers it
        await ship(placed, secondary)
        await fetch(placed, secondary, 3)
    async with replication(placed.primary) as primary:
        refused = [
            await primary.transfer_leadership(stream_name, 0, placed.epoch, "nobody"),
            await primary.transfer_leadership(stream_name, 0, placed.epoch + 1, placed.first.name),
            await primary.transfer_leadership(stream_name, 0, placed.epoch - 1, placed.first.name),
        ]
        assert [answer.result_code for answer in refused] == ["not_in_sync", "stale_epoch", "fenced"]
        handed = await primary.transfer_leadership(stream_name, 0, placed.epoch, placed.first.name, timeout_ms=1500)
        assert (handed.result_code, handed.last_seq, handed.leader_epoch) == ("ok", 3, placed.epoch), handed
        again = await primary.transfer_leadership(stream_name, 0, placed.epoch, placed.first.name)
        assert again.result_code == "not_leader"  # already handing over
    fenced_at = time.monotonic()
    async with client_port(placed.primary) as node:
        with pytest.raises(NotLeaderError):
            await node.publish(stream_name, "orders.x", b"while fenced")
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await node.stub.Fetch(streams_pb2.FetchRequest(stream=stream_name, consumer="c1"))
        assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION

        async def leads_again() -> bool:
            try:
                return (await node.publish(stream_name, "orders.x", b"after the fence")).seq == 4
            except NotLeaderError:
                return False

        await eventually(leads_again, TIMEOUT_S, "the primary leading again once the fence lapsed")
    assert time.monotonic() - fenced_at >= 1.0  # not before its timeout (1.5 s from the handover)
    assert seqs(await copy_of(placed.primary, stream_name)) == [1, 2, 3, 4]

    # A replica that cannot catch up in time: the handover is abandoned and the primary leads at once.
    await fetch(placed, placed.second, 3)  # in sync (a fresh report), but without seq 4
    async with replication(placed.primary) as primary:
        started = time.monotonic()
        late = await primary.transfer_leadership(stream_name, 0, placed.epoch, placed.second.name, timeout_ms=300)
    assert late.result_code in ("timeout", "not_in_sync"), late
    if late.result_code == "timeout":
        assert 0.3 <= time.monotonic() - started < 3, late
    async with client_port(placed.primary) as node:
        assert (await node.publish(stream_name, "orders.x", b"led again")).seq == 5
