"""The check of a request's `endpoints` (the router addresses a client dialled), which QueryRoute
and QueryAssignment share before either reads or changes anything."""

from __future__ import annotations

from weir.errors import InvalidArgumentError
from weir.v1 import router_pb2


def check_endpoints(endpoints: router_pb2.Endpoints) -> None:
    """RocketMQ seed: an empty service access point is INVALID_ARGUMENT."""
    if not endpoints.addresses or any(not address.host or address.port <= 0 for address in endpoints.addresses):
        raise InvalidArgumentError(
            "endpoints: give the router address(es) you used (host and port > 0); an empty endpoints is invalid"
        )
