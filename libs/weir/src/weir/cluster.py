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

Layout: the batcher is `weir.batching.PublishBatcher`; routes and the router's admin calls (streams,
consumers, moves, scrub) are `weir.router_client.RouterAdmin`, the per-partition ones
`weir.partition_admin.PartitionAdmin`, which `Client` inherits. Every public method takes and
returns the SDK's own types (weir.info, weir.cluster_info, weir.message) but `node`, `leader` and
`on_leader`, the wire-level escape hatch to a NodeClient (tests/test_sdk.py checks it).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_delay, wait_exponential_jitter

from weir import discovery
from weir import tls as tls_module
from weir.batching import BatchLimits, PublishBatcher
from weir.client import (
    ACK_LEVELS,
    DEFAULT_TIMEOUT_S,
    NodeClient,
    headers_of,
)
from weir.cluster_info import Route
from weir.consuming import GroupConsumer, Subscription
from weir.errors import InvalidArgumentError, UnavailableError, WeirError
from weir.info import ConsumerConfig
from weir.message import Message, PublishAck
from weir.partition_admin import PartitionAdmin
from weir.partitioning import partition_for_key
from weir.router_client import (
    RouterAdmin,
    RouterClient,
    router_addresses,  # noqa: F401  (weir.cluster.router_addresses is public)
)
from weir.v1 import router_pb2, streams_pb2

logger = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_LINGER_MS = 2
DEFAULT_BATCH_MAX_BYTES = 1024 * 1024
DEFAULT_BATCH_MAX_MESSAGES = 1000
DEFAULT_MAX_PENDING_MESSAGES = 100_000
DEFAULT_RETRY_TIMEOUT_S = 30.0


def _is_retryable(error: BaseException) -> bool:
    return isinstance(error, WeirError) and error.retryable


# 50 ms doubling to 0.5 s: a failover (about 2.25 s with the default heartbeat TTL) is noticed within
# half a second of its end, so a primary's SIGKILL stalls acks under 3 s (tests/test_default_failover.py).
_BACKOFF = wait_exponential_jitter(multiplier=0.05, max=0.5, jitter=0.05)


def _wait_at_least_as_asked(state: RetryCallState) -> float:
    """Exponential backoff with jitter, but never shorter than the wait the server asked for (a
    rate-limited call's retry_after_ms)."""
    error = state.outcome.exception() if state.outcome else None
    asked = error.retry_after_s if isinstance(error, WeirError) else None
    return max(_BACKOFF(state), asked or 0.0)


class Client(RouterAdmin, PartitionAdmin):
    """A Weir cluster's client: `Client("host:port")`, `Client("a:7501,b:7501")` or
    `Client(["a:7501", "b:7501"])` (router addresses; the first that answers is used), or `Client()`
    to find the cluster as the `weir` CLI does (`$WEIR_ROUTERS`, the local cluster under
    `./weir-cluster`, the last one `weir cluster up` started, else 127.0.0.1:7501,7502; see
    weir.discovery; `found_from` says which, and it is logged at INFO on `weir.cluster`). Use
    `async with Client(...) as client:` or `await client.close()`. See the module docstring for
    batching, retries and idempotence. Errors: InvalidArgumentError for a malformed address or
    bound."""

    def __init__(
        self,
        routers: str | Sequence[str] | None = None,
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
        self.found_from = "the addresses given"
        if routers is None:
            found = discovery.find_cluster()
            routers, self.found_from = found.routers, found.found_from
            if found.security is not None and tls is tls_module.PROCESS_DEFAULT:
                tls = found.security  # the local cluster's CA and client certificate
            logger.info("weir: using the routers at %s (from %s)", ",".join(routers), self.found_from)
        self.tls = tls
        self.router = RouterClient(routers, timeout_s=timeout_s, tls=tls, found_from=self.found_from)
        self.retry_timeout_s = retry_timeout_s
        self.timeout_s = timeout_s
        self.idempotent = idempotent
        # msg_ids as NATS's nuid makes them: a random prefix per client and a counter (~0.3 us each).
        self._msg_id_prefix = secrets.token_urlsafe(12)
        self._msg_counter = itertools.count(1)
        self._routes: dict[str, router_pb2.QueryRouteResponse] = {}
        self._route_views: dict[str, tuple[router_pb2.QueryRouteResponse, Route]] = {}
        self._round_robin: dict[str, itertools.cycle[int]] = {}
        self._nodes: dict[str, NodeClient] = {}
        limits = BatchLimits(
            linger_ms / 1000, batch_max_bytes, batch_max_messages, max_pending_messages, max_in_flight_batches
        )
        self._batcher = PublishBatcher(limits, self._send_publish_batch)  # publishing (weir.batching)
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

    def node(self, address: str) -> NodeClient:
        """The client of the node at `address` ("host:port"), made once and kept until `close`: the
        wire-level escape hatch (NodeClient answers in weir.v1's protobuf messages, by design)."""
        client = self._nodes.get(address)
        if client is None:
            client = self._nodes[address] = NodeClient(address, timeout_s=self.timeout_s, tls=self.tls)
        return client

    async def leader(self, stream: str, partition: int) -> NodeClient:
        """The client of the partition's primary, from the cached route (a NodeClient: the
        wire-level escape hatch, answering in weir.v1's protobuf messages). Errors:
        NoSuchPartitionError-like InvalidArgumentError, UnavailableError (primary dead)."""
        route = await self._route(stream)
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
        """Run `call` against the partition's primary (a NodeClient: the wire-level escape hatch,
        for what the SDK's own calls do not give), with retries and route refreshes."""

        async def once() -> T:
            return await call(await self.leader(stream, partition))

        return await self._retrying(once, stream)

    async def partition_for(self, stream: str, key: bytes | None) -> int:
        """The partition a message goes to: hash(key) mod partitions (kafka-pixy's hashing; an empty
        key hashes like any other), round robin from a random start when `key` is None. Errors:
        NoSuchStreamError."""
        route = await self._route(stream)
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
        size = len(payload) + len(subject) + 16  # from the caller's objects: no copy out of the entry
        return await self._batcher.enqueue(stream, chosen, level, entry, size)

    async def _send_publish_batch(
        self, stream: str, partition: int, request: streams_pb2.PublishBatchRequest
    ) -> streams_pb2.PublishBatchResponse:
        """One PublishBatch on the partition's primary, with retries and route refreshes (`on_leader`)."""
        return await self.on_leader(stream, partition, lambda client: client.exchange_publish_batch(request))

    async def flush(self) -> None:
        """Send every queued batch now and wait until all in-flight batches are answered."""
        await self._batcher.flush()

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
    ) -> list[Message]:
        """Up to `batch_size` (0 = 100) messages of one partition for durable consumer `consumer`,
        from the partition's primary (with retries and route refreshes), waiting up to
        `max_wait_ms` when none is ready. Each is a `weir.Message` settled through this client
        (`await message.ack()`, `nak`, `term`, `in_progress`); unsettled, it is delivered again
        after `ack_wait_ms` (0 = the consumer's ack_wait_ms). Errors: NoSuchStreamError,
        NoSuchConsumerError, InvalidArgumentError (no such partition)."""
        fetched = await self.on_leader(
            stream,
            partition,
            lambda client: client.fetch(
                stream, consumer, partition, batch_size=batch_size, max_wait_ms=max_wait_ms, ack_wait_ms=ack_wait_ms
            ),
        )
        return [Message.from_proto(stream, proto, consumer=consumer, settler=self) for proto in fetched]

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

    async def in_progress(self, stream: str, consumer: str, partition: int, seq: int) -> int:
        """Restart one pending message's ack_wait; returns its new redelivery time (ms since the
        Unix epoch). Errors: NotPendingError."""
        return await self.on_leader(
            stream, partition, lambda client: client.in_progress(stream, consumer, partition, seq)
        )

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
        consumer_config: ConsumerConfig | None = None,
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
            forget=self._subscriptions.discard,
            client_id=client_id,
            consumer_config=consumer_config,
            batch_size=batch_size,
            max_wait_ms=max_wait_ms,
        )
        self._subscriptions.add(subscription)
        return subscription


WeirClient = Client  # the name before the public SDK (issue 24); kept for existing code
