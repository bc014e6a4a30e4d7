"""The router's view of the cluster metadata in Redis (schema: `weir_server.metadata`).

All reads and writes of Redis go through here. Multi-key updates that other routers may race on
(consumer groups) use WATCH/MULTI optimistic transactions; stream records are written only by the
controller. Times come from the Redis server (TIME), so routers on different machines agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import redis.asyncio as redis_asyncio
from redis.exceptions import WatchError
from weir.errors import UnavailableError
from weir.v1 import types_pb2
from weir_server.metadata import InSyncRecord, Keys, NodeRecord
from weir_server.metadata_redis import RedisAccess

T = TypeVar("T")

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
MAX_TRANSACTION_ATTEMPTS = 50


def _bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


class MetadataStore:
    def __init__(self, redis: RedisAccess | str, prefix: str) -> None:
        """`redis`: how to reach the metadata Redis (a bare URL: no password, no client certificate)."""
        self.keys = Keys(prefix)
        access = redis if isinstance(redis, RedisAccess) else RedisAccess(redis)
        self.redis_shown = access.shown()
        # RedisAccess's timeouts (2 s): below the controller lease, so a controller cut from Redis
        # gives the role up before its lease could be taken over, and follows a Sentinel failover soon
        self.redis: redis_asyncio.Redis = access.client()
        self._renew = self.redis.register_script(_RENEW)
        self._release = self.redis.register_script(_RELEASE)

    async def close(self) -> None:
        await self.redis.aclose()

    async def now_ms(self) -> int:
        seconds, microseconds = await self.redis.time()
        return int(seconds) * 1000 + int(microseconds) // 1000

    # -- nodes -------------------------------------------------------------------------------------

    async def nodes(self) -> list[tuple[NodeRecord, bool]]:
        """Every registered node and whether its heartbeat key is alive, by node id."""
        node_ids = sorted(_text(member) for member in await self.redis.smembers(self.keys.nodes))
        if not node_ids:
            return []
        async with self.redis.pipeline(transaction=False) as pipe:
            for node_id in node_ids:
                pipe.hgetall(self.keys.node(node_id))
                pipe.exists(self.keys.heartbeat(node_id))
            replies = await pipe.execute()
        result = []
        for index in range(len(node_ids)):
            raw: dict[bytes, bytes] = replies[2 * index]
            if not raw:
                continue
            record = NodeRecord.from_hash({key.decode(): value.decode() for key, value in raw.items()})
            result.append((record, bool(replies[2 * index + 1]) and record.state == "alive"))
        return result

    async def mark_dead(self, node_id: str) -> None:
        await self.redis.hset(self.keys.node(node_id), "state", "dead")

    # -- streams -----------------------------------------------------------------------------------

    async def stream(self, name: str) -> types_pb2.StreamRecord | None:
        raw = await self.redis.get(self.keys.stream(name))
        return types_pb2.StreamRecord.FromString(_bytes(raw)) if raw else None

    async def stream_names(self) -> list[str]:
        return sorted(_text(member) for member in await self.redis.smembers(self.keys.streams))

    async def streams(self) -> list[types_pb2.StreamRecord]:
        names = await self.stream_names()
        if not names:
            return []
        raws = await self.redis.mget([self.keys.stream(name) for name in names])
        return [types_pb2.StreamRecord.FromString(_bytes(raw)) for raw in raws if raw]

    async def put_stream(self, record: types_pb2.StreamRecord) -> None:
        name = record.config.name
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self.keys.stream(name), record.SerializeToString())
            pipe.sadd(self.keys.streams, name)
            await pipe.execute()

    async def delete_stream(self, name: str) -> None:
        patterns = [self.keys.groups_of(name), self.keys.in_sync_of(name), *self.keys.replicator_keys_of(name)]
        extra = [key for pattern in patterns async for key in self.redis.scan_iter(match=pattern, count=1000)]
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.delete(self.keys.stream(name), *extra)
            pipe.srem(self.keys.streams, name)
            await pipe.execute()

    async def mark_deleting(self, name: str) -> bool:
        """Mark the stream's record deleting (atomically, keeping whatever placement is stored): from
        here on its nodes accept the delete. False when there is no record."""
        key = self.keys.stream(name)
        for _ in range(MAX_TRANSACTION_ATTEMPTS):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(key)
                    raw = await pipe.get(key)
                    if not raw:
                        return False
                    record = types_pb2.StreamRecord.FromString(_bytes(raw))
                    record.deleting = True
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.set(key, record.SerializeToString())
                    await pipe.execute()
                    return True
                except WatchError:
                    continue
        raise UnavailableError(f"stream {name}: too many concurrent updates of its record, retry")

    async def in_sync(self, stream: str, partition: int) -> InSyncRecord | None:
        raw = await self.redis.get(self.keys.in_sync(stream, partition))
        return InSyncRecord.from_json(raw) if raw else None

    async def replace_placement(
        self,
        record: types_pb2.StreamRecord,
        expected_epochs: dict[int, int],
        in_sync: dict[int, InSyncRecord],
        *,
        read_in_sync: dict[int, InSyncRecord | None] | None = None,
        dead_nodes: Sequence[str] = (),
    ) -> bool:
        """Write `record` and the partitions' new in-sync records atomically, only if the stored
        record still has `expected_epochs` (partition -> leader epoch), the in-sync records are
        still `read_in_sync` (what the decision was made from), and every node of `dead_nodes`
        still has no heartbeat; False when any of that moved on.

        The last two close a failover race: a primary that resumes (a pause, a slow Redis) beats
        and adopts the placement it finds, still its own, so it may shrink its in-sync set and
        acknowledge writes with the replicas left in it; a promotion decided from the older in-sync
        set must then not land, or it could choose a replica without those writes."""

        def replace(current: types_pb2.StreamRecord) -> None:
            record.deleting = record.deleting or current.deleting  # a delete that started stays started
            current.CopyFrom(record)

        written = await self.update_stream_record(
            record.config.name,
            replace,
            expected_epochs=expected_epochs,
            in_sync=in_sync,
            read_in_sync=read_in_sync,
            dead_nodes=dead_nodes,
        )
        return written is not None

    async def update_stream_record(
        self,
        name: str,
        mutate: Callable[[types_pb2.StreamRecord], None],
        *,
        expected_epochs: dict[int, int],
        in_sync: dict[int, InSyncRecord] | None = None,
        read_in_sync: dict[int, InSyncRecord | None] | None = None,
        dead_nodes: Sequence[str] = (),
    ) -> types_pb2.StreamRecord | None:
        """`mutate` the stored record as it is now and write it with `in_sync` in one transaction,
        only if its partitions are still at `expected_epochs`, the in-sync records still
        `read_in_sync` and every node of `dead_nodes` still without a heartbeat; the record
        written, or None when any of that moved on (or the stream is gone). A move, which runs
        outside the controller's lock, changes only its partition of the record as it is now."""
        key = self.keys.stream(name)
        read_in_sync = read_in_sync or {}
        in_sync_keys = {index: self.keys.in_sync(name, index) for index in read_in_sync}
        heartbeat_keys = [self.keys.heartbeat(node_id) for node_id in dead_nodes]
        async with self.redis.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(key, *in_sync_keys.values(), *heartbeat_keys)
                raw = await pipe.get(key)
                if not raw:
                    return None
                current = types_pb2.StreamRecord.FromString(_bytes(raw))
                for index, epoch in expected_epochs.items():
                    if current.placement.partitions[index].leader_epoch != epoch:
                        return None
                for index, in_sync_key in in_sync_keys.items():
                    stored = await pipe.get(in_sync_key)
                    if (InSyncRecord.from_json(stored) if stored else None) != read_in_sync[index]:
                        return None
                for heartbeat_key in heartbeat_keys:
                    if await pipe.exists(heartbeat_key):
                        return None
                mutate(current)
                pipe.multi()  # type: ignore[no-untyped-call]
                pipe.set(key, current.SerializeToString())
                for index, value in (in_sync or {}).items():
                    pipe.set(self.keys.in_sync(name, index), value.to_json())
                await pipe.execute()
                return current
            except WatchError:
                return None

    # -- consumer groups -----------------------------------------------------------------------------

    async def update_group(self, stream: str, group: str, update: Callable[[bytes | None, int], tuple[str, T]]) -> T:
        """Apply `update(current_json, now_ms) -> (new_json, result)` atomically (WATCH/MULTI,
        retried on conflict); returns `result`."""
        key = self.keys.group(stream, group)
        for _ in range(MAX_TRANSACTION_ATTEMPTS):
            async with self.redis.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(key)
                    current = await pipe.get(key)
                    seconds, microseconds = await pipe.time()
                    now_ms = int(seconds) * 1000 + int(microseconds) // 1000
                    new_json, result = update(_bytes(current) if current is not None else None, now_ms)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.set(key, new_json)
                    await pipe.execute()
                    return result
                except WatchError:
                    continue
        raise UnavailableError(f"consumer group {stream}/{group}: too many concurrent updates, retry")

    # -- controller lease ------------------------------------------------------------------------------

    async def acquire_lease(self, holder: str, lease_ms: int) -> bool:
        return bool(await self.redis.set(self.keys.controller, holder, nx=True, px=lease_ms))

    async def renew_lease(self, holder: str, lease_ms: int) -> bool:
        return bool(await self._renew(keys=[self.keys.controller], args=[holder, lease_ms]))

    async def release_lease(self, holder: str) -> None:
        await self._release(keys=[self.keys.controller], args=[holder])

    async def lease_holder(self) -> str:
        raw = await self.redis.get(self.keys.controller)
        return _text(raw) if raw else ""
