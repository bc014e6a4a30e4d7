"""Delayed delivery in the core (scheduled.py): a message published with delay_ms / deliver_at_ms is
stored at once as a schedule record consumers never see, and delivered on its own subject at its time,
once, across restarts and (slow tier) a SIGKILL of the primary. The in-process node runs on a manual
clock, so no test sleeps for the delay."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from weir import Client, Message
from weir.client import NodeClient, consumer_config, stream_config
from weir.errors import (
    AlreadyResolvedError,
    InvalidArgumentError,
    InvalidSubjectError,
    NoSuchMessageError,
    SchedulingDisabledError,
)
from weir.v1 import streams_pb2, types_pb2
from weir_partition_node.clock import ManualClock
from weir_partition_node.commit_items import RemoveSeqs
from weir_partition_node.node import Node
from weir_partition_node.record_batch import BatchRecord
from weir_partition_node.scheduled import (
    ScheduleIndex,
    parse_scheduled_subject,
    scheduled_subject,
    visible_to_consumers,
)
from weir_partition_node.settings import NodeSettings

from tests.conftest import eventually, start_cluster

T0 = 1_700_000_000_000


# -- the index (pure) ------------------------------------------------------------------------------


def test_the_index_hands_out_due_records_in_time_then_seq_order() -> None:
    index = ScheduleIndex()
    for seq, deliver_at_ms in [(5, 300), (2, 100), (9, 100), (7, 200)]:
        index.add(seq, deliver_at_ms)
    assert (len(index), index.next_due_ms(), index.oldest_seq()) == (4, 100, 2)
    assert index.take_due(99, 10) == []
    assert index.take_due(250, 10) == [2, 9, 7]
    assert (len(index), index.next_due_ms(), index.oldest_seq()) == (1, 300, 5)
    assert index.take_due(10**15, 10) == [5] and index.next_due_ms() is None and index.oldest_seq() is None


def test_the_index_forgets_removed_and_truncated_records_and_stays_small() -> None:
    index = ScheduleIndex()
    for seq in range(1, 10_001):
        index.add(seq, 1_000 + seq)
    index.discard([1, 2, 3])
    index.discard_below(101)
    assert (len(index), index.oldest_seq(), index.next_due_ms()) == (9_900, 101, 1_101)
    assert index.take_due(1_105, 3) == [101, 102, 103]  # the limit holds
    index.discard(range(104, 10_000))
    assert len(index) == 1 and index.take_due(10**15, 10) == [10_000]
    assert len(index._by_time) <= 1024 and len(index._by_seq) <= 1024  # dead heap entries were compacted


def test_schedule_record_subjects_round_trip_and_are_hidden() -> None:
    subject = scheduled_subject(T0 + 5, 42)
    assert subject == f"$weir.scheduled.{T0 + 5}.42"
    assert parse_scheduled_subject(subject) == (T0 + 5, 42)
    for other in ("orders.new", "$weir.scheduled.1", "$weir.scheduled.a.2", "$weir.scheduled.1.2.3"):
        assert parse_scheduled_subject(other) is None
    assert not visible_to_consumers(subject) and visible_to_consumers("orders.new")


# -- the node core, manual clock ---------------------------------------------------------------------


def settings(tmp_path: Path) -> NodeSettings:
    return NodeSettings(node_id="scheduled", data_dir=tmp_path / "data", retention_sweep_interval_ms=3_600_000)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
async def core(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Node]:
    core = await Node.open(settings(tmp_path), clock=clock)
    yield core
    if not core._closing:
        await core.close()


def entry(subject: str = "s.a", payload: bytes = b"x", **fields: object) -> streams_pb2.PublishEntry:
    return streams_pb2.PublishEntry(subject=subject, payload=payload, **fields)  # type: ignore[arg-type]


async def publish_one(node: Node, stream: str, published: streams_pb2.PublishEntry) -> tuple[int, bool]:
    (outcome,) = await node.publisher.publish(stream, [published], streams_pb2.ACK_LEVEL_LEADER, batch=True)
    assert outcome.result_code == "ok", outcome
    return outcome.seq, outcome.scheduled


async def create(node: Node, stream: str, **config: object) -> None:
    await node.admin.create_stream(stream_config(stream, allow_scheduled_messages=True, **config).to_proto())  # type: ignore[arg-type]
    await node.consumers.create_consumer(stream, consumer_config("c", ack_wait_ms=60_000).to_proto())


async def fetch_messages(node: Node, stream: str, max_wait_ms: int = 0) -> list[types_pb2.Message]:
    deliveries = await node.consumers.fetch(stream, "c", 0, batch_size=100, max_wait_ms=max_wait_ms)
    return [types_pb2.Message.FromString(delivery.record) for delivery in deliveries]


def stored(node: Node, stream: str) -> list[tuple[int, str]]:
    records, _, _ = node.reads.read_messages(stream, 0, 0, 10_000, 0)
    return [(seq, types_pb2.Message.FromString(record).subject) for seq, record in records]


async def wait_delivered(node: Node, stream: str, count: int) -> list[types_pb2.Message]:
    """Fetch until `count` messages came (the delivery commit runs on the node's event loop)."""
    messages: list[types_pb2.Message] = []
    for _ in range(100):
        messages += await fetch_messages(node, stream, max_wait_ms=50)
        if len(messages) >= count:
            break
    return messages


@pytest.mark.parametrize("storage", ["file", "memory"])
async def test_a_delayed_message_is_stored_at_once_and_delivered_at_its_time(
    core: Node, clock: ManualClock, storage: str
) -> None:
    await create(core, "delayed", storage=storage)
    headers = [types_pb2.Header(key="h", value="v")]
    seq, is_scheduled = await publish_one(
        core, "delayed", entry("s.late", b"later", delay_ms=10_000, key=b"k1", msg_id="m-1", headers=headers)
    )
    assert (seq, is_scheduled) == (1, True)
    assert await publish_one(core, "delayed", entry("s.now", b"now")) == (2, False)
    assert stored(core, "delayed") == [(1, f"$weir.scheduled.{T0 + 10_000}.1"), (2, "s.now")]
    assert [m.subject for m in await fetch_messages(core, "delayed")] == ["s.now"]

    clock.advance(9_999)
    assert await fetch_messages(core, "delayed", max_wait_ms=100) == []
    clock.advance(1)
    (delivered,) = await wait_delivered(core, "delayed", 1)
    assert (delivered.seq, delivered.subject, delivered.payload, delivered.key) == (3, "s.late", b"later", b"k1")
    assert (delivered.msg_id, delivered.scheduled_seq, delivered.ts_ms) == ("m-1", 1, T0 + 10_000)
    assert [(h.key, h.value) for h in delivered.headers] == [("h", "v")]
    assert stored(core, "delayed") == [(2, "s.now"), (3, "s.late")]  # the schedule record went with it
    with pytest.raises(NoSuchMessageError):
        core.reads.get_message("delayed", 0, 1)
    records, _, _ = await core.changes.read_changes(0, 10_000)
    removals = [change.remove for change in map(types_pb2.Change.FromString, records) if change.HasField("remove")]
    assert [(list(r.seqs), r.reason) for r in removals] == [([1], "scheduled")]
    clock.advance(30_000)  # (under the consumer's ack_wait: nothing is redelivered)
    assert await fetch_messages(core, "delayed", max_wait_ms=100) == []  # delivered once


async def test_delayed_messages_come_in_time_order_and_a_past_time_delivers_at_once(
    core: Node, clock: ManualClock
) -> None:
    await create(core, "order")
    for delay_ms, payload in [(3_000, b"third"), (1_000, b"first"), (2_000, b"second")]:
        await publish_one(core, "order", entry(payload=payload, delay_ms=delay_ms))
    seq, is_scheduled = await publish_one(core, "order", entry(payload=b"past", deliver_at_ms=T0 - 1))
    assert (seq, is_scheduled) == (4, False)
    await publish_one(core, "order", entry(payload=b"absolute", deliver_at_ms=T0 + 2_500))
    assert [m.payload for m in await fetch_messages(core, "order")] == [b"past"]
    clock.advance(5_000)
    delivered = await wait_delivered(core, "order", 4)
    assert [m.payload for m in delivered] == [b"first", b"second", b"absolute", b"third"]


async def test_scheduled_messages_survive_a_restart_and_are_delivered_once(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    core = await Node.open(settings(tmp_path), clock=clock)
    await create(core, "durable")
    await publish_one(core, "durable", entry(payload=b"early", delay_ms=1_000))
    await publish_one(core, "durable", entry(payload=b"late", delay_ms=5_000))
    await core.close()

    clock.advance(2_000)  # "early" fell due while the node was down
    core = await Node.open(settings(tmp_path), clock=clock)
    try:
        assert [m.payload for m in await wait_delivered(core, "durable", 1)] == [b"early"]
        await core.close()
        core = await Node.open(settings(tmp_path), clock=clock)
        assert await fetch_messages(core, "durable", max_wait_ms=100) == []  # not again after a restart
        clock.advance(3_000)
        assert [m.payload for m in await wait_delivered(core, "durable", 1)] == [b"late"]
    finally:
        await core.close()


async def test_interest_retention_keeps_schedule_records_until_they_are_delivered_and_acked(
    core: Node, clock: ManualClock
) -> None:
    await create(core, "interest", retention="interest")
    await publish_one(core, "interest", entry(payload=b"later", delay_ms=1_000))
    await publish_one(core, "interest", entry(payload=b"now"))
    (now,) = await fetch_messages(core, "interest")
    await core.consumers.ack("interest", "c", 0, now.seq)
    await core.sweep_once()
    # Interest retention truncates a prefix: the schedule record holds it (and what follows) back.
    assert [seq for seq, _ in stored(core, "interest")] == [1, 2]
    clock.advance(1_000)
    (later,) = await wait_delivered(core, "interest", 1)
    assert later.payload == b"later"
    await core.consumers.ack("interest", "c", 0, later.seq)
    await core.sweep_once()
    assert stored(core, "interest") == []  # delivered and acknowledged: all of it goes


async def test_a_retried_scheduled_publish_is_stored_once(core: Node, clock: ManualClock) -> None:
    await create(core, "retried")
    first = await core.publisher.publish(
        "retried", [entry(delay_ms=1_000, msg_id="once")], streams_pb2.ACK_LEVEL_LEADER, batch=True
    )
    again = await core.publisher.publish(
        "retried", [entry(delay_ms=1_000, msg_id="once")], streams_pb2.ACK_LEVEL_LEADER, batch=True
    )
    assert (first[0].seq, first[0].scheduled, again[0].seq, again[0].duplicate) == (1, True, 1, True)
    clock.advance(1_000)
    assert len(await wait_delivered(core, "retried", 2)) == 1


async def test_bad_scheduled_publishes_are_refused_and_store_nothing(core: Node) -> None:
    await core.admin.create_stream(stream_config("plain").to_proto())
    await create(core, "aged", max_age_ms=60_000)
    cases: list[tuple[str, streams_pb2.PublishEntry, type[Exception], str]] = [
        ("plain", entry(delay_ms=1_000), SchedulingDisabledError, "allow_scheduled_messages"),
        ("aged", entry(delay_ms=1_000, deliver_at_ms=T0 + 1_000), InvalidArgumentError, "at most one"),
        ("aged", entry(delay_ms=1_000, expected_last_seq=0), InvalidArgumentError, "expected_last_seq"),
        ("aged", entry(delay_ms=60_000), InvalidArgumentError, "max_age_ms"),
        ("aged", entry(deliver_at_ms=-5), InvalidArgumentError, "negative"),
        ("aged", entry("$weir.scheduled.1.1"), InvalidSubjectError, "Weir's own"),
        ("plain", entry("$weir.anything"), InvalidSubjectError, "Weir's own"),
    ]
    for stream, bad, error, words in cases:
        with pytest.raises(error, match=words):
            await core.publisher.publish(stream, [entry(), bad], streams_pb2.ACK_LEVEL_LEADER, batch=True)
    assert stored(core, "plain") == [] and stored(core, "aged") == []
    await core.admin.create_stream(stream_config("forever", allow_scheduled_messages=True).to_proto())
    with pytest.raises(InvalidArgumentError, match="366 days"):
        await core.publisher.publish(
            "forever", [entry(delay_ms=367 * 86_400_000)], streams_pb2.ACK_LEVEL_LEADER, batch=False
        )


# -- over gRPC, and through a failover (real processes) -------------------------------------------------


async def test_delayed_publish_over_grpc_on_a_real_node(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name, allow_scheduled_messages=True))
    await client.create_consumer(stream_name, consumer_config("c"))
    ack = await client.publish(stream_name, "s.x", b"soon", delay_ms=300)
    assert ack.scheduled and ack.seq == 1
    assert await client.fetch(stream_name, "c", 0, batch_size=10) == []

    async def delivered() -> bool:
        return bool(await client.fetch(stream_name, "c", 0, batch_size=10, max_wait_ms=500))

    await eventually(delivered, 10, "the delayed message is delivered")
    with pytest.raises(SchedulingDisabledError):
        await client.create_stream(stream_config(stream_name + "-plain"))
        await client.publish(stream_name + "-plain", "s.x", b"x", delay_ms=300)


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_a_scheduled_message_is_delivered_once_by_the_new_primary_after_a_sigkill(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path / "cluster")
    try:
        async with Client(cluster.router_addresses) as client:
            stream = "delayed-failover"
            await client.create_stream(stream_config(stream, replicas=3, allow_scheduled_messages=True))
            await client.create_consumer(stream, consumer_config("c", ack_wait_ms=60_000))
            soon = await client.publish(stream, "orders.due", b"soon", ack_level="all", delay_ms=1_500)
            later = await client.publish(stream, "orders.due", b"later", ack_level="all", delay_ms=8_000)
            assert soon.scheduled and later.scheduled
            victim_id = (await client.route(stream)).partitions[0].primary.node_id
            received: list[Message] = []

            async def got(count: int) -> bool:
                received.extend(await client.fetch(stream, "c", 0, batch_size=10, max_wait_ms=200))
                return len(received) >= count

            await eventually(lambda: got(1), 20, "the first delayed message")

            async def every_copy_delivered_the_first() -> bool:
                """Each node's copy holds "soon" as a delivered message and not its schedule record."""
                for node in cluster.nodes:
                    async with NodeClient(node.internal_address) as internal:
                        read = await internal.read_messages(stream, 0, 0)
                    subjects = [(m.subject, m.payload) for m in read.messages]
                    if ("orders.due", b"soon") not in subjects or len(subjects) != 2:
                        return False
                return True

            await eventually(every_copy_delivered_the_first, 20, "the first delivery reached every copy")
            next(node for node in cluster.nodes if node.name == victim_id).kill()

            async def failed_over() -> bool:
                entry = (await client.route(stream, refresh=True)).partitions[0]
                return entry.primary.node_id != victim_id and entry.primary.alive

            await eventually(failed_over, 30, "a new primary")
            await eventually(lambda: got(2), 30, "the second delayed message, from the new primary")
            await asyncio.sleep(2.0)  # nothing more comes: neither is delivered twice
            received.extend(await client.fetch(stream, "c", 0, batch_size=10, max_wait_ms=500))
            assert sorted(message.payload for message in received) == [b"later", b"soon"]
            read = await client.on_leader(stream, 0, lambda node: node.read_messages(stream, 0, 0))
            assert [(m.subject, m.payload) for m in read.messages] == [
                ("orders.due", b"soon"),
                ("orders.due", b"later"),
            ]
    finally:
        cluster.stop()


# -- a secondary, and a secondary promoted (in-process) ----------------------------------------------


def replicated(message: types_pb2.Message) -> BatchRecord:
    encoded = message.SerializeToString()
    return BatchRecord(
        message.seq,
        message.ts_ms,
        message.subject,
        encoded,
        zlib.crc32(encoded),
        "",
        message.scheduled_seq,
        message.expires_at_ms,
    )


async def test_a_secondary_removes_the_schedule_record_with_the_delivered_message_and_a_promotion_resumes(
    core: Node, clock: ManualClock
) -> None:
    """What makes delivery once-only across a failover: on a secondary the delivered message and the
    removal of its schedule record land in one commit (no window where a new primary holds both), and
    a promoted secondary delivers exactly the schedule records its log still holds."""
    await core.admin.create_stream(stream_config("copy", allow_scheduled_messages=True).to_proto())
    await core.consumers.create_consumer("copy", consumer_config("c", ack_wait_ms=60_000).to_proto())
    partition = core.hosted_partition("copy", 0)
    partition.set_role(leading=False, leader_epoch=2, tracker=None, min_insync=1)
    assert partition.scheduled_count == 0  # a secondary keeps no index
    schedules = [
        types_pb2.Message(
            seq=seq,
            ts_ms=T0,
            subject=scheduled_subject(T0 + 1_000 * seq, seq),
            payload=b"p%d" % seq,
            deliver_at_ms=T0 + 1_000 * seq,
            scheduled_subject="s.due",
        )
        for seq in (1, 2)
    ]
    delivered = types_pb2.Message(seq=3, ts_ms=T0 + 1_000, subject="s.due", payload=b"p1", scheduled_seq=1)
    assert await partition.replicate(0, [replicated(m) for m in schedules], 100) == ("ok", "")
    clock.advance(5_000)  # both are due, but a secondary delivers nothing itself
    await asyncio.sleep(0.05)
    assert [seq for seq, _ in stored(core, "copy")] == [1, 2]
    assert await partition.replicate(2, [replicated(delivered)], 100) == ("ok", "")
    assert stored(core, "copy") == [(2, schedules[1].subject), (3, "s.due")]  # one commit: appended and removed

    partition.set_role(leading=True, leader_epoch=3, tracker=None, min_insync=1)
    assert partition.scheduled_count == 1
    messages = await wait_delivered(core, "copy", 2)
    assert [(m.seq, m.payload, m.scheduled_seq) for m in messages] == [(3, b"p1", 1), (4, b"p2", 2)]
    assert stored(core, "copy") == [(3, "s.due"), (4, "s.due")]


# -- held messages (half messages) and ReleaseScheduled -----------------------------------------------


async def test_held_messages_wait_for_a_release_that_delivers_or_discards_them(core: Node, clock: ManualClock) -> None:
    await create(core, "tx")
    commit_seq, held = await publish_one(core, "tx", entry("tx.order", b"commit me", hold=True, msg_id="tx-1"))
    rollback_seq, _ = await publish_one(core, "tx", entry("tx.order", b"roll me back", hold=True))
    delayed_seq, _ = await publish_one(core, "tx", entry("tx.order", b"recalled", delay_ms=5_000))
    assert held and stored(core, "tx") == [
        (1, "$weir.held.1"),
        (2, "$weir.held.2"),
        (3, scheduled_subject(T0 + 5_000, 3)),
    ]
    clock.advance(10**9)  # held messages are never due by themselves; the delayed one is
    delivered = await wait_delivered(core, "tx", 1)
    assert [m.payload for m in delivered] == [b"recalled"]

    records, next_seq = core.admin.list_scheduled("tx", 0, 0, 0, held_only=True)
    assert [types_pb2.Message.FromString(r).payload for r in records] == [b"commit me", b"roll me back"]
    assert next_seq == 0
    first_page, next_seq = core.admin.list_scheduled("tx", 0, 0, 1, held_only=False)
    assert len(first_page) == 1 and next_seq == rollback_seq

    new_seq = await core.admin.release_scheduled("tx", 0, commit_seq, discard=False)
    assert await core.admin.release_scheduled("tx", 0, rollback_seq, discard=True) == 0
    (committed,) = await wait_delivered(core, "tx", 1)
    assert (committed.seq, committed.payload, committed.msg_id, committed.scheduled_seq) == (
        new_seq,
        b"commit me",
        "tx-1",
        commit_seq,
    )
    for seq in (delayed_seq, new_seq, 999):  # a held message's second release: see the next test
        with pytest.raises(NoSuchMessageError, match="no scheduled or held message"):
            await core.admin.release_scheduled("tx", 0, seq, discard=True)
    assert [subject for _, subject in stored(core, "tx")] == ["tx.order", "tx.order"]
    records, _, _ = await core.changes.read_changes(0, 10_000)
    reasons = [c.remove.reason for c in map(types_pb2.Change.FromString, records) if c.HasField("remove")]
    assert sorted(reasons) == ["discarded", "scheduled", "scheduled"]


@pytest.mark.parametrize("storage", ["file", "memory"])
async def test_a_held_message_resolved_once_answers_a_repeat_alike_and_refuses_the_other(
    tmp_path: Path, storage: str
) -> None:
    """RocketMQ's EndTransaction over ReleaseScheduled: once a held message is committed (delivered)
    or rolled back (discarded), the same release again answers as the first did and changes nothing,
    and the other one is refused (AlreadyResolvedError, FAILED_PRECONDITION) and changes nothing; the
    resolution is stored with the log, so a restart keeps the answer (file storage)."""
    clock = ManualClock(T0)
    core = await Node.open(settings(tmp_path), clock=clock)
    try:
        await create(core, "tx", storage=storage)
        commit_seq, _ = await publish_one(core, "tx", entry("tx.order", b"commit me", hold=True))
        rollback_seq, _ = await publish_one(core, "tx", entry("tx.order", b"roll me back", hold=True))
        delivered_seq = await core.admin.release_scheduled("tx", 0, commit_seq, discard=False)
        clock.advance(1_000)
        assert await core.admin.release_scheduled("tx", 0, rollback_seq, discard=True) == 0
        before = stored(core, "tx")
        for _ in range(2):
            assert await core.admin.release_scheduled("tx", 0, commit_seq, discard=False) == delivered_seq
            assert await core.admin.release_scheduled("tx", 0, rollback_seq, discard=True) == 0
            with pytest.raises(AlreadyResolvedError, match=f"commit \\(delivered at seq {delivered_seq}\\)") as late:
                await core.admin.release_scheduled("tx", 0, commit_seq, discard=True)
            assert late.value.status_code.name == "FAILED_PRECONDITION"
            assert late.value.metadata == {
                "stream": "tx",
                "partition": "0",
                "seq": str(commit_seq),
                "resolution": "commit",
                "delivered_seq": str(delivered_seq),
                "resolved_at_ms": str(T0),
            }
            with pytest.raises(AlreadyResolvedError, match="by a rollback") as late:
                await core.admin.release_scheduled("tx", 0, rollback_seq, discard=False)
            assert late.value.metadata["resolved_at_ms"] == str(T0 + 1_000)
            assert stored(core, "tx") == before  # nothing changed
            if storage == "memory":
                break
            await core.close()  # the resolutions are in the log: a restarted node answers alike
            core = await Node.open(settings(tmp_path), clock=clock)
        assert [m.payload for m in await fetch_messages(core, "tx")] == [b"commit me"]  # delivered once
    finally:
        await core.close()


async def test_a_secondary_stores_the_resolutions_it_copies_and_answers_alike_once_promoted(
    core: Node, clock: ManualClock
) -> None:
    """A copy notes a held record's commit when it copies the delivered record (its scheduled_seq
    names the held one) and its rollback when it applies the primary's "discarded" removal, in the
    same commit; promoted, it answers a second EndTransaction as the old primary would."""
    await core.admin.create_stream(stream_config("copy", allow_scheduled_messages=True).to_proto())
    partition = core.hosted_partition("copy", 0)
    partition.set_role(leading=False, leader_epoch=2, tracker=None, min_insync=1)
    halves = [
        types_pb2.Message(seq=seq, ts_ms=T0, subject=f"$weir.held.{seq}", payload=b"h%d" % seq, scheduled_subject="t")
        for seq in (1, 2, 3)
    ]
    delivered = types_pb2.Message(seq=4, ts_ms=T0, subject="t", payload=b"h1", scheduled_seq=1)
    assert await partition.replicate(0, [replicated(m) for m in halves], 100) == ("ok", "")
    assert await partition.replicate(3, [replicated(delivered)], 100) == ("ok", "")
    await partition.replica_edit(RemoveSeqs([2], "discarded"))
    assert [seq for seq, _ in stored(core, "copy")] == [3, 4]

    partition.set_role(leading=True, leader_epoch=3, tracker=None, min_insync=1)
    assert await core.admin.release_scheduled("copy", 0, 1, discard=False) == 4
    assert await core.admin.release_scheduled("copy", 0, 2, discard=True) == 0
    with pytest.raises(AlreadyResolvedError, match="by a commit"):
        await core.admin.release_scheduled("copy", 0, 1, discard=True)
    with pytest.raises(AlreadyResolvedError, match="by a rollback"):
        await core.admin.release_scheduled("copy", 0, 2, discard=False)
    assert await core.admin.release_scheduled("copy", 0, 3, discard=True) == 0  # still held: resolved now
    assert [seq for seq, _ in stored(core, "copy")] == [4]


async def test_held_messages_survive_a_restart_and_bad_holds_are_refused(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    core = await Node.open(settings(tmp_path), clock=clock)
    try:
        await create(core, "tx")
        seq, _ = await publish_one(core, "tx", entry(payload=b"half", hold=True))
        with pytest.raises(InvalidArgumentError, match="at most one"):
            await publish_one(core, "tx", entry(hold=True, delay_ms=5))
        await core.admin.create_stream(stream_config("plain").to_proto())
        with pytest.raises(SchedulingDisabledError):
            await publish_one(core, "plain", entry(hold=True))
        with pytest.raises(SchedulingDisabledError):
            await core.admin.release_scheduled("plain", 0, 1, discard=False)
        await core.close()
        core = await Node.open(settings(tmp_path), clock=clock)
        records, _ = core.admin.list_scheduled("tx", 0, 0, 0, held_only=True)
        assert [types_pb2.Message.FromString(r).payload for r in records] == [b"half"]
        await core.admin.release_scheduled("tx", 0, seq, discard=False)
        assert [m.payload for m in await wait_delivered(core, "tx", 1)] == [b"half"]
    finally:
        await core.close()
