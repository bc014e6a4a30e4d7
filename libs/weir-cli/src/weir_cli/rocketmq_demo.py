"""`weir demo`'s RocketMQ v1 round trip: through the gateway, as a RocketMQ v1 client would, send
NORMAL messages, a DELAY message and a TRANSACTION message (committed with EndTransaction), then
receive every one with a simple consumer (ReceiveMessage per partition, AckMessage per receipt
handle) and check each came back once."""

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


async def rocketmq_round_trip(address: str, normal_messages: int = 20) -> dict[str, Any]:
    """Returns the counts and `verified` (every sent message received once, the delayed one no
    earlier than its time). The stream `demo-rocketmq` must exist with allow_scheduled_messages."""
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
    bodies = [body for body, _ in received]
    delayed_on_time = all(arrived_ms >= due_ms for body, arrived_ms in received if body == b"delayed")
    progress(f"RocketMQ v1: received and acknowledged {len(bodies)} messages through the gateway")
    verified = sorted(bodies) == sorted(expected) and delayed_on_time
    return {"sent": len(expected), "received": len(bodies), "verified": verified}


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
