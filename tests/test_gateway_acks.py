"""The RocketMQ front door's ack coalescer against a real cluster: concurrent acks of one partition
share AckBatch calls, and each caller still gets its own delivery's result."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from weir import Client, consumer_config, stream_config
from weir_gateway.acks import AckCoalescer


class CountingAcks:
    """The cluster client's ack_batch, counting the batches it sends."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.batch_sizes: list[int] = []

    async def ack_batch(
        self, stream: str, consumer: str, partition: int, seqs: Sequence[int], deliver_counts: Sequence[int] = ()
    ) -> list[str]:
        self.batch_sizes.append(len(seqs))
        return await self.client.ack_batch(stream, consumer, partition, seqs, deliver_counts)


async def test_concurrent_acks_share_batches_and_keep_their_own_results(weir_client: Client, stream_name: str) -> None:
    await weir_client.create_stream(stream_config(stream_name))
    await weir_client.create_consumer(stream_name, consumer_config("c", ack_wait_ms=60_000))
    for number in range(50):
        await weir_client.publish(stream_name, "s.x", b"%d" % number)
    delivered = await weir_client.fetch(stream_name, "c", 0, batch_size=50)
    assert len(delivered) == 50
    counting = CountingAcks(weir_client)
    coalescer = AckCoalescer(counting)
    stale = delivered[7]
    results = await asyncio.gather(
        *(
            coalescer.ack(
                stream_name,
                "c",
                0,
                message.seq,
                message.deliver_count + 1 if message is stale else message.deliver_count,
            )
            for message in delivered
        )
    )
    assert results == ["not_pending" if message is stale else "ok" for message in delivered]
    assert (
        sum(counting.batch_sizes) == 50 and len(counting.batch_sizes) < 10
    )  # the first ack goes alone, the rest wait and share
    info = await weir_client.consumer_info(stream_name, "c")
    assert info.num_ack_pending == 1  # only the stale one's delivery is still pending
