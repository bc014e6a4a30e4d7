"""The gateway process: one grpc.aio server per protocol, each on its own port with health and
reflection (kafka-pixy's `KafkaPixy`, RocketMQ's `apache.rocketmq.v1.MessagingService` and, on the
same port, RocketMQ 5's `apache.rocketmq.v2.MessagingService`, the streams seed's
`waymaker.streams.WaymakerStreamsService`), a Prometheus /metrics endpoint, one SDK client of the
cluster, and clean shutdown on SIGTERM/SIGINT (groups are left and buffered messages handed back)."""

from __future__ import annotations

import asyncio
import logging
import socketserver

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from weir import Client
from weir_server import tls
from weir_server.auth import Authenticator
from weir_server.health_service import HealthServicer
from weir_server.interceptors import UndecodableRequestInterceptor
from weir_server.metrics_server import MetricsServer, start_metrics_server
from weir_server.runtime import tune_garbage_collector
from weir_server.service import wait_for_stop_signal, write_ready_file
from weir_server.shutdown import bounded_step, stop_metrics_server

from weir_gateway import metrics
from weir_gateway.access import front_door_interceptors
from weir_gateway.kafka_pixy.core import KafkaPixyCore
from weir_gateway.kafka_pixy.feeds import FeedSettings
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2, kafkapixy_pb2_grpc
from weir_gateway.kafka_pixy.servicer import KafkaPixyServicer
from weir_gateway.rocketmq_v1.core import RocketMQCore
from weir_gateway.rocketmq_v1.handles import Signer
from weir_gateway.rocketmq_v1.pb import service_pb2, service_pb2_grpc
from weir_gateway.rocketmq_v1.servicer import RocketMQServicer
from weir_gateway.rocketmq_v1.transactions import TransactionSettings
from weir_gateway.rocketmq_v2.pb import service_pb2 as v2_service_pb2
from weir_gateway.rocketmq_v2.pb import service_pb2_grpc as v2_service_pb2_grpc
from weir_gateway.rocketmq_v2.servicer import RocketMQV2Servicer
from weir_gateway.settings import GatewaySettings, retry_delays_of
from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2, waymaker_streams_pb2_grpc
from weir_gateway.waymaker_streams.servicer import WaymakerStreamsServicer
from weir_gateway.workers import serve_worker_metrics, supervisor_pid, worker_metrics_socket

logger = logging.getLogger(__name__)
KAFKA_PIXY_SERVICE = kafkapixy_pb2.DESCRIPTOR.services_by_name["KafkaPixy"].full_name
ROCKETMQ_SERVICE = service_pb2.DESCRIPTOR.services_by_name["MessagingService"].full_name
ROCKETMQ_V2_SERVICE = v2_service_pb2.DESCRIPTOR.services_by_name["MessagingService"].full_name
WAYMAKER_STREAMS_SERVICE = waymaker_streams_pb2.DESCRIPTOR.services_by_name["WaymakerStreamsService"].full_name
SERVICES = ("", KAFKA_PIXY_SERVICE, ROCKETMQ_SERVICE, ROCKETMQ_V2_SERVICE, WAYMAKER_STREAMS_SERVICE)
# Deadlines of the shutdown steps (seconds). With the default 3 s grace they add up to 12 s, under
# STOP_DEADLINE_S, where the watchdog ends the process (and that under the launcher's 20 s).
STOP_STEP_TIMEOUTS_S = {"servers_after_grace": 2.0, "close": 2.0, "metrics": 1.0}
STOP_DEADLINE_S = 15.0


def _protocol_server(
    services: tuple[str, ...],
    health_servicer: health.aio.HealthServicer,
    settings: GatewaySettings,
    access: list[grpc.aio.ServerInterceptor],
) -> grpc.aio.Server:
    """A server for one protocol's port (its `services`), with grpc.health.v1 and server reflection beside it;
    `access`: its auth interceptors (after decoding: they read the request). SO_REUSEPORT (on by default in
    grpc.aio) only in a worker of `--workers N`, which shares the port with the others; a lone gateway
    refuses a port another process holds."""
    reuse_port = 1 if supervisor_pid() is not None else 0
    server = grpc.aio.server(
        options=[("grpc.so_reuseport", reuse_port), ("grpc.max_concurrent_streams", settings.max_concurrent_streams)],
        interceptors=[UndecodableRequestInterceptor(), *access],
    )
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection([*services, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
    return server


class GatewayProcess:
    def __init__(self, settings: GatewaySettings) -> None:
        self.settings = settings
        self.kafka_pixy_port = 0
        self.rocketmq_port = 0
        self.waymaker_streams_port = 0
        self.metrics_port = 0
        self._health = HealthServicer()
        self.signer = Signer.from_setting(settings.rocketmq_receipt_secret)
        kafka_pixy_access: list[grpc.aio.ServerInterceptor] = []
        rocketmq_access: list[grpc.aio.ServerInterceptor] = []
        waymaker_streams_access: list[grpc.aio.ServerInterceptor] = []
        if settings.auth_file is not None:
            authenticator = Authenticator(settings.auth_file, settings.service_token_file, settings.default_rate())
            kafka_pixy_access, rocketmq_access, waymaker_streams_access = front_door_interceptors(
                authenticator, self.signer
            )
        self._kafka_pixy_server = _protocol_server((KAFKA_PIXY_SERVICE,), self._health, settings, kafka_pixy_access)
        self._rocketmq_server = _protocol_server(
            (ROCKETMQ_SERVICE, ROCKETMQ_V2_SERVICE), self._health, settings, rocketmq_access
        )
        self._waymaker_streams_server = _protocol_server(
            (WAYMAKER_STREAMS_SERVICE,), self._health, settings, waymaker_streams_access
        )
        self._metrics_httpd: MetricsServer | socketserver.BaseServer | None = None
        self._serving = False  # /readyz: from the ready file until the stop begins
        self.client: Client | None = None
        self.kafka_pixy: KafkaPixyCore | None = None
        self.rocketmq: RocketMQCore | None = None

    async def start(self) -> None:
        """Build each protocol's core over one SDK client, bind each protocol's port, serve; the
        ready file says so last."""
        settings = self.settings
        tls.configure(settings, f"gateway {settings.gateway_id}")
        client, kafka_pixy, rocketmq = self._build_cores()
        self._bind_front_doors(client, kafka_pixy, rocketmq)
        if supervisor_pid() is not None and settings.ready_file is not None:  # its supervisor's page reads it
            self._metrics_httpd = serve_worker_metrics(worker_metrics_socket(settings.ready_file))
        else:
            httpd = start_metrics_server(
                settings.metrics_port,
                settings.host,
                lambda: self._serving,
                loop=asyncio.get_running_loop(),
                access=settings.metrics_access(),
            )
            self._metrics_httpd = httpd
            self.metrics_port = httpd.server_port
        await self._kafka_pixy_server.start()
        await self._rocketmq_server.start()
        await self._waymaker_streams_server.start()
        for service in SERVICES:
            await self._health.set(service, health_pb2.HealthCheckResponse.SERVING)
        tune_garbage_collector()  # as the node and replicator: startup state frozen, rarer young passes
        logger.info(
            "gateway %s serving kafka-pixy on %s:%d, RocketMQ v1 and v2 on %s:%d, waymaker.streams on %s:%d "
            "(metrics %d), cluster %r at %s",
            settings.gateway_id,
            settings.host,
            self.kafka_pixy_port,
            settings.host,
            self.rocketmq_port,
            settings.host,
            self.waymaker_streams_port,
            self.metrics_port,
            settings.cluster_name,
            settings.routers,
        )
        ready = {
            "gateway_id": settings.gateway_id,
            "kafka_pixy_port": self.kafka_pixy_port,
            "rocketmq_port": self.rocketmq_port,
            "waymaker_streams_port": self.waymaker_streams_port,
            "metrics_port": self.metrics_port,
        }
        write_ready_file(settings.ready_file, ready)
        self._serving = True

    def _build_cores(self) -> tuple[Client, KafkaPixyCore, RocketMQCore]:
        """The SDK client and the transport-neutral core of each protocol (kafka-pixy, RocketMQ v1)."""
        settings = self.settings
        client = self.client = Client(settings.routers, max_in_flight_batches=settings.max_in_flight_batches)
        feeds = FeedSettings(
            member_prefix=settings.gateway_id,
            ack_timeout_ms=settings.kafka_pixy_ack_timeout_ms,
            max_pending_messages=settings.kafka_pixy_max_pending_messages,
            max_waiting_requests=settings.kafka_pixy_max_waiting_requests,
            idle_timeout_s=settings.kafka_pixy_group_idle_timeout_ms / 1000,
            new_group_start=settings.kafka_pixy_new_group_start,
        )
        kafka_pixy = self.kafka_pixy = KafkaPixyCore(
            client, settings.cluster_name, feeds, settings.kafka_pixy_long_polling_timeout_ms / 1000
        )
        rocketmq = self.rocketmq = RocketMQCore(
            client,
            signer=self.signer,
            retry_delays_ms=retry_delays_of(settings.rocketmq_retry_delays_ms),
            max_waiting_receives=settings.rocketmq_max_waiting_receives,
            auto_create_groups=settings.rocketmq_auto_create_groups,
            transaction_settings=TransactionSettings(
                recovery_period_ms=settings.rocketmq_orphaned_transaction_recovery_period_ms,
                scan_interval_ms=settings.rocketmq_orphan_scan_interval_ms,
                poll_timeout_ms=settings.rocketmq_multiplexing_poll_timeout_ms,
                max_waiting_polls=settings.rocketmq_max_waiting_polls,
            ),
        )
        return client, kafka_pixy, rocketmq

    def _bind_front_doors(self, client: Client, kafka_pixy: KafkaPixyCore, rocketmq: RocketMQCore) -> None:
        """Each protocol's servicer on its own port (kafka-pixy, RocketMQ v1 and v2, waymaker.streams)."""
        settings = self.settings
        metrics.GROUPS_SERVED.labels("kafka_pixy").set_function(lambda: len(kafka_pixy.feeds))
        self.kafka_pixy_port = tls.add_port(
            self._kafka_pixy_server, f"{settings.host}:{settings.kafka_pixy_port}", settings, require_client_cert=False
        )
        kafkapixy_pb2_grpc.add_KafkaPixyServicer_to_server(KafkaPixyServicer(kafka_pixy), self._kafka_pixy_server)
        self.rocketmq_port = tls.add_port(
            self._rocketmq_server, f"{settings.host}:{settings.rocketmq_port}", settings, require_client_cert=False
        )
        service_pb2_grpc.add_MessagingServiceServicer_to_server(RocketMQServicer(rocketmq), self._rocketmq_server)
        v2_service_pb2_grpc.add_MessagingServiceServicer_to_server(RocketMQV2Servicer(rocketmq), self._rocketmq_server)
        self.waymaker_streams_port = tls.add_port(
            self._waymaker_streams_server,
            f"{settings.host}:{settings.waymaker_streams_port}",
            settings,
            require_client_cert=False,
        )
        waymaker_streams_pb2_grpc.add_WaymakerStreamsServiceServicer_to_server(
            WaymakerStreamsServicer(client), self._waymaker_streams_server
        )

    async def stop(self) -> bool:
        """Drain and close, each step within its deadline (`STOP_STEP_TIMEOUTS_S`; the servers'
        `shutdown_grace_ms` + 2 s); a step that overruns is logged by name and skipped. Returns
        True when every step finished."""
        self._serving = False
        for service in SERVICES:
            await self._health.set(service, health_pb2.HealthCheckResponse.NOT_SERVING)
        grace_s = self.settings.shutdown_grace_ms / 1000
        servers = (self._rocketmq_server, self._kafka_pixy_server, self._waymaker_streams_server)
        clean = await bounded_step(
            "stop the gRPC servers",
            asyncio.gather(*(server.stop(grace_s) for server in servers)),
            grace_s + STOP_STEP_TIMEOUTS_S["servers_after_grace"],
        )
        closes = [
            ("close the kafka-pixy front door", self.kafka_pixy.close() if self.kafka_pixy else None),
            ("close RocketMQ's transactions", self.rocketmq.transactions.close() if self.rocketmq else None),
            ("close the SDK client", self.client.close() if self.client else None),
        ]
        for step, closing in closes:
            if closing is not None:
                clean &= await bounded_step(step, closing, STOP_STEP_TIMEOUTS_S["close"])
        clean &= await stop_metrics_server(self._metrics_httpd, STOP_STEP_TIMEOUTS_S["metrics"])
        logger.info("gateway %s stopped%s", self.settings.gateway_id, "" if clean else " (some steps did not finish)")
        return clean


async def serve(settings: GatewaySettings) -> None:
    process = GatewayProcess(settings)
    await process.start()
    await wait_for_stop_signal(f"gateway {settings.gateway_id}", STOP_DEADLINE_S)
    await process.stop()
