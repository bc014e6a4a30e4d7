"""The gateway's kafka-pixy front door, driven by clients generated from kafka-pixy's own proto (the
seed, ../shared/seeds/001: no proto package, so the calls are /KafkaPixy/Produce, ...): the quick
start's produce wrapper and consume-n-ack loop run unchanged as a separate program; keys, offsets,
SetOffsets on an active group, ack timeout, and every error status the seed's comments name. A real
cluster, a real gateway process, real gRPC."""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_tools import protoc  # type: ignore[import-untyped]
from hypothesis import given
from hypothesis import strategies as st
from weir import Client, stream_config
from weir.errors import InvalidArgumentError
from weir.partitioning import partition_for_key
from weir_cli.launcher import GatewayHandle, LocalCluster
from weir_gateway.kafka_pixy.headers import BASE64_HEADERS_KEY, record_headers, stored_headers
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2 as current
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2_grpc as current_grpc

from tests.conftest import needs_own_processes

ROOT = Path(__file__).resolve().parents[1]
SEED_PROTO = Path(__file__).resolve().parent / "protocols" / "kafka_pixy_seed.proto"
SHARED_SEED = ROOT.parent / "shared" / "seeds" / "001_3f8f7fdea44bf94c.txt"
CLIENT_PROGRAM = Path(__file__).resolve().parent / "kafka_pixy_client.py"
LONG_POLL_MS = 500
GATEWAY_ENV = {
    "WEIR_GATEWAY_KAFKA_PIXY_LONG_POLLING_TIMEOUT_MS": str(LONG_POLL_MS),
    "WEIR_GATEWAY_KAFKA_PIXY_ACK_TIMEOUT_MS": "1500",
    "WEIR_GATEWAY_KAFKA_PIXY_MAX_WAITING_REQUESTS": "3",
    "WEIR_GATEWAY_KAFKA_PIXY_GROUP_IDLE_TIMEOUT_MS": "5000",
}


@pytest.fixture(scope="module")
def stubs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Python stubs generated from the seed's proto, as package `kafkapixy` (the quick start's)."""
    text = SEED_PROTO.read_text()
    proto = text[text.index('syntax = "proto3";') :]
    root = tmp_path_factory.mktemp("kafkapixy-stubs")
    package = root / "kafkapixy"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kafkapixy.proto").write_text(proto)
    result = protoc.main(
        ["protoc", f"-I{root}", f"--python_out={root}", f"--grpc_python_out={root}", str(package / "kafkapixy.proto")]
    )
    assert result == 0
    return root


@pytest.fixture(scope="module")
def gateway(cluster: LocalCluster) -> Iterator[GatewayHandle]:
    needs_own_processes()
    handle = cluster.start_gateway("kafka-pixy-gateway", GATEWAY_ENV)
    yield handle
    handle.stop()


@pytest.fixture
def stub(gateway: GatewayHandle) -> Iterator[Any]:
    """A client of the gateway's kafka-pixy port from the current kafka-pixy proto (the seed's own
    stubs run in a separate program: both define the same package-less messages)."""
    channel = grpc.insecure_channel(gateway.kafka_pixy_address)
    yield current_grpc.KafkaPixyStub(channel)
    channel.close()


def create_topic(cluster: LocalCluster, name: str, partitions: int = 3) -> None:
    async def create() -> None:
        async with Client(cluster.router_addresses) as client:
            await client.create_stream(stream_config(name, partitions=partitions, replicas=1))

    asyncio.run(create())


def test_the_kept_seed_proto_is_the_seed() -> None:
    if not SHARED_SEED.exists():
        pytest.skip("the shared seeds directory is not next to this checkout")
    seed = SHARED_SEED.read_text()
    kept = SEED_PROTO.read_text()
    assert kept[kept.index('syntax = "proto3";') :] == seed[seed.index('syntax = "proto3";') :]


def current_call(address: str, method: str, request: Any) -> Any:
    """Call a method the seed's proto lacks (it came later) with the gateway's own messages."""
    response_type = getattr(current, type(request).__name__.replace("Rq", "Rs"))
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(
            f"/KafkaPixy/{method}",
            request_serializer=type(request).SerializeToString,
            response_deserializer=response_type.FromString,
        )
        return call(request, timeout=10)


def status_of(call: object) -> tuple[grpc.StatusCode, str]:
    try:
        call()  # type: ignore[operator]
    except grpc.RpcError as error:
        return error.code(), error.details()
    raise AssertionError("the call succeeded")


def test_the_quick_start_loop_runs_unchanged(
    cluster: LocalCluster, gateway: GatewayHandle, stubs_dir: Path, stream_name: str
) -> None:
    """A separate program with the seed's stubs: produce 200 keyed messages, consume them with two
    consume-n-ack threads; every message comes back once per delivery, with its key, at the
    partition and offset Produce answered."""
    create_topic(cluster, stream_name)
    completed = subprocess.run(
        [
            sys.executable,
            str(CLIENT_PROGRAM),
            str(stubs_dir),
            gateway.kafka_pixy_address,
            stream_name,
            "billing",
            "200",
            "2",
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(completed.stdout)
    produced = [tuple(entry) for entry in report["produced"]]
    assert len(set(produced)) == 200
    seen = {}
    for number, partition, offset, key in report["consumed"]:
        seen[number] = (partition, offset, key)
    assert sorted(seen) == list(range(200))
    for number, (partition, offset, key) in seen.items():
        assert (partition, offset) == produced[number]
        assert key == f"key-{number % 7}"
        assert partition == partition_for_key(key.encode(), 3)  # sarama's FNV-1a, as kafka-pixy


def test_keys_empty_and_undefined(stub: Any, cluster: LocalCluster, stream_name: str) -> None:
    pb = current
    create_topic(cluster, stream_name, partitions=4)
    empty = [stub.Produce(pb.ProdRq(topic=stream_name, message=b"e%d" % n)) for n in range(3)]
    assert {response.partition for response in empty} == {partition_for_key(b"", 4)}  # empty key: one partition
    undefined = [stub.Produce(pb.ProdRq(topic=stream_name, key_undefined=True, message=b"u%d" % n)) for n in range(8)]
    assert len({response.partition for response in undefined}) > 1
    got: dict[bytes, tuple[bool, bytes]] = {}
    request = pb.ConsNAckRq(topic=stream_name, group="keys", auto_ack=True)
    while len(got) < 11:
        response = stub.ConsumeNAck(request, timeout=10)
        got[response.message] = (response.key_undefined, response.key_value)
    assert all(got[b"e%d" % n] == (False, b"") for n in range(3))
    assert all(got[b"u%d" % n] == (True, b"") for n in range(8))


HEADER_KEYS = st.text(min_size=1, max_size=12).filter(lambda key: key != BASE64_HEADERS_KEY)


def is_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@given(st.lists(st.tuples(HEADER_KEYS, st.binary(max_size=24) | st.text(max_size=12).map(str.encode)), max_size=6))
def test_header_values_of_any_bytes_are_stored_as_text_and_come_back_the_same(headers: list[tuple[str, bytes]]) -> None:
    """Any (key, bytes) headers, repeated keys and empty values included: stored as Weir's text
    headers in order (UTF-8 text as is, every value of a key with a non-UTF-8 value in base64, those
    keys listed in the marker header), then read back as the same pairs in the same order."""
    stored = stored_headers(headers)
    markers = [value for key, value in stored if key == BASE64_HEADERS_KEY]
    encoded = set(json.loads(markers[0])) if markers else set()
    assert encoded == {key for key, value in headers if not is_utf8(value)}
    assert len(stored) == len(headers) + len(markers)
    for (key, value), (stored_key, text) in zip(headers, stored, strict=False):
        assert (stored_key, text) == (key, base64.b64encode(value).decode() if key in encoded else value.decode())
    assert record_headers(stored) == headers


def test_text_header_values_are_stored_unchanged_and_a_hand_written_marker_is_read_as_stored() -> None:
    assert stored_headers([("trace", b"abc"), ("empty", b"")]) == [("trace", "abc"), ("empty", "")]
    assert stored_headers([("id", b"\xff\x00"), ("id", b"ok"), ("n", b"1")]) == [
        ("id", "/wA="),
        ("id", "b2s="),
        ("n", "1"),
        (BASE64_HEADERS_KEY, '["id"]'),
    ]
    for marker in ("not json", '{"id": 1}', '["id"]'):
        written = [("id", "not base64!"), (BASE64_HEADERS_KEY, marker)]
        assert record_headers(written) == [(key, value.encode()) for key, value in written]
    with pytest.raises(InvalidArgumentError, match=BASE64_HEADERS_KEY):
        stored_headers([(BASE64_HEADERS_KEY, b"[]")])


def test_byte_header_values_are_produced_and_consumed_unchanged(
    stub: Any, cluster: LocalCluster, stream_name: str
) -> None:
    """Kafka header values are bytes: a non-UTF-8 value, an empty one and text come back from
    ConsumeNAck as sent; Weir's own readers see the text unchanged and the bytes in base64 under the
    marker header. A Produce naming the marker header itself is INVALID_ARGUMENT and stores nothing."""
    pb = current
    create_topic(cluster, stream_name, partitions=1)
    sent = [
        ("trace-id", b"abc-123"),
        ("signature", bytes(range(256))),
        ("empty", b""),
        ("latin-1", "é".encode("latin-1")),
    ]
    headers = [pb.RecordHeader(key=key, value=value) for key, value in sent]
    stub.Produce(pb.ProdRq(topic=stream_name, message=b"signed", headers=headers))
    consumed = stub.ConsumeNAck(pb.ConsNAckRq(topic=stream_name, group="bytes", auto_ack=True), timeout=10)
    assert consumed.message == b"signed"
    assert [(header.key, header.value) for header in consumed.headers] == sent

    async def stored() -> tuple[dict[str, str], int]:
        async with Client(cluster.router_addresses) as client:
            node = await client.leader(stream_name, 0)
            records = (await node.read_messages(stream_name, 0, 1, max_messages=10)).messages
            return {header.key: header.value for header in records[0].headers}, len(records)

    reserved = [pb.RecordHeader(key=BASE64_HEADERS_KEY, value=b'["trace-id"]')]
    code, details = status_of(lambda: stub.Produce(pb.ProdRq(topic=stream_name, message=b"x", headers=reserved)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "reserved" in details
    weir_headers, count = asyncio.run(stored())
    assert count == 1  # the refused produce stored nothing
    assert weir_headers["trace-id"] == "abc-123" and weir_headers["empty"] == ""
    assert weir_headers["signature"] == base64.b64encode(bytes(range(256))).decode()
    assert json.loads(weir_headers[BASE64_HEADERS_KEY]) == ["latin-1", "signature"]


def test_long_poll_timeout_is_not_found_and_acks_anyway(
    stub: Any, cluster: LocalCluster, gateway: GatewayHandle, stream_name: str
) -> None:
    pb = current
    create_topic(cluster, stream_name, partitions=1)
    produced = stub.Produce(pb.ProdRq(topic=stream_name, key_value=b"k", message=b"only"))
    consume = stub.ConsumeNAck
    first = consume(pb.ConsNAckRq(topic=stream_name, group="g", no_ack=True), timeout=10)
    assert (first.partition, first.offset, first.message) == (produced.partition, produced.offset, b"only")
    started = time.monotonic()
    request = pb.ConsNAckRq(topic=stream_name, group="g", ack_partition=first.partition, ack_offset=first.offset)
    code, details = status_of(lambda: consume(request, timeout=10))
    assert code == grpc.StatusCode.NOT_FOUND and "call again" in details
    assert LONG_POLL_MS / 1000 * 0.8 <= time.monotonic() - started < 5
    offsets = current_call(gateway.kafka_pixy_address, "GetOffsets", current.GetOffsetsRq(topic=stream_name, group="g"))
    assert [(o.partition, o.begin, o.end, o.count, o.offset, o.lag) for o in offsets.offsets] == [(0, 0, 1, 1, 1, 0)]


def test_an_unacknowledged_message_is_offered_again(stub: Any, cluster: LocalCluster, stream_name: str) -> None:
    """Ack timeout (1.5 s here): the message comes back, possibly to another client."""
    pb = current
    create_topic(cluster, stream_name, partitions=1)
    stub.Produce(pb.ProdRq(topic=stream_name, message=b"again"))
    consume = stub.ConsumeNAck
    first = consume(pb.ConsNAckRq(topic=stream_name, group="g", no_ack=True), timeout=10)
    started = time.monotonic()
    while True:
        try:
            second = consume(pb.ConsNAckRq(topic=stream_name, group="g", no_ack=True), timeout=10)
            break
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.NOT_FOUND
            assert time.monotonic() - started < 15
    assert (second.partition, second.offset, second.message) == (first.partition, first.offset, b"again")
    assert time.monotonic() - started >= 1.0
    stub.Ack(pb.AckRq(topic=stream_name, group="g", partition=second.partition, offset=second.offset))


def test_set_offsets_moves_an_active_group(
    stub: Any, cluster: LocalCluster, gateway: GatewayHandle, stream_name: str
) -> None:
    pb = current
    create_topic(cluster, stream_name, partitions=1)
    for n in range(5):
        stub.Produce(pb.ProdRq(topic=stream_name, message=b"%d" % n))
    consume = stub.ConsumeNAck
    request = pb.ConsNAckRq(topic=stream_name, group="g", auto_ack=True)
    assert [consume(request, timeout=10).message for _ in range(5)] == [b"0", b"1", b"2", b"3", b"4"]
    rewind = current.SetOffsetsRq(
        topic=stream_name, group="g", offsets=[current.PartitionOffset(partition=0, offset=2)]
    )
    current_call(gateway.kafka_pixy_address, "SetOffsets", rewind)
    again = [consume(request, timeout=10).message for _ in range(3)]
    assert again == [b"2", b"3", b"4"]  # from offset 2, while the group stayed active


def test_metadata(cluster: LocalCluster, gateway: GatewayHandle, stream_name: str) -> None:
    create_topic(cluster, stream_name, partitions=2)
    request = current.GetTopicMetadataRq(topic=stream_name, with_partitions=True)
    metadata = current_call(gateway.kafka_pixy_address, "GetTopicMetadata", request)
    assert metadata.config["partitions"] == "2"
    assert [p.partition for p in metadata.partitions] == [0, 1]
    assert all(p.leader > 0 and p.leader in p.replicas for p in metadata.partitions)
    topics = current_call(gateway.kafka_pixy_address, "ListTopics", current.ListTopicRq())
    assert stream_name in topics.topics


def test_errors_the_seed_names(stub: Any, cluster: LocalCluster, stream_name: str) -> None:
    pb = current
    create_topic(cluster, stream_name, partitions=1)
    produce, consume, ack = stub.Produce, stub.ConsumeNAck, stub.Ack
    cases = [
        (lambda: produce(pb.ProdRq(cluster="other", topic=stream_name, message=b"x")), "cluster 'other' is unknown"),
        (lambda: produce(pb.ProdRq(topic="bad topic", message=b"x")), "topic"),
        (lambda: produce(pb.ProdRq(topic="", message=b"x")), "topic: a topic"),
        (lambda: produce(pb.ProdRq(topic="no-such-topic-kp", message=b"x")), "does not exist"),
        (
            lambda: consume(pb.ConsNAckRq(topic="no-such-topic-kp", group="g", no_ack=True), timeout=10),
            "does not exist",
        ),
        (lambda: consume(pb.ConsNAckRq(topic=stream_name, group="", no_ack=True)), "group"),
        (lambda: ack(pb.AckRq(topic=stream_name, group="g", partition=0, offset=-1)), "offset"),
        (lambda: ack(pb.AckRq(topic=stream_name, group="g", partition=-1, offset=0)), "partition"),
    ]
    for call, message in cases:
        code, details = status_of(call)
        assert code == grpc.StatusCode.INVALID_ARGUMENT, (message, code, details)
        assert message in details, (message, details)


def test_too_many_waiting_consumers_get_resource_exhausted(stub: Any, cluster: LocalCluster, stream_name: str) -> None:
    """At most 3 ConsumeNAck calls wait per group here; a 4th is refused at once."""
    pb = current
    create_topic(cluster, stream_name, partitions=1)
    consume = stub.ConsumeNAck
    request = pb.ConsNAckRq(topic=stream_name, group="crowd", no_ack=True)
    codes: list[grpc.StatusCode] = []
    lock = threading.Lock()
    together = threading.Barrier(5)

    def wait() -> None:
        together.wait()
        code, _ = status_of(lambda: consume(request, timeout=10))
        with lock:
            codes.append(code)

    status_of(lambda: consume(request, timeout=10))  # joins the group (ends NOT_FOUND)
    waiters = [threading.Thread(target=wait) for _ in range(5)]
    for waiter in waiters:
        waiter.start()
    for waiter in waiters:
        waiter.join()
    assert sorted(code.name for code in codes).count("RESOURCE_EXHAUSTED") >= 2
    assert "NOT_FOUND" in {code.name for code in codes}


def test_list_consumers_shows_the_group_members_and_their_partitions(
    stub: Any, cluster: LocalCluster, gateway: GatewayHandle, stream_name: str
) -> None:
    create_topic(cluster, stream_name, partitions=3)
    stub.Produce(current.ProdRq(topic=stream_name, message=b"x"))
    stub.ConsumeNAck(current.ConsNAckRq(topic=stream_name, group="listed", auto_ack=True), timeout=10)
    listing = current_call(gateway.kafka_pixy_address, "ListConsumers", current.ListConsumersRq(topic=stream_name))
    (member,) = listing.groups["listed"].consumers.values()  # this gateway is the one member
    assert sorted(member.partitions) == [0, 1, 2]
    only = current_call(
        gateway.kafka_pixy_address, "ListConsumers", current.ListConsumersRq(topic=stream_name, group="other")
    )
    assert dict(only.groups) == {}
    code, _ = status_of(
        lambda: current_call(gateway.kafka_pixy_address, "ListConsumers", current.ListConsumersRq(topic="no-such-kp"))
    )
    assert code == grpc.StatusCode.NOT_FOUND


def test_unknown_topic_or_group_offsets_are_not_found(
    cluster: LocalCluster, gateway: GatewayHandle, stream_name: str
) -> None:
    create_topic(cluster, stream_name, partitions=1)
    for request in (
        current.GetOffsetsRq(topic="no-such-topic-kp", group="g"),
        current.GetOffsetsRq(topic=stream_name, group="never"),
    ):
        code, _ = status_of(lambda request=request: current_call(gateway.kafka_pixy_address, "GetOffsets", request))
        assert code == grpc.StatusCode.NOT_FOUND
