"""Shared fixtures: real partition-node processes on free ports, and clients of them.

`node` is one node process shared by the whole session (tests use unique stream names via
`stream_name`); `fresh_node` starts a node of its own for tests that restart or kill it. `cluster`
is a shared local cluster (redis-server, 2 routers, 3 nodes) and `fresh_cluster` one of the test's
own; `weir_client` is a cluster SDK client on the shared one, `router_addresses` and
`cluster_addresses` say where its routers and nodes are.

External cluster: with `WEIR_TEST_ROUTERS=host:port[,host:port...]` set, the cluster-level tests
(those using `weir_client`, `router_addresses` or `cluster_addresses`) run against the cluster
behind those routers (e.g. `docker compose up`) and the suite starts no process of its own: every
fixture or test that needs processes it starts itself (`node`, `cluster`, `fresh_cluster`,
`start_cluster`, crash and fault tests, the CLI, the benchmarks...) calls `needs_own_processes()`
and is skipped. Unset (the default), nothing changes: the shared local cluster is started as before.
"""

from __future__ import annotations

import asyncio
import os
import re
import ssl
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from weir.client import NodeClient
from weir.cluster import WeirClient
from weir_cli.launcher import LocalCluster, NodeHandle, ProcessHandle, start_node
from weir_cli.metadata_store import RedisHandle
from weir_server.internal_clients import ChangeFeedClient

# -- external cluster mode ---------------------------------------------------------------------------

EXTERNAL_ROUTERS_VARIABLE = "WEIR_TEST_ROUTERS"
OWN_PROCESSES_SKIP_REASON = f"needs processes the suite starts itself; {EXTERNAL_ROUTERS_VARIABLE} is set"


def external_routers() -> list[str]:
    """The router addresses ("host:port") of `WEIR_TEST_ROUTERS` (comma-separated); [] when unset
    or empty, which means: start a local cluster as usual."""
    value = os.environ.get(EXTERNAL_ROUTERS_VARIABLE, "")
    return [address.strip() for address in value.split(",") if address.strip()]


def needs_own_processes() -> None:
    """Skip the calling test or fixture when the suite runs against an external cluster: it needs
    processes it starts (and kills, restarts or reads the handles of) itself."""
    if external_routers():
        pytest.skip(OWN_PROCESSES_SKIP_REASON)


@pytest.fixture(scope="session", autouse=True)
def _no_own_processes_with_an_external_cluster() -> Iterator[None]:
    """With WEIR_TEST_ROUTERS set, starting a launcher process (node, router, replicator, analytics,
    redis-server) fails the test: whatever starts one must call `needs_own_processes()` first, so a
    run against an external cluster never silently tests a cluster of its own. Unset: no effect."""
    if not external_routers():
        yield
        return

    def refuse(handle: object, *args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError(
            f"{handle!r}: started a process while {EXTERNAL_ROUTERS_VARIABLE} is set; "
            "call tests.conftest.needs_own_processes() before starting processes"
        )

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ProcessHandle, "start", refuse)
        patch.setattr(RedisHandle, "start", refuse)
        yield


@dataclass(frozen=True)
class RouterAddress:
    """One router of the cluster under test: its id and its gRPC address ("host:port")."""

    router_id: str
    address: str


@dataclass(frozen=True)
class NodeAddress:
    """One partition node of the cluster under test: where its client and internal gRPC ports and
    its /metrics endpoint are ("host:port" each)."""

    node_id: str
    client_address: str
    internal_address: str
    metrics_address: str

    @property
    def name(self) -> str:
        """The node id (what `NodeHandle.name` is)."""
        return self.node_id


@dataclass(frozen=True)
class ClusterAddresses:
    """Where the cluster under test is: its routers (in the order given) and its live nodes (by id)."""

    routers: list[RouterAddress]
    nodes: list[NodeAddress]

    @property
    def router_addresses(self) -> list[str]:
        return [router.address for router in self.routers]

    @classmethod
    def of_local(cls, local: LocalCluster) -> ClusterAddresses:
        """The addresses of a cluster this suite started (from its process handles)."""
        return cls(
            [RouterAddress(router.router_id, router.address) for router in local.routers],
            [
                NodeAddress(node.node_id, node.client_address, node.internal_address, f"127.0.0.1:{node.metrics_port}")
                for node in local.nodes
            ],
        )

    @classmethod
    async def of_routers(cls, addresses: list[str], settle_timeout_s: float = 30.0) -> ClusterAddresses:
        """The addresses of a running cluster, from GetClusterInfo on each router (its id) and on
        the first (the live nodes, as registered: their advertised addresses), once a controller
        holds the lease and a node is alive. Raises AssertionError when the cluster does not settle
        within `settle_timeout_s`, a WeirError when a router does not answer."""
        routers: list[RouterAddress] = []
        nodes: list[NodeAddress] = []
        for address in addresses:
            async with WeirClient([address]) as client:
                info = await client.cluster_info()
                deadline = time.monotonic() + settle_timeout_s
                while not (info.controller_id and any(node.alive for node in info.nodes)):
                    assert time.monotonic() < deadline, f"the cluster at {address} did not settle: {info}"
                    await asyncio.sleep(0.2)
                    info = await client.cluster_info()
            routers.append(RouterAddress(info.router_id, address))
            if not nodes:
                nodes = [
                    NodeAddress(node.node_id, node.client_address, node.internal_address, node.metrics_address)
                    for node in sorted(info.nodes, key=lambda entry: entry.node_id)
                    if node.alive
                ]
        return cls(routers, nodes)


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float, what: str) -> float:
    """Poll `check` (each call asks the real processes) until true; returns the seconds it took.
    Fails with `what` after `timeout_s`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if await check():
            return time.monotonic() - started
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {timeout_s}s: {what}")


def http_get(url: str) -> str:
    """The body of a plain HTTP GET (a /metrics page, a Prometheus API answer)."""
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


def metrics_page(address: str) -> str:
    """The /metrics page of the service whose metrics port is `address` ("host:port"): plain HTTP, or,
    against an external cluster with WEIR_TLS_CA_FILE set (the compose stack, which runs an auth
    file), HTTPS with that CA and the WEIR_TOKEN / WEIR_TOKEN_FILE token (a user with the metrics
    grant, as compose's admin)."""
    ca_file = os.environ.get("WEIR_TLS_CA_FILE", "")
    if not (external_routers() and ca_file):
        return http_get(f"http://{address}/metrics")
    token = os.environ.get("WEIR_TOKEN") or Path(os.environ["WEIR_TOKEN_FILE"]).read_text().strip()
    request = urllib.request.Request(f"https://{address}/metrics", headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=5, context=ssl.create_default_context(cafile=ca_file)) as response:
        return str(response.read().decode())


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeHandle]:
    needs_own_processes()
    handle = start_node(tmp_path_factory.mktemp("shared-node") / "data", node_id="shared")
    yield handle
    handle.stop()


@pytest.fixture
def fresh_node(tmp_path: Path) -> Iterator[NodeHandle]:
    needs_own_processes()
    handle = start_node(tmp_path / "data", node_id="fresh")
    yield handle
    handle.kill()


@pytest.fixture(scope="session")
async def client(node: NodeHandle) -> AsyncIterator[NodeClient]:
    async with NodeClient(node.client_address) as node_client:
        yield node_client


@pytest.fixture(scope="session")
async def feed_client(node: NodeHandle) -> AsyncIterator[ChangeFeedClient]:
    async with ChangeFeedClient(node.internal_address) as change_client:
        yield change_client


@pytest.fixture
def stream_name(request: pytest.FixtureRequest) -> str:
    """A stream name unique to the test (valid characters only)."""
    base = re.sub(r"[^A-Za-z0-9_-]", "_", request.node.name)[:80]
    return f"{base}-{uuid.uuid4().hex[:8]}"


# Cluster timings for tests: liveness and takeover in about a second instead of the defaults' seconds.
CLUSTER_NODE_ENV = {
    "WEIR_NODE_HEARTBEAT_INTERVAL_MS": "200",
    "WEIR_NODE_HEARTBEAT_TTL_MS": "1500",
    "WEIR_NODE_REPLICATION_TIMEOUT_MS": "5000",  # the in-sync rules keep the product's defaults
    "WEIR_NODE_PLACEMENT_REFRESH_MS": "300",
}
CLUSTER_REPLICATOR_ENV = {
    "WEIR_REPLICATOR_TICK_MS": "200",
    "WEIR_REPLICATOR_LEASE_MS": "1500",
    "WEIR_REPLICATOR_RETRY_BACKOFF_MS": "100",
    "WEIR_REPLICATOR_FETCH_WAIT_MS": "400",
}
CLUSTER_ROUTER_ENV = {
    "WEIR_ROUTER_LEASE_MS": "1500",
    "WEIR_ROUTER_CONTROLLER_TICK_MS": "200",
    "WEIR_ROUTER_GROUP_SESSION_TIMEOUT_MS": "3000",
}


def start_cluster(
    data_dir: Path, *, nodes: int = 3, routers: int = 2, replicators: int = 1, memory_limit_bytes: int | None = None
) -> LocalCluster:
    """A real local cluster (its own redis-server, routers, nodes, replicators) with the test timings
    (and, with `memory_limit_bytes`, that address-space limit on each service). Skips the caller
    with WEIR_TEST_ROUTERS set."""
    needs_own_processes()
    return LocalCluster.start(
        data_dir,
        nodes=nodes,
        routers=routers,
        replicators=replicators,
        node_env=CLUSTER_NODE_ENV,
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env=CLUSTER_REPLICATOR_ENV,
        memory_limit_bytes=memory_limit_bytes,
    )


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One cluster shared by the tests that do not kill or restart its processes (and read its
    process handles). A test that only needs addresses takes `cluster_addresses` or
    `router_addresses` instead, so it also runs against an external cluster."""
    local = start_cluster(tmp_path_factory.mktemp("shared-cluster"))
    yield local
    local.stop()


@pytest.fixture
def fresh_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    """A cluster of the test's own, for tests that kill or restart processes."""
    local = start_cluster(tmp_path / "cluster")
    yield local
    for handle in (*local.routers, *local.nodes):
        handle.kill()
    local.redis.kill()


@pytest.fixture(scope="session")
async def cluster_addresses(request: pytest.FixtureRequest) -> ClusterAddresses:
    """The routers and nodes of the cluster the session tests: the shared local `cluster`, or with
    WEIR_TEST_ROUTERS set the external one behind those routers."""
    routers = external_routers()
    if routers:
        return await ClusterAddresses.of_routers(routers)
    return ClusterAddresses.of_local(request.getfixturevalue("cluster"))


@pytest.fixture(scope="session")
def router_addresses(cluster_addresses: ClusterAddresses) -> list[str]:
    """The router addresses ("host:port") of the cluster the session tests."""
    return cluster_addresses.router_addresses


@pytest.fixture(scope="session")
async def weir_client(router_addresses: list[str]) -> AsyncIterator[WeirClient]:
    async with WeirClient(router_addresses) as cluster_client:
        yield cluster_client


async def reason_of(call: Any) -> str:
    """The ErrorInfo reason (Weir's result code) of a gRPC call that must fail; its status code's
    name when it carries none."""
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call
    for key, value in raised.value.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            for detail in status_pb2.Status.FromString(value).details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    return str(info.reason)
    return str(raised.value.code().name)
