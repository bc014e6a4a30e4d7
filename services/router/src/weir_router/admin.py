"""Stream and consumer admin (a section of the router, made by RouterCore in core.py): calls forwarded to the
nodes' internal ports, whose answers keep their typed errors. A create is validated by the first
node before any other node is touched, and rolled back on the nodes already created when a later
node fails, so a failed request leaves no state. Stream changes run on the controller only, under
the admin lock (the leader rebalancer takes it too); reads merge each partition's primary's
answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from redis.exceptions import RedisError
from weir.client import NodeClient
from weir.errors import AlreadyExistsError, BeingDeletedError, NoSuchConsumerError, NoSuchStreamError, WeirError
from weir.v1 import streams_pb2, types_pb2
from weir_server.consumer_info import add_partition_totals
from weir_server.streamconfig import MAX_MESSAGE_BYTES, normalize_config

from weir_router.placement import loads_from, place_stream
from weir_router.routing import NodeView, Routing

logger = logging.getLogger(__name__)
T = TypeVar("T")


class StreamAdmin:
    """CreateStream, DeleteStream, UpdateStream, GetStreamInfo, ListStreams and the consumer calls
    over the nodes hosting a stream; `routing` gives the records and node clients, `admin_lock`
    (RouterCore's) keeps stream changes and leader rebalancing one at a time."""

    def __init__(self, routing: Routing, admin_lock: asyncio.Lock) -> None:
        self._routing = routing
        self._admin_lock = admin_lock

    async def _first_then_rest(
        self, record: types_pb2.StreamRecord, call: Callable[[NodeClient], Awaitable[T]]
    ) -> list[T]:
        """`call` on the node leading partition 0 first (it validates, so a bad request reaches no
        other node), then on every other node hosting the stream at once; results in that order.
        A later failure is raised after all calls finished."""
        nodes = await self._routing.nodes_by_id()
        hosting = self._routing.hosting(record)
        first = await call(self._routing.internal_client(hosting[0], nodes))
        rest = await _gather_first_error(
            [call(self._routing.internal_client(node_id, nodes)) for node_id in hosting[1:]]
        )
        return [first, *rest]

    async def create_stream(self, config: types_pb2.StreamConfig) -> streams_pb2.CreateStreamResponse:
        """Place and create a stream (controller only). Idempotent for the same config. Errors:
        InvalidConfigError / InvalidNameError / InvalidSubjectError (checked here before anything is
        placed, and again by the nodes, which also know their message size bound),
        AlreadyExistsError, NotEnoughNodesError, UnavailableError."""
        normalize_config(config, MAX_MESSAGE_BYTES, clustered=True)  # bounded work before any placement
        async with self._admin_lock:
            nodes = await self._routing.nodes_by_id()
            existing = await self._routing.store.stream(config.name)
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
                first = self._routing.internal_client(self._routing.hosting(existing)[0], nodes)
                effective = await first.create_stream(config, existing.placement)
                return streams_pb2.CreateStreamResponse(config=effective, created_at_ms=existing.created_at_ms)
            alive = [view for view in nodes.values() if view.alive]
            records = await self._routing.store.streams()
            loads = loads_from(
                [view.record.node_id for view in alive],
                {view.record.node_id: view.record.capacity for view in alive},
                (record.placement for record in records),
            )
            placement = place_stream(config.partitions or 1, config.replicas or 1, loads)
            record = types_pb2.StreamRecord(placement=placement)
            record.config.CopyFrom(config)
            hosting = self._routing.hosting(record)
            created: list[NodeClient] = []
            try:
                first = self._routing.internal_client(hosting[0], nodes)
                effective = await first.create_stream(config, placement)  # validates before anything else
                created.append(first)
                others = [self._routing.internal_client(node_id, nodes) for node_id in hosting[1:]]

                async def create_on(client: NodeClient) -> None:
                    await client.create_stream(config, placement)
                    created.append(client)

                await _gather_first_error([create_on(client) for client in others])
                record.config.CopyFrom(effective)
                record.created_at_ms = await self._routing.store.now_ms()
                await self._routing.store.put_stream(record)
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
            record = await self._routing.record_of(name)
            if not await self._routing.store.mark_deleting(name):  # the nodes delete only on this word
                raise NoSuchStreamError(f"stream {name!r} does not exist", stream=name)
            nodes = await self._routing.nodes_by_id()
            for node_id in self._routing.hosting(record):
                try:
                    client = self._routing.internal_client(node_id, nodes)
                    await client.delete_stream(name)
                except NoSuchStreamError:
                    pass
                except WeirError as error:
                    if not error.retryable:
                        raise
                    logger.warning(
                        "stream %s: node %s unreachable during delete (%s); its copy remains", name, node_id, error
                    )
            await self._routing.store.delete_stream(name)

    async def update_stream(self, request: streams_pb2.UpdateStreamRequest) -> streams_pb2.UpdateStreamResponse:
        """Apply a partial update on every node hosting the stream (controller only); `pruned`
        sums the removals of every node hosting it (secondaries hold no data until replication
        arrives; then each copy's removals are counted)."""
        async with self._admin_lock:
            record = await self._routing.record_of(request.name)
            _refuse_if_deleting(record)
            results = await self._first_then_rest(record, lambda client: client.update_stream(request))
            response = results[0]
            pruned = sum(result.pruned for result in results)
            record.config.CopyFrom(response.config)
            await self._routing.store.put_stream(record)
            return streams_pb2.UpdateStreamResponse(config=response.config, pruned=pruned)

    async def stream_info(self, name: str) -> streams_pb2.GetStreamInfoResponse:
        """Stats merged from each partition's primary (a partition whose primary is unreachable
        is left out of the totals and listed without figures); a sourcing stream's sources_status
        from its primary."""
        record = await self._routing.record_of(name)
        nodes = await self._routing.nodes_by_id()
        led = led_by(record)
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
        client = self._routing.internal_client(node_id, nodes)
        return await client.stream_info(name)

    async def list_streams(self) -> list[str]:
        return await self._routing.store.stream_names()

    # -- consumer admin ------------------------------------------------------------------------------

    async def create_consumer(self, stream: str, config: types_pb2.ConsumerConfig) -> types_pb2.ConsumerInfo:
        """Create the consumer on every node hosting the stream (first node validates)."""
        record = await self._routing.record_of(stream)
        await self._first_then_rest(record, lambda client: client.create_consumer(stream, config))
        return await self.consumer_info(stream, config.name)

    async def delete_consumer(self, stream: str, name: str) -> None:
        """Delete the consumer on every node hosting the stream: the node leading partition 0
        first, then the others at once. Errors: NoSuchConsumerError when no node had it; the first
        other failure (UnavailableError: a node could not be reached) after every call finished.
        A delete retried after such a failure completes it: the nodes that deleted already answer
        NOT_FOUND, which counts as done while another node still had the consumer."""
        record = await self._routing.record_of(stream)
        nodes = await self._routing.nodes_by_id()
        hosting = self._routing.hosting(record)
        first = self._routing.internal_client(hosting[0], nodes)
        missing: NoSuchConsumerError | None = None
        try:
            await first.delete_consumer(stream, name)
        except NoSuchConsumerError as error:
            missing = error
        others = [self._routing.internal_client(node_id, nodes) for node_id in hosting[1:]]
        results = await asyncio.gather(
            *(client.delete_consumer(stream, name) for client in others), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, NoSuchConsumerError):
                raise result
        if missing is not None and all(isinstance(result, NoSuchConsumerError) for result in results):
            raise missing
        with contextlib.suppress(RedisError):
            await self._routing.store.redis.delete(self._routing.store.keys.group(stream, name))

    async def consumer_info(self, stream: str, name: str) -> types_pb2.ConsumerInfo:
        """Per-partition state from each partition's primary, totals summed."""
        record = await self._routing.record_of(stream)
        nodes = await self._routing.nodes_by_id()
        led = led_by(record)
        infos = await asyncio.gather(
            *(self._routing.internal_client(node_id, nodes).consumer_info(stream, name) for node_id in led)
        )
        return merge_consumer_infos(infos, led)

    async def list_consumers(self, stream: str) -> list[types_pb2.ConsumerInfo]:
        record = await self._routing.record_of(stream)
        nodes = await self._routing.nodes_by_id()
        first = self._routing.internal_client(self._routing.hosting(record)[0], nodes)
        names = [info.config.name for info in await first.list_consumers(stream)]
        return [await self.consumer_info(stream, name) for name in names]


def led_by(record: types_pb2.StreamRecord) -> dict[str, set[int]]:
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
