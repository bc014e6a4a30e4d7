"""The SDK's publish batcher (weir.cluster.Client's publishing section): publishes queued per
(stream, partition, ack level) and sent as one PublishBatch each.

- A batch goes out `linger_s` after its first message, or at once when it holds `batch_max_messages`
  or `batch_max_bytes`.
- With `max_in_flight_batches` N > 0, a key has at most N batches waiting for their answer: a batch
  whose linger passed while N are out keeps filling until one is answered, so many concurrent
  publishers coalesce into larger batches (a full batch still goes at once).
- At most `max_pending_messages` publishes wait at once; `enqueue` then waits (the buffer is
  bounded).
- The node rejects a whole request for one invalid entry, storing nothing, and names it
  (`index`): that publish fails alone and the others go again without it.

Transport-neutral: `send(stream, partition, request)` is the caller's (Client.on_leader with its
retries and route refreshes).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from weir.errors import WeirError, WrongRevisionError
from weir.message import PublishAck
from weir.v1 import streams_pb2

# (stream, partition, request) -> the node's answer; raises the typed error after its retries
SendBatch = Callable[[str, int, streams_pb2.PublishBatchRequest], Awaitable[streams_pb2.PublishBatchResponse]]
BatchKey = tuple[str, int, int]  # (stream, partition, ack level)


@dataclass(slots=True)
class _Pending:
    entry: streams_pb2.PublishEntry
    future: asyncio.Future[PublishAck]
    size: int


@dataclass(slots=True)
class _Batch:
    stream: str
    partition: int
    ack_level: int
    items: list[_Pending] = field(default_factory=list)
    size: int = 0
    timer: asyncio.TimerHandle | None = None
    lingered: bool = False  # its linger passed; it waits only for an in-flight batch of its key


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """When a batch goes out and how many may wait (see the module docstring)."""

    linger_s: float
    batch_max_bytes: int
    batch_max_messages: int
    max_pending_messages: int
    max_in_flight_batches: int = 0  # 0 = no bound


class PublishBatcher:
    """See the module docstring. `enqueue` queues one entry; `flush` sends and waits for all."""

    def __init__(self, limits: BatchLimits, send: SendBatch) -> None:
        self.limits = limits
        self._send_request = send
        self._batches: dict[BatchKey, _Batch] = {}
        self._in_flight: set[asyncio.Task[None]] = set()
        self._in_flight_per_key: dict[BatchKey, int] = {}  # batches out, by batch key
        self._pending = asyncio.Semaphore(limits.max_pending_messages)

    async def enqueue(
        self, stream: str, partition: int, ack_level: int, entry: streams_pb2.PublishEntry, size: int
    ) -> asyncio.Future[PublishAck]:
        """Queue `entry` (about `size` bytes on the wire) for (stream, partition, ack_level) and
        return the future of its ack; waits only while `max_pending_messages` publishes are
        unanswered."""
        await self._pending.acquire()
        loop = asyncio.get_running_loop()
        future: asyncio.Future[PublishAck] = loop.create_future()
        future.add_done_callback(lambda _: self._pending.release())
        batch_key = (stream, partition, ack_level)
        batch = self._batches.get(batch_key)
        if batch is None:
            batch = self._batches[batch_key] = _Batch(stream, partition, ack_level)
            batch.timer = loop.call_later(self.limits.linger_s, self._linger_passed, batch_key)
        batch.items.append(_Pending(entry, future, size))
        batch.size += size
        if len(batch.items) >= self.limits.batch_max_messages or batch.size >= self.limits.batch_max_bytes:
            self._send(batch_key)
        return future

    async def flush(self) -> None:
        """Send every queued batch now and wait until all in-flight batches are answered."""
        for batch_key in list(self._batches):
            self._send(batch_key)
        while self._in_flight:
            await asyncio.gather(*list(self._in_flight), return_exceptions=True)

    def _linger_passed(self, batch_key: BatchKey) -> None:
        """The batch's linger timer: send it, unless `max_in_flight_batches` of its key are out; then
        it keeps filling and `_batch_answered` sends it."""
        batch = self._batches.get(batch_key)
        if batch is None:
            return
        batch.timer = None
        batch.lingered = True
        bound = self.limits.max_in_flight_batches
        if bound and self._in_flight_per_key.get(batch_key, 0) >= bound:
            return
        self._send(batch_key)

    def _send(self, batch_key: BatchKey) -> None:
        batch = self._batches.pop(batch_key, None)
        if batch is None:
            return
        if batch.timer is not None:
            batch.timer.cancel()
        self._in_flight_per_key[batch_key] = self._in_flight_per_key.get(batch_key, 0) + 1
        task = asyncio.get_running_loop().create_task(self._send_batch(batch))
        self._in_flight.add(task)
        task.add_done_callback(functools.partial(self._batch_answered, batch_key))

    def _batch_answered(self, batch_key: BatchKey, task: asyncio.Task[None]) -> None:
        """A batch's task ended (its futures are settled): count it out, and send the batch of the
        same key that waited for it, if any."""
        self._in_flight.discard(task)
        left = self._in_flight_per_key.pop(batch_key) - 1
        if left:
            self._in_flight_per_key[batch_key] = left
        waiting = self._batches.get(batch_key)
        if waiting is not None and waiting.lingered:
            self._send(batch_key)

    async def _send_batch(self, batch: _Batch) -> None:
        """Send the batch and settle each publish's future; a rejected entry fails alone and the
        rest go again without it (module docstring)."""
        items = batch.items
        while items:
            request = streams_pb2.PublishBatchRequest(
                stream=batch.stream,
                entries=[item.entry for item in items],
                ack_level=batch.ack_level,  # type: ignore[arg-type]
            )
            try:
                response = await self._send_request(batch.stream, batch.partition, request)
            except BaseException as error:
                rejected = _rejected_entry(error, len(items))
                if rejected is not None:
                    _settle_with_error(items[rejected : rejected + 1], error)
                    items = items[:rejected] + items[rejected + 1 :]
                    continue
                _settle_with_error(items, error)
                if not isinstance(error, Exception):
                    raise
                return
            _settle(batch.stream, items, response)
            return


def _settle(stream: str, items: list[_Pending], response: streams_pb2.PublishBatchResponse) -> None:
    """Each publish's future from its result (one per item, in order)."""
    for item, result in zip(items, response.results, strict=True):
        if item.future.done():
            continue
        if result.result_code == "ok":
            item.future.set_result(PublishAck(result.partition, result.seq, result.duplicate, result.scheduled))
        elif result.result_code == "wrong_revision":
            item.future.set_exception(
                WrongRevisionError(result.message, stream=stream, partition=result.partition, last_seq=result.seq)
            )
        else:
            item.future.set_exception(WeirError.for_code(result.result_code, result.message))


def _rejected_entry(error: BaseException, entries: int) -> int | None:
    """The index of the one entry a batch of `entries` (more than one) was rejected for, when
    `error` is such a rejection (not retryable, naming an entry: nothing was stored); else None."""
    if entries < 2 or not isinstance(error, WeirError) or error.retryable:
        return None
    index = error.metadata.get("index", "")
    return int(index) if index.isdigit() and int(index) < entries else None


def _settle_with_error(items: list[_Pending], error: BaseException) -> None:
    for item in items:
        if not item.future.done():
            item.future.set_exception(error)
