"""TLS on every gRPC port, mutual TLS between the services, and a node's internal port closed to
anyone but the cluster's services (issue 23). A real local cluster started with `tls=True` (the
development CA of `weir cluster up --tls`); real clients with and without certificates."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from weir import Client, PermissionDeniedError, UnavailableError, consumer_config, stream_config
from weir.tls import ChannelSecurity
from weir.v1 import internal_pb2, types_pb2
from weir_cli.launcher import LocalCluster, NodeHandle
from weir_server import devcerts
from weir_server.internal_clients import ChangeFeedClient, ReplicationClient

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
            await replication.apply_placement(types_pb2.StreamRecord(config=stream_config("guarded", replicas=3)))
        with pytest.raises(PermissionDeniedError):
            await replication.replicate(
                "ReplicateStreamDelete", internal_pb2.ReplicateStreamDeleteRequest(stream="guarded")
            )
    async with ChangeFeedClient(node.internal_address, tls=service_security(cluster)) as service:
        assert (await service.read_changes(0, 1)).last_change_seq == before  # nothing happened
    async with Client(cluster.router_addresses, tls=client_tls) as client:
        info = await client.stream_info("guarded")
        assert [stats.msg_count for stats in info.stats.partitions] == [1]


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
