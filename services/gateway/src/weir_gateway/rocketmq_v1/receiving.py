"""RocketMQ v1's ReceiveMessage, AckMessage, NackMessage and ForwardMessageToDeadLetterQueue over a
Weir consumer group's durable consumer, transport-neutral. Source: service.proto's comments on those
RPCs, definition.proto's SystemAttribute and DeadLetterPolicy, and RocketMQ 5's POP consumption
(per-receive invisible time, receipt handles, retry backoff, a group's dead letter queue).

**The group's consumer.** A RocketMQ consumer group (namespace, name) of a topic is the Weir durable
consumer named like the Weir group (`mapping.weir_name_of`), created on the first receive and never
changed by the gateway afterwards (a Weir consumer config is immutable):

- `filter_subject` = the stream name: the topic's messages (whose subject is the stream name) and
  nothing else, so the group's dead letters under `mapping.dead_letter_subject` are never delivered
  to it;
- `deliver_policy` from the first receive's ConsumePolicy: RESUME and PLAYBACK start a new group at
  the partition's first stored message (a group with no position resumes from the start, as the
  kafka-pixy front door's new groups do), DISCARD at the end (only messages stored from then on),
  TARGET_TIMESTAMP at the first message stored at or after `initialization_timestamp` (required);
  an existing group always resumes where it is;
- `max_deliver` = the group's DeadLetterPolicy.max_delivery_attempts from the consumers' Heartbeat
  (0 or unknown: 16), `dead_letter_subject` = `<stream>.dlq.<group>`;
- `max_ack_pending` = 1 when the first receive has `fifo_flag`: each partition then hands out its
  next message only once the previous one is acknowledged or dead-lettered (RocketMQ's FIFO groups).
  A FIFO receive on a group created without it is FAILED_PRECONDITION.

**Filters.** A FilterExpression is applied by the gateway: a TAG expression (`a||b`, `*`) to the
message's tag, a SQL expression (RocketMQ's SQL92 subset, `sql_filter.py`) to its properties (its
Weir headers, and `TAGS` = its tag). A fetched message that does not match is acknowledged at once
and not returned (RocketMQ's broker skips such messages for the group the same way), counted in
`weir_gateway_rocketmq_filtered_messages_total`. A bad expression is INVALID_ARGUMENT before
anything is created.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass

from weir import Client, ConsumerConfig, consumer_config
from weir.client import NodeClient
from weir.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    NoSuchConsumerError,
    NoSuchMessageError,
    NotPendingError,
    PositionOutOfRangeError,
)
from weir.v1 import types_pb2

from weir_gateway import metrics
from weir_gateway.acks import AckCoalescer
from weir_gateway.rocketmq_v1 import mapping, sql_filter
from weir_gateway.rocketmq_v1.bounded import BoundedMap
from weir_gateway.rocketmq_v1.errors import (
    GroupMismatchError,
    OffsetNotPendingError,
    StaleReceiptError,
    TooManyWaitingError,
)
from weir_gateway.rocketmq_v1.handles import Receipt, Signer

logger = logging.getLogger(__name__)

DEFAULT_INVISIBLE_MS = 30_000  # RocketMQ's default invisible duration for a receive
MAX_INVISIBLE_MS = 12 * 3600 * 1000  # RocketMQ 5's longest invisible duration
MAX_AWAIT_MS = 300_000  # Weir's longest fetch wait
DEFAULT_BATCH_SIZE = 32  # the v1 Java client's receive batch
MAX_BATCH_SIZE = 1_024
MAX_FILTER_ROUNDS = 64  # fetches one receive makes while everything it gets is filtered out
MAX_GROUPS = 10_000  # (stream, group) consumer configs and dead letter policies one instance remembers
CONSUME_POLICIES = ("RESUME", "PLAYBACK", "DISCARD", "TARGET_TIMESTAMP")
SQL_TAGS_PROPERTY = "TAGS"  # the tag, as RocketMQ's SQL92 filters name it (a reserved property name)
MessageFilter = Callable[[types_pb2.Message], bool]  # whether a stored message passes a FilterExpression


@dataclass(frozen=True, slots=True)
class ReceiveRequest:
    """One ReceiveMessage: from `partition` of the topic, for `group` (both in `namespace`).
    `filter_type` "TAG" | "SQL"; `consume_policy` one of CONSUME_POLICIES (a new group's start);
    `batch_size` 0 = 32; `invisible_ms` 0 = 30 s; `await_ms` the long poll (0 = answer at once)."""

    namespace: str
    topic: str
    group: str
    partition: int
    filter_type: str = "TAG"
    filter_expression: str = ""
    consume_policy: str = "RESUME"
    initialization_timestamp_ms: int | None = None
    batch_size: int = 0
    invisible_ms: int = 0
    await_ms: int = 0
    fifo: bool = False


@dataclass(frozen=True, slots=True)
class Delivered:
    """A received message (as Weir delivered it: seq, partition, deliver_count, headers, ts_ms) and
    the receipt handle of this delivery."""

    message: types_pb2.Message
    receipt_handle: str


@dataclass(frozen=True, slots=True)
class Received:
    """ReceiveMessage's answer: the messages (maybe none), how long they stay invisible (ms) and when
    they were handed out (ms since the Unix epoch)."""

    messages: list[Delivered]
    invisible_ms: int
    delivered_at_ms: int


@dataclass(frozen=True, slots=True)
class SettleRequest:
    """An AckMessage, NackMessage or ForwardMessageToDeadLetterQueue: the receipt handle, the group
    (and topic, "" = not named) it must belong to, and NackMessage's max_delivery_attempts (0 = the
    group's). AckMessage's other arm of the handle oneof: `offset` (None = the receipt handle is the
    handle) with the request's `message_id`."""

    namespace: str
    topic: str
    group: str
    receipt_handle: str
    max_delivery_attempts: int = 0
    offset: int | None = None
    message_id: str = ""


@dataclass(frozen=True, slots=True)
class GroupTraits:
    """What a group's consumers announce in Heartbeat (ConsumerData and the request's fifo_flag),
    used when the group's consumer is created: FIFO or not, max delivery attempts, ConsumePolicy."""

    fifo: bool = False
    max_attempts: int = mapping.DEFAULT_MAX_DELIVERY_ATTEMPTS
    consume_policy: str = "RESUME"


class GroupConsumers:
    """The durable consumers of RocketMQ groups: created on first use (the group's first
    QueryAssignment or ReceiveMessage, whichever comes first) with the traits its consumers announced
    in Heartbeat; their configs and those traits remembered (at most MAX_GROUPS of each)."""

    def __init__(self, client: Client, *, auto_create: bool = True) -> None:
        self.client = client
        self.auto_create = auto_create  # False: an unknown group is NOT_FOUND (the v1 seed), not created
        self._configs: BoundedMap[tuple[str, str], ConsumerConfig] = BoundedMap(MAX_GROUPS)
        self._traits: BoundedMap[str, GroupTraits] = BoundedMap(MAX_GROUPS)

    def remember(self, weir_group: str, traits: GroupTraits) -> None:
        """A clustering consumer's Heartbeat: its group's traits (0 max attempts means 16)."""
        max_attempts = traits.max_attempts or mapping.DEFAULT_MAX_DELIVERY_ATTEMPTS
        self._traits.set(weir_group, GroupTraits(traits.fifo, max_attempts, traits.consume_policy))

    def assignment_config(self, stream: str, weir_group: str) -> ConsumerConfig:
        """The config QueryAssignment creates the group's consumer with when it is the group's first
        call (the router creates it): the group's Heartbeat traits, else the defaults."""
        traits = self._traits.get(weir_group) or GroupTraits()
        return self.new_config(stream, weir_group, traits.fifo, traits.consume_policy, None)

    def known(self, stream: str, weir_group: str) -> ConsumerConfig | None:
        return self._configs.get((stream, weir_group))

    async def require(self, stream: str, weir_group: str) -> None:
        """Nothing when groups are created on first use or the group's consumer exists. Errors:
        NoSuchConsumerError (NOT_FOUND) naming how to create it, NoSuchStreamError."""
        if self.auto_create or self._configs.get((stream, weir_group)) is not None:
            return
        try:
            config = (await self.client.consumer_info(stream, weir_group)).config
        except NoSuchConsumerError:
            raise NoSuchConsumerError(
                f"consumer group {weir_group!r} does not exist on {stream!r}, and this gateway does not create "
                f"groups on first use (WEIR_GATEWAY_ROCKETMQ_AUTO_CREATE_GROUPS=false): weir consumer create "
                f"{stream} {weir_group}",
                stream=stream,
                consumer=weir_group,
            ) from None
        self._configs.set((stream, weir_group), config)

    async def ensure(self, stream: str, weir_group: str, request: ReceiveRequest) -> ConsumerConfig:
        """The group's consumer config, creating the consumer as the module docstring says when it
        does not exist (NoSuchConsumerError, NOT_FOUND, when groups are not created on first use).
        Errors: NoSuchStreamError (NOT_FOUND), InvalidArgumentError
        (TARGET_TIMESTAMP without initialization_timestamp), GroupMismatchError (a FIFO receive on
        a group created without FIFO), InvalidConfigError (the stream refuses the dead letter subject)."""
        await self.require(stream, weir_group)
        config = self._configs.get((stream, weir_group))
        if config is None:
            try:
                config = (await self.client.consumer_info(stream, weir_group)).config
            except NoSuchConsumerError:
                traits = self._traits.get(weir_group) or GroupTraits()
                wanted = self.new_config(
                    stream,
                    weir_group,
                    request.fifo or traits.fifo,
                    request.consume_policy,
                    request.initialization_timestamp_ms,
                )
                try:
                    config = (await self.client.create_consumer(stream, wanted)).config
                    logger.info("created the consumer of RocketMQ group %r on %r: %s", weir_group, stream, wanted)
                except AlreadyExistsError:  # another instance or call created it first
                    config = (await self.client.consumer_info(stream, weir_group)).config
            self._configs.set((stream, weir_group), config)
        if request.fifo and config.max_ack_pending != 1:
            raise GroupMismatchError(
                f"group {weir_group!r} of {stream!r} was created for concurrent consumption (its first receive "
                "had no fifo_flag); a FIFO consumer needs a group of its own"
            )
        return config

    def new_config(
        self, stream: str, weir_group: str, fifo: bool, policy: str, initialization_ms: int | None
    ) -> ConsumerConfig:
        """A new group consumer's config (see the module docstring). Errors: InvalidArgumentError
        (unknown policy, TARGET_TIMESTAMP without an initialization time)."""
        if policy not in CONSUME_POLICIES:
            raise InvalidArgumentError(f"consume_policy: unknown policy {policy!r}")
        start: dict[str, object] = {"deliver_policy": "all"}
        if policy == "DISCARD":
            start = {"deliver_policy": "new"}
        elif policy == "TARGET_TIMESTAMP":
            if initialization_ms is None:
                raise InvalidArgumentError("initialization_timestamp: required with consume_policy TARGET_TIMESTAMP")
            start = {"deliver_policy": "by_start_time", "start_time_ms": max(0, initialization_ms)}
        traits = self._traits.get(weir_group) or GroupTraits()
        return consumer_config(
            weir_group,
            filter_subject=stream,
            ack_wait_ms=DEFAULT_INVISIBLE_MS,
            max_deliver=traits.max_attempts,
            dead_letter_subject=mapping.dead_letter_subject(stream, weir_group),
            max_ack_pending=1 if fifo else 0,
            **start,  # type: ignore[arg-type]
        )


class Receiver:
    """ReceiveMessage and the settles of its receipt handles. `retry_delays_ms`: NackMessage's
    backoff (`mapping.retry_delay_ms`); `max_waiting_receives`: receives that may wait at once per
    group on this instance; `now_ms`: the wall clock (ms since the Unix epoch)."""

    def __init__(
        self,
        client: Client,
        signer: Signer,
        *,
        retry_delays_ms: Sequence[int] = mapping.RETRY_DELAYS_MS,
        max_waiting_receives: int = 256,
        auto_create_groups: bool = True,
        now_ms: Callable[[], int] | None = None,
    ) -> None:
        self.client = client
        self.signer = signer
        self.groups = GroupConsumers(client, auto_create=auto_create_groups)
        self.acks = AckCoalescer(client)
        self.retry_delays_ms = tuple(retry_delays_ms)
        self.max_waiting_receives = max_waiting_receives
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self._waiting: dict[tuple[str, str], int] = {}  # entries only while some receive waits

    @contextlib.asynccontextmanager
    async def waiting_slot(self, stream: str, weir_group: str) -> AsyncIterator[None]:
        """One of the group's `max_waiting_receives` slots for the duration of a receive. Errors:
        TooManyWaitingError (UNAVAILABLE)."""
        key = (stream, weir_group)
        count = self._waiting.get(key, 0)
        if count >= self.max_waiting_receives:
            raise TooManyWaitingError(
                f"group {weir_group!r} of {stream!r} has {count} receives waiting on this gateway already "
                f"(WEIR_GATEWAY_ROCKETMQ_MAX_WAITING_RECEIVES); try again"
            )
        self._waiting[key] = count + 1
        try:
            yield
        finally:
            remaining = self._waiting[key] - 1
            if remaining:
                self._waiting[key] = remaining
            else:
                del self._waiting[key]

    async def receive(self, request: ReceiveRequest) -> Received:
        """Up to batch_size messages of the partition for the group, invisible to the group for
        invisible_ms, each with a receipt handle; waits up to await_ms for one (an empty answer is
        OK, as service.proto says). Errors: InvalidArgumentError (bad names, bounds, filter
        expression), NoSuchStreamError, TooManyWaitingError and `GroupConsumers.ensure`'s."""
        stream = mapping.weir_name_of(request.namespace, request.topic)
        weir_group = mapping.weir_name_of(request.namespace, request.group, "group")
        accepted = filter_of(request.filter_type, request.filter_expression)
        batch_size, invisible_ms, await_ms = receive_bounds(request)
        async with self.waiting_slot(stream, weir_group):
            await self.groups.ensure(stream, weir_group, request)
            messages = await self._fetch_matching(
                stream=stream,
                weir_group=weir_group,
                partition=request.partition,
                accepted=accepted,
                batch_size=batch_size,
                invisible_ms=invisible_ms,
                await_ms=await_ms,
            )
        delivered = [
            Delivered(
                message,
                self.signer.receipt_handle(
                    Receipt(stream, message.partition, message.seq, message.deliver_count, weir_group)
                ),
            )
            for message in messages
        ]
        return Received(delivered, invisible_ms, self.now_ms())

    async def _fetch_matching(
        self,
        *,
        stream: str,
        weir_group: str,
        partition: int,
        accepted: MessageFilter,
        batch_size: int,
        invisible_ms: int,
        await_ms: int,
    ) -> list[types_pb2.Message]:
        """Fetch until some message passes the filter or await_ms is over (at most
        MAX_FILTER_ROUNDS fetches); the ones that do not pass are acknowledged."""
        deadline = time.monotonic() + await_ms / 1000
        for _ in range(MAX_FILTER_ROUNDS):
            wait_ms = max(0, int((deadline - time.monotonic()) * 1000))

            async def fetch(node: NodeClient, wait_ms: int = wait_ms) -> list[types_pb2.Message]:
                """The stored messages as they are (what RocketMQ's encoding reads), on the primary."""
                return await node.fetch(
                    stream, weir_group, partition, batch_size=batch_size, max_wait_ms=wait_ms, ack_wait_ms=invisible_ms
                )

            fetched = await self.client.on_leader(stream, partition, fetch)
            passed = [accepted(message) for message in fetched]
            matching = [message for message, passes in zip(fetched, passed, strict=True) if passes]
            skipped = [message for message, passes in zip(fetched, passed, strict=True) if not passes]
            if skipped:
                await self.client.ack_batch(
                    stream,
                    weir_group,
                    partition,
                    [message.seq for message in skipped],
                    [message.deliver_count for message in skipped],
                )
                metrics.ROCKETMQ_FILTERED_MESSAGES.inc(len(skipped))
            if matching or not fetched or time.monotonic() >= deadline:
                return matching
        return []

    def _receipt_of(self, request: SettleRequest) -> Receipt:
        """The delivery the handle names, checked against the request's group and topic. Errors:
        InvalidArgumentError (malformed, forged, another group's or topic's handle)."""
        receipt = self.signer.receipt(request.receipt_handle)
        weir_group = mapping.weir_name_of(request.namespace, request.group, "group")
        if receipt.group != weir_group:
            raise InvalidArgumentError(f"receipt_handle: issued to group {receipt.group!r}, not {weir_group!r}")
        if request.topic and receipt.stream != mapping.weir_name_of(request.namespace, request.topic):
            raise InvalidArgumentError(f"receipt_handle: issued for topic stream {receipt.stream!r}, not this topic")
        return receipt

    async def ack(self, request: SettleRequest) -> None:
        """AckMessage: the delivery is done; the message is not delivered to the group again.
        Errors: InvalidArgumentError (bad handle), StaleReceiptError (INVALID_ARGUMENT: settled,
        or delivered again since, e.g. after its invisible duration passed)."""
        receipt = self._receipt_of(request)
        result = await self.acks.ack(
            receipt.stream, receipt.group, receipt.partition, receipt.seq, receipt.deliver_count
        )
        if result != "ok":
            raise stale(receipt, result)

    async def ack_offset(self, request: SettleRequest) -> None:
        """AckMessage by offset (service.proto: "Acknowledges the message associated with the
        receipt_handle or offset"): the message stored at partition offset `request.offset` (its
        SystemAttribute.partition_offset, Weir seq - 1) of the topic, which ReceiveMessage delivered
        to the group and which is still pending, is done, as an ack of its current delivery's
        receipt handle would do. AckMessageRequest names no partition: `message_id` (the message's
        SystemAttribute.message_id) picks the partition whose message at that offset has it, and may
        be empty only on a topic of one partition. Errors: InvalidArgumentError (no topic, a negative
        offset, no message_id on a topic of several partitions, no message with that message_id at
        that offset), OffsetNotPendingError (INVALID_ARGUMENT: not delivered to the group, or no
        longer pending), NoSuchStreamError and NoSuchConsumerError (NOT_FOUND)."""
        offset = request.offset
        if offset is None or offset < 0:
            raise InvalidArgumentError(f"offset: a message's partition_offset (>= 0) is required, got {offset}")
        if not request.topic:
            raise InvalidArgumentError("topic: required to ack by offset (the offset is a position in the topic)")
        stream = mapping.weir_name_of(request.namespace, request.topic)
        weir_group = mapping.weir_name_of(request.namespace, request.group, "group")
        seq = mapping.seq_of(offset)
        partition = await self._partition_holding(stream, seq, request.message_id)
        result = await self.acks.ack(stream, weir_group, partition, seq, 0)
        if result != "ok":
            raise await self._offset_not_pending(stream, weir_group, partition, seq, result)

    async def _partition_holding(self, stream: str, seq: int, message_id: str) -> int:
        """The partition whose message at `seq` has `message_id` (any of one partition when it is "").
        Errors: InvalidArgumentError, NoSuchStreamError."""
        info = await self.client.stream_info(stream)
        partitions = sorted(entry.partition for entry in info.partitions)
        offset = mapping.offset_of(seq)
        if not message_id:
            if len(partitions) != 1:
                raise InvalidArgumentError(
                    f"message_id: required to ack by offset on topic stream {stream!r}, which has {len(partitions)} "
                    f"partitions (offset {offset} is a position in each; the message_id tells which message)"
                )
            return partitions[0]
        ids = await asyncio.gather(*(self._message_id_at(stream, partition, seq) for partition in partitions))
        holding = [partition for partition, stored_id in zip(partitions, ids, strict=True) if stored_id == message_id]
        if len(holding) != 1:
            where = "no partition" if not holding else f"partitions {holding} (ambiguous)"
            raise InvalidArgumentError(
                f"offset {offset} with message_id {message_id!r}: {where} of topic stream {stream!r} stores that "
                "message at that offset (use the partition_offset and message_id of a received message)"
            )
        return holding[0]

    async def _message_id_at(self, stream: str, partition: int, seq: int) -> str | None:
        """The msg_id of the message stored at `seq` of `partition`, None when none is stored there."""
        try:
            message = await self.client.on_leader(
                stream, partition, lambda node: node.get_message(stream, partition, seq)
            )
        except (NoSuchMessageError, PositionOutOfRangeError):
            return None
        return str(message.msg_id)

    async def _offset_not_pending(
        self, stream: str, weir_group: str, partition: int, seq: int, result: str
    ) -> OffsetNotPendingError:
        """Why the ack of `seq` found nothing pending: not delivered to the group yet, or settled."""
        where = f"offset {mapping.offset_of(seq)} of partition {partition}"
        info = await self.client.consumer_info(stream, weir_group)
        state = next((entry for entry in info.partitions if entry.partition == partition), None)
        if state is None or seq > state.last_delivered:
            return OffsetNotPendingError(
                f"{where} was not delivered to group {weir_group!r} (receive it first; acking by offset settles "
                f"a received message that is still pending): {result}"
            )
        return OffsetNotPendingError(
            f"{where} is not pending for group {weir_group!r}: acknowledged or dead-lettered already, or "
            f"skipped by the group's filter: {result}"
        )

    async def nack(self, request: SettleRequest) -> bool:
        """NackMessage: deliver the message again after RocketMQ's retry backoff for this attempt
        (`retry_delays_ms`), as delivery attempt deliver_count + 1; a delivery that was the last
        allowed attempt (request.max_delivery_attempts, else the group's max_deliver, else 16)
        moves to the group's dead letter subject instead. Returns whether it was dead-lettered.
        Errors: as `ack`."""
        receipt = self._receipt_of(request)
        max_attempts = request.max_delivery_attempts or self._group_max_attempts(receipt)
        try:
            if receipt.deliver_count >= max_attempts:
                await self.client.term(
                    receipt.stream,
                    receipt.group,
                    receipt.partition,
                    receipt.seq,
                    receipt.deliver_count,
                    dead_letter=True,
                )
                metrics.ROCKETMQ_DEAD_LETTERS.labels("nack").inc()
                return True
            delay_ms = mapping.retry_delay_ms(receipt.deliver_count, self.retry_delays_ms)
            await self.client.nak(
                receipt.stream,
                receipt.group,
                receipt.partition,
                receipt.seq,
                delay_ms,
                deliver_count=receipt.deliver_count,
            )
            return False
        except NotPendingError as error:
            raise stale(receipt, error.message) from None

    async def forward_to_dead_letter_queue(self, request: SettleRequest) -> None:
        """ForwardMessageToDeadLetterQueue: the client's DeadLetterPolicy gave up on the message;
        it moves under the group's dead letter subject in one commit (never delivered to the group
        again). Errors: as `ack`; InvalidConfigError when the group's consumer has no dead letter
        subject (one not created by this gateway)."""
        receipt = self._receipt_of(request)
        try:
            await self.client.term(
                receipt.stream, receipt.group, receipt.partition, receipt.seq, receipt.deliver_count, dead_letter=True
            )
        except NotPendingError as error:
            raise stale(receipt, error.message) from None
        metrics.ROCKETMQ_DEAD_LETTERS.labels("forward").inc()

    async def change_invisible_duration(self, request: SettleRequest, invisible_ms: int) -> str:
        """ChangeInvisibleDuration (RocketMQ v2's service.proto; v1 has no such RPC): the received
        message stays invisible to the group for `invisible_ms` from now (1 ms to 12 h), then is
        delivered again as the next delivery attempt, as when a receive's invisible duration passes.
        Returns the receipt handle to settle it with until then (this delivery's: it stays valid).
        Errors: InvalidArgumentError (bad handle, a duration out of range), StaleReceiptError
        (INVALID_ARGUMENT: settled, or delivered again since)."""
        if not 0 < invisible_ms <= MAX_INVISIBLE_MS:
            raise InvalidArgumentError(
                f"invisible_duration: from 1 ms to {MAX_INVISIBLE_MS} ms (12 h), got {invisible_ms} ms"
            )
        receipt = self._receipt_of(request)
        try:
            await self.client.nak(
                receipt.stream,
                receipt.group,
                receipt.partition,
                receipt.seq,
                invisible_ms,
                deliver_count=receipt.deliver_count,
            )
        except NotPendingError as error:
            raise stale(receipt, error.message) from None
        return request.receipt_handle

    def _group_max_attempts(self, receipt: Receipt) -> int:
        config = self.groups.known(receipt.stream, receipt.group)
        if config is not None and config.max_deliver:
            return int(config.max_deliver)
        return mapping.DEFAULT_MAX_DELIVERY_ATTEMPTS


def stale(receipt: Receipt, detail: str) -> StaleReceiptError:
    return StaleReceiptError(
        f"receipt_handle is out of date: delivery {receipt.deliver_count} of seq {receipt.seq} in partition "
        f"{receipt.partition} is no longer pending for group {receipt.group!r} (acknowledged, dead-lettered, "
        f"or delivered again after its invisible duration): {detail}"
    )


def tag_of(message: types_pb2.Message) -> str:
    """The RocketMQ tag of a stored message ("" = none)."""
    return next((header.value for header in message.headers if header.key == mapping.HEADER_TAG), "")


def properties_of(message: types_pb2.Message) -> Mapping[str, str]:
    """A stored message's properties as SQL92 filters see them: its headers by key (a repeated key:
    the last value), and its tag as TAGS when it has one."""
    properties = {header.key: header.value for header in message.headers}
    tag = properties.get(mapping.HEADER_TAG)
    if tag:
        properties[SQL_TAGS_PROPERTY] = tag
    return properties


def filter_of(filter_type: str, expression: str) -> MessageFilter:
    """Whether a stored message passes the FilterExpression (definition.proto): "TAG" with
    `mapping.tag_filter`'s expression, "SQL" with `sql_filter.parse`'s over `properties_of`.
    Errors: InvalidArgumentError for a bad expression (naming the problem) or an unknown type."""
    if filter_type == "SQL":
        condition = sql_filter.parse(expression)
        return lambda message: condition.matches(properties_of(message))
    if filter_type != "TAG":
        raise InvalidArgumentError(f"filter_expression.type: unknown type {filter_type!r}")
    accepted = mapping.tag_filter(expression)
    return lambda message: mapping.tag_matches(accepted, tag_of(message))


def receive_bounds(request: ReceiveRequest) -> tuple[int, int, int]:
    """(batch_size, invisible_ms, await_ms) of a receive: batch 0 = 32 and at most 1,024; invisible 0
    = 30 s, at most 12 h (RocketMQ 5's bound); await at most 300 s (longer waits are cut to it).
    Errors: InvalidArgumentError for negative values or an invisible duration over 12 h."""
    if request.batch_size < 0 or request.invisible_ms < 0 or request.await_ms < 0:
        raise InvalidArgumentError("batch_size, invisible_duration and await_time must not be negative")
    if request.invisible_ms > MAX_INVISIBLE_MS:
        raise InvalidArgumentError(
            f"invisible_duration: at most {MAX_INVISIBLE_MS} ms (12 h), got {request.invisible_ms}"
        )
    batch_size = min(request.batch_size or DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE)
    return batch_size, request.invisible_ms or DEFAULT_INVISIBLE_MS, min(request.await_ms, MAX_AWAIT_MS)
