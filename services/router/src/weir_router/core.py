"""The router core (transport-neutral; the servicer is a thin adapter over it): the node registry
and the routes, and the sections that build on them, each in its own module:

- routing (here): QueryRoute builds each partition's route from the stream record and the node
  registry, under the listener the client dialled;
- `controller` (controller.py): the lease, dead nodes, failover and the leader rebalancer's ticks;
- `admin` (admin.py): stream and consumer admin forwarded to the nodes, a create validated by the
  first node and rolled back on failure;
- `groups` (groups.py): consumer groups, QueryAssignment / LeaveGroup / GetGroupInfo;
- `views` (cluster_views.py): GetClusterInfo, StartScrub, GetClusterStreamStats;
- partition moves (`mover`), rebalance plans (`planner`) and pinning (here).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from weir.client import NodeClient
from weir.errors import InvalidArgumentError, NoSuchStreamError, UnavailableError, WeirError
from weir.subjects import validate_name
from weir.v1 import router_pb2, types_pb2
from weir_server.internal_clients import ReplicationClient
from weir_server.listeners import address_under, listener_for, parse_listeners
from weir_server.metadata import NodeRecord

from weir_router import mover, moves, planner
from weir_router.admin import StreamAdmin
from weir_router.cluster_views import ClusterViews
from weir_router.controller import Controller
from weir_router.endpoints import check_endpoints
from weir_router.groups import ConsumerGroups
from weir_router.leaders import LeaderRebalancer
from weir_router.settings import RouterSettings
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


class RouterCore:
    """One router's state and the sections over it (module docstring)."""

    def __init__(self, settings: RouterSettings, store: MetadataStore, address: str) -> None:
        self.settings = settings
        self.store = store
        self.address = address
        self.holder = f"{settings.router_id} {address}"
        self.nodes = NodePool(settings.node_timeout_ms / 1000)
        # The addresses clients dial this router at per network (advertised listeners).
        self.listeners = parse_listeners(settings.advertised_listeners)
        self.admin_lock = asyncio.Lock()  # stream changes and leader rebalancing, one at a time
        self.rebalancer = LeaderRebalancer(self)
        self.controller = Controller(self)  # the lease, failover (controller.py)
        self.admin = StreamAdmin(self)  # stream and consumer admin (admin.py)
        self.groups = ConsumerGroups(self)  # QueryAssignment, GetGroupInfo, LeaveGroup (groups.py)
        self.views = ClusterViews(self)  # GetClusterInfo, StartScrub, GetClusterStreamStats

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        self.controller.start()

    async def close(self) -> None:
        await self.controller.stop()
        await self.nodes.close()
        await self.store.close()

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

    def move_partition(self, request: router_pb2.MovePartitionRequest) -> AsyncIterator[router_pb2.MoveProgress]:
        """MovePartition (see router.proto and `mover`). Errors: InvalidArgumentError,
        NoSuchStreamError, FailedPreconditionError, UnavailableError (raised as it iterates)."""
        if request.catch_up_timeout_ms > mover.MAX_CATCH_UP_TIMEOUT_MS:
            raise InvalidArgumentError(
                f"catch_up_timeout_ms: at most {mover.MAX_CATCH_UP_TIMEOUT_MS}, got {request.catch_up_timeout_ms}"
            )
        for field in ("from_node_id", "to_node_id"):
            if not getattr(request, field):
                raise InvalidArgumentError(f"{field}: required")
        plan = moves.MovePlan(request.stream, request.partition, request.from_node_id, request.to_node_id)
        return mover.PartitionMover(self, plan, request.catch_up_timeout_ms).run()

    async def plan_rebalance(self, max_moves: int) -> router_pb2.PlanRebalanceResponse:
        """PlanRebalance (planner.py). Errors: InvalidArgumentError (max_moves)."""
        if max_moves > planner.MAX_MOVES:
            raise InvalidArgumentError(f"max_moves: at most {planner.MAX_MOVES}, got {max_moves}")
        records = await self.store.streams()
        views = await self.node_views()
        alive = sorted(view.record.node_id for view in views if view.alive)
        capacity = {view.record.node_id: view.record.capacity for view in views}
        planned = planner.plan_rebalance(records, alive, capacity, max_moves or planner.DEFAULT_MAX_MOVES)
        before = planner.copies_per_node(records, alive)
        response = router_pb2.PlanRebalanceResponse(
            moves=[
                router_pb2.PlannedMove(
                    stream=move.stream,
                    partition=move.partition,
                    from_node_id=move.from_node_id,
                    to_node_id=move.to_node_id,
                    leading=move.leading,
                )
                for move in planned
            ]
        )
        for field, shares in (("before", before), ("after", planner.shares_after(before, planned))):
            for node_id, (copies, leads) in sorted(shares.items()):
                getattr(response, field).add(node_id=node_id, copies=copies, leads=leads)
        return response

    async def set_partition_pinned(self, stream: str, partition: int, pinned: bool) -> list[int]:
        """Pin or unpin one partition (no epoch change); returns the stream's pinned partitions.
        Errors: NoSuchStreamError, InvalidArgumentError (no such partition), UnavailableError
        (the record kept changing)."""
        record = await self.record_of(stream)
        if partition >= record.config.partitions:
            raise InvalidArgumentError(
                f"stream {stream!r} has {record.config.partitions} partition(s); partition {partition} does not exist"
            )

        def pin(current: types_pb2.StreamRecord) -> None:
            wanted = (
                set(current.pinned_partitions) | {partition} if pinned else set(current.pinned_partitions) - {partition}
            )
            del current.pinned_partitions[:]
            current.pinned_partitions.extend(sorted(wanted))

        for _ in range(10):
            updated = await self.store.update_stream_record(stream, pin, expected_epochs={})
            if updated is not None:
                return list(updated.pinned_partitions)
            await self.record_of(stream)  # NoSuchStreamError once it is gone
        raise UnavailableError(f"stream {stream!r}: its record kept changing; retry")

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
