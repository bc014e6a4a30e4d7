"""Server interceptors shared by Weir's gRPC services (grpc.aio's interceptor API).

`UndecodableRequestInterceptor`: a request body that is not the method's protobuf message is
answered INVALID_ARGUMENT with the result code `invalid_argument` and the decoder's complaint, as
any other bad input is (issue 22). Without it grpc.aio answers UNKNOWN "Unexpected DecodeError".
The method's own deserializer is wrapped to return a marker instead of raising, and its behavior
to abort the call when it meets the marker: for unary and server-streaming calls before the
servicer runs, for client- and bidirectional streams at the item that failed (earlier items were
answered). Streaming behaviors are wrapped when they are async generators, or server streams
written with `context.write` (grpc.aio picks how to drive a behavior by its kind); others pass
through. Wrapped handlers are built once per
method and reused.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from weir.errors import InvalidArgumentError


@dataclass(frozen=True, slots=True)
class _Undecodable:
    """What the wrapped deserializer returns for a body it could not decode."""

    method: str
    reason: str

    def error(self) -> InvalidArgumentError:
        return InvalidArgumentError(
            f"{self.method}: the request body is not a valid {self.method.rsplit('/', 1)[-1]} request message "
            f"({self.reason})"
        )


class MethodWrappingInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """An interceptor that replaces the handlers of the methods under `prefixes` (Weir's own
    services; health and reflection pass through) with `wrap(method, handler)`, built once per
    method and reused."""

    def __init__(self, prefixes: tuple[str, ...] = ("/weir.v1.",)) -> None:
        self._prefixes = prefixes
        self._wrapped: dict[str, grpc.RpcMethodHandler] = {}

    def wrap(self, method: str, handler: Any) -> Any:
        raise NotImplementedError

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method: str = handler_call_details.method
        wrapped = self._wrapped.get(method)
        if wrapped is not None:
            return wrapped
        handler = await continuation(handler_call_details)
        if handler is None or not method.startswith(self._prefixes):
            return handler
        wrapped = self.wrap(method, handler)
        self._wrapped[method] = wrapped
        return wrapped


class UndecodableRequestInterceptor(MethodWrappingInterceptor):
    """See the module docstring. Every method of the server by default (health and reflection
    too, whose servicers would answer UNKNOWN as well)."""

    def __init__(self, prefixes: tuple[str, ...] = ("/",)) -> None:
        super().__init__(prefixes)

    def wrap(self, method: str, handler: Any) -> Any:
        return handler if handler.request_deserializer is None else _guard(method, handler)


def _guard(method: str, handler: Any) -> Any:
    """`handler` (a grpc RpcMethodHandler namedtuple) with the deserializer and behavior wrapped."""
    deserialize = handler.request_deserializer

    def decode(data: bytes) -> Any:
        try:
            return deserialize(data)
        except DecodeError as error:
            return _Undecodable(method, str(error) or "truncated or malformed protobuf")

    for guard in (_guard_unary, _guard_server_stream, _guard_client_stream):
        guarded = guard(handler)
        if guarded is not None:
            return guarded._replace(request_deserializer=decode)
    return handler


async def _abort(request: _Undecodable, context: grpc.aio.ServicerContext) -> None:
    await context.abort_with_status(request.error().to_status())


def _guard_unary(handler: Any) -> Any:
    """A unary-unary handler that aborts on an undecodable request; None for other kinds."""
    if handler.unary_unary is None:
        return None
    unary = handler.unary_unary

    async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if isinstance(request, _Undecodable):
            await _abort(request, context)
        return await unary(request, context)

    return handler._replace(unary_unary=unary_unary)


def _guard_server_stream(handler: Any) -> Any:
    """A unary-stream handler (an async generator, or a coroutine writing with context.write as
    grpc's Health.Watch does) that aborts on an undecodable request; None for other kinds."""
    if handler.unary_stream is not None and inspect.isasyncgenfunction(handler.unary_stream):
        server_stream = handler.unary_stream

        async def unary_stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            if isinstance(request, _Undecodable):
                await _abort(request, context)
            async for response in server_stream(request, context):
                yield response

        return handler._replace(unary_stream=unary_stream)
    if handler.unary_stream is not None and inspect.iscoroutinefunction(handler.unary_stream):
        writer = handler.unary_stream

        async def unary_stream_writer(request: Any, context: grpc.aio.ServicerContext) -> None:
            if isinstance(request, _Undecodable):
                await _abort(request, context)
            await writer(request, context)

        return handler._replace(unary_stream=unary_stream_writer)
    return None


def _guard_client_stream(handler: Any) -> Any:
    """A stream-stream (async generator) or stream-unary handler whose request stream aborts at
    the first undecodable request; None for other kinds."""
    if handler.stream_stream is not None and inspect.isasyncgenfunction(handler.stream_stream):
        bidi = handler.stream_stream

        async def stream_stream(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            async for response in bidi(_checked(requests, context), context):
                yield response

        return handler._replace(stream_stream=stream_stream)
    if handler.stream_unary is not None:
        client_stream = handler.stream_unary

        async def stream_unary(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
            return await client_stream(_checked(requests, context), context)

        return handler._replace(stream_unary=stream_unary)
    return None


async def _checked(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
    async for request in requests:
        if isinstance(request, _Undecodable):
            await _abort(request, context)
        yield request
