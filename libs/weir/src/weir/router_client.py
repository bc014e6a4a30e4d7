"""weir.v1.Router from the SDK: `RouterClient` (a set of routers, moving on to the next while one is
unreachable) and `RouterAdmin`, the routes and the stream, consumer and cluster admin calls of
`weir.cluster.Client` (each one Router call, with the client's retries; streams.proto and router.proto
give the shapes). They answer in the SDK's dataclasses (weir.info, weir.cluster_info); only the
client's own routing reads the protobuf route (`_route`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import grpc

from weir import tls as tls_module
from weir.client import CHANNEL_OPTIONS, DEFAULT_TIMEOUT_S, endpoints_of, typed_stream
from weir.cluster_info import ClusterInfo, ClusterStats, GroupInfo, MoveProgress, RebalancePlan, Route, ScrubStart
from weir.errors import InvalidArgumentError, TlsHandshakeError, UnavailableError, WeirError, describe_tls_failure
from weir.info import ConsumerConfig, ConsumerInfo, StreamConfig, StreamInfo, StreamUpdate
from weir.v1 import router_pb2, router_pb2_grpc, streams_pb2

NO_ROUTER_HINT = (
    "is the cluster running? ('weir cluster up' starts one; $WEIR_ROUTERS or Client(\"host:port\") names another)"
)


def router_addresses(routers: str | Sequence[str]) -> list[str]:
    """Router addresses from "host:port", "host:port,host:port" or a list of "host:port".
    Errors: InvalidArgumentError naming the address that is not host:port."""
    items = routers.split(",") if isinstance(routers, str) else list(routers)
    addresses = [item.strip() for item in items if item.strip()]
    if not addresses:
        raise InvalidArgumentError("give at least one router address (host:port)")
    for address in addresses:
        host, colon, port = address.rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise InvalidArgumentError(f"router address {address!r} is not host:port (port 1-65535)")
    return addresses


class RouterClient:
    """weir.v1.Router on a set of routers: a call goes to the current router and moves on to the
    next one when that router is unreachable."""

    def __init__(
        self,
        addresses: str | Sequence[str],
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        tls: tls_module.Security = tls_module.PROCESS_DEFAULT,
        found_from: str = "the addresses given",
    ) -> None:
        self.addresses = router_addresses(addresses)
        self.found_from = found_from
        self.timeout_s = timeout_s
        self.tls = tls
        self._index = 0
        self._channels: dict[str, grpc.aio.Channel] = {}

    @property
    def address(self) -> str:
        return self.addresses[self._index % len(self.addresses)]

    def _stub(self) -> router_pb2_grpc.RouterStub:
        address = self.address
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = tls_module.aio_channel(address, CHANNEL_OPTIONS, self.tls)
        return router_pb2_grpc.RouterStub(channel)

    async def call(self, method: str, request: Any, timeout_s: float | None = None) -> Any:
        """One call, tried on each router in turn while they are unreachable. Errors: the call's
        typed error; UnavailableError naming every address and where they came from when none
        answered (TlsHandshakeError, not retried, when the TLS handshake failed)."""
        last: WeirError | None = None
        for _ in range(len(self.addresses)):
            stub = self._stub()
            try:
                return await getattr(stub, method)(request, timeout=timeout_s or self.timeout_s)
            except grpc.aio.AioRpcError as raw:
                error = WeirError.from_rpc_error(raw)
                if not isinstance(error, UnavailableError):
                    raise error from None
                last = error
                self._index += 1  # that router is gone or restarting: try the next
        assert last is not None
        raise self._unanswered(last)

    def _unanswered(self, last: WeirError) -> WeirError:
        """`last` (the error of the last router tried) as the error of the whole set: which
        routers, found where, and what to do."""
        where = f"no router answered at {','.join(self.addresses)} (from {self.found_from})"
        if isinstance(last, TlsHandshakeError):
            return TlsHandshakeError(f"{where}: {last.message}")
        plaintext = tls_module.resolve(self.tls) is None
        hint = describe_tls_failure(last.message, secured=False) if plaintext else None
        return UnavailableError(f"{where}: {last.message}; {hint or NO_ROUTER_HINT}")

    def stream(self, method: str, request: Any) -> AsyncIterator[Any]:
        """The items of a server-streaming call on the current router (no retry: a long call such
        as MovePartition is the caller's to run again); failures raise typed errors."""
        return typed_stream(getattr(self._stub(), method), request)

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()


class RouterAdmin:
    """The admin calls `Client` makes through the router, and its routes. A client gives `router`,
    its route cache `_routes` (a create or delete forgets the stream's route), `_route_views` (each
    cached route as a weir.Route, made once) and `_router_call` (one call with its retries)."""

    router: RouterClient
    _routes: dict[str, router_pb2.QueryRouteResponse]
    _route_views: dict[str, tuple[router_pb2.QueryRouteResponse, Route]]

    async def _router_call(self, method: str, request: Any, timeout_s: float | None = None) -> Any:
        raise NotImplementedError

    async def _route(self, stream: str, *, refresh: bool = False) -> router_pb2.QueryRouteResponse:
        """The stream's route as the router sent it (cached; `refresh` asks the router again): the
        client's own routing reads it. Errors: NoSuchStreamError."""
        if not refresh:
            cached = self._routes.get(stream)
            if cached is not None:
                return cached
        request = router_pb2.QueryRouteRequest(stream=stream, endpoints=endpoints_of(self.router.address))
        route: router_pb2.QueryRouteResponse = await self._router_call("QueryRoute", request)
        self._routes[stream] = route
        return route

    async def route(self, stream: str, *, refresh: bool = False) -> Route:
        """The stream's route (weir.Route: its config and each partition's primary, secondaries,
        leader epoch and permission; cached, `refresh` asks the router again). Errors:
        NoSuchStreamError."""
        proto = await self._route(stream, refresh=refresh)
        view = self._route_views.get(stream)
        if view is None or view[0] is not proto:
            view = self._route_views[stream] = (proto, Route.from_proto(proto))
        return view[1]

    async def create_stream(self, config: StreamConfig) -> StreamConfig:
        """Place and create a stream (`weir.stream_config(...)`; idempotent for the same config);
        returns the effective config (defaults filled in). Errors: AlreadyExistsError (another
        config), InvalidConfigError, NotEnoughNodesError, PermissionDeniedError."""
        response = await self._router_call("CreateStream", streams_pb2.CreateStreamRequest(config=config.to_proto()))
        self._routes.pop(config.name, None)
        return StreamConfig.from_proto(response.config)

    async def delete_stream(self, name: str) -> None:
        """Delete a stream, every partition's messages and its consumers. Errors: NoSuchStreamError,
        PermissionDeniedError."""
        await self._router_call("DeleteStream", streams_pb2.DeleteStreamRequest(name=name))
        self._routes.pop(name, None)

    async def update_stream(
        self,
        name: str,
        *,
        max_age_ms: int | None = None,
        max_msgs: int | None = None,
        max_bytes: int | None = None,
        max_msgs_per_subject: int | None = None,
        max_msg_bytes: int | None = None,
        duplicate_window_ms: int | None = None,
        duplicate_window_max_msgs: int | None = None,
    ) -> StreamUpdate:
        """Change a stream's mutable settings (streams.proto UpdateStreamRequest); None leaves one
        as it is. The bounds `max_age_ms` (ms), `max_msgs`, `max_bytes` and `max_msgs_per_subject`
        (per partition): 0 clears the bound (no bound); lowering one prunes at once.
        `max_msg_bytes` (bytes; 0 = the node's maximum), `duplicate_window_ms` (ms) and
        `duplicate_window_max_msgs`: 0 = back to the default. Returns the effective config and how
        many messages were pruned (weir.StreamUpdate). Errors: NoSuchStreamError,
        InvalidConfigError, PermissionDeniedError."""
        changes = {
            "max_age_ms": max_age_ms,
            "max_msgs": max_msgs,
            "max_bytes": max_bytes,
            "max_msgs_per_subject": max_msgs_per_subject,
            "max_msg_bytes": max_msg_bytes,
            "duplicate_window_ms": duplicate_window_ms,
            "duplicate_window_max_msgs": duplicate_window_max_msgs,
        }
        request = streams_pb2.UpdateStreamRequest(
            name=name, **{field: value for field, value in changes.items() if value is not None}
        )
        return StreamUpdate.from_proto(await self._router_call("UpdateStream", request))

    async def stream_info(self, name: str) -> StreamInfo:
        """The stream's effective config, totals, each partition's stats (first/last seq,
        msg_count, bytes, in-sync replicas), its sources' status, placement and pinned partitions
        (weir.StreamInfo). Errors: NoSuchStreamError."""
        response = await self._router_call("GetStreamInfo", streams_pb2.GetStreamInfoRequest(name=name))
        return StreamInfo.from_proto(response)

    async def list_streams(self) -> list[str]:
        """The names of the cluster's streams, sorted (any known caller may list them, with an auth
        file too)."""
        response = await self._router_call("ListStreams", streams_pb2.ListStreamsRequest())
        return list(response.names)

    async def create_consumer(self, stream: str, config: ConsumerConfig) -> ConsumerInfo:
        """Create a durable consumer on every partition (`weir.consumer_config(...)`; idempotent for
        the same config); returns its weir.ConsumerInfo. Errors: NoSuchStreamError,
        AlreadyExistsError (another config), InvalidConfigError."""
        request = streams_pb2.CreateConsumerRequest(stream=stream, config=config.to_proto())
        return ConsumerInfo.from_proto((await self._router_call("CreateConsumer", request)).info)

    async def delete_consumer(self, stream: str, consumer: str) -> None:
        """Delete a consumer and its state on every partition. Errors: NoSuchStreamError, NoSuchConsumerError."""
        request = streams_pb2.DeleteConsumerRequest(stream=stream, consumer=consumer)
        await self._router_call("DeleteConsumer", request)

    async def consumer_info(self, stream: str, consumer: str) -> ConsumerInfo:
        """A consumer's config, totals and, per partition, ack floor, last delivered and pending
        counts (weir.ConsumerInfo). Errors: NoSuchStreamError, NoSuchConsumerError."""
        request = streams_pb2.GetConsumerInfoRequest(stream=stream, consumer=consumer)
        return ConsumerInfo.from_proto((await self._router_call("GetConsumerInfo", request)).info)

    async def list_consumers(self, stream: str) -> list[ConsumerInfo]:
        """Every consumer of `stream`, sorted by name (weir.ConsumerInfo each). Errors: NoSuchStreamError."""
        response = await self._router_call("ListConsumers", streams_pb2.ListConsumersRequest(stream=stream))
        return [ConsumerInfo.from_proto(info) for info in response.consumers]

    async def cluster_stats(self, include_per_stream: bool = True) -> ClusterStats:
        """Cluster-wide figures (weir.ClusterStats: per node, per stream with `include_per_stream`,
        totals, skew, and the analytics job's latest figures when it runs)."""
        request = router_pb2.GetClusterStreamStatsRequest(include_per_stream=include_per_stream)
        return ClusterStats.from_proto(await self._router_call("GetClusterStreamStats", request))

    async def group_info(self, stream: str, group: str) -> GroupInfo:
        """A consumer group's generation, live members and the partitions each holds (weir.GroupInfo).
        Errors: NoSuchStreamError, InvalidNameError."""
        request = router_pb2.GetGroupInfoRequest(stream=stream, group=group)
        return GroupInfo.from_proto(await self._router_call("GetGroupInfo", request))

    async def cluster_info(self) -> ClusterInfo:
        """The cluster's nodes (id, addresses, alive, scrub passes, ...) and the controller router's
        id (weir.ClusterInfo)."""
        return ClusterInfo.from_proto(await self._router_call("GetClusterInfo", router_pb2.GetClusterInfoRequest()))

    async def move_partition(
        self, stream: str, partition: int, from_node_id: str, to_node_id: str, *, catch_up_timeout_ms: int = 0
    ) -> AsyncIterator[MoveProgress]:
        """Move a partition's copy from one node to another while it serves (Router.MovePartition):
        yields each step's weir.MoveProgress (add_copy, catch_up every second, hand_over,
        remove_copy, done). `catch_up_timeout_ms`: how long the new copy may take to catch up (ms;
        0 = 600 000). Errors (raised as it iterates): InvalidArgumentError, NoSuchStreamError,
        FailedPreconditionError (pinned, no copy there, target down or already holding one, the
        placement changed meanwhile: run it again), UnavailableError, PermissionDeniedError."""
        request = router_pb2.MovePartitionRequest(
            stream=stream,
            partition=partition,
            from_node_id=from_node_id,
            to_node_id=to_node_id,
            catch_up_timeout_ms=catch_up_timeout_ms,
        )
        async for item in self.router.stream("MovePartition", request):
            yield MoveProgress.from_proto(item)

    async def plan_rebalance(self, max_moves: int = 0) -> RebalancePlan:
        """Router.PlanRebalance: the moves (at most `max_moves`; 0 = 100) that even out copies and
        primaries over the alive nodes (nothing is moved; run each with `move_partition`), and each
        node's share before and after (weir.RebalancePlan)."""
        request = router_pb2.PlanRebalanceRequest(max_moves=max_moves)
        return RebalancePlan.from_proto(await self._router_call("PlanRebalance", request))

    async def set_partition_pinned(self, stream: str, partition: int, pinned: bool) -> list[int]:
        """Pin (or unpin) a partition: no move and no preferred-leader rebalance touches a pinned
        one. Returns the stream's pinned partitions. Errors: NoSuchStreamError, InvalidArgumentError."""
        request = router_pb2.SetPartitionPinnedRequest(stream=stream, partition=partition, pinned=pinned)
        response = await self._router_call("SetPartitionPinned", request)
        return list(response.pinned_partitions)

    async def start_scrub(self) -> ScrubStart:
        """Start a scrub pass on every alive node now (Router.StartScrub); returns whether each node
        started one and its passes so far (weir.ScrubStart). `cluster_info()` shows each node's
        scrub_passes grow by one when its pass ends. Errors: PermissionDeniedError without admin on
        every stream (with an auth file)."""
        return ScrubStart.from_proto(await self._router_call("StartScrub", router_pb2.StartScrubRequest()))
