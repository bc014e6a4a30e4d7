"""The gateway's RocketMQ v1 front door (`apache.rocketmq.v1.MessagingService`), driven by a client
built at test time from the reference protos themselves (../shared/reference, compiled by protoc into a
private descriptor pool, so the client shares no code, and no generated module, with the gateway) and
sending the metadata RocketMQ's v1 Java client sent. A real cluster, a real gateway process, real gRPC;
messages are read back through the Weir SDK. Also the pure name, digest and delay mappings."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import hmac
import time
import uuid
import zlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_tools import protoc  # type: ignore[import-untyped]
from weir import Client, Message, consumer_config, stream_config
from weir.client import NodeClient
from weir.errors import InvalidArgumentError
from weir_cli.launcher import GatewayHandle, LocalCluster
from weir_gateway.rocketmq_v1 import mapping, sql_filter
from weir_gateway.rocketmq_v1.handles import Receipt, Signer, Transaction

from tests.conftest import eventually, needs_own_processes, start_cluster

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference"
KEPT = ROOT / "proto" / "gateway" / "weir_gateway" / "rocketmq_v1" / "pb"
SERVICE = "apache.rocketmq.v1.MessagingService"
CODE_OK, CODE_INVALID_ARGUMENT, CODE_NOT_FOUND = 0, 3, 5
CODE_FAILED_PRECONDITION = 9
RECEIPT_SECRET = "rocketmq-test-secret-0123456789"
# Short retry backoff and orphan checks, so redeliveries and orphan recovery take test time, not minutes.
GATEWAY_ENV = {
    "WEIR_GATEWAY_ROCKETMQ_RECEIPT_SECRET": RECEIPT_SECRET,
    "WEIR_GATEWAY_ROCKETMQ_RETRY_DELAYS_MS": "100,200,300",
    "WEIR_GATEWAY_ROCKETMQ_ORPHAN_SCAN_INTERVAL_MS": "100",
    "WEIR_GATEWAY_ROCKETMQ_ORPHANED_TRANSACTION_RECOVERY_PERIOD_MS": "60000",
    "WEIR_GATEWAY_ROCKETMQ_MULTIPLEXING_POLL_TIMEOUT_MS": "1500",
}


# -- the client, from the reference protos ---------------------------------------------------------


class RocketMQClient:
    """Calls /apache.rocketmq.v1.MessagingService/<Rpc> with messages of the reference protos, adding
    the metadata RocketMQ's v1 Java client sent (Signature.sign: language, protocol, client version,
    date-time, request id, namespace, client id, the MQv2-HMAC-SHA1 authorization)."""

    def __init__(self, pool: Any, address: str, client_id: str, namespace: str = "") -> None:
        self.classes = {
            descriptor.name: message_factory.GetMessageClass(descriptor)
            for descriptor in pool.FindFileByName("apache/rocketmq/v1/service.proto").message_types_by_name.values()
        }
        self.definition = pool.FindFileByName("apache/rocketmq/v1/definition.proto")
        for descriptor in self.definition.message_types_by_name.values():
            self.classes[descriptor.name] = message_factory.GetMessageClass(descriptor)
        self.service = pool.FindServiceByName(SERVICE)
        self.channel = grpc.aio.insecure_channel(address)
        self.address = address
        self.client_id = client_id
        self.namespace = namespace

    def enum(self, enum_name: str, value_name: str) -> int:
        return int(self.definition.enum_types_by_name[enum_name].values_by_name[value_name].number)

    def new(self, message_name: str, /, **fields: Any) -> Any:
        return self.classes[message_name](**fields)

    def metadata(self) -> list[tuple[str, str]]:
        date_time = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        signature = hmac.new(b"secret-key", date_time.encode(), hashlib.sha1).hexdigest().upper()
        metadata = [
            ("x-mq-client-id", self.client_id),
            ("x-mq-language", "JAVA"),
            ("x-mq-protocol", "v1"),
            ("x-mq-client-version", "5.0.0"),
            ("x-mq-date-time", date_time),
            ("x-mq-request-id", str(uuid.uuid4())),
            (
                "authorization",
                f"MQv2-HMAC-SHA1 Credential=access-key/region/service, SignedHeaders=x-mq-date-time, "
                f"Signature={signature}",
            ),
        ]
        if self.namespace:
            metadata.append(("x-mq-namespace", self.namespace))
        return metadata

    async def call(self, rpc: str, request: Any, metadata: list[tuple[str, str]] | None = None) -> Any:
        method = self.service.methods_by_name[rpc]
        response_type = self.classes[method.output_type.name]
        call = self.channel.unary_unary(
            f"/{SERVICE}/{rpc}",
            request_serializer=lambda message: message.SerializeToString(),
            response_deserializer=response_type.FromString,
        )
        return await call(request, metadata=self.metadata() if metadata is None else metadata, timeout=15)

    def endpoints(self) -> Any:
        host, _, port = self.address.rpartition(":")
        return self.new(
            "Endpoints", scheme=self.enum("AddressScheme", "IPv4"), addresses=[{"host": host, "port": int(port)}]
        )

    def resource(self, name: str, namespace: str = "") -> Any:
        return self.new("Resource", name=name, resource_namespace=namespace)

    def message(self, topic: Any, body: bytes, message_id: str | None = None, **system: Any) -> Any:
        """A Message as the v1 Java producer built it: message id, CRC32 digest (upper-case hex),
        IDENTITY encoding, NORMAL type, born time and host unless `system` says otherwise."""
        attributes: dict[str, Any] = {
            "message_id": uuid.uuid4().hex.upper() if message_id is None else message_id,
            "body_digest": {"type": self.enum("DigestType", "CRC32"), "checksum": format(zlib.crc32(body), "X")},
            "born_timestamp": {"seconds": int(time.time())},
            "born_host": "10.0.0.7",
        }
        user_attribute = system.pop("user_attribute", {})
        attributes.update(system)
        return self.new("Message", topic=topic, body=body, user_attribute=user_attribute, system_attribute=attributes)

    @staticmethod
    def duration(ms: int) -> dict[str, int]:
        return {"seconds": ms // 1000, "nanos": ms % 1000 * 1_000_000}

    async def receive(
        self,
        topic: str,
        group: str,
        partition: int,
        *,
        expression: str = "*",
        filter_type: str = "TAG",
        batch_size: int = 16,
        invisible_ms: int = 30_000,
        await_ms: int = 0,
        fifo: bool = False,
        consume_policy: str = "RESUME",
        initialization_ms: int | None = None,
    ) -> Any:
        """ReceiveMessage as the v1 Java simple consumer sends it (partition from QueryAssignment)."""
        request = self.new(
            "ReceiveMessageRequest",
            group=self.resource(group),
            client_id=self.client_id,
            partition={"topic": {"name": topic}, "id": partition},
            filter_expression={"type": self.enum("FilterType", filter_type), "expression": expression},
            consume_policy=self.enum("ConsumePolicy", consume_policy),
            batch_size=batch_size,
            invisible_duration=self.duration(invisible_ms),
            await_time=self.duration(await_ms),
            fifo_flag=fifo,
        )
        if initialization_ms is not None:
            request.initialization_timestamp.FromMilliseconds(initialization_ms)
        return await self.call("ReceiveMessage", request)

    async def settle(self, rpc: str, topic: str, group: str, message: Any, **fields: Any) -> Any:
        """AckMessage, NackMessage or ForwardMessageToDeadLetterQueue of a received message."""
        system = message.system_attribute
        request = self.new(
            f"{rpc}Request",
            group=self.resource(group),
            topic=self.resource(topic),
            client_id=self.client_id,
            receipt_handle=system.receipt_handle,
            message_id=system.message_id,
            **fields,
        )
        return await self.call(rpc, request)

    async def send(self, message: Any, partition: int | None = None) -> Any:
        request = self.new("SendMessageRequest", message=message)
        if partition is not None:
            request.partition.id = partition
        return await self.call("SendMessage", request)


KEPT_IMPORT = 'import "weir_gateway/rocketmq_v1/pb/definition.proto";'
REFERENCE_IMPORT = 'import "apache/rocketmq/v1/definition.proto";'


def reference_text(name: str) -> str:
    """The reference proto `name` ("definition" | "service"): from ../shared/reference, or, in a
    checkout without it, the copy kept in the gateway with its one import path put back (the kept
    copies are checked against the reference wherever it is present)."""
    original = REFERENCE / f"rocketmq-v1-{name}.proto"
    if original.exists():
        return original.read_text()
    kept = (KEPT / f"{name}.proto").read_text()
    return kept[kept.index("// ----") :].replace(KEPT_IMPORT, REFERENCE_IMPORT)


@pytest.fixture(scope="module")
def reference_pool(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A descriptor pool holding the reference protos (at their original import paths) and the
    google/rpc protos they import, built by protoc at test time."""
    root = tmp_path_factory.mktemp("rocketmq-v1-protos")
    package = root / "apache" / "rocketmq" / "v1"
    package.mkdir(parents=True)
    for name in ("definition", "service"):
        (package / f"{name}.proto").write_text(reference_text(name))
    import google.rpc.status_pb2

    google_root = Path(google.rpc.status_pb2.__file__).parents[2]
    well_known = Path(protoc.__file__).parent / "_proto"
    descriptor_set = root / "set.pb"
    arguments = ["protoc", f"-I{root}", f"-I{google_root}", f"-I{well_known}", "--include_imports"]
    arguments += [f"--descriptor_set_out={descriptor_set}", str(package / "service.proto")]
    assert protoc.main(arguments) == 0
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    return pool


@pytest.fixture(scope="module")
def gateway(cluster: LocalCluster) -> Iterator[GatewayHandle]:
    needs_own_processes()
    handle = cluster.start_gateway("rocketmq-gateway", GATEWAY_ENV)
    yield handle
    handle.stop()


@pytest.fixture
async def rocketmq(reference_pool: Any, gateway: GatewayHandle) -> AsyncIterator[RocketMQClient]:
    client = RocketMQClient(reference_pool, gateway.rocketmq_address, f"10.0.0.7@{uuid.uuid4().hex[:6]}#1")
    yield client
    await client.channel.close()


@pytest.fixture
async def sdk(cluster: LocalCluster) -> AsyncIterator[Client]:
    async with Client(cluster.router_addresses) as client:
        yield client


def topic_name() -> str:
    return f"rmq-{uuid.uuid4().hex[:10]}"


def status_of(response: Any) -> tuple[int, str]:
    return response.common.status.code, response.common.status.message


async def read_all(sdk: Client, stream: str, expected: int, settle_s: float = 1.0) -> list[Message]:
    """The stream's messages through a new consumer group of the SDK: `expected` of them, then
    whatever else arrives within `settle_s` (so a duplicate would show)."""
    received: list[Message] = []
    async with sdk.consume(stream, f"reader-{uuid.uuid4().hex[:6]}", batch_size=16, max_wait_ms=100) as messages:
        while True:
            try:
                message = await asyncio.wait_for(anext(messages), 15.0 if len(received) < expected else settle_s)
            except TimeoutError:
                break
            received.append(message)
            await message.ack()
    return received


# -- the kept protos and the pure mappings ---------------------------------------------------------


def test_the_kept_protos_are_the_reference_protos_but_for_one_import_path() -> None:
    if not REFERENCE.exists():
        pytest.skip("the shared reference protos are not next to this checkout")
    for name in ("definition", "service"):
        kept = (KEPT / f"{name}.proto").read_text()
        body = kept[kept.index("// ----") :]  # after the WEIR header comment
        original = (REFERENCE / f"rocketmq-v1-{name}.proto").read_text()
        assert body == original.replace(REFERENCE_IMPORT, KEPT_IMPORT), name


@pytest.mark.parametrize(
    ("namespace", "name", "weir_name"),
    [
        ("", "orders", "orders"),
        ("tenant-a", "orders", "tenant-a::orders"),
        ("", "%DLQ%billing", ":pDLQ:pbilling"),
        ("a%", "|b", "a:p:::vb"),
        ("x|y", "%RETRY%g", "x:vy:::pRETRY:pg"),
    ],
)
def test_resource_names_map_to_weir_names_and_back(namespace: str, name: str, weir_name: str) -> None:
    assert mapping.weir_name_of(namespace, name) == weir_name
    assert mapping.resource_of(weir_name) == (namespace, name)


@pytest.mark.parametrize(
    ("namespace", "name"), [("", ""), ("", "a.b"), ("bad ns", "t"), ("", "t:x"), ("", "x" * 128), ("n" * 60, "t" * 67)]
)
def test_bad_resource_names_are_invalid_arguments(namespace: str, name: str) -> None:
    with pytest.raises(InvalidArgumentError):
        mapping.weir_name_of(namespace, name)


def test_digests_delay_levels_and_reserved_attributes() -> None:
    body = b"hello rocketmq"
    assert mapping.checksum_matches("CRC32", format(zlib.crc32(body), "X"), body)
    assert mapping.checksum_matches("CRC32", format(zlib.crc32(body), "08x"), body)
    assert mapping.checksum_matches("MD5", hashlib.md5(body).hexdigest().upper(), body)
    assert mapping.checksum_matches("SHA1", hashlib.sha1(body).hexdigest().upper(), body)
    assert not mapping.checksum_matches("MD5", hashlib.md5(b"other").hexdigest(), body)
    assert [mapping.delay_level_ms(level) for level in (1, 4, 18, 40)] == [1_000, 30_000, 7_200_000, 7_200_000]
    with pytest.raises(InvalidArgumentError):
        mapping.delay_level_ms(0)
    for name in ("KEYS", "UNIQ_KEY", "__RMQ.TRANSIENT.X", "x-rocketmq-tag", "X-Weir-Dlq-Stream"):
        with pytest.raises(InvalidArgumentError):
            mapping.check_user_attributes({name: "v"})
    mapping.check_user_attributes({"order-id": "7", "keys": "lower case is not RocketMQ's KEYS"})


def test_tag_filters_retry_backoff_and_signed_tokens() -> None:
    assert mapping.tag_filter("*") is None and mapping.tag_filter("") is None and mapping.tag_filter("a||*") is None
    accepted = mapping.tag_filter(" a || b ")
    assert accepted == frozenset({"a", "b"})
    assert (
        mapping.tag_matches(accepted, "a") and not mapping.tag_matches(accepted, "") and mapping.tag_matches(None, "")
    )
    with pytest.raises(InvalidArgumentError):
        mapping.tag_filter("a||")
    assert [mapping.retry_delay_ms(attempt) for attempt in (1, 2, 16, 40)] == [10_000, 30_000, 7_200_000, 7_200_000]
    signer, other = Signer(b"0123456789abcdef"), Signer(b"fedcba9876543210")
    receipt = Receipt("tenant::orders", 3, 42, 2, "tenant::billing")
    handle = signer.receipt_handle(receipt)
    assert signer.receipt(handle) == receipt
    transaction = Transaction("orders", 1, 7, "MSG|1")
    assert signer.transaction(signer.transaction_id(transaction)) == transaction
    for bad in (other.receipt_handle(receipt), handle[:-2], "x.y.z", signer.transaction_id(transaction)):
        with pytest.raises(InvalidArgumentError):
            signer.receipt(bad)


SQL_MESSAGE = {"region": "eu", "amount": "25", "ratio": "0.5", "vip": "TRUE", "note": "it's", "empty": ""}


@pytest.mark.parametrize(
    ("expression", "matches"),
    [
        ("region = 'eu'", True),
        ("region <> 'eu'", False),
        ("REGION = 'eu'", False),  # property names are case-sensitive, keywords are not
        ("region = 'eu' and amount > 10", True),
        ("region = 'us' OR amount >= 25", True),
        ("amount > 9", True),  # numbers compare numerically: the text '25' is not below '9'
        ("amount = 25.0 AND amount = 2.5E1 AND amount = 25L", True),
        ("ratio < .75 and ratio > -1", True),
        ("amount BETWEEN 20 AND 30", True),
        ("amount NOT BETWEEN 20 AND 30", False),
        ("region IN ('us', 'eu')", True),
        ("region NOT IN ('us', 'eu')", False),
        ("note = 'it''s'", True),
        ("vip = TRUE AND NOT vip = FALSE", True),
        ("empty IS NOT NULL AND empty = ''", True),
        ("missing IS NULL", True),
        # a missing property makes a comparison unknown: neither it nor its negation matches
        ("missing = 'x'", False),
        ("missing <> 'x'", False),
        ("NOT missing = 'x'", False),
        ("missing > 1", False),
        ("missing NOT IN ('x')", False),
        ("missing NOT BETWEEN 1 AND 2", False),
        ("missing = 'x' OR region = 'eu'", True),
        ("region > 1", False),  # text that is not a number compared with a number: unknown
        ("TAGS = 'paid'", True),
        ("TRUE", True),
        ("false", False),
        ("(region = 'eu' /* block */ AND (amount < 10 OR ratio = 0.5)) -- line", True),
    ],
)
def test_sql92_filters_evaluate_rocketmqs_subset_over_properties(expression: str, matches: bool) -> None:
    properties = {**SQL_MESSAGE, "TAGS": "paid"}
    assert sql_filter.parse(expression).matches(properties) is matches


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("", "is required"),
        ("   ", "is required"),
        ("region", "alone is not a condition"),
        ("NOT 'x'", "alone is not a condition"),
        ("region = ", "ends too early"),
        ("region = 'eu", "never closed"),
        ("region == 'eu'", "column 9"),
        ("region ~ 'eu'", "unexpected character '~'"),
        ("region LIKE 'e%'", "unexpected 'LIKE'"),
        ("region IN (1, 2)", "expected a 'text' literal"),
        ("amount > 'ten'", "orders numbers"),
        ("amount BETWEEN 30 AND 20", "low bound is above"),
        ("region = NULL", "IS NULL"),
        ("TRUE = 'x'", "cannot be compared"),
        ("'eu' IN ('eu')", "IN tests a property"),
        ("(" * 70 + "a = 1" + ") or b = 1" * 70, "nested more than"),
        ("a = 1 OR " * 600 + "a = 1", "at most 4096 characters"),
    ],
)
def test_bad_sql92_expressions_are_invalid_arguments_naming_the_problem(expression: str, problem: str) -> None:
    with pytest.raises(InvalidArgumentError, match="filter_expression") as raised:
        sql_filter.parse(expression)
    assert problem in raised.value.message


# -- routes and namespaces -------------------------------------------------------------------------


async def test_query_route_answers_one_partition_per_weir_partition_at_the_gateway(
    rocketmq: RocketMQClient, sdk: Client
) -> None:
    """Partition id = the Weir partition index, READ_WRITE, broker id 0 (the leader) whose endpoints
    are the access point the client used (RocketMQ 5's proxy in cluster mode)."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, partitions=3, replicas=1))
    request = rocketmq.new("QueryRouteRequest", topic=rocketmq.resource(topic), endpoints=rocketmq.endpoints())
    response = await rocketmq.call("QueryRoute", request)
    assert status_of(response) == (CODE_OK, "")
    assert [partition.id for partition in response.partitions] == [0, 1, 2]
    for partition in response.partitions:
        assert partition.topic.name == topic and partition.topic.resource_namespace == ""
        assert partition.permission == rocketmq.enum("Permission", "READ_WRITE")
        assert partition.broker.id == 0
        assert [(a.host, a.port) for a in partition.broker.endpoints.addresses] == [
            ("127.0.0.1", int(rocketmq.address.rpartition(":")[2]))
        ]


async def test_the_namespace_separates_two_tenants_topics(
    rocketmq: RocketMQClient, sdk: Client, reference_pool: Any
) -> None:
    """The same topic name in two namespaces is two Weir streams (`<namespace>::<topic>`): one tenant
    names its namespace in the Resource, the other in the x-mq-namespace metadata."""
    topic = topic_name()
    await sdk.create_stream(stream_config(f"tenant-a::{topic}", partitions=2, replicas=1))
    await sdk.create_stream(stream_config(f"tenant-b::{topic}", partitions=3, replicas=1))
    by_resource = rocketmq.new(
        "QueryRouteRequest", topic=rocketmq.resource(topic, "tenant-a"), endpoints=rocketmq.endpoints()
    )
    tenant_b = RocketMQClient(reference_pool, rocketmq.address, "tenant-b-client", namespace="tenant-b")
    by_metadata = tenant_b.new("QueryRouteRequest", topic=tenant_b.resource(topic), endpoints=tenant_b.endpoints())
    route_a = await rocketmq.call("QueryRoute", by_resource)
    route_b = await tenant_b.call("QueryRoute", by_metadata)
    assert len(route_a.partitions) == 2 and route_a.partitions[0].topic.resource_namespace == "tenant-a"
    assert len(route_b.partitions) == 3 and route_b.partitions[0].topic.resource_namespace == "tenant-b"
    no_namespace = rocketmq.new("QueryRouteRequest", topic=rocketmq.resource(topic), endpoints=rocketmq.endpoints())
    assert status_of(await rocketmq.call("QueryRoute", no_namespace))[0] == CODE_NOT_FOUND

    sent_a = await rocketmq.send(rocketmq.message(rocketmq.resource(topic, "tenant-a"), b"for a"))
    sent_b = await tenant_b.send(tenant_b.message(tenant_b.resource(topic), b"for b"))
    assert status_of(sent_a)[0] == status_of(sent_b)[0] == CODE_OK
    assert [m.payload for m in await read_all(sdk, f"tenant-a::{topic}", 1)] == [b"for a"]
    assert [m.payload for m in await read_all(sdk, f"tenant-b::{topic}", 1)] == [b"for b"]
    await tenant_b.channel.close()


# -- sending ---------------------------------------------------------------------------------------


async def test_a_normal_message_is_stored_with_its_tag_keys_and_attributes(
    rocketmq: RocketMQClient, sdk: Client
) -> None:
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, partitions=2, replicas=1))
    body = b"order 7 paid"
    message = rocketmq.message(
        rocketmq.resource(topic),
        body,
        message_id="7F000001A1B2C3D4",
        tag="paid",
        keys=["order-7", "customer 42"],
        producer_group={"name": "billing-producers"},
        user_attribute={"region": "eu", "attempt": "1"},
    )
    response = await rocketmq.send(message, partition=1)
    assert status_of(response) == (CODE_OK, "")
    assert (response.message_id, response.transaction_id) == ("7F000001A1B2C3D4", "")
    (stored,) = await read_all(sdk, topic, 1)
    assert (stored.partition, stored.payload, stored.subject, stored.msg_id) == (1, body, topic, "7F000001A1B2C3D4")
    headers = stored.headers
    assert headers[mapping.HEADER_TAG] == "paid"
    assert mapping.keys_of(headers[mapping.HEADER_KEYS]) == ["order-7", "customer 42"]
    assert headers[mapping.HEADER_MESSAGE_TYPE] == "NORMAL"
    assert headers[mapping.HEADER_BORN_HOST] == "10.0.0.7"
    assert abs(int(headers[mapping.HEADER_BORN_TIMESTAMP_MS]) - time.time() * 1000) < 60_000
    assert headers[mapping.HEADER_PRODUCER_GROUP] == "billing-producers"
    assert (headers["region"], headers["attempt"]) == ("eu", "1")
    assert mapping.HEADER_DELIVERY_TIMESTAMP_MS not in headers


async def test_a_gzip_body_is_checked_as_sent_and_stored_decoded(rocketmq: RocketMQClient, sdk: Client) -> None:
    """The digest covers the bytes on the wire (the v1 client checks it before decompressing); Weir
    stores the decompressed body so every consumer sees the producer's bytes."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1))
    compressed = gzip.compress(b"a body worth compressing " * 40)
    digest = {"type": rocketmq.enum("DigestType", "MD5"), "checksum": hashlib.md5(compressed).hexdigest().upper()}
    message = rocketmq.message(
        rocketmq.resource(topic), compressed, body_encoding=rocketmq.enum("Encoding", "GZIP"), body_digest=digest
    )
    assert status_of(await rocketmq.send(message))[0] == CODE_OK
    (stored,) = await read_all(sdk, topic, 1)
    assert stored.payload == b"a body worth compressing " * 40


async def test_a_delay_message_is_not_consumable_before_its_time(rocketmq: RocketMQClient, sdk: Client) -> None:
    """DELAY with delivery_timestamp 1.5 s ahead: stored at once (the send answers OK), invisible to a
    consumer until its time, then delivered once with its delivery time as a header."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1, allow_scheduled_messages=True))
    await sdk.create_consumer(topic, consumer_config("early"))
    deliver_at_ms = int(time.time() * 1000) + 1_500
    message = rocketmq.message(
        rocketmq.resource(topic),
        b"later",
        message_type=rocketmq.enum("MessageType", "DELAY"),
        delivery_timestamp={"seconds": deliver_at_ms // 1000, "nanos": deliver_at_ms % 1000 * 1_000_000},
    )
    assert status_of(await rocketmq.send(message))[0] == CODE_OK
    assert await sdk.fetch(topic, "early", 0, batch_size=10, max_wait_ms=500) == []
    arrived: list[Message] = []

    async def delivered() -> bool:
        arrived.extend(await sdk.fetch(topic, "early", 0, batch_size=10, max_wait_ms=200))
        return bool(arrived)

    await eventually(delivered, 15, "the delayed message is delivered")
    assert time.time() * 1000 >= deliver_at_ms - 50  # the node's and this clock may differ by a little
    (delivered_message,) = arrived
    headers = delivered_message.headers
    assert delivered_message.payload == b"later"
    assert headers[mapping.HEADER_MESSAGE_TYPE] == "DELAY"
    assert int(headers[mapping.HEADER_DELIVERY_TIMESTAMP_MS]) == deliver_at_ms


async def test_a_delay_level_waits_its_level(rocketmq: RocketMQClient, sdk: Client) -> None:
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1, allow_scheduled_messages=True))
    await sdk.create_consumer(topic, consumer_config("c"))
    sent_ms = int(time.time() * 1000)
    message = rocketmq.message(
        rocketmq.resource(topic), b"level 1", message_type=rocketmq.enum("MessageType", "DELAY"), delay_level=1
    )
    assert status_of(await rocketmq.send(message))[0] == CODE_OK
    assert await sdk.fetch(topic, "c", 0, batch_size=10, max_wait_ms=300) == []
    arrived: list[Message] = []

    async def delivered() -> bool:
        arrived.extend(await sdk.fetch(topic, "c", 0, batch_size=10, max_wait_ms=200))
        return bool(arrived)

    await eventually(delivered, 15, "the level-1 message is delivered")
    headers = arrived[0].headers
    due_ms = int(headers[mapping.HEADER_DELIVERY_TIMESTAMP_MS])
    assert sent_ms + 1_000 <= due_ms <= int(time.time() * 1000)


async def test_a_retried_send_with_the_same_message_id_is_stored_once(rocketmq: RocketMQClient, sdk: Client) -> None:
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, partitions=2, replicas=1))
    message = rocketmq.message(rocketmq.resource(topic), b"once", message_id="RETRIED-0001")
    first = await rocketmq.send(message, partition=0)
    again = await rocketmq.send(message, partition=0)
    assert status_of(first)[0] == status_of(again)[0] == CODE_OK
    assert first.message_id == again.message_id == "RETRIED-0001"
    stored = await read_all(sdk, topic, 1)
    assert [(m.payload, m.msg_id) for m in stored] == [(b"once", "RETRIED-0001")]
    info = await sdk.stream_info(topic)
    assert sum(partition.msg_count for partition in info.partitions) == 1


async def test_every_bad_send_is_refused_with_its_status_and_stores_nothing(
    rocketmq: RocketMQClient, sdk: Client
) -> None:
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1))
    resource = rocketmq.resource(topic)
    message_type = rocketmq.enum("MessageType", "NORMAL")
    cases = [
        ("no message_id", rocketmq.message(resource, b"x", message_id=""), CODE_INVALID_ARGUMENT, "message_id"),
        (
            "bad digest",
            rocketmq.message(
                resource, b"x", body_digest={"type": rocketmq.enum("DigestType", "SHA1"), "checksum": "00"}
            ),
            CODE_INVALID_ARGUMENT,
            "does not match",
        ),
        (
            "reserved attribute",
            rocketmq.message(resource, b"x", user_attribute={"KEYS": "k"}),
            CODE_INVALID_ARGUMENT,
            "reserved",
        ),
        (
            "gateway's prefix",
            rocketmq.message(resource, b"x", user_attribute={"x-rocketmq-tag": "t"}),
            CODE_INVALID_ARGUMENT,
            "reserved",
        ),
        (
            "not gzip",
            rocketmq.message(resource, b"plain", body_encoding=rocketmq.enum("Encoding", "GZIP")),
            CODE_INVALID_ARGUMENT,
            "gzip",
        ),
        (
            "DELAY without a time",
            rocketmq.message(resource, b"x", message_type=rocketmq.enum("MessageType", "DELAY")),
            CODE_INVALID_ARGUMENT,
            "delivery_timestamp",
        ),
        (
            "NORMAL with a delay",
            rocketmq.message(resource, b"x", message_type=message_type, delay_level=3),
            CODE_INVALID_ARGUMENT,
            "DELAY",
        ),
        (
            "FIFO without a group",
            rocketmq.message(resource, b"x", message_type=rocketmq.enum("MessageType", "FIFO")),
            CODE_INVALID_ARGUMENT,
            "message_group",
        ),
        (
            "a group on a NORMAL message",
            rocketmq.message(resource, b"x", message_group="g"),
            CODE_INVALID_ARGUMENT,
            "message_group",
        ),
        (
            "TRANSACTION on a stream without held messages",
            rocketmq.message(resource, b"x", message_type=rocketmq.enum("MessageType", "TRANSACTION")),
            CODE_FAILED_PRECONDITION,
            "allow_scheduled_messages",
        ),
        (
            "DELAY on a stream without scheduled messages",
            rocketmq.message(resource, b"x", message_type=rocketmq.enum("MessageType", "DELAY"), delay_level=1),
            9,  # FAILED_PRECONDITION: scheduling_disabled
            "allow_scheduled_messages",
        ),
        ("unknown topic", rocketmq.message(rocketmq.resource("no-such-topic"), b"x"), CODE_NOT_FOUND, "no-such-topic"),
        ("bad topic name", rocketmq.message(rocketmq.resource("a.b"), b"x"), CODE_INVALID_ARGUMENT, "a.b"),
    ]
    for what, message, code, words in cases:
        response = await rocketmq.send(message)
        assert response.common.status.code == code, (what, response.common.status)
        assert words in response.common.status.message, (what, response.common.status.message)
        assert response.common.error_info.domain == "weir.io", what
    info = await sdk.stream_info(topic)
    assert sum(partition.msg_count for partition in info.partitions) == 0


async def test_bad_routes_are_refused_with_the_protos_statuses(rocketmq: RocketMQClient, sdk: Client) -> None:
    """service.proto: QueryRoute / QueryAssignment with empty endpoints -> INVALID_ARGUMENT, an unknown
    topic -> NOT_FOUND (in ResponseCommon.status, where the v1 Java client reads it)."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1))
    empty = rocketmq.new("QueryRouteRequest", topic=rocketmq.resource(topic))
    assert status_of(await rocketmq.call("QueryRoute", empty))[0] == CODE_INVALID_ARGUMENT
    unknown = rocketmq.new(
        "QueryRouteRequest", topic=rocketmq.resource("no-such-topic"), endpoints=rocketmq.endpoints()
    )
    code, message = status_of(await rocketmq.call("QueryRoute", unknown))
    assert code == CODE_NOT_FOUND and "no-such-topic" in message
    assignment = rocketmq.new("QueryAssignmentRequest", topic=rocketmq.resource(topic), group=rocketmq.resource("g"))
    assert status_of(await rocketmq.call("QueryAssignment", assignment))[0] == CODE_INVALID_ARGUMENT
    assignment.endpoints.CopyFrom(rocketmq.endpoints())
    assignment.topic.name = "no-such-topic"
    assert status_of(await rocketmq.call("QueryAssignment", assignment))[0] == CODE_NOT_FOUND


# -- clients, groups, health -----------------------------------------------------------------------


async def test_assignment_heartbeat_and_termination_through_the_routers_groups(
    rocketmq: RocketMQClient, sdk: Client, reference_pool: Any
) -> None:
    """Two RocketMQ clients of one group share the topic's partitions through the router's balancer
    (each is a group member `rocketmq-<client id>`); a consumer's Heartbeat keeps its membership; after
    NotifyClientTermination the other client gets every partition."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, partitions=4, replicas=1))
    second = RocketMQClient(reference_pool, rocketmq.address, "10.0.0.8@2#1")
    clients = [rocketmq, second]

    async def assigned(client: RocketMQClient) -> list[int]:
        request = client.new(
            "QueryAssignmentRequest",
            topic=client.resource(topic),
            group=client.resource("billing"),
            endpoints=client.endpoints(),
        )  # no client_id field: the x-mq-client-id metadata names the client
        response = await client.call("QueryAssignment", request)
        assert status_of(response)[0] == CODE_OK
        assert all(entry.Partition.broker.id == 0 for entry in response.assignments)
        return [entry.Partition.id for entry in response.assignments]

    async def balanced() -> bool:
        shares = [await assigned(client) for client in clients]
        return sorted(shares[0] + shares[1]) == [0, 1, 2, 3] and len(shares[0]) == len(shares[1]) == 2

    await eventually(balanced, 20, "the two clients share the partitions 2 + 2")
    group = await sdk.group_info(topic, "billing")
    assert sorted(member.client_id for member in group.members) == sorted(
        f"rocketmq-{client.client_id}" for client in clients
    )

    heartbeat = second.new(
        "HeartbeatRequest",
        client_id=second.client_id,
        consumer_data={"group": {"name": "billing"}, "subscriptions": [{"topic": {"name": topic}}]},
    )
    assert status_of(await second.call("Heartbeat", heartbeat))[0] == CODE_OK
    unknown_language = [(k, "COBOL" if k == "x-mq-language" else v) for k, v in second.metadata()]
    assert status_of(await second.call("Heartbeat", heartbeat, unknown_language))[0] == CODE_INVALID_ARGUMENT

    termination = second.new("NotifyClientTerminationRequest", consumer_group={"name": "billing"})
    assert status_of(await second.call("NotifyClientTermination", termination))[0] == CODE_OK

    async def first_holds_all() -> bool:
        return await assigned(rocketmq) == [0, 1, 2, 3]

    await eventually(first_holds_all, 20, "the remaining client holds every partition")
    await second.channel.close()


async def test_health_check_and_grpc_health(rocketmq: RocketMQClient, gateway: GatewayHandle) -> None:
    """HealthCheck is OK while the cluster answers; the port also serves gRPC health for the service."""
    health = rocketmq.new("HealthCheckRequest", group=rocketmq.resource("g"), client_host="10.0.0.7")
    assert status_of(await rocketmq.call("HealthCheck", health)) == (CODE_OK, "")

    from grpc_health.v1 import health_pb2, health_pb2_grpc

    async with grpc.aio.insecure_channel(gateway.rocketmq_address) as channel:
        answer = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=SERVICE))
        assert answer.status == health_pb2.HealthCheckResponse.SERVING


# -- receiving: receipt handles, nack, dead letters, tags ------------------------------------------


async def receive_until(
    rocketmq: RocketMQClient,
    topic: str,
    group: str,
    partitions: int,
    expected: int,
    *,
    timeout_s: float = 15.0,
    **options: Any,
) -> list[Any]:
    """ReceiveMessage over every partition (each a 200 ms long poll) until `expected` messages came."""
    received: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(received) < expected and time.monotonic() < deadline:
        for partition in range(partitions):
            response = await rocketmq.receive(topic, group, partition, await_ms=200, **options)
            assert status_of(response) == (CODE_OK, ""), status_of(response)
            received.extend(response.messages)
    return received


async def raw_records(sdk: Client, stream: str, partition: int = 0) -> list[Any]:
    """Every record a partition stores, whatever its subject (dead letters included)."""
    node = await sdk.leader(stream, partition)
    return list((await node.read_messages(stream, partition, 1, max_messages=1000)).messages)


async def test_a_simple_consumer_receives_and_acks_with_receipt_handles(rocketmq: RocketMQClient, sdk: Client) -> None:
    """Producer + simple consumer: QueryAssignment, ReceiveMessage per assigned partition (each message
    with its system attributes and a receipt handle), AckMessage; acknowledged messages do not come
    back, and acknowledging twice is a stale handle (INVALID_ARGUMENT)."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, partitions=2, replicas=1))
    bodies = {f"order {index}".encode() for index in range(4)}
    for index, body in enumerate(sorted(bodies)):
        message = rocketmq.message(
            rocketmq.resource(topic),
            body,
            message_id=f"MSG-{index}",
            tag="paid",
            keys=[f"order-{index}"],
            producer_group={"name": "shop"},
            user_attribute={"region": "eu"},
        )
        assert status_of(await rocketmq.send(message, partition=index % 2)) == (CODE_OK, "")
    assignment = rocketmq.new(
        "QueryAssignmentRequest",
        topic=rocketmq.resource(topic),
        group=rocketmq.resource("billing"),
        endpoints=rocketmq.endpoints(),
    )
    assigned = [entry.Partition.id for entry in (await rocketmq.call("QueryAssignment", assignment)).assignments]
    assert sorted(assigned) == [0, 1]
    received = await receive_until(rocketmq, topic, "billing", 2, 4)
    assert {message.body for message in received} == bodies
    for message in received:
        system = message.system_attribute
        index = int(system.message_id.removeprefix("MSG-"))
        assert (message.topic.name, system.tag, list(system.keys)) == (topic, "paid", [f"order-{index}"])
        assert (system.partition_id, system.partition_offset, system.delivery_attempt) == (index % 2, index // 2, 1)
        assert system.message_type == rocketmq.enum("MessageType", "NORMAL")
        assert system.body_digest.checksum == format(zlib.crc32(message.body), "X")
        assert system.producer_group.name == "shop" and system.born_host == "10.0.0.7"
        assert system.invisible_period.seconds == 30 and system.receipt_handle
        assert dict(message.user_attribute) == {"region": "eu"}
        assert status_of(await rocketmq.settle("AckMessage", topic, "billing", message)) == (CODE_OK, "")
    for partition in (0, 1):
        assert list((await rocketmq.receive(topic, "billing", partition, await_ms=300)).messages) == []
    again = await rocketmq.settle("AckMessage", topic, "billing", received[0])
    assert status_of(again)[0] == CODE_INVALID_ARGUMENT and "out of date" in status_of(again)[1]


async def test_stale_forged_and_foreign_receipt_handles_are_invalid_arguments(
    rocketmq: RocketMQClient, sdk: Client
) -> None:
    """A handle is bound to one delivery: once the invisible duration passed and the message was
    received again, the first handle is stale (INVALID_ARGUMENT) and the second one settles it. A
    forged, malformed or other group's handle is INVALID_ARGUMENT too."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1))
    assert status_of(await rocketmq.send(rocketmq.message(rocketmq.resource(topic), b"once")))[0] == CODE_OK
    (first,) = (await rocketmq.receive(topic, "g", 0, invisible_ms=300, await_ms=2000)).messages
    (second,) = await receive_until(rocketmq, topic, "g", 1, 1, invisible_ms=30_000)
    assert (first.system_attribute.delivery_attempt, second.system_attribute.delivery_attempt) == (1, 2)
    stale = await rocketmq.settle("AckMessage", topic, "g", first)
    assert status_of(stale)[0] == CODE_INVALID_ARGUMENT and "out of date" in status_of(stale)[1]
    assert stale.common.error_info.reason == "stale_receipt_handle"

    handle = second.system_attribute.receipt_handle
    payload, _, mac = handle.partition(".")
    forged = payload + "." + ("A" if mac[0] != "A" else "B") + mac[1:]
    for bad in (forged, "not-a-handle", handle + "x", ""):
        second.system_attribute.receipt_handle = bad
        response = await rocketmq.settle("AckMessage", topic, "g", second)
        assert status_of(response)[0] == CODE_INVALID_ARGUMENT, bad
    second.system_attribute.receipt_handle = handle
    foreign = await rocketmq.settle("AckMessage", topic, "other-group", second)
    assert status_of(foreign)[0] == CODE_INVALID_ARGUMENT and "group" in status_of(foreign)[1]
    assert status_of(await rocketmq.settle("AckMessage", topic, "g", second)) == (CODE_OK, "")


async def test_nack_redelivers_with_the_next_attempt_then_dead_letters_at_max_attempts(
    rocketmq: RocketMQClient, sdk: Client
) -> None:
    """The group's DeadLetterPolicy (max 3 attempts, from the consumer's Heartbeat) is its consumer's
    max_deliver: NackMessage redelivers after the retry backoff with delivery_attempt + 1; the nack
    of attempt 3 moves the message under `<stream>.dlq.<group>` (with Weir's x-weir-dlq-* headers),
    and the group never sees it again. ForwardMessageToDeadLetterQueue moves one at once."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1))
    heartbeat = rocketmq.new(
        "HeartbeatRequest",
        client_id=rocketmq.client_id,
        consumer_data={
            "group": {"name": "retrying"},
            "subscriptions": [{"topic": {"name": topic}}],
            "dead_letter_policy": {"max_delivery_attempts": 3},
        },
    )
    assert status_of(await rocketmq.call("Heartbeat", heartbeat))[0] == CODE_OK
    resource = rocketmq.resource(topic)
    assert status_of(await rocketmq.send(rocketmq.message(resource, b"fails", message_id="FAILS")))[0] == CODE_OK
    attempts = []
    for _ in range(3):
        (message,) = await receive_until(rocketmq, topic, "retrying", 1, 1)
        attempts.append(message.system_attribute.delivery_attempt)
        nack = await rocketmq.settle(
            "NackMessage", topic, "retrying", message, delivery_attempt=attempts[-1], max_delivery_attempts=0
        )
        assert status_of(nack) == (CODE_OK, "")
    assert attempts == [1, 2, 3]
    assert list((await rocketmq.receive(topic, "retrying", 0, await_ms=600)).messages) == []
    info = await sdk.consumer_info(topic, "retrying")
    assert (info.config.max_deliver, info.config.dead_letter_subject) == (3, f"{topic}.dlq.retrying")

    assert status_of(await rocketmq.send(rocketmq.message(resource, b"poison", message_id="POISON")))[0] == CODE_OK
    (poison,) = await receive_until(rocketmq, topic, "retrying", 1, 1)
    forwarded = await rocketmq.settle("ForwardMessageToDeadLetterQueue", topic, "retrying", poison)
    assert status_of(forwarded) == (CODE_OK, "")
    dead = [record for record in await raw_records(sdk, topic) if record.subject == f"{topic}.dlq.retrying"]
    assert [record.payload for record in dead] == [b"fails", b"poison"]
    headers = {header.key: header.value for header in dead[0].headers}
    assert headers["x-weir-dlq-consumer"] == "retrying" and headers["x-weir-dlq-deliver-count"] == "3"
    assert list((await rocketmq.receive(topic, "retrying", 0, await_ms=300)).messages) == []


async def test_a_tag_filter_returns_only_matching_messages(rocketmq: RocketMQClient, sdk: Client) -> None:
    """`a||c` returns the messages tagged a or c (the others are acknowledged for the group by the
    gateway, as RocketMQ's broker skips them); `*` returns every one."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1))
    for tag in ("a", "b", "c", "", "a"):
        extra = {"tag": tag} if tag else {}
        assert (
            status_of(await rocketmq.send(rocketmq.message(rocketmq.resource(topic), f"tag {tag}".encode(), **extra)))[
                0
            ]
            == 0
        )
    filtered = await receive_until(rocketmq, topic, "only-a-c", 1, 3, expression="a || c")
    assert sorted(message.system_attribute.tag for message in filtered) == ["a", "a", "c"]
    for message in filtered:
        assert status_of(await rocketmq.settle("AckMessage", topic, "only-a-c", message))[0] == CODE_OK
    assert list((await rocketmq.receive(topic, "only-a-c", 0, expression="a||c", await_ms=300)).messages) == []
    everything = await receive_until(rocketmq, topic, "all-tags", 1, 5)
    assert sorted(message.system_attribute.tag for message in everything) == ["", "a", "a", "b", "c"]


async def test_an_sql92_filter_returns_only_messages_whose_properties_match(
    rocketmq: RocketMQClient, sdk: Client
) -> None:
    """A SQL filter over the user attributes (and TAGS, the tag) on ReceiveMessage and PullMessage:
    only the matching messages come back, numbers compare as numbers, a message without the property
    does not match `<>` either; the others are acknowledged for the group and never come back."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1))
    resource = rocketmq.resource(topic)
    orders = [("eu", "25", "paid"), ("eu", "9", "paid"), ("us", "100", "paid"), ("eu", "40", "open"), (None, "50", "")]
    for index, (region, amount, tag) in enumerate(orders):
        attributes = {"amount": amount} | ({"region": region} if region else {})
        extra = {"tag": tag} if tag else {}
        message = rocketmq.message(resource, f"order {index}".encode(), user_attribute=attributes, **extra)
        assert status_of(await rocketmq.send(message))[0] == CODE_OK
    expression = "region = 'eu' AND amount > 10 AND TAGS IN ('paid', 'open')"
    received = await receive_until(rocketmq, topic, "sql-group", 1, 2, filter_type="SQL", expression=expression)
    assert sorted(message.body for message in received) == [b"order 0", b"order 3"]
    for message in received:
        assert status_of(await rocketmq.settle("AckMessage", topic, "sql-group", message))[0] == CODE_OK
    again = await rocketmq.receive(topic, "sql-group", 0, filter_type="SQL", expression=expression, await_ms=300)
    assert list(again.messages) == []
    info = await sdk.consumer_info(topic, "sql-group")
    assert info.num_ack_pending == 0 and info.num_pending == 0  # the 3 others were skipped (acknowledged)
    not_us = await receive_until(rocketmq, topic, "not-us", 1, 3, filter_type="SQL", expression="region <> 'us'")
    assert sorted(message.body for message in not_us) == [b"order 0", b"order 1", b"order 3"]  # order 4 has none

    request = rocketmq.new(
        "PullMessageRequest",
        group=rocketmq.resource("broadcast"),
        partition={"topic": {"name": topic}, "id": 0},
        offset=0,
        batch_size=10,
        filter_expression={"type": rocketmq.enum("FilterType", "SQL"), "expression": "amount BETWEEN 40 AND 100"},
        client_id=rocketmq.client_id,
    )
    pulled = await rocketmq.call("PullMessage", request)
    assert status_of(pulled)[0] == CODE_OK and pulled.next_offset == 5
    assert [message.body for message in pulled.messages] == [b"order 2", b"order 3", b"order 4"]


async def test_a_bad_sql92_expression_is_an_invalid_argument_and_creates_no_group(
    rocketmq: RocketMQClient, sdk: Client
) -> None:
    """ReceiveMessage, PullMessage and a consumer's Heartbeat with an expression that does not parse
    answer INVALID_ARGUMENT naming the problem, and no consumer group is created or remembered."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1))
    bad = "region = 'eu' AND amount >"
    received = await rocketmq.receive(topic, "bad-sql", 0, filter_type="SQL", expression=bad)
    assert status_of(received)[0] == CODE_INVALID_ARGUMENT and "ends too early" in status_of(received)[1]
    assert bad in status_of(received)[1]
    pull = rocketmq.new(
        "PullMessageRequest",
        group=rocketmq.resource("broadcast"),
        partition={"topic": {"name": topic}, "id": 0},
        filter_expression={"type": rocketmq.enum("FilterType", "SQL"), "expression": "amount > 'ten'"},
    )
    pulled = await rocketmq.call("PullMessage", pull)
    assert status_of(pulled)[0] == CODE_INVALID_ARGUMENT and "orders numbers" in status_of(pulled)[1]
    heartbeat = rocketmq.new(
        "HeartbeatRequest",
        client_id=rocketmq.client_id,
        consumer_data={
            "group": {"name": "bad-sql"},
            "subscriptions": [
                {
                    "topic": {"name": topic},
                    "expression": {"type": rocketmq.enum("FilterType", "SQL"), "expression": bad},
                }
            ],
            "dead_letter_policy": {"max_delivery_attempts": 2},
        },
    )
    answered = await rocketmq.call("Heartbeat", heartbeat)
    assert status_of(answered)[0] == CODE_INVALID_ARGUMENT and "ends too early" in status_of(answered)[1]
    assert [info.config.name for info in await sdk.list_consumers(topic)] == []


async def test_ack_by_offset_settles_the_received_message_at_that_offset(rocketmq: RocketMQClient, sdk: Client) -> None:
    """AckMessage's offset arm (the message's partition_offset, with its message_id naming the
    partition) settles the pending message as its receipt handle would: it does not come back after
    its invisible duration. An offset not yet delivered to the group, one settled already, a missing
    or wrong message_id, a negative offset or an unknown group are refused and settle nothing."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, partitions=2, replicas=1))
    resource = rocketmq.resource(topic)
    for index in range(4):
        message = rocketmq.message(resource, f"order {index}".encode(), message_id=f"OFF-{index}")
        assert status_of(await rocketmq.send(message, partition=index % 2))[0] == CODE_OK

    async def ack(offset: int, message_id: str = "", group: str = "offsets") -> tuple[int, str]:
        request = rocketmq.new(
            "AckMessageRequest",
            group=rocketmq.resource(group),
            topic=rocketmq.resource(topic),
            client_id=rocketmq.client_id,
            offset=offset,
            message_id=message_id,
        )
        return status_of(await rocketmq.call("AckMessage", request))

    (first,) = (await rocketmq.receive(topic, "offsets", 0, batch_size=1, invisible_ms=800, await_ms=2000)).messages
    system = first.system_attribute
    assert (system.partition_id, system.partition_offset, system.message_id) == (0, 0, "OFF-0")
    not_delivered = await ack(1, "OFF-2")
    assert not_delivered[0] == CODE_INVALID_ARGUMENT and "was not delivered to group" in not_delivered[1]
    for offset, message_id, problem in (
        (0, "", "message_id: required"),
        (0, "OFF-3", "no partition"),
        (-1, "", ">= 0"),
    ):
        refused = await ack(offset, message_id)
        assert refused[0] == CODE_INVALID_ARGUMENT and problem in refused[1], refused
    assert (await ack(0, "OFF-0", group="never-received"))[0] == CODE_NOT_FOUND
    assert await ack(system.partition_offset, system.message_id) == (CODE_OK, "")
    settled = await ack(0, "OFF-0")
    assert settled[0] == CODE_INVALID_ARGUMENT and "is not pending" in settled[1]
    await asyncio.sleep(1.0)  # past the invisible duration: an unsettled message would come back now
    rest = await receive_until(rocketmq, topic, "offsets", 2, 3)
    assert sorted(message.system_attribute.message_id for message in rest) == ["OFF-1", "OFF-2", "OFF-3"]
    for message in rest:
        assert await ack(message.system_attribute.partition_offset, message.system_attribute.message_id) == (0, "")
    info = await sdk.consumer_info(topic, "offsets")
    assert (info.num_ack_pending, info.num_pending, info.acked_total) == (0, 0, 4)

    single = topic_name()  # one partition: the offset alone names the message
    await sdk.create_stream(stream_config(single, replicas=1))
    assert status_of(await rocketmq.send(rocketmq.message(rocketmq.resource(single), b"only")))[0] == CODE_OK
    (only,) = (await rocketmq.receive(single, "offsets", 0, await_ms=2000)).messages
    request = rocketmq.new(
        "AckMessageRequest", group=rocketmq.resource("offsets"), topic=rocketmq.resource(single), offset=0
    )
    assert status_of(await rocketmq.call("AckMessage", request)) == (CODE_OK, "")
    assert (await sdk.consumer_info(single, "offsets")).acked_total == 1 and only.system_attribute.partition_offset == 0


# -- transactions ----------------------------------------------------------------------------------


def end_transaction(
    rocketmq: RocketMQClient, sent: Any, message_id: str, resolution: str, source: str = "CLIENT"
) -> Any:
    request_type: Any = rocketmq.classes["EndTransactionRequest"]
    return rocketmq.new(
        "EndTransactionRequest",
        group=rocketmq.resource("tx-producers"),
        message_id=message_id,
        transaction_id=sent.transaction_id if hasattr(sent, "transaction_id") else sent,
        resolution=request_type.TransactionResolution.Value(resolution),
        source=request_type.Source.Value(source),
    )


async def second_resolutions_answer_from_the_first(rocketmq: RocketMQClient, commit: Any, rollback: Any) -> None:
    """`commit` (message TX-C) was committed and `rollback` (TX-R) rolled back: a repeat of either
    answers OK, the contradicting one FAILED_PRECONDITION saying what came first."""
    for _ in range(2):
        for sent, message_id, resolution in ((commit, "TX-C", "COMMIT"), (rollback, "TX-R", "ROLLBACK")):
            again = await rocketmq.call("EndTransaction", end_transaction(rocketmq, sent, message_id, resolution))
            assert status_of(again) == (CODE_OK, ""), (message_id, resolution)
        late_rollback = await rocketmq.call("EndTransaction", end_transaction(rocketmq, commit, "TX-C", "ROLLBACK"))
        code, message = status_of(late_rollback)
        assert code == CODE_FAILED_PRECONDITION and "by a commit" in message and "rollback cannot undo" in message
        late_commit = await rocketmq.call(
            "EndTransaction", end_transaction(rocketmq, rollback, "TX-R", "COMMIT", source="SERVER_CHECK")
        )
        code, message = status_of(late_commit)
        assert code == CODE_FAILED_PRECONDITION and "by a rollback" in message and "commit cannot undo" in message


async def test_transactional_commit_and_rollback(rocketmq: RocketMQClient, sdk: Client) -> None:
    """A TRANSACTION message is invisible until EndTransaction: COMMIT delivers it, ROLLBACK discards
    it; the same resolution again answers OK and changes nothing, the other one FAILED_PRECONDITION
    naming the first, changing nothing; a forged transaction id or another message's id is
    INVALID_ARGUMENT."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1, allow_scheduled_messages=True))
    transaction = rocketmq.enum("MessageType", "TRANSACTION")
    resource = rocketmq.resource(topic)
    commit = await rocketmq.send(rocketmq.message(resource, b"commit me", message_id="TX-C", message_type=transaction))
    rollback = await rocketmq.send(
        rocketmq.message(resource, b"roll back", message_id="TX-R", message_type=transaction)
    )
    assert status_of(commit)[0] == status_of(rollback)[0] == CODE_OK
    assert commit.transaction_id and rollback.transaction_id and commit.transaction_id != rollback.transaction_id
    assert list((await rocketmq.receive(topic, "tx-readers", 0, await_ms=300)).messages) == []

    wrong_message = await rocketmq.call("EndTransaction", end_transaction(rocketmq, commit, "TX-R", "COMMIT"))
    assert status_of(wrong_message)[0] == CODE_INVALID_ARGUMENT
    payload, _, mac = commit.transaction_id.partition(".")
    forged = end_transaction(rocketmq, payload + "." + mac[::-1], "TX-C", "COMMIT")
    assert status_of(await rocketmq.call("EndTransaction", forged))[0] == CODE_INVALID_ARGUMENT
    assert status_of(await rocketmq.call("EndTransaction", end_transaction(rocketmq, commit, "TX-C", "COMMIT")))[0] == 0
    assert (
        status_of(await rocketmq.call("EndTransaction", end_transaction(rocketmq, rollback, "TX-R", "ROLLBACK")))[0]
        == 0
    )
    await second_resolutions_answer_from_the_first(rocketmq, commit, rollback)

    (delivered,) = await receive_until(rocketmq, topic, "tx-readers", 1, 1)
    assert (delivered.body, delivered.system_attribute.message_id) == (b"commit me", "TX-C")
    assert delivered.system_attribute.message_type == transaction
    assert list((await rocketmq.receive(topic, "tx-readers", 0, await_ms=500)).messages) == []
    assert (await sdk.list_scheduled(topic, 0, held_only=True)).messages == ()


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_a_failover_between_two_end_transactions_keeps_the_answer(reference_pool: Any, tmp_path: Path) -> None:
    """A three-copy topic: one transaction committed, one rolled back; once every copy has copied
    the resolutions, the primary is SIGKILLed; the new primary answers a repeat OK and a
    contradicting EndTransaction FAILED_PRECONDITION, as the old one did, and its log holds the
    committed message once and the rolled back one nowhere (a cluster of its own)."""
    local = start_cluster(tmp_path / "cluster", nodes=3, routers=1)
    gateway = local.start_gateway("rocketmq-failover", GATEWAY_ENV)
    rocketmq = RocketMQClient(reference_pool, gateway.rocketmq_address, "10.0.0.7@failover#1")
    try:
        async with Client(local.router_addresses, retry_timeout_s=30) as sdk:
            topic = topic_name()
            await sdk.create_stream(stream_config(topic, replicas=3, allow_scheduled_messages=True))
            transaction, resource = rocketmq.enum("MessageType", "TRANSACTION"), rocketmq.resource(topic)
            commit = await rocketmq.send(
                rocketmq.message(resource, b"commit me", message_id="TX-C", message_type=transaction)
            )
            rollback = await rocketmq.send(
                rocketmq.message(resource, b"roll back", message_id="TX-R", message_type=transaction)
            )
            for sent, message_id, resolution in ((commit, "TX-C", "COMMIT"), (rollback, "TX-R", "ROLLBACK")):
                ended = await rocketmq.call("EndTransaction", end_transaction(rocketmq, sent, message_id, resolution))
                assert status_of(ended) == (CODE_OK, "")
            await second_resolutions_answer_from_the_first(rocketmq, commit, rollback)

            async def every_copy_resolved_both() -> bool:  # no held record left, the commit's delivery copied
                for node in local.nodes:
                    async with NodeClient(node.internal_address, timeout_s=5) as reader:
                        subjects = [message.subject async for message in reader.read_all(topic)]
                    if len(subjects) != 1 or subjects[0].startswith("$weir."):
                        return False
                return True

            await eventually(every_copy_resolved_both, 30, "every copy copied both resolutions")
            old_primary = (await sdk.route(topic, refresh=True)).partitions[0].primary.node_id
            next(node for node in local.nodes if node.name == old_primary).kill()

            async def failed_over() -> bool:
                return (await sdk.route(topic, refresh=True)).partitions[0].primary.node_id not in ("", old_primary)

            await eventually(failed_over, 30, "a new primary")
            await second_resolutions_answer_from_the_first(rocketmq, commit, rollback)
            primary = (await sdk.route(topic, refresh=True)).partitions[0].primary
            async with NodeClient(primary.address, timeout_s=5) as reader:  # nothing changed: one message
                assert [message.payload async for message in reader.read_all(topic)] == [b"commit me"]
    finally:
        await rocketmq.channel.close()
        gateway.stop()
        local.stop()


async def test_an_orphaned_transaction_is_resolved_through_multiplexing_call(
    rocketmq: RocketMQClient, sdk: Client
) -> None:
    """A producer that never ends its transaction is asked about it: its MultiplexingCall long poll
    (GenericPollingRequest with its producer group and topics) is answered, once the message is older
    than its orphaned_transaction_recovery_period, with a RecoverOrphanedTransactionRequest holding the
    message and its transaction id; the producer's EndTransaction (source SERVER_CHECK) commits it. A
    poll of another producer group is not asked, and answers an empty OK GenericPollingResponse."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, partitions=2, replicas=1, allow_scheduled_messages=True))
    orphan = rocketmq.message(
        rocketmq.resource(topic),
        b"forgotten",
        message_id="TX-ORPHAN",
        message_type=rocketmq.enum("MessageType", "TRANSACTION"),
        producer_group={"name": "tx-producers"},
        orphaned_transaction_recovery_period=rocketmq.duration(500),
        tag="order",
    )
    sent = await rocketmq.send(orphan, partition=1)
    assert status_of(sent)[0] == CODE_OK

    def polling(group: str) -> Any:
        request = {"client_id": rocketmq.client_id, "topics": [{"name": topic}], "producer_group": {"name": group}}
        return rocketmq.new("MultiplexingRequest", polling_request=request)

    other = await rocketmq.call("MultiplexingCall", polling("other-producers"))
    assert other.WhichOneof("type") == "polling_response" and other.polling_response.common.status.code == CODE_OK
    started = time.monotonic()
    answer = await rocketmq.call("MultiplexingCall", polling("tx-producers"))
    while answer.WhichOneof("type") == "polling_response" and time.monotonic() - started < 10:
        answer = await rocketmq.call("MultiplexingCall", polling("tx-producers"))
    assert answer.WhichOneof("type") == "recover_orphaned_transaction_request"
    command = answer.recover_orphaned_transaction_request
    message = command.orphaned_transactional_message
    assert (message.body, message.topic.name, message.system_attribute.message_id) == (b"forgotten", topic, "TX-ORPHAN")
    assert (message.system_attribute.tag, message.system_attribute.producer_group.name) == ("order", "tx-producers")
    assert message.system_attribute.partition_id == 1
    assert command.transaction_id == sent.transaction_id
    check = end_transaction(rocketmq, command.transaction_id, "TX-ORPHAN", "COMMIT", source="SERVER_CHECK")
    assert status_of(await rocketmq.call("EndTransaction", check)) == (CODE_OK, "")
    (delivered,) = await receive_until(rocketmq, topic, "orphan-readers", 2, 1)
    assert delivered.body == b"forgotten"


# -- FIFO ------------------------------------------------------------------------------------------


async def test_fifo_groups_keep_their_order_under_concurrent_consumers(
    rocketmq: RocketMQClient, sdk: Client, reference_pool: Any
) -> None:
    """FIFO messages of one message_group share a partition and are delivered one at a time in send
    order (the next only after the previous is acknowledged), while two clients of a FIFO consumer
    group receive from every partition at once; one nack in the middle redelivers the same message
    before anything after it."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, partitions=3, replicas=1))
    groups, per_group = [f"order-{index}" for index in range(6)], 6
    fifo = rocketmq.enum("MessageType", "FIFO")
    for index in range(per_group):
        for group in groups:
            message = rocketmq.message(
                rocketmq.resource(topic), f"{group}:{index}".encode(), message_type=fifo, message_group=group
            )
            assert status_of(await rocketmq.send(message, partition=0))[0] == CODE_OK
    clients = [rocketmq, RocketMQClient(reference_pool, rocketmq.address, "10.0.0.9@fifo#2")]
    for client in clients:
        heartbeat = client.new(
            "HeartbeatRequest",
            client_id=client.client_id,
            fifo_flag=True,
            consumer_data={"group": {"name": "fifo-group"}, "subscriptions": [{"topic": {"name": topic}}]},
        )
        assert status_of(await client.call("Heartbeat", heartbeat))[0] == CODE_OK
    events: list[tuple[float, str, str, int]] = []  # (time, "received" | "acked", group, index)
    nacked: set[str] = set()

    async def consume(client: RocketMQClient) -> None:
        deadline = time.monotonic() + 30
        while (
            sum(kind == "acked" for _, kind, _, _ in events) < len(groups) * per_group and time.monotonic() < deadline
        ):
            for partition in range(3):
                response = await client.receive(topic, "fifo-group", partition, await_ms=100, fifo=True)
                assert status_of(response)[0] == CODE_OK, status_of(response)
                for message in response.messages:
                    group, index = message.body.decode().split(":")
                    assert message.system_attribute.message_group == group
                    events.append((time.monotonic(), "received", group, int(index)))
                    await asyncio.sleep(0.01)
                    if index == "2" and group not in nacked:
                        nacked.add(group)
                        await client.settle("NackMessage", topic, "fifo-group", message, max_delivery_attempts=5)
                        continue
                    assert status_of(await client.settle("AckMessage", topic, "fifo-group", message))[0] == 0
                    events.append((time.monotonic(), "acked", group, int(index)))

    await asyncio.gather(*(consume(client) for client in clients))
    await clients[1].channel.close()
    for group in groups:
        acked = [index for _, kind, name, index in events if kind == "acked" and name == group]
        received = [index for _, kind, name, index in events if kind == "received" and name == group]
        assert acked == list(range(per_group)), (group, acked)
        assert received == [0, 1, 2, 2, 3, 4, 5], (group, received)
        settled = [time for time, kind, name, _ in events if kind == "acked" and name == group]
        firsts = [time for time, kind, name, index in events if kind == "received" and name == group and index > 0]
        firsts = sorted(set(firsts))
        assert all(received_at > acked_at for received_at, acked_at in zip(firsts[-3:], settled[2:5], strict=True))
    partitions = {group: (await sdk.partition_for(topic, group.encode())) for group in groups}
    assert len(set(partitions.values())) > 1  # the groups spread over partitions, and ran in parallel


# -- offsets and broadcast pull --------------------------------------------------------------------


async def test_broadcast_pull_from_an_offset_queried_by_time(rocketmq: RocketMQClient, sdk: Client) -> None:
    """QueryOffset BEGINNING / END / TIME_POINT (offsets are seq - 1) and PullMessage from the offset
    found by time: the later messages, next_offset past them, a tag filter, and an empty OK answer
    after await_time when nothing more arrives; a message sent during the wait is returned."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1))
    resource = rocketmq.resource(topic)
    for index in range(3):
        assert status_of(await rocketmq.send(rocketmq.message(resource, f"early {index}".encode())))[0] == CODE_OK
    await asyncio.sleep(0.05)
    boundary_ms = int(time.time() * 1000)
    await asyncio.sleep(0.05)
    for index, tag in enumerate(("x", "y", "x")):
        assert status_of(await rocketmq.send(rocketmq.message(resource, f"late {index}".encode(), tag=tag)))[0] == 0

    async def query(policy: str, time_ms: int | None = None) -> int:
        request = rocketmq.new(
            "QueryOffsetRequest",
            partition={"topic": {"name": topic}, "id": 0},
            policy=rocketmq.enum("QueryOffsetPolicy", policy),
        )
        if time_ms is not None:
            request.time_point.FromMilliseconds(time_ms)
        response = await rocketmq.call("QueryOffset", request)
        assert status_of(response)[0] == CODE_OK, status_of(response)
        return int(response.offset)

    assert (await query("BEGINNING"), await query("END"), await query("TIME_POINT", boundary_ms)) == (0, 6, 3)

    async def pull(offset: int, expression: str = "*", await_ms: int = 0) -> Any:
        request = rocketmq.new(
            "PullMessageRequest",
            group=rocketmq.resource("broadcast"),
            partition={"topic": {"name": topic}, "id": 0},
            offset=offset,
            batch_size=10,
            await_time=rocketmq.duration(await_ms),
            filter_expression={"type": rocketmq.enum("FilterType", "TAG"), "expression": expression},
            client_id=rocketmq.client_id,
        )
        response = await rocketmq.call("PullMessage", request)
        assert status_of(response)[0] == CODE_OK, status_of(response)
        return response

    pulled = await pull(3)
    assert [message.body for message in pulled.messages] == [b"late 0", b"late 1", b"late 2"]
    assert [message.system_attribute.partition_offset for message in pulled.messages] == [3, 4, 5]
    assert (pulled.min_offset, pulled.next_offset, pulled.max_offset) == (0, 6, 6)
    assert [message.body for message in (await pull(3, "x")).messages] == [b"late 0", b"late 2"]
    started = time.monotonic()
    empty = await pull(6, await_ms=400)
    assert list(empty.messages) == [] and empty.next_offset == 6 and time.monotonic() - started >= 0.35

    async def send_soon() -> None:
        await asyncio.sleep(0.3)
        await rocketmq.send(rocketmq.message(resource, b"during the wait"))

    sender = asyncio.create_task(send_soon())
    waited = await pull(6, await_ms=5_000)
    await sender
    assert [message.body for message in waited.messages] == [b"during the wait"] and waited.next_offset == 7


async def test_consume_policies_place_a_new_groups_start(rocketmq: RocketMQClient, sdk: Client) -> None:
    """RESUME and PLAYBACK start a new group at the first stored message, DISCARD after the last,
    TARGET_TIMESTAMP at the first message stored at or after initialization_timestamp (required)."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1))
    resource = rocketmq.resource(topic)
    assert status_of(await rocketmq.send(rocketmq.message(resource, b"old")))[0] == CODE_OK
    await asyncio.sleep(0.05)
    boundary_ms = int(time.time() * 1000)
    await asyncio.sleep(0.05)
    assert status_of(await rocketmq.send(rocketmq.message(resource, b"new")))[0] == CODE_OK
    for policy, expected in (("RESUME", [b"old", b"new"]), ("PLAYBACK", [b"old", b"new"]), ("DISCARD", [])):
        response = await rocketmq.receive(topic, f"start-{policy.lower()}", 0, consume_policy=policy, await_ms=300)
        assert [message.body for message in response.messages] == expected, policy
    target = await rocketmq.receive(
        topic, "start-target", 0, consume_policy="TARGET_TIMESTAMP", initialization_ms=boundary_ms, await_ms=300
    )
    assert [message.body for message in target.messages] == [b"new"]
    missing = await rocketmq.receive(topic, "start-target-2", 0, consume_policy="TARGET_TIMESTAMP")
    assert status_of(missing)[0] == CODE_INVALID_ARGUMENT and "initialization_timestamp" in status_of(missing)[1]
    assert status_of(await rocketmq.send(rocketmq.message(resource, b"newest")))[0] == CODE_OK
    discard = await rocketmq.receive(topic, "start-discard", 0, consume_policy="DISCARD", await_ms=2000)
    assert [message.body for message in discard.messages] == [b"newest"]


# -- delayed delivery across a node restart ---------------------------------------------------------


@pytest.mark.slow
async def test_a_delayed_message_arrives_no_earlier_than_its_time_after_a_node_restart(
    reference_pool: Any, tmp_path: Path
) -> None:
    """A DELAY message (4 s) is stored at once; the node holding its partition restarts in between;
    the receiving client gets it once, no earlier than its delivery time (a cluster of its own)."""
    local = start_cluster(tmp_path / "cluster", nodes=1, routers=1)
    gateway = local.start_gateway("rocketmq-restart", GATEWAY_ENV)
    rocketmq = RocketMQClient(reference_pool, gateway.rocketmq_address, "10.0.0.7@restart#1")
    try:
        async with Client(local.router_addresses) as sdk:
            topic = topic_name()
            await sdk.create_stream(stream_config(topic, replicas=1, allow_scheduled_messages=True))
            deliver_at_ms = int(time.time() * 1000) + 4_000
            message = rocketmq.message(
                rocketmq.resource(topic),
                b"after the restart",
                message_type=rocketmq.enum("MessageType", "DELAY"),
                delivery_timestamp={"seconds": deliver_at_ms // 1000, "nanos": deliver_at_ms % 1000 * 1_000_000},
            )
            assert status_of(await rocketmq.send(message)) == (CODE_OK, "")
            assert list((await rocketmq.receive(topic, "patient", 0, await_ms=300)).messages) == []
            (node,) = local.nodes
            node.restart()
            received = await receive_until(rocketmq, topic, "patient", 1, 1, timeout_s=30)
            arrived_ms = int(time.time() * 1000)
            assert [m.body for m in received] == [b"after the restart"]
            assert arrived_ms >= deliver_at_ms - 50  # the node's and this clock may differ by a little
            assert status_of(await rocketmq.settle("AckMessage", topic, "patient", received[0]))[0] == CODE_OK
            assert list((await rocketmq.receive(topic, "patient", 0, await_ms=1000)).messages) == []
    finally:
        await rocketmq.channel.close()
        gateway.stop()
        local.stop()


async def test_a_receipt_handle_settles_through_another_gateway_of_the_cluster(
    reference_pool: Any, cluster: LocalCluster, sdk: Client
) -> None:
    """Gateways the launcher starts share the cluster's receipt secret (no setting given): a message
    received through one is acknowledged through the other, as a client behind a load balancer does."""
    needs_own_processes()
    first, second = (cluster.start_gateway(f"shared-secret-{index}") for index in (1, 2))
    clients = [
        RocketMQClient(reference_pool, gateway.rocketmq_address, f"10.0.0.9@shared#{index}")
        for index, gateway in enumerate((first, second))
    ]
    try:
        topic = topic_name()
        await sdk.create_stream(stream_config(topic, replicas=1))
        assert status_of(await clients[0].send(clients[0].message(clients[0].resource(topic), b"anywhere")))[0] == 0
        (received,) = await receive_until(clients[0], topic, "shared", 1, 1)
        assert status_of(await clients[1].settle("AckMessage", topic, "shared", received)) == (CODE_OK, "")
        assert list((await clients[0].receive(topic, "shared", 0, await_ms=300)).messages) == []
    finally:
        for client in clients:
            await client.channel.close()
        first.stop()
        second.stop()


async def test_a_gateway_that_does_not_create_groups_answers_not_found_until_the_group_exists(
    cluster: LocalCluster, reference_pool: Any, sdk: Client
) -> None:
    """issue 55: with WEIR_GATEWAY_ROCKETMQ_AUTO_CREATE_GROUPS=false an unknown consumer group is
    NOT_FOUND (the v1 seed), on QueryAssignment and ReceiveMessage, and creates nothing; once the
    group's consumer exists it is served. The default creates it, as RocketMQ 5's brokers do."""
    topic = topic_name()
    await sdk.create_stream(stream_config(topic, replicas=1))
    strict = cluster.start_gateway(
        "rocketmq-strict", {**GATEWAY_ENV, "WEIR_GATEWAY_ROCKETMQ_AUTO_CREATE_GROUPS": "false"}
    )
    client = RocketMQClient(reference_pool, strict.rocketmq_address, "10.0.0.9@strict#1")
    try:
        assignment = client.new(
            "QueryAssignmentRequest",
            topic=client.resource(topic),
            group=client.resource("unknown-group"),
            endpoints=client.endpoints(),
        )
        code, message = status_of(await client.call("QueryAssignment", assignment))
        assert code == CODE_NOT_FOUND and "weir consumer create" in message, message
        assert status_of(await client.receive(topic, "unknown-group", 0))[0] == CODE_NOT_FOUND
        assert await sdk.list_consumers(topic) == []  # nothing was created
        await sdk.create_consumer(topic, consumer_config(mapping.weir_name_of("", "unknown-group", "group")))
        assert status_of(await client.call("QueryAssignment", assignment))[0] == CODE_OK
        assert status_of(await client.receive(topic, "unknown-group", 0))[0] == CODE_OK
    finally:
        await client.channel.close()
        strict.stop()
