"""The seed's WatchStreams through the gateway: every alive node's lifecycle watch (weir.v1
WatchStreams), merged, each event tagged with its node's number, as the seed's per-node watches are
("a cluster-wide watch can be built on top via a fan-out client": the gateway is that client; a
replicated stream's events come once per node holding it, told apart by node_id, as the seed says).

A watcher that reads slower than events arrive loses the oldest ones once WATCH_BUFFER_EVENTS wait,
and the next event it gets carries `lagged_count`, how many it missed (the seed's broadcast-buffer
semantics: re-list to catch up; the watch goes on). A new primary of a stream's partition 0 is the
seed's WATCH_STREAM_AUTHORITY_CHANGED (`event_to_seed`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any, Generic, TypeVar

from weir import Client
from weir.errors import WeirError
from weir.v1 import streams_pb2

from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2 as seed

logger = logging.getLogger(__name__)
WATCH_BUFFER_EVENTS = 1024
Item = TypeVar("Item")

EVENT_TYPES = {
    streams_pb2.WATCH_EVENT_TYPE_STREAM_CREATED: seed.WATCH_STREAM_CREATED,
    streams_pb2.WATCH_EVENT_TYPE_STREAM_DELETED: seed.WATCH_STREAM_DELETED,
    streams_pb2.WATCH_EVENT_TYPE_STREAM_UPDATED: seed.WATCH_STREAM_UPDATED,
    streams_pb2.WATCH_EVENT_TYPE_CONSUMER_CREATED: seed.WATCH_CONSUMER_CREATED,
    streams_pb2.WATCH_EVENT_TYPE_CONSUMER_DELETED: seed.WATCH_CONSUMER_DELETED,
}


class LaggingBuffer(Generic[Item]):
    """A bounded buffer that drops its oldest item when full and counts what it dropped; `take`
    returns the next item with the count dropped since the last take."""

    def __init__(self, capacity: int) -> None:
        self._items: deque[Item] = deque()
        self._capacity = capacity
        self._lagged = 0
        self._ready = asyncio.Event()

    def offer(self, item: Item) -> None:
        if len(self._items) >= self._capacity:
            self._items.popleft()
            self._lagged += 1
        self._items.append(item)
        self._ready.set()

    async def take(self) -> tuple[Item, int]:
        while not self._items:
            self._ready.clear()
            await self._ready.wait()
        lagged, self._lagged = self._lagged, 0
        return self._items.popleft(), lagged


def event_to_seed(event: streams_pb2.WatchEvent, numbers: Mapping[str, int], lagged: int) -> seed.WatchEvent | None:
    """The seed's event for a node's (None: one the seed has no word for, a leader change of a
    partition other than 0). A new primary of partition 0 is an authority change: an override
    (claimant = the primary, fence_epoch = its epoch) when it is not the preferred leader, a clear
    (claimant 0, epoch 0) when it is."""
    node_number = numbers.get(event.node_id, 0)
    if event.type == streams_pb2.WATCH_EVENT_TYPE_LEADER_CHANGED:
        if event.partition != 0:
            return None
        made = seed.WatchEvent(
            type=seed.WATCH_STREAM_AUTHORITY_CHANGED, ts_ms=event.ts_ms, node_id=node_number, lagged_count=lagged
        )
        made.authority.stream = event.stream
        if event.node_id != event.preferred_leader_node_id:
            made.authority.claimant_node_id, made.authority.fence_epoch = node_number, event.leader_epoch
        return made
    made = seed.WatchEvent(
        type=EVENT_TYPES.get(event.type, seed.WATCH_UNKNOWN),
        ts_ms=event.ts_ms,
        node_id=node_number,
        lagged_count=lagged,
    )
    if event.consumer:
        made.consumer.stream, made.consumer.consumer = event.stream, event.consumer
    else:
        made.stream.name = event.stream
    return made


async def watch_cluster(client: Client, capacity: int = WATCH_BUFFER_EVENTS) -> AsyncIterator[seed.WatchEvent]:
    """The merged watch of the nodes alive when it starts (until the caller stops iterating)."""
    info = await client.cluster_info()
    numbers = {node.node_id: node.number for node in info.nodes}
    buffer: LaggingBuffer[streams_pb2.WatchEvent] = LaggingBuffer(capacity)

    async def pump(node_id: str, address: str) -> None:
        try:
            async for event in client.node(address).watch_streams():
                buffer.offer(event)
        except WeirError as error:  # that node went away: the others go on
            logger.warning("WatchStreams: node %s stopped answering: %s", node_id, error)

    pumps: list[asyncio.Task[Any]] = [
        asyncio.get_running_loop().create_task(pump(node.node_id, node.client_address))
        for node in info.nodes
        if node.alive and node.client_address
    ]
    lagged = 0
    try:
        while True:
            event, missed = await buffer.take()
            lagged += missed
            made = event_to_seed(event, numbers, lagged)
            if made is not None:
                lagged = 0
                yield made
    finally:
        for task in pumps:
            task.cancel()
        for task in pumps:
            with contextlib.suppress(asyncio.CancelledError):
                await task
