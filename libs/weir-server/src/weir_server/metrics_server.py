"""Every service's metrics port: `/metrics` (the Prometheus page), `/healthz` (200 `ok` while the
process runs: liveness), `/readyz` (200 `ready` when the service says it is ready, else 503 saying
why: readiness) and 404 for any other path. prometheus_client's `start_http_server` answers every
path with the metrics page, so an HTTP probe of it always passed.

Served as `start_http_server` serves: an `http.server` on a daemon thread, one thread a request,
prometheus_client's `MetricsHandler` for the page (content negotiation, gzip, `name[]` filters).
`shutdown()` stops the serving thread and closes the listening socket
(`weir_server.shutdown.stop_metrics_server` runs it as a bounded shutdown step).

With an auth file (`MetricsAccess`, from the service's settings: weir_server.tls.AuthFileSettings)
the port serves HTTPS with the service's certificate, and /metrics only to `Authorization: Bearer
<token>` of a user with the `metrics` grant, or the services' token: 401 (with `WWW-Authenticate:
Bearer`) without a known token, 403 for a user without the grant, 400 over plain HTTP. The port
tells a TLS client (its first byte is a TLS handshake record) from a plain one, so /healthz and
/readyz still answer plain HTTP probes (Docker, Kubernetes): they reveal nothing but ok / ready /
not ready with the reason.

What "ready" means is each service's: a callable returning a bool. Given the service's event loop,
the callable runs on that loop (so it reads the service's state from the loop's own thread), and a
loop that does not take it within `LOOP_ANSWER_TIMEOUT_S` is not ready: a wedged loop serves
nothing, even while this thread still answers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import socket
import ssl
import threading
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from prometheus_client import REGISTRY, CollectorRegistry, MetricsHandler

from weir_server.access import bearer_token_of
from weir_server.auth import Authenticator

LOOP_ANSWER_TIMEOUT_S = 2.0
# How long a new connection may take to send its first byte and finish a TLS handshake.
HANDSHAKE_TIMEOUT_S = 5.0
TLS_HANDSHAKE_RECORD = b"\x16"

Readiness = Callable[[], bool]


class LoopNotAnswering(Exception):
    """The service's event loop is closed, or did not run the readiness check in time."""


def readiness(ready: Readiness, loop: asyncio.AbstractEventLoop | None = None) -> tuple[bool, str]:
    """(ready?, the body to answer with): `ready()` called here, or on `loop` when given (not ready
    when the loop is closed or does not run it within `LOOP_ANSWER_TIMEOUT_S`). A `ready` that
    raises is not ready, with the error in the body."""
    try:
        answer = bool(ready()) if loop is None else _on_loop(ready, loop)
    except LoopNotAnswering as error:
        return False, f"not ready: {error}"
    except Exception as error:
        return False, f"not ready: the readiness check failed: {error!r}"
    return answer, "ready" if answer else "not ready"


def _on_loop(ready: Readiness, loop: asyncio.AbstractEventLoop) -> bool:
    answer: concurrent.futures.Future[bool] = concurrent.futures.Future()

    def ask() -> None:
        if not answer.set_running_or_notify_cancel():
            return  # asked too late: the probe has answered already
        try:
            answer.set_result(bool(ready()))
        except Exception as error:
            answer.set_exception(error)

    try:
        loop.call_soon_threadsafe(ask)
    except RuntimeError:
        raise LoopNotAnswering("the event loop is closed") from None
    try:
        return answer.result(LOOP_ANSWER_TIMEOUT_S)
    except TimeoutError:
        answer.cancel()  # not started: it will not run later either
        raise LoopNotAnswering(f"the event loop did not answer within {LOOP_ANSWER_TIMEOUT_S:.1f} s") from None


class MetricsAccess:
    """Who may read a metrics port's /metrics, with an auth file (see the module docstring): TLS with
    `cert_file` and `key_file` (PEM; read again when they change, for new connections), and a bearer
    token that `authenticator` knows as the services' or as a user with the `metrics` grant (the auth
    file is read again when it changes, as on the gRPC ports). Safe to use from many threads."""

    def __init__(self, cert_file: Path, key_file: Path, authenticator: Authenticator) -> None:
        self.files = (cert_file, key_file)
        self.authenticator = authenticator
        self._lock = threading.Lock()
        self._stamp: tuple[int, ...] = ()
        self._context: ssl.SSLContext | None = None

    def context(self) -> ssl.SSLContext:
        """The server TLS context, made again when a file changed. Errors: OSError, ssl.SSLError
        when the files cannot be read or do not match (the context made before stays)."""
        with self._lock:
            stamp = tuple(os.stat(path).st_mtime_ns for path in self.files)
            if self._context is None or stamp != self._stamp:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.minimum_version = ssl.TLSVersion.TLSv1_2
                context.load_cert_chain(*self.files)
                self._context, self._stamp = context, stamp
            return self._context

    def refusal(self, authorization: str | None) -> tuple[int, str] | None:
        """None when the `Authorization` header value names a caller that may read /metrics, else
        (401 or 403, the reason)."""
        token = bearer_token_of([("authorization", authorization or "")])
        with self._lock:
            self.authenticator.refresh()
            caller = self.authenticator.authenticate(token)
        if caller is None:
            why = "its token is not known" if token else "it sent no token (Authorization: Bearer <token>)"
            return 401, f"unauthenticated: /metrics needs a known caller: {why}"
        if not caller.may_read_metrics():
            return 403, f'permission denied: user {caller.name!r} has no metrics grant ({{"actions": ["metrics"]}})'
        return None

    @classmethod
    def of(cls, cert_file: Path, key_file: Path, auth_file: Path, service_token_file: Path | None) -> MetricsAccess:
        """A MetricsAccess reading its own copy of the auth file. Errors: AuthFileError, OSError."""
        return cls(cert_file, key_file, Authenticator(auth_file, service_token_file))


class _Handler(MetricsHandler):
    """`MetricsHandler` on /metrics only (with `access`: over TLS to a caller it allows); /healthz,
    /readyz, 404 elsewhere."""

    ready: ClassVar[Readiness]
    loop: ClassVar[asyncio.AbstractEventLoop | None]
    access: ClassVar[MetricsAccess | None]

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/metrics":
            refused = self._metrics_refusal()
            if refused is None:
                super().do_GET()
            else:
                self._answer(*refused)
        elif path == "/healthz":
            self._answer(200, "ok")
        elif path == "/readyz":
            ready, body = readiness(type(self).ready, type(self).loop)
            self._answer(200 if ready else 503, body)
        else:
            self._answer(404, f"not found: {path} (this port serves /metrics, /healthz and /readyz)")

    def _metrics_refusal(self) -> tuple[int, str] | None:
        access = type(self).access
        if access is None:
            return None
        if not isinstance(self.connection, ssl.SSLSocket):
            return 400, "this port serves /metrics over HTTPS only (with Authorization: Bearer <token>)"
        return access.refusal(self.headers.get("Authorization"))

    def _answer(self, status: int, body: str) -> None:
        payload = (body + "\n").encode()
        self.send_response(status)
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="weir metrics"')
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(payload)


class MetricsServer(ThreadingHTTPServer):
    """The metrics port's HTTP server (`start_metrics_server`); `server_port` is the bound port."""

    daemon_threads = True
    access: MetricsAccess | None = None

    def finish_request(self, request: Any, client_address: Any) -> None:
        """With `access`: a connection whose first byte opens a TLS handshake is served over TLS
        (one that fails the handshake, or sends nothing in HANDSHAKE_TIMEOUT_S, is closed), any
        other as plain HTTP (which the handler answers /metrics with 400)."""
        if self.access is None:
            super().finish_request(request, client_address)
            return
        try:
            request.settimeout(HANDSHAKE_TIMEOUT_S)
            if request.recv(1, socket.MSG_PEEK) != TLS_HANDSHAKE_RECORD:
                request.settimeout(None)
                super().finish_request(request, client_address)
                return
            secured = self.access.context().wrap_socket(request, server_side=True)
        except OSError:  # ssl.SSLError too: nothing to answer on this connection
            return
        try:
            secured.settimeout(None)
            super().finish_request(secured, client_address)
        finally:
            secured.close()

    def shutdown(self) -> None:
        """Stop serving (blocks until the serving thread is out of its loop) and close the socket."""
        super().shutdown()
        self.server_close()


def start_metrics_server(
    port: int,
    addr: str,
    ready: Readiness,
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    registry: CollectorRegistry = REGISTRY,
    access: MetricsAccess | None = None,
) -> MetricsServer:
    """Bind `addr:port` (0: a free port; an IPv6 address works too) and serve /metrics of `registry`,
    /healthz, and /readyz by `ready` (run on `loop` when given) from a daemon thread; with `access`,
    /metrics over TLS to the callers it allows (module docstring). OSError when the port cannot be
    bound; OSError or ssl.SSLError when `access`'s certificate cannot be loaded."""
    if access is not None:
        access.context()  # a certificate that does not load stops the start, not each scrape
    answers = {"ready": staticmethod(ready), "loop": loop, "registry": registry, "access": access}
    handler = type("MetricsPortHandler", (_Handler,), answers)
    family, sockaddr = _best_family(addr, port)

    class BoundServer(MetricsServer):
        address_family = family

    server = BoundServer((sockaddr, port), handler)
    server.access = access
    thread = threading.Thread(target=server.serve_forever, name=f"metrics-http-{server.server_port}", daemon=True)
    thread.start()
    return server


def _best_family(addr: str, port: int) -> tuple[socket.AddressFamily, str]:
    """The address family and address to bind `addr` with (as `start_http_server` picks them)."""
    family, _, _, _, sockaddr = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    return family, str(sockaddr[0])
