"""Push delivery on a partition node (Node's `node.subscriptions`): Subscribe binds to a durable
consumer and yields its deliveries as they become deliverable, across the partitions this node
leads, until the caller stops, the consumer or stream is deleted, or the node shuts down.

Each push is a fetch through the partition's commit loop (partition_consumer_ops), so a pushed
message is recorded as delivered (pending) before it is sent, exactly as a fetched one; between
fetches the subscription waits for the next commit that could give it something, or for the next
redelivery due. Binding follows `bind_refusal`.

Source: weir.v1 Streams' Subscribe and the streams seed's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING

from weir.errors import ConsumerBoundError, InvalidArgumentError, NoSuchConsumerError, ShuttingDownError
from weir.v1 import types_pb2

from weir_partition_node.clock import Clock
from weir_partition_node.commit_items import Delivery
from weir_partition_node.consumers import Consumer
from weir_partition_node.feed_reads import TAIL_IDLE_WAKE_S
from weir_partition_node.node_consumers import MAX_FETCH_BATCH, wait_s
from weir_partition_node.node_reads import DEFAULT_READ_BYTES
from weir_partition_node.partition import Partition

if TYPE_CHECKING:
    from weir_partition_node.hosted import Stream

DEFAULT_SUBSCRIBE_BATCH = 16  # seed default


class NodeSubscriptions:
    """The node's push subscriptions. Of the node it takes `stream(name)` and `partition(name,
    index)` (errors: NoSuchStreamError, NoSuchPartitionError, NotLeaderError), `consumer(stream,
    name)` (NoSuchConsumerError), `check_open()` (ShuttingDownError) and `closing()`."""

    def __init__(
        self,
        *,
        stream: Callable[[str], Stream],
        partition: Callable[[str, int], Partition],
        consumer: Callable[[Stream, str], Consumer],
        check_open: Callable[[], None],
        closing: Callable[[], bool],
        clock: Clock,
    ) -> None:
        self._stream = stream
        self._partition = partition
        self._consumer = consumer
        self._check_open = check_open
        self._closing = closing
        self._clock = clock

    async def subscribe(
        self,
        stream_name: str,
        name: str,
        *,
        partitions: Sequence[int] = (),
        batch_size: int = 0,
        stop_when_empty: bool = False,
        deliver_group: str = "",
    ) -> AsyncIterator[tuple[int, Delivery] | str]:
        """`subscribe_batches`, one (partition, delivery) item per message."""
        batches = self.subscribe_batches(
            stream_name,
            name,
            partitions=partitions,
            batch_size=batch_size,
            stop_when_empty=stop_when_empty,
            deliver_group=deliver_group,
        )
        async with contextlib.aclosing(batches):  # unbind at once when the caller stops
            async for item in batches:
                if isinstance(item, str):
                    yield item
                    continue
                for delivery in item:
                    yield delivery.partition, delivery

    async def subscribe_batches(
        self,
        stream_name: str,
        name: str,
        *,
        partitions: Sequence[int] = (),
        batch_size: int = 0,
        stop_when_empty: bool = False,
        deliver_group: str = "",
    ) -> AsyncGenerator[list[Delivery] | str, None]:
        """Push delivery: yields the deliveries of each server-side fetch as messages become
        deliverable, then a stop reason ("empty" | "consumer_deleted" | "stream_deleted" |
        "shutting_down") when it ends.
        Errors (before the first item): those of `fetch`, ConsumerBoundError."""
        self._check_open()
        stream = self._stream(stream_name)
        consumer = self._consumer(stream, name)
        if batch_size > MAX_FETCH_BATCH:
            raise InvalidArgumentError(f"batch_size: at most {MAX_FETCH_BATCH}, got {batch_size}")
        indexes = sorted(set(partitions)) or sorted(stream.led_set)
        if not indexes:
            raise stream.not_leader(0)
        chosen = [self._partition(stream_name, index) for index in indexes]
        refusal = bind_refusal(consumer.config, consumer.subscribers, deliver_group, stream_name)
        if refusal is not None:
            raise refusal
        consumer.subscribers += 1
        try:
            async for item in self._push(
                stream, consumer, chosen, batch_size or DEFAULT_SUBSCRIBE_BATCH, stop_when_empty
            ):
                yield item
        finally:
            consumer.subscribers -= 1

    async def _push(
        self, stream: Stream, consumer: Consumer, partitions: list[Partition], batch_size: int, stop_when_empty: bool
    ) -> AsyncIterator[list[Delivery] | str]:
        name = consumer.config.name
        while True:
            if self._closing():
                yield "shutting_down"
                return
            if stream.deleted:
                yield "stream_deleted"
                return
            if consumer.deleted:
                yield "consumer_deleted"
                return
            delivered = False
            for partition in partitions:
                try:
                    deliveries = await partition.consumer_ops.fetch_ready(
                        name, self._clock.now_ms(), batch_size, DEFAULT_READ_BYTES
                    )
                except (NoSuchConsumerError, ShuttingDownError):
                    continue  # deleted or closing: the checks above end the stream
                if deliveries:
                    delivered = True
                    yield deliveries
            if delivered:
                continue
            if stop_when_empty:
                yield "empty"
                return
            await self._wait_any(partitions, name)

    async def _wait_any(self, partitions: list[Partition], name: str) -> None:
        """Until the next commit of any of `partitions` that could give `name` something, or its
        next redelivery there is due, at most TAIL_IDLE_WAKE_S."""
        now_ms = self._clock.now_ms()
        if len(partitions) == 1:
            await partitions[0].wait_for_work(wait_s(partitions[0], name, TAIL_IDLE_WAKE_S, now_ms))
            return
        waits = [
            asyncio.ensure_future(partition.wait_for_work(wait_s(partition, name, TAIL_IDLE_WAKE_S, now_ms)))
            for partition in partitions
        ]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()


def bind_refusal(
    config: types_pb2.ConsumerConfig, subscribers: int, deliver_group: str, stream_name: str
) -> ConsumerBoundError | None:
    """Why a Subscribe with `deliver_group` may not bind to a consumer of `config` that already has
    `subscribers` bound, else None. A consumer with a deliver_group is shared by the subscribers
    that name that group; one without takes a single subscriber that names none (the streams
    seed's rule, as NATS's push consumers: a second would split or double its deliveries)."""
    name, group = config.name, config.deliver_group
    if group and deliver_group != group:
        return ConsumerBoundError(
            f"consumer {name!r} delivers to group {group!r}; subscribe with deliver_group={group!r}",
            stream=stream_name,
            consumer=name,
        )
    if not group and deliver_group:
        return ConsumerBoundError(
            f"consumer {name!r} has no deliver_group; subscribe without one", stream=stream_name, consumer=name
        )
    if not group and subscribers:
        return ConsumerBoundError(
            f"consumer {name!r} has no deliver_group and another Subscribe is bound to it; "
            "create the consumer with a deliver_group to share it",
            stream=stream_name,
            consumer=name,
        )
    return None
