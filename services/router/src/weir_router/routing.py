"""The node registry and the routes (the router's bottom floor, under RouterCore and its sections):
the nodes registered in the metadata store and a client of each, the stream records, and the route
of each partition under the listener a client dialled (QueryRoute). Every section of the router
(admin, groups, views, controller, leaders, mover) gets this, never the RouterCore that makes them.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from weir.client import NodeClient
from weir.errors import NoSuchStreamError, UnavailableError, WeirError
from weir.subjects import validate_name
from weir.v1 import router_pb2, types_pb2
from weir_server.internal_clients import ReplicationClient
from weir_server.listeners import address_under, listener_for
from weir_server.metadata import NodeRecord

from weir_router.endpoints import check_endpoints
from weir_router.store import MetadataStore

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NodeView:
    record: NodeRecord
    alive: bool


class NodePool:
    """One NodeClient per address, kept for the router's lifetime."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._clients: dict[str, NodeClient] = {}
        self._replication: dict[str, ReplicationClient] = {}

    def client(self, address: str) -> NodeClient:
        client = self._clients.get(address)
        if client is None:
            client = self._clients[address] = NodeClient(address, timeout_s=self.timeout_s)
        return client

    def replication(self, address: str) -> ReplicationClient:
        client = self._replication.get(address)
        if client is None:
            client = self._replication[address] = ReplicationClient(address, timeout_s=self.timeout_s)
        return client

    async def close(self) -> None:
        for client in [*self._clients.values(), *self._replication.values()]:
            await client.close()
        self._clients.clear()
        self._replication.clear()


class Routing:
    """The metadata store, the node clients and the advertised listeners, and what is read from
    them: the nodes, a stream's record and hosts, each partition's route."""

    def __init__(self, store: MetadataStore, nodes: NodePool, listeners: dict[str, str]) -> None:
        self.store = store
        self.nodes = nodes
        # The addresses clients dial this router at per network (advertised listeners).
        self.listeners = listeners

    # -- the nodes hosting a stream ------------------------------------------------------------------

    def hosting(self, record: types_pb2.StreamRecord) -> list[str]:
        """Node ids hosting any partition of the stream, primary of partition 0 first."""
        ordered: list[str] = []
        for entry in record.placement.partitions:
            for node_id in (entry.primary_node_id, *entry.secondary_node_ids):
                if node_id not in ordered:
                    ordered.append(node_id)
        return ordered

    def internal_client(self, node_id: str, nodes: dict[str, NodeView]) -> NodeClient:
        """weir.v1.Streams on the node's internal port. Errors: UnavailableError (not registered)."""
        view = nodes.get(node_id)
        if view is None or not view.record.internal_address:
            raise UnavailableError(f"node {node_id} is not registered", node_id=node_id)
        return self.nodes.client(view.record.internal_address)

    async def push_placement(self, record: types_pb2.StreamRecord, nodes: dict[str, NodeView]) -> None:
        async def push(node_id: str) -> None:
            view = nodes.get(node_id)
            if view is None or not view.alive:
                return
            try:
                await self.nodes.replication(view.record.internal_address).apply_placement(record)
            except WeirError as error:  # the node polls Redis and adopts the record on its own
                logger.warning("%s: could not push the placement to %s: %s", record.config.name, node_id, error)

        await asyncio.gather(*(push(node_id) for node_id in self.hosting(record)))

    # -- nodes and routes --------------------------------------------------------------------------

    async def node_views(self) -> list[NodeView]:
        return [NodeView(record, alive) for record, alive in await self.store.nodes()]

    async def nodes_by_id(self) -> dict[str, NodeView]:
        """Every registered node by id (alive or not)."""
        return {view.record.node_id: view for view in await self.node_views()}

    async def record_of(self, name: str) -> types_pb2.StreamRecord:
        """The stream's record. Errors: InvalidNameError, NoSuchStreamError."""
        validate_name(name)
        record = await self.store.stream(name)
        if record is None:
            raise NoSuchStreamError(f"stream {name!r} does not exist", stream=name)
        return record

    @staticmethod
    def _broker(node_id: str, nodes: dict[str, NodeView], listener: str = "") -> router_pb2.Broker:
        view = nodes.get(node_id)
        if view is None:
            return router_pb2.Broker(node_id=node_id, address="", alive=False)
        record = view.record
        address = address_under(listener, record.client_address, record.client_listeners)
        return router_pb2.Broker(node_id=node_id, address=address, alive=view.alive)

    def listener(self, endpoints: router_pb2.Endpoints) -> str:
        """The advertised listener the client dialled this router through ("" = the default)."""
        if not self.listeners:
            return ""
        return listener_for((f"{a.host}:{a.port}" for a in endpoints.addresses), self.listeners)

    def route(
        self, entry: types_pb2.PartitionPlacement, nodes: dict[str, NodeView], listener: str = ""
    ) -> router_pb2.PartitionRoute:
        primary = self._broker(entry.primary_node_id, nodes, listener)
        return router_pb2.PartitionRoute(
            partition=entry.partition,
            primary=primary,
            secondaries=[self._broker(node_id, nodes, listener) for node_id in entry.secondary_node_ids],
            leader_epoch=entry.leader_epoch,
            permission=router_pb2.PERMISSION_READ_WRITE if primary.alive else router_pb2.PERMISSION_NONE,
        )

    async def query_route(self, stream: str, endpoints: router_pb2.Endpoints) -> router_pb2.QueryRouteResponse:
        """Every partition's route. Errors: InvalidArgumentError (endpoints, name), NoSuchStreamError."""
        check_endpoints(endpoints)
        record = await self.record_of(stream)
        nodes = await self.nodes_by_id()
        response = router_pb2.QueryRouteResponse(config=record.config)
        listener = self.listener(endpoints)
        for entry in record.placement.partitions:
            response.partitions.append(self.route(entry, nodes, listener))
        return response
