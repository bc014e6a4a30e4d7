"""Who may call a port: the service identities a partition node's internal port serves.

Mutual TLS already refuses a caller without a certificate signed by the cluster CA at the handshake.
Clients' certificates may be signed by the same CA, so the internal port also checks the name in
the certificate: `ServiceIdentityInterceptor` answers every `weir.v1` call from a certificate whose
common name and DNS names are none of `allowed` with PERMISSION_DENIED, before the servicer runs
(health and reflection stay open). Plaintext servers have no peer certificate and do not install it.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import grpc
from weir.errors import PermissionDeniedError

from weir_server.interceptors import MethodWrappingInterceptor


def peer_names(context: grpc.aio.ServicerContext) -> list[str]:
    """The names in the caller's certificate (common name, then subject alternative names)."""
    auth = context.auth_context() or {}
    names: list[str] = []
    for key in ("x509_common_name", "x509_subject_alternative_name"):
        names.extend(value.decode(errors="replace") for value in auth.get(key, []))
    return names


class ServiceIdentityInterceptor(MethodWrappingInterceptor):
    """See the module docstring."""

    def __init__(self, allowed: Iterable[str], prefixes: tuple[str, ...] = ("/weir.v1.",)) -> None:
        super().__init__(prefixes)
        self.allowed = frozenset(allowed)

    def wrap(self, method: str, handler: Any) -> Any:
        return _checked(method, handler, self._check)

    async def _check(self, method: str, context: grpc.aio.ServicerContext) -> None:
        names = peer_names(context)
        if not self.allowed.intersection(names):
            shown = ", ".join(names) or "no certificate name"
            error = PermissionDeniedError(
                f"{method}: this port serves only the cluster's services ({', '.join(sorted(self.allowed))}); the "
                f"caller's certificate names {shown}",
                identity=shown,
            )
            await context.abort_with_status(error.to_status())


def _checked(method: str, handler: Any, check: Callable[[str, Any], Awaitable[None]]) -> Any:
    """`handler` with every behavior kind running `check(method, context)` first (async generators
    stay async generators: grpc.aio drives a behavior by its kind)."""
    replaced: dict[str, Any] = {}
    for kind in ("unary_unary", "unary_stream", "stream_unary", "stream_stream"):
        behavior = getattr(handler, kind)
        if behavior is None:
            continue
        if inspect.isasyncgenfunction(behavior):

            async def generator(
                request: Any, context: grpc.aio.ServicerContext, behavior: Any = behavior
            ) -> AsyncIterator[Any]:
                await check(method, context)
                async for response in behavior(request, context):
                    yield response

            replaced[kind] = generator
        else:

            async def call(request: Any, context: grpc.aio.ServicerContext, behavior: Any = behavior) -> Any:
                await check(method, context)
                result = behavior(request, context)
                return await result if inspect.isawaitable(result) else result

            replaced[kind] = call
    return handler._replace(**replaced)
