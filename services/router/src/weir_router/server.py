"""The router process: a grpc.aio server (weir.v1.Router, health, reflection), a Prometheus
/metrics endpoint, the controller loop, and clean shutdown on SIGTERM/SIGINT (the lease is
released, so another router takes over at once)."""

from __future__ import annotations

import asyncio
import logging

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from weir.client import KEEPALIVE_SERVER_OPTIONS
from weir.cluster import Client
from weir.collections import Collections
from weir.kv import KeyValue
from weir.objects import ObjectStore
from weir.v1 import (
    collections_pb2,
    collections_pb2_grpc,
    kv_pb2,
    kv_pb2_grpc,
    objects_pb2,
    objects_pb2_grpc,
    router_pb2,
    router_pb2_grpc,
)
from weir_server import tls
from weir_server.access import AuthInterceptor
from weir_server.auth import Authenticator
from weir_server.health_service import HealthServicer
from weir_server.interceptors import UndecodableRequestInterceptor
from weir_server.metrics_server import MetricsServer, start_metrics_server
from weir_server.service import wait_for_stop_signal, write_ready_file
from weir_server.shutdown import bounded_step, stop_metrics_server

from weir_router.collections_servicer import CollectionsServicer
from weir_router.core import RouterCore
from weir_router.kv_servicer import KeyValueServicer
from weir_router.objects_servicer import ObjectStoreServicer
from weir_router.servicer import RouterServicer
from weir_router.settings import RouterSettings
from weir_router.store import MetadataStore

logger = logging.getLogger(__name__)
SERVICE = router_pb2.DESCRIPTOR.services_by_name["Router"].full_name
KV_SERVICE = kv_pb2.DESCRIPTOR.services_by_name["KeyValue"].full_name
COLLECTIONS_SERVICE = collections_pb2.DESCRIPTOR.services_by_name["Collections"].full_name
OBJECTS_SERVICE = objects_pb2.DESCRIPTOR.services_by_name["ObjectStore"].full_name
SERVICES = (SERVICE, KV_SERVICE, COLLECTIONS_SERVICE, OBJECTS_SERVICE)
# Deadlines of the shutdown steps (seconds). With the default 3 s grace they add up to 13 s, under
# STOP_DEADLINE_S, where the watchdog ends the process (and that under the launcher's 20 s).
STOP_STEP_TIMEOUTS_S = {"server_after_grace": 2.0, "clients": 2.0, "core": 3.0, "metrics": 1.0}
STOP_DEADLINE_S = 15.0


class RouterProcess:
    def __init__(self, settings: RouterSettings) -> None:
        self.settings = settings
        self.port = 0
        self.metrics_port = 0
        interceptors: list[grpc.aio.ServerInterceptor] = [UndecodableRequestInterceptor()]
        if settings.auth_file is not None:  # after decoding: it reads the request
            authenticator = Authenticator(settings.auth_file, settings.service_token_file, settings.default_rate())
            interceptors.append(AuthInterceptor(authenticator))
        self._server = grpc.aio.server(
            options=[
                ("grpc.so_reuseport", 0),
                ("grpc.max_concurrent_streams", settings.max_concurrent_streams),
                *KEEPALIVE_SERVER_OPTIONS,
            ],
            interceptors=interceptors,
        )
        self._health = HealthServicer()
        self._metrics_httpd: MetricsServer | None = None
        self._serving = False  # /readyz: from the ready file until the stop begins
        self.core: RouterCore | None = None
        self._servicer: RouterServicer | None = None
        self._kv_client: Client | None = None

    async def start(self) -> None:
        settings = self.settings
        tls.configure(settings, f"router {settings.router_id}")
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
        access = settings.redis_access(settings.redis_url)
        access.warn_if_exposed(not settings.plaintext)
        store = MetadataStore(access, settings.metadata_prefix)
        await store.redis.ping()  # a router that cannot reach its metadata should not start
        address = f"{settings.advertise_host or settings.host}:{self.port}"
        self.core = RouterCore(settings, store, address)
        self._servicer = RouterServicer(self.core)
        # KeyValue, Collections and ObjectStore run on the SDK's cluster client (through this router's own
        # Router service for routes).
        self._kv_client = client = Client(address)
        router_pb2_grpc.add_RouterServicer_to_server(self._servicer, self._server)
        kv_pb2_grpc.add_KeyValueServicer_to_server(KeyValueServicer(KeyValue(client)), self._server)
        collections_pb2_grpc.add_CollectionsServicer_to_server(CollectionsServicer(Collections(client)), self._server)
        objects_pb2_grpc.add_ObjectStoreServicer_to_server(ObjectStoreServicer(ObjectStore(client)), self._server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        reflection.enable_server_reflection([*SERVICES, health.SERVICE_NAME, reflection.SERVICE_NAME], self._server)
        await self._server.start()
        await self.core.controller.tick()  # take the lease at once when nobody holds it
        self.core.start()
        for service in ("", *SERVICES):
            await self._health.set(service, health_pb2.HealthCheckResponse.SERVING)
        logger.info(
            "router %s serving on %s:%d (metrics %d), metadata %s, controller=%s",
            settings.router_id,
            settings.host,
            self.port,
            self.metrics_port,
            self.core.store.redis_shown,
            self.core.controller.held,
        )
        ready = {"router_id": settings.router_id, "port": self.port, "metrics_port": self.metrics_port}
        write_ready_file(settings.ready_file, ready)
        self._serving = True

    async def stop(self) -> bool:
        """Drain and close, each step within its deadline (`STOP_STEP_TIMEOUTS_S`; the server's
        `shutdown_grace_ms` + 2 s): a step that overruns is logged by name, with where it waited,
        and skipped. The controller's lease is released here, so another router takes over at once.
        Returns True when every step finished."""
        self._serving = False
        for service in ("", *SERVICES):
            await self._health.set(service, health_pb2.HealthCheckResponse.NOT_SERVING)
        grace_s = self.settings.shutdown_grace_ms / 1000
        clean = await bounded_step(
            "stop the gRPC server", self._server.stop(grace_s), grace_s + STOP_STEP_TIMEOUTS_S["server_after_grace"]
        )
        if self._kv_client is not None:
            clean &= await bounded_step(
                "close the SDK client", self._kv_client.close(), STOP_STEP_TIMEOUTS_S["clients"]
            )
        if self._servicer is not None:
            clean &= await bounded_step(
                "close the servicer's node clients", self._servicer.close(), STOP_STEP_TIMEOUTS_S["clients"]
            )
        if self.core is not None:
            clean &= await bounded_step(
                "stop the controller, release its lease, close the metadata store",
                self.core.close(),
                STOP_STEP_TIMEOUTS_S["core"],
            )
        clean &= await stop_metrics_server(self._metrics_httpd, STOP_STEP_TIMEOUTS_S["metrics"])
        logger.info("router %s stopped%s", self.settings.router_id, "" if clean else " (some steps did not finish)")
        return clean


async def serve(settings: RouterSettings) -> None:
    process = RouterProcess(settings)
    await process.start()
    await wait_for_stop_signal(f"router {settings.router_id}", STOP_DEADLINE_S)
    await process.stop()
