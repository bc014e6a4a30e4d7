"""Subscriptions: each message of a stream's consumer group becomes one invocation (Restate's
Kafka subscriptions, over a Weir stream).

A message is acknowledged once its invocation is admitted (its record stored); the invocation then
lives in the invoker's own store, as Restate's ingress does. The invocation id is derived from
(subscription, stream, partition, seq): a message delivered again (its ack was lost) is the same
invocation, admitted once; a message for a workflow's run handler names the workflow's one run for
its key (workflow.py), so a second message of a key runs nothing. For a virtual object or a
workflow the invocation key is the message key (UTF-8), and admission keeps partition order, so
one key's invocations run in partition order. Headers given to the handler: the message's own,
plus `weir-stream`, `weir-partition`, `weir-seq` and `weir-subject`.

When an invocation of a subscription ends with a terminal failure and the subscription names a
dead_letter_stream, the message is published there (same subject, key, payload and headers, plus
weir-invoker-failure-code, weir-invoker-failure-message and weir-invoker-invocation); with a
reply_stream, each output is published there. Both publishes carry a message id derived from the
invocation, so a retried one is stored once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from weir.client import consumer_config
from weir.cluster import Client
from weir.consuming import GroupConsumer
from weir.errors import NoSuchHandlerError, WeirError
from weir.message import Message
from weir.v1 import invoker_pb2, types_pb2

from weir_invoker import ids, metrics, workflow
from weir_invoker.runtime import Invoker

logger = logging.getLogger(__name__)

ACK_WAIT_MS = 60_000  # a fetched message waits at most this long for admission (admission may wait for room)
MAX_DELIVER = 1_000_000  # never dropped for being delivered often: admission is idempotent
ADMIT_RETRY_S = 0.5
FAILURE_CODE_HEADER = "weir-invoker-failure-code"
FAILURE_MESSAGE_HEADER = "weir-invoker-failure-message"
INVOCATION_HEADER = "weir-invoker-invocation"
SOURCE_HEADERS = ("weir-stream", "weir-partition", "weir-seq", "weir-subject")


class Ingress:
    def __init__(self, invoker: Invoker, client: Client, member_prefix: str) -> None:
        self.invoker = invoker
        self.client = client
        self.member_prefix = member_prefix
        self.consumers: dict[str, GroupConsumer] = {}
        invoker.on_finished.append(self.on_finished)

    def start(self, subscription: invoker_pb2.Subscription) -> None:
        if subscription.id in self.consumers:
            return
        config = consumer_config(
            subscription.consumer,
            filter_subject=subscription.filter_subject,
            deliver_policy="new" if subscription.start == "latest" else "all",
            ack_wait_ms=ACK_WAIT_MS,
            max_deliver=MAX_DELIVER,
        )
        consumer = self.client.group_consumer(
            subscription.stream,
            subscription.consumer,
            None,
            batch_handler=lambda messages: self._admit(subscription, messages),
            client_id=f"{self.member_prefix}-{subscription.id}",
            consumer_config=config,
            batch_size=100,
        )
        self.consumers[subscription.id] = consumer.start()

    async def stop(self, subscription_id: str) -> None:
        consumer = self.consumers.pop(subscription_id, None)
        if consumer is not None:
            await consumer.stop()

    async def stop_all(self) -> None:
        for subscription_id in list(self.consumers):
            await self.stop(subscription_id)

    async def _admit(self, subscription: invoker_pb2.Subscription, messages: list[Message]) -> None:
        """Admit a fetched batch's invocations (stored together, started in partition order),
        retrying a store that is briefly unavailable, so the partition's order holds (a refused
        batch would be redelivered after later messages)."""
        records = [invocation_for(subscription, message) for message in messages]
        try:
            target = self.invoker.registry.target(subscription.service, subscription.handler)
        except NoSuchHandlerError:
            target = None  # no deployment serves it now: admitted all the same, run once one does
        for record in records:
            record.id = workflow.invocation_id(target, record.key, record.id) if target else record.id
        while True:
            try:
                results = await self.invoker.admit_many(records)
                metrics.ADMITTED.labels("subscription").inc(sum(created for _, created in results))
                return
            except WeirError as error:
                if not error.retryable or not self.invoker.fence.allowed():
                    raise  # refused, or this invoker lost its lease: the batch is handed back
                logger.warning("subscription %s: admitting a batch failed: %s", subscription.id, error)
                await asyncio.sleep(ADMIT_RETRY_S)

    async def on_finished(self, record: invoker_pb2.Invocation) -> None:
        """Dead-letter a terminal failure, publish an output, as the record's subscription says."""
        subscription = self.invoker.registry.subscriptions.get(record.subscription_id)
        if subscription is None:
            return
        headers = [(header.key, header.value) for header in record.headers]
        if record.WhichOneof("result") == "failure" and subscription.dead_letter_stream:
            headers += [
                (FAILURE_CODE_HEADER, str(record.failure.code)),
                (FAILURE_MESSAGE_HEADER, record.failure.message[:1024]),
                (INVOCATION_HEADER, record.id),
            ]
            await self._publish(subscription.dead_letter_stream, record, record.input, headers, "dead-letter")
            metrics.DEAD_LETTERS.inc()
        elif record.WhichOneof("result") == "output" and subscription.reply_stream:
            await self._publish(
                subscription.reply_stream, record, record.output, [(INVOCATION_HEADER, record.id)], "reply"
            )

    async def _publish(
        self, stream: str, record: invoker_pb2.Invocation, payload: bytes, headers: list[tuple[str, str]], what: str
    ) -> None:
        self.invoker.fence.check()
        with contextlib.suppress(WeirError) if what == "reply" else contextlib.nullcontext():
            await self.client.publish(
                stream,
                record.source_subject or "invoker",
                payload,
                key=record.key.encode() or None,
                headers=headers,
                msg_id=f"{record.id}/{what}",
                ack_level="all",
            )


def invocation_for(subscription: invoker_pb2.Subscription, message: Message) -> invoker_pb2.Invocation:
    """The invocation a subscription's message becomes (pure)."""
    headers = [types_pb2.Header(key=key, value=value) for key, value in sorted(message.headers.items())]
    source = (message.stream, str(message.partition), str(message.seq), message.subject)
    headers += [types_pb2.Header(key=key, value=value) for key, value in zip(SOURCE_HEADERS, source, strict=True)]
    return invoker_pb2.Invocation(
        id=ids.for_message(subscription.id, message.stream, message.partition, message.seq),
        service=subscription.service,
        handler=subscription.handler,
        key=(message.key or b"").decode("utf-8", "replace"),
        input=message.payload,
        headers=headers,
        subscription_id=subscription.id,
        source_stream=message.stream,
        source_partition=message.partition,
        source_seq=message.seq,
        source_subject=message.subject,
        created_at_ms=message.timestamp_ms,
    )
