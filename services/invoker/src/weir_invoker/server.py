"""The invoker process: the lease (one active invoker per cluster, the others stand by), the
runtime and the subscriptions while it holds it, weir.v1.Invoker with health and reflection on one
gRPC port, Prometheus /metrics, and a clean stop on SIGTERM/SIGINT (open attempts are abandoned:
each resumes from its journal under the next active invoker)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from weir import Client
from weir.errors import NoSuchBucketError, NoSuchStreamError
from weir.kv import KeyValue
from weir.v1 import invoker_pb2, invoker_pb2_grpc
from weir_server import tls
from weir_server.access import AuthInterceptor
from weir_server.auth import Authenticator
from weir_server.health_service import HealthServicer
from weir_server.interceptors import UndecodableRequestInterceptor
from weir_server.metrics_server import MetricsServer, start_metrics_server
from weir_server.service import wait_for_stop_signal, write_ready_file
from weir_server.shutdown import bounded_step, stop_metrics_server, task_stacks

from weir_invoker import permissions
from weir_invoker.ingress import Ingress
from weir_invoker.leadership import Leadership
from weir_invoker.lease import Lease
from weir_invoker.operations import Operations
from weir_invoker.runtime import Invoker
from weir_invoker.servicer import InvokerServicer
from weir_invoker.settings import InvokerSettings

logger = logging.getLogger(__name__)
EXIT_LEASE_LOST = 3
LEASE_LOST_STOP_S = 5.0
# Deadlines of the shutdown steps (seconds). With the default 3 s grace they add up to 14 s, under
# STOP_DEADLINE_S, where the watchdog ends the process (and that under the launcher's 20 s).
STOP_STEP_TIMEOUTS_S = {"server_after_grace": 2.0, "step": 2.0, "metrics": 1.0}
STOP_DEADLINE_S = 15.0
INVOKER_SERVICE = invoker_pb2.DESCRIPTOR.services_by_name["Invoker"].full_name


class InvokerProcess:
    def __init__(self, settings: InvokerSettings) -> None:
        self.settings = settings
        self.port = 0
        self.metrics_port = 0
        self._health = HealthServicer()
        access: list[grpc.aio.ServerInterceptor] = []
        if settings.auth_file is not None:  # the cluster's users, within their grants (permissions.py)
            authenticator = Authenticator(settings.auth_file, settings.service_token_file, settings.default_rate())
            access = [
                AuthInterceptor(authenticator, requirement=permissions.requirement, prefixes=(f"/{INVOKER_SERVICE}/",))
            ]
        self._server = grpc.aio.server(
            options=[("grpc.so_reuseport", 0), ("grpc.max_concurrent_streams", settings.max_concurrent_streams)],
            interceptors=[UndecodableRequestInterceptor(), *access],
        )
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        reflection.enable_server_reflection(
            [INVOKER_SERVICE, health.SERVICE_NAME, reflection.SERVICE_NAME], self._server
        )
        self._metrics_httpd: MetricsServer | None = None
        self._serving = False  # /readyz: from the ready file until the stop begins
        self.client: Client | None = None
        self.invoker: Invoker | None = None
        self.ingress: Ingress | None = None
        self.leadership: Leadership | None = None
        self._leadership_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        settings = self.settings
        tls.configure(settings, f"invoker {settings.invoker_id}")
        self.client = Client(settings.routers)
        self.invoker = Invoker(self.client, settings.runtime())
        self.ingress = Ingress(self.invoker, self.client, settings.invoker_id)
        with contextlib.suppress(NoSuchBucketError, NoSuchStreamError):
            await self.invoker.registry.load()  # a standby answers registry calls from it too
        lease = Lease(KeyValue(self.client), settings.invoker_id, settings.lease_ms)
        self.invoker.fence.allowed = lambda: lease.held
        self.leadership = Leadership(self.invoker, self.ingress, lease)
        self._leadership_task = asyncio.get_running_loop().create_task(self.leadership.run())
        operations = Operations(self.invoker, self.ingress, self.client, self.leadership)
        invoker_pb2_grpc.add_InvokerServicer_to_server(InvokerServicer(operations), self._server)
        self.port = tls.add_port(self._server, f"{settings.host}:{settings.port}", settings, require_client_cert=False)
        httpd = start_metrics_server(
            settings.metrics_port,
            settings.host,
            lambda: self._serving,
            loop=asyncio.get_running_loop(),
            access=settings.metrics_access(),
        )
        self._metrics_httpd = httpd
        self.metrics_port = httpd.server_port
        await self._server.start()
        for service in ("", INVOKER_SERVICE):
            await self._health.set(service, health_pb2.HealthCheckResponse.SERVING)
        logger.info(
            "invoker %s serving weir.v1.Invoker on %s:%d (metrics %d), cluster at %s",
            settings.invoker_id,
            settings.host,
            self.port,
            self.metrics_port,
            settings.routers,
        )
        ready = {"invoker_id": settings.invoker_id, "port": self.port, "metrics_port": self.metrics_port}
        write_ready_file(settings.ready_file, ready)
        self._serving = True

    async def stop(self) -> bool:
        """Step down and close, each step within its deadline (`STOP_STEP_TIMEOUTS_S`; the server's
        `shutdown_grace_ms` + 2 s); a step that overruns is logged by name and skipped (what the
        invoker did is in the cluster already). Returns True when every step finished."""
        self._serving = False
        clean = True
        if self._leadership_task is not None:
            self._leadership_task.cancel()
            clean &= await bounded_step(
                "stop the leadership loop",
                asyncio.gather(self._leadership_task, return_exceptions=True),
                STOP_STEP_TIMEOUTS_S["step"],
            )
        for service in ("", INVOKER_SERVICE):
            await self._health.set(service, health_pb2.HealthCheckResponse.NOT_SERVING)
        grace_s = self.settings.shutdown_grace_ms / 1000
        clean &= await bounded_step(
            "stop the gRPC server", self._server.stop(grace_s), grace_s + STOP_STEP_TIMEOUTS_S["server_after_grace"]
        )
        if self.ingress is not None:
            clean &= await bounded_step("stop the subscriptions", self.ingress.stop_all(), STOP_STEP_TIMEOUTS_S["step"])
        if self.invoker is not None:
            clean &= await bounded_step("stop the invocations", self.invoker.stop(), STOP_STEP_TIMEOUTS_S["step"])
        if self.client is not None:
            clean &= await bounded_step("close the SDK client", self.client.close(), STOP_STEP_TIMEOUTS_S["step"])
        clean &= await stop_metrics_server(self._metrics_httpd, STOP_STEP_TIMEOUTS_S["metrics"])
        logger.info("invoker %s stopped%s", self.settings.invoker_id, "" if clean else " (some steps did not finish)")
        return clean


def log_task_stacks() -> None:
    """SIGUSR1: log where every task of the invoker waits (an operator's view of a stuck attempt)."""
    logger.warning(task_stacks())


async def serve(settings: InvokerSettings) -> None:
    """Serve until SIGTERM/SIGINT, or until the lease is lost (then exit 3: a supervisor starts the
    process again and it stands by)."""
    process = InvokerProcess(settings)
    await process.start()
    assert process.leadership is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, log_task_stacks)
    stop = asyncio.ensure_future(wait_for_stop_signal(f"invoker {settings.invoker_id}", STOP_DEADLINE_S))
    lost = asyncio.ensure_future(process.leadership.lost.wait())
    await asyncio.wait({stop, lost}, return_when=asyncio.FIRST_COMPLETED)
    if not lost.done():
        await process.stop()
        return
    # The lease is gone: another invoker drives now. Stop what can be stopped within a bound, then
    # exit whatever still runs (everything this one did is in the cluster; it writes nothing more).
    # The bound is a thread's timer: a stop step that swallows its cancellation (wait_for then waits
    # for it) or blocks the event loop cannot keep the process alive.
    deadline = threading.Timer(LEASE_LOST_STOP_S, _exit_lease_lost)
    deadline.daemon = True
    deadline.start()
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await asyncio.wait_for(process.stop(), LEASE_LOST_STOP_S)
    _exit_lease_lost()


def _exit_lease_lost() -> None:
    """Flush the logs and end the process at once with EXIT_LEASE_LOST (from any thread)."""
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    os._exit(EXIT_LEASE_LOST)
