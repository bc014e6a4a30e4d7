"""Key-value buckets over streams (proto/weir/v1/kv.proto), on a cluster `Client`.

Bucket `B` is the one-partition stream `kv:B`; key `K` is the subject `K`; a value is a message and
its revision the message's seq. A delete stores a tombstone (header `weir-kv-operation: DEL`, empty
payload); a purge stores one (`PURGE`) as a rollup, which removes every earlier revision of the key in
the same commit. History is the stream's max_msgs_per_subject, the bucket TTL its max_age_ms. The stream
reads and delivers only up to its high watermark, and a replicated bucket's writes are
acknowledged by its in-sync replicas (ack level all): a value once read is never taken back by a
failover, so each key is linearisable through its primary.

Source: the streams seed's KV messages and result codes (KvPutRequest ... KvDeleteEvent); NATS
JetStream's KV where the seed is silent (key characters, Create over a deleted key, watch order).
Errors: NoSuchBucketError, InvalidKeyError, InvalidConfigError, WrongRevisionError (metadata
"revision": the key's current revision), OversizeError, NoSuchKeyError (Touch), and the cluster
client's errors after its retries.

Per-key TTL: a value put with ttl_ms is stored with that message TTL and as a rollup (it replaces
the key's earlier revisions), so once it expires the key has no value at all; the expiry removes it
(a remove change, reason ttl) and is not a watch event.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

from weir.errors import (
    InvalidConfigError,
    InvalidKeyError,
    NoSuchBucketError,
    NoSuchKeyError,
    NoSuchStreamError,
    OversizeError,
    WrongRevisionError,
)
from weir.info import StreamConfig
from weir.v1 import kv_pb2, types_pb2

if TYPE_CHECKING:
    from weir.cluster import Client

BUCKET_STREAM_PREFIX = "kv:"
OPERATION_HEADER = "weir-kv-operation"
DELETE_OPERATION = "DEL"
PURGE_OPERATION = "PURGE"
MAX_HISTORY = 64
MAX_KEY_BYTES = 1024
MAX_KEYS_LISTED = 10_000
# What a value's message carries besides the value (key, tombstone header, framing): a bucket's
# stream takes messages up to max_value_size + this, and the value itself is checked here.
ENVELOPE_BYTES = MAX_KEY_BYTES + 256
WATCH_POLL_MS = 5_000  # each watch read waits this long for a change before asking again
CONFIG_TTL_S = 10.0  # a bucket's settings are asked again after this (another router may recreate it)

_BUCKET = re.compile(r"[A-Za-z0-9_-]{1,64}")
_KEY = re.compile(r"[-/_=.A-Za-z0-9]+")


def validate_bucket(bucket: str) -> None:
    """InvalidConfigError unless `bucket` is 1..64 characters of A-Z a-z 0-9 - _."""
    if not _BUCKET.fullmatch(bucket):
        shown = bucket if len(bucket) <= 64 else bucket[:61] + "..."
        raise InvalidConfigError(f"bucket {shown!r} is invalid: use 1..64 characters of A-Z a-z 0-9 - _", bucket=shown)


def validate_key(key: str) -> None:
    """InvalidKeyError unless `key` follows kv.proto's key rules."""
    shown = key if len(key) <= 64 else key[:61] + "..."
    if not key:
        raise InvalidKeyError("key is empty")
    if len(key) > MAX_KEY_BYTES:
        raise InvalidKeyError(f"key {shown!r} is {len(key)} bytes; the maximum is {MAX_KEY_BYTES}", key=shown)
    if not _KEY.fullmatch(key):
        raise InvalidKeyError(f"key {shown!r} is invalid: use A-Z a-z 0-9 - _ / = and '.'", key=shown)
    if "" in key.split("."):
        raise InvalidKeyError(f"key {shown!r} has an empty token (a leading, trailing or doubled '.')", key=shown)


def bucket_stream(bucket: str) -> str:
    validate_bucket(bucket)
    return BUCKET_STREAM_PREFIX + bucket


def bucket_config(request: kv_pb2.KvCreateBucketRequest) -> StreamConfig:
    """The stream a bucket is (pure). Errors: InvalidConfigError."""
    name = bucket_stream(request.bucket)
    history = request.history or 1
    if history > MAX_HISTORY:
        raise InvalidConfigError(f"history: at most {MAX_HISTORY}, got {history}", bucket=request.bucket)
    return StreamConfig(
        name=name,
        subjects=(">",),
        partitions=1,
        replicas=request.replicas or 1,
        storage="memory" if request.ephemeral else "file",
        deliver_up_to_high_watermark=True,
        max_msg_bytes=request.max_value_size + ENVELOPE_BYTES if request.max_value_size else 0,
        max_msgs_per_subject=history,
        max_bytes=request.max_bytes or None,
        max_age_ms=request.max_age_ms or None,
    )


def is_delete(message: types_pb2.Message) -> bool:
    """A tombstone: a delete's or a purge's marker."""
    return any(
        header.key == OPERATION_HEADER and header.value in (DELETE_OPERATION, PURGE_OPERATION)
        for header in message.headers
    )


def watch_event(message: types_pb2.Message) -> kv_pb2.KvWatchEvent:
    """A stored message as a KvWatchEvent (pure)."""
    if is_delete(message):
        return kv_pb2.KvWatchEvent(
            delete=kv_pb2.KvDeleteEvent(key=message.subject, revision=message.seq, ts_ms=message.ts_ms)
        )
    return kv_pb2.KvWatchEvent(
        put=kv_pb2.KvPutEvent(key=message.subject, value=message.payload, revision=message.seq, ts_ms=message.ts_ms)
    )


@contextlib.contextmanager
def missing_stream_is_missing_bucket(bucket: str, what: str = "bucket") -> Iterator[None]:
    """A bucket's (or store's, `what`) missing stream is its no_such_bucket."""
    try:
        yield
    except NoSuchStreamError:
        raise NoSuchBucketError(f"{what} {bucket!r} does not exist", bucket=bucket) from None


class KeyValue:
    """The KV operations over a cluster client (which routes, retries and keeps publishes
    idempotent: a retried put stores one revision)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._configs: dict[str, tuple[StreamConfig, float]] = {}  # bucket -> (config, when asked)

    # -- buckets -------------------------------------------------------------------------------------

    async def create_bucket(self, request: kv_pb2.KvCreateBucketRequest) -> None:
        """Create the bucket's stream (idempotent for the same settings)."""
        config = bucket_config(request)
        await self.client.create_stream(config)
        self._configs.pop(request.bucket, None)

    async def delete_bucket(self, bucket: str) -> None:
        """Delete the bucket and every key in it. Errors: NoSuchBucketError."""
        with missing_stream_is_missing_bucket(bucket):
            await self.client.delete_stream(bucket_stream(bucket))
        self._configs.pop(bucket, None)

    async def _config(self, bucket: str) -> StreamConfig:
        cached = self._configs.get(bucket)
        if cached is not None and time.monotonic() - cached[1] < CONFIG_TTL_S:
            return cached[0]
        with missing_stream_is_missing_bucket(bucket):
            config = (await self.client.stream_info(bucket_stream(bucket))).config
        self._configs[bucket] = (config, time.monotonic())
        return config

    # -- writes --------------------------------------------------------------------------------------

    async def _write(
        self,
        bucket: str,
        key: str,
        value: bytes,
        *,
        ttl_ms: int = 0,
        expected_revision: int | None = None,
        operation: str = "",
    ) -> int:
        stream = bucket_stream(bucket)
        validate_key(key)
        config = await self._config(bucket)
        if config.max_msg_bytes and len(value) > config.max_msg_bytes - ENVELOPE_BYTES:
            raise OversizeError(
                f"value of {len(value)} bytes is above the bucket's max_value_size "
                f"({config.max_msg_bytes - ENVELOPE_BYTES})",
                bucket=bucket,
                key=key,
            )
        headers = {OPERATION_HEADER: operation} if operation else None
        ack_level = "all" if config.replicas > 1 else "leader"
        try:
            with missing_stream_is_missing_bucket(bucket):
                ack = await self.client.publish(
                    stream,
                    key,
                    value,
                    headers=headers,
                    expected_last_seq=expected_revision,
                    ack_level=ack_level,
                    # A purge, and a value with a TTL (so that once it expires the key has none),
                    # replace every earlier revision of the key.
                    rollup=operation == PURGE_OPERATION or ttl_ms > 0,
                    ttl_ms=ttl_ms,
                )
        except WrongRevisionError as error:
            current = int(error.metadata.get("last_seq", "0"))
            raise WrongRevisionError(
                f"key {key!r} is at revision {current}, expected {expected_revision}",
                bucket=bucket,
                key=key,
                revision=current,
            ) from None
        return ack.seq

    async def put(self, bucket: str, key: str, value: bytes, ttl_ms: int = 0) -> int:
        """Store `value` under `key`; returns its revision."""
        return await self._write(bucket, key, value, ttl_ms=ttl_ms)

    async def update(self, bucket: str, key: str, value: bytes, expected_revision: int, ttl_ms: int = 0) -> int:
        """Store `value` only if the key is at `expected_revision` (0 = no value yet)."""
        return await self._write(bucket, key, value, ttl_ms=ttl_ms, expected_revision=expected_revision)

    async def create(self, bucket: str, key: str, value: bytes, ttl_ms: int = 0) -> int:
        """Store `value` only if the key has none: never written, or deleted (its tombstone's
        revision is then the expected one, as in JetStream)."""
        try:
            return await self._write(bucket, key, value, ttl_ms=ttl_ms, expected_revision=0)
        except WrongRevisionError as error:
            current = int(error.metadata["revision"])
            latest = await self._latest(bucket, key)
            if latest is None or latest.seq != current or not is_delete(latest):
                raise WrongRevisionError(
                    f"key {key!r} already has a value (revision {current})", bucket=bucket, key=key, revision=current
                ) from None
            return await self._write(bucket, key, value, ttl_ms=ttl_ms, expected_revision=current)

    async def touch(self, bucket: str, key: str, ttl_ms: int) -> int:
        """Store the key's current value again with `ttl_ms` from now (0: it no longer expires);
        returns the new revision. Errors: NoSuchKeyError (no value), WrongRevisionError (a write
        came in between: touch again)."""
        latest = await self._latest(bucket, key)
        if latest is None or is_delete(latest):
            raise NoSuchKeyError(f"key {key!r} has no value in bucket {bucket!r}", bucket=bucket, key=key)
        return await self._write(bucket, key, latest.payload, ttl_ms=ttl_ms, expected_revision=latest.seq)

    async def delete(self, bucket: str, key: str) -> int:
        """Store a tombstone for `key`; returns its revision."""
        return await self._write(bucket, key, b"", operation=DELETE_OPERATION)

    async def purge(self, bucket: str, key: str) -> int:
        """Remove every revision of `key`, leaving one tombstone (a rollup: atomic, replicated as one
        removal); returns the tombstone's revision."""
        return await self._write(bucket, key, b"", operation=PURGE_OPERATION)

    # -- reads ---------------------------------------------------------------------------------------

    async def _latest(self, bucket: str, key: str) -> types_pb2.Message | None:
        stream = bucket_stream(bucket)
        validate_key(key)
        with missing_stream_is_missing_bucket(bucket):
            return await self.client.on_leader(stream, 0, lambda node: node.latest_at_subject(stream, key))

    async def get(self, bucket: str, key: str) -> kv_pb2.KvEntry | None:
        """The key's current value, None when it has none (never written or deleted)."""
        latest = await self._latest(bucket, key)
        if latest is None or is_delete(latest):
            return None
        return kv_pb2.KvEntry(value=latest.payload, revision=latest.seq, ts_ms=latest.ts_ms)

    async def keys(self, bucket: str) -> tuple[list[kv_pb2.KvKeyEntry], bool]:
        """(every key with its current revision and whether it is deleted, sorted; whether the
        list stopped at MAX_KEYS_LISTED)."""
        stream = bucket_stream(bucket)
        with missing_stream_is_missing_bucket(bucket):
            latest, truncated = await self.client.on_leader(
                stream, 0, lambda node: node.latest_by_prefix(stream, limit=MAX_KEYS_LISTED)
            )
        entries = [kv_pb2.KvKeyEntry(key=m.subject, revision=m.seq, deleted=is_delete(m)) for m in latest]
        return entries, truncated

    async def history(
        self, bucket: str, key: str, from_revision: int = 0, limit: int = 0
    ) -> list[kv_pb2.KvHistoryEntry]:
        """The key's kept revisions from `from_revision`, oldest first (at most `limit`, 0 = 1,000)."""
        stream = bucket_stream(bucket)
        validate_key(key)
        with missing_stream_is_missing_bucket(bucket):
            messages = await self.client.on_leader(
                stream, 0, lambda node: node.scan_subject(stream, key, from_seq=from_revision, limit=limit)
            )
        return [
            kv_pb2.KvHistoryEntry(value=m.payload, revision=m.seq, ts_ms=m.ts_ms, deleted=is_delete(m))
            for m in messages
        ]

    async def watch(self, bucket: str, key: str = "", from_revision: int = 0) -> AsyncIterator[kv_pb2.KvWatchEvent]:
        """Each key's current value (deletes included), then every change, each once and in
        revision order; with `from_revision`, every change from it. Never ends by itself."""
        stream = bucket_stream(bucket)
        if key:
            validate_key(key)
        position, horizon = from_revision, 0
        with missing_stream_is_missing_bucket(bucket):
            if not from_revision:  # the moment whose values come first
                first = await self.client.on_leader(stream, 0, lambda node: node.read_messages(stream, max_messages=1))
                horizon = first.last_seq
            while True:
                response = await self.client.on_leader(
                    stream,
                    0,
                    lambda node, start=position: node.read_messages(  # type: ignore[misc]
                        stream,
                        from_seq=start,
                        filter_subject=key,
                        last_per_subject_until=horizon,
                        max_wait_ms=WATCH_POLL_MS,
                    ),
                )
                for message in response.messages:
                    yield watch_event(message)
                position = response.next_seq
