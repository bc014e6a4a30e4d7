"""grpc.health.v1 for Weir's servers: grpcio's asyncio HealthServicer, but a Check of a service the
server does not report is NOT_FOUND with a message naming it (grpcio's answers NOT_FOUND without
one, where every other rejection of Weir's says why)."""

from __future__ import annotations

from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2


class HealthServicer(health.aio.HealthServicer):  # type: ignore[misc]
    async def Check(self, request: health_pb2.HealthCheckRequest, context: Any) -> health_pb2.HealthCheckResponse:
        if request.service not in self._server_status:
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"grpc.health.v1 Check: this server reports no service {request.service!r}"
            )
        response: health_pb2.HealthCheckResponse = await super().Check(request, context)
        return response
