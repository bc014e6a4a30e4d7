"""Advertised listeners: a client that reaches the cluster only through forwarded ports (as a client
on the Docker host reaches the compose topology through published ports) is routed to the nodes'
forwarded addresses and can publish and consume; a client dialling the routers directly keeps the
default addresses. The compose file's listeners match its published ports. Real processes, real
gRPC, real TCP forwarders standing in for Docker's port publishing."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError
from weir import Client, stream_config
from weir_partition_node.settings import NodeSettings
from weir_router.settings import RouterSettings
from weir_server.listeners import address_under, listener_for, parse_listeners

from tests.conftest import start_cluster

COMPOSE_FILE = Path(__file__).resolve().parents[1] / "deploy" / "docker-compose.yml"


def test_parse_listeners() -> None:
    assert parse_listeners("") == {}
    assert parse_listeners("host=127.0.0.1:17401, lan=10.0.0.5:7401") == {
        "host": "127.0.0.1:17401",
        "lan": "10.0.0.5:7401",
    }
    for bad, message in (
        ("127.0.0.1:1", "expected name=host:port"),
        ("host=127.0.0.1", "is not host:port"),
        ("host=127.0.0.1:0", "is not host:port"),
        ("host=a:1,host=b:2", "named twice"),
        ("9x=a:1", "expected name=host:port"),
    ):
        with pytest.raises(ValueError, match=message):
            parse_listeners(bad)


def test_the_dialled_address_picks_the_listener() -> None:
    router = {"host": "127.0.0.1:7501"}
    assert listener_for(["127.0.0.1:7501"], router) == "host"
    assert listener_for(["localhost:7501"], router) == "host"  # the same host
    assert listener_for(["router-1:7501"], router) == ""
    node = {"host": "127.0.0.1:17401"}
    assert address_under("host", "partition-node-1:7401", node) == "127.0.0.1:17401"
    assert address_under("", "partition-node-1:7401", node) == "partition-node-1:7401"
    assert address_under("lan", "partition-node-1:7401", node) == "partition-node-1:7401"


def test_bad_listener_settings_say_which_entry() -> None:
    with pytest.raises(ValidationError, match="'x' is not host:port"):
        NodeSettings.model_validate({"advertised_listeners": "host=x"})
    with pytest.raises(ValidationError, match="expected name=host:port"):
        RouterSettings.model_validate({"advertised_listeners": "127.0.0.1:7501"})


def test_compose_listeners_match_the_published_ports() -> None:
    """Each router's and node's `host` listener is a port the compose file publishes to its own
    client port, so a host-side client dialling 127.0.0.1:<port> reaches that process."""
    services = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    checked = 0
    for name, service in services.items():
        env = service.get("environment") or {}
        for variable, container_port in (
            ("WEIR_ROUTER_ADVERTISED_LISTENERS", env.get("WEIR_ROUTER_PORT")),
            ("WEIR_NODE_ADVERTISED_LISTENERS", env.get("WEIR_NODE_CLIENT_PORT")),
        ):
            if variable not in env:
                continue
            host_address = parse_listeners(env[variable])["host"]
            published = {tuple(mapping.split(":")) for mapping in service.get("ports", []) if isinstance(mapping, str)}
            assert (host_address.rsplit(":", 1)[1], container_port) in published, (name, host_address, published)
            checked += 1
    assert checked == 5  # 2 routers, 3 nodes


class Forwarder:
    """A TCP port forwarder on 127.0.0.1 (what Docker's published ports do), counting bytes."""

    def __init__(self, target: Callable[[], str]) -> None:
        self.target = target
        self.bytes = 0
        self.server: asyncio.Server | None = None

    @property
    def address(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def start(self) -> Forwarder:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, _, port = self.target().rpartition(":")
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._pipe(reader, upstream_writer), self._pipe(upstream_reader, writer))

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await reader.read(65536):
                self.bytes += len(data)
                writer.write(data)
                await writer.drain()
        with contextlib.suppress(Exception):
            writer.close()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_a_client_behind_forwarded_ports_publishes_and_consumes(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path / "cluster", routers=1)
    forwarders: list[Forwarder] = []
    try:
        router = cluster.routers[0]
        router_forward = await Forwarder(lambda: router.address).start()
        forwarders.append(router_forward)
        node_forwards = {}
        for node in cluster.nodes:
            forward = await Forwarder(lambda node=node: node.client_address).start()  # type: ignore[misc]
            forwarders.append(forward)
            node_forwards[node.name] = forward
            node.env["WEIR_NODE_ADVERTISED_LISTENERS"] = f"host={forward.address}"
            await asyncio.to_thread(node.stop)
            await asyncio.to_thread(node.restart)  # registers its listener (same ports)
        router.env["WEIR_ROUTER_ADVERTISED_LISTENERS"] = f"host={router_forward.address}"
        await asyncio.to_thread(router.stop)
        await asyncio.to_thread(router.restart)

        async with Client(router_forward.address) as outside, Client(router.address) as inside:
            await inside.create_stream(stream_config("listened", subjects=["listened.>"], partitions=3, replicas=3))
            route = await outside.route("listened")
            forwarded = {forward.address for forward in node_forwards.values()}
            assert {entry.primary.address for entry in route.partitions} <= forwarded
            assert {s.address for entry in route.partitions for s in entry.secondaries} <= forwarded
            direct = await inside.route("listened")
            assert {entry.primary.address for entry in direct.partitions} <= {n.client_address for n in cluster.nodes}

            before = {name: forward.bytes for name, forward in node_forwards.items()}
            for n in range(30):
                await outside.publish("listened", "listened.x", b"%d" % n, partition=n % 3, ack_level="all")
            got: set[bytes] = set()
            async with outside.consume("listened", "outside") as messages:
                async for message in messages:
                    got.add(message.payload)
                    await message.ack()
                    if len(got) == 30:
                        break
            assert got == {b"%d" % n for n in range(30)}
            leaders = {entry.primary.node_id for entry in route.partitions}
            for name in leaders:  # every leader was reached through its forwarded port only
                assert node_forwards[name].bytes > before[name], name
    finally:
        for forward in forwarders:
            await forward.close()
        cluster.stop()
