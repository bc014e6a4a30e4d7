"""One-message ack calls of the front doors coalesced into the node's AckBatch.

RocketMQ's v1 protocol (AckMessage) and the streams seed (Ack) acknowledge one message a call, and
a client acks a received batch with as many concurrent calls. Sent one by one, each becomes its own round trip and
commit on the partition's primary (the bench measured 0.07x the native consume rate). Here the acks
of one (stream, group, partition) that arrive while an AckBatch for it is in flight wait and go
together in the next one (at most MAX_ACKS_PER_BATCH): a lone ack goes at once, a burst shares
calls. Each caller still gets its own seq's result, bound to its own delivery (deliver_count).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

MAX_ACKS_PER_BATCH = 1000

AckKey = tuple[str, str, int]  # (stream, consumer, partition)


class AckBatcher(Protocol):
    """What the coalescer needs of the SDK (weir.Client is one)."""

    async def ack_batch(
        self, stream: str, consumer: str, partition: int, seqs: Sequence[int], deliver_counts: Sequence[int] = ()
    ) -> list[str]: ...


@dataclass(slots=True)
class _Waiting:
    seqs: list[int] = field(default_factory=list)
    deliver_counts: list[int] = field(default_factory=list)
    futures: list[asyncio.Future[str]] = field(default_factory=list)


class AckCoalescer:
    """Acks of one partition's deliveries, sent as few AckBatch calls as the node's answers allow.
    Memory holds only acks that wait for a batch in flight (a key leaves once it is drained)."""

    def __init__(self, client: AckBatcher) -> None:
        self.client = client
        self._waiting: dict[AckKey, _Waiting] = {}
        self._draining: dict[AckKey, asyncio.Task[None]] = {}

    async def ack(self, stream: str, consumer: str, partition: int, seq: int, deliver_count: int) -> str:
        """Acknowledge delivery `deliver_count` of `seq`; returns its result code ("ok" |
        "not_pending"). Errors: those of Client.ack_batch (the whole batch's), after its retries."""
        key = (stream, consumer, partition)
        waiting = self._waiting.get(key)
        if waiting is None:
            waiting = self._waiting[key] = _Waiting()
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        waiting.seqs.append(seq)
        waiting.deliver_counts.append(deliver_count)
        waiting.futures.append(future)
        if key not in self._draining:
            self._draining[key] = asyncio.get_running_loop().create_task(self._drain(key))
        return await future

    async def _drain(self, key: AckKey) -> None:
        stream, consumer, partition = key
        try:
            while (waiting := self._waiting.get(key)) is not None:
                batch = _Waiting(
                    waiting.seqs[:MAX_ACKS_PER_BATCH],
                    waiting.deliver_counts[:MAX_ACKS_PER_BATCH],
                    waiting.futures[:MAX_ACKS_PER_BATCH],
                )
                del waiting.seqs[:MAX_ACKS_PER_BATCH], waiting.deliver_counts[:MAX_ACKS_PER_BATCH]
                del waiting.futures[:MAX_ACKS_PER_BATCH]
                if not waiting.seqs:
                    del self._waiting[key]
                await self._send(stream, consumer, partition, batch)
        finally:
            del self._draining[key]

    async def _send(self, stream: str, consumer: str, partition: int, batch: _Waiting) -> None:
        try:
            results = await self.client.ack_batch(stream, consumer, partition, batch.seqs, batch.deliver_counts)
        except Exception as error:  # every caller of the batch hears it (re-raised there)
            for future in batch.futures:
                if not future.done():
                    future.set_exception(error)
            return
        for future, result in zip(batch.futures, results, strict=True):
            if not future.done():
                future.set_result(result)
