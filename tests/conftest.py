"""Shared fixtures: real partition-node processes on free ports, and clients of them.

`node` is one node process shared by the whole session (tests use unique stream names via
`stream_name`); `fresh_node` starts a node of its own for tests that restart or kill it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from weir.client import ChangeFeedClient, NodeClient
from weir.launcher import NodeHandle, start_node


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
