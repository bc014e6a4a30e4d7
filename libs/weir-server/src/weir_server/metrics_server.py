"""Every service's metrics port: `/metrics` (the Prometheus page), `/healthz` (200 `ok` while the
process runs: liveness), `/readyz` (200 `ready` when the service says it is ready, else 503 saying
why: readiness) and 404 for any other path. prometheus_client's `start_http_server` answers every
path with the metrics page, so an HTTP probe of it always passed.

Served as `start_http_server` serves: an `http.server` on a daemon thread, one thread a request,
prometheus_client's `MetricsHandler` for the page (content negotiation, gzip, `name[]` filters).
`shutdown()` stops the serving thread and closes the listening socket
(`weir_server.shutdown.stop_metrics_server` runs it as a bounded shutdown step).

What "ready" means is each service's: a callable returning a bool. Given the service's event loop,
the callable runs on that loop (so it reads the service's state from the loop's own thread), and a
loop that does not take it within `LOOP_ANSWER_TIMEOUT_S` is not ready: a wedged loop serves
nothing, even while this thread still answers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import threading
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import urlsplit

from prometheus_client import REGISTRY, CollectorRegistry, MetricsHandler

LOOP_ANSWER_TIMEOUT_S = 2.0

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


class _Handler(MetricsHandler):
    """`MetricsHandler` on /metrics only; /healthz, /readyz, 404 elsewhere."""

    ready: ClassVar[Readiness]
    loop: ClassVar[asyncio.AbstractEventLoop | None]

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/metrics":
            super().do_GET()
        elif path == "/healthz":
            self._answer(200, "ok")
        elif path == "/readyz":
            ready, body = readiness(type(self).ready, type(self).loop)
            self._answer(200 if ready else 503, body)
        else:
            self._answer(404, f"not found: {path} (this port serves /metrics, /healthz and /readyz)")

    def _answer(self, status: int, body: str) -> None:
        payload = (body + "\n").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(payload)


class MetricsServer(ThreadingHTTPServer):
    """The metrics port's HTTP server (`start_metrics_server`); `server_port` is the bound port."""

    daemon_threads = True

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
) -> MetricsServer:
    """Bind `addr:port` (0: a free port; an IPv6 address works too) and serve /metrics of `registry`,
    /healthz, and /readyz by `ready` (run on `loop` when given) from a daemon thread. OSError when
    the port cannot be bound."""
    answers = {"ready": staticmethod(ready), "loop": loop, "registry": registry}
    handler = type("MetricsPortHandler", (_Handler,), answers)
    family, sockaddr = _best_family(addr, port)

    class BoundServer(MetricsServer):
        address_family = family

    server = BoundServer((sockaddr, port), handler)
    thread = threading.Thread(target=server.serve_forever, name=f"metrics-http-{server.server_port}", daemon=True)
    thread.start()
    return server


def _best_family(addr: str, port: int) -> tuple[socket.AddressFamily, str]:
    """The address family and address to bind `addr` with (as `start_http_server` picks them)."""
    family, _, _, _, sockaddr = socket.getaddrinfo(addr, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    return family, str(sockaddr[0])
