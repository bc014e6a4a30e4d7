"""The partition node process: two grpc.aio servers (client port, internal port), health checking,
server reflection, a Prometheus /metrics endpoint (with the consumer lag computed at scrape time,
`metrics.ConsumerLagCollector`), and clean shutdown on SIGTERM/SIGINT.

Shutdown order: health goes NOT_SERVING, the servers stop accepting and give in-flight RPCs
`shutdown_grace_ms`, then the node commits what is queued and closes storage. Every step has a
deadline (`STOP_STEP_TIMEOUTS_S`); one that overruns is logged by name and the process exits anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import REGISTRY
from weir.client import KEEPALIVE_SERVER_OPTIONS
from weir.tls import ChannelSecurity
from weir.v1 import internal_pb2, internal_pb2_grpc, streams_pb2, streams_pb2_grpc
from weir_server import tls
from weir_server.access import AuthInterceptor
from weir_server.auth import Authenticator
from weir_server.health_service import HealthServicer
from weir_server.identity import ServiceIdentityInterceptor
from weir_server.interceptors import UndecodableRequestInterceptor
from weir_server.metrics_server import MetricsServer, start_metrics_server
from weir_server.runtime import tune_garbage_collector
from weir_server.service import wait_for_stop_signal, write_ready_file
from weir_server.shutdown import bounded_step, stop_metrics_server

from weir_partition_node import metrics
from weir_partition_node.clock import ManualClock
from weir_partition_node.handover import ConsumerStateShipper
from weir_partition_node.horizon_push import HorizonPusher
from weir_partition_node.membership import Membership
from weir_partition_node.node import Node
from weir_partition_node.repair import RepairFromPrimary
from weir_partition_node.replica import ReplicaManager
from weir_partition_node.scrub import Scrubber, ScrubFindings
from weir_partition_node.servicers import ChangeFeedServicer, ReplicationServicer, StreamsServicer, TestClockServicer
from weir_partition_node.settings import NodeSettings
from weir_partition_node.sources import ClusterLocator, SourceLocator, SourceTails, StandaloneLocator

logger = logging.getLogger(__name__)

MAX_GRPC_MESSAGE_BYTES = 64 * 1024 * 1024
# Deadlines of the shutdown steps (seconds). Their sum with the grace (19 s with the default 5 s) is
# the node's stop deadline, where the watchdog ends it: under the launcher's 20 s wait before SIGKILL.
STOP_STEP_TIMEOUTS_S = {
    "sources": 1.0,
    "servers_after_grace": 2.0,
    "replicas": 2.0,
    "membership": 2.0,
    "node": 6.0,
    "metrics": 1.0,
}


def _grpc_server(settings: NodeSettings, *, internal: bool = False) -> grpc.aio.Server:
    """A server for the client port (with an auth file: only its users, each within its grants), or
    (`internal`) for the internal port, which with TLS serves only the cluster's service identities."""
    interceptors: list[grpc.aio.ServerInterceptor] = [UndecodableRequestInterceptor()]
    if internal and not settings.plaintext:
        interceptors.insert(0, ServiceIdentityInterceptor(settings.internal_identity_names()))
    if not internal and settings.auth_file is not None:  # after decoding: it reads the request
        authenticator = Authenticator(settings.auth_file, settings.service_token_file, settings.default_rate())
        interceptors.append(AuthInterceptor(authenticator))
    options: list[tuple[str, Any]] = [
        ("grpc.max_receive_message_length", MAX_GRPC_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_GRPC_MESSAGE_BYTES),
        ("grpc.so_reuseport", 0),
        *KEEPALIVE_SERVER_OPTIONS,
    ]
    if not internal:
        options.append(("grpc.max_concurrent_streams", settings.max_concurrent_streams))
    return grpc.aio.server(
        options=options,
        maximum_concurrent_rpcs=settings.max_concurrent_rpcs,
        interceptors=interceptors,
    )


class NodeProcess:
    """A running node: `start()` binds and serves; `stop()` drains and closes."""

    def __init__(self, settings: NodeSettings) -> None:
        self.settings = settings
        self.node: Node | None = None
        self.client_port = 0
        self.internal_port = 0
        self.metrics_port = 0
        self._client_server = _grpc_server(settings)
        self._internal_server = _grpc_server(settings, internal=True)
        self._health = HealthServicer()
        self._metrics_httpd: MetricsServer | None = None
        self._serving = False  # from the ready file until the stop begins (see `ready`)
        self._lag_collector: metrics.ConsumerLagCollector | None = None
        self.membership: Membership | None = None
        self.replicas: ReplicaManager | None = None
        self.horizon_pusher: HorizonPusher | None = None
        self._replicas_ready = False
        self.scrubber: Scrubber | None = None
        self._scrub_task: asyncio.Task[None] | None = None
        self.sources: SourceTails | None = None

    def _start_scrub(self) -> int | None:
        """StartScrub: the passes so far, None when the scrub is off (or not set up yet)."""
        if self.scrubber is None or self._scrub_task is None:
            return None
        return self.scrubber.request_pass()

    def _scrubber(self, node: Node) -> Scrubber:
        """The background scrub; each pass's findings go into the node's registration (the next
        heartbeat carries them to `weir doctor`)."""

        def report(findings: ScrubFindings) -> None:
            if self.membership is not None:
                self.membership.record = dataclasses.replace(
                    self.membership.record,
                    scrub_passes=findings.passes,
                    scrub_last_pass_ms=findings.last_pass_ms,
                    corrupt_records=findings.corrupt_records,
                    integrity="; ".join(findings.integrity_problems) or "ok",
                    damaged_partitions=findings.damaged,
                )

        settings = self.settings
        return Scrubber(
            node.all_partitions,
            bytes_per_second=settings.scrub_bytes_per_second or 1,
            interval_s=settings.scrub_interval_ms / 1000,
            integrity_timeout_s=settings.integrity_check_timeout_ms / 1000,
            on_pass=report,
            repair=RepairFromPrimary(node, self.membership, security=self._service_security())
            if self.membership is not None
            else None,
            on_finding=node.record_storage_finding,
        )

    def _service_security(self) -> ChannelSecurity | None:
        """How this node calls other nodes' client ports (source tails, repairs): its TLS identity
        and, with an auth file, the services' token (None: plaintext)."""
        settings = self.settings
        security = settings.channel_security()
        if security is not None and security.token_file is None and settings.service_token_file is not None:
            security = dataclasses.replace(security, token_file=settings.service_token_file)
        return security

    def _source_tails(self, node: Node) -> SourceTails:
        """The tails of the sourcing streams this node leads (sources.py); they read sources over
        the client ports (`_service_security`)."""
        settings = self.settings
        locator: SourceLocator
        if self.membership is not None:
            locator = ClusterLocator(self.membership)
        else:
            host = settings.advertise_host or settings.host
            host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
            locator = StandaloneLocator(node, f"{host}:{self.client_port}")
        tails = SourceTails(node, locator, self._service_security())
        node.source_status = tails.status
        return tails

    async def start(self) -> None:
        """Open the node, bind its ports, join the cluster (when clustered), add the services and
        serve; the ready file says so last."""
        settings = self.settings
        self.node = await Node.open(settings)
        self._lag_collector = metrics.ConsumerLagCollector(self.node.consumer_lags, asyncio.get_running_loop())
        REGISTRY.register(self._lag_collector)
        # Bind first: the registration needs the ports, and the servicers need the membership.
        self._bind_ports()
        if settings.redis_url:
            self._join_cluster(self.node)
        self._add_services(self.node)
        self.scrubber = self._scrubber(self.node)
        await self.scrubber.check_storage()  # SQLite's quick_check of every partition, bounded
        await self._client_server.start()
        await self._internal_server.start()
        if self.membership is not None:
            await self.membership.register()
        if self.replicas is not None:
            await self.replicas.start()
            self._replicas_ready = True
        for service in ("", "weir.v1.Streams", "weir.v1.ChangeFeed"):
            await _set_health(self._health, service, health_pb2.HealthCheckResponse.SERVING)
        logger.info(
            "node %s serving: client %s:%d, internal %s:%d, metrics %s:%d, data %s, fsync=%s",
            settings.node_id,
            settings.host,
            self.client_port,
            settings.host,
            self.internal_port,
            settings.host,
            self.metrics_port,
            settings.data_dir,
            settings.fsync,
        )
        self.sources = self._source_tails(self.node)
        self.sources.start()
        if settings.scrub_bytes_per_second:
            self._scrub_task = asyncio.get_running_loop().create_task(self.scrubber.run(), name="scrub")
        ports = {
            "client_port": self.client_port,
            "internal_port": self.internal_port,
            "metrics_port": self.metrics_port,
        }
        write_ready_file(settings.ready_file, {"node_id": settings.node_id, **ports})
        self._serving = True

    def ready(self) -> bool:
        """/readyz: serving (the ready file written, the stop not begun) and, clustered, holding a live
        heartbeat lease with the placement adopted: a node that lost its lease fences itself."""
        node = self.node
        return self._serving and node is not None and (node.lease_valid is None or node.lease_valid())

    def _bind_ports(self) -> None:
        """Bind the client, internal and metrics ports (0: a free one, read back here). The client
        port takes any client; the internal port (change feed, replication, placement) only the
        cluster's services: a certificate signed by the cluster CA."""
        settings = self.settings
        tls.configure(settings, f"node {settings.node_id}")
        client_address = f"{settings.host}:{settings.client_port}"
        internal_address = f"{settings.host}:{settings.internal_port}"
        self.client_port = tls.add_port(self._client_server, client_address, settings, require_client_cert=False)
        self.internal_port = tls.add_port(self._internal_server, internal_address, settings, require_client_cert=True)
        loop = asyncio.get_running_loop()
        httpd = start_metrics_server(
            settings.metrics_port, settings.host, self.ready, loop=loop, access=settings.metrics_access()
        )
        self._metrics_httpd = httpd
        self.metrics_port = httpd.server_port

    def _join_cluster(self, node: Node) -> None:
        """Clustered: the membership (heartbeat lease, registration) and the replica manager, and
        the node's self-fencing on them."""
        settings = self.settings
        advertise = settings.advertise_host or settings.host
        membership = Membership(
            settings,
            client_address=f"{advertise}:{self.client_port}",
            internal_address=f"{advertise}:{self.internal_port}",
            metrics_address=f"{advertise}:{self.metrics_port}",
        )
        self.membership = membership
        self.replicas = ReplicaManager(node, membership)
        self.horizon_pusher = HorizonPusher(membership.internal_address, security=self._service_security())
        node.use_horizon_pusher(self.horizon_pusher)
        membership.on_lease_regained = self.replicas.refresh
        membership.rebuilding = node.rebuilding_partitions
        replicas = self.replicas
        membership.ahead = lambda: tuple(sorted((*key, epoch) for key, epoch in replicas.ahead.items()))
        membership.diverged_tails_cut = lambda: replicas.secondary.diverged_tails_cut
        # Self-fencing: never act as primary without a live lease, nor before the placement in
        # Redis was adopted at start (a failover may have happened while this node was down).
        node.lease_valid = lambda: self._replicas_ready and membership.lease_valid()

    def _add_services(self, node: Node) -> None:
        """The servicers on each port, with health and reflection. Clustered, the internal port also
        takes the router's admin calls (Streams) and replication."""
        streams_pb2_grpc.add_StreamsServicer_to_server(
            StreamsServicer(node, membership=self.membership, admin=self.membership is None), self._client_server
        )
        internal_pb2_grpc.add_ChangeFeedServicer_to_server(ChangeFeedServicer(node), self._internal_server)
        internal_services = [internal_pb2.DESCRIPTOR.services_by_name["ChangeFeed"].full_name]
        if self.membership is not None:
            streams_pb2_grpc.add_StreamsServicer_to_server(
                StreamsServicer(node, membership=self.membership, admin=True), self._internal_server
            )
            internal_services.append(streams_pb2.DESCRIPTOR.services_by_name["Streams"].full_name)
            assert self.replicas is not None
            internal_pb2_grpc.add_ReplicationServicer_to_server(
                ReplicationServicer(
                    self.replicas,
                    self._start_scrub,
                    ConsumerStateShipper(self.membership, security=self._service_security()),
                ),
                self._internal_server,
            )
            internal_services.append(internal_pb2.DESCRIPTOR.services_by_name["Replication"].full_name)
        if isinstance(node.clock, ManualClock):
            logger.warning("test clock enabled: time moves only through TestClock.AdvanceClock")
            internal_pb2_grpc.add_TestClockServicer_to_server(TestClockServicer(node.clock), self._internal_server)
            internal_services.append(internal_pb2.DESCRIPTOR.services_by_name["TestClock"].full_name)
        for server in (self._client_server, self._internal_server):
            health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        reflection.enable_server_reflection(
            [
                streams_pb2.DESCRIPTOR.services_by_name["Streams"].full_name,
                health.SERVICE_NAME,
                reflection.SERVICE_NAME,
            ],
            self._client_server,
        )
        reflection.enable_server_reflection(
            [*internal_services, health.SERVICE_NAME, reflection.SERVICE_NAME], self._internal_server
        )

    async def stop(self) -> bool:
        """Drain and close, each step within its own deadline (`STOP_STEP_TIMEOUTS_S`, the servers
        `shutdown_grace_ms` + 2 s): a step that does not finish is logged by name and skipped, so a
        stuck step cannot keep the process alive (nothing acknowledged depends on it: every
        acknowledged write is already fsynced). Returns True when every step finished."""
        self._serving = False
        grace_s = self.settings.shutdown_grace_ms / 1000
        for service in ("", "weir.v1.Streams", "weir.v1.ChangeFeed"):
            await _set_health(self._health, service, health_pb2.HealthCheckResponse.NOT_SERVING)
        if self._scrub_task is not None:
            self._scrub_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scrub_task
        if self.node is not None:
            self.node.begin_shutdown()  # new calls get shutting_down (retryable); tails and watches end
        clean = True
        if self.sources is not None:
            clean &= await bounded_step("stop the source tails", self.sources.close(), STOP_STEP_TIMEOUTS_S["sources"])
        clean &= await bounded_step(
            "stop the gRPC servers",
            asyncio.gather(self._client_server.stop(grace_s), self._internal_server.stop(grace_s)),
            grace_s + STOP_STEP_TIMEOUTS_S["servers_after_grace"],
        )
        if self.replicas is not None:
            clean &= await bounded_step("close replication", self.replicas.close(), STOP_STEP_TIMEOUTS_S["replicas"])
        if self.horizon_pusher is not None:
            clean &= await bounded_step(
                "close the horizon channels", self.horizon_pusher.close(), STOP_STEP_TIMEOUTS_S["replicas"]
            )
        if self.membership is not None:
            clean &= await bounded_step(
                "withdraw the heartbeat", self.membership.close(), STOP_STEP_TIMEOUTS_S["membership"]
            )
        if self.node is not None:
            clean &= await bounded_step(
                "commit what is queued and close storage", self.node.close(), STOP_STEP_TIMEOUTS_S["node"]
            )
        clean &= await stop_metrics_server(self._metrics_httpd, STOP_STEP_TIMEOUTS_S["metrics"])
        if self._lag_collector is not None:
            REGISTRY.unregister(self._lag_collector)
            self._lag_collector = None
        logger.info("node %s stopped%s", self.settings.node_id, "" if clean else " (some steps timed out)")
        return clean


async def _set_health(servicer: object, service: str, status: int) -> None:
    result = servicer.set(service, status)  # type: ignore[attr-defined]
    if asyncio.iscoroutine(result):
        await result


async def serve(settings: NodeSettings) -> None:
    """Run a node until SIGTERM or SIGINT."""
    process = NodeProcess(settings)
    await process.start()
    tune_garbage_collector()
    stop_deadline_s = settings.shutdown_grace_ms / 1000 + sum(STOP_STEP_TIMEOUTS_S.values())
    await wait_for_stop_signal(f"node {settings.node_id}", stop_deadline_s)
    if not await process.stop():
        # A stuck step may leave a thread that would keep the interpreter from exiting; the data is
        # safe (fsynced before every acknowledgement, SQLite recovers its WAL at the next start).
        logging.shutdown()
        os._exit(1)
