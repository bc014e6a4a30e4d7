"""Cluster membership of a partition node: registration and heartbeats in the metadata Redis, and
the address lookups a redirect needs (DESIGN §4).

The node writes its hash (`weir_server.metadata.Keys.node`) at start and refreshes it and its heartbeat key
(TTL `heartbeat_ttl_ms`) every `heartbeat_interval_ms`; a graceful stop deletes the heartbeat key so
the controller marks it dead at once instead of after the TTL. Redis errors are logged and retried
on the next beat (the node keeps serving what it hosts; the router will mark it dead if beats stop
for longer than the TTL).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable

import redis.asyncio as redis_asyncio
from redis.exceptions import RedisError
from weir.v1 import types_pb2
from weir_server.listeners import parse_listeners
from weir_server.metadata import InSyncRecord, Keys, NodeRecord, assign_node_number

from weir_partition_node import metrics
from weir_partition_node.settings import NodeSettings

logger = logging.getLogger(__name__)


class Membership:
    def __init__(self, settings: NodeSettings, client_address: str, internal_address: str, metrics_address: str):
        self.settings = settings
        self.keys = Keys(settings.metadata_prefix)
        access = settings.redis_access(settings.redis_url)
        access.warn_if_exposed(not settings.plaintext)
        self.redis_shown = access.shown()  # for logs: no password
        self.redis: redis_asyncio.Redis = access.client(decode_responses=True)
        self.raw: redis_asyncio.Redis = access.client()
        # Monotonic deadline of the heartbeat lease: the controller cannot declare this node dead
        # before its heartbeat key expires, which is never before this (the key's TTL starts when
        # Redis receives the write, after the moment this deadline is measured from).
        self._lease_until = 0.0
        # Called when a heartbeat finds the lease had lapsed (a pause, Redis out of reach): the
        # controller may have replaced this node meanwhile, so the node adopts the placements Redis
        # holds now (demoting itself if it was replaced) before its lease counts again.
        self.on_lease_regained: Callable[[], Awaitable[None]] | None = None
        # The partitions this node rebuilds from another copy (storage/rebuild.py), read at each beat.
        self.rebuilding: Callable[[], tuple[tuple[str, int], ...]] = tuple
        # (stream, partition, leader epoch) held under a newer epoch than the metadata store records.
        self.ahead: Callable[[], tuple[tuple[str, int, int], ...]] = tuple
        # Diverged tails cut from this node's copies since it started (healed: `weir doctor`).
        self.diverged_tails_cut: Callable[[], int] = int
        self.record = NodeRecord(
            node_id=settings.node_id,
            client_address=client_address,
            internal_address=internal_address,
            metrics_address=metrics_address,
            client_listeners=parse_listeners(settings.advertised_listeners),
            zone=settings.zone,
            capacity=settings.capacity,
            registered_at_ms=int(time.time() * 1000),
            heartbeat_ttl_ms=settings.heartbeat_ttl_ms,
        )
        self._task: asyncio.Task[None] | None = None

    async def register(self) -> None:
        """Write the registration and the first heartbeat; raises if Redis is unreachable (a node
        that cannot join its cluster should not start). The node's number is the one the cluster
        gave it at its first registration (`assign_node_number`)."""
        number = await assign_node_number(self.redis, self.keys, self.settings.node_id)
        self.record = dataclasses.replace(self.record, number=number)
        await self._beat()
        logger.info(
            "registered node %s as %s in %s", self.settings.node_id, self.record.client_address, self.redis_shown
        )
        self._task = asyncio.get_running_loop().create_task(self._beat_forever(), name="heartbeat")

    def lease_valid(self) -> bool:
        """Whether the last successful heartbeat is recent enough that no failover can have
        replaced this node yet (a margin of one heartbeat interval under the TTL)."""
        return time.monotonic() < self._lease_until

    async def _beat(self) -> None:
        """Write the heartbeat and renew the lease from the moment it was sent. When the lease had
        lapsed, `on_lease_regained` runs first and the lease stays lapsed if it fails: a primary that
        was replaced while it could not beat must never acknowledge a write as its old self (a
        replicator that has not seen the failover yet could report a follower's progress under the
        new primary, and the old one would count it as holding its own records)."""
        lapsed = self._lease_until > 0 and time.monotonic() >= self._lease_until
        sent = time.monotonic()
        now_ms = int(time.time() * 1000)
        values = dataclasses.replace(
            self.record,
            rebuilding_partitions=self.rebuilding(),
            ahead_partitions=self.ahead(),
            diverged_tails_cut=self.diverged_tails_cut(),
        ).to_hash()
        values["last_heartbeat_ms"] = str(now_ms)
        values["state"] = "alive"
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.sadd(self.keys.nodes, self.settings.node_id)
            pipe.hset(self.keys.node(self.settings.node_id), mapping=dict(values))  # type: ignore[arg-type]
            pipe.set(self.keys.heartbeat(self.settings.node_id), str(now_ms), px=self.settings.heartbeat_ttl_ms)
            await pipe.execute()
        if lapsed and self.on_lease_regained is not None:
            logger.warning("heartbeat lease of %s had lapsed: adopting current placements first", self.settings.node_id)
            await self.on_lease_regained()
        margin_ms = min(self.settings.heartbeat_interval_ms, self.settings.heartbeat_ttl_ms // 4)
        self._lease_until = sent + (self.settings.heartbeat_ttl_ms - margin_ms) / 1000
        metrics.HEARTBEAT_LAST_SECONDS.set(now_ms / 1000)

    async def _beat_forever(self) -> None:
        interval_s = self.settings.heartbeat_interval_ms / 1000
        while True:
            await asyncio.sleep(interval_s)
            try:
                await self._beat()
            except (RedisError, OSError) as error:
                metrics.REDIS_ERRORS.inc()
                logger.warning("heartbeat to %s failed: %s", self.redis_shown, error)
            except Exception:  # the placement adoption after a lapse: try again at the next beat
                logger.exception("heartbeat of %s failed", self.settings.node_id)

    async def leader_address(self, node_id: str) -> str:
        """The client address a node registered ("" when unknown or Redis is unreachable)."""
        return await self._registered_address(node_id, "client_address")

    async def internal_address(self, node_id: str) -> str:
        """The internal (replication) address a node registered ("" when unknown or Redis is
        unreachable)."""
        return await self._registered_address(node_id, "internal_address")

    async def _registered_address(self, node_id: str, field: str) -> str:
        if not node_id:
            return ""
        try:
            address = await self.redis.hget(self.keys.node(node_id), field)
        except (RedisError, OSError):
            metrics.REDIS_ERRORS.inc()
            return ""
        return str(address or "")

    async def placement_of(self, stream: str) -> types_pb2.StreamRecord | None:
        """The router's record of a stream this node does not host (None when there is none)."""
        try:
            raw = await self.raw.get(self.keys.stream(stream))
        except (RedisError, OSError):
            metrics.REDIS_ERRORS.inc()
            return None
        if not raw:
            return None
        return types_pb2.StreamRecord.FromString(raw if isinstance(raw, bytes) else raw.encode())

    async def stream_records(self, names: list[str]) -> dict[str, types_pb2.StreamRecord]:
        """The router's records of `names` (missing ones are left out). Raises RedisError/OSError."""
        if not names:
            return {}
        values = await self.raw.mget([self.keys.stream(name) for name in names])
        return {
            name: types_pb2.StreamRecord.FromString(raw if isinstance(raw, bytes) else raw.encode())
            for name, raw in zip(names, values, strict=True)
            if raw
        }

    async def in_sync_record(self, stream: str, partition: int) -> InSyncRecord | None:
        raw = await self.raw.get(self.keys.in_sync(stream, partition))
        return InSyncRecord.from_json(raw) if raw else None

    async def close(self) -> None:
        """Stop heartbeating and withdraw the heartbeat key (the controller marks the node dead)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        try:
            await self.redis.delete(self.keys.heartbeat(self.settings.node_id))
        except (RedisError, OSError) as error:
            logger.warning("could not withdraw the heartbeat: %s", error)
        await self.redis.aclose()
        await self.raw.aclose()
