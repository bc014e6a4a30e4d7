"""RocketMQ v2's Telemetry stream (service.proto: `rpc Telemetry(stream TelemetryCommand) returns
(stream TelemetryCommand)`), one per client and endpoint: the client sends its Settings at start (and
again every few minutes, and when it learns new topics) and the server answers each with its own
Settings; over the same stream the server sends a producer RecoverOrphanedTransactionCommand for
each of its topics' transactions that stayed unresolved past their recovery period (RocketMQ's
transaction check), which the producer answers with EndTransaction (source SOURCE_SERVER_CHECK).

The settings answered: the client's own, with
- Publishing (a producer): max_body_size MAX_BODY_BYTES, validate_message_type true;
- backoff_policy: a producer's send retries (3 attempts, exponential 10 ms .. 1 s, x2), a consumer's
  redelivery (max_attempts = the group's max delivery attempts, 16 unless its consumer says
  otherwise; customized backoff = the gateway's retry delays, WEIR_GATEWAY_ROCKETMQ_RETRY_DELAYS_MS);
- Subscription (a consumer): the client's, with receive_batch_size 32 and long_polling_timeout 30 s
  when it set none. Its `fifo` is remembered for the group (a group whose consumer is created
  after it hands out one message of a partition at a time, as the v1 door's fifo_flag does).
A Settings that does not parse (a bad name, filter expression or client type) is answered with a
BAD_REQUEST status and remembered nowhere.

Orphan checks reuse the v1 door's `Transactions.poll` (bounded by WEIR_GATEWAY_ROCKETMQ_MAX_WAITING_POLLS
across both doors): a producer's stream keeps one poll waiting on the topics of its last Settings.
Commands out of one stream wait in a queue of at most OUTGOING_LIMIT (the checks then wait too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterable, AsyncIterator

from google.protobuf import duration_pb2
from weir.errors import InvalidArgumentError, WeirError

from weir_gateway.rocketmq_v1 import mapping
from weir_gateway.rocketmq_v1.core import RocketMQCore
from weir_gateway.rocketmq_v1.errors import TooManyPollsError
from weir_gateway.rocketmq_v1.receiving import GroupTraits, filter_of
from weir_gateway.rocketmq_v2.encoding import enum_name, message_of, ok_status, status_of_error
from weir_gateway.rocketmq_v2.pb import definition_pb2, service_pb2

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 4 * 1024 * 1024  # RocketMQ's default max message body (its clients refuse larger ones)
OUTGOING_LIMIT = 16  # commands queued for one client's stream
PRODUCER_SEND_ATTEMPTS = 3
RECEIVE_BATCH_SIZE = 32
LONG_POLLING_TIMEOUT_S = 30
POLL_RETRY_S = 1.0  # wait after a refused or failed orphan poll
CONSUMER_TYPES = ("PUSH_CONSUMER", "SIMPLE_CONSUMER", "PULL_CONSUMER")


def resource_namespace(resource: definition_pb2.Resource) -> str:
    """The resource's namespace (RocketMQ 5's clients set it in every Resource; the x-mq-namespace
    metadata is not read, so what the auth interceptor checks is what is served)."""
    return resource.resource_namespace


def streams_of(settings: definition_pb2.Settings) -> list[str]:
    """The Weir streams of a producer's Publishing topics. Errors: InvalidArgumentError (bad names)."""
    return [mapping.weir_name_of(resource_namespace(topic), topic.name) for topic in settings.publishing.topics]


class TelemetrySession:
    """One client's Telemetry stream over the shared `core` (its transactions and group traits)."""

    def __init__(self, core: RocketMQCore) -> None:
        self.core = core
        self.outgoing: asyncio.Queue[service_pb2.TelemetryCommand | None] = asyncio.Queue(OUTGOING_LIMIT)
        self.checker: asyncio.Task[None] | None = None
        self.checked_streams: frozenset[str] = frozenset()

    async def run(
        self, commands: AsyncIterable[service_pb2.TelemetryCommand]
    ) -> AsyncIterator[service_pb2.TelemetryCommand]:
        """The server's commands for the client's `commands`, until the client ends its side."""
        reader = asyncio.get_running_loop().create_task(self._read(commands), name="rocketmq-v2-telemetry-read")
        try:
            while (command := await self.outgoing.get()) is not None:
                yield command
        finally:
            for task in (reader, self.checker):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task

    async def _read(self, commands: AsyncIterable[service_pb2.TelemetryCommand]) -> None:
        try:
            async for command in commands:
                if command.WhichOneof("command") == "settings":
                    await self.outgoing.put(self.on_settings(command.settings))
                else:  # thread stack traces, verify results: answers to commands this server never sends
                    logger.debug("rocketmq v2 telemetry: ignoring %s", command.WhichOneof("command"))
        finally:
            await self.outgoing.put(None)

    def on_settings(self, settings: definition_pb2.Settings) -> service_pb2.TelemetryCommand:
        """The answer to the client's Settings (see the module docstring); a producer's topics start
        (or move) its orphan checks."""
        try:
            client_type = enum_name(definition_pb2.ClientType, settings.client_type, "settings.client_type")
            answer = self.answer_settings(client_type, settings)
            if client_type == "PRODUCER":
                self._check_orphans(frozenset(streams_of(settings)))
        except WeirError as error:
            return service_pb2.TelemetryCommand(status=status_of_error(error))
        return service_pb2.TelemetryCommand(status=ok_status(), settings=answer)

    def answer_settings(self, client_type: str, settings: definition_pb2.Settings) -> definition_pb2.Settings:
        """The server's Settings for a client of `client_type` that sent `settings`. Errors:
        InvalidArgumentError (unspecified client type, bad names or filter expressions)."""
        answer = definition_pb2.Settings()
        answer.CopyFrom(settings)
        answer.metric.CopyFrom(definition_pb2.Metric(on=False))
        if client_type == "PRODUCER":
            streams_of(settings)  # the names must parse
            answer.publishing.max_body_size = MAX_BODY_BYTES
            answer.publishing.validate_message_type = True
            backoff = answer.backoff_policy
            backoff.Clear()
            backoff.max_attempts = PRODUCER_SEND_ATTEMPTS
            backoff.exponential_backoff.initial.CopyFrom(duration_pb2.Duration(nanos=10_000_000))
            backoff.exponential_backoff.max.CopyFrom(duration_pb2.Duration(seconds=1))
            backoff.exponential_backoff.multiplier = 2.0
        elif client_type in CONSUMER_TYPES:
            self._remember_subscription(settings.subscription)
            subscription = answer.subscription
            if not subscription.receive_batch_size:
                subscription.receive_batch_size = RECEIVE_BATCH_SIZE
            if not subscription.HasField("long_polling_timeout"):
                subscription.long_polling_timeout.CopyFrom(duration_pb2.Duration(seconds=LONG_POLLING_TIMEOUT_S))
            backoff = answer.backoff_policy
            backoff.Clear()
            backoff.max_attempts = mapping.DEFAULT_MAX_DELIVERY_ATTEMPTS
            for delay_ms in self.core.receiver.retry_delays_ms:
                backoff.customized_backoff.next.add().FromMilliseconds(delay_ms)
        else:
            raise InvalidArgumentError(
                f"settings.client_type: {client_type} is not served here (PRODUCER or a consumer)"
            )
        return answer

    def _remember_subscription(self, subscription: definition_pb2.Subscription) -> None:
        """A consumer group's traits (FIFO or not) for when its consumer is created; every filter
        expression and name is checked before anything is remembered. Errors: InvalidArgumentError."""
        if not subscription.group.name:
            raise InvalidArgumentError("settings.subscription.group: a consumer's settings name its consumer group")
        namespace = resource_namespace(subscription.group)
        weir_group = mapping.weir_name_of(namespace, subscription.group.name, "group")
        for entry in subscription.subscriptions:
            mapping.weir_name_of(resource_namespace(entry.topic), entry.topic.name)
            filter_type = enum_name(definition_pb2.FilterType, entry.expression.type, "expression.type")
            filter_of("TAG" if filter_type == "FILTER_TYPE_UNSPECIFIED" else filter_type, entry.expression.expression)
        self.core.receiver.groups.remember(weir_group, GroupTraits(fifo=subscription.fifo))

    def _check_orphans(self, streams: frozenset[str]) -> None:
        """Keep one orphan poll waiting on `streams` (none when empty), replacing the previous one."""
        if streams == self.checked_streams and self.checker is not None and not self.checker.done():
            return
        if self.checker is not None:
            self.checker.cancel()
        self.checked_streams = streams
        self.checker = None
        if streams:
            self.checker = asyncio.get_running_loop().create_task(
                self._orphan_loop(streams), name="rocketmq-v2-orphan-checks"
            )

    async def _orphan_loop(self, streams: frozenset[str]) -> None:
        """Until the stream ends: wait for an orphaned transaction on `streams`, send its check."""
        while True:
            try:
                orphan = await self.core.transactions.poll("", streams)
            except (TooManyPollsError, WeirError) as error:
                logger.info("rocketmq v2 orphan checks wait: %s", error)
                await asyncio.sleep(POLL_RETRY_S)
                continue
            if orphan is None:
                continue
            message = message_of(orphan.stream, orphan.record)
            command = service_pb2.RecoverOrphanedTransactionCommand(
                message=message, transaction_id=orphan.transaction_id
            )
            await self.outgoing.put(service_pb2.TelemetryCommand(recover_orphaned_transaction_command=command))
