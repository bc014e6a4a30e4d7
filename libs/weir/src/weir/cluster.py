"""Asyncio client of a Weir cluster: routing, batched publishes, retries, consumer groups.

`Client("host:port")` (or several: "a:7501,b:7501", or a list) bootstraps from router addresses. It caches each
stream's route (QueryRoute), picks a partition per message (explicit partition, else
hash(key) mod partitions as kafka-pixy does, else round robin), and sends publishes to that
partition's primary in batches: a batch goes out after `linger_ms` or once it holds
`batch_max_bytes` / `batch_max_messages`. With `max_in_flight_batches` N > 0, a partition has at most
N batches (of one ack level) waiting for their answer at once: a batch whose linger passed while N
are out keeps filling until one is answered, so many concurrent publishers coalesce into larger
batches instead of many small ones (a full batch still goes at once). Failures that are `retryable` are retried with
exponential backoff and jitter (tenacity) until `retry_timeout_s`; an error with `refresh_routing`
(`not_leader`, a node that went away) refreshes the route first. Other errors surface as the
typed `WeirError` the server sent. At most `max_pending_messages` publishes wait at once (callers
then wait: the buffer is bounded).

Consuming (weir.consuming): `async for message in client.consume(stream, group)` with
`message.ack()`, or the callback form `client.group_consumer(stream, group, handler)`; both are
consumer-group members (QueryAssignment spreads the partitions over the live members).

Publishing is idempotent by default (`idempotent=True`): every message gets a msg_id (this
client's random prefix and a counter, or the caller's own `msg_id`), kept across retries, so a
retry after a lost response, a timeout or a failover is answered with the original seq
(`PublishAck.duplicate`) instead of storing a second copy, as long as it comes within the
stream's duplicate window (2 minutes by default). Consuming is at least once: a message whose ack
was lost is delivered again.

Shutdown: `await client.close()` flushes queued publishes and closes every channel;
`await member.stop()` finishes in-flight batches and leaves the group.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import random
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_delay, wait_exponential_jitter

from weir import tls as tls_module
from weir.client import (
    ACK_LEVELS,
    CHANNEL_OPTIONS,
    DEFAULT_TIMEOUT_S,
    NodeClient,
    endpoints_of,
    headers_of,
    typed_stream,
)
from weir.consuming import GroupConsumer, Subscription
from weir.errors import InvalidArgumentError, UnavailableError, WeirError, WrongRevisionError
from weir.message import Message, PublishAck
from weir.partitioning import partition_for_key
from weir.v1 import router_pb2, router_pb2_grpc, streams_pb2, types_pb2

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_LINGER_MS = 2
DEFAULT_BATCH_MAX_BYTES = 1024 * 1024
DEFAULT_BATCH_MAX_MESSAGES = 1000
DEFAULT_MAX_PENDING_MESSAGES = 100_000
DEFAULT_RETRY_TIMEOUT_S = 30.0


def _is_retryable(error: BaseException) -> bool:
    return isinstance(error, WeirError) and error.retryable


_BACKOFF = wait_exponential_jitter(multiplier=0.05, max=1.0, jitter=0.05)


def _wait_at_least_as_asked(state: RetryCallState) -> float:
    """Exponential backoff with jitter, but never shorter than the wait the server asked for (a
    rate-limited call's retry_after_ms)."""
    error = state.outcome.exception() if state.outcome else None
    asked = error.retry_after_s if isinstance(error, WeirError) else None
    return max(_BACKOFF(state), asked or 0.0)


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
    ) -> None:
        self.addresses = router_addresses(addresses)
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
        """One call, tried on each router in turn while they are unreachable."""
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
        raise last

    def stream(self, method: str, request: Any) -> AsyncIterator[Any]:
        """The items of a server-streaming call on the current router (no retry: a long call such
        as MovePartition is the caller's to run again); failures raise typed errors."""
        return typed_stream(getattr(self._stub(), method), request)

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()


@dataclass(slots=True)
class _Pending:
    entry: streams_pb2.PublishEntry
    future: asyncio.Future[PublishAck]
    size: int


@dataclass(slots=True)
class _Batch:
    stream: str
    partition: int
    ack_level: int
    items: list[_Pending] = field(default_factory=list)
    size: int = 0
    timer: asyncio.TimerHandle | None = None
    lingered: bool = False  # its linger passed; it waits only for an in-flight batch of its key


def _rejected_entry(error: BaseException, entries: int) -> int | None:
    """The index of the one entry a batch of `entries` (more than one) was rejected for, when
    `error` is such a rejection (not retryable, naming an entry: nothing was stored); else None."""
    if entries < 2 or not isinstance(error, WeirError) or error.retryable:
        return None
    index = error.metadata.get("index", "")
    return int(index) if index.isdigit() and int(index) < entries else None


def _settle_with_error(items: list[_Pending], error: BaseException) -> None:
    for item in items:
        if not item.future.done():
            item.future.set_exception(error)


class Client:
    """A Weir cluster's client: `Client("host:port")`, `Client("a:7501,b:7501")` or
    `Client(["a:7501", "b:7501"])` (router addresses; the first that answers is used). Use
    `async with Client(...) as client:` or `await client.close()`. See the module docstring for
    batching, retries and idempotence."""

    def __init__(
        self,
        routers: str | Sequence[str],
        *,
        linger_ms: int = DEFAULT_LINGER_MS,
        batch_max_bytes: int = DEFAULT_BATCH_MAX_BYTES,
        batch_max_messages: int = DEFAULT_BATCH_MAX_MESSAGES,
        max_pending_messages: int = DEFAULT_MAX_PENDING_MESSAGES,
        retry_timeout_s: float = DEFAULT_RETRY_TIMEOUT_S,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        idempotent: bool = True,
        max_in_flight_batches: int = 0,
        tls: tls_module.Security = tls_module.PROCESS_DEFAULT,
    ) -> None:
        if linger_ms < 0 or batch_max_bytes < 1 or batch_max_messages < 1 or max_pending_messages < 1:
            raise InvalidArgumentError("linger_ms >= 0 and batch/pending bounds >= 1 are required")
        if max_in_flight_batches < 0:
            raise InvalidArgumentError("max_in_flight_batches >= 0 is required (0 = no bound)")
        self.tls = tls
        self.router = RouterClient(routers, timeout_s=timeout_s, tls=tls)
        self.linger_s = linger_ms / 1000
        self.batch_max_bytes = batch_max_bytes
        self.batch_max_messages = batch_max_messages
        self.retry_timeout_s = retry_timeout_s
        self.timeout_s = timeout_s
        self.idempotent = idempotent
        self.max_in_flight_batches = max_in_flight_batches
        # msg_ids as NATS's nuid makes them: a random prefix per client and a counter (~0.3 us each).
        self._msg_id_prefix = secrets.token_urlsafe(12)
        self._msg_counter = itertools.count(1)
        self._routes: dict[str, router_pb2.QueryRouteResponse] = {}
        self._round_robin: dict[str, itertools.cycle[int]] = {}
        self._nodes: dict[str, NodeClient] = {}
        self._batches: dict[tuple[str, int, int], _Batch] = {}
        self._in_flight: set[asyncio.Task[None]] = set()
        self._in_flight_per_key: dict[tuple[str, int, int], int] = {}  # batches out, by batch key
        self._pending = asyncio.Semaphore(max_pending_messages)
        self._subscriptions: set[Subscription] = set()
        self._closed = False

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Flush queued publishes, then close every channel."""
        if self._closed:
            return
        for subscription in list(self._subscriptions):
            await subscription.stop()
        await self.flush()
        self._closed = True
        for client in self._nodes.values():
            await client.close()
        await self.router.close()

    # -- retries and routes ------------------------------------------------------------------------

    async def _retrying(self, operation: Callable[[], Awaitable[T]], stream: str | None = None) -> T:
        """`operation()`, retried while it fails with a retryable error (backoff with jitter,
        routes refreshed when the error says so) for up to `retry_timeout_s`."""
        try:  # the common case pays for no retry machinery
            return await operation()
        except WeirError as error:
            if not error.retryable:
                raise
            self._forget_route(stream, error)

        async def before_sleep(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            logger.debug("retrying after %s (attempt %d)", error, state.attempt_number)
            self._forget_route(stream, error)

        async for attempt in AsyncRetrying(
            retry=retry_if_exception(_is_retryable),
            wait=_wait_at_least_as_asked,
            stop=stop_after_delay(self.retry_timeout_s),
            before_sleep=before_sleep,
            reraise=True,
        ):
            with attempt:
                return await operation()
        raise AssertionError("unreachable")  # pragma: no cover

    def _forget_route(self, stream: str | None, error: BaseException | None) -> None:
        if stream is not None and isinstance(error, WeirError) and error.refresh_routing:
            self._routes.pop(stream, None)

    async def _router_call(self, method: str, request: Any, timeout_s: float | None = None) -> Any:
        return await self._retrying(lambda: self.router.call(method, request, timeout_s))

    async def route(self, stream: str, *, refresh: bool = False) -> router_pb2.QueryRouteResponse:
        """The stream's route (cached; `refresh` asks the router again). Errors: NoSuchStreamError."""
        if not refresh:
            cached = self._routes.get(stream)
            if cached is not None:
                return cached
        request = router_pb2.QueryRouteRequest(stream=stream, endpoints=endpoints_of(self.router.address))
        route: router_pb2.QueryRouteResponse = await self._router_call("QueryRoute", request)
        self._routes[stream] = route
        return route

    def node(self, address: str) -> NodeClient:
        client = self._nodes.get(address)
        if client is None:
            client = self._nodes[address] = NodeClient(address, timeout_s=self.timeout_s, tls=self.tls)
        return client

    async def leader(self, stream: str, partition: int) -> NodeClient:
        """The client of the partition's primary, from the cached route. Errors:
        NoSuchPartitionError-like InvalidArgumentError, UnavailableError (primary dead)."""
        route = await self.route(stream)
        if partition >= len(route.partitions):
            raise InvalidArgumentError(
                f"stream {stream!r} has {len(route.partitions)} partition(s); partition {partition} does not exist"
            )
        entry = route.partitions[partition]
        if entry.permission == router_pb2.PERMISSION_NONE or not entry.primary.address:
            raise UnavailableError(
                f"partition {partition} of {stream!r}: primary {entry.primary.node_id} is not alive", stream=stream
            )
        return self.node(entry.primary.address)

    async def on_leader(self, stream: str, partition: int, call: Callable[[NodeClient], Awaitable[T]]) -> T:
        """Run `call` against the partition's primary, with retries and route refreshes."""

        async def once() -> T:
            return await call(await self.leader(stream, partition))

        return await self._retrying(once, stream)

    async def partition_for(self, stream: str, key: bytes | None) -> int:
        route = await self.route(stream)
        partitions = len(route.partitions)
        if key is not None:
            return partition_for_key(key, partitions)
        cycle = self._round_robin.get(stream)
        if cycle is None:  # from a random partition: short-lived clients do not all start at 0
            start = random.randrange(partitions)
            cycle = self._round_robin[stream] = itertools.cycle([*range(start, partitions), *range(start)])
        return next(cycle)

    # -- publishing --------------------------------------------------------------------------------

    async def publish(
        self,
        stream: str,
        subject: str,
        payload: bytes,
        *,
        key: bytes | None = None,
        partition: int | None = None,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        expected_last_seq: int | None = None,
        ack_level: str = "leader",
        msg_id: str | None = None,
        delay_ms: int = 0,
        deliver_at_ms: int = 0,
        hold: bool = False,
        ts_ms: int = 0,
        rollup: bool = False,
        ttl_ms: int = 0,
    ) -> PublishAck:
        """Publish one message through the batcher; returns once it is acknowledged per
        `ack_level` ("leader", "all", "none"). `msg_id`: the idempotence key (default: one generated
        per message when the client is idempotent; "" sends none). `delay_ms`, or `deliver_at_ms`
        (ms since the Unix epoch): delayed delivery (the stream needs allow_scheduled_messages); the
        ack then has `scheduled` set and the message is delivered at its time under a new seq.
        `hold`: stored as a held message (a transaction's half message), delivered or discarded by
        `release_scheduled`. `ts_ms`: the message's time (ms since the Unix epoch; 0 = the node's clock).
        `rollup`: every earlier message at the subject is removed in the same commit (the stream
        needs max_msgs_per_subject; streams.proto PublishRequest.rollup). `ttl_ms`: the message is
        removed this long after it is stored (streams.proto PublishRequest.ttl_ms).
        Errors: the node's typed errors (subject_rejected, oversize, wrong_revision,
        scheduling_disabled, ...), after retries for retryable ones."""
        future = self.publish_nowait(
            stream,
            subject,
            payload,
            key=key,
            partition=partition,
            headers=headers,
            expected_last_seq=expected_last_seq,
            ack_level=ack_level,
            msg_id=msg_id,
            delay_ms=delay_ms,
            deliver_at_ms=deliver_at_ms,
            hold=hold,
            ts_ms=ts_ms,
            rollup=rollup,
            ttl_ms=ttl_ms,
        )
        return await (await future)

    async def publish_nowait(
        self,
        stream: str,
        subject: str,
        payload: bytes,
        *,
        key: bytes | None = None,
        partition: int | None = None,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        expected_last_seq: int | None = None,
        ack_level: str = "leader",
        msg_id: str | None = None,
        delay_ms: int = 0,
        deliver_at_ms: int = 0,
        hold: bool = False,
        ts_ms: int = 0,
        rollup: bool = False,
        ttl_ms: int = 0,
    ) -> asyncio.Future[PublishAck]:
        """Queue one message and return a future of its PublishAck (awaiting the call itself
        waits only while the pending buffer is full). Use this to keep many publishes in flight.
        `msg_id` as in `publish`."""
        if self._closed:
            raise UnavailableError("the client is closed")
        level = ACK_LEVELS.get(ack_level)
        if level is None:
            raise InvalidArgumentError(f"ack_level: one of {sorted(ACK_LEVELS)}, got {ack_level!r}")
        chosen = partition if partition is not None else await self.partition_for(stream, key)
        entry = streams_pb2.PublishEntry(subject=subject, payload=payload, headers=headers_of(headers))
        entry.partition = chosen  # kept across retries, so a retry meets its original's duplicate window
        if key is not None:
            entry.key = key  # stored with the message (the partition is already chosen from it)
        if msg_id is None and self.idempotent:
            entry.msg_id = f"{self._msg_id_prefix}.{next(self._msg_counter)}"
        elif msg_id:
            entry.msg_id = msg_id
        if expected_last_seq is not None:
            entry.expected_last_seq = expected_last_seq
        if ts_ms:
            entry.ts_ms = ts_ms
        if rollup:
            entry.rollup = True
        if ttl_ms:
            entry.ttl_ms = ttl_ms
        if delay_ms or deliver_at_ms or hold:
            entry.delay_ms = delay_ms
            entry.deliver_at_ms = deliver_at_ms
            entry.hold = hold
        await self._pending.acquire()
        future: asyncio.Future[PublishAck] = asyncio.get_running_loop().create_future()
        future.add_done_callback(lambda _: self._pending.release())
        size = len(payload) + len(subject) + 16
        batch_key = (stream, chosen, level)
        batch = self._batches.get(batch_key)
        if batch is None:
            batch = self._batches[batch_key] = _Batch(stream, chosen, level)
            batch.timer = asyncio.get_running_loop().call_later(self.linger_s, self._linger_passed, batch_key)
        batch.items.append(_Pending(entry, future, size))
        batch.size += size
        if len(batch.items) >= self.batch_max_messages or batch.size >= self.batch_max_bytes:
            self._send(batch_key)
        return future

    def _linger_passed(self, batch_key: tuple[str, int, int]) -> None:
        """The batch's linger timer: send it, unless `max_in_flight_batches` of its key are out; then
        it keeps filling and `_batch_answered` sends it."""
        batch = self._batches.get(batch_key)
        if batch is None:
            return
        batch.timer = None
        batch.lingered = True
        if self.max_in_flight_batches and self._in_flight_per_key.get(batch_key, 0) >= self.max_in_flight_batches:
            return
        self._send(batch_key)

    def _send(self, batch_key: tuple[str, int, int]) -> None:
        batch = self._batches.pop(batch_key, None)
        if batch is None:
            return
        if batch.timer is not None:
            batch.timer.cancel()
        self._in_flight_per_key[batch_key] = self._in_flight_per_key.get(batch_key, 0) + 1
        task = asyncio.get_running_loop().create_task(self._send_batch(batch))
        self._in_flight.add(task)
        task.add_done_callback(functools.partial(self._batch_answered, batch_key))

    def _batch_answered(self, batch_key: tuple[str, int, int], task: asyncio.Task[None]) -> None:
        """A batch's task ended (its futures are settled): count it out, and send the batch of the
        same key that waited for it, if any."""
        self._in_flight.discard(task)
        left = self._in_flight_per_key.pop(batch_key) - 1
        if left:
            self._in_flight_per_key[batch_key] = left
        waiting = self._batches.get(batch_key)
        if waiting is not None and waiting.lingered:
            self._send(batch_key)

    async def _send_batch(self, batch: _Batch) -> None:
        """Send the batch (retries and route refreshes as `on_leader`) and settle each publish's
        future. The node rejects a whole request for one invalid entry, storing nothing, and names
        it (`index`): that publish fails alone and the others go again without it, so a bad message
        never fails the publishes that happened to be batched with it."""
        items = batch.items
        while items:
            request = streams_pb2.PublishBatchRequest(
                stream=batch.stream,
                entries=[item.entry for item in items],
                ack_level=batch.ack_level,  # type: ignore[arg-type]
            )

            async def send(
                client: NodeClient, request: streams_pb2.PublishBatchRequest = request
            ) -> streams_pb2.PublishBatchResponse:
                return await client.exchange_publish_batch(request)

            try:
                response = await self.on_leader(batch.stream, batch.partition, send)
            except BaseException as error:
                rejected = _rejected_entry(error, len(items))
                if rejected is not None:
                    _settle_with_error(items[rejected : rejected + 1], error)
                    items = items[:rejected] + items[rejected + 1 :]
                    continue
                _settle_with_error(items, error)
                if not isinstance(error, Exception):
                    raise
                return
            self._settle(batch.stream, items, response)
            return

    @staticmethod
    def _settle(stream: str, items: list[_Pending], response: streams_pb2.PublishBatchResponse) -> None:
        """Each publish's future from its result (one per item, in order)."""
        for item, result in zip(items, response.results, strict=True):
            if item.future.done():
                continue
            if result.result_code == "ok":
                item.future.set_result(PublishAck(result.partition, result.seq, result.duplicate, result.scheduled))
            elif result.result_code == "wrong_revision":
                item.future.set_exception(
                    WrongRevisionError(result.message, stream=stream, partition=result.partition, last_seq=result.seq)
                )
            else:
                item.future.set_exception(WeirError.for_code(result.result_code, result.message))

    async def flush(self) -> None:
        """Send every queued batch now and wait until all in-flight batches are answered."""
        for batch_key in list(self._batches):
            self._send(batch_key)
        while self._in_flight:
            await asyncio.gather(*list(self._in_flight), return_exceptions=True)

    # -- admin through the router --------------------------------------------------------------------

    async def create_stream(self, config: types_pb2.StreamConfig) -> types_pb2.StreamConfig:
        """Place and create a stream (idempotent for the same config); returns the effective config."""
        response = await self._router_call("CreateStream", streams_pb2.CreateStreamRequest(config=config))
        self._routes.pop(config.name, None)
        return response.config  # type: ignore[no-any-return]

    async def delete_stream(self, name: str) -> None:
        await self._router_call("DeleteStream", streams_pb2.DeleteStreamRequest(name=name))
        self._routes.pop(name, None)

    async def update_stream(self, request: streams_pb2.UpdateStreamRequest) -> streams_pb2.UpdateStreamResponse:
        return await self._router_call("UpdateStream", request)  # type: ignore[no-any-return]

    async def stream_info(self, name: str) -> streams_pb2.GetStreamInfoResponse:
        return await self._router_call("GetStreamInfo", streams_pb2.GetStreamInfoRequest(name=name))  # type: ignore[no-any-return]

    async def list_streams(self) -> list[str]:
        response = await self._router_call("ListStreams", streams_pb2.ListStreamsRequest())
        return list(response.names)

    async def create_consumer(self, stream: str, config: types_pb2.ConsumerConfig) -> types_pb2.ConsumerInfo:
        request = streams_pb2.CreateConsumerRequest(stream=stream, config=config)
        return (await self._router_call("CreateConsumer", request)).info  # type: ignore[no-any-return]

    async def delete_consumer(self, stream: str, consumer: str) -> None:
        request = streams_pb2.DeleteConsumerRequest(stream=stream, consumer=consumer)
        await self._router_call("DeleteConsumer", request)

    async def consumer_info(self, stream: str, consumer: str) -> types_pb2.ConsumerInfo:
        request = streams_pb2.GetConsumerInfoRequest(stream=stream, consumer=consumer)
        return (await self._router_call("GetConsumerInfo", request)).info  # type: ignore[no-any-return]

    async def list_consumers(self, stream: str) -> list[types_pb2.ConsumerInfo]:
        response = await self._router_call("ListConsumers", streams_pb2.ListConsumersRequest(stream=stream))
        return list(response.consumers)

    async def cluster_stats(self, include_per_stream: bool = True) -> router_pb2.GetClusterStreamStatsResponse:
        request = router_pb2.GetClusterStreamStatsRequest(include_per_stream=include_per_stream)
        return await self._router_call("GetClusterStreamStats", request)  # type: ignore[no-any-return]

    async def group_info(self, stream: str, group: str) -> router_pb2.GetGroupInfoResponse:
        """A consumer group's live members and the partitions each holds. Errors:
        NoSuchStreamError, InvalidNameError."""
        request = router_pb2.GetGroupInfoRequest(stream=stream, group=group)
        return await self._router_call("GetGroupInfo", request)  # type: ignore[no-any-return]

    async def cluster_info(self) -> router_pb2.GetClusterInfoResponse:
        return await self._router_call("GetClusterInfo", router_pb2.GetClusterInfoRequest())  # type: ignore[no-any-return]

    def move_partition(
        self, stream: str, partition: int, from_node_id: str, to_node_id: str, *, catch_up_timeout_ms: int = 0
    ) -> AsyncIterator[router_pb2.MoveProgress]:
        """Move a partition's copy from one node to another while it serves (Router.MovePartition):
        yields each step's progress (add_copy, catch_up every second, hand_over, remove_copy, done).
        Errors (raised as it iterates): InvalidArgumentError, NoSuchStreamError,
        FailedPreconditionError (pinned, no copy there, target down or already holding one, the
        placement changed meanwhile: run it again), UnavailableError, PermissionDeniedError."""
        request = router_pb2.MovePartitionRequest(
            stream=stream,
            partition=partition,
            from_node_id=from_node_id,
            to_node_id=to_node_id,
            catch_up_timeout_ms=catch_up_timeout_ms,
        )
        return self.router.stream("MovePartition", request)

    async def plan_rebalance(self, max_moves: int = 0) -> router_pb2.PlanRebalanceResponse:
        """Router.PlanRebalance: the moves that even out copies and primaries over the alive nodes
        (nothing is moved; run each with `move_partition`), and each node's share before and after."""
        request = router_pb2.PlanRebalanceRequest(max_moves=max_moves)
        return await self._router_call("PlanRebalance", request)  # type: ignore[no-any-return]

    async def set_partition_pinned(self, stream: str, partition: int, pinned: bool) -> list[int]:
        """Pin (or unpin) a partition: no move and no preferred-leader rebalance touches a pinned
        one. Returns the stream's pinned partitions. Errors: NoSuchStreamError, InvalidArgumentError."""
        request = router_pb2.SetPartitionPinnedRequest(stream=stream, partition=partition, pinned=pinned)
        response = await self._router_call("SetPartitionPinned", request)
        return list(response.pinned_partitions)

    async def start_scrub(self) -> router_pb2.StartScrubResponse:
        """Start a scrub pass on every alive node now (Router.StartScrub); `cluster_info()` shows
        each node's scrub_passes grow by one when its pass ends. Errors: PermissionDeniedError
        without admin on every stream (with an auth file)."""
        return await self._router_call("StartScrub", router_pb2.StartScrubRequest())  # type: ignore[no-any-return]

    # -- consuming -----------------------------------------------------------------------------------

    async def fetch(
        self,
        stream: str,
        consumer: str,
        partition: int,
        *,
        batch_size: int = 0,
        max_wait_ms: int = 0,
        ack_wait_ms: int = 0,
    ) -> list[types_pb2.Message]:
        """Fetch from one partition's primary (with retries and route refreshes); the messages stay
        invisible for `ack_wait_ms` (0 = the consumer's ack_wait_ms)."""
        return await self.on_leader(
            stream,
            partition,
            lambda client: client.fetch(
                stream, consumer, partition, batch_size=batch_size, max_wait_ms=max_wait_ms, ack_wait_ms=ack_wait_ms
            ),
        )

    async def ack_batch(
        self, stream: str, consumer: str, partition: int, seqs: Sequence[int], deliver_counts: Sequence[int] = ()
    ) -> list[str]:
        """Acknowledge seqs of one partition; one result code per seq ("ok" | "not_pending").
        `deliver_counts`: none, or one per seq: settle only that delivery (a receipt handle's)."""
        results = await self.on_leader(
            stream, partition, lambda client: client.ack_batch(stream, consumer, partition, seqs, deliver_counts)
        )
        return [result.result_code for result in results]

    async def nak(
        self, stream: str, consumer: str, partition: int, seq: int, delay_ms: int = 0, *, deliver_count: int = 0
    ) -> None:
        """Redeliver one pending message after `delay_ms` (only its delivery `deliver_count` when
        > 0). Errors: NotPendingError."""
        await self.on_leader(
            stream,
            partition,
            lambda client: client.nak(stream, consumer, partition, seq, delay_ms, deliver_count=deliver_count),
        )

    async def term(
        self, stream: str, consumer: str, partition: int, seq: int, deliver_count: int = 0, *, dead_letter: bool = False
    ) -> None:
        """Never deliver one pending message again (`deliver_count` as in `nak`); `dead_letter`: move
        it under the consumer's dead_letter_subject now. Errors: NotPendingError, InvalidConfigError."""
        await self.on_leader(
            stream,
            partition,
            lambda client: client.term(stream, consumer, partition, seq, deliver_count, dead_letter=dead_letter),
        )

    async def seq_at_time(self, stream: str, partition: int, time_ms: int) -> int:
        """The first seq of `partition` stored at or after `time_ms`, or its next seq when none is
        (asked of the partition's primary)."""
        return await self.on_leader(stream, partition, lambda client: client.seq_at_time(stream, partition, time_ms))

    async def release_scheduled(self, stream: str, partition: int, seq: int, *, discard: bool = False) -> int:
        """Deliver now (or discard) a scheduled or held message on its partition's primary; returns
        the delivered seq (0 when discarded). Errors: as NodeClient.release_scheduled."""
        return await self.on_leader(
            stream, partition, lambda client: client.release_scheduled(stream, partition, seq, discard=discard)
        )

    async def list_scheduled(
        self, stream: str, partition: int, *, held_only: bool = False, from_seq: int = 0, max_messages: int = 0
    ) -> streams_pb2.ListScheduledResponse:
        """The scheduled (or only held) messages a partition's primary still holds, in seq order."""
        return await self.on_leader(
            stream,
            partition,
            lambda client: client.list_scheduled(
                stream, partition, held_only=held_only, from_seq=from_seq, max_messages=max_messages
            ),
        )

    async def in_progress(self, stream: str, consumer: str, partition: int, seq: int) -> int:
        """Restart one pending message's ack_wait; returns its new redelivery time (ms since the
        Unix epoch). Errors: NotPendingError."""
        return await self.on_leader(
            stream, partition, lambda client: client.in_progress(stream, consumer, partition, seq)
        )

    async def seek_consumer(
        self,
        stream: str,
        consumer: str,
        *,
        seq: int | None = None,
        time_ms: int | None = None,
        end: bool = False,
        partition: int | None = None,
    ) -> dict[int, int]:
        """Move a durable consumer (or a group's consumer: its name is the group's) in `partition`,
        or in every partition when None: exactly one of `seq` (deliver from it on; 1 = the start),
        `time_ms` (from the first message stored at or after it, ms since the Unix epoch) or `end`
        (only messages published from now on). Messages pending in those partitions are dropped
        (not redelivered). Returns {partition: next_seq}. Errors: PositionOutOfRangeError (seq
        beyond a partition's next seq), NoSuchConsumerError, NoSuchStreamError,
        InvalidArgumentError."""
        if sum((seq is not None, time_ms is not None, end)) != 1:
            raise InvalidArgumentError("give exactly one of seq, time_ms or end")
        partitions = [partition] if partition is not None else range(len((await self.route(stream)).partitions))
        moved: dict[int, int] = {}
        for index in partitions:

            async def seek(client: NodeClient, index: int = index) -> streams_pb2.SeekConsumerResponse:
                return await client.seek_consumer(stream, consumer, index, seq=seq, time_ms=time_ms, end=end)

            moved[index] = (await self.on_leader(stream, index, seek)).next_seq
        return moved

    async def purge_stream(self, stream: str, *, partition: int | None = None, keep_from_seq: int | None = None) -> int:
        """Remove the messages of `partition` (every partition when None) below `keep_from_seq`
        (None: all of them); seqs keep counting. Returns how many were removed. Errors:
        NoSuchStreamError, InvalidArgumentError (no such partition)."""
        partitions = [partition] if partition is not None else range(len((await self.route(stream)).partitions))
        purged = 0
        for index in partitions:

            async def purge(client: NodeClient, index: int = index) -> streams_pb2.PurgePartitionResponse:
                return await client.purge_partition(stream, index, keep_from_seq=keep_from_seq)

            purged += (await self.on_leader(stream, index, purge)).purged
        return purged

    async def delete_messages(self, stream: str, partition: int, seqs: Sequence[int]) -> int:
        """Remove exactly these messages of one partition (PurgePartition with seqs; JetStream's
        DeleteMsg); returns how many were stored and went."""

        async def delete(client: NodeClient) -> streams_pb2.PurgePartitionResponse:
            return await client.purge_partition(stream, partition, seqs=seqs)

        return int((await self.on_leader(stream, partition, delete)).purged)

    def group_consumer(
        self,
        stream: str,
        group: str,
        handler: Callable[[Message], Awaitable[None]] | None,
        **options: Any,
    ) -> GroupConsumer:
        """A consumer-group member calling `handler(message)` for each message (callback form; see
        `GroupConsumer` for options, and `batch_handler` for a whole batch at once). `start()` it,
        `await stop()` it."""
        return GroupConsumer(self, stream, group, handler, **options)

    def consume(
        self,
        stream: str,
        group: str,
        *,
        consumer_config: types_pb2.ConsumerConfig | None = None,
        batch_size: int = 100,
        max_wait_ms: int = 500,
        max_buffered: int = 0,
        client_id: str | None = None,
    ) -> Subscription:
        """Consume `stream` as a member of consumer group `group` (the group's durable consumer is
        created on first use, with `consumer_config` when given): `async for message in
        client.consume("orders", "billing"): ...; await message.ack()`. The group's partitions are
        spread over its live members. At most `max_buffered` (0 = 2 x batch_size) fetched messages
        wait for the loop; unsettled messages come back after the consumer's ack_wait. Leaving the
        loop early: use `async with client.consume(...) as messages:` (or `await
        subscription.stop()`), which leaves the group and hands undelivered buffered messages back at
        once; `client.close()` stops every subscription too. Errors (raised by the loop):
        NoSuchStreamError, InvalidConfigError and other non-retryable errors of QueryAssignment."""
        if batch_size < 1 or max_wait_ms < 0 or max_buffered < 0:
            raise InvalidArgumentError("batch_size >= 1, max_wait_ms >= 0 and max_buffered >= 0 are required")
        subscription = Subscription(
            self,
            stream,
            group,
            max_buffered=max_buffered or 2 * batch_size,
            client_id=client_id,
            consumer_config=consumer_config,
            batch_size=batch_size,
            max_wait_ms=max_wait_ms,
        )
        self._subscriptions.add(subscription)
        return subscription

    def _forget_subscription(self, subscription: Subscription) -> None:
        self._subscriptions.discard(subscription)


WeirClient = Client  # the name before the public SDK (issue 24); kept for existing code
