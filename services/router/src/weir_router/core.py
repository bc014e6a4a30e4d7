"""The router core (transport-neutral; the servicer is a thin adapter over it).

- Routing: QueryRoute builds each partition's route from the stream record and the node registry.
- Consumer groups (`groups.py`, `core.groups`): QueryAssignment / LeaveGroup run `assignment.step`
  inside a Redis transaction.
- Controller: one router at a time holds the lease (SET NX PX, renewed every tick); the holder
  marks nodes whose heartbeat expired dead, and alone places and changes streams. The other
  routers forward those calls to it (see the servicer).
- Admin: stream and consumer calls are forwarded to the nodes' internal ports; node answers keep
  their typed errors. A create is validated by the first node before any other node is touched,
  and rolled back on the nodes already created when a later node fails, so a failed request
  leaves no state.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.message import DecodeError
from redis.exceptions import RedisError
from weir.client import NodeClient
from weir.errors import (
    AlreadyExistsError,
    BeingDeletedError,
    InvalidArgumentError,
    NoSuchConsumerError,
    NoSuchStreamError,
    UnavailableError,
    WeirError,
)
from weir.subjects import validate_name
from weir.v1 import router_pb2, streams_pb2, types_pb2
from weir_server.analytics import STATS_SUBJECT
from weir_server.consumer_info import add_partition_totals
from weir_server.internal_clients import ReplicationClient
from weir_server.listeners import address_under, listener_for, parse_listeners
from weir_server.metadata import InSyncRecord, NodeRecord
from weir_server.streamconfig import MAX_MESSAGE_BYTES, normalize_config

from weir_router import failover, metrics, mover, moves, planner
from weir_router.endpoints import check_endpoints
from weir_router.groups import ConsumerGroups
from weir_router.leaders import LeaderRebalancer
from weir_router.placement import loads_from, place_stream
from weir_router.settings import RouterSettings
from weir_router.store import MetadataStore

logger = logging.getLogger(__name__)
T = TypeVar("T")


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
    def __init__(self, settings: RouterSettings, store: MetadataStore, address: str) -> None:
        self.settings = settings
        self.store = store
        self.address = address
        self.holder = f"{settings.router_id} {address}"
        self.is_controller = False
        self.nodes = NodePool(settings.node_timeout_ms / 1000)
        # The addresses clients dial this router at per network (advertised listeners).
        self.listeners = parse_listeners(settings.advertised_listeners)
        self._admin_lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._known_dead: set[str] = set()
        self._unavailable_logged: set[tuple[str, int, int]] = set()
        self.rebalancer = LeaderRebalancer(self)
        self.groups = ConsumerGroups(self)  # QueryAssignment, GetGroupInfo, LeaveGroup (groups.py)

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._controller_loop(), name="controller")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.is_controller:
            with contextlib.suppress(RedisError, OSError):
                await self.store.release_lease(self.holder)  # hand over at once, not after the lease
        self.is_controller = False
        metrics.IS_CONTROLLER.set(0)
        await self.nodes.close()
        await self.store.close()

    # -- controller --------------------------------------------------------------------------------

    async def _controller_loop(self) -> None:
        interval_s = self.settings.controller_tick_ms / 1000
        while True:
            try:
                await self.controller_tick()
            except (RedisError, OSError) as error:
                metrics.REDIS_ERRORS.inc()
                if self.is_controller:
                    logger.warning(
                        "router %s: Redis unreachable, giving up the controller role: %s",
                        self.settings.router_id,
                        error,
                    )
                self._set_controller(False)
            except Exception:
                logger.exception("controller tick failed")
            await asyncio.sleep(interval_s)

    def _set_controller(self, value: bool) -> None:
        if value and not self.is_controller:
            logger.info("router %s is now the controller", self.settings.router_id)
            metrics.CONTROLLER_CHANGES.inc()
        elif not value and self.is_controller:
            logger.warning("router %s lost the controller lease", self.settings.router_id)
        self.is_controller = value
        metrics.IS_CONTROLLER.set(1 if value else 0)

    async def controller_tick(self) -> None:
        """Renew or seek the lease; as controller, mark nodes with an expired heartbeat dead, fail
        their partitions over, and now and then move leadership back to preferred leaders."""
        lease_ms = self.settings.lease_ms
        if self.is_controller:
            held = await self.store.renew_lease(self.holder, lease_ms)
        else:
            held = await self.store.acquire_lease(self.holder, lease_ms)
        self._set_controller(held)
        views = await self.node_views()
        alive = sum(1 for view in views if view.alive)
        metrics.NODES.labels("alive").set(alive)
        metrics.NODES.labels("dead").set(len(views) - alive)
        if not self.is_controller:
            return
        for view in views:
            if not view.alive and view.record.state == "alive":
                await self.store.mark_dead(view.record.node_id)
                metrics.NODES_MARKED_DEAD.inc()
                logger.warning("node %s missed its heartbeats: marked dead", view.record.node_id)
        nodes = {view.record.node_id: view for view in views}
        if alive < len(views) or any(view.alive and view.record.rebuilding_partitions for view in views):
            await self.fail_over(nodes)
        if self.rebalancer.due():
            async with self._admin_lock:
                await self.rebalancer.run(nodes)

    async def fail_over(self, nodes: dict[str, NodeView]) -> None:
        """Replace the dead primary of every partition that has one by its best alive in-sync
        replica (failover.py), bump the leader epoch, store the record and the new in-sync set in
        one transaction, then tell the stream's alive nodes (they also poll Redis). A primary that
        rebuilds the partition from another copy (its file was unreadable: its log is not the
        partition's history) counts as dead for that partition, and never as a candidate."""
        alive = {node_id for node_id, view in nodes.items() if view.alive}
        rebuilding = {node_id: set(view.record.rebuilding_partitions) for node_id, view in nodes.items()}
        for record in await self.store.streams():
            name = record.config.name
            orphaned = [
                entry
                for entry in record.placement.partitions
                if entry.primary_node_id not in alive
                or (name, entry.partition) in rebuilding.get(entry.primary_node_id, ())
            ]
            if not orphaned:
                continue
            updated = types_pb2.StreamRecord()
            updated.CopyFrom(record)
            expected: dict[int, int] = {}
            in_sync_records: dict[int, InSyncRecord] = {}
            read_in_sync: dict[int, InSyncRecord | None] = {}
            for entry in orphaned:
                stored = read_in_sync[entry.partition] = await self.store.in_sync(record.config.name, entry.partition)
                in_sync = (
                    list(stored.in_sync)
                    if stored is not None and stored.leader_epoch == entry.leader_epoch
                    else list(entry.in_sync_node_ids)
                )
                candidates = [
                    node_id
                    for node_id in in_sync
                    if node_id in alive
                    and node_id != entry.primary_node_id
                    and (name, entry.partition) not in rebuilding.get(node_id, ())
                ]
                views = await self._replica_views(record.config.name, entry.partition, candidates, nodes)
                promotion = failover.choose_leader(entry, in_sync, views)
                key = (record.config.name, entry.partition, entry.leader_epoch)
                if promotion is None:
                    if key not in self._unavailable_logged:
                        self._unavailable_logged.add(key)
                        logger.error(
                            "%s/%d: primary %s is dead and no in-sync replica is alive (in-sync: %s); the partition "
                            "stays unavailable until one returns",
                            *key[:2],
                            entry.primary_node_id,
                            in_sync,
                        )
                    continue
                new_entry = failover.promoted(entry, promotion, in_sync, alive)
                updated.placement.partitions[entry.partition].CopyFrom(new_entry)
                expected[entry.partition] = entry.leader_epoch
                in_sync_records[entry.partition] = InSyncRecord(
                    new_entry.leader_epoch, new_entry.primary_node_id, tuple(new_entry.in_sync_node_ids)
                )
                logger.warning(
                    "%s/%d: primary %s %s; promoted %s (log valid through seq %d) under leader epoch %d",
                    record.config.name,
                    entry.partition,
                    entry.primary_node_id,
                    "is dead" if entry.primary_node_id not in alive else "rebuilds the partition's unreadable file",
                    promotion.leader,
                    promotion.valid_end,
                    new_entry.leader_epoch,
                )
            if not expected:
                continue
            dead = sorted({entry.primary_node_id for entry in orphaned if entry.partition in expected} - alive)
            if not await self.store.replace_placement(
                updated,
                expected,
                in_sync_records,
                read_in_sync={index: read_in_sync[index] for index in expected},
                dead_nodes=dead,
            ):
                logger.warning(
                    "%s: placement, in-sync set or the primary's heartbeat changed during failover; deciding again "
                    "next tick",
                    record.config.name,
                )
                continue
            metrics.LEADER_ELECTIONS.inc(len(expected))
            await self.push_placement(updated, nodes)

    async def _replica_views(
        self, stream: str, partition: int, candidates: list[str], nodes: dict[str, NodeView]
    ) -> dict[str, failover.ReplicaView]:
        async def ask(node_id: str) -> failover.ReplicaView | None:
            try:
                state = await self.nodes.replication(nodes[node_id].record.internal_address).replica_state(
                    stream, partition
                )
            except WeirError as error:
                logger.warning("%s/%d: replica %s did not answer: %s", stream, partition, node_id, error)
                return None
            if state.rebuilding:  # its log is not the partition's history yet: never promoted
                logger.warning(
                    "%s/%d: replica %s is rebuilding an unreadable file: no candidate", stream, partition, node_id
                )
                return None
            return failover.ReplicaView(node_id, state.replica_epoch, state.last_seq)

        answers = await asyncio.gather(*(ask(node_id) for node_id in candidates))
        return {view.node_id: view for view in answers if view is not None}

    async def push_placement(self, record: types_pb2.StreamRecord, nodes: dict[str, NodeView]) -> None:
        async def push(node_id: str) -> None:
            view = nodes.get(node_id)
            if view is None or not view.alive:
                return
            try:
                await self.nodes.replication(view.record.internal_address).apply_placement(record)
            except WeirError as error:  # the node polls Redis and adopts the record on its own
                logger.warning("%s: could not push the placement to %s: %s", record.config.name, node_id, error)

        await asyncio.gather(*(push(node_id) for node_id in self._hosting(record)))

    async def controller(self) -> tuple[str, str]:
        """(router id, address) of the lease holder; ("", "") while nobody holds it."""
        holder = await self.store.lease_holder()
        router_id, _, address = holder.partition(" ")
        return router_id, address

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

    # -- stream admin (controller) ---------------------------------------------------------------------

    def _hosting(self, record: types_pb2.StreamRecord) -> list[str]:
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

    async def _first_then_rest(
        self, record: types_pb2.StreamRecord, call: Callable[[NodeClient], Awaitable[T]]
    ) -> list[T]:
        """`call` on the node leading partition 0 first (it validates, so a bad request reaches no
        other node), then on every other node hosting the stream at once; results in that order.
        A later failure is raised after all calls finished."""
        nodes = await self.nodes_by_id()
        hosting = self._hosting(record)
        first = await call(self.internal_client(hosting[0], nodes))
        rest = await _gather_first_error([call(self.internal_client(node_id, nodes)) for node_id in hosting[1:]])
        return [first, *rest]

    async def create_stream(self, config: types_pb2.StreamConfig) -> streams_pb2.CreateStreamResponse:
        """Place and create a stream (controller only). Idempotent for the same config. Errors:
        InvalidConfigError / InvalidNameError / InvalidSubjectError (checked here before anything is
        placed, and again by the nodes, which also know their message size bound),
        AlreadyExistsError, NotEnoughNodesError, UnavailableError."""
        normalize_config(config, MAX_MESSAGE_BYTES, clustered=True)  # bounded work before any placement
        async with self._admin_lock:
            nodes = await self.nodes_by_id()
            existing = await self.store.stream(config.name)
            if existing is not None:  # the node compares configs exactly as a standalone create would
                _refuse_if_deleting(existing)
                if (config.partitions or 1, config.replicas or 1) != (
                    existing.config.partitions,
                    existing.config.replicas,
                ):
                    raise AlreadyExistsError(
                        f"stream {config.name!r} already exists with a different config "
                        f"({existing.config.partitions} partition(s) x {existing.config.replicas} replica(s))",
                        stream=config.name,
                    )
                first = self.internal_client(self._hosting(existing)[0], nodes)
                effective = await first.create_stream(config, existing.placement)
                return streams_pb2.CreateStreamResponse(config=effective, created_at_ms=existing.created_at_ms)
            alive = [view for view in nodes.values() if view.alive]
            records = await self.store.streams()
            loads = loads_from(
                [view.record.node_id for view in alive],
                {view.record.node_id: view.record.capacity for view in alive},
                (record.placement for record in records),
            )
            placement = place_stream(config.partitions or 1, config.replicas or 1, loads)
            record = types_pb2.StreamRecord(placement=placement)
            record.config.CopyFrom(config)
            hosting = self._hosting(record)
            created: list[NodeClient] = []
            try:
                first = self.internal_client(hosting[0], nodes)
                effective = await first.create_stream(config, placement)  # validates before anything else
                created.append(first)
                others = [self.internal_client(node_id, nodes) for node_id in hosting[1:]]

                async def create_on(client: NodeClient) -> None:
                    await client.create_stream(config, placement)
                    created.append(client)

                await _gather_first_error([create_on(client) for client in others])
                record.config.CopyFrom(effective)
                record.created_at_ms = await self.store.now_ms()
                await self.store.put_stream(record)
            except BaseException:
                await self._undo_create(config.name, created)
                raise
            logger.info(
                "created stream %s: %d partition(s) x %d replica(s) on %s",
                config.name,
                effective.partitions,
                effective.replicas,
                ", ".join(hosting),
            )
            return streams_pb2.CreateStreamResponse(config=effective, created_at_ms=record.created_at_ms)

    async def _undo_create(self, name: str, created: Sequence[NodeClient]) -> None:
        for client in created:
            try:
                await client.delete_stream(name)
            except WeirError as error:
                logger.warning("rolling back stream %s on %s: %s", name, client.address, error)

    async def delete_stream(self, name: str) -> None:
        """Delete a stream from every node hosting it and from the metadata (controller only).
        A node that is down keeps its copy until it is deleted there (logged)."""
        async with self._admin_lock:
            record = await self.record_of(name)
            if not await self.store.mark_deleting(name):  # the nodes delete only on this word
                raise NoSuchStreamError(f"stream {name!r} does not exist", stream=name)
            nodes = await self.nodes_by_id()
            for node_id in self._hosting(record):
                try:
                    client = self.internal_client(node_id, nodes)
                    await client.delete_stream(name)
                except NoSuchStreamError:
                    pass
                except WeirError as error:
                    if not error.retryable:
                        raise
                    logger.warning(
                        "stream %s: node %s unreachable during delete (%s); its copy remains", name, node_id, error
                    )
            await self.store.delete_stream(name)

    async def update_stream(self, request: streams_pb2.UpdateStreamRequest) -> streams_pb2.UpdateStreamResponse:
        """Apply a partial update on every node hosting the stream (controller only); `pruned`
        sums the removals of every node hosting it (secondaries hold no data until replication
        arrives; then each copy's removals are counted)."""
        async with self._admin_lock:
            record = await self.record_of(request.name)
            _refuse_if_deleting(record)
            results = await self._first_then_rest(record, lambda client: client.update_stream(request))
            response = results[0]
            pruned = sum(result.pruned for result in results)
            record.config.CopyFrom(response.config)
            await self.store.put_stream(record)
            return streams_pb2.UpdateStreamResponse(config=response.config, pruned=pruned)

    async def stream_info(self, name: str) -> streams_pb2.GetStreamInfoResponse:
        """Stats merged from each partition's primary (a partition whose primary is unreachable
        is left out of the totals and listed without figures); a sourcing stream's sources_status
        from its primary."""
        record = await self.record_of(name)
        nodes = await self.nodes_by_id()
        led = _led_by(record)
        infos = await asyncio.gather(
            *(self._client_info(node_id, nodes, name) for node_id in led), return_exceptions=True
        )
        response = streams_pb2.GetStreamInfoResponse(
            config=record.config,
            created_at_ms=record.created_at_ms,
            placement=record.placement,
            pinned_partitions=record.pinned_partitions,
        )
        by_partition: dict[int, types_pb2.PartitionStats] = {}
        for node_id, info in zip(led, infos, strict=True):
            if isinstance(info, BaseException):
                logger.warning("stream info %s: node %s: %s", name, node_id, info)
                continue
            for stats in info.stats.partitions:
                if stats.partition in led[node_id]:
                    by_partition[stats.partition] = stats
            if 0 in led[node_id]:  # a sourcing stream's tails run on its (one) partition's primary
                response.sources_status.extend(info.sources_status)
        for index in range(record.config.partitions):
            stats = by_partition.get(index, types_pb2.PartitionStats(partition=index))
            response.stats.partitions.append(stats)
            response.stats.msg_count += stats.msg_count
            response.stats.bytes += stats.bytes
        return response

    async def _client_info(
        self, node_id: str, nodes: dict[str, NodeView], name: str
    ) -> streams_pb2.GetStreamInfoResponse:
        client = self.internal_client(node_id, nodes)
        return await client.stream_info(name)

    async def list_streams(self) -> list[str]:
        return await self.store.stream_names()

    # -- consumer admin ------------------------------------------------------------------------------

    async def create_consumer(self, stream: str, config: types_pb2.ConsumerConfig) -> types_pb2.ConsumerInfo:
        """Create the consumer on every node hosting the stream (first node validates)."""
        record = await self.record_of(stream)
        await self._first_then_rest(record, lambda client: client.create_consumer(stream, config))
        return await self.consumer_info(stream, config.name)

    async def delete_consumer(self, stream: str, name: str) -> None:
        """Delete the consumer on every node hosting the stream: the node leading partition 0
        first, then the others at once. Errors: NoSuchConsumerError when no node had it; the first
        other failure (UnavailableError: a node could not be reached) after every call finished.
        A delete retried after such a failure completes it: the nodes that deleted already answer
        NOT_FOUND, which counts as done while another node still had the consumer."""
        record = await self.record_of(stream)
        nodes = await self.nodes_by_id()
        hosting = self._hosting(record)
        first = self.internal_client(hosting[0], nodes)
        missing: NoSuchConsumerError | None = None
        try:
            await first.delete_consumer(stream, name)
        except NoSuchConsumerError as error:
            missing = error
        others = [self.internal_client(node_id, nodes) for node_id in hosting[1:]]
        results = await asyncio.gather(
            *(client.delete_consumer(stream, name) for client in others), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, NoSuchConsumerError):
                raise result
        if missing is not None and all(isinstance(result, NoSuchConsumerError) for result in results):
            raise missing
        with contextlib.suppress(RedisError):
            await self.store.redis.delete(self.store.keys.group(stream, name))

    async def consumer_info(self, stream: str, name: str) -> types_pb2.ConsumerInfo:
        """Per-partition state from each partition's primary, totals summed."""
        record = await self.record_of(stream)
        nodes = await self.nodes_by_id()
        led = _led_by(record)
        infos = await asyncio.gather(
            *(self.internal_client(node_id, nodes).consumer_info(stream, name) for node_id in led)
        )
        return merge_consumer_infos(infos, led)

    async def list_consumers(self, stream: str) -> list[types_pb2.ConsumerInfo]:
        record = await self.record_of(stream)
        nodes = await self.nodes_by_id()
        first = self.internal_client(self._hosting(record)[0], nodes)
        names = [info.config.name for info in await first.list_consumers(stream)]
        return [await self.consumer_info(stream, name) for name in names]

    # -- cluster views ---------------------------------------------------------------------------------

    async def cluster_info(self) -> router_pb2.GetClusterInfoResponse:
        controller_id, controller_address = await self.controller()
        response = router_pb2.GetClusterInfoResponse(
            controller_id=controller_id, controller_address=controller_address, router_id=self.settings.router_id
        )
        for view in await self.node_views():
            record = view.record
            response.nodes.add(
                node_id=record.node_id,
                client_address=record.client_address,
                internal_address=record.internal_address,
                metrics_address=record.metrics_address,
                zone=record.zone,
                capacity=record.capacity,
                alive=view.alive,
                registered_at_ms=record.registered_at_ms,
                last_heartbeat_ms=record.last_heartbeat_ms,
                scrub_passes=record.scrub_passes,
                scrub_last_pass_ms=record.scrub_last_pass_ms,
                corrupt_records=record.corrupt_records,
                integrity=record.integrity,
                rebuilding_partitions=[f"{stream}/{index}" for stream, index in record.rebuilding_partitions],
                number=record.number,
            )
        return response

    async def start_scrub(self) -> router_pb2.StartScrubResponse:
        """Ask every alive node to start a scrub pass now (in parallel); a node that does not answer
        or whose scrub is off is listed with the reason."""
        views = [view for view in await self.node_views() if view.alive]

        async def start(view: NodeView) -> router_pb2.NodeScrubStart:
            node_id = view.record.node_id
            try:
                answer = await self.nodes.replication(view.record.internal_address).start_scrub()
            except WeirError as error:
                return router_pb2.NodeScrubStart(node_id=node_id, error=str(error))
            reason = "" if answer.enabled else "its scrub is off (WEIR_NODE_SCRUB_BYTES_PER_SECOND=0)"
            return router_pb2.NodeScrubStart(
                node_id=node_id, started=answer.enabled, passes=answer.passes, error=reason
            )

        return router_pb2.StartScrubResponse(nodes=await asyncio.gather(*(start(view) for view in views)))

    async def cluster_stats(self, include_per_stream: bool) -> router_pb2.GetClusterStreamStatsResponse:
        """Fan out over the nodes: each node reports the partitions it leads (seed
        GetClusterStreamStats; skew = max - min over the nodes that answered)."""
        records = await self.store.streams()
        views = await self.node_views()
        nodes = {view.record.node_id: view for view in views}
        led_by_node: dict[str, dict[str, set[int]]] = {view.record.node_id: {} for view in views}
        for record in records:
            for node_id, partitions in _led_by(record).items():
                led_by_node.setdefault(node_id, {})[record.config.name] = partitions

        async def node_stats(node_id: str) -> dict[str, streams_pb2.GetStreamInfoResponse]:
            client = self.internal_client(node_id, nodes)
            names = sorted(led_by_node[node_id])
            infos = await asyncio.gather(*(client.stream_info(name) for name in names))
            return dict(zip(names, infos, strict=True))

        alive_ids = [view.record.node_id for view in views if view.alive]
        answers = await asyncio.gather(*(node_stats(node_id) for node_id in alive_ids), return_exceptions=True)
        by_node = dict(zip(alive_ids, answers, strict=True))
        response = router_pb2.GetClusterStreamStatsResponse(total_stream_count=len(records))
        partition_stats: dict[tuple[str, int], types_pb2.PartitionStats] = {}
        answered: list[router_pb2.PerNodeSummary] = []
        for view in views:
            node_id = view.record.node_id
            summary = response.nodes.add(node_id=node_id, address=view.record.client_address)
            led = led_by_node.get(node_id, {})
            summary.stream_count = len(led)
            summary.partition_count = sum(len(partitions) for partitions in led.values())
            answer = by_node.get(node_id)
            if not view.alive:
                summary.status = "dead"
                continue
            if isinstance(answer, BaseException) or answer is None:
                summary.status = "unreachable"
                logger.warning("cluster stats: node %s: %s", node_id, answer)
                continue
            summary.status = "ok"
            for name, info in answer.items():
                for stats in info.stats.partitions:
                    if stats.partition in led.get(name, ()):
                        partition_stats[(name, stats.partition)] = stats
                        summary.total_msg_count += stats.msg_count
                        summary.total_bytes += stats.bytes
            answered.append(summary)
        response.total_msg_count = sum(summary.total_msg_count for summary in answered)
        response.total_bytes = sum(summary.total_bytes for summary in answered)
        if answered:
            response.skew_partitions = _spread(summary.partition_count for summary in answered)
            response.skew_msg_count = _spread(summary.total_msg_count for summary in answered)
            response.skew_bytes = _spread(summary.total_bytes for summary in answered)
        if include_per_stream:
            for record in records:
                entry = response.streams.add(name=record.config.name, partitions=record.config.partitions)
                for placement in record.placement.partitions:
                    entry.primary_node_ids.append(placement.primary_node_id)
                    stats = partition_stats.get(
                        (record.config.name, placement.partition),
                        types_pb2.PartitionStats(partition=placement.partition),
                    )
                    entry.partition_stats.append(stats)
                    entry.msg_count += stats.msg_count
                    entry.bytes += stats.bytes
                    entry.last_seq = max(entry.last_seq, stats.last_seq)
        analytics = await self._latest_analytics(records, nodes)
        if analytics is not None:
            response.analytics.CopyFrom(analytics)
        return response

    async def _latest_analytics(
        self, records: Sequence[types_pb2.StreamRecord], nodes: dict[str, NodeView]
    ) -> types_pb2.ClusterAnalytics | None:
        """The latest ClusterAnalytics spark-analytics published to the stats stream (subject
        `stats`, partition 0), read from that partition's primary; None when there is no stats
        stream or message yet, or its primary does not answer (the rest of the stats still go out)."""
        name = self.settings.analytics_stream
        record = next((record for record in records if record.config.name == name), None)
        if record is None or not record.placement.partitions:
            return None
        try:
            client = self.internal_client(record.placement.partitions[0].primary_node_id, nodes)
            message = await client.latest_at_subject(name, STATS_SUBJECT, 0)
        except WeirError as error:
            logger.warning("cluster stats: stats stream %s: %s", name, error)
            return None
        if message is None:
            return None
        try:
            return types_pb2.ClusterAnalytics.FromString(message.payload)
        except DecodeError:
            logger.warning("cluster stats: stats stream %s seq %d is not a ClusterAnalytics", name, message.seq)
            return None


def _led_by(record: types_pb2.StreamRecord) -> dict[str, set[int]]:
    """node id -> partitions of the stream it leads."""
    led: dict[str, set[int]] = {}
    for entry in record.placement.partitions:
        led.setdefault(entry.primary_node_id, set()).add(entry.partition)
    return led


def merge_consumer_infos(infos: Sequence[types_pb2.ConsumerInfo], led: dict[str, set[int]]) -> types_pb2.ConsumerInfo:
    """One ConsumerInfo from the primaries' answers (pure): each partition's state from its
    primary, totals summed over those partitions only (a node's own totals would also count the
    copies it holds as a secondary)."""
    merged = types_pb2.ConsumerInfo()
    if not infos:
        return merged
    merged.stream = infos[0].stream
    merged.config.CopyFrom(infos[0].config)
    merged.created_at_ms = infos[0].created_at_ms
    partitions: list[types_pb2.ConsumerPartitionState] = []
    for info, partitions_led in zip(infos, led.values(), strict=True):
        partitions.extend(state for state in info.partitions if state.partition in partitions_led)
    merged.partitions.extend(sorted(partitions, key=lambda state: state.partition))
    return add_partition_totals(merged)


def _spread(values: Iterable[int]) -> int:
    items = list(values)
    return max(items) - min(items) if items else 0


async def _gather_first_error(calls: Sequence[Awaitable[T]]) -> list[T]:
    """Run all; raise the first failure after all finished (so rollback sees every success)."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]


def _refuse_if_deleting(record: types_pb2.StreamRecord) -> None:
    """Errors: BeingDeletedError when a delete of the stream started and did not finish."""
    if record.deleting:
        name = record.config.name
        raise BeingDeletedError(
            f"stream {name!r} is being deleted (an earlier delete did not reach every node); delete it again "
            "to finish, then create it",
            stream=name,
        )
