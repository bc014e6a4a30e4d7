"""Hash, set and queue stores over streams (proto/weir/v1/collections.proto), on a cluster `Client`.

Hash store `N` is the one-partition stream `hash:N` and set store `N` the stream `set:N`: each
(key, field) or (key, member) is one subject `k<key>.f<field>` / `k<key>.m<member>` with both parts
base64url-encoded (any string is a key, a field or a member), the latest message wins (history 1),
and a delete or remove stores a tombstone (kv.OPERATION_HEADER). They read and deliver only up to
the high watermark and a replicated store's writes wait for its in-sync replicas, as key-value
buckets do. Queue `N` is the work-queue stream `queue:N` with the consumer `pop`: QueuePop delivers
the oldest element to it and acknowledges (removes) it before answering.

Source: the streams seed's Cache::Hash, Cache::Set and Cache::Queue messages. Errors:
NoSuchBucketError (a store that does not exist), InvalidConfigError (a bad store name),
InvalidArgumentError (a key, field or member over 256 bytes), and the cluster client's errors.
"""

from __future__ import annotations

import base64
import contextlib
import time
from typing import TYPE_CHECKING

from weir.client import consumer_config
from weir.errors import InvalidArgumentError, NotPendingError
from weir.info import StreamConfig
from weir.kv import DELETE_OPERATION, OPERATION_HEADER, is_delete, missing_stream_is_missing_bucket, validate_bucket
from weir.v1 import collections_pb2, types_pb2

if TYPE_CHECKING:
    from weir.cluster import Client

HASH_PREFIX = "hash:"
SET_PREFIX = "set:"
QUEUE_PREFIX = "queue:"
MAX_PART_BYTES = 256
MAX_LISTED = 10_000
POP_CONSUMER = "pop"
POP_ACK_WAIT_MS = 30_000
POP_MAX_DELIVER = 1_000_000  # a popped element is never dropped for being delivered too often
DEFAULT_RANGE = 100
MAX_RANGE = 10_000
CONFIG_TTL_S = 10.0


def _token(marker: str, text: str, what: str) -> str:
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_PART_BYTES:
        raise InvalidArgumentError(f"{what}: at most {MAX_PART_BYTES} bytes of UTF-8, got {len(raw)}")
    return marker + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _text(token: str) -> str:
    body = token[1:]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8", "surrogatepass")


def key_prefix(key: str) -> str:
    """The subject prefix of every field or member of `key` (pure)."""
    return _token("k", key, "key") + "."


def field_subject(key: str, field: str) -> str:
    return key_prefix(key) + _token("f", field, "field")


def member_subject(key: str, member: str) -> str:
    return key_prefix(key) + _token("m", member, "member")


def part_of(subject: str) -> str:
    """The field or member a subject names (pure)."""
    return _text(subject.rsplit(".", 1)[1])


def store_config(prefix: str, name: str, max_bytes: int, ephemeral: bool, replicas: int) -> StreamConfig:
    """The stream a hash or set store is (pure). Errors: InvalidConfigError."""
    validate_bucket(name)
    return StreamConfig(
        name=prefix + name,
        subjects=(">",),
        partitions=1,
        replicas=replicas or 1,
        storage="memory" if ephemeral else "file",
        deliver_up_to_high_watermark=True,
        max_msgs_per_subject=1,
        max_bytes=max_bytes or None,
    )


def queue_config(request: collections_pb2.CreateQueueRequest) -> StreamConfig:
    validate_bucket(request.name)
    return StreamConfig(
        name=QUEUE_PREFIX + request.name,
        subjects=(">",),
        partitions=1,
        replicas=request.replicas or 1,
        storage="memory" if request.ephemeral else "file",
        retention="work_queue",
        deliver_up_to_high_watermark=True,
        max_bytes=request.max_bytes or None,
        max_msgs=request.max_messages or None,
    )


def _store_errors(name: str) -> contextlib.AbstractContextManager[None]:
    return missing_stream_is_missing_bucket(name, "store")


class Collections:
    """The collection operations over a cluster client (routes, retries, idempotent writes)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._replicas: dict[str, tuple[int, float]] = {}  # stream -> (replicas, when asked)

    async def _ack_level(self, stream: str, name: str) -> str:
        cached = self._replicas.get(stream)
        if cached is None or time.monotonic() - cached[1] >= CONFIG_TTL_S:
            with _store_errors(name):
                replicas = (await self.client.stream_info(stream)).config.replicas
            cached = self._replicas[stream] = (replicas, time.monotonic())
        return "all" if cached[0] > 1 else "leader"

    async def _put(self, stream: str, name: str, subject: str, value: bytes, *, delete: bool = False) -> int:
        headers = {OPERATION_HEADER: DELETE_OPERATION} if delete else None
        ack_level = await self._ack_level(stream, name)
        with _store_errors(name):
            ack = await self.client.publish(stream, subject, value, headers=headers, ack_level=ack_level)
        return ack.seq

    async def _latest(self, stream: str, name: str, subject: str) -> types_pb2.Message | None:
        with _store_errors(name):
            latest = await self.client.on_leader(stream, 0, lambda node: node.latest_at_subject(stream, subject))
        return None if latest is None or is_delete(latest) else latest

    async def _live(self, stream: str, name: str, key: str) -> list[types_pb2.Message]:
        """The newest message of every field or member of `key` that is not deleted, sorted."""
        prefix = key_prefix(key)
        with _store_errors(name):
            latest, _ = await self.client.on_leader(
                stream, 0, lambda node: node.latest_by_prefix(stream, prefix, limit=MAX_LISTED)
            )
        return [message for message in latest if not is_delete(message)]

    async def _create(self, config: StreamConfig) -> None:
        await self.client.create_stream(config)
        self._replicas.pop(config.name, None)

    async def _delete(self, stream: str, name: str) -> None:
        with _store_errors(name):
            await self.client.delete_stream(stream)
        self._replicas.pop(stream, None)

    # -- hash ----------------------------------------------------------------------------------------

    async def create_hash_store(self, request: collections_pb2.CreateHashStoreRequest) -> None:
        await self._create(
            store_config(HASH_PREFIX, request.name, request.max_bytes, request.ephemeral, request.replicas)
        )

    async def delete_hash_store(self, name: str) -> None:
        validate_bucket(name)
        await self._delete(HASH_PREFIX + name, name)

    def _hash(self, name: str) -> str:
        validate_bucket(name)
        return HASH_PREFIX + name

    async def hash_set(self, name: str, key: str, field: str, value: bytes) -> int:
        return await self._put(self._hash(name), name, field_subject(key, field), value)

    async def hash_get(self, name: str, key: str, field: str) -> types_pb2.Message | None:
        """The field's message (payload = value, seq = revision), None without a value."""
        return await self._latest(self._hash(name), name, field_subject(key, field))

    async def hash_delete(self, name: str, key: str, field: str) -> None:
        await self._put(self._hash(name), name, field_subject(key, field), b"", delete=True)

    async def hash_get_all(self, name: str, key: str) -> list[collections_pb2.HashFieldEntry]:
        entries = [
            collections_pb2.HashFieldEntry(field=part_of(m.subject), value=m.payload, revision=m.seq)
            for m in await self._live(self._hash(name), name, key)
        ]
        return sorted(entries, key=lambda entry: entry.field)

    # -- set -----------------------------------------------------------------------------------------

    async def create_set_store(self, request: collections_pb2.CreateSetStoreRequest) -> None:
        await self._create(
            store_config(SET_PREFIX, request.name, request.max_bytes, request.ephemeral, request.replicas)
        )

    async def delete_set_store(self, name: str) -> None:
        validate_bucket(name)
        await self._delete(SET_PREFIX + name, name)

    def _set(self, name: str) -> str:
        validate_bucket(name)
        return SET_PREFIX + name

    async def set_add(self, name: str, key: str, member: str) -> None:
        await self._put(self._set(name), name, member_subject(key, member), b"")

    async def set_remove(self, name: str, key: str, member: str) -> None:
        await self._put(self._set(name), name, member_subject(key, member), b"", delete=True)

    async def set_is_member(self, name: str, key: str, member: str) -> bool:
        return await self._latest(self._set(name), name, member_subject(key, member)) is not None

    async def set_members(self, name: str, key: str) -> list[str]:
        return sorted(part_of(message.subject) for message in await self._live(self._set(name), name, key))

    # -- queue ---------------------------------------------------------------------------------------

    async def create_queue(self, request: collections_pb2.CreateQueueRequest) -> None:
        config = queue_config(request)
        await self._create(config)
        pop = consumer_config(POP_CONSUMER, ack_wait_ms=POP_ACK_WAIT_MS, max_deliver=POP_MAX_DELIVER)
        await self.client.create_consumer(config.name, pop)

    async def delete_queue(self, name: str) -> None:
        validate_bucket(name)
        await self._delete(QUEUE_PREFIX + name, name)

    def _queue(self, name: str) -> str:
        validate_bucket(name)
        return QUEUE_PREFIX + name

    async def queue_push(self, name: str, value: bytes) -> int:
        stream = self._queue(name)
        return await self._put(stream, name, "q", value)

    async def queue_pop(self, name: str) -> bytes | None:
        """The oldest element, acknowledged (removed) before this returns; None when empty."""
        stream = self._queue(name)
        with _store_errors(name):
            messages = await self.client.fetch(stream, POP_CONSUMER, 0, batch_size=1)
        if not messages:
            return None
        message = messages[0]
        with contextlib.suppress(NotPendingError), _store_errors(name):
            # A retried ack (its first answer lost) finds the element acknowledged already: popped.
            # The ack names this delivery: had the element stalled past the ack wait and gone to
            # another pop, that one's ack wins and both return it (the one case of a double pop).
            await self.client.on_leader(
                stream, 0, lambda node: node.ack(stream, POP_CONSUMER, 0, message.seq, message.deliver_count)
            )
        return bytes(message.payload)

    async def queue_range(self, name: str, from_sequence: int = 0, limit: int = 0) -> list[bytes]:
        stream = self._queue(name)
        if limit > MAX_RANGE:
            raise InvalidArgumentError(f"limit: at most {MAX_RANGE}, got {limit}")
        with _store_errors(name):
            response = await self.client.on_leader(
                stream,
                0,
                lambda node: node.read_messages(stream, 0, from_sequence, max_messages=limit or DEFAULT_RANGE),
            )
        return [bytes(message.payload) for message in response.messages]

    async def queue_len(self, name: str) -> int:
        stream = self._queue(name)
        with _store_errors(name):
            info = await self.client.stream_info(stream)
        return info.msg_count
