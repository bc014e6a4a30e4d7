"""What RocketMQ's receive needs from the core: an invisible duration chosen per fetch (not per
consumer), and settles bound to one delivery, so that a receipt handle from an earlier delivery of a
redelivered message is stale (not_pending) instead of settling the newer one. In-process on a manual
clock, then over real gRPC."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from weir.client import NodeClient, consumer_config, stream_config
from weir.errors import InvalidArgumentError, InvalidConfigError, NotPendingError
from weir.v1 import streams_pb2
from weir_partition_node.clock import ManualClock
from weir_partition_node.node import Node
from weir_partition_node.settings import NodeSettings

T0 = 1_700_000_000_000
ACK_WAIT_MS = 30_000


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
async def core(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Node]:
    node = await Node.open(
        NodeSettings(node_id="binding", data_dir=tmp_path / "data", retention_sweep_interval_ms=3_600_000), clock=clock
    )
    await node.admin.create_stream(stream_config("s").to_proto())
    await node.consumers.create_consumer("s", consumer_config("c", ack_wait_ms=ACK_WAIT_MS).to_proto())
    entries = [streams_pb2.PublishEntry(subject="s.x", payload=b"%d" % n) for n in range(3)]
    await node.publisher.publish("s", entries, streams_pb2.ACK_LEVEL_LEADER, batch=True)
    yield node
    await node.close()


async def fetch(core: Node, batch: int = 10, ack_wait_ms: int = 0) -> list[tuple[int, int]]:
    deliveries = await core.consumers.fetch("s", "c", 0, batch_size=batch, ack_wait_ms=ack_wait_ms)
    return [(delivery.seq, delivery.deliver_count) for delivery in deliveries]


async def test_each_fetch_chooses_how_long_its_messages_stay_invisible(core: Node, clock: ManualClock) -> None:
    assert await fetch(core, batch=1, ack_wait_ms=1_000) == [(1, 1)]
    assert await fetch(core, batch=1) == [(2, 1)]  # the consumer's 30 s
    clock.advance(1_000)
    assert await fetch(core, batch=1, ack_wait_ms=60_000) == [(1, 2)]  # redelivered, now for 60 s
    clock.advance(ACK_WAIT_MS)
    assert await fetch(core) == [(2, 2), (3, 1)]
    clock.advance(60_000 - ACK_WAIT_MS)
    assert (1, 3) in await fetch(core)
    with pytest.raises(InvalidArgumentError, match="ack_wait_ms"):
        await core.consumers.fetch("s", "c", 0, batch_size=1, ack_wait_ms=8 * 24 * 3_600_000)


async def test_a_settle_bound_to_an_earlier_delivery_is_stale(core: Node, clock: ManualClock) -> None:
    assert await fetch(core, batch=3, ack_wait_ms=1_000) == [(1, 1), (2, 1), (3, 1)]
    clock.advance(1_000)
    assert await fetch(core, batch=3) == [(1, 2), (2, 2), (3, 2)]  # every handle of delivery 1 is now stale
    for settle in (
        core.consumers.ack("s", "c", 0, 1, deliver_count=1),
        core.consumers.nak("s", "c", 0, 1, 0, deliver_count=1),
        core.consumers.term("s", "c", 0, 1, deliver_count=1),
    ):
        with pytest.raises(NotPendingError, match="stale receipt handle"):
            await settle
    results = await core.consumers.ack_batch("s", "c", 0, [1, 2, 3], [1, 2, 0])  # stale, this delivery, any delivery
    assert [(seq, code) for seq, code, _ in results] == [(1, "not_pending"), (2, "ok"), (3, "ok")]
    assert "delivered again since" in results[0][2]
    await core.consumers.nak("s", "c", 0, 1, 0, deliver_count=2)  # the current delivery settles
    assert await fetch(core) == [(1, 3)]
    await core.consumers.ack("s", "c", 0, 1, deliver_count=3)
    with pytest.raises(NotPendingError, match="already acknowledged"):
        await core.consumers.ack("s", "c", 0, 1, deliver_count=3)
    with pytest.raises(InvalidArgumentError, match="one per seq"):
        await core.consumers.ack_batch("s", "c", 0, [1, 2], [1])


async def test_receipt_bindings_over_grpc(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name))
    await client.create_consumer(stream_name, consumer_config("c", ack_wait_ms=60_000))
    await client.publish(stream_name, "s.x", b"one")
    (first,) = await client.fetch(stream_name, "c", 0, batch_size=1, ack_wait_ms=200)
    (second,) = await client.fetch(stream_name, "c", 0, batch_size=1, max_wait_ms=5_000, ack_wait_ms=60_000)
    assert (first.deliver_count, second.deliver_count) == (1, 2)  # redelivered after 200 ms, not 60 s
    with pytest.raises(NotPendingError):
        await client.ack(stream_name, "c", 0, first.seq, deliver_count=first.deliver_count)
    (result,) = await client.ack_batch(stream_name, "c", 0, [first.seq], [first.deliver_count])
    assert result.result_code == "not_pending"
    await client.ack(stream_name, "c", 0, second.seq, deliver_count=second.deliver_count)


async def test_seq_at_time_finds_the_first_message_stored_at_or_after_a_time(
    client: NodeClient, stream_name: str
) -> None:
    """RocketMQ's QueryOffset(TIME_POINT): over real gRPC, on publisher-set times."""
    await client.create_stream(stream_config(stream_name))
    for ts_ms in (1_000, 2_000, 2_000, 3_000):
        await client.publish(stream_name, "s.x", b"x", ts_ms=ts_ms)
    assert [await client.seq_at_time(stream_name, 0, t) for t in (0, 1_000, 1_001, 2_000, 3_000, 3_001)] == [
        1,
        1,
        2,
        2,
        4,
        5,
    ]
    with pytest.raises(InvalidArgumentError, match="time_ms"):
        await client.seq_at_time(stream_name, 0, -1)


async def test_a_consumer_dead_letters_a_message_now_in_one_step(client: NodeClient, stream_name: str) -> None:
    """RocketMQ's ForwardMessageToDeadLetterQueue: Term with dead_letter moves the delivery under the
    consumer's dead_letter_subject in one commit (no copy-then-ack window), bound to its delivery."""
    await client.create_stream(stream_config(stream_name))
    await client.create_consumer(stream_name, consumer_config("c", filter_subject="s.>", dead_letter_subject="dlq.c"))
    await client.create_consumer(stream_name, consumer_config("no-dlq"))
    await client.publish(stream_name, "s.x", b"poison", msg_id="poison-1", key=b"k")
    (delivered,) = await client.fetch(stream_name, "c", 0, batch_size=1)
    with pytest.raises(NotPendingError):
        await client.term(stream_name, "c", 0, delivered.seq, deliver_count=7, dead_letter=True)
    await client.term(stream_name, "c", 0, delivered.seq, deliver_count=delivered.deliver_count, dead_letter=True)
    read = await client.read_messages(stream_name, 0)
    dead = [message for message in read.messages if message.subject == "dlq.c"]
    assert len(dead) == 1 and (dead[0].payload, dead[0].key, dead[0].msg_id) == (b"poison", b"k", "")
    dead_headers = {header.key: header.value for header in dead[0].headers}
    assert (dead_headers["x-weir-dlq-msg-id"], dead_headers["x-weir-dlq-reason"]) == ("poison-1", "consumer")
    info = await client.consumer_info(stream_name, "c")
    assert (info.dead_lettered_total, info.num_ack_pending) == (1, 0)
    (other,) = await client.fetch(stream_name, "no-dlq", 0, batch_size=1)
    with pytest.raises(InvalidConfigError, match="no dead_letter_subject"):
        await client.term(stream_name, "no-dlq", 0, other.seq, dead_letter=True)
