"""Who may call a client port, with an auth file: `AuthInterceptor` authenticates every `weir.v1`
call (the bearer token in its `authorization` metadata: a user's, or the service token) and
checks what the call needs (`weir_server.permissions`) against the caller's grants, before the
servicer runs. Unknown callers get UNAUTHENTICATED; known ones without the permission
PERMISSION_DENIED naming what was missing; either way nothing changes. Calls with a request stream
(PublishBatchStream, FetchStream, AckBatchStream) are checked item by item, the caller too (a
revoked token ends a long-lived stream at its next item): the first item not allowed ends the call
(the items before were answered). Health and reflection stay open.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc
from weir.errors import PermissionDeniedError, UnauthenticatedError

from weir_server import permissions
from weir_server.auth import Authenticator, Principal
from weir_server.interceptors import MethodWrappingInterceptor

logger = logging.getLogger(__name__)
BEARER = "bearer "


def bearer_token(context: grpc.aio.ServicerContext) -> str:
    """The token of an `authorization: Bearer <token>` metadata entry, "" when there is none."""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization" and isinstance(value, str) and value.lower().startswith(BEARER):
            return value[len(BEARER) :].strip()
    return ""


class AuthInterceptor(MethodWrappingInterceptor):
    """See the module docstring."""

    def __init__(self, authenticator: Authenticator) -> None:
        super().__init__()
        self.authenticator = authenticator

    def wrap(self, method: str, handler: Any) -> Any:
        replaced: dict[str, Any] = {}
        for kind in ("unary_unary", "unary_stream", "stream_unary", "stream_stream"):
            behavior = getattr(handler, kind)
            if behavior is not None:
                replaced[kind] = self._guarded(method, kind, behavior)
        return handler._replace(**replaced)

    async def principal(self, method: str, context: grpc.aio.ServicerContext) -> Principal:
        """The caller; aborts the call UNAUTHENTICATED when it is not known."""
        self.authenticator.refresh()
        token = bearer_token(context)
        found = self.authenticator.authenticate(token)
        if found is None:
            reason = "its token is not known" if token else "it sent no token (authorization: Bearer)"
            await context.abort_with_status(
                UnauthenticatedError(f"{method}: the caller is not known: {reason}").to_status()
            )
        assert found is not None
        return found

    async def authorize(
        self, method: str, principal: Principal, request: Any, context: grpc.aio.ServicerContext
    ) -> None:
        """Aborts the call PERMISSION_DENIED unless `principal` may make it."""
        if principal.service:
            return
        needed = permissions.requirement(method, request)
        if needed is not None and principal.may(needed.action, needed.stream, needed.subjects):
            return
        what = "call this (the cluster's services only)" if needed is None else needed.describe()
        logger.info("refused %s to %s: may not %s", method, principal.name, what)
        error = PermissionDeniedError(f"{method}: user {principal.name!r} may not {what}", identity=principal.name)
        await context.abort_with_status(error.to_status())

    def _guarded(self, method: str, kind: str, behavior: Any) -> Any:
        if kind.startswith("stream_"):
            return self._guarded_stream(method, kind, behavior)
        if inspect.isasyncgenfunction(behavior):

            async def generator(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                await self.authorize(method, await self.principal(method, context), request, context)
                async for response in behavior(request, context):
                    yield response

            return generator

        async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
            await self.authorize(method, await self.principal(method, context), request, context)
            result = behavior(request, context)
            return await result if inspect.isawaitable(result) else result

        return call

    def _guarded_stream(self, method: str, kind: str, behavior: Any) -> Any:
        async def checked(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            # Per item, the caller too: a long-lived stream ends once its token is revoked. Checked
            # after an item arrived, not when the call opens: an abort racing the client's first
            # write reaches grpc.aio's client as INTERNAL instead of the status.
            async for request in requests:
                await self.authorize(method, await self.principal(method, context), request, context)
                yield request

        if kind == "stream_stream" and inspect.isasyncgenfunction(behavior):

            async def bidirectional(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                async for response in behavior(checked(requests, context), context):
                    yield response

            return bidirectional

        async def client_stream(requests: Any, context: grpc.aio.ServicerContext) -> Any:
            result = behavior(checked(requests, context), context)
            return await result if inspect.isawaitable(result) else result

        return client_stream
