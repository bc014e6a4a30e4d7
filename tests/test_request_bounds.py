"""Every request is bounded before it costs anything (issue 22).

One router and one clustered node, each run with a 3 GiB address-space limit (an allocation out of
proportion fails there instead of exhausting the machine). For every RPC of every Weir service,
requests with extreme values (the largest integers, the longest strings, the most repeated
entries a message may carry) must be answered within a second with a clear status (mostly
INVALID_ARGUMENT; a position past the end OUT_OF_RANGE; an unknown thing NOT_FOUND), or served
with a bounded answer, and the process's peak resident memory may not grow by more than 64 MiB
while it answers them. Issue 22's example: `partitions = 4294967295` made the controller place four
billion partitions (23 GiB, OOM-killed).

Also: a request body that is not the method's message is INVALID_ARGUMENT on every method.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor
from google.protobuf.message import Message
from weir.client import consumer_config, stream_config
from weir.cluster import WeirClient
from weir.v1 import internal_pb2, router_pb2, streams_pb2, types_pb2
from weir_cli.launcher import LocalCluster, ProcessHandle

from tests.conftest import start_cluster

pytestmark = pytest.mark.timeout(120)

MEMORY_LIMIT_BYTES = 3 * 1024**3
PEAK_GROWTH_BYTES = 64 * 1024**2
ANSWER_WITHIN_S = 1.0
U32 = 2**32 - 1
U64 = 2**64 - 1
LONG = "x" * 100_000  # a 100 kB string where a name or id belongs
STREAM = "bounds"
BIG = "big"  # 100 messages of ~1 MB: a read bounded by count alone would load 100 MB
OK = grpc.StatusCode.OK
# Answered OK with a refusal in the body (`result_code` other than "ok"), as the Replication
# service answers what its seed-style result codes cover.
REFUSED = "refused"
INVALID = grpc.StatusCode.INVALID_ARGUMENT
OUT_OF_RANGE = grpc.StatusCode.OUT_OF_RANGE
NOT_FOUND = grpc.StatusCode.NOT_FOUND
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
# A body that no protobuf message decodes: field 1, length-delimited, claims 100 bytes, has 3.
UNDECODABLE = b"\x0a\x64abc"


@dataclass(frozen=True)
class Target:
    """Where a service is served and which process serves it."""

    address: str
    process: ProcessHandle


@dataclass(frozen=True)
class Bounded:
    cluster: LocalCluster

    def target(self, service: str) -> Target:
        node = self.cluster.nodes[0]
        if service == "Router":
            router = self.cluster.routers[0]
            return Target(router.address, router)
        # The internal port serves Streams (admin included), ChangeFeed and Replication.
        return Target(node.internal_address, node)


@pytest.fixture(scope="module")
def bounded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bounded]:
    cluster = start_cluster(
        tmp_path_factory.mktemp("bounds"), nodes=1, routers=1, replicators=0, memory_limit_bytes=MEMORY_LIMIT_BYTES
    )
    yield Bounded(cluster)
    cluster.stop()


@pytest.fixture(scope="module")
async def populated(bounded: Bounded) -> AsyncIterator[Bounded]:
    """A 2-partition stream with a few messages and a consumer, for the calls that need one."""
    async with WeirClient(bounded.cluster.router_addresses) as client:
        await client.create_stream(stream_config(STREAM, partitions=2))
        await client.create_consumer(STREAM, consumer_config("c1"))
        for index in range(10):
            await client.publish(STREAM, "orders.x", b"m" * 1000, partition=index % 2)
        await client.create_stream(stream_config(BIG))
        await client.create_consumer(BIG, consumer_config("c1"))
        for index in range(100):  # one at a time, so that publishing leaves the node's memory small
            await client.publish(BIG, "big.x", bytes([index]) * 1_000_000)
    yield bounded


# -- the requests --------------------------------------------------------------------------------


def _config(**fields: Any) -> types_pb2.StreamConfig:
    config = stream_config("extreme", partitions=1).to_proto()
    for name, value in fields.items():
        if name == "subjects":
            config.subjects[:] = value
        elif name in ("max_age_ms", "max_msgs", "max_bytes", "max_msgs_per_subject"):
            setattr(config.limits, name, value)
        else:
            setattr(config, name, value)
    return config


def _endpoints(count: int = 1) -> router_pb2.Endpoints:
    return router_pb2.Endpoints(scheme="ipv4", addresses=[router_pb2.Address(host="127.0.0.1", port=1)] * count)


ENTRY = streams_pb2.PublishEntry(subject="orders.x", payload=b"x")
Expected = set[grpc.StatusCode | str]
EXTREMES: dict[str, list[tuple[Message, Expected]]] = {
    "Streams/CreateStream": [
        (streams_pb2.CreateStreamRequest(config=_config(partitions=U32)), {INVALID}),
        (streams_pb2.CreateStreamRequest(config=_config(replicas=U32)), {INVALID}),
        (streams_pb2.CreateStreamRequest(config=_config(subjects=[f"s{i}.>" for i in range(100_000)])), {INVALID}),
        (streams_pb2.CreateStreamRequest(config=_config(max_msgs=U64)), {INVALID}),
        (streams_pb2.CreateStreamRequest(config=_config(max_msg_bytes=U64)), {INVALID}),
        (streams_pb2.CreateStreamRequest(config=_config(duplicate_window_max_msgs=U64)), {INVALID}),
        (streams_pb2.CreateStreamRequest(config=_config(name=LONG)), {INVALID}),
    ],
    "Streams/DeleteStream": [(streams_pb2.DeleteStreamRequest(name=LONG), {INVALID})],
    "Streams/GetStreamInfo": [(streams_pb2.GetStreamInfoRequest(name=LONG), {INVALID})],
    "Streams/ListStreams": [(streams_pb2.ListStreamsRequest(), {OK})],
    "Streams/UpdateStream": [
        (streams_pb2.UpdateStreamRequest(name=STREAM, max_msgs=U64), {INVALID}),
        (streams_pb2.UpdateStreamRequest(name=STREAM, max_msg_bytes=U64), {INVALID}),
        (streams_pb2.UpdateStreamRequest(name=STREAM, duplicate_window_ms=U64), {INVALID}),
    ],
    "Streams/Publish": [
        (streams_pb2.PublishRequest(stream=STREAM, subject="orders.x", payload=b"p" * (2 << 20)), {INVALID}),
        (streams_pb2.PublishRequest(stream=STREAM, subject="orders.x", partition=U32), {INVALID}),
        (streams_pb2.PublishRequest(stream=STREAM, subject="orders.x", timeout_ms=U64), {INVALID}),
        (streams_pb2.PublishRequest(stream=STREAM, subject="orders.x", msg_id=LONG), {INVALID}),
        (streams_pb2.PublishRequest(stream=STREAM, subject=LONG), {INVALID}),
        (streams_pb2.PublishRequest(stream=STREAM, subject="orders.x", ack_level=99), {INVALID}),  # type: ignore[arg-type]
        (streams_pb2.PublishRequest(stream=STREAM, subject="orders.x", delay_ms=U64), {PRECONDITION}),
        (streams_pb2.PublishRequest(stream=STREAM, subject="orders.x", deliver_at_ms=2**63 - 1), {PRECONDITION}),
    ],
    "Streams/PublishBatch": [
        (streams_pb2.PublishBatchRequest(stream=STREAM, entries=[ENTRY] * 200_000), {INVALID}),
        (streams_pb2.PublishBatchRequest(stream=STREAM, entries=[ENTRY], timeout_ms=U64), {INVALID}),
    ],
    "Streams/PublishBatchStream": [
        (streams_pb2.PublishBatchRequest(stream=STREAM, entries=[ENTRY] * 200_000), {INVALID}),
    ],
    "Streams/GetMessage": [
        (streams_pb2.GetMessageRequest(stream=STREAM, partition=0, seq=U64), {NOT_FOUND}),
        (streams_pb2.GetMessageRequest(stream=STREAM, partition=U32, seq=1), {INVALID, NOT_FOUND}),
    ],
    "Streams/ReadMessages": [
        (streams_pb2.ReadMessagesRequest(stream=STREAM, max_messages=U32), {INVALID}),
        (streams_pb2.ReadMessagesRequest(stream=STREAM, max_messages=10_000, max_bytes=U64), {INVALID}),
        (streams_pb2.ReadMessagesRequest(stream=STREAM, from_seq=U64), {OK}),
        (streams_pb2.ReadMessagesRequest(stream=BIG, max_messages=10_000, max_bytes=1), {OK}),
    ],
    "Streams/ReadLatestAtSubject": [(streams_pb2.ReadLatestAtSubjectRequest(stream=STREAM, subject=LONG), {INVALID})],
    "Streams/ListSubjectsByPrefix": [
        (streams_pb2.ListSubjectsByPrefixRequest(stream=STREAM, limit=U32), {INVALID}),
        (streams_pb2.ListSubjectsByPrefixRequest(stream=STREAM, prefix=LONG), {OK}),
    ],
    "Streams/ScanExactAtSubject": [
        (streams_pb2.ScanExactAtSubjectRequest(stream=STREAM, subject="orders.x", limit=U64), {INVALID}),
        (streams_pb2.ScanExactAtSubjectRequest(stream=STREAM, subject="orders.x", from_seq=U64), {OK}),
        (streams_pb2.ScanExactAtSubjectRequest(stream=BIG, subject="big.x", limit=10_000), {OK}),
    ],
    "Streams/WatchStreams": [(streams_pb2.WatchStreamsRequest(from_change_seq=U64), {OUT_OF_RANGE})],
    "Streams/CreateConsumer": [
        (
            streams_pb2.CreateConsumerRequest(
                stream=STREAM, config=consumer_config("x", max_ack_pending=U32).to_proto()
            ),
            {INVALID},
        ),
        (
            streams_pb2.CreateConsumerRequest(stream=STREAM, config=consumer_config("x", ack_wait_ms=U64).to_proto()),
            {INVALID},
        ),
        (streams_pb2.CreateConsumerRequest(stream=STREAM, config=consumer_config(LONG).to_proto()), {INVALID}),
    ],
    "Streams/DeleteConsumer": [(streams_pb2.DeleteConsumerRequest(stream=STREAM, consumer=LONG), {INVALID})],
    "Streams/ListConsumers": [(streams_pb2.ListConsumersRequest(stream=LONG), {INVALID})],
    "Streams/GetConsumerInfo": [(streams_pb2.GetConsumerInfoRequest(stream=STREAM, consumer=LONG), {INVALID})],
    "Streams/Fetch": [
        (streams_pb2.FetchRequest(stream=STREAM, consumer="c1", batch_size=U32), {INVALID}),
        (streams_pb2.FetchRequest(stream=STREAM, consumer="c1", max_wait_ms=U64), {INVALID}),
        (streams_pb2.FetchRequest(stream=STREAM, consumer="c1", batch_size=10_000, max_bytes=U64), {INVALID}),
        (streams_pb2.FetchRequest(stream=BIG, consumer="c1", batch_size=10_000, max_bytes=1), {OK}),
    ],
    "Streams/FetchStream": [(streams_pb2.FetchRequest(stream=STREAM, consumer="c1", batch_size=U32), {INVALID})],
    "Streams/Ack": [(streams_pb2.AckRequest(stream=STREAM, consumer="c1", seq=U64), {PRECONDITION})],
    "Streams/AckBatch": [
        (streams_pb2.AckBatchRequest(stream=STREAM, consumer="c1", seqs=list(range(1, 200_001))), {INVALID}),
    ],
    "Streams/AckBatchStream": [
        (streams_pb2.AckBatchRequest(stream=STREAM, consumer="c1", seqs=list(range(1, 200_001))), {INVALID}),
    ],
    "Streams/PurgePartition": [
        (streams_pb2.PurgePartitionRequest(stream=STREAM, partition=U32), {INVALID}),
        (streams_pb2.PurgePartitionRequest(stream=STREAM, keep_from_seq=U64), {OUT_OF_RANGE}),
    ],
    "Streams/SeekConsumer": [
        (streams_pb2.SeekConsumerRequest(stream=STREAM, consumer="c1", seq=U64), {OUT_OF_RANGE}),
        (streams_pb2.SeekConsumerRequest(stream=STREAM, consumer="c1", partition=U32, seq=1), {INVALID}),
        (streams_pb2.SeekConsumerRequest(stream=STREAM, consumer="c1", time_ms=-(2**63)), {INVALID}),
        (streams_pb2.SeekConsumerRequest(stream=STREAM, consumer="c1", time_ms=2**63 - 1), {OK}),
    ],
    "Streams/Nak": [(streams_pb2.NakRequest(stream=STREAM, consumer="c1", seq=1, delay_ms=U64), {INVALID})],
    "Streams/Term": [(streams_pb2.TermRequest(stream=STREAM, consumer="c1", seq=U64), {PRECONDITION})],
    "Streams/SeqAtTime": [
        (streams_pb2.SeqAtTimeRequest(stream=STREAM, time_ms=-(2**63)), {INVALID}),
        (streams_pb2.SeqAtTimeRequest(stream=STREAM, time_ms=2**63 - 1), {OK}),
        (streams_pb2.SeqAtTimeRequest(stream=STREAM, partition=U32), {INVALID}),
    ],
    # STREAM has no allow_scheduled_messages: scheduling_disabled, whatever the numbers.
    "Streams/ReleaseScheduled": [(streams_pb2.ReleaseScheduledRequest(stream=STREAM, seq=U64), {PRECONDITION})],
    "Streams/ListScheduled": [
        (streams_pb2.ListScheduledRequest(stream=STREAM, max_messages=U32), {INVALID}),
        (streams_pb2.ListScheduledRequest(stream=STREAM, from_seq=U64), {PRECONDITION}),
    ],
    "Streams/InProgress": [(streams_pb2.InProgressRequest(stream=STREAM, consumer="c1", seq=U64), {PRECONDITION})],
    "Streams/Subscribe": [
        (streams_pb2.SubscribeRequest(stream=STREAM, consumer="c1", batch_size=U32), {INVALID}),
        (streams_pb2.SubscribeRequest(stream=STREAM, consumer="c1", partitions=[U32] * 100_000), {INVALID, NOT_FOUND}),
    ],
    "ChangeFeed/ReadChanges": [
        (internal_pb2.ReadChangesRequest(max_changes=U32), {INVALID}),
        (internal_pb2.ReadChangesRequest(from_change_seq=U64 >> 2), {OK}),
    ],
    "ChangeFeed/TailChanges": [
        (internal_pb2.TailChangesRequest(from_change_seq=U64), {OUT_OF_RANGE}),
        (internal_pb2.TailChangesRequest(max_changes_per_batch=U32), {INVALID}),
    ],
    "Replication/FetchReplication": [
        (internal_pb2.FetchReplicationRequest(stream=STREAM, follower_node_id="f", max_messages=U32), {INVALID}),
        (internal_pb2.FetchReplicationRequest(stream=STREAM, follower_node_id="f", max_bytes=U64), {INVALID}),
        (internal_pb2.FetchReplicationRequest(stream=STREAM, follower_node_id="f", max_wait_ms=U32), {INVALID}),
    ],
    "Replication/FetchReplicationStream": [
        (internal_pb2.FetchReplicationRequest(stream=STREAM, follower_node_id="f", max_bytes=U64), {INVALID}),
    ],
    "Replication/FetchReplicationSession": [
        (internal_pb2.FetchSessionRequest(max_wait_ms=U32), {INVALID}),
        (internal_pb2.FetchSessionRequest(max_bytes=U64), {INVALID}),
        (
            internal_pb2.FetchSessionRequest(
                fetches=[internal_pb2.FetchReplicationRequest(stream=STREAM, follower_node_id="f")] * 10_001
            ),
            {INVALID},
        ),
        # Every entry reads the 100 MB stream; the session's byte bound (16 MiB) holds the answer.
        (
            internal_pb2.FetchSessionRequest(
                fetches=[
                    internal_pb2.FetchReplicationRequest(
                        stream=BIG, follower_node_id="f", max_bytes=32 << 20, want_record_batch=True
                    )
                ]
                * 10_000
            ),
            {OK},
        ),
        # An entry's bad bound is that entry's answer.
        (
            internal_pb2.FetchSessionRequest(
                fetches=[internal_pb2.FetchReplicationRequest(stream=STREAM, follower_node_id="f", max_messages=U32)]
            ),
            {OK},
        ),
    ],
    "Replication/GetConsumerSnapshots": [
        (internal_pb2.GetConsumerSnapshotsRequest(stream=STREAM, partition=U32), {INVALID, NOT_FOUND}),
    ],
    "Replication/ReplicateStreamCreate": [
        (
            internal_pb2.ReplicateStreamCreateRequest(record=types_pb2.StreamRecord(config=_config(name=LONG))),
            {INVALID},
        ),
    ],
    "Replication/ReplicateMessage": [
        (
            internal_pb2.ReplicateMessageRequest(
                stream=STREAM, after_seq=U64, records=[types_pb2.Message(seq=1).SerializeToString()]
            ),
            {INVALID, REFUSED},
        ),
    ],
    "Replication/ReplicateMessageStream": [
        (
            internal_pb2.ReplicateMessageRequest(stream=STREAM, after_seq=U64, records=[b"\x0a\x64abc"]),
            {INVALID, REFUSED},
        ),
    ],
    "Replication/ReplicateSession": [
        (
            internal_pb2.ReplicateSessionRequest(
                pushes=[internal_pb2.ReplicateMessageRequest(stream=STREAM, partition=index) for index in range(10_001)]
            ),
            {INVALID},
        ),
        (
            internal_pb2.ReplicateSessionRequest(
                pushes=[internal_pb2.ReplicateMessageRequest(stream=STREAM, after_seq=U64, records=[b"\x0a\x64abc"])]
                * 2
            ),
            {INVALID},
        ),
        (
            internal_pb2.ReplicateSessionRequest(
                pushes=[internal_pb2.ReplicateMessageRequest(stream=STREAM, after_seq=U64, records=[b"\x0a\x64abc"])]
            ),
            {OK},
        ),
    ],
    "Replication/ReplicateTruncate": [
        (internal_pb2.ReplicateTruncateRequest(stream=STREAM, partition=U32, first_seq=U64), {REFUSED}),
    ],
    "Replication/ReplicateStreamUpdate": [
        (internal_pb2.ReplicateStreamUpdateRequest(config=_config(name=LONG)), {INVALID}),
    ],
    "Replication/ReplicateWorkQueueAck": [
        (
            internal_pb2.ReplicateWorkQueueAckRequest(stream=STREAM, partition=U32, seqs=[U64] * 100_000),
            {REFUSED},
        ),
    ],
    "Replication/ReplicateConsumerState": [
        (
            internal_pb2.ReplicateConsumerStateRequest(
                stream=STREAM, snapshot=internal_pb2.ConsumerSnapshot(consumer="c1", partition=U32)
            ),
            {REFUSED},
        ),
    ],
    "Replication/ReplicateStreamDelete": [(internal_pb2.ReplicateStreamDeleteRequest(stream=LONG), {INVALID})],
    "Replication/ReplicateTruncateTail": [
        (internal_pb2.ReplicateTruncateTailRequest(stream=STREAM, partition=U32, last_seq=U64), {REFUSED}),
        (internal_pb2.ReplicateTruncateTailRequest(stream=LONG, leader_epoch=U64), {INVALID, REFUSED}),
    ],
    "Replication/GetRecordChecksums": [
        (internal_pb2.GetRecordChecksumsRequest(stream=STREAM, max_count=U32), {INVALID}),
        (internal_pb2.GetRecordChecksumsRequest(stream=BIG, from_seq=U64, max_count=1000), {OK}),
        (internal_pb2.GetRecordChecksumsRequest(stream=STREAM, partition=U32), {INVALID, NOT_FOUND}),
    ],
    "Replication/GetReplicaState": [
        (internal_pb2.GetReplicaStateRequest(stream=STREAM, partition=U32), {INVALID, NOT_FOUND}),
    ],
    "Replication/TransferLeadership": [
        (internal_pb2.TransferLeadershipRequest(stream=STREAM, to_node_id="x", timeout_ms=U32), {INVALID}),
        (internal_pb2.TransferLeadershipRequest(stream=LONG, to_node_id="x"), {INVALID}),
        (internal_pb2.TransferLeadershipRequest(stream=STREAM, to_node_id=LONG, leader_epoch=1), {REFUSED}),
    ],
    "Replication/StartScrub": [(internal_pb2.NodeStartScrubRequest(), {OK})],
    "Replication/ApplyPlacement": [
        (internal_pb2.ApplyPlacementRequest(record=types_pb2.StreamRecord(config=_config(name=LONG))), {INVALID}),
    ],
    "Router/QueryRoute": [
        (router_pb2.QueryRouteRequest(stream=LONG, endpoints=_endpoints()), {INVALID}),
        (router_pb2.QueryRouteRequest(stream=STREAM, endpoints=_endpoints(100_000)), {OK}),
    ],
    "Router/QueryAssignment": [
        (
            router_pb2.QueryAssignmentRequest(
                stream=STREAM, group="g", client_id="m", endpoints=_endpoints(), owned_partitions=[1] * 200_000
            ),
            {INVALID},
        ),
        (
            router_pb2.QueryAssignmentRequest(stream=STREAM, group="g", client_id=LONG, endpoints=_endpoints()),
            {INVALID},
        ),
    ],
    "Router/LeaveGroup": [
        (router_pb2.LeaveGroupRequest(stream=STREAM, group=LONG, client_id="m"), {INVALID}),
        (router_pb2.LeaveGroupRequest(stream=STREAM, group="g", client_id=LONG), {INVALID}),
    ],
    "Router/GetGroupInfo": [
        (router_pb2.GetGroupInfoRequest(stream=STREAM, group=LONG), {INVALID}),
        (router_pb2.GetGroupInfoRequest(stream=LONG, group="g"), {INVALID}),
        (router_pb2.GetGroupInfoRequest(stream=STREAM, group="never-joined"), {OK}),
    ],
    "Router/CreateStream": [
        (streams_pb2.CreateStreamRequest(config=_config(partitions=U32)), {INVALID}),
        (streams_pb2.CreateStreamRequest(config=_config(partitions=1024, replicas=U32)), {INVALID}),
        (streams_pb2.CreateStreamRequest(config=_config(subjects=[f"s{i}.>" for i in range(100_000)])), {INVALID}),
    ],
    "Router/DeleteStream": [(streams_pb2.DeleteStreamRequest(name=LONG), {INVALID})],
    "Router/GetStreamInfo": [(streams_pb2.GetStreamInfoRequest(name=LONG), {INVALID})],
    "Router/ListStreams": [(streams_pb2.ListStreamsRequest(), {OK})],
    "Router/UpdateStream": [(streams_pb2.UpdateStreamRequest(name=STREAM, max_msgs=U64), {INVALID})],
    "Router/CreateConsumer": [
        (
            streams_pb2.CreateConsumerRequest(
                stream=STREAM, config=consumer_config("x", max_ack_pending=U32).to_proto()
            ),
            {INVALID},
        ),
    ],
    "Router/DeleteConsumer": [(streams_pb2.DeleteConsumerRequest(stream=STREAM, consumer=LONG), {INVALID})],
    "Router/ListConsumers": [(streams_pb2.ListConsumersRequest(stream=LONG), {INVALID})],
    "Router/GetConsumerInfo": [(streams_pb2.GetConsumerInfoRequest(stream=STREAM, consumer=LONG), {INVALID})],
    "Router/GetClusterStreamStats": [(router_pb2.GetClusterStreamStatsRequest(include_per_stream=True), {OK})],
    "Router/GetClusterInfo": [(router_pb2.GetClusterInfoRequest(), {OK})],
    "Router/StartScrub": [(router_pb2.StartScrubRequest(), {OK})],  # a pass per node, paced: answered at once
    "Router/MovePartition": [
        (router_pb2.MovePartitionRequest(stream=STREAM, partition=U32, from_node_id="a", to_node_id="b"), {INVALID}),
        (
            router_pb2.MovePartitionRequest(stream=STREAM, from_node_id="a", to_node_id="b", catch_up_timeout_ms=U64),
            {INVALID},
        ),
        (router_pb2.MovePartitionRequest(stream=LONG, from_node_id="a", to_node_id="b"), {INVALID}),
    ],
    "Router/SetPartitionPinned": [
        (router_pb2.SetPartitionPinnedRequest(stream=STREAM, partition=U32, pinned=True), {INVALID}),
        (router_pb2.SetPartitionPinnedRequest(stream=LONG, pinned=True), {INVALID}),
    ],
    "Router/PlanRebalance": [(router_pb2.PlanRebalanceRequest(max_moves=U32), {INVALID})],
}
SERVICES = {
    "Streams": streams_pb2.DESCRIPTOR.services_by_name["Streams"],
    "ChangeFeed": internal_pb2.DESCRIPTOR.services_by_name["ChangeFeed"],
    "Replication": internal_pb2.DESCRIPTOR.services_by_name["Replication"],
    "Router": router_pb2.DESCRIPTOR.services_by_name["Router"],
}


def _methods() -> list[str]:
    return [f"{name}/{method.name}" for name, service in SERVICES.items() for method in service.methods]


def test_every_rpc_has_extreme_cases() -> None:
    """A method added to a service without cases here fails this test."""
    assert sorted(_methods()) == sorted(EXTREMES)


# -- calling any method with any body --------------------------------------------------------------


def _method(path: str) -> descriptor.MethodDescriptor:
    service, name = path.split("/")
    return SERVICES[service].methods_by_name[name]


async def call_raw(address: str, path: str, body: bytes) -> tuple[grpc.StatusCode, str, Message | None]:
    """Send `body` as the request of method `path` ("Service/Method"); returns the status code,
    its details and the (first) response (streams: the call up to its first response, or its end)."""
    method = _method(path)
    full = f"/{method.containing_service.full_name}/{method.name}"
    decode = _message_class(method.output_type).FromString
    options = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
    response: Message | None = None
    async with grpc.aio.insecure_channel(address, options=options) as channel:
        try:
            if method.client_streaming:
                bidi = channel.stream_stream(full, request_serializer=bytes, response_deserializer=decode)
                stream = bidi(iter([body]), timeout=10)
                async for item in stream:
                    response = item
                    break
                stream.cancel()
            elif method.server_streaming:
                server_stream = channel.unary_stream(full, request_serializer=bytes, response_deserializer=decode)
                items = server_stream(body, timeout=3)
                async for item in items:
                    response = item
                    break
                items.cancel()
            else:
                unary = channel.unary_unary(full, request_serializer=bytes, response_deserializer=decode)
                response = await unary(body, timeout=10)
        except grpc.aio.AioRpcError as error:
            return error.code(), error.details() or "", None
    return OK, "", response


def outcome(code: grpc.StatusCode, response: Message | None) -> grpc.StatusCode | str:
    """The status code, or REFUSED for an OK answer whose body refuses (result_code not "ok")."""
    result_code = getattr(response, "result_code", "ok") if code == OK else "ok"
    return REFUSED if result_code not in ("ok", "") else code


def _message_class(message_type: descriptor.Descriptor) -> type[Message]:
    for module in (streams_pb2, internal_pb2, router_pb2, types_pb2):
        found = getattr(module, message_type.name, None)
        if found is not None and found.DESCRIPTOR.full_name == message_type.full_name:
            return found  # type: ignore[no-any-return]
    raise AssertionError(f"no generated class for {message_type.full_name}")


def peak_rss_bytes(handle: ProcessHandle) -> int:
    return handle.peak_rss_bytes()


def reset_peak_rss(handle: ProcessHandle) -> None:
    """Start the process's peak resident set size (VmHWM) over at its current size (Linux 4.0+:
    writing 5 to /proc/<pid>/clear_refs), so the peak measures only what follows."""
    assert handle.process is not None
    Path(f"/proc/{handle.process.pid}/clear_refs").write_text("5")


@pytest.mark.parametrize("path", sorted(EXTREMES))
async def test_extreme_values_are_answered_at_once_and_cost_no_memory(populated: Bounded, path: str) -> None:
    target = populated.target(path.split("/", maxsplit=1)[0])
    reset_peak_rss(target.process)
    peak_before = peak_rss_bytes(target.process)
    for request, expected in EXTREMES[path]:
        started = time.monotonic()
        code, details, response = await call_raw(target.address, path, request.SerializeToString())
        took = time.monotonic() - started
        answer = outcome(code, response)
        assert answer in expected, f"{path} {str(request)[:200]!r}: {answer} {details[:300]} {str(response)[:300]}"
        assert took < ANSWER_WITHIN_S, f"{path}: {took:.2f} s for {answer} {details[:200]}"
        if code != OK:
            assert details, f"{path}: {code} without a message"
    assert target.process.process is not None and target.process.process.poll() is None, f"{path} killed it"
    growth = peak_rss_bytes(target.process) - peak_before
    assert growth <= PEAK_GROWTH_BYTES, f"{path}: peak RSS grew by {growth / 2**20:.0f} MiB"


async def test_the_four_billion_partition_create_is_refused_in_milliseconds(populated: Bounded) -> None:
    router = populated.cluster.routers[0]
    request = streams_pb2.CreateStreamRequest(config=_config(partitions=U32))
    reset_peak_rss(router)
    peak_before = peak_rss_bytes(router)
    started = time.monotonic()
    code, details, _ = await call_raw(router.address, "Router/CreateStream", request.SerializeToString())
    took = time.monotonic() - started
    assert (code, details) == (INVALID, "partitions: at most 1024, got 4294967295")
    assert took < 0.5, took
    assert peak_rss_bytes(router) - peak_before < 8 * 2**20


@pytest.mark.parametrize("path", sorted(EXTREMES))
async def test_an_undecodable_body_is_invalid_argument(populated: Bounded, path: str) -> None:
    target = populated.target(path.split("/", maxsplit=1)[0])
    code, details, _ = await call_raw(target.address, path, UNDECODABLE)
    assert code == INVALID, (path, code, details)
    assert "request body is not a valid" in details, details


def test_the_limit_is_set(bounded: Bounded) -> None:
    """The processes run under the address-space limit this module relies on."""
    for handle in (*bounded.cluster.routers, *bounded.cluster.nodes):
        assert handle.process is not None
        limits = Path(f"/proc/{handle.process.pid}/limits").read_text()
        line = next(line for line in limits.splitlines() if line.startswith("Max address space"))
        assert str(MEMORY_LIMIT_BYTES) in line, line
