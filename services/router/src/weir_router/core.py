"""The router core (transport-neutral; the servicer is a thin adapter over it): it makes the node
registry and the routes, and the sections that build on them, each in its own module. Each section
gets the routing, the settings and the narrow calls it makes (a lock, a bound method), never the
core itself, so that the arrows run one way: core -> sections -> routing.

- `routing` (routing.py): the node registry, the stream records, and QueryRoute, which builds each
  partition's route from the stream record and the node registry, under the listener the client
  dialled;
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

from weir.errors import InvalidArgumentError, UnavailableError
from weir.v1 import router_pb2, types_pb2
from weir_server.listeners import parse_listeners

from weir_router import mover, moves, planner
from weir_router.admin import StreamAdmin
from weir_router.cluster_views import ClusterViews
from weir_router.controller import Controller
from weir_router.groups import ConsumerGroups
from weir_router.leaders import LeaderRebalancer
from weir_router.routing import NodePool, NodeView, Routing
from weir_router.settings import RouterSettings
from weir_router.store import MetadataStore

logger = logging.getLogger(__name__)

__all__ = ["NodePool", "NodeView", "RouterCore"]  # NodeView and NodePool live in routing.py


class RouterCore:
    """One router's state and the sections over it (module docstring)."""

    def __init__(self, settings: RouterSettings, store: MetadataStore, address: str) -> None:
        self.settings = settings
        self.store = store
        self.address = address
        self.holder = f"{settings.router_id} {address}"
        nodes = NodePool(settings.node_timeout_ms / 1000)
        self.routing = routing = Routing(store, nodes, parse_listeners(settings.advertised_listeners))
        admin_lock = asyncio.Lock()  # stream changes and leader rebalancing, one at a time
        # Each section gets the routing, the settings and the narrow calls it makes, never this object.
        self.rebalancer = LeaderRebalancer(routing, settings)
        self.controller = Controller(routing, settings, self.holder, admin_lock, self.rebalancer)  # the lease, failover
        self.admin = StreamAdmin(routing, admin_lock)  # stream and consumer admin (admin.py)
        self.groups = ConsumerGroups(  # QueryAssignment, GetGroupInfo, LeaveGroup (groups.py)
            routing, settings, consumer_info=self.admin.consumer_info, create_consumer=self.admin.create_consumer
        )
        self.views = ClusterViews(routing, settings, self.controller.lease_holder)  # GetClusterInfo, StartScrub, ...

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        self.controller.start()

    async def close(self) -> None:
        await self.controller.stop()
        await self.routing.nodes.close()
        await self.store.close()

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
        return mover.PartitionMover(self.routing, plan, request.catch_up_timeout_ms).run()

    async def plan_rebalance(self, max_moves: int) -> router_pb2.PlanRebalanceResponse:
        """PlanRebalance (planner.py). Errors: InvalidArgumentError (max_moves)."""
        if max_moves > planner.MAX_MOVES:
            raise InvalidArgumentError(f"max_moves: at most {planner.MAX_MOVES}, got {max_moves}")
        records = await self.store.streams()
        views = await self.routing.node_views()
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
        record = await self.routing.record_of(stream)
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
            await self.routing.record_of(stream)  # NoSuchStreamError once it is gone
        raise UnavailableError(f"stream {stream!r}: its record kept changing; retry")
