"""Who may call a client port, with an auth file: `AuthInterceptor` authenticates every `weir.v1`
call (the bearer token in its `authorization` metadata: a user's, or the service token) and
checks what the call needs (`weir_server.permissions`) against the caller's grants, before the
servicer runs. Unknown callers get UNAUTHENTICATED; known ones without the permission
PERMISSION_DENIED naming what was missing; either way nothing changes. Calls with a request stream
(PublishBatchStream, FetchStream, AckBatchStream) are checked item by item, the caller too (a
revoked token ends a long-lived stream at its next item): the first item not allowed ends the call
(the items before were answered); a server stream (Subscribe, WatchStreams) again before it sends
a response, at most once a second. gRPC server reflection (which lists every service and message
type of the port) needs a known caller too, any user (no grant), and is checked at each request of
its stream; health stays open (it says SERVING or not, nothing else).

Each call (each item of a request stream) also takes one request of the caller's rate
(`Principal.rate`, weir_server.ratelimit): past it the call is refused RESOURCE_EXHAUSTED
(`rate_limited`, retryable) with the wait in google.rpc.RetryInfo and `retry_after_ms`.
"""

from __future__ import annotations

import inspect
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import grpc
from weir.errors import PermissionDeniedError, RateLimitedError, UnauthenticatedError

from weir_server import permissions
from weir_server.auth import CLUSTER, Authenticator, Principal
from weir_server.interceptors import MethodWrappingInterceptor
from weir_server.ratelimit import RequestBuckets

logger = logging.getLogger(__name__)
BEARER = "bearer "
# How often an open server stream (Subscribe, WatchStreams) checks its caller again before it sends
# more: a revoked token or grant ends it within about this long of its next response.
RECHECK_INTERVAL_S = 1.0
# gRPC server reflection's method paths (grpcio-reflection serves v1alpha; v1 is its successor).
REFLECTION_PREFIXES = ("/grpc.reflection.v1alpha.ServerReflection/", "/grpc.reflection.v1.ServerReflection/")
# What reflection needs: a known caller (what `cluster` means: any user of the auth file).
KNOWN_CALLER = permissions.Requirement(CLUSTER)


def bearer_token_of(metadata: Metadata) -> str:
    """The token of an `authorization: Bearer <token>` entry of `metadata`, "" when there is none."""
    for key, value in metadata:
        if key == "authorization" and isinstance(value, str) and value.lower().startswith(BEARER):
            return value[len(BEARER) :].strip()
    return ""


Metadata = Sequence[tuple[str, str | bytes]]
# Who the caller is, from its call metadata: (the principal or None, why not when None).
Identify = Callable[[Authenticator, Metadata], tuple[Principal | None, str]]
# What a call needs: None = only the cluster's services may make it.
RequirementOf = Callable[[str, Any], permissions.Requirement | None]


def identify_by_bearer_token(authenticator: Authenticator, metadata: Metadata) -> tuple[Principal | None, str]:
    """The caller of an `authorization: Bearer <token>` entry (Weir's own way)."""
    token = bearer_token_of(metadata)
    found = authenticator.authenticate(token)
    if found is not None:
        return found, ""
    return None, "its token is not known" if token else "it sent no token (authorization: Bearer)"


class AuthInterceptor(MethodWrappingInterceptor):
    """See the module docstring. A front door of another protocol passes its own `identify` (how
    its clients present credentials), `requirement` (what each of its methods needs),
    `first_item_names_it` (its request streams whose first item names what the whole call acts on:
    every item is checked against the first one's requirement) and `prefixes` (its service's
    method paths); server reflection's methods are always guarded too (a known caller)."""

    def __init__(
        self,
        authenticator: Authenticator,
        buckets: RequestBuckets | None = None,
        *,
        identify: Identify = identify_by_bearer_token,
        requirement: RequirementOf = permissions.requirement,
        first_item_names_it: Callable[[str], bool] = permissions.first_item_names_it,
        prefixes: tuple[str, ...] = ("/weir.v1.",),
    ) -> None:
        super().__init__((*prefixes, *REFLECTION_PREFIXES))
        self.authenticator = authenticator
        self.buckets = buckets if buckets is not None else RequestBuckets()
        self.identify = identify
        self.requirement = requirement
        self.first_item_names_it = first_item_names_it

    def wrap(self, method: str, handler: Any) -> Any:
        replaced: dict[str, Any] = {}
        for kind in ("unary_unary", "unary_stream", "stream_unary", "stream_stream"):
            behavior = getattr(handler, kind)
            if behavior is not None:
                replaced[kind] = self._guarded(method, kind, behavior)
        return handler._replace(**replaced)

    async def principal(self, method: str, context: grpc.aio.ServicerContext, *, counts: bool = True) -> Principal:
        """The caller; aborts the call UNAUTHENTICATED when it is not known, RESOURCE_EXHAUSTED
        when it is past its request rate (a request that `counts`: not a re-check of an open call)."""
        self.authenticator.refresh()
        found, reason = self.identify(self.authenticator, context.invocation_metadata() or ())
        if found is None:
            await context.abort_with_status(
                UnauthenticatedError(f"{method}: the caller is not known: {reason}").to_status()
            )
        assert found is not None
        if counts and found.rate is not None:
            wait_s = self.buckets.take(found.name, found.rate, time.monotonic())
            if wait_s:
                retry_after_ms = max(1, math.ceil(wait_s * 1000))
                error = RateLimitedError(
                    f"{method}: user {found.name!r} sent more than {found.rate.per_second:g} requests a second "
                    f"(burst {found.rate.burst:g}); nothing was done, retry in {retry_after_ms} ms",
                    identity=found.name,
                    retry_after_ms=retry_after_ms,
                )
                await context.abort_with_status(error.to_status())
        return found

    async def authorize(
        self, method: str, principal: Principal, request: Any, context: grpc.aio.ServicerContext
    ) -> None:
        """Aborts the call PERMISSION_DENIED unless `principal` may make it."""
        if principal.service:
            return
        needed = KNOWN_CALLER if method.startswith(REFLECTION_PREFIXES) else self.requirement(method, request)
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
                checked_at = time.monotonic()
                async for response in behavior(request, context):
                    if time.monotonic() - checked_at >= RECHECK_INTERVAL_S:  # a revoked token or grant ends it
                        principal = await self.principal(method, context, counts=False)
                        await self.authorize(method, principal, request, context)
                        checked_at = time.monotonic()
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
            first: Any = None
            async for request in requests:
                if first is None or not self.first_item_names_it(method):
                    first = request
                await self.authorize(method, await self.principal(method, context), first, context)
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
