"""Consumer groups (a section of the router, made by RouterCore in core.py): QueryAssignment, GetGroupInfo and
LeaveGroup. A group's membership and partition owners live in one Redis key per (stream, group),
changed only inside a Redis transaction by the pure `assignment.step` (assignment.py): every
QueryAssignment is a member's heartbeat and returns its partitions' routes. A member's first call
creates the group's consumer on the stream if it does not exist yet.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from weir.errors import InvalidArgumentError, NoSuchConsumerError
from weir.subjects import validate_name
from weir.v1 import router_pb2, types_pb2

from weir_router import assignment, metrics
from weir_router.endpoints import check_endpoints
from weir_router.routing import Routing
from weir_router.settings import RouterSettings

MAX_CLIENT_ID_CHARS = 256


def check_client_id(client_id: str) -> None:
    """A group member's id: 1..256 characters. Errors: InvalidArgumentError."""
    if not client_id:
        raise InvalidArgumentError("client_id: required (unique per member process)")
    if len(client_id) > MAX_CLIENT_ID_CHARS:
        raise InvalidArgumentError(f"client_id: at most {MAX_CLIENT_ID_CHARS} characters, got {len(client_id)}")


class ConsumerGroups:
    """See the module docstring; `routing` gives the stream records and node routes,
    `consumer_info` and `create_consumer` (the stream admin's) the group's durable consumer."""

    def __init__(
        self,
        routing: Routing,
        settings: RouterSettings,
        *,
        consumer_info: Callable[[str, str], Awaitable[object]],
        create_consumer: Callable[[str, types_pb2.ConsumerConfig], Awaitable[object]],
    ) -> None:
        self._routing = routing
        self._settings = settings
        self._consumer_info = consumer_info
        self._create_consumer = create_consumer

    async def query_assignment(self, request: router_pb2.QueryAssignmentRequest) -> router_pb2.QueryAssignmentResponse:
        """One member's assignment (and heartbeat). Errors: InvalidArgumentError, NoSuchStreamError,
        and the node errors of creating the group's consumer."""
        check_endpoints(request.endpoints)
        if not request.group:
            raise InvalidArgumentError("group: a consumer group name is required")
        validate_name(request.group, "group")
        check_client_id(request.client_id)
        record = await self._routing.record_of(request.stream)
        partitions = record.config.partitions
        if len(request.owned_partitions) > partitions:
            raise InvalidArgumentError(
                f"owned_partitions: {len(request.owned_partitions)} listed, the stream has {partitions} partition(s)"
            )
        bad = [p for p in request.owned_partitions if p >= partitions]
        if bad:
            raise InvalidArgumentError(f"owned_partitions: {bad} out of range (the stream has {partitions})")
        current = assignment.GroupState.from_json(
            await self._routing.store.redis.get(self._routing.store.keys.group(request.stream, request.group))
        )
        if request.client_id not in current.members:
            await self._ensure_group_consumer(record, request.group, request.consumer)

        def update(raw: bytes | None, now_ms: int) -> tuple[str, tuple[assignment.MemberView, bool]]:
            state = assignment.GroupState.from_json(raw)
            new_state, view = assignment.step(
                state,
                partitions=partitions,
                client_id=request.client_id,
                owned_partitions=request.owned_partitions,
                now_ms=now_ms,
                session_timeout_ms=self._settings.group_session_timeout_ms,
            )
            return new_state.to_json(), (view, new_state.generation != state.generation)

        view, changed = await self._routing.store.update_group(request.stream, request.group, update)
        if changed:
            metrics.GROUP_REBALANCES.labels(request.stream, request.group).inc()
        nodes = await self._routing.nodes_by_id()
        response = router_pb2.QueryAssignmentResponse(
            generation=view.generation, members=view.members, awaiting_partitions=view.awaiting
        )
        listener = self._routing.listener(request.endpoints)
        for partition in view.assigned:
            response.assignments.add(route=self._routing.route(record.placement.partitions[partition], nodes, listener))
        return response

    async def _ensure_group_consumer(
        self, record: types_pb2.StreamRecord, group: str, config: types_pb2.ConsumerConfig
    ) -> None:
        try:
            await self._consumer_info(record.config.name, group)
            return
        except NoSuchConsumerError:
            pass
        wanted = types_pb2.ConsumerConfig()
        wanted.CopyFrom(config)
        wanted.name = group
        await self._create_consumer(record.config.name, wanted)

    async def group_info(self, stream: str, group: str) -> router_pb2.GetGroupInfoResponse:
        """The group's live members (heartbeat within the session timeout) and their partitions.
        Errors: InvalidArgumentError / InvalidNameError, NoSuchStreamError."""
        if not group:
            raise InvalidArgumentError("group: a consumer group name is required")
        validate_name(group, "group")
        await self._routing.record_of(stream)
        state = assignment.GroupState.from_json(
            await self._routing.store.redis.get(self._routing.store.keys.group(stream, group))
        )
        live_after = await self._routing.store.now_ms() - self._settings.group_session_timeout_ms
        response = router_pb2.GetGroupInfoResponse(generation=state.generation)
        for client_id, heartbeat_ms in sorted(state.members.items()):
            if heartbeat_ms < live_after:
                continue
            held = sorted(partition for partition, owner in state.owners.items() if owner == client_id)
            response.members.add(client_id=client_id, last_heartbeat_ms=heartbeat_ms, partitions=held)
        return response

    async def leave_group(self, stream: str, group: str, client_id: str) -> None:
        """Remove `client_id` from the group at once (its partitions are reassigned). Errors:
        InvalidArgumentError / InvalidNameError (names as QueryAssignment checks them),
        NoSuchStreamError."""
        if not group:
            raise InvalidArgumentError("group: a consumer group name is required")
        validate_name(group, "group")
        check_client_id(client_id)
        record = await self._routing.record_of(stream)

        def update(raw: bytes | None, now_ms: int) -> tuple[str, None]:
            new_state, _ = assignment.step(
                assignment.GroupState.from_json(raw),
                partitions=record.config.partitions,
                client_id=client_id,
                owned_partitions=(),
                now_ms=now_ms,
                session_timeout_ms=self._settings.group_session_timeout_ms,
                leaving=True,
            )
            return new_state.to_json(), None

        await self._routing.store.update_group(stream, group, update)
        metrics.GROUP_REBALANCES.labels(stream, group).inc()
