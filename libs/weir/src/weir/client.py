"""Asyncio client of a Weir partition node (grpc.aio, protoc-generated messages), and the SDK's
config builders (`stream_config`, `stream_source`, `consumer_config`, which return weir.info's
dataclasses).

`NodeClient` is the low-level, one-node wire client that services, gateways and the router use: it
speaks weir.v1.Streams on a node's client port and answers in the generated protobuf messages of
weir.v1 (streams.proto, types.proto give the shapes); `create_stream` and `create_consumer` also take
the SDK's `StreamConfig` / `ConsumerConfig`. An application uses `weir.Client`, which takes and
returns only the SDK's own types (weir.info, weir.message). `NodeClient` (the internal port's clients are in
`weir_server.internal_clients`, outside the SDK). Every failed call raises a typed `WeirError` (see
weir.errors) with the server's result code; transport failures raise `UnavailableError`
(retryable). Routing over a cluster (QueryRoute, retries with route refresh, consumer groups) builds
on this with the router.

Shutdown: `await client.close()` (or `async with`) closes the channel; calls in flight fail with
`UnavailableError`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, Self, TypeVar

import grpc

from weir import tls as tls_module
from weir.errors import InvalidArgumentError, UnavailableError, WeirError
from weir.info import (
    DELIVER_POLICIES,
    RETENTION_POLICIES,
    SOURCE_DROP_POLICIES,
    STORAGE_KINDS,
    ConsumerConfig,
    StreamConfig,
    StreamSource,
    consumer_config_of,
    option,
    stream_config_of,
)
from weir.message import PublishAck
from weir.options import AckLevel, DeliverPolicy, Retention, SourceDropPolicy, Storage
from weir.v1 import router_pb2, streams_pb2, streams_pb2_grpc, types_pb2

DEFAULT_TIMEOUT_S = 30.0
# What a lockstep publish leaves the node of the client's timeout to answer in (timeout_ms).
EXCHANGE_TIMEOUT_MARGIN_MS = 250
MAX_PUBLISH_TIMEOUT_MS = 300_000  # PublishRequest.timeout_ms's bound
MAX_GRPC_MESSAGE_BYTES = 64 * 1024 * 1024
# Reconnect within a second of a node coming back (gRPC's default backoff grows to two minutes, so
# a replicator or client whose node was down for a few seconds waited seconds more for it).
RECONNECT_BACKOFF_MAX_MS = 1000
# A node or router that falls silent while a call waits on it (a network partition, a host that
# froze) is noticed within KEEPALIVE_TIME_MS + KEEPALIVE_TIMEOUT_MS: the channel pings it and, with no
# answer, fails the waiting calls with UNAVAILABLE, which the cluster client retries on a fresh route.
# Without pings a call to a silent peer waited for its whole deadline (30 s by default). Pings are
# sent only while calls are in flight.
KEEPALIVE_TIME_MS = 2000
KEEPALIVE_TIMEOUT_MS = 2000
CHANNEL_OPTIONS = [
    ("grpc.max_receive_message_length", MAX_GRPC_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_GRPC_MESSAGE_BYTES),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", RECONNECT_BACKOFF_MAX_MS),
    ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.keepalive_permit_without_calls", 0),
    ("grpc.http2.max_pings_without_data", 0),
]
# What a Weir server sets so that those pings are answered, not punished: gRPC's default server
# closes a connection (GOAWAY "too_many_pings") that pings more often than every 5 minutes while it
# sends no data, as a call waiting for replication does.
KEEPALIVE_SERVER_OPTIONS = [
    ("grpc.http2.min_recv_ping_interval_without_data_ms", KEEPALIVE_TIME_MS // 2),
    ("grpc.http2.max_ping_strikes", 0),
]
Request = TypeVar("Request")
Response = TypeVar("Response")

ACK_LEVELS = {
    "leader": streams_pb2.ACK_LEVEL_LEADER,
    "none": streams_pb2.ACK_LEVEL_NONE,
    "all": streams_pb2.ACK_LEVEL_ALL,
}


def endpoints_of(address: str) -> router_pb2.Endpoints:
    """The Endpoints of one "host:port" (how a request tells the router which address it used)."""
    host, _, port = address.rpartition(":")
    return router_pb2.Endpoints(scheme="ipv4", addresses=[router_pb2.Address(host=host, port=int(port or 0))])


def headers_of(headers: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> list[types_pb2.Header]:
    if headers is None:
        return []
    items = headers.items() if isinstance(headers, Mapping) else headers
    return [types_pb2.Header(key=key, value=value) for key, value in items]


def stream_config(
    name: str,
    *,
    subjects: Sequence[str] = (),
    partitions: int = 1,
    retention: Retention = "limits",
    max_age_ms: int | None = None,
    max_msgs: int | None = None,
    max_bytes: int | None = None,
    max_msgs_per_subject: int | None = None,
    max_msg_bytes: int = 0,
    storage: Storage = "file",
    replicas: int = 1,
    min_insync_replicas: int = 0,
    deliver_up_to_high_watermark: bool = False,
    duplicate_window_ms: int = 0,
    duplicate_window_max_msgs: int = 0,
    allow_scheduled_messages: bool = False,
    sources: Iterable[StreamSource] = (),
) -> StreamConfig:
    """A `weir.StreamConfig` (weir.info) from keyword arguments (None = no bound; 0 = the server's
    default; sizes in bytes, ages in ms); `sources` from `stream_source`. Errors: InvalidOptionError
    (a ValueError) for a `retention` or `storage` that is not one of the Literal's values; the
    router checks the rest when the stream is created (InvalidConfigError)."""
    option(RETENTION_POLICIES, "retention", retention)
    option(STORAGE_KINDS, "storage", storage)
    return StreamConfig(
        name=name,
        subjects=tuple(subjects),
        retention=retention,
        max_age_ms=max_age_ms,
        max_msgs=max_msgs,
        max_bytes=max_bytes,
        max_msgs_per_subject=max_msgs_per_subject,
        max_msg_bytes=max_msg_bytes,
        partitions=partitions,
        replicas=replicas,
        storage=storage,
        min_insync_replicas=min_insync_replicas,
        deliver_up_to_high_watermark=deliver_up_to_high_watermark,
        duplicate_window_ms=duplicate_window_ms,
        duplicate_window_max_msgs=duplicate_window_max_msgs,
        allow_scheduled_messages=allow_scheduled_messages,
        sources=tuple(sources),
    )


def stream_source(
    source_stream: str,
    *,
    filter_subject: str = "",
    start_seq: int = 0,
    transform: tuple[str, str] | None = None,
    max_initial_backfill: int = 0,
    on_drop: SourceDropPolicy = "halt",
    dlq_stream: str = "",
) -> StreamSource:
    """One source of a sourcing stream (`weir.StreamSource`, StreamConfig.sources, the streams
    seed's StreamSourceConfigPb): `transform` is (source_pattern, destination), e.g. ("events.>",
    "audit.{{wildcard(1)}}"); `on_drop` "halt" or "skip" (to the first available message).
    Errors: InvalidOptionError for an unknown on_drop; the server checks the rest (InvalidConfigError)."""
    option(SOURCE_DROP_POLICIES, "on_drop", on_drop)
    return StreamSource(
        source_stream=source_stream,
        filter_subject=filter_subject,
        start_seq=start_seq,
        subject_transform=transform,
        max_initial_backfill=max_initial_backfill,
        on_drop=on_drop,
        dlq_stream=dlq_stream,
    )


class GrpcClient:
    """The channel and typed-error calls every Weir gRPC client shares (one address)."""

    def __init__(
        self, address: str, timeout_s: float, *, tls: tls_module.Security = tls_module.PROCESS_DEFAULT
    ) -> None:
        """`tls`: a ChannelSecurity, None for plaintext, or (default) the process default
        (weir.tls: a service's own settings, else the WEIR_TLS_* variables)."""
        self.address = address
        self.timeout_s = timeout_s
        # Bidirectional (lockstep) calls carry the bearer token themselves (tls.aio_channel says why).
        self.channel = tls_module.aio_channel(address, CHANNEL_OPTIONS, tls, intercept_stream_streams=False)
        self.stream_metadata = tls_module.call_metadata(tls)

    async def close(self) -> None:
        """Close the channel (calls in flight fail with UnavailableError)."""
        await self.channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _call(self, method: Any, request: Any, timeout_s: float | None = None) -> Any:
        try:
            return await method(request, timeout=timeout_s or self.timeout_s)
        except grpc.aio.AioRpcError as error:
            raise WeirError.from_rpc_error(error) from None

    def _stream(self, method: Any, request: Any) -> AsyncIterator[Any]:
        return typed_stream(method, request)


async def typed_stream(method: Any, request: Any) -> AsyncIterator[Any]:
    """Items of a server-streaming call (`method` a stub's); failures raise typed errors; cancels
    the call on exit."""
    call = method(request)
    try:
        async for item in call:
            yield item
    except grpc.aio.AioRpcError as error:
        raise WeirError.from_rpc_error(error) from None
    finally:
        call.cancel()


_CORE_INTERNAL = "Internal error from Core"


class LockstepStream(Generic[Request, Response]):
    """A bidirectional call used as a series of request-response exchanges: one response per
    request, in order (the server side is `servicers.lockstep`). A stream item costs about a third
    of a unary call's CPU on each end here (docs/benchmarks.md), so loops that call one method over
    and over (replication, the SDK's batch publish, fetch and ack) use these instead of unary calls.

    Any failure (an error status, a timeout, the server ending the stream, cancellation) cancels the
    call and raises a `WeirError` (cancellation propagates as is); the next `exchange` opens a new
    call, as does an exchange on a call the server ended since the last one (a restarted node).
    Not for concurrent use: one exchange at a time.
    """

    def __init__(self, open_call: Callable[[], Any]) -> None:
        self._open_call = open_call
        self._call: Any = None

    async def exchange(self, request: Request, timeout_s: float) -> Response:
        """Send `request`, return its response. Errors: the `WeirError` the unary call would raise;
        UnavailableError when `timeout_s` passes or the server ends the stream without an error."""
        if self.ended():  # the server went away (or ended it) since the last exchange: nothing sent yet
            self.close()
        if self._call is None:
            self._call = self._open_call()
        call = self._call
        try:
            async with asyncio.timeout(timeout_s):
                await call.write(request)
                response = await call.read()
        except grpc.aio.AioRpcError as error:
            self.close()
            if error.code() == grpc.StatusCode.INTERNAL and error.details() == _CORE_INTERNAL:
                # grpc.aio's answer to a write on a call whose connection just died (a unary call
                # gets UNAVAILABLE there); our servers' own INTERNAL errors carry a Weir ErrorInfo.
                raise UnavailableError(f"the connection was lost mid-stream ({_CORE_INTERNAL})") from None
            raise WeirError.from_rpc_error(error) from None
        except TimeoutError:
            self.close()
            raise UnavailableError(f"no answer within {timeout_s:.1f} s on a lockstep stream") from None
        except Exception as error:  # the call ended between the check and the write ("RPC already finished")
            self.close()
            raise UnavailableError(f"the lockstep stream ended: {error!r}") from None
        except BaseException:  # cancellation: the caller's, re-raised as is
            self.close()
            raise
        if response is grpc.aio.EOF:
            self.close()
            raise UnavailableError("the server ended the lockstep stream")
        return response  # type: ignore[no-any-return]

    def ended(self) -> bool:
        """True when the call was opened and has ended since (the server went away, say)."""
        return self._call is not None and bool(self._call.done())

    def close(self) -> None:
        """Cancel the open call, if any."""
        if self._call is not None:
            self._call.cancel()
            self._call = None


class LockstepPool(Generic[Request, Response]):
    """Exchanges on a bounded pool of `LockstepStream`s of one method: each exchange takes an idle
    stream (or opens one), so concurrent callers never share a call, and gives it back afterwards;
    at most `max_idle` idle streams are kept open."""

    def __init__(self, open_call: Callable[[], Any], max_idle: int = 8) -> None:
        self._open_call = open_call
        self._max_idle = max_idle
        self._idle: list[LockstepStream[Request, Response]] = []

    async def exchange(self, request: Request, timeout_s: float) -> Response:
        """As `LockstepStream.exchange` (which reopens a call the server ended meanwhile)."""
        stream = self._idle.pop() if self._idle else LockstepStream[Request, Response](self._open_call)
        response = await stream.exchange(request, timeout_s)  # a failed stream closes itself
        if len(self._idle) < self._max_idle:
            self._idle.append(stream)
        else:
            stream.close()
        return response

    def close(self) -> None:
        """Cancel every idle stream's call (exchanges in progress keep theirs until they end)."""
        for stream in self._idle:
            stream.close()
        self._idle.clear()


class NodeClient(GrpcClient):
    """weir.v1.Streams (protobuf in and out: see the module docstring) on the node at `address`."""

    def __init__(
        self,
        address: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        tls: tls_module.Security = tls_module.PROCESS_DEFAULT,
    ) -> None:
        super().__init__(address, timeout_s, tls=tls)
        self.stub = streams_pb2_grpc.StreamsStub(self.channel)
        # The hot calls go over lockstep streams: a stream item costs both ends about a third of a
        # unary call's CPU (docs/benchmarks.md); errors and timeouts are those of the unary calls.
        metadata = self.stream_metadata
        self._publish_batches: LockstepPool[streams_pb2.PublishBatchRequest, streams_pb2.PublishBatchResponse] = (
            LockstepPool(lambda: self.stub.PublishBatchStream(metadata=metadata))
        )
        self._fetches: LockstepPool[streams_pb2.FetchRequest, streams_pb2.FetchResponse] = LockstepPool(
            lambda: self.stub.FetchStream(metadata=metadata)
        )
        self._ack_batches: LockstepPool[streams_pb2.AckBatchRequest, streams_pb2.AckBatchResponse] = LockstepPool(
            lambda: self.stub.AckBatchStream(metadata=metadata)
        )

    async def close(self) -> None:
        for pool in (self._publish_batches, self._fetches, self._ack_batches):
            pool.close()
        await super().close()

    async def create_stream(
        self, config: StreamConfig | types_pb2.StreamConfig, placement: types_pb2.StreamPlacement | None = None
    ) -> types_pb2.StreamConfig:
        """Create (or idempotently re-create) a stream (`stream_config(...)` or the proto); returns the
        effective config. `placement`: the router's (a clustered node's internal port), else None."""
        request = streams_pb2.CreateStreamRequest(config=stream_config_of(config))
        if placement is not None:
            request.placement.CopyFrom(placement)
        response = await self._call(self.stub.CreateStream, request)
        return response.config  # type: ignore[no-any-return]

    async def delete_stream(self, name: str) -> None:
        """Delete a stream on this standalone node. Errors: NoSuchStreamError."""
        await self._call(self.stub.DeleteStream, streams_pb2.DeleteStreamRequest(name=name))

    async def stream_info(self, name: str) -> streams_pb2.GetStreamInfoResponse:
        """The stream's config and per-partition stats (GetStreamInfoResponse). Errors: NoSuchStreamError."""
        return await self._call(self.stub.GetStreamInfo, streams_pb2.GetStreamInfoRequest(name=name))  # type: ignore[no-any-return]

    async def list_streams(self) -> list[str]:
        """The names of this node's streams."""
        response = await self._call(self.stub.ListStreams, streams_pb2.ListStreamsRequest())
        return list(response.names)

    async def update_stream(self, request: streams_pb2.UpdateStreamRequest) -> streams_pb2.UpdateStreamResponse:
        """Change a stream's limits (see Client.update_stream). Errors: NoSuchStreamError, InvalidConfigError."""
        return await self._call(self.stub.UpdateStream, request)  # type: ignore[no-any-return]

    async def publish(
        self,
        stream: str,
        subject: str,
        payload: bytes,
        *,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        key: bytes | None = None,
        partition: int | None = None,
        expected_last_seq: int | None = None,
        ts_ms: int = 0,
        ack_level: AckLevel = "leader",
        msg_id: str = "",
        delay_ms: int = 0,
        deliver_at_ms: int = 0,
        hold: bool = False,
        rollup: bool = False,
        ttl_ms: int = 0,
    ) -> PublishAck:
        """Publish one message; returns (partition, seq, duplicate, scheduled) once acknowledged per
        `ack_level`. With `msg_id`, a repeat within the stream's duplicate window stores nothing
        and answers the original seq with `duplicate` set. `delay_ms` / `deliver_at_ms` (ms since
        the Unix epoch): delayed delivery, on a stream with allow_scheduled_messages. `rollup`: the
        message replaces every earlier one at its subject (streams.proto PublishRequest.rollup);
        `ttl_ms`: it is removed this long after it is stored (PublishRequest.ttl_ms)."""
        request = streams_pb2.PublishRequest(
            stream=stream,
            subject=subject,
            payload=payload,
            headers=headers_of(headers),
            ts_ms=ts_ms,
            ack_level=option(ACK_LEVELS, "ack_level", ack_level),
            msg_id=msg_id,
            delay_ms=delay_ms,
            deliver_at_ms=deliver_at_ms,
            hold=hold,
            rollup=rollup,
            ttl_ms=ttl_ms,
        )
        if key is not None:
            request.key = key
        if partition is not None:
            request.partition = partition
        if expected_last_seq is not None:
            request.expected_last_seq = expected_last_seq
        response = await self._call(self.stub.Publish, request)
        return PublishAck(response.partition, response.seq, response.duplicate, response.scheduled)

    async def publish_batch(
        self, stream: str, entries: Sequence[streams_pb2.PublishEntry], *, ack_level: AckLevel = "leader"
    ) -> list[streams_pb2.PublishResult]:
        """Publish many messages in one exchange (PublishBatch semantics, on PublishBatchStream);
        one result per entry, in order. The node answers an ack_level "all" publish within this
        client's timeout (less a margin), so a slow replica surfaces as replication_timeout, which is
        retryable: entries with a msg_id are then stored once however often they are sent."""
        request = streams_pb2.PublishBatchRequest(
            stream=stream, entries=entries, ack_level=option(ACK_LEVELS, "ack_level", ack_level)
        )
        return list((await self.exchange_publish_batch(request)).results)

    async def exchange_publish_batch(
        self, request: streams_pb2.PublishBatchRequest
    ) -> streams_pb2.PublishBatchResponse:
        """`request` as is on a lockstep PublishBatchStream (its `timeout_ms` set from this client's
        timeout, less a margin, when 0): the response has one result per entry, in order. Errors:
        as `publish_batch`."""
        if not request.timeout_ms:
            request.timeout_ms = min(
                MAX_PUBLISH_TIMEOUT_MS, max(1, int(self.timeout_s * 1000) - EXCHANGE_TIMEOUT_MARGIN_MS)
            )
        return await self._publish_batches.exchange(request, self.timeout_s)

    async def get_message(self, stream: str, partition: int, seq: int) -> types_pb2.Message:
        """The stored message at `seq` of `partition`. Errors: NoSuchMessageError (removed or never
        stored), CorruptRecordError (its checksum failed; it is never served)."""
        request = streams_pb2.GetMessageRequest(stream=stream, partition=partition, seq=seq)
        response = await self._call(self.stub.GetMessage, request)
        return response.message  # type: ignore[no-any-return]

    async def seq_at_time(self, stream: str, partition: int, time_ms: int) -> int:
        """The first seq of `partition` stored at or after `time_ms` (ms since the Unix epoch), or its
        next seq when none is (RocketMQ's QueryOffset by time point)."""
        request = streams_pb2.SeqAtTimeRequest(stream=stream, partition=partition, time_ms=time_ms)
        response = await self._call(self.stub.SeqAtTime, request)
        return int(response.seq)

    async def read_messages(
        self,
        stream: str,
        partition: int = 0,
        from_seq: int = 0,
        *,
        max_messages: int = 0,
        max_bytes: int = 0,
        filter_subject: str = "",
        last_per_subject_until: int = 0,
        max_wait_ms: int = 0,
    ) -> streams_pb2.ReadMessagesResponse:
        """ReadMessages (streams.proto): stored messages from `from_seq`, optionally only those
        matching `filter_subject`, only each subject's newest at or below `last_per_subject_until`,
        and waiting up to `max_wait_ms` for one. Continue from the answer's next_seq."""
        request = streams_pb2.ReadMessagesRequest(
            stream=stream,
            partition=partition,
            from_seq=from_seq,
            max_messages=max_messages,
            max_bytes=max_bytes,
            filter_subject=filter_subject,
            last_per_subject_until=last_per_subject_until,
            max_wait_ms=max_wait_ms,
        )
        return await self._call(  # type: ignore[no-any-return]
            self.stub.ReadMessages, request, self.timeout_s + max_wait_ms / 1000
        )

    async def read_all(self, stream: str, partition: int = 0, from_seq: int = 0) -> AsyncIterator[types_pb2.Message]:
        """Every stored message of a partition from `from_seq`, up to its last seq at call time."""
        response = await self.read_messages(stream, partition, from_seq, max_messages=1000)
        last_seq = response.last_seq
        while True:
            for message in response.messages:
                yield message
            if not response.messages or response.next_seq > last_seq:
                return
            response = await self.read_messages(stream, partition, response.next_seq, max_messages=1000)

    async def latest_at_subject(self, stream: str, subject: str, partition: int = 0) -> types_pb2.Message | None:
        """The newest message stored at exactly `subject` in `partition`, None when there is none (a KV get)."""
        request = streams_pb2.ReadLatestAtSubjectRequest(stream=stream, subject=subject, partition=partition)
        response = await self._call(self.stub.ReadLatestAtSubject, request)
        return response.latest if response.HasField("latest") else None

    async def list_subjects(self, stream: str, prefix: str = "", partition: int = 0, limit: int = 0) -> list[str]:
        """The distinct subjects stored in `partition` that start with `prefix`, sorted (at most
        `limit`; 0 = the node's bound)."""
        request = streams_pb2.ListSubjectsByPrefixRequest(
            stream=stream, prefix=prefix, partition=partition, limit=limit
        )
        response = await self._call(self.stub.ListSubjectsByPrefix, request)
        return list(response.subjects)

    async def latest_by_prefix(
        self, stream: str, prefix: str = "", partition: int = 0, limit: int = 0
    ) -> tuple[list[types_pb2.Message], bool]:
        """ListSubjectsByPrefix with include_latest: the newest readable message of each subject
        starting with `prefix`, sorted by subject, and whether `limit` (0 = 10,000) or 4 MiB cut
        the list."""
        request = streams_pb2.ListSubjectsByPrefixRequest(
            stream=stream, prefix=prefix, partition=partition, limit=limit, include_latest=True
        )
        response = await self._call(self.stub.ListSubjectsByPrefix, request)
        return list(response.latest), bool(response.truncated)

    async def scan_subject(
        self, stream: str, subject: str, partition: int = 0, from_seq: int = 0, limit: int = 0
    ) -> list[types_pb2.Message]:
        """The messages stored at exactly `subject` in `partition` from `from_seq` on, oldest first (at
        most `limit`; 0 = the node's bound)."""
        request = streams_pb2.ScanExactAtSubjectRequest(
            stream=stream, subject=subject, partition=partition, from_seq=from_seq, limit=limit
        )
        response = await self._call(self.stub.ScanExactAtSubject, request)
        return list(response.messages)

    def watch_streams(self, from_change_seq: int = 0) -> AsyncIterator[streams_pb2.WatchEvent]:
        """Stream created/updated/deleted events of this node from `from_change_seq` (0 = from now)."""
        return self._stream(self.stub.WatchStreams, streams_pb2.WatchStreamsRequest(from_change_seq=from_change_seq))

    # -- consumers -------------------------------------------------------------------------------

    async def create_consumer(
        self, stream: str, config: ConsumerConfig | types_pb2.ConsumerConfig
    ) -> types_pb2.ConsumerInfo:
        """Create a durable consumer (`consumer_config(...)` or the proto; idempotent for the same
        config); returns its info."""
        request = streams_pb2.CreateConsumerRequest(stream=stream, config=consumer_config_of(config))
        response = await self._call(self.stub.CreateConsumer, request)
        return response.info  # type: ignore[no-any-return]

    async def delete_consumer(self, stream: str, consumer: str) -> None:
        """Delete a consumer and its state. Errors: NoSuchStreamError, NoSuchConsumerError."""
        request = streams_pb2.DeleteConsumerRequest(stream=stream, consumer=consumer)
        await self._call(self.stub.DeleteConsumer, request)

    async def consumer_info(self, stream: str, consumer: str) -> types_pb2.ConsumerInfo:
        """A consumer's config and per-partition position (ConsumerInfo). Errors: NoSuchStreamError,
        NoSuchConsumerError."""
        request = streams_pb2.GetConsumerInfoRequest(stream=stream, consumer=consumer)
        response = await self._call(self.stub.GetConsumerInfo, request)
        return response.info  # type: ignore[no-any-return]

    async def list_consumers(self, stream: str) -> list[types_pb2.ConsumerInfo]:
        """Every consumer of `stream`. Errors: NoSuchStreamError."""
        response = await self._call(self.stub.ListConsumers, streams_pb2.ListConsumersRequest(stream=stream))
        return list(response.consumers)

    async def fetch(
        self,
        stream: str,
        consumer: str,
        partition: int = 0,
        *,
        batch_size: int = 0,
        max_wait_ms: int = 0,
        max_bytes: int = 0,
        ack_wait_ms: int = 0,
    ) -> list[types_pb2.Message]:
        """Up to `batch_size` (0 = 100) messages of one partition; waits up to `max_wait_ms` when
        none is ready. Each message carries partition, seq and deliver_count; it stays invisible
        for `ack_wait_ms` (0 = the consumer's ack_wait_ms)."""
        request = streams_pb2.FetchRequest(
            stream=stream,
            consumer=consumer,
            partition=partition,
            batch_size=batch_size,
            max_wait_ms=max_wait_ms,
            max_bytes=max_bytes,
            ack_wait_ms=ack_wait_ms,
        )
        response = await self._fetches.exchange(request, self.timeout_s + max_wait_ms / 1000)
        return list(response.messages)

    async def ack(self, stream: str, consumer: str, partition: int, seq: int, deliver_count: int = 0) -> None:
        """Acknowledge one message (only its delivery `deliver_count` when > 0). Raises
        NotPendingError when it is not pending, or was delivered again since that delivery."""
        request = streams_pb2.AckRequest(
            stream=stream, consumer=consumer, partition=partition, seq=seq, deliver_count=deliver_count
        )
        await self._call(self.stub.Ack, request)

    async def ack_batch(
        self, stream: str, consumer: str, partition: int, seqs: Iterable[int], deliver_counts: Iterable[int] = ()
    ) -> list[streams_pb2.AckResult]:
        """Acknowledge many messages of one partition (AckBatch semantics, on AckBatchStream); one
        AckResult ("ok" | "not_pending") per seq. `deliver_counts`: none, or one per seq, as in `ack`."""
        request = streams_pb2.AckBatchRequest(
            stream=stream, consumer=consumer, partition=partition, seqs=seqs, deliver_counts=deliver_counts
        )
        response = await self._ack_batches.exchange(request, self.timeout_s)
        return list(response.results)

    async def nak(
        self, stream: str, consumer: str, partition: int, seq: int, delay_ms: int = 0, *, deliver_count: int = 0
    ) -> None:
        """Redeliver one pending message after `delay_ms` (`deliver_count` as in `ack`)."""
        request = streams_pb2.NakRequest(
            stream=stream,
            consumer=consumer,
            partition=partition,
            seq=seq,
            delay_ms=delay_ms,
            deliver_count=deliver_count,
        )
        await self._call(self.stub.Nak, request)

    async def term(
        self, stream: str, consumer: str, partition: int, seq: int, deliver_count: int = 0, *, dead_letter: bool = False
    ) -> None:
        """Never redeliver one pending message (`deliver_count` as in `ack`); `dead_letter`: move it
        under the consumer's dead_letter_subject now (InvalidConfigError when it has none)."""
        request = streams_pb2.TermRequest(
            stream=stream,
            consumer=consumer,
            partition=partition,
            seq=seq,
            deliver_count=deliver_count,
            dead_letter=dead_letter,
        )
        await self._call(self.stub.Term, request)

    async def release_scheduled(self, stream: str, partition: int, seq: int, *, discard: bool = False) -> int:
        """Deliver now (or discard) the scheduled or held message at `seq`; returns the delivered seq, 0 when
        discarded; a held message's repeated release answers as the first (Streams.ReleaseScheduled). Errors:
        SchedulingDisabledError, AlreadyResolvedError (contradicts the first), NoSuchMessageError, NotLeaderError."""
        request = streams_pb2.ReleaseScheduledRequest(stream=stream, partition=partition, seq=seq, discard=discard)
        response = await self._call(self.stub.ReleaseScheduled, request)
        return int(response.delivered_seq)

    async def list_scheduled(
        self, stream: str, partition: int, *, held_only: bool = False, from_seq: int = 0, max_messages: int = 0
    ) -> streams_pb2.ListScheduledResponse:
        """The scheduled (or only held) messages a partition still holds, as stored, in seq order."""
        request = streams_pb2.ListScheduledRequest(
            stream=stream, partition=partition, held_only=held_only, from_seq=from_seq, max_messages=max_messages
        )
        return await self._call(self.stub.ListScheduled, request)  # type: ignore[no-any-return]

    async def seek_consumer(
        self,
        stream: str,
        consumer: str,
        partition: int,
        *,
        seq: int | None = None,
        time_ms: int | None = None,
        end: bool = False,
    ) -> streams_pb2.SeekConsumerResponse:
        """SeekConsumer on this node (the partition's primary): exactly one of `seq` (deliver from
        it), `time_ms` (from the first message at or after it) or `end` (only new messages).
        Returns next_seq and dropped_pending. Errors: PositionOutOfRangeError, NoSuchConsumerError,
        InvalidArgumentError, NotLeaderError."""
        request = streams_pb2.SeekConsumerRequest(stream=stream, consumer=consumer, partition=partition)
        if sum((seq is not None, time_ms is not None, end)) != 1:
            raise InvalidArgumentError("give exactly one of seq, time_ms or end")
        if seq is not None:
            request.seq = seq
        elif time_ms is not None:
            request.time_ms = time_ms
        else:
            request.end = True
        return await self._call(self.stub.SeekConsumer, request)  # type: ignore[no-any-return]

    async def purge_partition(
        self, stream: str, partition: int, *, keep_from_seq: int | None = None, seqs: Sequence[int] = ()
    ) -> streams_pb2.PurgePartitionResponse:
        """PurgePartition on this node (the partition's primary): remove messages below
        `keep_from_seq` (None: all), or exactly `seqs`. Returns purged and first_seq. Errors:
        NotLeaderError, ..."""
        request = streams_pb2.PurgePartitionRequest(stream=stream, partition=partition, seqs=seqs)
        if keep_from_seq is not None:
            request.keep_from_seq = keep_from_seq
        return await self._call(self.stub.PurgePartition, request)  # type: ignore[no-any-return]

    async def in_progress(self, stream: str, consumer: str, partition: int, seq: int) -> int:
        """Restart the message's ack_wait; returns when it is now due for redelivery (ms)."""
        request = streams_pb2.InProgressRequest(stream=stream, consumer=consumer, partition=partition, seq=seq)
        response = await self._call(self.stub.InProgress, request)
        return int(response.redeliver_at_ms)

    def subscribe(
        self,
        stream: str,
        consumer: str,
        *,
        partitions: Iterable[int] = (),
        batch_size: int = 0,
        stop_when_empty: bool = False,
        deliver_group: str = "",
        batch_events: bool = False,
    ) -> AsyncIterator[streams_pb2.SubscribeEvent]:
        """Push delivery: SubscribeEvents (`message`, or `batch` with batch_events, and a final
        `stopped`) until cancelled."""
        request = streams_pb2.SubscribeRequest(
            stream=stream,
            consumer=consumer,
            partitions=partitions,
            batch_size=batch_size,
            stop_when_empty=stop_when_empty,
            deliver_group=deliver_group,
            batch_events=batch_events,
        )
        return self._stream(self.stub.Subscribe, request)


def consumer_config(
    name: str,
    *,
    filter_subject: str = "",
    deliver_policy: DeliverPolicy = "all",
    start_seq: int = 0,
    start_time_ms: int = 0,
    ack_wait_ms: int = 0,
    max_deliver: int = 0,
    dead_letter_subject: str = "",
    max_ack_pending: int = 0,
    deliver_group: str = "",
) -> ConsumerConfig:
    """A `weir.ConsumerConfig` (weir.info) from keyword arguments (times in ms; 0 = the server's
    default: ack_wait_ms 30 000, max_deliver 5, max_ack_pending 1 000). Errors: InvalidOptionError
    (a ValueError) for a `deliver_policy` that is not one of DELIVER_POLICIES."""
    option(DELIVER_POLICIES, "deliver_policy", deliver_policy)
    return ConsumerConfig(
        name=name,
        filter_subject=filter_subject,
        deliver_policy=deliver_policy,
        start_seq=start_seq,
        start_time_ms=start_time_ms,
        ack_wait_ms=ack_wait_ms,
        max_deliver=max_deliver,
        dead_letter_subject=dead_letter_subject,
        max_ack_pending=max_ack_pending,
        deliver_group=deliver_group,
    )
