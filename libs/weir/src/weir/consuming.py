"""Consuming as a consumer-group member: the callback form (`GroupConsumer`) and the iterator form
(`Subscription`, from `Client.consume`).

Both call QueryAssignment every `heartbeat_interval_ms` (also the member's heartbeat), run one fetch
loop per assigned partition on that partition's primary, and give a revoked partition back only
after its in-flight batch is handed over. Delivery is at least once: a message that is not settled
within the consumer's ack_wait is delivered again (to this or another member).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from weir.client import endpoints_of
from weir.errors import InvalidArgumentError, WeirError
from weir.info import ConsumerConfig
from weir.message import Message, Settler
from weir.router_client import RouterClient
from weir.v1 import router_pb2, types_pb2

logger = logging.getLogger(__name__)

_BUFFER_FULL_RECHECK_S = 0.05  # a fetch loop whose subscription buffer is full looks again this often


class MemberClient(Settler, Protocol):
    """What a group member calls on (the cluster client, weir.cluster's `Client`, is one): the
    router, for QueryAssignment with retries and LeaveGroup once, and fetch and settle on a
    partition's primary. A protocol, so that this module does not import the client that makes
    its members (an import cycle)."""

    @property
    def router(self) -> RouterClient: ...

    async def _router_call(self, method: str, request: Any, timeout_s: float | None = None) -> Any: ...

    async def fetch(
        self, stream: str, consumer: str, partition: int, *, batch_size: int = 0, max_wait_ms: int = 0
    ) -> list[Message]: ...


class GroupConsumer:
    """One member of a consumer group (RocketMQ / kafka-pixy style).

    `handler(message)` is awaited for each `Message`; when it returns the message is acked, when it
    raises the message is nak'ed (redelivered, to this or another member) — unless the handler
    settled it itself (`message.ack()` etc.) or `auto_settle` is False (the caller settles every
    message). `run()` runs until `stop()`; `start()` runs it in a task.

    `batch_handler(messages)` instead: awaited once per fetched batch (the messages of one
    partition, in order); when it returns the batch is acked (what it did not settle itself), when
    it raises every unsettled message of the batch is nak'ed. For a handler that works on a batch
    at once (the invoker admits a batch's invocations concurrently and schedules them in order).
    """

    def __init__(
        self,
        client: MemberClient,
        stream: str,
        group: str,
        handler: Callable[[Message], Awaitable[None]] | None,
        *,
        batch_handler: Callable[[list[Message]], Awaitable[None]] | None = None,
        client_id: str | None = None,
        consumer_config: ConsumerConfig | None = None,
        batch_size: int = 100,
        max_wait_ms: int = 500,
        heartbeat_interval_ms: int = 1000,
        auto_settle: bool = True,
    ) -> None:
        self.client = client
        self.stream = stream
        self.group = group
        if (handler is None) == (batch_handler is None):
            raise InvalidArgumentError("give a handler or a batch_handler (one of them)")
        self.handler = handler
        self.batch_handler = batch_handler
        self.client_id = client_id or f"{group}-{uuid.uuid4().hex[:12]}"
        self.consumer_config = consumer_config
        self.batch_size = batch_size
        self.max_wait_ms = max_wait_ms
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.auto_settle = auto_settle
        self.generation = 0
        self.assigned: list[int] = []
        self.processed = 0
        self._workers: dict[int, tuple[asyncio.Task[None], asyncio.Event]] = {}
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """False once `stop()` was called."""
        return not self._stop.is_set()

    def start(self) -> GroupConsumer:
        """Run the member in a task of the running loop (join the group, fetch, call the handler);
        returns self. `stop()` ends it."""
        self._task = asyncio.get_running_loop().create_task(self.run(), name=f"group-{self.client_id}")
        return self

    async def stop(self) -> None:
        """Finish in-flight batches, leave the group (its partitions move at once)."""
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def run(self) -> None:
        """The member's loop, until `stop()`: heartbeat and take its assignment (QueryAssignment),
        fetch from its partitions, call the handler, ack what it returned on and nak what it raised
        on."""
        try:
            while not self._stop.is_set():
                try:
                    changed = await self._rebalance()
                except WeirError as error:
                    if not error.retryable:
                        raise
                    logger.warning("member %s: QueryAssignment failed: %s", self.client_id, error)
                    changed = False
                if changed:
                    continue  # a revoked partition was just released: tell the router at once
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), self.heartbeat_interval_s)
        finally:
            await self._release(list(self._workers))
            with contextlib.suppress(WeirError):
                request = router_pb2.LeaveGroupRequest(stream=self.stream, group=self.group, client_id=self.client_id)
                await self.client.router.call("LeaveGroup", request)

    async def _rebalance(self) -> bool:
        """One QueryAssignment; start workers for new partitions, stop revoked ones. True when a
        partition was released (so the next call should follow at once)."""
        request = router_pb2.QueryAssignmentRequest(
            stream=self.stream,
            group=self.group,
            client_id=self.client_id,
            endpoints=endpoints_of(self.client.router.address),
            owned_partitions=sorted(self._workers),
            consumer=self.consumer_config.to_proto() if self.consumer_config else types_pb2.ConsumerConfig(),
        )
        response = await self.client._router_call("QueryAssignment", request)
        self.generation = response.generation
        assigned = sorted(entry.route.partition for entry in response.assignments)
        self.assigned = assigned
        revoked = [partition for partition in self._workers if partition not in assigned]
        for partition in assigned:
            if partition not in self._workers:
                stop = asyncio.Event()
                task = asyncio.get_running_loop().create_task(self._work(partition, stop))
                self._workers[partition] = (task, stop)
        if revoked:
            await self._release(revoked)
        return bool(revoked)

    async def _release(self, partitions: Sequence[int]) -> None:
        for partition in partitions:
            self._workers[partition][1].set()
        for partition in partitions:
            task, _ = self._workers.pop(partition)
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _work(self, partition: int, stop: asyncio.Event) -> None:
        """Fetch, handle, settle — until told to stop; a batch in hand is always settled."""
        client = self.client
        while not stop.is_set():
            try:
                messages = await client.fetch(
                    self.stream, self.group, partition, batch_size=self.batch_size, max_wait_ms=self.max_wait_ms
                )
            except WeirError as error:
                logger.warning("member %s partition %d: fetch failed: %s", self.client_id, partition, error)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 0.5)
                continue
            if messages:
                await self._handle(partition, messages)

    async def _handle_batch(self, partition: int, batch: list[Message]) -> None:
        assert self.batch_handler is not None
        try:
            await self.batch_handler(batch)
        except Exception as error:  # the handler refused the batch: redeliver what it did not settle
            logger.warning("member %s: batch handler failed on partition %d: %s", self.client_id, partition, error)
            if self.auto_settle:
                for message in batch:
                    if not message.settled:
                        with contextlib.suppress(WeirError):
                            await self.client.nak(self.stream, self.group, partition, message.seq)
            return
        done = [message.seq for message in batch if not message.settled]
        if self.auto_settle and done:
            try:
                await self.client.ack_batch(self.stream, self.group, partition, done)
                self.processed += len(done)
            except WeirError as error:  # redelivered after ack_wait: at least once
                logger.warning("member %s partition %d: ack failed: %s", self.client_id, partition, error)

    async def _handle(self, partition: int, messages: list[Message]) -> None:
        """Hand a fetched batch to the handler; settle what it left unsettled (with auto_settle)."""
        client = self.client
        if self.batch_handler is not None:
            await self._handle_batch(partition, messages)
            return
        assert self.handler is not None
        done: list[int] = []
        for message in messages:
            try:
                await self.handler(message)
                if self.auto_settle and not message.settled:
                    done.append(message.seq)
            except Exception as error:  # the handler refused it: redeliver
                logger.warning("member %s: handler failed on %d/%d: %s", self.client_id, partition, message.seq, error)
                if self.auto_settle and not message.settled:
                    with contextlib.suppress(WeirError):
                        await client.nak(self.stream, self.group, partition, message.seq)
        if done:
            try:
                await client.ack_batch(self.stream, self.group, partition, done)
                self.processed += len(done)
            except WeirError as error:  # redelivered after ack_wait: at least once
                logger.warning("member %s partition %d: ack failed: %s", self.client_id, partition, error)


class Subscription:
    """`async for message in subscription`: the messages of one consumer-group membership, each to be
    settled by the caller (`await message.ack()`, `nak()`, `term()`, `in_progress()`).

    Made by `Client.consume`, which gives `forget`, called with the subscription once it stopped
    (the client stops only the subscriptions still running at close). The membership starts on the
    first iteration (or `async with`); fetched messages wait in a buffer of at most `max_buffered`
    (the fetch loops wait while it is full). `stop()` leaves the group and naks the buffered
    messages not yet handed out, so they are redelivered at once instead of after ack_wait;
    iteration then ends. A non-retryable error of the membership (NoSuchStreamError for a stream
    that does not exist, ...) is raised by the loop.
    """

    def __init__(
        self,
        client: MemberClient,
        stream: str,
        group: str,
        *,
        max_buffered: int,
        forget: Callable[[Subscription], None] = lambda subscription: None,
        **options: Any,
    ) -> None:
        self.client = client
        self._forget = forget
        self.stream = stream
        self.group = group
        self._buffer: asyncio.Queue[Message] = asyncio.Queue(max_buffered)
        self.member = GroupConsumer(client, stream, group, self._take, auto_settle=False, **options)
        self._task: asyncio.Task[None] | None = None
        self._stopped = False
        self._front: collections.deque[Message] = collections.deque()  # handed back by a cancelled wait

    async def _take(self, message: Message) -> None:
        """The member's handler: buffer a fetched message, waiting while the buffer is full. A
        message of a partition the router moved to another member meanwhile is handed back (nak)
        instead: the member gives a revoked partition up only once its fetched batch is handed
        over, which must not wait for a loop that is not iterating."""
        while True:
            if self._stopped or message.partition not in self.member.assigned:
                with contextlib.suppress(WeirError):
                    await message.nak()
                return
            try:
                self._buffer.put_nowait(message)
                return
            except asyncio.QueueFull:
                await asyncio.sleep(_BUFFER_FULL_RECHECK_S)

    @property
    def stopped(self) -> bool:
        """True once `stop()` was called or the membership ended (a non-retryable error)."""
        return self._stopped or (self._task is not None and self._task.done())

    def _start(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.member.run(), name=f"consume-{self.group}")
        return self._task

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Message:
        task = self._start()
        while True:
            if self._front:
                return self._front.popleft()
            if not self._buffer.empty():
                return self._buffer.get_nowait()
            if self._stopped or task.done():
                if task.done() and not task.cancelled() and task.exception() is not None:
                    self._stopped = True
                    raise task.exception()  # type: ignore[misc]
                raise StopAsyncIteration
            getter = asyncio.ensure_future(self._buffer.get())
            try:
                await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                # Cancelled (a caller's timeout) just as a message arrived: keep it for the next call.
                if getter.done() and not getter.cancelled():
                    self._front.append(getter.result())
                raise
            finally:
                if not getter.done():
                    getter.cancel()
            if getter.done() and not getter.cancelled():
                return getter.result()

    async def __aenter__(self) -> Subscription:
        self._start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        """Leave the group; hand the buffered, undelivered messages back (nak). Idempotent."""
        self._stopped = True
        await self.member.stop()
        task, self._task = self._task, None
        # The fetch loops finish handing over their batch (into the buffer) before the member can
        # leave, so drain while it winds down.
        while task is not None and not task.done():
            await self._hand_back()
            await asyncio.wait({task}, timeout=0.05)
        await self._hand_back()
        if task is not None and not task.cancelled():
            task.exception()  # retrieved: a failed membership has nothing more to say at stop
        self._forget(self)

    async def _hand_back(self) -> None:
        while self._front:
            with contextlib.suppress(WeirError):
                await self._front.popleft().nak()
        while not self._buffer.empty():
            message = self._buffer.get_nowait()
            with contextlib.suppress(WeirError):
                await message.nak()
