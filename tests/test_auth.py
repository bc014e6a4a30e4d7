"""Who may do what (issue 23): the auth file, bearer tokens, the services' token, and per-stream and
per-subject permissions on the routers' and nodes' client ports. Pure parts unit-tested; the rest
through a real local cluster with TLS and an auth file, real clients with tokens, a gateway acting
with the service token, and the `weir` CLI."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from weir import (
    Client,
    InvalidArgumentError,
    NoSuchStreamError,
    PermissionDeniedError,
    RateLimitedError,
    TlsHandshakeError,
    UnauthenticatedError,
    consumer_config,
    stream_config,
)
from weir import tls as weir_tls
from weir.client import NodeClient
from weir.tls import ChannelSecurity
from weir.v1 import (
    collections_pb2,
    kv_pb2,
    kv_pb2_grpc,
    objects_pb2,
    objects_pb2_grpc,
    router_pb2,
    streams_pb2,
    streams_pb2_grpc,
    types_pb2,
)
from weir_cli.launcher import LocalCluster
from weir_cli.process_basics import LaunchError
from weir_server import devcerts as weir_devcerts
from weir_server import permissions
from weir_server.auth import ANY, Authenticator, AuthFileError, Principal, parse_auth_file, token_hash

from tests.conftest import CLUSTER_NODE_ENV, CLUSTER_REPLICATOR_ENV, CLUSTER_ROUTER_ENV, needs_own_processes

HASH = "a" * 64
PRODUCER, WORKER, ADMIN, DASHBOARD = "producer-token-1", "worker-token-2", "admin-token-3", "dashboard-token-4"
LIMITED = "limited-token-5"
LIMITED_RATE = {"requests_per_second": 20, "request_burst": 5}
PAYER = "payer-token-6"
SCRAPER = "scraper-token-7"  # a Prometheus: the metrics grant only
PAYER_KEYS = {"access_key": "payer-ak", "secret_key": "payer-sk"}


def users(*, producer: bool = True, worker: bool = True) -> dict[str, Any]:
    entries: list[dict[str, Any]] = [
        {
            "name": "worker",
            "token_sha256": token_hash(WORKER),
            "allow": [{"actions": ["consume", "read"], "streams": ["orders"]}],
        },
        {"name": "ops", "token_sha256": token_hash(ADMIN), "allow": [{"actions": ["admin", "read"], "streams": ["*"]}]},
        {
            "name": "dashboard",
            "token_sha256": token_hash(DASHBOARD),
            "allow": [{"actions": ["read"], "streams": ["ord*"]}],
        },
    ]
    entries.append(
        {
            "name": "payer",
            "token_sha256": token_hash(PAYER),
            "allow": [
                {"actions": ["publish", "consume", "read"], "streams": ["payments"]},
                {"actions": ["publish", "read"], "streams": ["kv:wallets"], "subjects": ["balance.>"]},
                {"actions": ["publish", "read"], "streams": ["obj:media"]},
            ],
            "rocketmq": PAYER_KEYS,
        }
    )
    entries.append(
        {
            "name": "limited",
            "token_sha256": token_hash(LIMITED),
            "allow": [{"actions": ["read", "publish"], "streams": ["orders"]}],
            **LIMITED_RATE,
        }
    )
    entries.append(
        {"name": "scraper", "token_sha256": token_hash(SCRAPER), "allow": [{"actions": ["metrics"], "streams": ["*"]}]}
    )
    if producer:
        grant = {"actions": ["publish"], "streams": ["orders"], "subjects": ["orders.>"]}
        entries.append({"name": "producer", "token_sha256": token_hash(PRODUCER), "allow": [grant]})
    if not worker:
        entries = [entry for entry in entries if entry["name"] != "worker"]
    return {"users": entries}


# --- the auth file and the permission table (pure) ---


@pytest.mark.parametrize(
    ("document", "complaint"),
    [
        ("{", "not JSON"),
        ('{"people": []}', '{"users": [...]}'),
        ('{"users": [{"token_sha256": "' + HASH + '"}]}', "users[0]: a user needs a name"),
        ('{"users": [{"name": "x"}]}', "users[0].token_sha256: expected 64 hex digits"),
        ('{"users": [{"name": "x", "token_sha256": "abc"}]}', "expected 64 hex digits"),
        (
            '{"users": [{"name": "x", "token_sha256": "'
            + HASH
            + '", "allow": [{"actions": ["write"], "streams": ["s"]}]}]}',
            "users[0].allow[0].actions: unknown ['write']",
        ),
        (
            '{"users": [{"name": "x", "token_sha256": "' + HASH + '", "allow": [{"actions": ["read"]}]}]}',
            "users[0].allow[0].streams: expected a list",
        ),
        (
            '{"users": [{"name": "x", "token_sha256": "' + HASH + '"}, {"name": "y", "token_sha256": "' + HASH + '"}]}',
            "users[1]: the same token_sha256 as user 'x'",
        ),
        (
            '{"users": [{"name": "x", "token_sha256": "'
            + HASH
            + '", "allow": [{"actions": ["read", "metrics"], "streams": ["orders"]}]}]}',
            "users[0].allow[0].streams: a metrics grant covers every stream: give it",
        ),
    ],
)
def test_a_bad_auth_file_is_refused_saying_where(document: str, complaint: str) -> None:
    with pytest.raises(AuthFileError, match=complaint.replace("[", r"\[").replace("]", r"\]")):
        parse_auth_file(document)


def principal(name: str) -> Principal:
    user = next(user for user in parse_auth_file(json.dumps(users())) if user.name == name)
    return Principal(user.name, user.grants)


def test_grants_cover_streams_by_glob_and_publishes_by_subject_pattern() -> None:
    producer, worker, dashboard = principal("producer"), principal("worker"), principal("dashboard")
    assert producer.may("publish", "orders", ["orders.new", "orders.eu.paid"])
    assert not producer.may("publish", "orders", ["orders.new", "billing.x"])  # every subject must be covered
    assert not producer.may("publish", "orders-archive", ["orders.new"])
    assert not producer.may("read", "orders")
    assert worker.may("consume", "orders") and not worker.may("admin", "orders")
    assert dashboard.may("read", "orders-archive") and not dashboard.may("read", "billing")
    assert producer.may("cluster")  # listing streams: any known caller
    assert producer.may(ANY, "orders") and not producer.may(ANY, "payments")  # a route: some grant on it
    assert Principal("weir-service", service=True).may("admin", "anything")
    scraper = principal("scraper")  # the metrics grant: /metrics, and no stream at all
    assert scraper.may_read_metrics() and not principal("ops").may_read_metrics()
    assert not scraper.may(ANY, "orders") and not scraper.may("read", "orders")
    assert Principal("weir-service", service=True).may_read_metrics()


def test_every_call_of_the_public_api_needs_a_named_permission() -> None:
    publish = streams_pb2.PublishBatchRequest(stream="orders")
    publish.entries.add(subject="orders.a")
    publish.entries.add(subject="orders.b")
    publish.entries.add(subject="orders.a")
    assert permissions.requirement("/weir.v1.Streams/PublishBatchStream", publish) == permissions.Requirement(
        "publish", "orders", ("orders.a", "orders.b")
    )
    create = streams_pb2.CreateStreamRequest(config=types_pb2.StreamConfig(name="orders"))
    assert permissions.requirement("/weir.v1.Router/CreateStream", create) == permissions.Requirement("admin", "orders")
    assignment = router_pb2.QueryAssignmentRequest(stream="orders", group="g")
    assert permissions.requirement("/weir.v1.Router/QueryAssignment", assignment) == permissions.Requirement(
        "consume", "orders"
    )
    assert permissions.requirement("/weir.v1.Replication/ReplicateMessage", object()) is None  # services only
    put = kv_pb2.KvPutRequest(bucket="wallets", key="balance.alice")
    assert permissions.requirement("/weir.v1.KeyValue/Put", put) == permissions.Requirement(
        "publish", "kv:wallets", ("balance.alice",)
    )
    watch = kv_pb2.KvWatchRequest(bucket="wallets")
    assert permissions.requirement("/weir.v1.KeyValue/Watch", watch) == permissions.Requirement("read", "kv:wallets")
    pop = collections_pb2.QueuePopRequest(bucket="jobs")
    assert permissions.requirement("/weir.v1.Collections/QueuePop", pop) == permissions.Requirement(
        "consume", "queue:jobs"
    )
    stream_put = objects_pb2.PutObjectStreamFrame(start=objects_pb2.PutObjectStart(bucket="media"))
    assert permissions.requirement("/weir.v1.ObjectStore/PutObjectStream", stream_put) == permissions.Requirement(
        "publish", "obj:media"
    )
    create_store = collections_pb2.CreateHashStoreRequest(name="users")
    assert permissions.requirement("/weir.v1.Collections/CreateHashStore", create_store) == permissions.Requirement(
        "admin", "hash:users"
    )
    services = (
        ("Streams", streams_pb2),
        ("Router", router_pb2),
        ("KeyValue", kv_pb2),
        ("Collections", collections_pb2),
        ("ObjectStore", objects_pb2),
    )
    for service, file in services:
        for method in file.DESCRIPTOR.services_by_name[service].methods:
            assert permissions.known(f"/weir.v1.{service}/{method.name}"), method.name


def test_the_auth_file_is_read_again_when_it_changes_and_a_broken_one_keeps_the_users(tmp_path: Path) -> None:
    path, service_token = tmp_path / "auth.json", tmp_path / "service.token"
    path.write_text(json.dumps(users()))
    service_token.write_text("services-secret\n")
    authenticator = Authenticator(path, service_token)
    authenticator.RELOAD_INTERVAL_S = 0.0
    assert authenticator.authenticate(PRODUCER) == principal("producer")
    assert authenticator.authenticate("services-secret") == Principal("weir-services", service=True)
    assert authenticator.authenticate("guess") is None
    assert authenticator.authenticate("") is None
    path.write_text(json.dumps(users(producer=False)))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    authenticator.refresh()
    assert authenticator.authenticate(PRODUCER) is None
    path.write_text("{not json")
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 2 * 10**9))
    authenticator.refresh()  # logged, not raised
    assert authenticator.authenticate(WORKER) == principal("worker")
    service_token.write_text("rotated\n")
    os.utime(service_token, ns=(time.time_ns(), time.time_ns() + 3 * 10**9))
    authenticator.refresh()  # the broken auth file still keeps what was read, and blocks the reload
    assert authenticator.authenticate("rotated") is None
    path.write_text(json.dumps(users()))
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 4 * 10**9))
    authenticator.refresh()
    assert authenticator.authenticate("rotated") == Principal("weir-services", service=True)
    assert authenticator.authenticate("services-secret") is None


def test_a_rocketmq_signature_is_parsed_as_its_clients_send_it_and_checked() -> None:
    """RocketMQ's MQv2-HMAC-SHA1 header (weir_gateway.rocketmq_v1.signature): the access key (a
    scope after `/` dropped), the signature of x-mq-date-time, the clock skew bound."""
    from weir_gateway.rocketmq_v1 import signature

    date_time = "20261127T021500Z"
    signed_value = signature.sign("sk", date_time).upper()  # some clients send upper-case hex
    header = f"MQv2-HMAC-SHA1 Credential=ak//Rocketmq, SignedHeaders=x-mq-date-time, Signature={signed_value}"
    call = signature.signed_call({"authorization": header, "x-mq-date-time": date_time})
    assert call is not None and call.access_key == "ak"
    signed_at = 1_795_745_700.0  # 2026-11-27T02:15:00Z
    assert signature.problem(call, "sk", signed_at + 60) == ""
    assert "does not verify" in signature.problem(call, "other", signed_at)
    assert "more than 15 minutes" in signature.problem(call, "sk", signed_at + 16 * 60)
    assert signature.signed_call({"authorization": "Bearer x"}) is None
    assert signature.signed_call({}) is None
    undated = signature.signed_call({"authorization": header})
    assert undated is not None and "is not a time" in signature.problem(undated, "sk", signed_at)


# --- through a real cluster ---


@pytest.fixture(scope="module")
def auth_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("auth") / "auth.json"
    path.write_text(json.dumps(users()))
    return path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, auth_file: Path) -> Iterator[LocalCluster]:
    needs_own_processes()
    local = LocalCluster.start(
        tmp_path_factory.mktemp("auth-cluster"),
        nodes=2,
        routers=1,
        replicators=1,
        node_env=CLUSTER_NODE_ENV,
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env=CLUSTER_REPLICATOR_ENV,
        tls=True,
        auth_file=auth_file,
    )
    yield local
    local.stop()


def as_user(cluster: LocalCluster, token: str = "") -> ChannelSecurity:
    """The cluster CA, no client certificate, and `token`."""
    assert cluster.tls_dir is not None
    return ChannelSecurity(ca_file=cluster.tls_dir / "ca.pem", token=token)


def client(cluster: LocalCluster, token: str = "") -> Client:
    return Client(cluster.router_addresses, tls=as_user(cluster, token), timeout_s=5, retry_timeout_s=5)


@pytest.fixture(scope="module")
async def orders(cluster: LocalCluster) -> str:
    async with client(cluster, ADMIN) as ops:
        await ops.create_stream(stream_config("orders", partitions=1, replicas=2, subjects=["orders.>", "billing.>"]))
        await ops.create_stream(stream_config("payments", partitions=1, replicas=2))
        await ops.create_consumer("orders", consumer_config("shipping"))
    return "orders"


async def message_count(cluster: LocalCluster, stream: str) -> int:
    async with client(cluster, ADMIN) as ops:
        info = await ops.stream_info(stream)
    return sum(partition.msg_count for partition in info.partitions)


async def test_unknown_callers_are_unauthenticated(cluster: LocalCluster, orders: str) -> None:
    for anonymous in (client(cluster), client(cluster, "not-a-known-token")):
        async with anonymous:
            with pytest.raises(UnauthenticatedError, match="the caller is not known"):
                await anonymous.list_streams()
            with pytest.raises(UnauthenticatedError):
                await anonymous.publish(orders, "orders.new", b"x")
    node = cluster.nodes[0]
    async with NodeClient(node.client_address, tls=as_user(cluster), timeout_s=5) as direct:
        with pytest.raises(UnauthenticatedError):
            await direct.publish(orders, "orders.new", b"x")
    assert await message_count(cluster, orders) == 0


async def test_a_producer_publishes_only_its_subjects_on_its_streams(cluster: LocalCluster, orders: str) -> None:
    before = await message_count(cluster, orders)
    async with client(cluster, PRODUCER) as producer:
        assert await producer.list_streams() == ["orders", "payments"]
        await producer.publish(orders, "orders.new", b"kept")
        with pytest.raises(PermissionDeniedError, match=r"user 'producer' may not publish on stream 'orders' with sub"):
            await producer.publish(orders, "billing.refund", b"refused")
        with pytest.raises(PermissionDeniedError, match=r"user 'producer' may not use stream 'payments' \(no grant"):
            await producer.publish("payments", "any", b"refused")
        with pytest.raises(PermissionDeniedError, match="admin on stream 'fresh'"):
            await producer.create_stream(stream_config("fresh"))
        with pytest.raises(PermissionDeniedError, match="read on stream 'orders'"):
            await producer.stream_info(orders)
        route = await producer.route(orders)
    entries = [streams_pb2.PublishEntry(subject=subject, payload=b"b") for subject in ("orders.a", "billing.b")]
    address = route.partitions[0].primary.address
    async with NodeClient(address, tls=as_user(cluster, PRODUCER), timeout_s=5) as direct:
        with pytest.raises(PermissionDeniedError, match=r"'orders\.a', 'billing\.b'"):
            await direct.publish_batch(orders, entries)  # one subject not covered: none is stored
        results = await direct.publish_batch(orders, entries[:1])
        assert len(results) == 1
    assert await message_count(cluster, orders) == before + 2
    async with client(cluster, ADMIN) as ops:
        assert "fresh" not in await ops.list_streams()
        assert (await ops.stream_info("payments")).partitions[0].msg_count == 0


async def test_a_worker_consumes_but_cannot_publish_or_administer(cluster: LocalCluster, orders: str) -> None:
    async with client(cluster, PRODUCER) as producer:
        await producer.publish(orders, "orders.work", b"job")
    async with client(cluster, WORKER) as worker:
        fetched = await worker.fetch(orders, "shipping", 0, batch_size=100, max_wait_ms=1000)
        assert b"job" in [message.payload for message in fetched]
        await worker.ack_batch(orders, "shipping", 0, [message.seq for message in fetched])
        assert (await worker.consumer_info(orders, "shipping")).num_ack_pending == 0
        with pytest.raises(PermissionDeniedError, match="user 'worker' may not publish"):
            await worker.publish(orders, "orders.new", b"x")
        with pytest.raises(PermissionDeniedError, match="admin on stream 'orders'"):
            await worker.delete_consumer(orders, "shipping")
        with pytest.raises(PermissionDeniedError, match="user 'worker' may not use stream 'payments'"):
            await worker.fetch("payments", "shipping", 0, batch_size=1)  # no grant names it: not even its route
    async with client(cluster, ADMIN) as ops:
        assert [info.config.name for info in await ops.list_consumers(orders)] == ["shipping"]


async def test_a_stream_the_caller_may_not_touch_is_refused_as_such_whether_or_not_it_exists(
    cluster: LocalCluster, orders: str
) -> None:
    """A publish to a stream no grant of the user names: permission_denied, the same for a stream
    that exists and one that does not (the answer does not tell which)."""
    async with client(cluster, PRODUCER) as producer:
        for stream in ("payments", "no-such-stream"):
            with pytest.raises(PermissionDeniedError, match=f"user 'producer' may not use stream '{stream}'"):
                await producer.publish(stream, "orders.new", b"x")
    async with client(cluster, ADMIN) as ops:
        with pytest.raises(NoSuchStreamError):  # a user with a grant on it learns it does not exist
            await ops.route("no-such-stream")


async def test_a_reader_reads_only_the_streams_its_glob_covers(cluster: LocalCluster, orders: str) -> None:
    async with client(cluster, DASHBOARD) as dashboard:
        assert (await dashboard.stream_info(orders)).config.name == orders
        with pytest.raises(PermissionDeniedError, match="user 'dashboard' may not read on stream 'payments'"):
            await dashboard.stream_info("payments")
        with pytest.raises(PermissionDeniedError, match="dashboard"):
            await dashboard.publish(orders, "orders.new", b"x")


async def test_a_user_past_its_request_rate_is_told_when_to_retry(cluster: LocalCluster, orders: str) -> None:
    """A user with requests_per_second 20 and burst 5 (per process): its sixth call at once is
    RESOURCE_EXHAUSTED with google.rpc.RetryInfo, does nothing, and other users are not slowed; the
    SDK waits as told and gets every call through."""
    route = await admin_route(cluster, orders)
    security = as_user(cluster, LIMITED)
    async with NodeClient(route, tls=security, timeout_s=5) as direct:
        # All eight at once, so what the bucket refills meanwhile does not hang on how slow a publish is.
        started = time.monotonic()
        outcomes = await asyncio.gather(
            *(direct.publish(orders, "orders.rated", b"x") for _ in range(8)), return_exceptions=True
        )
        elapsed_s = time.monotonic() - started
    refused = [outcome for outcome in outcomes if isinstance(outcome, RateLimitedError)]
    assert len(refused) + sum(1 for outcome in outcomes if not isinstance(outcome, BaseException)) == 8
    assert refused, "eight publishes at once against a burst of 5 all went through"
    assert 8 - len(refused) <= 5 + int(20 * elapsed_s) + 1  # the burst and at most what refilled meanwhile
    assert refused[0].metadata["identity"] == "limited"
    assert 0 < (refused[0].retry_after_s or 0) <= 0.05 + 0.01
    assert "more than 20 requests a second (burst 5)" in refused[0].message
    async with client(cluster, ADMIN) as ops:
        info = await ops.stream_info(orders)
    stored = [message async for message in _read_subject(cluster, route, "orders.rated")]
    assert len(stored) == 8 - len(refused)  # a refused publish stored nothing
    assert info.config.name == orders  # another user, same moment: served
    async with grpc.aio.secure_channel(route, security.transport_credentials()) as channel:
        stub = streams_pb2_grpc.StreamsStub(channel)
        metadata = (("authorization", f"Bearer {LIMITED}"),)
        request = streams_pb2.GetStreamInfoRequest(name=orders)
        answers = await asyncio.gather(
            *(stub.GetStreamInfo(request, metadata=metadata, timeout=5) for _ in range(10)), return_exceptions=True
        )
    failures = [answer for answer in answers if isinstance(answer, grpc.aio.AioRpcError)]
    assert failures, "ten calls at once against a burst of 5 all went through"
    assert {failure.code() for failure in failures} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
    status = rpc_status.from_call(failures[0])
    assert status is not None
    retry = error_details_pb2.RetryInfo()
    assert any(detail.Unpack(retry) for detail in status.details)
    assert 0 < retry.retry_delay.ToMilliseconds() <= 60
    async with client(cluster, LIMITED) as limited:
        started = time.monotonic()
        for _ in range(15):
            await limited.publish(orders, "orders.paced", b"y")
        assert time.monotonic() - started >= 0.3  # 15 calls past a burst of 5 at 20/s: the SDK waited


async def admin_route(cluster: LocalCluster, stream: str) -> str:
    async with client(cluster, ADMIN) as ops:
        return (await ops.route(stream)).partitions[0].primary.address


async def _read_subject(cluster: LocalCluster, address: str, subject: str) -> AsyncIterator[Any]:
    async with NodeClient(address, tls=as_user(cluster, ADMIN), timeout_s=5) as reader:
        async for message in reader.read_all("orders"):
            if message.subject == subject:
                yield message


def run_cli(arguments: list[str], environment: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "weir_cli.cli", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment, check=False)


async def test_the_cli_sends_a_token_from_a_file(cluster: LocalCluster, orders: str, tmp_path: Path) -> None:
    assert cluster.tls_dir is not None
    base = ["--router", cluster.router_addresses[0], "--timeout", "5", "--tls-ca", str(cluster.tls_dir / "ca.pem")]
    token_file = tmp_path / "token"
    token_file.write_text(ADMIN + "\n")
    listed = await asyncio.to_thread(run_cli, [*base, "--token-file", str(token_file), "stream", "list"])
    assert listed.returncode == 0, listed.stderr
    assert "payments" in listed.stdout
    environment = {**os.environ, "WEIR_TOKEN": WORKER}
    denied = await asyncio.to_thread(run_cli, [*base, "pub", "payments", "s", "x"], environment)
    assert denied.returncode != 0
    assert "user 'worker' may not use stream 'payments' (no grant names it)" in denied.stderr
    token_file.write_text("")
    empty = await asyncio.to_thread(run_cli, [*base, "--token-file", str(token_file), "stream", "list"])
    assert empty.returncode == 2 and "is empty" in empty.stderr


def one_error_line(completed: subprocess.CompletedProcess[str]) -> str:
    lines = completed.stderr.strip().splitlines()
    assert completed.returncode == 1 and len(lines) == 1 and "Traceback" not in completed.stderr, completed.stderr
    return lines[0]


async def test_tls_mistakes_are_one_line_that_names_tls_and_the_sdk_does_not_retry_them(
    cluster: LocalCluster, orders: str, tmp_path: Path
) -> None:
    """A plaintext CLI at a TLS cluster, and a CLI or SDK trusting another CA: one line that names TLS
    and what to pass; the SDK fails at once instead of retrying for its 30 s."""
    router = cluster.router_addresses[0]
    plaintext = await asyncio.to_thread(run_cli, ["--router", router, "--timeout", "5", "stream", "list"])
    line = one_error_line(plaintext)
    assert "TLS-only server" in line and "--tls-ca" in line, line
    other_ca = weir_devcerts.make_dev_certificates(tmp_path / "other")
    wrong = ["--router", router, "--timeout", "5", "--tls-ca", str(other_ca / "ca.pem"), "stream", "list"]
    line = one_error_line(await asyncio.to_thread(run_cli, wrong))
    assert "TLS handshake failed: the server's certificate is not signed by a CA this client trusts" in line, line
    started = time.monotonic()
    untrusting = Client([router], tls=ChannelSecurity(ca_file=other_ca / "ca.pem", token=ADMIN), retry_timeout_s=30)
    async with untrusting:
        with pytest.raises(TlsHandshakeError, match=f"no router answered at {router} .*TLS handshake failed"):
            await untrusting.list_streams()
    assert time.monotonic() - started < 10


async def test_a_token_from_the_environment_keeps_the_local_clusters_ca(cluster: LocalCluster, orders: str) -> None:
    """`$WEIR_TOKEN` with a local cluster found by its data directory: the CLI and `Client()` use the
    cluster's recorded CA with that token (they dropped the CA once, and every command failed)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    environment |= {"WEIR_CLUSTER_DIR": str(cluster.data_dir), "WEIR_TOKEN": ADMIN}
    listed = await asyncio.to_thread(run_cli, ["stream", "list"], environment)
    assert listed.returncode == 0 and "orders" in listed.stdout, listed.stderr
    script = "import asyncio, weir\nasync def main():\n    async with weir.Client() as c:\n"
    script += "        print(c.found_from, sorted(await c.list_streams()))\nasyncio.run(main())\n"
    ran = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", script], capture_output=True, text=True, env=environment, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"the local cluster under {cluster.data_dir}") and "'orders'" in ran.stdout


def test_weir_cluster_token_makes_a_token_and_the_hash_to_store() -> None:
    made = subprocess.run(
        [sys.executable, "-m", "weir_cli.cli", "--json", "cluster", "token", "--user", "billing"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    figures = json.loads(made.stdout)
    assert len(figures["token"]) >= 40 and figures["token_sha256"] == token_hash(figures["token"])
    assert parse_auth_file(json.dumps({"users": [figures["user"]]}))[0].name == "billing"


async def test_removing_a_user_from_the_file_locks_it_out_without_a_restart(
    cluster: LocalCluster, orders: str, auth_file: Path
) -> None:
    """Each router and node reads the file again within a second of a change."""
    async with client(cluster, PRODUCER) as producer:
        await producer.publish(orders, "orders.last", b"before")
        await asyncio.to_thread(auth_file.write_text, json.dumps(users(producer=False)))
        deadline = time.monotonic() + 10
        refused: set[str] = set()
        while refused != {"router", "node"}:
            for where, call in (
                ("router", producer.list_streams()),
                ("node", producer.publish(orders, "orders.last", b"until refused")),
            ):
                try:
                    await call
                except UnauthenticatedError:
                    refused.add(where)
            assert time.monotonic() < deadline, f"the removed user was still served after 10 s (refused by {refused})"
            await asyncio.sleep(0.2)
    await restore_users(auth_file)


async def restore_users(auth_file: Path) -> None:
    """Every user back, and served by every router and node before the next test: each process
    reads the file again at its first call after RELOAD_INTERVAL_S."""
    await asyncio.to_thread(auth_file.write_text, json.dumps(users()))
    await asyncio.sleep(Authenticator.RELOAD_INTERVAL_S + 0.2)


async def test_an_open_subscription_ends_once_its_user_is_removed(
    cluster: LocalCluster, orders: str, auth_file: Path
) -> None:
    """A server stream (Subscribe) checks its caller again before it sends more, at most once a
    second: removing the user from the file ends it UNAUTHENTICATED within a few seconds."""
    async with client(cluster, ADMIN) as ops:
        await ops.create_consumer(orders, consumer_config("auditors"))
        address = (await ops.route(orders)).partitions[0].primary.address
    received = 0
    try:
        async with client(cluster, PRODUCER) as producer, NodeClient(address, tls=as_user(cluster, WORKER)) as worker:
            await producer.publish(orders, "orders.audit", b"first")
            with pytest.raises(UnauthenticatedError, match="the caller is not known"):
                async with asyncio.timeout(20):
                    async for event in worker.subscribe(orders, "auditors"):
                        received += 1
                        if received == 1:
                            await asyncio.to_thread(auth_file.write_text, json.dumps(users(worker=False)))
                        await asyncio.sleep(0.3)
                        await producer.publish(orders, "orders.audit", b"more")
                        assert event.WhichOneof("event") == "message"
    finally:
        await restore_users(auth_file)
        async with client(cluster, ADMIN) as ops:  # the other tests list the stream's consumers
            await ops.delete_consumer(orders, "auditors")
    assert received >= 2  # it was served until the file changed


def test_an_auth_file_needs_tls_and_a_broken_one_stops_the_start(tmp_path: Path) -> None:
    with pytest.raises(LaunchError, match="needs TLS"):
        LocalCluster.start(tmp_path / "plain", nodes=1, routers=1, auth_file=tmp_path / "auth.json")
    broken = tmp_path / "auth.json"
    broken.write_text('{"users": [{"name": "x"}]}')
    from weir_server import devcerts

    tls = devcerts.make_dev_certificates(tmp_path / "tls")
    env = {
        "PATH": "/usr/bin:/bin",
        "WEIR_NODE_DATA_DIR": str(tmp_path / "node"),
        "WEIR_NODE_TLS_CERT_FILE": str(tls / "service.pem"),
        "WEIR_NODE_TLS_KEY_FILE": str(tls / "service-key.pem"),
        "WEIR_NODE_TLS_CA_FILE": str(tls / "ca.pem"),
        "WEIR_NODE_AUTH_FILE": str(broken),
    }
    result = subprocess.run(
        [sys.executable, "-m", "weir_partition_node"], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert result.returncode == 2
    assert "users[0].token_sha256: expected 64 hex digits" in result.stderr
    plaintext = {**env, "WEIR_NODE_PLAINTEXT": "true"}
    for name in ("WEIR_NODE_TLS_CERT_FILE", "WEIR_NODE_TLS_KEY_FILE", "WEIR_NODE_TLS_CA_FILE"):
        plaintext.pop(name)
    result = subprocess.run(
        [sys.executable, "-m", "weir_partition_node"],
        capture_output=True,
        text=True,
        timeout=60,
        env=plaintext,
        check=False,
    )
    assert result.returncode == 2 and "auth_file needs TLS" in result.stderr


async def test_a_gateway_serves_only_known_users_within_their_grants(cluster: LocalCluster, orders: str) -> None:
    """The gateway reads the cluster's auth file: a kafka-pixy client sends a user's token as
    `authorization: Bearer` (as does a waymaker.streams client), a RocketMQ v1 client signs its
    calls with the user's access and secret keys (MQv2-HMAC-SHA1); unknown callers are
    UNAUTHENTICATED, a user without the grant PERMISSION_DENIED, and nothing is stored for either;
    what passes, the gateway does with the services' token."""
    from weir_gateway.kafka_pixy.pb import kafkapixy_pb2, kafkapixy_pb2_grpc

    assert cluster.tls_dir is not None
    before = await message_count(cluster, "payments")
    gateway = await asyncio.to_thread(cluster.start_gateway, "auth-gateway")
    credentials = grpc.ssl_channel_credentials((cluster.tls_dir / "ca.pem").read_bytes())
    try:
        async with grpc.aio.secure_channel(gateway.kafka_pixy_address, credentials) as channel:
            stub = kafkapixy_pb2_grpc.KafkaPixyStub(channel)
            request = kafkapixy_pb2.ProdRq(topic="payments", message=b"via kafka-pixy")
            refused = {}
            for who, metadata in (("anonymous", ()), ("worker", (("authorization", f"Bearer {WORKER}"),))):
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await stub.Produce(request, metadata=metadata, timeout=10)
                refused[who] = raised.value.code()
            assert refused == {
                "anonymous": grpc.StatusCode.UNAUTHENTICATED,
                "worker": grpc.StatusCode.PERMISSION_DENIED,
            }
            produced = await stub.Produce(request, metadata=(("authorization", f"Bearer {PAYER}"),), timeout=10)
            assert produced.offset >= 0
        async with grpc.aio.secure_channel(gateway.rocketmq_address, credentials) as channel:
            assert await _rocketmq_sends(channel) == {
                "signed": "OK",
                "wrong secret": "UNAUTHENTICATED",
                "stale date-time": "UNAUTHENTICATED",
                "unknown access key": "UNAUTHENTICATED",
                "signed, another topic": "PERMISSION_DENIED",
            }
        async with grpc.aio.secure_channel(gateway.waymaker_streams_address, credentials) as channel:
            assert await _seed_publishes(channel) == {
                "anonymous": "UNAUTHENTICATED",
                "worker": "PERMISSION_DENIED",
                "payer": "ok",
                "payer, internal replication": "PERMISSION_DENIED",
            }
            assert await _seed_object_puts(channel) == {
                "ops creates obj:media": "ok",
                "payer streams 3 frames": "ok",
                "worker streams": "PERMISSION_DENIED",
                "ops deletes obj:media": "ok",
            }
        # its metrics port, with the auth file: /metrics over TLS only
        assert (await asyncio.to_thread(metrics_answer, f"http://127.0.0.1:{gateway.metrics_port}/metrics"))[0] == 400
    finally:
        await asyncio.to_thread(gateway.stop)
    assert await message_count(cluster, "payments") == before + 3


async def test_the_invoker_serves_only_known_users_within_their_grants(cluster: LocalCluster, orders: str) -> None:
    """With the cluster's auth file the invoker's operator port (weir.v1.Invoker) wants a user's
    Bearer token and the grant its permission table names (invoker permissions: read for listings,
    publish for Invoke, admin for deployments, admin on the source stream for a subscription)."""
    from weir.v1 import invoker_pb2, invoker_pb2_grpc

    assert cluster.tls_dir is not None
    invoker = await asyncio.to_thread(cluster.start_invoker, "auth-invoker")
    credentials = grpc.ssl_channel_credentials((cluster.tls_dir / "ca.pem").read_bytes())
    calls: dict[str, Callable[[invoker_pb2_grpc.InvokerStub, Any], Awaitable[Any]]] = {
        "list invocations": lambda stub, metadata: stub.ListInvocations(
            invoker_pb2.ListInvocationsRequest(), metadata=metadata, timeout=10
        ),
        "register a deployment": lambda stub, metadata: stub.RegisterDeployment(
            invoker_pb2.RegisterDeploymentRequest(url="ftp://not-a-deployment"), metadata=metadata, timeout=10
        ),
        "subscribe to orders": lambda stub, metadata: stub.CreateSubscription(
            invoker_pb2.CreateSubscriptionRequest(
                subscription=invoker_pb2.Subscription(stream="orders", service="s", handler="h")
            ),
            metadata=metadata,
            timeout=10,
        ),
    }
    outcomes: dict[tuple[str, str], str] = {}
    try:
        async with grpc.aio.secure_channel(invoker.address, credentials) as channel:
            stub = invoker_pb2_grpc.InvokerStub(channel)
            for who, token in (("anonymous", ""), ("dashboard", DASHBOARD), ("ops", ADMIN)):
                metadata = (("authorization", f"Bearer {token}"),) if token else ()
                for what, call in calls.items():
                    try:
                        await call(stub, metadata)
                        outcomes[(who, what)] = "OK"
                    except grpc.aio.AioRpcError as error:
                        outcomes[(who, what)] = error.code().name
        # its metrics port, with the auth file: /metrics over TLS only
        assert (await asyncio.to_thread(metrics_answer, f"http://127.0.0.1:{invoker.metrics_port}/metrics"))[0] == 400
    finally:
        await asyncio.to_thread(invoker.stop)
    assert outcomes == {
        ("anonymous", "list invocations"): "UNAUTHENTICATED",
        ("anonymous", "register a deployment"): "UNAUTHENTICATED",
        ("anonymous", "subscribe to orders"): "UNAUTHENTICATED",
        ("dashboard", "list invocations"): "PERMISSION_DENIED",  # read on ord* only, not invoker:*
        ("dashboard", "register a deployment"): "PERMISSION_DENIED",
        ("dashboard", "subscribe to orders"): "PERMISSION_DENIED",
        ("ops", "list invocations"): "OK",
        ("ops", "register a deployment"): "INVALID_ARGUMENT",  # allowed; the URL is then refused
        ("ops", "subscribe to orders"): "NOT_FOUND",  # allowed; no deployment serves s/h
    }


def metrics_answer(url: str, ca_file: Path | None = None, token: str = "") -> tuple[int, str, str]:
    """(status, body, WWW-Authenticate) of a GET of `url`, over TLS trusting `ca_file` when given."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    context = ssl.create_default_context(cafile=str(ca_file)) if ca_file is not None else None
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, response.read().decode(), ""
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), error.headers.get("WWW-Authenticate", "")


async def test_metrics_want_tls_and_a_token_with_the_metrics_grant(cluster: LocalCluster, orders: str) -> None:
    """With an auth file a router's, a node's and the replicator's metrics port serves /metrics over
    TLS only (plain HTTP: 400), to a known token (none or an unknown one: 401 asking for a Bearer
    token) of a user with the metrics grant (ops, admin and read on every stream: 403) or the
    services' token (200, the Prometheus page); /healthz and /readyz answer anyone, plain or TLS."""
    assert cluster.tls_dir is not None
    ca_file = cluster.tls_dir / "ca.pem"
    service_token = (cluster.tls_dir / "service.token").read_text().strip()
    ports = {
        "router-1": cluster.routers[0].metrics_port,
        "node-1": cluster.nodes[0].metrics_port,
        "replicator-1": cluster.replicators[0].metrics_port,
    }
    for name, port in ports.items():
        plain, secure = f"http://127.0.0.1:{port}", f"https://127.0.0.1:{port}"
        status, body, _ = await asyncio.to_thread(metrics_answer, f"{plain}/metrics")
        assert (status, "# HELP" in body) == (400, False), (name, body)
        answers = {
            who: await asyncio.to_thread(metrics_answer, f"{secure}/metrics", ca_file, token)
            for who, token in (("anonymous", ""), ("unknown", "not-a-known-token"), ("ops", ADMIN))
        }
        assert {who: answer[0] for who, answer in answers.items()} == {"anonymous": 401, "unknown": 401, "ops": 403}
        assert answers["anonymous"][2].startswith("Bearer") and "# HELP" not in answers["anonymous"][1]
        assert "user 'ops' has no metrics grant" in answers["ops"][1] and "# HELP" not in answers["ops"][1]
        for token in (SCRAPER, service_token):
            status, body, _ = await asyncio.to_thread(metrics_answer, f"{secure}/metrics", ca_file, token)
            assert status == 200 and "# HELP" in body, (name, status, body[:200])
        for probe, trusted in ((f"{plain}/healthz", None), (f"{plain}/readyz", None), (f"{secure}/readyz", ca_file)):
            status, body, _ = await asyncio.to_thread(metrics_answer, probe, trusted)
            assert status == 200 and body.strip() in {"ok", "ready"}, (probe, body)


async def reflected_services(address: str, credentials: grpc.ChannelCredentials, token: str) -> list[str] | str:
    """The services a port's gRPC server reflection lists to a caller with `token` ("" = none, as
    grpcurl without -H), or the name of the status code that refused it."""
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    async with grpc.aio.secure_channel(address, credentials) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        asked = iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        try:
            answers = [answer async for answer in stub.ServerReflectionInfo(asked, metadata=metadata, timeout=10)]
        except grpc.aio.AioRpcError as error:
            return str(error.code().name)
    return sorted(str(service.name) for answer in answers for service in answer.list_services_response.service)


async def test_server_reflection_answers_only_a_known_caller(cluster: LocalCluster, orders: str) -> None:
    """Server reflection lists every service and message type of a port: with an auth file the
    router, a node's client port and the gateway's three doors refuse it UNAUTHENTICATED without a
    token or with an unknown one, and list the services to any user (dashboard: read on ord* only)."""
    from weir_gateway.kafka_pixy import permissions as kafka_pixy
    from weir_gateway.rocketmq_v1 import permissions as rocketmq
    from weir_gateway.waymaker_streams import permissions as waymaker_streams

    assert cluster.tls_dir is not None
    credentials = grpc.ssl_channel_credentials((cluster.tls_dir / "ca.pem").read_bytes())
    gateway = await asyncio.to_thread(cluster.start_gateway, "reflected-gateway")
    ports = {
        cluster.routers[0].address: "weir.v1.Router",
        cluster.nodes[0].client_address: "weir.v1.Streams",
        gateway.kafka_pixy_address: kafka_pixy.SERVICE,
        gateway.rocketmq_address: rocketmq.SERVICE,
        gateway.waymaker_streams_address: waymaker_streams.SERVICE,
    }
    try:
        for address, service in ports.items():
            assert await reflected_services(address, credentials, "") == "UNAUTHENTICATED", service
            assert await reflected_services(address, credentials, "not-a-known-token") == "UNAUTHENTICATED"
            listed = await reflected_services(address, credentials, DASHBOARD)
            assert isinstance(listed, list) and service in listed, (service, listed)
            assert "grpc.reflection.v1alpha.ServerReflection" in listed
    finally:
        await asyncio.to_thread(gateway.stop)


async def _seed_publishes(channel: grpc.aio.Channel) -> dict[str, str]:
    """A waymaker.streams Publish as each caller (a Bearer token, as for kafka-pixy): its outcome."""
    from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2 as seed
    from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2_grpc as seed_grpc

    stub = seed_grpc.WaymakerStreamsServiceStub(channel)
    request = seed.PublishRequest(stream="payments", subject="payments", payload=b"via waymaker.streams")
    callers = {"anonymous": (), "worker": (("authorization", f"Bearer {WORKER}"),)}
    callers["payer"] = (("authorization", f"Bearer {PAYER}"),)
    outcomes = {}
    for who, metadata in callers.items():
        try:
            response = await stub.Publish(request, metadata=metadata, timeout=10)
            outcomes[who] = response.result_code
        except grpc.aio.AioRpcError as error:
            outcomes[who] = error.code().name
    try:
        internal = seed.ReplicateMessageRequest()
        await stub.ReplicateMessage(internal, metadata=callers["payer"], timeout=10)
        outcomes["payer, internal replication"] = "OK"
    except grpc.aio.AioRpcError as error:
        outcomes["payer, internal replication"] = error.code().name
    return outcomes


async def _seed_object_puts(channel: grpc.aio.Channel) -> dict[str, str]:
    """The seed's object bucket made by CreateStream of obj:media and a PutObjectStream into it: a
    streamed put's data frames are checked against its first frame's bucket (publish on obj:media)."""
    from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2 as seed
    from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2_grpc as seed_grpc

    stub = seed_grpc.WaymakerStreamsServiceStub(channel)
    ops, payer = (("authorization", f"Bearer {ADMIN}"),), (("authorization", f"Bearer {PAYER}"),)
    start = seed.PutObjectStreamFrame(start=seed.PutObjectStart(bucket="media", name="clip"))
    data = [seed.PutObjectStreamFrame(data=b"x" * 100_000) for _ in range(3)]
    outcomes = {}
    config = seed.StreamConfigPb(name="obj:media")
    created = await stub.CreateStream(seed.CreateStreamRequest(config=config), metadata=ops, timeout=10)
    outcomes["ops creates obj:media"] = created.result_code
    frames = [start, *data, seed.PutObjectStreamFrame(finish=True)]
    stored = await stub.PutObjectStream(iter(frames), metadata=payer, timeout=30)
    outcomes["payer streams 3 frames"] = stored.result_code if stored.info.total_bytes == 300_000 else "wrong size"
    # Refused at the first frame: only that one is written (see the router's test of the same).
    refused_call = stub.PutObjectStream(metadata=(("authorization", f"Bearer {WORKER}"),), timeout=30)
    await refused_call.write(start)
    try:
        await refused_call
        outcomes["worker streams"] = "OK"
    except grpc.aio.AioRpcError as error:
        outcomes["worker streams"] = error.code().name
    deleted = await stub.DeleteStream(seed.DeleteStreamRequest(name="obj:media"), metadata=ops, timeout=10)
    outcomes["ops deletes obj:media"] = deleted.result_code
    return outcomes


async def _rocketmq_sends(channel: grpc.aio.Channel) -> dict[str, str]:
    """SendMessage with RocketMQ's signature, right and wrong: each attempt's outcome."""
    import datetime
    import uuid

    from weir_gateway.rocketmq_v1 import signature
    from weir_gateway.rocketmq_v1.pb import definition_pb2, service_pb2, service_pb2_grpc

    stub = service_pb2_grpc.MessagingServiceStub(channel)
    now = datetime.datetime.now(datetime.UTC)

    def signed(access_key: str, secret_key: str, at: datetime.datetime) -> tuple[tuple[str, str], ...]:
        date_time = at.strftime(signature.DATE_TIME_FORMAT)
        authorization = (
            f"{signature.ALGORITHM} Credential={access_key}, SignedHeaders={signature.DATE_TIME}, "
            f"Signature={signature.sign(secret_key, date_time)}"
        )
        return (("authorization", authorization), (signature.DATE_TIME, date_time), ("x-mq-client-id", "auth-test"))

    ak, sk = PAYER_KEYS["access_key"], PAYER_KEYS["secret_key"]
    attempts = {
        "signed": ("payments", signed(ak, sk, now)),
        "wrong secret": ("payments", signed(ak, "guessed", now)),
        "stale date-time": ("payments", signed(ak, sk, now - datetime.timedelta(hours=1))),
        "unknown access key": ("payments", signed("nobody", sk, now)),
        "signed, another topic": ("orders", signed(ak, sk, now)),
    }
    outcomes = {}
    for what, (topic, metadata) in attempts.items():
        attributes = definition_pb2.SystemAttribute(message_id=uuid.uuid4().hex.upper())
        message = definition_pb2.Message(
            topic=definition_pb2.Resource(name=topic), body=b"via RocketMQ", system_attribute=attributes
        )
        try:
            response = await stub.SendMessage(service_pb2.SendMessageRequest(message=message), metadata=metadata)
            outcomes[what] = "OK" if response.common.status.code == 0 else response.common.status.message
        except grpc.aio.AioRpcError as error:
            outcomes[what] = error.code().name
    return outcomes


def test_the_sdk_takes_a_token_from_the_environment_and_never_shows_it(tmp_path: Path) -> None:
    security = ChannelSecurity.from_environment({"WEIR_TOKEN": "s3cret-value"})
    assert security is not None and security.bearer_token() == "s3cret-value"
    assert "s3cret-value" not in repr(security)
    token_file = tmp_path / "token"
    token_file.write_text("from-a-file\n")
    from_file = ChannelSecurity.from_environment({"WEIR_TOKEN_FILE": str(token_file)})
    assert from_file is not None and from_file.bearer_token() == "from-a-file"
    with pytest.raises(InvalidArgumentError, match="not both"):
        ChannelSecurity.from_environment({"WEIR_TOKEN": "a", "WEIR_TOKEN_FILE": str(token_file)})
    with pytest.raises(InvalidArgumentError, match="cannot be read"):
        ChannelSecurity(token_file=tmp_path / "missing").credentials()


NODE_CALLS: dict[str, Callable[[NodeClient], Awaitable[Any]]] = {
    "publish": lambda node: node.publish("orders", "orders.x", b"x"),
    "fetch": lambda node: node.fetch("orders", "shipping", 0, batch_size=1),
    "ack": lambda node: node.ack("orders", "shipping", 0, 1),
    "stream admin": lambda node: node.delete_stream("orders"),
    "consumer admin": lambda node: node.delete_consumer("orders", "shipping"),
}
ROUTER_CALLS: dict[str, Callable[[Client], Awaitable[Any]]] = {
    "stream admin": lambda router: router.delete_stream("orders"),
    "stream create": lambda router: router.create_stream(stream_config("intruder")),
    "consumer admin": lambda router: router.delete_consumer("orders", "shipping"),
    "consumer create": lambda router: router.create_consumer("orders", consumer_config("intruder")),
    "group membership": lambda router: router.group_info("orders", "shipping"),
}


@pytest.mark.parametrize("operation", sorted(NODE_CALLS))
async def test_each_node_operation_refuses_unknown_and_unpermitted_callers(
    cluster: LocalCluster, orders: str, operation: str
) -> None:
    async with client(cluster, ADMIN) as ops:
        leader = (await ops.route(orders)).partitions[0].primary.address
        before = (await message_count(cluster, orders), await ops.consumer_info(orders, "shipping"))
    for token, refusal in (("", UnauthenticatedError), (DASHBOARD, PermissionDeniedError)):
        async with NodeClient(leader, tls=as_user(cluster, token), timeout_s=5) as node:
            with pytest.raises(refusal):
                await NODE_CALLS[operation](node)
    async with client(cluster, ADMIN) as ops:
        after = (await message_count(cluster, orders), await ops.consumer_info(orders, "shipping"))
    assert after[0] == before[0]
    assert after[1].acked_total == before[1].acked_total and after[1].delivered_total == before[1].delivered_total


@pytest.mark.parametrize("operation", sorted(ROUTER_CALLS))
async def test_each_router_operation_refuses_unknown_and_unpermitted_callers(
    cluster: LocalCluster, orders: str, operation: str
) -> None:
    for token, refusal in (("", UnauthenticatedError), (PRODUCER, PermissionDeniedError)):
        async with client(cluster, token) as router:
            with pytest.raises(refusal):
                await ROUTER_CALLS[operation](router)
    async with client(cluster, ADMIN) as ops:
        assert await ops.list_streams() == ["orders", "payments"]
        assert [info.config.name for info in await ops.list_consumers(orders)] == ["shipping"]


def test_the_compose_certs_service_makes_an_admin_user_and_keeps_it(tmp_path: Path) -> None:
    """`python -m weir_server.devcerts DIR --admin-auth` (compose's certs service): an auth file
    whose admin token (owner-only) authenticates as a user allowed everything, and whose prometheus
    token as a user allowed only /metrics; a second run keeps the files, so a restarted stack keeps
    its tokens."""
    from weir_server import devcerts

    assert devcerts.main([str(tmp_path), "--admin-auth"]) == 0
    token = (tmp_path / "admin.token").read_text().strip()
    assert (tmp_path / "admin.token").stat().st_mode & 0o077 == 0
    admin = Authenticator(tmp_path / "auth.json", tmp_path / "service.token").authenticate(token)
    assert admin is not None and admin.name == "admin" and admin.may("admin", "any-stream")
    assert admin.may_read_metrics()
    # and a Prometheus's user: the metrics grant only, its token given to the Prometheus image's user
    assert devcerts.main([str(tmp_path), "--admin-auth", "--prometheus-owner", str(os.getuid())]) == 0
    scraper = Authenticator(tmp_path / "auth.json").authenticate((tmp_path / "prometheus.token").read_text().strip())
    assert scraper is not None and scraper.name == "prometheus" and scraper.may_read_metrics()
    assert not scraper.may("read", "any-stream") and (tmp_path / "prometheus.token").stat().st_mode & 0o077 == 0
    assert (tmp_path / "admin.token").read_text().strip() == token


async def test_key_value_calls_need_the_buckets_stream_permissions(cluster: LocalCluster, orders: str) -> None:
    """KeyValue on a router: admin for the bucket, publish with the key as subject, read for reads;
    refusals before anything is stored."""
    address = cluster.router_addresses[0]

    def stub(token: str) -> tuple[grpc.aio.Channel, kv_pb2_grpc.KeyValueStub]:
        channel = weir_tls.aio_channel(address, security=as_user(cluster, token))
        return channel, kv_pb2_grpc.KeyValueStub(channel)

    async def refused(call: Any) -> grpc.StatusCode:
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await call
        return raised.value.code()

    ops_channel, ops = stub(ADMIN)
    payer_channel, payer = stub(PAYER)
    dashboard_channel, dashboard = stub(DASHBOARD)
    anonymous_channel, anonymous = stub("")
    try:
        await ops.CreateBucket(kv_pb2.KvCreateBucketRequest(bucket="wallets"), timeout=10)
        revision = (await payer.Put(kv_pb2.KvPutRequest(bucket="wallets", key="balance.alice", value=b"10"))).revision
        denied = grpc.StatusCode.PERMISSION_DENIED
        assert await refused(payer.Put(kv_pb2.KvPutRequest(bucket="wallets", key="other", value=b"1"))) == denied
        assert await refused(payer.CreateBucket(kv_pb2.KvCreateBucketRequest(bucket="wallets2"))) == denied
        assert await refused(dashboard.Get(kv_pb2.KvGetRequest(bucket="wallets", key="balance.alice"))) == denied
        assert await refused(dashboard.Watch(kv_pb2.KvWatchRequest(bucket="wallets")).read()) == denied
        assert await refused(ops.Put(kv_pb2.KvPutRequest(bucket="wallets", key="balance.bob", value=b"1"))) == denied
        unknown = grpc.StatusCode.UNAUTHENTICATED
        assert (
            await refused(anonymous.Put(kv_pb2.KvPutRequest(bucket="wallets", key="balance.x", value=b""))) == unknown
        )
        got = await payer.Get(kv_pb2.KvGetRequest(bucket="wallets", key="balance.alice"))
        assert (got.entry.value, got.entry.revision) == (b"10", revision)
        keys = await ops.Keys(kv_pb2.KvKeysRequest(bucket="wallets"))
        assert [entry.key for entry in keys.entries] == ["balance.alice"]  # nothing refused was stored
        watch = payer.Watch(kv_pb2.KvWatchRequest(bucket="wallets"))
        first = await asyncio.wait_for(watch.read(), 10)
        watch.cancel()
        assert (first.put.key, first.put.revision) == ("balance.alice", revision)
    finally:
        with contextlib.suppress(grpc.aio.AioRpcError):
            await ops.DeleteBucket(kv_pb2.KvDeleteBucketRequest(bucket="wallets"), timeout=10)
        for channel in (ops_channel, payer_channel, dashboard_channel, anonymous_channel):
            await channel.close()


async def test_a_streamed_object_put_is_authorized_by_its_first_frame(cluster: LocalCluster, orders: str) -> None:
    """PutObjectStream's later frames carry only data: each is checked against the first frame's
    bucket, so a permitted user streams many frames and an unpermitted one is refused."""
    address = cluster.router_addresses[0]
    ops_channel = weir_tls.aio_channel(address, security=as_user(cluster, ADMIN))
    payer_channel = weir_tls.aio_channel(address, security=as_user(cluster, PAYER))
    dashboard_channel = weir_tls.aio_channel(address, security=as_user(cluster, DASHBOARD))
    ops = objects_pb2_grpc.ObjectStoreStub(ops_channel)

    async def frames() -> AsyncIterator[objects_pb2.PutObjectStreamFrame]:
        yield objects_pb2.PutObjectStreamFrame(start=objects_pb2.PutObjectStart(bucket="media", name="clip"))
        for _ in range(3):
            yield objects_pb2.PutObjectStreamFrame(data=b"x" * 100_000)
        yield objects_pb2.PutObjectStreamFrame(finish=True)

    try:
        await ops.CreateObjectBucket(objects_pb2.CreateObjectBucketRequest(bucket="media"), timeout=10)
        stored = await objects_pb2_grpc.ObjectStoreStub(payer_channel).PutObjectStream(frames(), timeout=30)
        assert stored.info.total_bytes == 300_000
        # Refused at the first frame. Only that frame is written: a client still sending data
        # frames when the refusal arrives may see its write fail (INTERNAL) instead of the status.
        refused_call = objects_pb2_grpc.ObjectStoreStub(dashboard_channel).PutObjectStream(timeout=30)
        start = objects_pb2.PutObjectStart(bucket="media", name="clip")
        await refused_call.write(objects_pb2.PutObjectStreamFrame(start=start))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await refused_call
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    finally:
        with contextlib.suppress(grpc.aio.AioRpcError):
            await ops.DeleteObjectBucket(objects_pb2.DeleteObjectBucketRequest(bucket="media"), timeout=10)
        for channel in (ops_channel, payer_channel, dashboard_channel):
            await channel.close()
