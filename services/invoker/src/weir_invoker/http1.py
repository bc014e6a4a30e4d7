"""HTTP/1.1 deployments, in REQUEST_RESPONSE mode only (the specification's "Request/Response
stream": the runtime's messages are one request body, the SDK's one response body), over httpx.
A deployment that does not speak HTTP/2 (an HTTP/1.1-only server, a function URL) is reached so;
its manifest must say REQUEST_RESPONSE (full duplex needs HTTP/2).

The classes mirror http2's `Connection` and `ClientStream`, so an attempt does not know which it
has. Errors: DeploymentUnreachable.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import httpx

from weir_invoker.http2 import DeploymentUnreachable, Endpoint
from weir_invoker.protocol import Frame, FrameDecoder, ProtocolViolation

TIMEOUT = httpx.Timeout(connect=5.0, read=None, write=30.0, pool=30.0)
MAX_CONNECTIONS = 64  # the invoker's default max_concurrent_attempts
_CLOSING: set[asyncio.Task[None]] = set()  # responses being released (a reference keeps each task alive)


class Http1Connection:
    """A pool of HTTP/1.1 connections to one deployment (httpx keeps them alive)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS)
        self._client = httpx.AsyncClient(http1=True, http2=False, timeout=TIMEOUT, limits=limits)
        self.streams_opened = 0  # as http2.Connection: a pool never needs rotating
        self.open_streams = 0
        self.retired = False
        self.closed = False

    def retire(self) -> None:
        self.retired = True

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True
        await self._client.aclose()

    async def request(
        self, method: str, path: str, headers: Sequence[tuple[str, str]] = (), *, end_stream: bool = False
    ) -> Http1Stream:
        """A request whose body is what is sent before the request side ends (`end_stream`)."""
        if self.closed:
            raise DeploymentUnreachable(f"the connection pool of {self.endpoint.authority} is closed")
        url = f"{self.endpoint.scheme}://{self.endpoint.authority}{self.endpoint.path_prefix}{path}"
        stream = Http1Stream(self._client, method, url, list(headers))
        if end_stream:
            await stream.send(b"", end_stream=True)
        return stream

    async def get_body(
        self, path: str, headers: Sequence[tuple[str, str]], max_bytes: int
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of a GET (discovery). Errors: DeploymentUnreachable, ProtocolViolation."""
        url = f"{self.endpoint.scheme}://{self.endpoint.authority}{self.endpoint.path_prefix}{path}"
        try:
            async with self._client.stream("GET", url, headers=list(headers)) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > max_bytes:
                        raise ProtocolViolation(f"a response body over {max_bytes} bytes")
                return (
                    response.status_code,
                    {key.lower(): value for key, value in response.headers.items()},
                    bytes(body),
                )
        except httpx.HTTPError as error:
            raise DeploymentUnreachable(f"{self.endpoint.authority} over HTTP/1.1: {error!r}") from None


class Http1Stream:
    """One request: its body collected until the request side ends, then sent; the response's
    frames read as they arrive."""

    def __init__(self, client: httpx.AsyncClient, method: str, url: str, headers: list[tuple[str, str]]) -> None:
        self._client = client
        self._method = method
        self._url = url
        self._headers = headers
        self._body = bytearray()
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._decoder = FrameDecoder()
        self._frames: list[Frame] = []

    async def send(self, data: bytes, *, end_stream: bool = False) -> None:
        self._body += data
        if end_stream and self._response is None:
            request = self._client.build_request(
                self._method, self._url, headers=self._headers, content=bytes(self._body)
            )
            try:
                self._response = await self._client.send(request, stream=True)
            except httpx.HTTPError as error:
                raise DeploymentUnreachable(f"the request failed: {error!r}") from None
            self._chunks = self._response.aiter_bytes()

    async def end(self) -> None:
        await self.send(b"", end_stream=True)

    async def response_headers(self) -> dict[str, str]:
        if self._response is None:
            await self.end()
        assert self._response is not None
        headers = {key.lower(): value for key, value in self._response.headers.items()}
        return {**headers, ":status": str(self._response.status_code)}

    async def read_frame(self) -> Frame | None:
        """The next message of the response, None at its end. Errors: DeploymentUnreachable (cut
        inside a message, or the connection failed), ProtocolViolation."""
        while not self._frames:
            assert self._chunks is not None
            try:
                chunk = await anext(self._chunks, None)
            except httpx.HTTPError as error:
                raise DeploymentUnreachable(f"the response was cut: {error!r}") from None
            if chunk is None:
                if self._decoder.pending_bytes:
                    raise DeploymentUnreachable("the response ended inside a message")
                return None
            self._frames.extend(self._decoder.feed(chunk))
        return self._frames.pop(0)

    def reset(self) -> None:
        self.close()

    def close(self) -> None:
        """Release the response (its connection goes back to the pool, or is dropped if the
        response was not read to its end)."""
        if self._response is not None and not self._response.is_closed:
            task = asyncio.get_running_loop().create_task(self._response.aclose())
            _CLOSING.add(task)
            task.add_done_callback(_CLOSING.discard)
