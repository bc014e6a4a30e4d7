"""RocketMQ v1's QueryOffset and PullMessage (broadcasting consumers, which keep their offsets
themselves), transport-neutral. Source: service.proto ("The pulled messages can't be acked or nacked,
while the client is responsible for manage offesets"; an empty answer is OK), definition.proto's
QueryOffsetPolicy.

Offsets are seq - 1 (`mapping.offset_of`): the first message of a partition has offset 0, and the
offset of "the end" is the partition's last seq (the offset the next stored message gets). Every
record of a partition has a seq, so offsets also count what RocketMQ clients never see: the records
of delayed and held messages (reserved `$weir.` subjects), and messages on other subjects (the
groups' dead letters, Weir publishers' own subjects). PullMessage skips those, and the messages
its filter (TAG or SQL92, `receiving.filter_of`) excludes, and its next_offset moves past them.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from weir import Client
from weir.errors import InvalidArgumentError
from weir.subjects import RESERVED_SUBJECT_PREFIX
from weir.v1 import types_pb2
from weir.v1.streams_pb2 import ReadMessagesResponse

from weir_gateway.rocketmq_v1 import mapping
from weir_gateway.rocketmq_v1.receiving import MAX_AWAIT_MS, MAX_BATCH_SIZE, filter_of

DEFAULT_PULL_BATCH = 32
PULL_RECHECK_S = 0.05  # how often a waiting pull reads the partition again
MAX_PULL_READS = 16  # reads one pull makes while every message it reads is skipped
OFFSET_POLICIES = ("BEGINNING", "END", "TIME_POINT")


@dataclass(frozen=True, slots=True)
class PullRequest:
    """One PullMessage: up to batch_size (0 = 32) messages of `partition` from `offset` on, waiting
    up to await_ms for one."""

    namespace: str
    topic: str
    partition: int
    offset: int
    batch_size: int = 0
    await_ms: int = 0
    filter_type: str = "TAG"
    filter_expression: str = ""


@dataclass(frozen=True, slots=True)
class Pulled:
    """PullMessage's answer: the messages (as stored; deliver_count 0), the partition's offset range
    [min_offset, max_offset) at the read, and where the next pull starts."""

    messages: list[types_pb2.Message]
    min_offset: int
    next_offset: int
    max_offset: int


class Offsets:
    """QueryOffset and PullMessage on one cluster."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def partition_range(self, stream: str, partition: int) -> tuple[int, int]:
        """(first_seq, last_seq) of a partition now (first = last + 1 when it is empty). Errors:
        NoSuchStreamError, InvalidArgumentError (no such partition)."""
        info = await self.client.stream_info(stream)
        for entry in info.partitions:
            if entry.partition == partition:
                return entry.first_seq, entry.last_seq
        raise InvalidArgumentError(f"topic stream {stream!r} has no partition {partition}")

    async def query_offset(self, namespace: str, topic: str, partition: int, policy: str, time_ms: int | None) -> int:
        """BEGINNING: the offset of the first stored message; END: the offset the next message will
        get; TIME_POINT: the offset of the first message stored at or after `time_ms` (ms since the
        Unix epoch; END's offset when none is). Errors: InvalidArgumentError (bad names, unknown
        policy, TIME_POINT without a time), NoSuchStreamError (NOT_FOUND)."""
        stream = mapping.weir_name_of(namespace, topic)
        if policy not in OFFSET_POLICIES:
            raise InvalidArgumentError(f"policy: unknown QueryOffsetPolicy {policy!r}")
        if policy == "TIME_POINT":
            if time_ms is None:
                raise InvalidArgumentError("time_point: required with policy TIME_POINT")
            await self.partition_range(stream, partition)  # NOT_FOUND / no such partition first
            return mapping.offset_of(await self.client.seq_at_time(stream, partition, max(0, time_ms)))
        first_seq, last_seq = await self.partition_range(stream, partition)
        return mapping.offset_of(first_seq) if policy == "BEGINNING" else last_seq

    async def pull(self, request: PullRequest) -> Pulled:
        """Messages of the topic from request.offset on (an offset below the first stored message
        reads from the first), skipping what the module docstring says; with await_ms, reads again
        every PULL_RECHECK_S until a message arrives or the time is over (an empty answer is OK).
        Errors: InvalidArgumentError (bad names, negative offset, bad filter expression),
        NoSuchStreamError."""
        stream = mapping.weir_name_of(request.namespace, request.topic)
        accepted = filter_of(request.filter_type, request.filter_expression)
        if request.offset < 0 or request.batch_size < 0 or request.await_ms < 0:
            raise InvalidArgumentError("offset, batch_size and await_time must not be negative")
        batch_size = min(request.batch_size or DEFAULT_PULL_BATCH, MAX_BATCH_SIZE)
        deadline = time.monotonic() + min(request.await_ms, MAX_AWAIT_MS) / 1000
        first_seq, _ = await self.partition_range(stream, request.partition)
        from_seq = max(mapping.seq_of(request.offset), first_seq)
        reads = 0
        while True:
            response = await self._read(stream, request.partition, from_seq, batch_size)
            reads += 1
            messages = [
                message for message in response.messages if is_topic_message(stream, message) and accepted(message)
            ]
            if response.messages:
                from_seq = response.messages[-1].seq + 1
            if messages or time.monotonic() >= deadline or (response.messages and reads >= MAX_PULL_READS):
                return Pulled(
                    messages, mapping.offset_of(first_seq), mapping.offset_of(from_seq), int(response.last_seq)
                )
            if not response.messages:
                await asyncio.sleep(min(PULL_RECHECK_S, max(0.0, deadline - time.monotonic())))

    async def _read(self, stream: str, partition: int, from_seq: int, max_messages: int) -> ReadMessagesResponse:
        """A raw read on the partition's primary, with the SDK's retries and route refreshes."""
        return await self.client.on_leader(
            stream, partition, lambda node: node.read_messages(stream, partition, from_seq, max_messages=max_messages)
        )


def is_topic_message(stream: str, message: types_pb2.Message) -> bool:
    """Whether a stored record is one of the topic's messages (not a reserved record, dead letter or
    a Weir publisher's other subject)."""
    return message.subject == stream and not message.subject.startswith(RESERVED_SUBJECT_PREFIX)
