"""Where the invoker keeps what must survive it: all in Weir, replicated like any stream.

- Journals: the stream `invoker:journal` (`journal_partitions` partitions). Invocation I's journal
  is the subject `j.I` in the partition of key I; each journal entry after the Input (entry 0 is
  the input the invocation's record keeps until it ends) and each completion is one message
  (headers: record kind, entry index, message type, header flags; payload: the protocol message as
  the SDK sent it), published with ack level all and the message id `I/<kind>/<index>`,
  so a retried append is stored once. The stream reads and delivers only up to its high watermark:
  an entry once read is never taken back by a failover.
- Invocation records: the key-value bucket `invoker-invocations` (key = invocation id, value = a
  weir.v1.Invocation); a finished invocation's record expires completed_retention_ms later.
- State of virtual objects and workflows: the hash store `invoker-state`, hash key `service/key`,
  one field per state key. Workflow promises: the hash store `invoker-promises`, the same way.
- Deployments and subscriptions: the key-value bucket `invoker-registry`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from weir.client import NodeClient
from weir.cluster import Client
from weir.collections import Collections
from weir.errors import AlreadyExistsError, NoSuchBucketError, UnavailableError, WrongRevisionError
from weir.info import StreamConfig
from weir.kv import KeyValue, bucket_stream, is_delete
from weir.v1 import collections_pb2, invoker_pb2, kv_pb2, streams_pb2, types_pb2

from weir_invoker.protocol import Frame

JOURNAL_STREAM = "invoker:journal"
INVOCATIONS_BUCKET = "invoker-invocations"
REGISTRY_BUCKET = "invoker-registry"
STATE_STORE = "invoker-state"
PROMISE_STORE = "invoker-promises"
RECORD_HEADER = "weir-journal-record"
INDEX_HEADER = "weir-journal-index"
TYPE_HEADER = "weir-journal-type"
FLAGS_HEADER = "weir-journal-flags"
ENTRY_RECORD = "entry"
COMPLETION_RECORD = "completion"
JOURNAL_PAGE = 1000
DELETE_BATCH = 10_000  # seqs per PurgePartition (the node's bound)
ORPHAN_SCAN = 10_000  # journal subjects per partition looked at for orphans at a take-over
MAX_JOURNAL_ENTRIES = 10_000  # a longer journal fails the invocation (bounds what one load holds)
SCAN_PAGE = 1000


class Fence:
    """Whether this invoker may still write what only the active invoker writes (journals,
    invocation records, state): `allowed` is the lease's `held` (lease.py), a local clock check, so
    a process that was paused past its lease writes nothing more once it runs again. Every writing
    method of the stores below asks it first. Errors: UnavailableError (retryable: the invocation
    continues under the active invoker)."""

    def __init__(self) -> None:
        self.allowed: Callable[[], bool] = lambda: True

    def check(self) -> None:
        if not self.allowed():
            raise UnavailableError("this invoker no longer holds the lease: the active invoker continues")


class JournalConflict(Exception):
    """Another attempt stored a different message at an index this attempt appended: this attempt's
    view is stale; it is abandoned and the invocation replays what is stored."""


@dataclass
class Journal:
    """One invocation's stored journal: entries by index (completions merged in when replayed) and
    where its messages are (for deleting them when the invocation finishes)."""

    entries: list[Frame] = field(default_factory=list)
    completions: dict[int, bytes] = field(default_factory=dict)  # index -> CompletionMessage bytes
    seqs: list[int] = field(default_factory=list)
    partition: int = 0

    def __len__(self) -> int:
        return len(self.entries)


def subject_of(invocation_id: str) -> str:
    return "j." + invocation_id


def _headers(message: types_pb2.Message) -> dict[str, str]:
    return {header.key: header.value for header in message.headers}


def add_record(journal: Journal, message: types_pb2.Message) -> None:
    """Fold one stored journal message into `journal` (pure): an entry at the next index, a
    completion by its index; a second copy of an index (an append retried after the duplicate
    window) is ignored, so the first stored wins."""
    headers = _headers(message)
    index = int(headers.get(INDEX_HEADER, "-1"))
    journal.seqs.append(message.seq)
    if headers.get(RECORD_HEADER) == COMPLETION_RECORD:
        journal.completions.setdefault(index, message.payload)
    elif index == len(journal.entries):
        journal.entries.append(Frame(int(headers[TYPE_HEADER]), int(headers.get(FLAGS_HEADER, "0")), message.payload))


class JournalStore:
    def __init__(self, client: Client, replicas: int, partitions: int, fence: Fence) -> None:
        self.client = client
        self.fence = fence
        self._doomed: dict[int, list[int]] = {}  # partition -> seqs of finished journals
        self.replicas = replicas
        self.partitions = partitions

    async def ensure(self) -> None:
        config = StreamConfig(
            name=JOURNAL_STREAM,
            subjects=(">",),
            partitions=self.partitions,
            replicas=self.replicas,
            deliver_up_to_high_watermark=True,
        )
        await _create_stream(self.client, config)

    async def partition_of(self, invocation_id: str) -> int:
        return await self.client.partition_for(JOURNAL_STREAM, invocation_id.encode())

    async def load(self, invocation_id: str, input_entry: Frame) -> Journal:
        """The journal: `input_entry` (entry 0, kept in the invocation's record), then the entries
        and completions stored (up to the high watermark), in order."""
        partition = await self.partition_of(invocation_id)
        journal = Journal(entries=[input_entry], partition=partition)
        subject = subject_of(invocation_id)
        from_seq = 0
        while True:

            async def scan(node: NodeClient, start: int = from_seq) -> list[types_pb2.Message]:
                return await node.scan_subject(JOURNAL_STREAM, subject, partition, start, JOURNAL_PAGE)

            page = await self.client.on_leader(JOURNAL_STREAM, partition, scan)
            for message in page:
                add_record(journal, message)
            if len(page) < JOURNAL_PAGE or len(journal.entries) > MAX_JOURNAL_ENTRIES:
                return journal
            from_seq = page[-1].seq + 1

    async def append_entry(self, journal: Journal, invocation_id: str, index: int, frame: Frame) -> None:
        """Store entry `index` (ack level all). Errors: JournalConflict, the client's errors."""
        headers = {RECORD_HEADER: ENTRY_RECORD, INDEX_HEADER: str(index), TYPE_HEADER: str(frame.type)}
        if frame.flags:
            headers[FLAGS_HEADER] = str(frame.flags)
        await self._append(journal, invocation_id, f"e/{index}", frame.body, headers)

    async def append_completion(self, journal: Journal, invocation_id: str, index: int, completion: bytes) -> None:
        headers = {RECORD_HEADER: COMPLETION_RECORD, INDEX_HEADER: str(index)}
        await self._append(journal, invocation_id, f"c/{index}", completion, headers)

    async def _append(
        self, journal: Journal, invocation_id: str, what: str, payload: bytes, headers: dict[str, str]
    ) -> None:
        self.fence.check()
        ack = await self.client.publish(
            JOURNAL_STREAM,
            subject_of(invocation_id),
            payload,
            key=invocation_id.encode(),
            headers=headers,
            ack_level="all",
            msg_id=f"{invocation_id}/{what}",
        )
        if ack.duplicate:
            stored = await self.client.on_leader(
                JOURNAL_STREAM, ack.partition, lambda node: node.get_message(JOURNAL_STREAM, ack.partition, ack.seq)
            )
            if stored.payload != payload or _headers(stored) != headers:
                raise JournalConflict(f"journal {invocation_id} already holds another {what}")
        journal.seqs.append(ack.seq)

    def delete_later(self, journal: Journal) -> None:
        """Queue a finished invocation's journal messages for deletion: `flush` removes what is
        queued per partition in one PurgePartition (at most DELETE_BATCH seqs each). Messages a
        crash left behind are found by `collect_orphans` when an invoker takes the lease."""
        if journal.seqs:
            self._doomed.setdefault(journal.partition, []).extend(journal.seqs)

    @property
    def doomed(self) -> int:
        """Seqs queued for deletion."""
        return sum(len(seqs) for seqs in self._doomed.values())

    async def flush(self) -> None:
        """Delete what `delete_later` queued (each partition's seqs in batches)."""
        doomed, self._doomed = self._doomed, {}
        for partition, seqs in doomed.items():
            for start in range(0, len(seqs), DELETE_BATCH):
                self.fence.check()
                await self.client.delete_messages(JOURNAL_STREAM, partition, seqs[start : start + DELETE_BATCH])

    async def collect_orphans(self, unfinished: set[str]) -> int:
        """Delete the journals of invocations that are not unfinished (a crash between an
        invocation's end and the deletion of its journal left them); returns how many. At most
        ORPHAN_SCAN subjects per partition are looked at (the rest at the next take-over)."""
        collected = 0
        for partition in range(self.partitions):

            async def subjects(node: NodeClient, index: int = partition) -> list[str]:
                return await node.list_subjects(JOURNAL_STREAM, "j.", index, ORPHAN_SCAN)

            for subject in await self.client.on_leader(JOURNAL_STREAM, partition, subjects):
                invocation_id = subject.removeprefix("j.")
                if invocation_id in unfinished:
                    continue
                journal = await self.load(invocation_id, Frame(0, 0, b""))
                self.delete_later(journal)
                collected += 1
        await self.flush()
        return collected


class InvocationStore:
    """Invocation records in the bucket `invoker-invocations`."""

    def __init__(self, client: Client, replicas: int, fence: Fence) -> None:
        self.client = client
        self.kv = KeyValue(client)
        self.replicas = replicas
        self.fence = fence

    async def ensure(self) -> None:
        request = kv_pb2.KvCreateBucketRequest(bucket=INVOCATIONS_BUCKET, replicas=self.replicas, history=1)
        await _ensure_bucket(self.kv, request)

    async def create(self, record: invoker_pb2.Invocation) -> tuple[invoker_pb2.Invocation, bool]:
        """Store `record` unless one with its id exists: (the stored record, created)."""
        self.fence.check()
        try:
            await self.kv.create(INVOCATIONS_BUCKET, record.id, record.SerializeToString())
            return record, True
        except WrongRevisionError:
            existing = await self.get(record.id)
            if existing is None:  # deleted between the two calls: try once more
                return await self.create(record)
            return existing, False

    async def put(self, record: invoker_pb2.Invocation, ttl_ms: int = 0) -> None:
        self.fence.check()
        await self.kv.put(INVOCATIONS_BUCKET, record.id, record.SerializeToString(), ttl_ms=ttl_ms)

    async def get(self, invocation_id: str) -> invoker_pb2.Invocation | None:
        """The record, None when there is none (or no bucket yet: no deployment was ever registered)."""
        try:
            entry = await self.kv.get(INVOCATIONS_BUCKET, invocation_id)
        except NoSuchBucketError:
            return None
        return None if entry is None else invoker_pb2.Invocation.FromString(entry.value)

    async def scan(self) -> AsyncIterator[invoker_pb2.Invocation]:
        """Every stored record (each invocation's newest), in key order of storage; paged, unbounded."""
        stream = bucket_stream(INVOCATIONS_BUCKET)
        from_seq = 0
        while True:

            async def read(node: NodeClient, start: int = from_seq) -> streams_pb2.ReadMessagesResponse:
                return await node.read_messages(
                    stream, 0, start, max_messages=SCAN_PAGE, last_per_subject_until=sys.maxsize
                )

            response = await self.client.on_leader(stream, 0, read)
            for message in response.messages:
                if not is_delete(message):
                    yield invoker_pb2.Invocation.FromString(message.payload)
            if not response.messages or response.next_seq > response.last_seq:
                return
            from_seq = response.next_seq


class RegistryStore:
    """Deployments and subscriptions in the bucket `invoker-registry` (`deployment.<id>`,
    `subscription.<id>`)."""

    def __init__(self, client: Client, replicas: int) -> None:
        self.kv = KeyValue(client)
        self.replicas = replicas

    async def ensure(self) -> None:
        await _ensure_bucket(self.kv, kv_pb2.KvCreateBucketRequest(bucket=REGISTRY_BUCKET, replicas=self.replicas))

    async def put_deployment(self, deployment: invoker_pb2.Deployment) -> None:
        await self.kv.put(REGISTRY_BUCKET, "deployment." + deployment.id, deployment.SerializeToString())

    async def put_subscription(self, subscription: invoker_pb2.Subscription) -> None:
        await self.kv.put(REGISTRY_BUCKET, "subscription." + subscription.id, subscription.SerializeToString())

    async def delete(self, kind: str, item_id: str) -> None:
        await self.kv.delete(REGISTRY_BUCKET, f"{kind}.{item_id}")

    async def load(self) -> tuple[list[invoker_pb2.Deployment], list[invoker_pb2.Subscription]]:
        keys, _ = await self.kv.keys(REGISTRY_BUCKET)
        deployments: list[invoker_pb2.Deployment] = []
        subscriptions: list[invoker_pb2.Subscription] = []
        for key in keys:
            entry = await self.kv.get(REGISTRY_BUCKET, key.key)
            if entry is None:
                continue
            if key.key.startswith("deployment."):
                deployments.append(invoker_pb2.Deployment.FromString(entry.value))
            elif key.key.startswith("subscription."):
                subscriptions.append(invoker_pb2.Subscription.FromString(entry.value))
        return deployments, subscriptions


def _field_of(key: bytes) -> str:
    """A state key (bytes) as a hash field: every byte string round-trips (surrogateescape)."""
    return key.decode("utf-8", "surrogateescape")


def _key_of(field: str) -> bytes:
    return field.encode("utf-8", "surrogateescape")


class StateStore:
    """State (or promises) per object key, in a hash store: hash key `service/key`."""

    def __init__(self, client: Client, name: str, replicas: int, fence: Fence) -> None:
        self.collections = Collections(client)
        self.client = client
        self.name = name
        self.replicas = replicas
        self.fence = fence

    async def ensure(self) -> None:
        request = collections_pb2.CreateHashStoreRequest(name=self.name, replicas=self.replicas)
        with contextlib.suppress(AlreadyExistsError):
            await self.collections.create_hash_store(request)

    @staticmethod
    def object_key(service: str, key: str) -> str:
        return f"{service}/{key}"

    async def get_all(self, service: str, key: str) -> dict[bytes, bytes]:
        fields = await self.collections.hash_get_all(self.name, self.object_key(service, key))
        return {_key_of(entry.field): entry.value for entry in fields}

    async def get(self, service: str, key: str, state_key: bytes) -> bytes | None:
        message = await self.collections.hash_get(self.name, self.object_key(service, key), _field_of(state_key))
        return None if message is None else message.payload

    async def set(self, service: str, key: str, state_key: bytes, value: bytes) -> None:
        self.fence.check()
        await self.collections.hash_set(self.name, self.object_key(service, key), _field_of(state_key), value)

    async def clear(self, service: str, key: str, state_key: bytes) -> None:
        self.fence.check()
        await self.collections.hash_delete(self.name, self.object_key(service, key), _field_of(state_key))

    async def clear_all(self, service: str, key: str) -> None:
        for state_key in await self.get_all(service, key):
            await self.clear(service, key, state_key)


async def _create_stream(client: Client, config: StreamConfig) -> None:
    with contextlib.suppress(AlreadyExistsError):  # created earlier (by this invoker before a restart)
        await client.create_stream(config)


async def _ensure_bucket(kv: KeyValue, request: kv_pb2.KvCreateBucketRequest) -> None:
    with contextlib.suppress(AlreadyExistsError):
        await kv.create_bucket(request)
