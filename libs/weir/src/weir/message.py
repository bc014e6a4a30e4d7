"""What the SDK hands back: `PublishAck` for a publish, `Message` for a stored or delivered message.

A `Message` delivered to a durable consumer (`Client.consume`, `Client.group_consumer`) carries
what settles it: `await message.ack()`, `nak(delay_ms)`, `term()`, `in_progress()` — the four
answers of NATS JetStream's pull consumers (DESIGN §2). A message read without a consumer (plain
reads) has nothing to settle; its settle calls raise `NotPendingError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from weir.errors import NotPendingError
from weir.v1 import types_pb2


@dataclass(frozen=True, slots=True)
class PublishAck:
    """Where a published message was stored: its `partition` and per-partition `seq` (0 with ack
    level "none"). `duplicate`: its msg_id was already stored within the stream's duplicate window
    (an earlier attempt landed); `seq` is where. `scheduled`: stored as a schedule record at `seq`
    (a publish with delay_ms / deliver_at_ms), delivered at its time under a new seq. The node
    client and the cluster client both return this."""

    partition: int
    seq: int
    duplicate: bool = False
    scheduled: bool = False


class Settler(Protocol):
    """What settles a delivered message on its partition's primary (the cluster client is one)."""

    async def ack_batch(self, stream: str, consumer: str, partition: int, seqs: list[int]) -> list[str]: ...

    async def nak(self, stream: str, consumer: str, partition: int, seq: int, delay_ms: int = 0) -> None: ...

    async def term(self, stream: str, consumer: str, partition: int, seq: int) -> None: ...

    async def in_progress(self, stream: str, consumer: str, partition: int, seq: int) -> int: ...


@dataclass(slots=True, eq=False)
class Message:
    """One message of a stream.

    `payload` is the bytes as published; `key` the publisher's partitioning key (None when it gave
    none); `headers` a dict (a repeated header key keeps its last
    value); `timestamp_ms` milliseconds since the Unix epoch (the publisher's or the node's clock);
    `deliver_count` the delivery attempt (1 on first delivery; 0 on plain reads); `msg_id` the
    publisher's idempotence key ("" when none). `consumer` names the durable consumer that
    delivered it ("" on plain reads).
    """

    stream: str
    partition: int
    seq: int
    subject: str
    payload: bytes
    key: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timestamp_ms: int = 0
    deliver_count: int = 0
    msg_id: str = ""
    consumer: str = ""
    settled: bool = False
    _settler: Settler | None = field(default=None, repr=False)

    @classmethod
    def from_proto(
        cls, stream: str, proto: types_pb2.Message, *, consumer: str = "", settler: Settler | None = None
    ) -> Message:
        """The SDK's view of a weir.v1.Message of `stream` (delivered by `consumer` when given)."""
        return cls(
            stream=stream,
            partition=proto.partition,
            seq=proto.seq,
            subject=proto.subject,
            payload=proto.payload,
            key=proto.key if proto.HasField("key") else None,
            headers={header.key: header.value for header in proto.headers},
            timestamp_ms=proto.ts_ms,
            deliver_count=proto.deliver_count,
            msg_id=proto.msg_id,
            consumer=consumer,
            _settler=settler,
        )

    def text(self, encoding: str = "utf-8") -> str:
        """The payload decoded (UnicodeDecodeError when it is not text in `encoding`)."""
        return self.payload.decode(encoding)

    def _bound(self) -> Settler:
        if self._settler is None or not self.consumer:
            raise NotPendingError(
                f"message {self.stream}/{self.partition}/{self.seq} was not delivered by a consumer: nothing to settle"
            )
        return self._settler

    async def ack(self) -> None:
        """Acknowledge: the consumer will not deliver it again. Errors: NotPendingError when it is
        no longer pending (already settled, or its ack_wait ran out and it was redelivered and
        settled elsewhere)."""
        settler = self._bound()
        (result,) = await settler.ack_batch(self.stream, self.consumer, self.partition, [self.seq])
        if result != "ok":
            raise NotPendingError(
                f"{self.stream}/{self.partition}/{self.seq} is not pending for consumer {self.consumer!r}",
                stream=self.stream,
                partition=self.partition,
            )
        self.settled = True

    async def nak(self, delay_ms: int = 0) -> None:
        """Negative acknowledgement: deliver it again after `delay_ms` (0 = at once)."""
        await self._bound().nak(self.stream, self.consumer, self.partition, self.seq, delay_ms)
        self.settled = True

    async def term(self) -> None:
        """Terminate: never deliver it again (and do not count it as processed)."""
        await self._bound().term(self.stream, self.consumer, self.partition, self.seq)
        self.settled = True

    async def in_progress(self) -> int:
        """Still working on it: restart its ack_wait. Returns when it is now due for redelivery
        (ms since the Unix epoch)."""
        return await self._bound().in_progress(self.stream, self.consumer, self.partition, self.seq)
