"""Which replicator instance ships which partition.

Every instance registers in ``{prefix}:replicators`` (a ZSET scored by its lease expiry) and
computes the same assignment from the live set: rendezvous (highest-random-weight) hashing of
``stream/partition`` over instance ids (`owner_of`, pure). The assignment only says what an
instance should try to own; exclusivity comes from the per-partition lease key (SET NX PX, renewed
by compare-and-set), so two instances never ship one partition at once even while they disagree
about the live set. A partition whose owner died is taken over once its lease expires.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import redis.asyncio as redis_asyncio
from weir_server.metadata import Keys

# KEYS = lease keys; ARGV[1] = holder, ARGV[2] = lease ms, ARGV[2 + i] = "1" to renew KEYS[i] (only
# our own lease), "0" to acquire it (only a free one). Returns one 1 or 0 per key: held now or not.
_HOLD_ALL = """
local result = {}
for i, key in ipairs(KEYS) do
  local held = 0
  if ARGV[i + 2] == '1' then
    if redis.call('GET', key) == ARGV[1] then
      held = redis.call('SET', key, ARGV[1], 'PX', ARGV[2]) and 1 or 0
    end
  else
    held = redis.call('SET', key, ARGV[1], 'NX', 'PX', ARGV[2]) and 1 or 0
  end
  result[i] = held
end
return result
"""
# Leases one _HOLD_ALL call takes at most: a bounded script run inside Redis (~1 µs a key).
HOLD_CHUNK = 512
# KEYS[1] = lease key; ARGV[1] = holder.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def owner_of(stream: str, partition: int, instances: Iterable[str]) -> str | None:
    """The instance that should ship the partition (rendezvous hashing); None without instances."""
    best: tuple[bytes, str] | None = None
    for instance in instances:
        weight = hashlib.blake2b(f"{instance}\x00{stream}\x00{partition}".encode(), digest_size=8).digest()
        if best is None or (weight, instance) > best:
            best = (weight, instance)
    return best[1] if best is not None else None


class Ownership:
    """Registry and partition leases of one replicator instance in the metadata Redis."""

    def __init__(self, redis: redis_asyncio.Redis, keys: Keys, instance_id: str, lease_ms: int) -> None:
        self.redis = redis
        self.keys = keys
        self.instance_id = instance_id
        self.lease_ms = lease_ms
        self._release = redis.register_script(_RELEASE)
        self._hold_all = redis.register_script(_HOLD_ALL)

    async def now_ms(self) -> int:
        seconds, microseconds = await self.redis.time()
        return int(seconds) * 1000 + int(microseconds) // 1000

    async def live_instances(self) -> list[str]:
        """Register this instance (lease_ms from now) and return every live instance, sorted."""
        now_ms = await self.now_ms()
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.zadd(self.keys.replicators, {self.instance_id: now_ms + self.lease_ms})
            pipe.zremrangebyscore(self.keys.replicators, "-inf", now_ms)
            pipe.zrange(self.keys.replicators, 0, -1)
            results = await pipe.execute()
        return sorted(member.decode() if isinstance(member, bytes) else str(member) for member in results[2])

    async def hold_all(self, wanted: list[tuple[str, int, bool]]) -> list[bool]:
        """Acquire (held=False: only a free lease) or renew (held=True: only our own) the lease of
        each (stream, partition, held) of `wanted`, lease_ms from now, in one Redis call per HOLD_CHUNK
        leases instead of one per partition (a replicator renews every lease it holds each tick:
        at 1,024 partitions, 2,048 round trips a second). Returns, in `wanted`'s order, whether this
        instance holds each lease now. Raises RedisError/OSError when Redis is out of reach; a chunk
        that fails leaves the leases it did not reach as they were."""
        answers: list[bool] = []
        for start in range(0, len(wanted), HOLD_CHUNK):
            chunk = wanted[start : start + HOLD_CHUNK]
            keys = [self.keys.replicator_lease(stream, partition) for stream, partition, _ in chunk]
            flags = ["1" if held else "0" for _, _, held in chunk]
            replies = await self._hold_all(keys=keys, args=[self.instance_id, self.lease_ms, *flags])
            answers.extend(bool(int(reply)) for reply in replies)
        return answers

    async def release(self, stream: str, partition: int) -> None:
        await self._release(keys=[self.keys.replicator_lease(stream, partition)], args=[self.instance_id])

    async def withdraw(self) -> None:
        await self.redis.zrem(self.keys.replicators, self.instance_id)

    async def position(self, stream: str, partition: int) -> tuple[str, int] | None:
        """The stored change-feed position: (primary node id, change seq shipped through)."""
        raw = await self.redis.get(self.keys.replicator_position(stream, partition))
        if not raw:
            return None
        node_id, _, change_seq = (raw.decode() if isinstance(raw, bytes) else str(raw)).partition(" ")
        return node_id, int(change_seq or 0)

    async def save_position(self, stream: str, partition: int, node_id: str, change_seq: int) -> None:
        await self.redis.set(self.keys.replicator_position(stream, partition), f"{node_id} {change_seq}")
