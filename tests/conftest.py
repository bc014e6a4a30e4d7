"""Shared fixtures: real partition-node processes on free ports, and clients of them.

`node` is one node process shared by the whole session (tests use unique stream names via
`stream_name`); `fresh_node` starts a node of its own for tests that restart or kill it. `cluster`
is a shared local cluster (redis-server, 2 routers, 3 nodes) and `fresh_cluster` one of the test's
own; `weir_client` is a cluster SDK client on the shared one.
"""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from weir.client import ChangeFeedClient, NodeClient
from weir.cluster import WeirClient
from weir.launcher import LocalCluster, NodeHandle, start_node


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


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeHandle]:
    handle = start_node(tmp_path_factory.mktemp("shared-node") / "data", node_id="shared")
    yield handle
    handle.stop()


@pytest.fixture
def fresh_node(tmp_path: Path) -> Iterator[NodeHandle]:
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
    "WEIR_NODE_REPLICA_LAG_MAX_MS": "2000",
    "WEIR_NODE_REPLICATION_TIMEOUT_MS": "5000",
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


def start_cluster(data_dir: Path, *, nodes: int = 3, routers: int = 2, replicators: int = 1) -> LocalCluster:
    """A real local cluster (its own redis-server, routers, nodes, replicators) with the test timings."""
    return LocalCluster.start(
        data_dir,
        nodes=nodes,
        routers=routers,
        replicators=replicators,
        node_env=CLUSTER_NODE_ENV,
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env=CLUSTER_REPLICATOR_ENV,
    )


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One cluster shared by the tests that do not kill or restart its processes."""
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
async def weir_client(cluster: LocalCluster) -> AsyncIterator[WeirClient]:
    async with WeirClient(cluster.router_addresses) as cluster_client:
        yield cluster_client
