"""The gateway's RocketMQ v2 front door (`apache.rocketmq.v2.MessagingService`), proven with a client
nobody here wrote: RocketMQ's official Python client (`rocketmq-python-client` 5.1.2, PyPI), in a
virtualenv of its own (tests/rocketmq_client_env.py), run as a subprocess against a real cluster and
gateway over the real transport. Also: the kept protos are the protocol the client was built from.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2
from weir import Client, stream_config
from weir.errors import InvalidArgumentError
from weir_cli.launcher import GatewayHandle, LocalCluster, gateway_secret
from weir_gateway.rocketmq_v1.handles import Recall, Signer, Transaction
from weir_gateway.rocketmq_v1.permissions import KNOWN_CALLER
from weir_gateway.rocketmq_v2.pb import definition_pb2, service_pb2, service_pb2_grpc
from weir_gateway.rocketmq_v2.permissions import SERVICE, RocketMQV2Permissions
from weir_server.permissions import Requirement

from tests.conftest import eventually, needs_own_processes
from tests.rocketmq_client_env import client_python

ROOT = Path(__file__).resolve().parents[1]
PROTO_NAMES = ("definition", "service", "admin")
KEPT_PREFIX = "weir_gateway/rocketmq_v2/pb/"
CLIENT_PROGRAM = ROOT / "tests" / "rocketmq_v2_client.py"
CLIENT_TIMEOUT_S = 300
DELAY_S = 4
# Orphaned transactions checked after 2 s (scans every 200 ms), so the checker is asked in test time;
# a consumer's retry backoff (the wait before a message a PushConsumer failed comes back, which the
# gateway answers in its Telemetry settings) of PUSH_BACKOFF_S, so the redelivery comes in test time.
GATEWAY_ENV = {
    "WEIR_GATEWAY_ROCKETMQ_RETRY_DELAYS_MS": "1000",  # PUSH_BACKOFF_S
    "WEIR_GATEWAY_ROCKETMQ_ORPHAN_SCAN_INTERVAL_MS": "200",
    "WEIR_GATEWAY_ROCKETMQ_ORPHANED_TRANSACTION_RECOVERY_PERIOD_MS": "2000",
    "WEIR_GATEWAY_ROCKETMQ_MULTIPLEXING_POLL_TIMEOUT_MS": "1500",
}


@pytest.fixture(scope="module")
def rocketmq_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return client_python(tmp_path_factory.mktemp("rocketmq-client"))


def client_descriptors(python: Path) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    """The FileDescriptorProtos the client's rocketmq/grpc_protocol/*_pb2.py were generated with."""
    program = (
        "import importlib, json\n"
        f"names = {list(PROTO_NAMES)!r}\n"
        "print(json.dumps({n: importlib.import_module(f'rocketmq.grpc_protocol.{n}_pb2')"
        ".DESCRIPTOR.serialized_pb.hex() for n in names}))\n"
    )
    completed = subprocess.run([str(python), "-c", program], capture_output=True, text=True, timeout=60, check=True)
    return {
        name: descriptor_pb2.FileDescriptorProto.FromString(bytes.fromhex(text))
        for name, text in json.loads(completed.stdout).items()
    }


def kept_descriptor(name: str) -> descriptor_pb2.FileDescriptorProto:
    """The gateway's generated descriptor of the kept `name`.proto, with the one import path that
    differs put back to the client's (its files sit next to each other: "definition.proto")."""
    from weir_gateway.rocketmq_v2.pb import admin_pb2, definition_pb2, service_pb2

    module = {"definition": definition_pb2, "service": service_pb2, "admin": admin_pb2}[name]
    file = descriptor_pb2.FileDescriptorProto.FromString(module.DESCRIPTOR.serialized_pb)
    file.name = file.name.removeprefix(KEPT_PREFIX)
    file.dependency[:] = [dependency.removeprefix(KEPT_PREFIX) for dependency in file.dependency]
    return file


def test_the_kept_protos_are_the_protocol_the_official_client_speaks(rocketmq_python: Path) -> None:
    """Every message, field (number, type, label, oneof), enum value, service method and option of
    the kept v2 protos equals the client's, byte for byte once serialized; only the file paths differ."""
    theirs = client_descriptors(rocketmq_python)
    for name in PROTO_NAMES:
        ours = kept_descriptor(name)
        assert ours.SerializeToString(deterministic=True) == theirs[name].SerializeToString(deterministic=True), name
        assert ours.package == "apache.rocketmq.v2"


# sha256 of apache/rocketmq-apis' apache/rocketmq/v2/<name>.proto at commit 68c2cc9 (2026-01-27)
PUBLISHED_SHA256 = {
    "admin": "90eebffaa6be4050b6677257f68ddba962592fc0245ee4ecb3b098a44e82e7d8",
    "definition": "9c475e2c942be715c0997925a6816264f004f443ff0cd74f7d00bb398ebdcd66",
    "service": "414f26ecb211ee2e817ed4dda39dd7aadc100789b93cb89b58ed6c45dc5f74ec",
}
HEADER_END = "// END WEIR HEADER\n"


def test_the_kept_protos_are_the_published_files() -> None:
    """Each kept .proto, with its WEIR header and the one changed import undone, is byte for byte the
    file apache/rocketmq-apis published (its sha256 recorded above)."""
    kept = ROOT / "proto" / "gateway" / "weir_gateway" / "rocketmq_v2" / "pb"
    for name in PROTO_NAMES:
        text = (kept / f"{name}.proto").read_text()
        assert HEADER_END in text, name
        published = text.split(HEADER_END, 1)[1].replace(
            'import "weir_gateway/rocketmq_v2/pb/definition.proto";', 'import "apache/rocketmq/v2/definition.proto";'
        )
        assert hashlib.sha256(published.encode()).hexdigest() == PUBLISHED_SHA256[name], name


def test_each_v2_call_needs_the_grant_on_the_topic_it_acts_on() -> None:
    """With an auth file the RocketMQ port checks v2 calls too (rocketmq_v2.permissions)."""
    signer = Signer(b"v2-permissions-test-secret-0123")
    table = RocketMQV2Permissions(signer)
    topic = definition_pb2.Resource(resource_namespace="ns", name="orders")
    send = service_pb2.SendMessageRequest(messages=[definition_pb2.Message(topic=topic, body=b"x")])
    assert table.requirement(f"/{SERVICE}/SendMessage", send) == Requirement("publish", "ns::orders", ("ns::orders",))
    group = definition_pb2.Resource(resource_namespace="ns", name="g")
    for method, request in (
        ("AckMessage", service_pb2.AckMessageRequest(group=group, topic=topic)),
        ("ChangeInvisibleDuration", service_pb2.ChangeInvisibleDurationRequest(group=group, topic=topic)),
        ("ReceiveMessage", service_pb2.ReceiveMessageRequest(message_queue=definition_pb2.MessageQueue(topic=topic))),
    ):
        assert table.requirement(f"/{SERVICE}/{method}", request) == Requirement("consume", "ns::orders"), method
    transaction_id = signer.transaction_id(Transaction("ns::orders", 0, 7, "m-1"))
    end = service_pb2.EndTransactionRequest(transaction_id=transaction_id)
    assert table.requirement(f"/{SERVICE}/EndTransaction", end) == Requirement("publish", "ns::orders", ("ns::orders",))
    recall = service_pb2.RecallMessageRequest(topic=topic, recall_handle="not-even-a-handle")
    publish = Requirement("publish", "ns::orders", ("ns::orders",))
    assert table.requirement(f"/{SERVICE}/RecallMessage", recall) == publish
    assert table.requirement(f"/{SERVICE}/QueryRoute", service_pb2.QueryRouteRequest()) == KNOWN_CALLER
    assert table.requirement(f"/{SERVICE}/SendMessage", service_pb2.SendMessageRequest()) == KNOWN_CALLER
    assert table.requirement("/apache.rocketmq.v1.MessagingService/SendMessage", send) is None


def token_fields(token: str) -> tuple[list[Any], str]:
    """A signed token's payload fields, read without verifying (as anyone holding it can), and its MAC."""
    payload, mac = token.split(".")
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))), mac


def unpadded(fields: list[Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(fields, separators=(",", ":")).encode()).rstrip(b"=").decode()


def test_a_recall_handle_verifies_only_as_itself() -> None:
    """A recall handle names its DELAY message's schedule record; one of another secret, a tampered
    one, a transaction id of the same record or a receipt handle is refused (InvalidArgumentError,
    which the door answers BAD_REQUEST)."""
    signer, other = Signer(b"0123456789abcdef"), Signer(b"fedcba9876543210")
    recall = Recall("ns::orders", 1, 42, "MSG-1")
    handle = signer.recall_handle(recall)
    assert signer.recall(handle) == recall
    fields, mac = token_fields(handle)
    for bad in (
        other.recall_handle(recall),
        f"{unpadded([*fields[:3], 43, fields[4]])}.{mac}",
        handle[:-2],
        signer.transaction_id(Transaction("ns::orders", 1, 42, "MSG-1")),
        "",
    ):
        with pytest.raises(InvalidArgumentError):
            signer.recall(bad)
    with pytest.raises(InvalidArgumentError):
        signer.transaction(handle)


# -- the official client against a real cluster and gateway ------------------------------------------


@pytest.fixture(scope="module")
def gateway(cluster: LocalCluster) -> Iterator[GatewayHandle]:
    needs_own_processes()
    handle = cluster.start_gateway("rocketmq-v2-gateway", GATEWAY_ENV)
    yield handle
    handle.stop()


def run_client(python: Path, plan: dict[str, Any], home: Path) -> dict[str, Any]:
    """Run tests/rocketmq_v2_client.py in the client's env (its log files under `home`)."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "PYTHON"))}
    completed = subprocess.run(
        [str(python), str(CLIENT_PROGRAM), json.dumps(plan)],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
        env={**environ, "HOME": str(home)},
    )
    logs = "\n".join(path.read_text()[-6000:] for path in home.glob("logs/rocketmq_python/*.log"))
    assert completed.returncode == 0, f"{completed.stderr[-6000:]}\n--- client log ---\n{logs}"
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


async def test_the_official_client_produces_and_consumes_every_message_type(
    rocketmq_python: Path, gateway: GatewayHandle, cluster: LocalCluster, tmp_path: Path
) -> None:
    """rocketmq-python-client 5.1.2's Producer sends NORMAL, FIFO, DELAY and TRANSACTION messages
    (one committed, one rolled back, one left open for its transaction checker, which the gateway
    asks over Telemetry and which commits it); its SimpleConsumer receives them, acks, changes an
    invisible duration and sees an unacknowledged message redelivered as delivery attempt 2."""
    suffix = uuid.uuid4().hex[:8]
    topics = {kind: f"rmq2-{kind}-{suffix}" for kind in ("normal", "fifo", "delay", "transaction")}
    async with Client(cluster.router_addresses) as sdk:
        for topic in topics.values():
            await sdk.create_stream(stream_config(topic, partitions=2, replicas=1, allow_scheduled_messages=True))
    plan = {"endpoints": gateway.rocketmq_address, "topics": topics, "delay_s": DELAY_S}
    report = run_client(rocketmq_python, plan, tmp_path)
    sent = report["sent"]

    normal = report["normal"]
    assert sorted(entry["body"] for entry in normal["first"]) == ["normal-0", "normal-1", "normal-2"]
    assert {entry["message_id"] for entry in normal["first"]} == set(sent["normal"])
    first = {entry["body"]: entry for entry in normal["first"]}
    assert first["normal-1"]["tag"] == "TagA" and first["normal-1"]["keys"] == ["k1"]
    assert first["normal-1"]["properties"] == {"n": "1"} and first["normal-1"]["delivery_attempt"] == 1
    # Acked (0) and made invisible for 60 s (1): only the unacknowledged 2 comes back, as attempt 2.
    assert [(entry["body"], entry["delivery_attempt"]) for entry in normal["redelivered"]] == [("normal-2", 2)]
    assert normal["after"] == []

    fifo = report["fifo"]
    assert [entry["body"] for entry in fifo] == [f"fifo-{index}" for index in range(5)]
    assert {entry["message_group"] for entry in fifo} == {"order-1"}
    assert report["fifo_after"] == []

    (delayed,) = report["delay"]
    assert delayed["message_id"] == sent["delay"]
    assert delayed["delivery_timestamp_ms"] == sent["delay_deliver_at_ms"]
    assert delayed["received_at_ms"] >= sent["delay_deliver_at_ms"] - 50  # clocks may differ a little

    assert sent["checked"] in sent["checker_asked"]
    assert sent["committed"] not in sent["checker_asked"]
    received = {entry["body"]: entry["message_id"] for entry in report["transaction"]}
    assert received == {"committed": sent["committed"], "checked": sent["checked"]}
    assert report["transaction_after"] == []


PUSH_COUNT = 8
PUSH_FAILED = "push-3"
PUSH_BACKOFF_S = 1.0  # GATEWAY_ENV's retry delay


async def test_the_official_push_consumer_consumes_every_message_and_gets_a_failed_one_again(
    rocketmq_python: Path, gateway: GatewayHandle, cluster: LocalCluster, tmp_path: Path
) -> None:
    """rocketmq-python-client 5.1.2's Producer sends PUSH_COUNT NORMAL messages; a PushConsumer (its
    assignments from QueryAssignment, long-polling receives, a MessageListener on its own threads)
    consumes them. The listener fails PUSH_FAILED once: the client changes its invisible duration to
    the backoff the gateway answered in Telemetry (1 s here), and it comes back as delivery attempt 2.
    Every other message is seen once, as attempt 1, and acked (nothing comes again while watched)."""
    topic = f"rmq2-push-{uuid.uuid4().hex[:8]}"
    async with Client(cluster.router_addresses) as sdk:
        await sdk.create_stream(stream_config(topic, partitions=2, replicas=1))
    plan = {"mode": "push", "endpoints": gateway.rocketmq_address, "topic": topic, "count": PUSH_COUNT}
    report = run_client(rocketmq_python, {**plan, "fail": PUSH_FAILED}, tmp_path)

    seen = [(entry["body"], entry["delivery_attempt"]) for entry in report["seen"]]
    expected = [(f"push-{index}", 1) for index in range(PUSH_COUNT)] + [(PUSH_FAILED, 2)]
    assert sorted(seen) == sorted(expected), seen
    first, again = (report["seen"][seen.index((PUSH_FAILED, attempt))] for attempt in (1, 2))
    assert again["at_s"] - first["at_s"] >= PUSH_BACKOFF_S - 0.1  # it waited the backoff the gateway answered
    assert {entry["id"] for entry in report["seen"]} == set(report["sent"])


RECALL_DELAY_S = 5


async def test_the_official_producer_recalls_a_delay_message_before_its_time(
    rocketmq_python: Path, gateway: GatewayHandle, cluster: LocalCluster, tmp_path: Path
) -> None:
    """rocketmq-python-client 5.1.2's Producer sends a NORMAL and two DELAY messages due
    RECALL_DELAY_S from now and recalls one with `recall_message`: only the DELAY messages' receipts
    carry a recall handle, the recall answers the recalled message's id, a second recall of the same
    handle is NOT_FOUND (the client's NotFoundException), and a SimpleConsumer gets the other DELAY
    message at its time and never the recalled one, whose schedule record is gone."""
    topic = f"rmq2-recall-{uuid.uuid4().hex[:8]}"
    async with Client(cluster.router_addresses) as sdk:
        await sdk.create_stream(stream_config(topic, partitions=2, replicas=1, allow_scheduled_messages=True))
        plan = {"mode": "recall", "endpoints": gateway.rocketmq_address, "topic": topic, "delay_s": RECALL_DELAY_S}
        report = run_client(rocketmq_python, plan, tmp_path)
        left = [(await sdk.list_scheduled(topic, partition)).messages for partition in range(2)]

    ids, handles = report["ids"], report["handles"]
    assert handles["normal"] is None and handles["kept"] and handles["recalled"]
    assert report["recalled_at_ms"] < report["deliver_at_ms"]  # the recalls came before the time
    assert report["first_recall"] == {"message_id": ids["recalled"]}
    second = report["second_recall"]
    assert second.get("error") == "NotFoundException", second
    assert second["text"].startswith(f"{definition_pb2.NOT_FOUND},"), second
    assert sorted(entry["body"] for entry in report["received"]) == ["kept", "normal"]
    kept = next(entry for entry in report["received"] if entry["body"] == "kept")
    assert kept["message_id"] == ids["kept"]
    assert kept["received_at_ms"] >= report["deliver_at_ms"] - 50  # clocks may differ a little
    assert left == [(), ()]  # "kept" delivered, "recalled" discarded: no schedule record remains


def v2_message(topic: str, body: bytes, message_id: str, deliver_at_ms: int | None = None) -> definition_pb2.Message:
    """A v2 Message as a client sends it: DELAY with a delivery timestamp, else NORMAL."""
    system = definition_pb2.SystemProperties(message_id=message_id, message_type=definition_pb2.NORMAL)
    if deliver_at_ms is not None:
        system.message_type = definition_pb2.DELAY
        system.delivery_timestamp.FromMilliseconds(deliver_at_ms)
    return definition_pb2.Message(topic=definition_pb2.Resource(name=topic), system_properties=system, body=body)


async def send_one(stub: service_pb2_grpc.MessagingServiceStub, message: definition_pb2.Message) -> str:
    """SendMessage of one message; its entry's recall handle ("" when none)."""
    response = await stub.SendMessage(service_pb2.SendMessageRequest(messages=[message]))
    assert response.status.code == definition_pb2.OK, response
    return str(response.entries[0].recall_handle)


async def recall_code(stub: service_pb2_grpc.MessagingServiceStub, topic: str, handle: str) -> tuple[int, str]:
    request = service_pb2.RecallMessageRequest(topic=definition_pb2.Resource(name=topic), recall_handle=handle)
    response = await stub.RecallMessage(request)
    return response.status.code, response.message_id


async def test_a_forged_or_foreign_recall_handle_changes_nothing(gateway: GatewayHandle, cluster: LocalCluster) -> None:
    """Over the v2 door itself: a DELAY message's recall handle tampered with, signed with another
    secret, turned into a transaction id of the same record, or another topic's handle is BAD_REQUEST,
    and the message stays scheduled and is delivered at its time; a recall after that is NOT_FOUND.
    The other topic's own handle recalls its message (OK, its message id); a NORMAL message has none."""
    suffix = uuid.uuid4().hex[:8]
    topic, other = f"rmq2-forged-{suffix}", f"rmq2-foreign-{suffix}"
    async with Client(cluster.router_addresses) as sdk, grpc.aio.insecure_channel(gateway.rocketmq_address) as channel:
        for name in (topic, other):
            await sdk.create_stream(stream_config(name, partitions=1, replicas=1, allow_scheduled_messages=True))
        stub = service_pb2_grpc.MessagingServiceStub(channel)
        deliver_at_ms = int(time.time() * 1000) + DELAY_S * 1000
        handle = await send_one(stub, v2_message(topic, b"delayed", f"forged-{suffix}", deliver_at_ms))
        foreign = await send_one(stub, v2_message(other, b"foreign", f"foreign-{suffix}", deliver_at_ms))
        assert await send_one(stub, v2_message(topic, b"normal", f"normal-{suffix}")) == ""
        assert handle and foreign

        (kind, stream, partition, seq, message_id), mac = token_fields(handle)
        secret = gateway_secret(cluster.data_dir).encode()
        forgeries = (
            f"{unpadded([kind, stream, partition, seq, f'{message_id}-x'])}.{mac}",
            Signer(b"not-the-cluster-secret").recall_handle(Recall(stream, partition, seq, message_id)),
            Signer(secret).transaction_id(Transaction(stream, partition, seq, message_id)),
            foreign,
            "",
        )
        for forged in forgeries:
            assert await recall_code(stub, topic, forged) == (definition_pb2.BAD_REQUEST, ""), forged
        (record,) = (await sdk.list_scheduled(topic, 0)).messages
        assert (record.seq, record.msg_id) == (seq, message_id)  # still scheduled, as it was

        assert await recall_code(stub, other, foreign) == (definition_pb2.OK, f"foreign-{suffix}")
        assert await recall_code(stub, other, foreign) == (definition_pb2.NOT_FOUND, "")
        assert (await sdk.list_scheduled(other, 0)).messages == ()

        async def delivered() -> list[str]:
            page = await sdk.on_leader(topic, 0, lambda node: node.read_messages(topic, 0, 1, max_messages=100))
            return [message.msg_id for message in page.messages if message.subject == topic]

        async def came() -> bool:
            return message_id in await delivered()

        await eventually(came, DELAY_S + 30, "the DELAY message delivered at its time")
        assert sorted(await delivered()) == sorted([message_id, f"normal-{suffix}"])
        assert int(time.time() * 1000) >= deliver_at_ms - 50
        assert await recall_code(stub, topic, handle) == (definition_pb2.NOT_FOUND, "")  # delivered already
