"""HTTP/2 client streams to handler deployments, on grpclib's HTTP/2 protocol layer (over h2).

The service protocol's BIDI_STREAM mode needs a full-duplex stream: the runtime keeps writing
(completions, acks) while it reads the deployment's entries. grpclib's `H2Protocol` is a plain HTTP/2
connection (flow control, pings, GOAWAY) with per-stream `send_data` / `recv_data(size)`, which is
what the 8-byte-header framing wants; no gRPC framing is involved. Cleartext deployments are spoken
to with HTTP/2 prior knowledge (h2c, what hypercorn and the SDKs' servers accept), `https://` ones
over TLS with ALPN h2.

Errors: DeploymentUnreachable (connect failed, the connection or the stream ended abruptly).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from grpclib.config import Configuration
from grpclib.exceptions import StreamTerminatedError
from grpclib.protocol import AbstractHandler, H2Protocol, Stream
from grpclib.utils import Wrapper
from h2.config import H2Configuration
from h2.exceptions import H2Error

from weir_invoker.protocol import HEADER_BYTES, Frame, ProtocolViolation, parse_header

CONNECT_TIMEOUT_S = 5.0
OPEN_STREAM_TIMEOUT_S = 5.0


class DeploymentUnreachable(Exception):
    """The deployment could not be reached, or a stream to it ended abruptly (retryable)."""


@dataclass(frozen=True)
class Endpoint:
    """Where a deployment listens: scheme, host, port and the path prefix its routes hang under."""

    scheme: str
    host: str
    port: int
    path_prefix: str

    @classmethod
    def parse(cls, url: str) -> Endpoint:
        """Errors: ValueError (not http(s)://host[:port][/prefix], or with a query or fragment)."""
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"deployment URL {url!r}: expected http://host:port or https://host:port")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ValueError(f"deployment URL {url!r}: no query, fragment or credentials")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise ValueError(f"deployment URL {url!r}: the port is not a number in 1..65535") from None
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"))

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


class _NoServerStreams(AbstractHandler):
    """A client connection: the deployment never opens streams to us."""

    def accept(self, stream: object, headers: object, release_stream: object) -> None:
        raise NotImplementedError("a deployment opened a stream to the invoker")

    def cancel(self, stream: object) -> None:
        pass

    def close(self) -> None:
        pass


class Connection:
    """One HTTP/2 connection to a deployment; many concurrent streams (one per invocation) on it."""

    def __init__(self, endpoint: Endpoint, protocol: H2Protocol) -> None:
        self.endpoint = endpoint
        self._protocol = protocol
        self._given_up = False
        self.streams_opened = 0
        self.open_streams = 0
        self.retired = False  # no new attempt should use it (one already given it still may)

    @classmethod
    async def open(cls, endpoint: Endpoint, ssl_context: ssl.SSLContext | None = None) -> Connection:
        """Errors: DeploymentUnreachable."""
        loop = asyncio.get_running_loop()
        config = Configuration().__for_client__()
        h2_config = H2Configuration(client_side=True, header_encoding="ascii", validate_inbound_headers=False)
        context = None
        if endpoint.scheme == "https":
            context = ssl_context or ssl.create_default_context()
            context.set_alpn_protocols(["h2"])
        try:
            _, protocol = await asyncio.wait_for(
                loop.create_connection(
                    lambda: H2Protocol(_NoServerStreams(), config, h2_config),
                    endpoint.host,
                    endpoint.port,
                    ssl=context,
                    server_hostname=endpoint.host if context else None,
                ),
                CONNECT_TIMEOUT_S,
            )
        except (OSError, TimeoutError) as error:
            raise DeploymentUnreachable(f"cannot connect to {endpoint.authority}: {error or 'timed out'}") from None
        return cls(endpoint, protocol)

    @property
    def closed(self) -> bool:
        return self._given_up or self._protocol.connection.is_closing()

    def close(self) -> None:
        self._given_up = True
        self._protocol.processor.close("closed by the invoker")

    def retire(self) -> None:
        """Open no more streams on it; close it once its open streams have ended (the caller
        closes it if none was open by then: an attempt may hold it between choosing it and opening
        its stream). (Servers end a
        connection after so many requests, hypercorn after keep_alive_max_requests, 1,000, with a
        GOAWAY on which grpclib drops the streams still open: a connection is retired first.)"""
        self.retired = True

    def _stream_ended(self) -> None:
        self.open_streams -= 1
        if self.retired and self.open_streams == 0:
            self._protocol.processor.close("retired")

    async def request(
        self, method: str, path: str, headers: Sequence[tuple[str, str]] = (), *, end_stream: bool = False
    ) -> ClientStream:
        """Open a stream with a request's headers (`path` below the endpoint's prefix). Errors:
        DeploymentUnreachable."""
        if self.closed:
            raise DeploymentUnreachable(f"the connection to {self.endpoint.authority} is closed")
        stream = self._protocol.connection.create_stream(wrapper=Wrapper())
        request_headers = [
            (":method", method),
            (":scheme", self.endpoint.scheme),
            (":path", self.endpoint.path_prefix + path),
            (":authority", self.endpoint.authority),
            *headers,
        ]
        client_stream = ClientStream(stream)
        opening = stream.send_request(request_headers, end_stream=end_stream, _processor=self._protocol.processor)
        try:
            with client_stream.guard():
                # grpclib waits for a stream to close when the deployment's max concurrent streams
                # are open; on a connection the deployment is closing (a GOAWAY: hypercorn sends one
                # after keep_alive_max_requests) none ever will, so the wait is bounded and the
                # connection given up: the attempt fails and the next one opens a new connection
                release = await asyncio.wait_for(opening, OPEN_STREAM_TIMEOUT_S)
        except (TimeoutError, StreamTerminatedError, H2Error) as error:
            # h2 refuses new streams on a connection the deployment closed (GOAWAY) before grpclib
            # has closed its transport: that connection is given up too
            self.close()
            reason = str(error) or type(error).__name__
            raise DeploymentUnreachable(f"no stream to {self.endpoint.authority} opened: {reason}") from None
        self.streams_opened += 1
        self.open_streams += 1

        def ended() -> None:
            release()
            self._stream_ended()

        client_stream.release = ended
        return client_stream


class ClientStream:
    """One request's stream: send body bytes, read the response's headers, frames or body."""

    def __init__(self, stream: Stream) -> None:
        self._stream = stream
        self.release: Callable[[], None] = lambda: None
        self._ended = False

    def guard(self) -> Wrapper:
        """Wakes a waiting call with StreamTerminatedError when the stream or connection dies."""
        assert self._stream.wrapper is not None
        return self._stream.wrapper

    async def response_headers(self) -> dict[str, str]:
        """The response's headers (`:status` among them). Errors: DeploymentUnreachable."""
        try:
            with self.guard():
                headers = await self._stream.recv_headers()
        except StreamTerminatedError as error:
            raise DeploymentUnreachable(f"the stream ended before a response: {error}") from None
        return dict(headers)

    async def send(self, data: bytes, *, end_stream: bool = False) -> None:
        """Errors: DeploymentUnreachable."""
        if self._ended:
            return
        try:
            with self.guard():
                await self._stream.send_data(data, end_stream=end_stream)
        except (StreamTerminatedError, ConnectionError, AssertionError) as error:
            raise DeploymentUnreachable(f"cannot write to the deployment: {error}") from None
        except Exception as error:  # h2's StreamClosedError when the deployment already closed its side
            raise DeploymentUnreachable(f"cannot write to the deployment: {error!r}") from None
        self._ended = end_stream

    async def end(self) -> None:
        """End the request side (idempotent; a stream the deployment closed is left alone)."""
        if self._ended:
            return
        self._ended = True
        try:
            if self._stream.closable:
                with self.guard():
                    await self._stream.end()
        except Exception:
            pass

    async def read_exactly(self, size: int) -> bytes:
        """`size` bytes, b"" at a clean end of the response. Errors: DeploymentUnreachable (the stream
        ended inside the `size` bytes, or was reset)."""
        try:
            with self.guard():
                return await self._stream.recv_data(size)
        except StreamTerminatedError as error:
            raise DeploymentUnreachable(f"the stream was cut: {error}") from None
        except AssertionError:  # grpclib: "Received less data than expected"
            raise DeploymentUnreachable("the response ended inside a message") from None

    async def read_frame(self) -> Frame | None:
        """The next protocol message, None at a clean end. Errors: DeploymentUnreachable,
        ProtocolViolation (a header announcing an oversized message)."""
        header = await self.read_exactly(HEADER_BYTES)
        if not header:
            return None
        if len(header) != HEADER_BYTES:
            raise ProtocolViolation("the response ended inside a message header")
        message_type, flags, length = parse_header(header)
        body = await self.read_exactly(length) if length else b""
        if length and len(body) != length:
            raise DeploymentUnreachable("the response ended inside a message")
        return Frame(message_type, flags, body)

    async def read_body(self, max_bytes: int) -> bytes:
        """The whole (small) response body, such as a manifest. Errors: DeploymentUnreachable,
        ProtocolViolation (over max_bytes)."""
        body = bytearray()
        while chunk := await self.read_exactly(1):  # whatever has arrived is handed out without waiting
            body += chunk
            if len(body) > max_bytes:
                raise ProtocolViolation(f"a response body over {max_bytes} bytes")
        return bytes(body)

    def reset(self) -> None:
        """Abort the stream (the deployment sees a reset; the attempt is abandoned)."""
        if not self._ended or self._stream.closable:
            self._ended = True
            try:
                if self._stream.id is not None and self._stream.closable:
                    self._stream.reset_nowait()
            except Exception:
                pass
        self.release()
        self.release = lambda: None

    def close(self) -> None:
        """Forget the stream (after a clean end or a reset)."""
        self.release()
        self.release = lambda: None
