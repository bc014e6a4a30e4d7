"""The invoker's connections to deployments: one HTTP/2 connection per deployment, shared by its
attempts and rotated after `max_streams` streams (servers end a connection after so many requests:
hypercorn after 1,000, with a GOAWAY on which grpclib drops the streams still open; the old one is
retired, closed once idle); or, for a deployment that speaks HTTP/1.1 only, httpx's pool."""

from __future__ import annotations

import asyncio

from weir_invoker.http1 import Http1Connection
from weir_invoker.http2 import Connection, Endpoint

DeploymentConnection = Connection | Http1Connection


class ConnectionPool:
    def __init__(self, max_streams: int) -> None:
        self.max_streams = max_streams
        self._http2: dict[str, Connection] = {}
        self._http1: dict[str, Http1Connection] = {}
        self._retired: list[Connection] = []
        self._opening = asyncio.Lock()

    async def get(self, deployment_id: str, url: str, *, http1: bool = False) -> DeploymentConnection:
        """The deployment's connection. Errors: DeploymentUnreachable."""
        async with self._opening:
            if http1:
                pooled = self._http1.get(deployment_id)
                if pooled is None or pooled.closed:
                    pooled = self._http1[deployment_id] = Http1Connection(Endpoint.parse(url))
                return pooled
            connection = self._http2.get(deployment_id)
            if connection is not None and connection.streams_opened >= self.max_streams:
                connection.retire()
                for idle in [old for old in self._retired if old.open_streams == 0]:  # retired a rotation ago
                    idle.close()
                    self._retired.remove(idle)
                self._retired.append(connection)
            if connection is None or connection.closed or connection.retired:
                connection = self._http2[deployment_id] = await Connection.open(Endpoint.parse(url))
            return connection

    async def close(self) -> None:
        for connection in [*self._http2.values(), *self._retired]:
            connection.close()
        for pooled in self._http1.values():
            await pooled.aclose()
