"""A client of a source.v1 server that calls it the way Numaflow's data plane does: over the Unix
socket, a ReadFn stream and an AckFn stream that each begin with a handshake, one end-of-transmission
response closing every read, n ack requests answered by n responses, PendingFn, PartitionsFn and
IsReady. `weir demo` and the benchmark drive the sidecar with it; the tests drive it with stubs
compiled from the seed's own proto (`pb2` / `pb2_grpc` name the generated modules; pynumaflow's by
default, whose `AckRequest` carries a list of offsets where the seed's carries one: the same bytes on
the wire for one offset).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import grpc
from google.protobuf import empty_pb2

MAX_QUEUED_REQUESTS = 64


@dataclass(frozen=True, slots=True)
class Datum:
    """One read result: payload, offset (bytes, partition id), event time (ms), keys, headers."""

    payload: bytes
    offset: bytes
    partition_id: int
    event_time_ms: int
    keys: tuple[str, ...]
    headers: dict[str, str]


class _Exchange:
    """A bidirectional call used as a request queue and a response iterator."""

    def __init__(self, call: Any) -> None:
        self.requests: asyncio.Queue[Any] = asyncio.Queue(MAX_QUEUED_REQUESTS)
        self.call = call

    async def feed(self) -> Any:
        while True:
            yield await self.requests.get()


class DataPlane:
    """`async with DataPlane(socket_path) as source:` then `read`, `ack`, `pending`, `partitions`."""

    def __init__(self, socket_path: str, *, pb2: ModuleType | None = None, pb2_grpc: ModuleType | None = None) -> None:
        if pb2 is None or pb2_grpc is None:
            from pynumaflow.proto.sourcer import source_pb2, source_pb2_grpc

            pb2, pb2_grpc = source_pb2, source_pb2_grpc
        self.pb2 = pb2
        self.channel = grpc.aio.insecure_channel(f"unix:{socket_path}")
        self.stub = pb2_grpc.SourceStub(self.channel)
        self._read: _Exchange | None = None
        self._ack: _Exchange | None = None

    async def __aenter__(self) -> DataPlane:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        for exchange in (self._read, self._ack):
            if exchange is not None:
                exchange.call.cancel()
        await self.channel.close()

    async def ready(self, timeout_s: float = 5.0) -> bool:
        response = await self.stub.IsReady(empty_pb2.Empty(), timeout=timeout_s)
        return bool(response.ready)

    async def _open(self, method: str, first: Any) -> _Exchange:
        exchange = _Exchange(None)
        exchange.call = getattr(self.stub, method)(exchange.feed())
        await exchange.requests.put(first)
        answer = await exchange.call.read()
        if answer is grpc.aio.EOF or not answer.HasField("handshake") or not answer.handshake.sot:
            raise RuntimeError(f"{method}: the server did not answer the handshake ({answer!r})")
        return exchange

    async def read(self, num_records: int, timeout_ms: int) -> list[Datum]:
        """One ReadFn request: the results until the end-of-transmission response."""
        pb2 = self.pb2
        if self._read is None:
            self._read = await self._open("ReadFn", pb2.ReadRequest(handshake=pb2.Handshake(sot=True)))
        request = pb2.ReadRequest(request=pb2.ReadRequest.Request(num_records=num_records, timeout_in_ms=timeout_ms))
        await self._read.requests.put(request)
        data: list[Datum] = []
        while True:
            response = await self._read.call.read()
            if response is grpc.aio.EOF:
                raise RuntimeError("ReadFn ended without an end-of-transmission response")
            if response.status.eot:
                return data
            result = response.result
            data.append(
                Datum(
                    payload=result.payload,
                    offset=result.offset.offset,
                    partition_id=result.offset.partition_id,
                    event_time_ms=result.event_time.ToMilliseconds(),
                    keys=tuple(result.keys),
                    headers=dict(result.headers),
                )
            )

    async def ack(self, data: list[Datum], *, one_per_request: bool = False) -> int:
        """Acknowledge `data`; returns the responses received. With the seed's proto (one offset per
        AckRequest) or `one_per_request`, one request per offset, answered one each (n requests, n
        responses); with the later proto, one request carrying every offset (one response), as
        Numaflow's data plane acks a read batch."""
        pb2 = self.pb2
        if self._ack is None:
            self._ack = await self._open("AckFn", pb2.AckRequest(handshake=pb2.Handshake(sot=True)))
        offsets = [pb2.Offset(offset=datum.offset, partition_id=datum.partition_id) for datum in data]
        batched = hasattr(pb2.AckRequest.Request(), "offsets")
        if batched and not one_per_request:
            requests = [pb2.AckRequest(request=pb2.AckRequest.Request(offsets=offsets))] if offsets else []
        elif batched:
            requests = [pb2.AckRequest(request=pb2.AckRequest.Request(offsets=[offset])) for offset in offsets]
        else:
            requests = [pb2.AckRequest(request=pb2.AckRequest.Request(offset=offset)) for offset in offsets]
        for request in requests:
            await self._ack.requests.put(request)
        answered = 0
        for _ in requests:
            response = await self._ack.call.read()
            if response is grpc.aio.EOF:
                raise RuntimeError(f"AckFn ended after {answered} of {len(requests)} responses")
            answered += 1
        return answered

    async def pending(self) -> int:
        return int((await self.stub.PendingFn(empty_pb2.Empty(), timeout=10)).result.count)

    async def partitions(self) -> list[int]:
        return list((await self.stub.PartitionsFn(empty_pb2.Empty(), timeout=10)).result.partitions)
