"""Object store buckets over streams (proto/weir/v1/objects.proto), on a cluster `Client`.

Bucket `B` is the one-partition stream `obj:B`. An object is chunks, then its metadata (the seed's
atomicity model: a reader sees an object only once its metadata is stored, so an upload cut off
before it leaves orphan chunks and no object):
- a chunk is a message at `c.<name>.<upload>.<index>` (`name` base64url-encoded, `upload` a random
  id of this upload), or with `dedupe` at `d.<sha256 hex>`, stored once per content (a chunk already
  there is not stored again: create-if-absent);
- the metadata is a JSON message at `m.<name>` (its seq is the object's revision; the bucket keeps
  `history` revisions of it): size, chunk size and count, sha256, headers, and where the chunks are
  (their seqs, or their hashes with dedupe). A delete stores a tombstone there.
Every chunk but the last is `chunk_size` bytes (input is re-chunked as it comes, so memory holds one
chunk), so a range read loads only the chunks it overlaps. A Put removes the chunks of the revision
it replaces; `collect_garbage` removes chunks that no live object refers to and that are older than
a grace period (orphans of cut-off uploads, dedupe chunks no longer used), never a live one's.
Reads stop at the bucket's high watermark and replicated buckets write with ack level all.

Source: the streams seed's object store messages and comments (PutObject ... GetObjectRange).
Errors: NoSuchBucketError, NoSuchObjectError, ShaMismatchError, IncompleteObjectError (a chunk of
the revision being read is gone), InvalidArgumentError, and the cluster client's errors.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
import time
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from weir.errors import (
    IncompleteObjectError,
    InvalidArgumentError,
    InvalidConfigError,
    NoSuchMessageError,
    NoSuchObjectError,
    ShaMismatchError,
    WrongRevisionError,
)
from weir.info import StreamConfig
from weir.kv import (
    CONFIG_TTL_S,
    DELETE_OPERATION,
    MAX_HISTORY,
    OPERATION_HEADER,
    is_delete,
    missing_stream_is_missing_bucket,
    validate_bucket,
)
from weir.options import OBJECT_GC_GRACE_MS, OBJECT_MAX_CHUNK_BYTES
from weir.v1 import types_pb2

if TYPE_CHECKING:
    from weir.cluster import Client

OBJECT_STREAM_PREFIX = "obj:"
DEFAULT_CHUNK_BYTES = 256 * 1024
MAX_CHUNK_BYTES = OBJECT_MAX_CHUNK_BYTES
MAX_NAME_BYTES = 512
DEFAULT_HISTORY = 16
UPLOAD_WINDOW = 4  # chunks of one upload stored concurrently (memory: this many chunks)
GC_GRACE_MS = OBJECT_GC_GRACE_MS
MAX_DELETE_BATCH = 10_000
DEFAULT_REVISIONS = 100
MAX_REVISIONS = 10_000  # revisions one listing returns at most


@dataclass
class ObjectMeta:
    """What an object's metadata message holds (JSON on the wire)."""

    name: str
    total_bytes: int = 0
    chunk_size: int = 0
    chunk_count: int = 0
    sha256: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    upload: str = ""
    deduped: bool = False
    seqs: list[int] = field(default_factory=list)  # chunk seqs (not deduped)
    hashes: list[str] = field(default_factory=list)  # chunk sha256s (deduped)
    revision: int = 0  # the metadata message's seq (not stored in it)
    ts_ms: int = 0

    def encode(self) -> bytes:
        body = {key: value for key, value in self.__dict__.items() if key not in ("revision", "ts_ms")}
        return json.dumps(body, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, message: types_pb2.Message) -> ObjectMeta:
        body: dict[str, Any] = json.loads(message.payload)
        return cls(**body, revision=message.seq, ts_ms=message.ts_ms)

    def info_fields(self) -> dict[str, Any]:
        """The seed's ObjectInfo fields but `headers` (weir.v1's and the seed's own message alike)."""
        return {**{name: getattr(self, name) for name in _INFO_FIELDS}, "metadata_seq": self.revision}


_INFO_FIELDS = ("name", "total_bytes", "chunk_size", "chunk_count", "sha256", "ts_ms", "deduped")
_REVISION_FIELDS = ("total_bytes", "chunk_count", "sha256", "ts_ms")


def revision_fields(revision: ObjectMeta | int) -> dict[str, Any]:
    """The seed's ObjectRevisionEntry fields of one of `ObjectStore.revisions` (a tombstone's seq:
    deleted, the rest 0 / empty, as the seed says)."""
    if isinstance(revision, int):
        return {"metadata_seq": revision, "deleted": True}
    return {**{name: getattr(revision, name) for name in _REVISION_FIELDS}, "metadata_seq": revision.revision}


def bucket_stream(bucket: str) -> str:
    validate_bucket(bucket)
    return OBJECT_STREAM_PREFIX + bucket


def name_token(name: str) -> str:
    """An object name as one subject token (pure). Errors: InvalidArgumentError."""
    raw = name.encode("utf-8", "surrogatepass")
    if not raw or len(raw) > MAX_NAME_BYTES:
        raise InvalidArgumentError(f"name: 1..{MAX_NAME_BYTES} bytes of UTF-8, got {len(raw)}")
    return "n" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def meta_subject(name: str) -> str:
    return "m." + name_token(name)


def chunk_subject(name: str, upload: str, index: int) -> str:
    return f"c.{name_token(name)}.{upload}.{index}"


def dedupe_subject(digest: str) -> str:
    return "d." + digest


def chunk_range(offset: int, length: int, chunk_size: int, total_bytes: int) -> range:
    """The chunk indexes a byte range overlaps (pure); empty past the end or for length 0."""
    end = min(total_bytes, offset + length)
    if not chunk_size or offset >= end:
        return range(0)
    return range(offset // chunk_size, (end - 1) // chunk_size + 1)


def bucket_config(bucket: str, *, history: int, replicas: int, max_bytes: int, ephemeral: bool) -> StreamConfig:
    """The stream an object bucket is (pure). Errors: InvalidConfigError."""
    history = history or DEFAULT_HISTORY
    if history > MAX_HISTORY:
        raise InvalidConfigError(f"history: at most {MAX_HISTORY}, got {history}", bucket=bucket)
    return StreamConfig(
        name=bucket_stream(bucket),
        subjects=(">",),
        partitions=1,
        replicas=replicas or 1,
        storage="memory" if ephemeral else "file",
        deliver_up_to_high_watermark=True,
        max_msgs_per_subject=history,
        max_bytes=max_bytes or None,
    )


async def rechunk(data: AsyncIterable[bytes], chunk_size: int) -> AsyncIterator[bytes]:
    """`data` as pieces of exactly `chunk_size` bytes, the last one shorter (holds one chunk)."""
    buffer = bytearray()
    async for piece in data:
        buffer += piece
        while len(buffer) >= chunk_size:
            yield bytes(buffer[:chunk_size])
            del buffer[:chunk_size]
    if buffer:
        yield bytes(buffer)


async def _once(payload: bytes) -> AsyncIterator[bytes]:
    yield payload


class UploadFrame(Protocol):
    """A PutObjectStream frame (weir.v1's and the seed's alike): `start` on the first, `data`, `finish` on the last."""

    data: bytes
    finish: bool

    def HasField(self, field_name: str) -> bool: ...


async def upload_data(first: UploadFrame, frames: AsyncIterator[UploadFrame]) -> AsyncIterator[bytes]:
    """The data of a PutObjectStream, its first frame (the one with `start`) included, up to its
    `finish` frame (later frames are not read). Errors: InvalidArgumentError for a stream that ends
    before `finish` (a put of it stores no object) or a later frame with `start`."""
    frame = first
    while True:
        if frame.data:
            yield frame.data
        if frame.finish:
            return
        try:
            frame = await anext(frames)
        except StopAsyncIteration:
            raise InvalidArgumentError("the stream ended without a frame with finish: no object stored") from None
        if frame.HasField("start"):
            raise InvalidArgumentError("only the first frame may set start")


class ObjectStore:
    """The object operations over a cluster client. `chunks_read` counts the chunk messages reads
    fetched (what a range read's economy is measured by)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.chunks_read = 0
        self._replicas: dict[str, tuple[int, float]] = {}  # bucket -> (replicas, when asked)

    # -- buckets -------------------------------------------------------------------------------------

    async def create_bucket(
        self, bucket: str, *, history: int = 0, replicas: int = 0, max_bytes: int = 0, ephemeral: bool = False
    ) -> None:
        """Create the bucket's stream (idempotent for the same settings): `history` revisions kept per
        object name, `replicas` copies, `max_bytes` bound (0 = the defaults), `ephemeral` in memory.
        Errors: InvalidNameError, InvalidConfigError."""
        config = bucket_config(bucket, history=history, replicas=replicas, max_bytes=max_bytes, ephemeral=ephemeral)
        await self.client.create_stream(config)
        self._replicas.pop(bucket, None)

    async def delete_bucket(self, bucket: str) -> None:
        """Delete the bucket and every object in it. Errors: NoSuchBucketError."""
        with missing_stream_is_missing_bucket(bucket):
            await self.client.delete_stream(bucket_stream(bucket))
        self._replicas.pop(bucket, None)

    async def _ack_level(self, bucket: str) -> str:
        cached = self._replicas.get(bucket)
        if cached is None or time.monotonic() - cached[1] >= CONFIG_TTL_S:
            with missing_stream_is_missing_bucket(bucket):
                replicas = (await self.client.stream_info(bucket_stream(bucket))).config.replicas
            cached = self._replicas[bucket] = (replicas, time.monotonic())
        return "all" if cached[0] > 1 else "leader"

    # -- put -----------------------------------------------------------------------------------------

    async def put(
        self,
        bucket: str,
        name: str,
        data: bytes | AsyncIterable[bytes],
        *,
        chunk_size: int = 0,
        headers: Mapping[str, str] | None = None,
        sha256: str = "",
        dedupe: bool = False,
    ) -> ObjectMeta:
        """Store an object from bytes or a stream of pieces (memory: a few chunks); returns its
        metadata. `sha256` (hex), when given, must match the content, else ShaMismatchError and
        nothing is stored (the chunks already stored are removed). Replaces the object's previous
        revision, whose chunks are removed."""
        stream = bucket_stream(bucket)
        subject = meta_subject(name)
        chunk_size = chunk_size or DEFAULT_CHUNK_BYTES
        if chunk_size > MAX_CHUNK_BYTES:
            raise InvalidArgumentError(f"chunk_size: at most {MAX_CHUNK_BYTES}, got {chunk_size}")
        ack_level = await self._ack_level(bucket)
        meta = ObjectMeta(name=name, chunk_size=chunk_size, headers=dict(headers or {}), deduped=dedupe)
        meta.upload = secrets.token_hex(8)
        digest = hashlib.sha256()
        pieces = _once(data) if isinstance(data, bytes) else data
        try:
            await self._store_chunks(stream, meta, rechunk(pieces, chunk_size), digest, ack_level)
        except BaseException:
            if not meta.deduped:  # (deduped chunks may be shared: the garbage collection decides)
                await self._forget_chunks(stream, meta)
            raise
        meta.sha256 = digest.hexdigest()
        if not meta.chunk_count:
            meta.chunk_size = 0  # the seed's ObjectInfo: 0 for an empty object
        if sha256 and sha256.lower() != meta.sha256:
            await self._forget_chunks(stream, meta)
            raise ShaMismatchError(
                f"the content's sha256 is {meta.sha256}, the request said {sha256}", bucket=bucket, name=name
            )
        previous = await self.info(bucket, name)
        meta.ts_ms = int(time.time() * 1000)
        with missing_stream_is_missing_bucket(bucket):
            ack = await self.client.publish(stream, subject, meta.encode(), ack_level=ack_level, ts_ms=meta.ts_ms)
        meta.revision = ack.seq
        if previous is not None and not previous.deduped:
            await self._forget_chunks(stream, previous)
        return meta

    async def _store_chunks(
        self, stream: str, meta: ObjectMeta, chunks: AsyncIterator[bytes], digest: Any, ack_level: str
    ) -> None:
        """Store each chunk (at most UPLOAD_WINDOW at once), recording where in `meta`."""
        pending: list[asyncio.Future[int]] = []
        try:
            async for chunk in chunks:
                digest.update(chunk)
                meta.total_bytes += len(chunk)
                index = meta.chunk_count
                meta.chunk_count += 1
                if meta.deduped:
                    chunk_digest = hashlib.sha256(chunk).hexdigest()
                    meta.hashes.append(chunk_digest)
                    pending.append(asyncio.ensure_future(self._store_deduped(stream, chunk_digest, chunk, ack_level)))
                else:
                    subject = chunk_subject(meta.name, meta.upload, index)
                    pending.append(asyncio.ensure_future(self._store_chunk(stream, subject, chunk, ack_level)))
                if len(pending) >= UPLOAD_WINDOW:
                    meta.seqs.extend(await asyncio.gather(*pending))
                    pending = []
            meta.seqs.extend(await asyncio.gather(*pending))
        except BaseException:
            # Whatever was stored meanwhile is recorded, so that the caller removes it too.
            stored = await asyncio.gather(*pending, return_exceptions=True)
            meta.seqs.extend(seq for seq in stored if isinstance(seq, int))
            raise
        if meta.deduped:
            meta.seqs = []  # deduped chunks are found by hash

    async def _store_chunk(self, stream: str, subject: str, chunk: bytes, ack_level: str) -> int:
        return (await self.client.publish(stream, subject, chunk, ack_level=ack_level)).seq

    async def _store_deduped(self, stream: str, chunk_digest: str, chunk: bytes, ack_level: str) -> int:
        """Store a content-addressed chunk unless it is there already (create-if-absent)."""
        try:
            return (
                await self.client.publish(
                    stream, dedupe_subject(chunk_digest), chunk, expected_last_seq=0, ack_level=ack_level
                )
            ).seq
        except WrongRevisionError:
            return 0  # stored before: shared

    async def _forget_chunks(self, stream: str, meta: ObjectMeta) -> None:
        """Remove the chunks of a replaced, deleted or failed upload (deduped ones stay for GC)."""
        seqs = [seq for seq in meta.seqs if seq]
        for start in range(0, len(seqs), MAX_DELETE_BATCH):
            await self.client.delete_messages(stream, 0, seqs[start : start + MAX_DELETE_BATCH])

    # -- reads ---------------------------------------------------------------------------------------

    async def _meta_message(self, bucket: str, name: str) -> types_pb2.Message | None:
        stream = bucket_stream(bucket)
        subject = meta_subject(name)
        with missing_stream_is_missing_bucket(bucket):
            return await self.client.on_leader(stream, 0, lambda node: node.latest_at_subject(stream, subject))

    async def info(self, bucket: str, name: str) -> ObjectMeta | None:
        """The object's metadata, None when it has none (never put, or deleted)."""
        message = await self._meta_message(bucket, name)
        return None if message is None or is_delete(message) else ObjectMeta.decode(message)

    async def is_deleted(self, bucket: str, name: str) -> bool:
        """Whether the object's newest metadata is a delete marker (False for a name never stored)."""
        message = await self._meta_message(bucket, name)
        return message is not None and is_delete(message)

    async def _chunk(self, stream: str, meta: ObjectMeta, index: int) -> bytes:
        """Chunk `index` of the revision `meta`. Errors: IncompleteObjectError when it is no longer
        stored (the revision was replaced or deleted meanwhile, or the bucket's retention dropped it)."""
        self.chunks_read += 1
        missing = IncompleteObjectError(
            f"chunk {index} of {meta.name!r} (revision {meta.revision}) is no longer stored: "
            "it was replaced or deleted meanwhile, read it again",
            name=meta.name,
            revision=meta.revision,
        )
        if meta.deduped:
            subject = dedupe_subject(meta.hashes[index])
            message = await self.client.on_leader(stream, 0, lambda node: node.latest_at_subject(stream, subject))
            if message is None:
                raise missing
            return bytes(message.payload)
        seq = meta.seqs[index]
        try:
            message = await self.client.on_leader(stream, 0, lambda node: node.get_message(stream, 0, seq))
        except NoSuchMessageError:
            raise missing from None
        return bytes(message.payload)

    async def _required(self, bucket: str, name: str) -> ObjectMeta:
        meta = await self.info(bucket, name)
        if meta is None:
            raise NoSuchObjectError(f"bucket {bucket!r} has no object {name!r}", bucket=bucket, name=name)
        return meta

    async def get(self, bucket: str, name: str) -> tuple[ObjectMeta, AsyncIterator[bytes]]:
        """The object's metadata and its content chunk by chunk, checked against its sha256 (a
        ShaMismatchError ends the iteration when it does not match)."""
        meta = await self._required(bucket, name)
        return meta, self._content(bucket_stream(bucket), meta)

    async def _content(self, stream: str, meta: ObjectMeta) -> AsyncIterator[bytes]:
        digest = hashlib.sha256()
        for index in range(meta.chunk_count):
            chunk = await self._chunk(stream, meta, index)
            digest.update(chunk)
            yield chunk
        if digest.hexdigest() != meta.sha256:
            raise ShaMismatchError(
                f"object {meta.name!r}: its content's sha256 is {digest.hexdigest()}, its metadata says {meta.sha256}",
                name=meta.name,
            )

    async def read(self, bucket: str, name: str, max_bytes: int) -> tuple[ObjectMeta, bytes]:
        """The object's metadata and whole content in memory, checked against its sha256. An
        object above `max_bytes` is refused (InvalidArgumentError) before any chunk is read."""
        meta, chunks = await self.get(bucket, name)
        if meta.total_bytes > max_bytes:
            raise InvalidArgumentError(
                f"object {name!r} is {meta.total_bytes} bytes, above the {max_bytes} one answer may carry: "
                "read it streamed (GetObjectStream) or by ranges (GetObjectRange)",
                bucket=bucket,
                name=name,
            )
        return meta, b"".join([chunk async for chunk in chunks])

    async def get_range(
        self, bucket: str, name: str, offset: int, length: int, max_bytes: int = 0
    ) -> tuple[ObjectMeta, bytes]:
        """Bytes [offset, offset + length) of the object (0 length: to its end), loading only the
        chunks the range overlaps; shorter past the end, empty beyond it. With `max_bytes` (0: no
        bound), a range that holds more of the object is refused (InvalidArgumentError) before
        any chunk is read."""
        meta = await self._required(bucket, name)
        length = length or max(0, meta.total_bytes - offset)
        size = max(0, min(offset + length, meta.total_bytes) - offset)
        if max_bytes and size > max_bytes:
            raise InvalidArgumentError(
                f"the range holds {size} bytes of {name!r}, above the {max_bytes} one answer may carry: "
                f"ask for a len of at most {max_bytes}",
                bucket=bucket,
                name=name,
            )
        stream = bucket_stream(bucket)
        parts = [
            await self._chunk(stream, meta, index)
            for index in chunk_range(offset, length, meta.chunk_size, meta.total_bytes)
        ]
        if not parts:
            return meta, b""
        start = offset - (offset // meta.chunk_size) * meta.chunk_size
        joined = b"".join(parts)
        return meta, joined[start : start + length]

    async def list_objects(
        self, bucket: str, name_prefix: str = "", include_deleted: bool = False
    ) -> list[tuple[str, int, bool]]:
        """(name, total_bytes, deleted) of each object, sorted by name."""
        stream = bucket_stream(bucket)
        with missing_stream_is_missing_bucket(bucket):
            latest, _ = await self.client.on_leader(stream, 0, lambda node: node.latest_by_prefix(stream, "m."))
        entries: list[tuple[str, int, bool]] = []
        for message in latest:
            name = _name_of(message.subject)
            if not name.startswith(name_prefix):
                continue
            if is_delete(message):
                if include_deleted:
                    entries.append((name, 0, True))
                continue
            entries.append((name, ObjectMeta.decode(message).total_bytes, False))
        return sorted(entries)

    async def revisions(self, bucket: str, name: str, from_seq: int = 0, limit: int = 0) -> list[ObjectMeta | int]:
        """Each kept metadata revision with seq >= `from_seq` (0: from the oldest), oldest first, at
        most `limit` (0 = 100, at most 10,000, else InvalidArgumentError): its ObjectMeta, or the
        tombstone's seq for a delete."""
        if limit > MAX_REVISIONS:
            raise InvalidArgumentError(f"limit: at most {MAX_REVISIONS}, got {limit}")
        stream = bucket_stream(bucket)
        subject = meta_subject(name)
        with missing_stream_is_missing_bucket(bucket):
            messages = await self.client.on_leader(
                stream,
                0,
                lambda node: node.scan_subject(stream, subject, from_seq=from_seq, limit=limit or DEFAULT_REVISIONS),
            )
        return [message.seq if is_delete(message) else ObjectMeta.decode(message) for message in messages]

    # -- delete and garbage --------------------------------------------------------------------------

    async def delete(self, bucket: str, name: str) -> int:
        """Store a tombstone for the object and remove its chunks; returns the tombstone's seq."""
        stream = bucket_stream(bucket)
        previous = await self.info(bucket, name)
        ack_level = await self._ack_level(bucket)
        with missing_stream_is_missing_bucket(bucket):
            ack = await self.client.publish(
                stream, meta_subject(name), b"", headers={OPERATION_HEADER: DELETE_OPERATION}, ack_level=ack_level
            )
        if previous is not None and not previous.deduped:
            await self._forget_chunks(stream, previous)
        return ack.seq

    async def collect_garbage(self, bucket: str, grace_ms: int = GC_GRACE_MS) -> int:
        """Remove the chunks no live object refers to that were stored more than `grace_ms` ago (an
        upload still running is younger); returns how many went."""
        stream = bucket_stream(bucket)
        live_seqs: set[int] = set()
        live_hashes: set[str] = set()
        with missing_stream_is_missing_bucket(bucket):
            latest, _ = await self.client.on_leader(stream, 0, lambda node: node.latest_by_prefix(stream, "m."))
        for message in latest:
            if not is_delete(message):
                meta = ObjectMeta.decode(message)
                live_seqs.update(meta.seqs)
                live_hashes.update(meta.hashes)
        cutoff = int(time.time() * 1000) - grace_ms
        doomed: list[int] = []
        async for message in self._chunk_messages(stream):
            if message.ts_ms >= cutoff:
                continue
            kind, _, rest = message.subject.partition(".")
            if (kind == "c" and message.seq not in live_seqs) or (kind == "d" and rest not in live_hashes):
                doomed.append(message.seq)
        for start in range(0, len(doomed), MAX_DELETE_BATCH):
            await self.client.delete_messages(stream, 0, doomed[start : start + MAX_DELETE_BATCH])
        return len(doomed)

    async def _chunk_messages(self, stream: str) -> AsyncIterator[types_pb2.Message]:
        for pattern in ("c.>", "d.*"):
            position = 0
            while True:
                response = await self.client.on_leader(
                    stream,
                    0,
                    lambda node, start=position, chosen=pattern: node.read_messages(  # type: ignore[misc]
                        stream, 0, start, filter_subject=chosen
                    ),
                )
                for message in response.messages:
                    yield message
                if response.next_seq > response.last_seq:
                    break
                position = response.next_seq


def _name_of(subject: str) -> str:
    token = subject.split(".", 1)[1][1:]
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("utf-8", "surrogatepass")
