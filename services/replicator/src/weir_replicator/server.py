"""The replicator process: a control loop over the cluster's placements, a `PartitionShipper` per
partition it holds the lease for, a Prometheus /metrics endpoint, and clean shutdown on SIGTERM.

Every `tick_ms` the loop registers the instance, reads the stream records and node addresses from
Redis, decides which replicated partitions this instance should ship (`owner_of`), acquires or
renews their leases, starts a shipper for a newly held partition or one whose leader epoch or
primary changed, and stops (and releases) the rest. When Redis does not answer, every shipper is
paused at once: without a renewed lease another instance may take over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import redis.asyncio as redis_asyncio
from redis.exceptions import RedisError
from weir.v1 import types_pb2
from weir_server import tls
from weir_server.metadata import Keys
from weir_server.metrics_server import start_metrics_server
from weir_server.runtime import tune_garbage_collector
from weir_server.service import wait_for_stop_signal, write_ready_file
from weir_server.shutdown import bounded_step, stop_metrics_server

from weir_replicator import metrics
from weir_replicator.ownership import Ownership, owner_of
from weir_replicator.sessions import SessionHub
from weir_replicator.settings import ReplicatorSettings
from weir_replicator.shipping import ClientPool, PartitionShipper

logger = logging.getLogger(__name__)
# Deadlines of the shutdown steps (seconds): 9 s in all, under STOP_DEADLINE_S, where the watchdog
# ends the process (and that under the launcher's 20 s). A stopped shipper's partitions are taken
# over by another replicator from the ownership it released, or after the ownership's TTL.
STOP_STEP_TIMEOUTS_S = {"loop": 2.0, "close": 6.0, "metrics": 1.0}
STOP_DEADLINE_S = 15.0


class Replicator:
    def __init__(self, settings: ReplicatorSettings) -> None:
        self.settings = settings
        self.keys = Keys(settings.metadata_prefix)
        access = settings.redis_access(settings.redis_url)
        access.warn_if_exposed(not settings.plaintext)
        self.redis_shown = access.shown()  # for logs: no password
        self.redis: redis_asyncio.Redis = access.client()
        self.ownership = Ownership(self.redis, self.keys, settings.replicator_id, settings.lease_ms)
        self.clients = ClientPool(settings.node_timeout_ms / 1000)
        # One replication session per node pair carries every partition's rounds (sessions.py).
        self.sessions = SessionHub(
            self.clients,
            max_bytes=settings.session_max_bytes,
            timeout_s=settings.node_timeout_ms / 1000,
            retry_backoff_s=settings.retry_backoff_ms / 1000,
        )
        self.shippers: dict[tuple[str, int], PartitionShipper] = {}
        self._leases: dict[tuple[str, int], asyncio.Event] = {}

    async def _records(self) -> tuple[list[types_pb2.StreamRecord], dict[str, str]]:
        names = sorted(
            member.decode() if isinstance(member, bytes) else str(member)
            for member in await self.redis.smembers(self.keys.streams)
        )
        records: list[types_pb2.StreamRecord] = []
        if names:
            raws = await self.redis.mget([self.keys.stream(name) for name in names])
            records = [
                types_pb2.StreamRecord.FromString(raw if isinstance(raw, bytes) else raw.encode())
                for raw in raws
                if raw
            ]
        node_ids = [
            member.decode() if isinstance(member, bytes) else str(member)
            for member in await self.redis.smembers(self.keys.nodes)
        ]
        addresses: dict[str, str] = {}
        for node_id in node_ids:
            address = await self.redis.hget(self.keys.node(node_id), "internal_address")
            if address:
                addresses[node_id] = address.decode() if isinstance(address, bytes) else str(address)
        return records, addresses

    async def tick(self) -> None:
        """One pass of the control loop (see the module docstring)."""
        instances = await self.ownership.live_instances()
        metrics.LIVE_INSTANCES.set(len(instances))
        records, addresses = await self._records()
        wanted: dict[tuple[str, int], types_pb2.StreamRecord] = {}
        for record in records:
            for entry in record.placement.partitions:
                if not entry.secondary_node_ids:
                    continue  # one copy (replicas 1, and no move adding one): nothing to ship
                if owner_of(record.config.name, entry.partition, instances) == self.settings.replicator_id:
                    wanted[(record.config.name, entry.partition)] = record
        for key in list(self.shippers):
            if key not in wanted:
                await self._drop(key, release=True)
        holds = await self.ownership.hold_all(
            [(*key, key in self._leases and self._leases[key].is_set()) for key in wanted]
        )
        for (key, record), holding in zip(wanted.items(), holds, strict=True):
            if not holding:
                if key in self.shippers:
                    logger.warning("%s/%d: lost the partition lease", *key)
                    await self._drop(key, release=False)
                continue
            event = self._leases.setdefault(key, asyncio.Event())
            event.set()
            shipper = self.shippers.get(key)
            entry = record.placement.partitions[key[1]]
            if shipper is not None and shipper.key == (*key, entry.leader_epoch, entry.primary_node_id):
                continue
            if shipper is not None:
                await shipper.stop()
            shipper = PartitionShipper(
                settings=self.settings,
                ownership=self.ownership,
                record=record,
                partition=key[1],
                addresses=addresses,
                clients=self.clients,
                sessions=self.sessions,
                lease_valid=event,
            )
            shipper.start()
            self.shippers[key] = shipper
            logger.info(
                "%s/%d: shipping from %s to %s under leader epoch %d",
                *key,
                entry.primary_node_id,
                list(entry.secondary_node_ids),
                entry.leader_epoch,
            )
        metrics.PARTITIONS_OWNED.set(len(self.shippers))

    async def _drop(self, key: tuple[str, int], *, release: bool) -> None:
        shipper = self.shippers.pop(key, None)
        event = self._leases.pop(key, None)
        if event is not None:
            event.clear()
        if shipper is not None:
            await shipper.stop()
        if release:
            with contextlib.suppress(RedisError, OSError):
                await self.ownership.release(*key)

    def pause_all(self) -> None:
        for event in self._leases.values():
            event.clear()

    async def run(self) -> None:
        interval_s = self.settings.tick_ms / 1000
        while True:
            try:
                await self.tick()
            except (RedisError, OSError) as error:
                metrics.REDIS_ERRORS.inc()
                logger.warning("Redis unreachable, pausing every partition: %s", error)
                self.pause_all()
            except Exception:
                logger.exception("replicator tick failed")
            await asyncio.sleep(interval_s)

    async def close(self) -> None:
        for key in list(self.shippers):
            await self._drop(key, release=True)
        await self.sessions.close()
        with contextlib.suppress(RedisError, OSError):
            await self.ownership.withdraw()
        await self.clients.close()
        await self.redis.aclose()


async def serve(settings: ReplicatorSettings) -> None:
    """Run a replicator until SIGTERM or SIGINT."""
    tls.configure(settings, f"replicator {settings.replicator_id}")
    running = asyncio.Event()  # /readyz: from the ready file until the stop signal
    loop = asyncio.get_running_loop()
    httpd = start_metrics_server(
        settings.metrics_port, settings.host, running.is_set, loop=loop, access=settings.metrics_access()
    )
    replicator = Replicator(settings)
    task = loop.create_task(replicator.run(), name="replicator")
    tune_garbage_collector()
    logger.info(
        "replicator %s running: metadata %s, metrics %s:%d",
        settings.replicator_id,
        replicator.redis_shown,
        settings.host,
        httpd.server_port,
    )
    ready = {"replicator_id": settings.replicator_id, "metrics_port": httpd.server_port}
    write_ready_file(settings.ready_file, ready)
    running.set()
    await wait_for_stop_signal(f"replicator {settings.replicator_id}", STOP_DEADLINE_S)
    running.clear()
    task.cancel()
    clean = await bounded_step(
        "stop the ownership loop", asyncio.gather(task, return_exceptions=True), STOP_STEP_TIMEOUTS_S["loop"]
    )
    clean &= await bounded_step(
        "stop the shippers, withdraw ownership, close the clients", replicator.close(), STOP_STEP_TIMEOUTS_S["close"]
    )
    clean &= await stop_metrics_server(httpd, STOP_STEP_TIMEOUTS_S["metrics"])
    logger.info("replicator %s stopped%s", settings.replicator_id, "" if clean else " (some steps did not finish)")
