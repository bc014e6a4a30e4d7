"""Publish and read through a real node over real gRPC."""

from __future__ import annotations

from weir.client import NodeClient, stream_config


async def test_publish_then_read(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name, subjects=["orders.>"]))
    ack = await client.publish(stream_name, "orders.eu", b"hello", headers={"h": "v"})
    assert (ack.partition, ack.seq) == (0, 1)
    message = await client.get_message(stream_name, 0, 1)
    assert message.subject == "orders.eu"
    assert message.payload == b"hello"
    assert [(h.key, h.value) for h in message.headers] == [("h", "v")]
    assert message.ts_ms > 0
