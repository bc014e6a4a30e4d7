"""pynumaflow's `Sourcer` over `WeirSource`: one `pynumaflow.sourcer.Message` per Weir message.

- payload: the message's payload;
- keys: `[key]`, the publisher's partitioning key as text (UTF-8; bytes that are not UTF-8 are
  backslash-escaped), none when the message has no key;
- headers: the message's headers plus `x-weir-subject`;
- event time: the message's timestamp (publish time, ms since the Unix epoch, UTC);
- offset: `<partition>:<seq>:<deliver_count>` with partition_id = the Weir partition (offsets.py).

A handler that raises makes pynumaflow end the call with the error and stop the server (the
protocol has no retry of its own: "it is best to crash"), so handlers raise only what the SDK's
retries could not overcome and offsets that are not this source's.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from pynumaflow.shared.asynciter import NonBlockingIterator
from pynumaflow.sourcer import (
    AckRequest,
    Message,
    NackRequest,
    Offset,
    PartitionsResponse,
    PendingResponse,
    ReadRequest,
    Sourcer,
)
from weir import Message as WeirMessage

from weir_numaflow_source import metrics
from weir_numaflow_source.core import WeirSource
from weir_numaflow_source.offsets import Delivery

SUBJECT_HEADER = "x-weir-subject"


def to_numaflow(message: WeirMessage) -> Message:
    """The Numaflow datum of a delivered Weir message."""
    keys = [message.key.decode("utf-8", "backslashreplace")] if message.key is not None else []
    return Message(
        payload=message.payload,
        offset=Offset(
            Delivery(message.partition, message.seq, message.deliver_count).offset(), partition_id=message.partition
        ),
        event_time=datetime.fromtimestamp(message.timestamp_ms / 1000, tz=UTC),
        keys=keys,
        headers={**message.headers, SUBJECT_HEADER: message.subject},
    )


class WeirSourcer(Sourcer):  # type: ignore[misc]
    """The handlers Numaflow's data plane calls through pynumaflow's servicer."""

    def __init__(self, source: WeirSource) -> None:
        self.source = source

    async def read_handler(self, datum: ReadRequest, output: NonBlockingIterator) -> None:
        started = time.perf_counter()
        for message in await self.source.read(datum.num_records, datum.timeout_in_ms):
            await output.put(to_numaflow(message))
        metrics.CALL_SECONDS.labels("read").observe(time.perf_counter() - started)

    async def ack_handler(self, ack_request: AckRequest) -> None:
        started = time.perf_counter()
        await self.source.ack([(offset.offset, offset.partition_id) for offset in ack_request.offsets])
        metrics.CALL_SECONDS.labels("ack").observe(time.perf_counter() - started)

    async def nack_handler(self, nack_request: NackRequest) -> None:
        started = time.perf_counter()
        await self.source.nack([(offset.offset, offset.partition_id) for offset in nack_request.offsets])
        metrics.CALL_SECONDS.labels("nack").observe(time.perf_counter() - started)

    async def pending_handler(self) -> PendingResponse:
        return PendingResponse(count=await self.source.pending())

    async def active_partitions_handler(self) -> PartitionsResponse:
        return PartitionsResponse(partitions=await self.source.partitions())

    async def total_partitions_handler(self) -> int | None:
        return await self.source.total_partitions()
