"""The seed's in-body results around a handler (`seed_rpc`) and the refusals of what this door does
not serve; shared by the servicer and its cluster admin part."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from weir.errors import WeirError, WrongRevisionError

from weir_gateway import metrics
from weir_gateway.waymaker_streams import mapping

logger = logging.getLogger(__name__)
PROTOCOL = "waymaker_streams"
Handler = Callable[[Any, Any, grpc.aio.ServicerContext], Awaitable[Any]]


def seed_rpc(response: type[Any]) -> Callable[[Handler], Handler]:
    """Times the method and answers a WeirError in `response`'s body (success false, the seed's
    result code, the error's message; a wrong_revision Publish also carries the subject's last
    seq); anything else is result_code "internal", logged."""

    def decorate(handler: Handler) -> Handler:
        method = handler.__name__
        histogram = metrics.RPC_SECONDS.labels(PROTOCOL, method)

        @functools.wraps(handler)
        async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
            started = time.perf_counter()
            try:
                return await handler(self, request, context)
            except WeirError as error:
                code = mapping.seed_result_code(method, error)
                metrics.RPC_ERRORS.labels(PROTOCOL, method, code).inc()
                answer = response(success=False, result_code=code, message=error.message)
                if isinstance(error, WrongRevisionError):
                    answer.seq = int(error.metadata.get("last_seq", "0"))
                return answer
            except Exception as error:
                metrics.RPC_ERRORS.labels(PROTOCOL, method, "internal").inc()
                logger.exception("waymaker.streams %s failed", method)
                return response(success=False, result_code="internal", message=f"{type(error).__name__}: {error}")
            finally:
                histogram.observe(time.perf_counter() - started)

        return wrapper

    return decorate


def refusal(method: str, code: grpc.StatusCode, message: str) -> Handler:
    async def refuse(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        metrics.RPC_ERRORS.labels(PROTOCOL, method, code.name.lower()).inc()
        await context.abort(code, message)

    refuse.__name__ = method
    return refuse


OK: dict[str, Any] = {"success": True, "result_code": "ok"}
