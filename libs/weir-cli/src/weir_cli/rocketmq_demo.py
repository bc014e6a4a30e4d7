"""`weir demo`'s RocketMQ round trips through the gateway. v1, as a RocketMQ v1 client would: send
NORMAL messages, a DELAY message and a TRANSACTION message (committed with EndTransaction), then
receive every one with a simple consumer (ReceiveMessage per partition, AckMessage per receipt
handle) and check each came back once. v2 (RocketMQ 5's `apache.rocketmq.v2.MessagingService`, on
the same port), as RocketMQ 5's simple consumer would: send NORMAL messages of a tag of their own,
receive them with the server-streaming ReceiveMessage (a group of its own filtering on that tag, so
the v1 messages before them are skipped) and acknowledge each with AckMessage."""

from __future__ import annotations

import asyncio
import time
import uuid
import zlib
from typing import Any

from weir import tls as weir_tls

from weir_cli.output import progress

TOPIC = "demo-rocketmq"
PARTITIONS = 2
V2_TAG = "demo-v2"  # the v2 leg's messages: its group filters on it, skipping the v1 leg's


async def rocketmq_round_trip(address: str, normal_messages: int = 20, v2_messages: int = 10) -> dict[str, Any]:
    """Returns the v1 counts, the v2 leg's under `v2`, and `verified` (every sent message received
    once, the delayed one no earlier than its time, and every v2 message received and acked once).
    The stream `demo-rocketmq` must exist with allow_scheduled_messages."""
    from weir_gateway.rocketmq_v1.pb import definition_pb2 as definition
    from weir_gateway.rocketmq_v1.pb import service_pb2 as service
    from weir_gateway.rocketmq_v1.pb import service_pb2_grpc as service_grpc

    metadata = [("x-mq-client-id", "weir-demo"), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v1")]

    def message(body: bytes, message_type: Any, **system: Any) -> Any:
        digest = definition.Digest(type=definition.DigestType.CRC32, checksum=format(zlib.crc32(body), "X"))
        attributes = definition.SystemAttribute(
            message_id=uuid.uuid4().hex.upper(), tag="demo", body_digest=digest, message_type=message_type, **system
        )
        return definition.Message(topic=definition.Resource(name=TOPIC), body=body, system_attribute=attributes)

    async with weir_tls.aio_channel(address) as channel:
        stub = service_grpc.MessagingServiceStub(channel)

        async def send(sent: Any) -> Any:
            response = await stub.SendMessage(service.SendMessageRequest(message=sent), metadata=metadata, timeout=10)
            if response.common.status.code != 0:
                raise RuntimeError(f"SendMessage: {response.common.status.message}")
            return response

        expected = {b"normal %d" % index for index in range(normal_messages)} | {b"delayed", b"transaction"}
        for index in range(normal_messages):
            await send(message(b"normal %d" % index, definition.MessageType.NORMAL))
        due_ms = time.time_ns() // 1_000_000 + 500
        delayed = message(b"delayed", definition.MessageType.DELAY)
        delayed.system_attribute.delivery_timestamp.FromMilliseconds(due_ms)
        await send(delayed)
        held = message(b"transaction", definition.MessageType.TRANSACTION)
        sent = await send(held)
        end = service.EndTransactionRequest(
            group=definition.Resource(name="demo-producers"),
            message_id=held.system_attribute.message_id,
            transaction_id=sent.transaction_id,
            resolution=service.EndTransactionRequest.TransactionResolution.COMMIT,
        )
        ended = await stub.EndTransaction(end, metadata=metadata, timeout=10)
        if ended.common.status.code != 0:
            raise RuntimeError(f"EndTransaction: {ended.common.status.message}")
        progress(f"RocketMQ v1: sent {normal_messages} normal, 1 delayed (500 ms), 1 transactional (committed)")
        received = await _receive_all(stub, service, definition, metadata, len(expected))
        progress(f"RocketMQ v1: received and acknowledged {len(received)} messages through the gateway")
        v2 = await _v2_round_trip(channel, v2_messages)
    bodies = [body for body, _ in received]
    delayed_on_time = all(arrived_ms >= due_ms for body, arrived_ms in received if body == b"delayed")
    verified = sorted(bodies) == sorted(expected) and delayed_on_time and v2["verified"]
    return {"sent": len(expected), "received": len(bodies), "v2": v2, "verified": verified}


async def _v2_round_trip(channel: Any, count: int) -> dict[str, Any]:
    """The v2 leg over `channel` (the v1 leg's: one port for both): `count` NORMAL messages sent one
    a SendMessage, then received and acked from every queue until all came or 30 s passed. Returns
    the counts and `verified` (each sent message received and acked once)."""
    from weir_gateway.rocketmq_v2.pb import definition_pb2 as definition
    from weir_gateway.rocketmq_v2.pb import service_pb2 as service
    from weir_gateway.rocketmq_v2.pb import service_pb2_grpc as service_grpc

    stub = service_grpc.MessagingServiceStub(channel)
    metadata = [("x-mq-client-id", "weir-demo-v2"), ("x-mq-language", "JAVA"), ("x-mq-protocol", "v2")]
    topic = definition.Resource(name=TOPIC)
    expected = [b"v2 normal %d" % index for index in range(count)]
    for body in expected:
        system = definition.SystemProperties(
            tag=V2_TAG,
            message_id=uuid.uuid4().hex.upper(),
            body_digest=definition.Digest(type=definition.CRC32, checksum=format(zlib.crc32(body), "08X")),
            body_encoding=definition.IDENTITY,
            message_type=definition.NORMAL,
        )
        system.born_timestamp.GetCurrentTime()
        sent = definition.Message(topic=topic, system_properties=system, body=body)
        response = await stub.SendMessage(service.SendMessageRequest(messages=[sent]), metadata=metadata, timeout=10)
        if response.status.code != definition.OK:
            raise RuntimeError(f"v2 SendMessage: {response.status.message}")
    progress(f"RocketMQ v2 (RocketMQ 5): sent {count} normal messages through the same gateway port")
    received, acked = await _v2_receive_all(stub, service, definition, metadata, count)
    progress(f"RocketMQ v2 (RocketMQ 5): received {len(received)} with ReceiveMessage, acknowledged {acked}")
    verified = sorted(received) == sorted(expected) and acked == count
    return {"sent": count, "received": len(received), "acked": acked, "verified": verified}


async def _v2_receive_all(
    stub: Any, service: Any, definition: Any, metadata: Any, count: int
) -> tuple[list[bytes], int]:
    """The bodies of the v2 messages received from every queue, each acked (one AckMessage entry
    a message), until `count` came or 30 s passed, and how many acks were OK."""
    group, topic = definition.Resource(name="demo-consumers-v2"), definition.Resource(name=TOPIC)
    received: list[bytes] = []
    acked = 0
    deadline = time.monotonic() + 30
    while len(received) < count and time.monotonic() < deadline:
        for partition in range(PARTITIONS):
            request = service.ReceiveMessageRequest(
                group=group,
                message_queue=definition.MessageQueue(topic=topic, id=partition),
                filter_expression=definition.FilterExpression(type=definition.TAG, expression=V2_TAG),
                batch_size=32,
                auto_renew=False,
            )
            request.invisible_duration.FromMilliseconds(30_000)
            request.long_polling_timeout.FromMilliseconds(200)
            messages = []
            async for answer in stub.ReceiveMessage(request, metadata=metadata, timeout=10):
                if answer.HasField("message"):
                    messages.append(answer.message)
                elif answer.HasField("status") and answer.status.code not in (
                    definition.OK,
                    definition.MESSAGE_NOT_FOUND,
                ):
                    raise RuntimeError(f"v2 ReceiveMessage: {answer.status.message}")
            acks = [
                service.AckMessageRequest(
                    group=group,
                    topic=topic,
                    entries=[
                        service.AckMessageEntry(
                            message_id=message.system_properties.message_id,
                            receipt_handle=message.system_properties.receipt_handle,
                        )
                    ],
                )
                for message in messages
            ]
            answers = await asyncio.gather(*(stub.AckMessage(ack, metadata=metadata, timeout=10) for ack in acks))
            received += [message.body for message in messages]
            acked += sum(answer.status.code == definition.OK for answer in answers)
    return received, acked


async def _receive_all(stub: Any, service: Any, definition: Any, metadata: Any, count: int) -> list[tuple[bytes, int]]:
    """(body, arrival ms) of messages received and acked from every partition until `count` came or
    30 s passed."""
    received: list[tuple[bytes, int]] = []
    deadline = time.monotonic() + 30
    while len(received) < count and time.monotonic() < deadline:
        for partition in range(PARTITIONS):
            request = service.ReceiveMessageRequest(
                group=definition.Resource(name="demo-consumers"),
                client_id="weir-demo",
                partition=definition.Partition(topic=definition.Resource(name=TOPIC), id=partition),
                filter_expression=definition.FilterExpression(type=definition.FilterType.TAG, expression="demo"),
                batch_size=32,
            )
            request.invisible_duration.FromMilliseconds(30_000)
            request.await_time.FromMilliseconds(200)
            response = await stub.ReceiveMessage(request, metadata=metadata, timeout=10)
            arrived_ms = time.time_ns() // 1_000_000
            acks = []
            for message in response.messages:
                received.append((message.body, arrived_ms))
                ack = service.AckMessageRequest(
                    group=definition.Resource(name="demo-consumers"),
                    topic=definition.Resource(name=TOPIC),
                    client_id="weir-demo",
                    receipt_handle=message.system_attribute.receipt_handle,
                    message_id=message.system_attribute.message_id,
                )
                acks.append(stub.AckMessage(ack, metadata=metadata, timeout=10))
            await asyncio.gather(*acks)
    return received
