"""RocketMQ v1's MessagingService operations over the public Weir SDK, transport-neutral (the servicer
turns them into /apache.rocketmq.v1.MessagingService/* RPCs; the v2 door's servicer calls the same
ones, and `recall`, which only v2 has). Source: the comments of
apache/rocketmq-apis' v1 service.proto and definition.proto (../shared/reference), and what RocketMQ's
v1 Java client sent and expected.

Mapping (names: `mapping.py`): a topic (namespace, name) is one Weir stream; a RocketMQ partition is a
Weir partition with the same index; a RocketMQ consumer group (namespace, name) is the Weir consumer
group of the same mapped name, and a RocketMQ client (its client_id) is one member of it (member id
`rocketmq-<client_id>`) that the router balances with every other member. A message's Weir subject is
the stream name (as kafka-pixy's front door does), its Weir msg_id the RocketMQ message_id, its tag,
keys and other system attributes `x-rocketmq-*` headers, its user attributes headers of their own names.

Errors are Weir's typed errors (InvalidArgumentError, NoSuchStreamError, ...); the servicer puts them
in ResponseCommon.status.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from weir import Client
from weir.errors import InvalidArgumentError, NoSuchMessageError, UnavailableError, WeirError
from weir.v1 import router_pb2

from weir_gateway.rocketmq_v1 import mapping
from weir_gateway.rocketmq_v1.handles import Recall, Signer, Transaction
from weir_gateway.rocketmq_v1.offsets import Offsets
from weir_gateway.rocketmq_v1.receiving import Receiver
from weir_gateway.rocketmq_v1.transactions import Transactions, TransactionSettings

logger = logging.getLogger(__name__)

MEMBER_PREFIX = "rocketmq-"
MAX_REMEMBERED_MEMBERS = 100_000  # (stream, group, member) assignments one instance remembers at most
HEALTH_CHECK_TIMEOUT_S = 2.0


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class RoutePartition:
    """One partition of a topic's route: its index and whether its primary is alive (READ_WRITE)
    or not (NONE)."""

    index: int
    writable: bool


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    """What SendMessage stores, decoded from the RocketMQ message (see `Sender` in the servicer)."""

    namespace: str
    topic: str
    message_id: str
    message_type: str  # "NORMAL" | "DELAY" | "FIFO" | "TRANSACTION" (the enum's name)
    body: bytes  # as received (digest checked over these bytes)
    body_encoding: str  # "IDENTITY" | "GZIP"
    digest_type: str  # "CRC32" | "MD5" | "SHA1"
    checksum: str  # "" = the client sent no digest: nothing to verify
    tag: str = ""
    keys: Sequence[str] = ()
    user_attributes: Mapping[str, str] = field(default_factory=dict)
    partition: int | None = None  # the Partition the client chose (from QueryRoute); None = any
    delivery_timestamp_ms: int | None = None
    delay_level: int | None = None
    born_timestamp_ms: int = 0
    born_host: str = ""
    producer_group: tuple[str, str] | None = None  # (namespace, name)
    trace_context: str = ""
    message_group: str = ""  # FIFO: the group whose messages keep their order
    recovery_period_ms: int | None = None  # TRANSACTION: orphaned_transaction_recovery_period


@dataclass(frozen=True, slots=True)
class Stored:
    """Where SendMessage stored a message: partition and seq (the schedule record's seq for a DELAY
    message, the held record's for a TRANSACTION message), whether it was a retry of a stored
    message_id, when a DELAY message is due, a TRANSACTION message's signed transaction id and a
    DELAY message's signed recall handle (what RocketMQ 5's RecallMessage takes back; "" otherwise)."""

    partition: int
    seq: int
    duplicate: bool
    deliver_at_ms: int | None
    transaction_id: str = ""
    recall_handle: str = ""


class RocketMQCore:
    """RocketMQ v1 operations on one Weir cluster. `now_ms` is the wall clock in ms since the Unix
    epoch (injectable for tests); `signer` signs receipt handles and transaction ids (a random
    secret when None). The receiving (`receiver`), transaction (`transactions`) and offset
    (`offsets`) operations live in their own modules and share the client and signer."""

    def __init__(
        self,
        client: Client,
        now_ms: Callable[[], int] | None = None,
        signer: Signer | None = None,
        *,
        retry_delays_ms: Sequence[int] = mapping.RETRY_DELAYS_MS,
        max_waiting_receives: int = 256,
        auto_create_groups: bool = True,
        transaction_settings: TransactionSettings | None = None,
    ) -> None:
        self.client = client
        self.now_ms = now_ms or wall_clock_ms
        self.signer = signer or Signer.from_setting("")
        self.receiver = Receiver(
            client,
            self.signer,
            retry_delays_ms=retry_delays_ms,
            max_waiting_receives=max_waiting_receives,
            auto_create_groups=auto_create_groups,
            now_ms=self.now_ms,
        )
        self.transactions = Transactions(client, self.signer, transaction_settings, self.now_ms)
        self.offsets = Offsets(client)
        # (stream, group, member) -> partitions the router assigned at the member's last call.
        self._assigned: dict[tuple[str, str, str], list[int]] = {}
        self._lock = asyncio.Lock()

    # -- routes ------------------------------------------------------------------------------------

    async def query_route(self, namespace: str, topic: str) -> tuple[str, list[RoutePartition]]:
        """(Weir stream name, one RoutePartition per Weir partition in index order) of the topic,
        from the router (never the SDK's cache, so a failover shows at once). Errors:
        InvalidArgumentError (bad name), NoSuchStreamError (an unknown topic: NOT_FOUND, as
        service.proto says for QueryRoute)."""
        stream = mapping.weir_name_of(namespace, topic)
        route = await self.client.route(stream, refresh=True)
        partitions = [
            RoutePartition(entry.partition, entry.permission == "read_write")
            for entry in sorted(route.partitions, key=lambda entry: entry.partition)
        ]
        return stream, partitions

    # -- assignment --------------------------------------------------------------------------------

    @staticmethod
    def member_id(client_id: str) -> str:
        """The router's member id of a RocketMQ client. Errors: InvalidArgumentError when empty."""
        if not client_id:
            raise InvalidArgumentError("client_id: required (the request's client_id or the x-mq-client-id metadata)")
        return MEMBER_PREFIX + client_id

    async def query_assignment(self, namespace: str, topic: str, group: str, client_id: str) -> list[RoutePartition]:
        """The partitions the router's balancer gives this client in the group now (it may be none
        while another member still holds them). The call is also the member's heartbeat. The router
        moves a partition only after its holder released it: a RocketMQ client cannot say what it
        still works on, so the gateway reports what the router assigned at the client's previous
        call (a revoked partition is released one call later). A member this instance has not
        answered before (its earlier calls went to another worker or gateway, or it is new) lists
        every partition, so nothing it may still work on is released before a call of its own here
        says so. Errors: InvalidArgumentError,
        NoSuchStreamError (NOT_FOUND, as service.proto says for QueryAssignment), NoSuchConsumerError
        (NOT_FOUND) for a group that does not exist when groups are not created on first use."""
        stream = mapping.weir_name_of(namespace, topic)
        weir_group = mapping.weir_name_of(namespace, group, "group")
        await self.receiver.groups.require(stream, weir_group)
        member = self.member_id(client_id)
        key = (stream, weir_group, member)
        owned = self._assigned.get(key)
        if owned is None:  # not answered here before (another worker or instance did, or none): release nothing
            owned = [entry.partition for entry in (await self.client.route(stream)).partitions]
        request = router_pb2.QueryAssignmentRequest(
            stream=stream,
            group=weir_group,
            client_id=member,
            endpoints=router_pb2.Endpoints(scheme="ipv4"),
            owned_partitions=owned,
            consumer=self.receiver.groups.assignment_config(stream, weir_group).to_proto(),
        )
        host, _, port = self.client.router.address.rpartition(":")
        request.endpoints.addresses.add(host=host, port=int(port or 0))
        response = await self.client.router.call("QueryAssignment", request)
        routes = sorted(response.assignments, key=lambda entry: entry.route.partition)
        async with self._lock:
            if key not in self._assigned and len(self._assigned) >= MAX_REMEMBERED_MEMBERS:
                self._assigned.pop(next(iter(self._assigned)))
            self._assigned[key] = [entry.route.partition for entry in routes]
        return [
            RoutePartition(entry.route.partition, entry.route.permission == router_pb2.PERMISSION_READ_WRITE)
            for entry in routes
        ]

    async def leave(self, namespace: str, group: str, client_id: str) -> int:
        """NotifyClientTermination for a consumer: leave every (topic, group) membership this gateway
        holds for the client at once (its partitions go to the other members). Returns how many it
        left. Errors: InvalidArgumentError."""
        weir_group = mapping.weir_name_of(namespace, group, "group")
        member = self.member_id(client_id)
        async with self._lock:
            keys = [key for key in self._assigned if key[1] == weir_group and key[2] == member]
            for key in keys:
                del self._assigned[key]
        for stream, _, _ in keys:
            request = router_pb2.LeaveGroupRequest(stream=stream, group=weir_group, client_id=member)
            try:
                await self.client.router.call("LeaveGroup", request)
            except WeirError as error:  # gone already (stream deleted, session expired): nothing to leave
                logger.debug("leaving %r of %r for %s: %s", weir_group, stream, member, error)
        return len(keys)

    async def health_check(self) -> None:
        """OK when the cluster's routers answer within HEALTH_CHECK_TIMEOUT_S. Errors:
        UnavailableError (service.proto: HealthCheck reports network issues)."""
        try:
            await asyncio.wait_for(self.client.cluster_info(), HEALTH_CHECK_TIMEOUT_S)
        except (TimeoutError, WeirError) as error:
            raise UnavailableError(f"the Weir cluster behind this gateway does not answer: {error}") from None

    # -- send --------------------------------------------------------------------------------------

    async def send(self, message: OutgoingMessage) -> Stored:
        """Store one message, idempotently by message_id (a retry returns the first copy's place with
        `duplicate`). NORMAL messages are visible at once; DELAY messages at delivery_timestamp, or
        after their delay_level's wait from now; FIFO messages go to the partition their
        message_group hashes to as a Weir key (the request's partition is not used, so every
        producer of a group, RocketMQ's or Weir's, picks the same one); TRANSACTION messages are
        held (invisible) until EndTransaction, and the answer carries their signed transaction id;
        a DELAY message's answer carries its signed recall handle (`recall`). DELAY and
        TRANSACTION need a stream with allow_scheduled_messages. Errors: InvalidArgumentError (no
        message_id, bad digest, reserved attribute, bad encoding, bad delay, FIFO without a
        message_group), NoSuchStreamError (NOT_FOUND), SchedulingDisabledError (FAILED_PRECONDITION),
        and the cluster's errors after the SDK's retries."""
        stream = mapping.weir_name_of(message.namespace, message.topic)
        body = check_and_decode(message)
        deliver_at_ms = self._deliver_at_ms(message)
        headers = headers_of(message, deliver_at_ms)
        fifo = message.message_type == "FIFO"
        held = message.message_type == "TRANSACTION"
        ack = await self.client.publish(
            stream,
            stream,
            body,
            partition=None if fifo else message.partition,
            key=message.message_group.encode("utf-8") if fifo else None,
            headers=headers,
            ack_level="all",
            msg_id=message.message_id,
            deliver_at_ms=deliver_at_ms or 0,
            hold=held,
        )
        transaction_id = recall_handle = ""
        if held:
            transaction_id = self.signer.transaction_id(Transaction(stream, ack.partition, ack.seq, message.message_id))
        if deliver_at_ms is not None:
            recall_handle = self.signer.recall_handle(Recall(stream, ack.partition, ack.seq, message.message_id))
        return Stored(ack.partition, ack.seq, ack.duplicate, deliver_at_ms, transaction_id, recall_handle)

    async def recall(self, namespace: str, topic: str, recall_handle: str) -> str:
        """RocketMQ 5's RecallMessage: discard the DELAY message `recall_handle` names before it is
        delivered; returns its message_id. The handle must verify and name a message of `topic`
        (namespace, name); the schedule record at its seq must still be there and be that message
        (a seq of a deleted and recreated stream names another one), then it is discarded
        (ReleaseScheduled with discard). Errors: InvalidArgumentError (a malformed, forged or other
        kind of handle, or one of another topic: nothing changes), NoSuchMessageError (NOT_FOUND:
        the message is no longer scheduled, delivered already or recalled already, which Weir does
        not tell apart: nothing changes), NoSuchStreamError, and the cluster's errors after the
        SDK's retries."""
        recall = self.signer.recall(recall_handle)
        stream = mapping.weir_name_of(namespace, topic)
        if stream != recall.stream:
            raise InvalidArgumentError(f"recall_handle: of another topic than {topic!r} (namespace {namespace!r})")
        page = await self.client.list_scheduled(stream, recall.partition, from_seq=recall.seq, max_messages=1)
        gone = NoSuchMessageError(
            f"message {recall.message_id!r} of topic {topic!r} is no longer scheduled: delivered already, or "
            "recalled already",
            stream=stream,
            partition=recall.partition,
            seq=recall.seq,
        )
        if not page.messages or page.messages[0].seq != recall.seq or page.messages[0].msg_id != recall.message_id:
            raise gone
        try:
            await self.client.release_scheduled(stream, recall.partition, recall.seq, discard=True)
        except NoSuchMessageError:  # delivered (or recalled) since the look: the same answer
            raise gone from None
        return recall.message_id

    def _deliver_at_ms(self, message: OutgoingMessage) -> int | None:
        """When a DELAY message becomes visible (ms since the epoch; a past time means at once);
        None for NORMAL. Errors: InvalidArgumentError for timed delivery on a NORMAL message, or a
        DELAY message without it."""
        timed = message.delivery_timestamp_ms is not None or message.delay_level is not None
        if message.message_type != "DELAY":
            if timed:
                raise InvalidArgumentError(
                    "system_attribute: delivery_timestamp / delay_level need message_type DELAY, "
                    f"this one is {message.message_type}"
                )
            return None
        if not timed:
            raise InvalidArgumentError("system_attribute: a DELAY message needs delivery_timestamp or delay_level")
        if message.delivery_timestamp_ms is not None:
            return max(1, message.delivery_timestamp_ms)
        assert message.delay_level is not None
        return self.now_ms() + mapping.delay_level_ms(message.delay_level)


def check_and_decode(message: OutgoingMessage) -> bytes:
    """Validate what SendMessage needs before anything is stored and return the body to store.
    Errors: InvalidArgumentError: no message_id (definition.proto: "if message_id is empty, the send
    message request will be aborted with status INVALID_ARGUMENT"), a reserved user attribute, a
    digest mismatch, a body that is not its encoding, a FIFO message without a message_group or
    another type with one."""
    if not message.message_id:
        raise InvalidArgumentError("system_attribute.message_id: required (client-generated, unique)")
    if message.message_type == "FIFO" and not message.message_group:
        raise InvalidArgumentError("system_attribute.message_group: required for a FIFO message (its order group)")
    if message.message_type != "FIFO" and message.message_group:
        raise InvalidArgumentError(
            f"system_attribute.message_group: only FIFO messages have one, this one is {message.message_type}"
        )
    mapping.check_user_attributes(message.user_attributes)
    if message.checksum and not mapping.checksum_matches(message.digest_type, message.checksum, message.body):
        raise InvalidArgumentError(
            f"body_digest: the {message.digest_type} checksum {message.checksum!r} does not match the body "
            f"({len(message.body)} bytes as sent)"
        )
    return mapping.decoded_body(message.body_encoding, message.body)


def headers_of(message: OutgoingMessage, deliver_at_ms: int | None) -> list[tuple[str, str]]:
    """The Weir headers of a message: x-rocketmq-* system attributes (only those set), then the user
    attributes under their own names."""
    headers = [(mapping.HEADER_MESSAGE_TYPE, message.message_type)]
    if message.tag:
        headers.append((mapping.HEADER_TAG, message.tag))
    if message.keys:
        headers.append((mapping.HEADER_KEYS, mapping.keys_header(message.keys)))
    if message.born_timestamp_ms:
        headers.append((mapping.HEADER_BORN_TIMESTAMP_MS, str(message.born_timestamp_ms)))
    if message.born_host:
        headers.append((mapping.HEADER_BORN_HOST, message.born_host))
    if deliver_at_ms is not None:
        headers.append((mapping.HEADER_DELIVERY_TIMESTAMP_MS, str(deliver_at_ms)))
    if message.producer_group is not None:
        namespace, name = message.producer_group
        headers.append((mapping.HEADER_PRODUCER_GROUP, mapping.weir_name_of(namespace, name, "producer_group")))
    if message.trace_context:
        headers.append((mapping.HEADER_TRACE_CONTEXT, message.trace_context))
    if message.message_group:
        headers.append((mapping.HEADER_MESSAGE_GROUP, message.message_group))
    if message.recovery_period_ms is not None:
        headers.append((mapping.HEADER_RECOVERY_PERIOD_MS, str(message.recovery_period_ms)))
    headers.extend(sorted(message.user_attributes.items()))
    return headers
