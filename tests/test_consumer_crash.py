"""Durable consumers across a crash: real partition-node processes (test clock on) over real gRPC.

Each test starts a node of its own with ``WEIR_NODE_TEST_CLOCK=true`` (time moves only through
`TestClockClient.advance`, so ack_wait and nak delays are exercised without sleeping), SIGKILLs it
and restarts it on the same data directory and ports:

* `test_sigkill_keeps_consumer_state_and_redelivers_unacked`: three consumers (no filter, a filter,
  a small max_ack_pending) in a 2-partition stream, with fetches, single acks, batch acks, a nak with
  a delay, a term and an in-progress before the crash. After the restart every consumer's info is
  exactly what it was; once the clock passes the nak delay only the naked message is due; once it
  passes ack_wait, draining redelivers exactly the delivered but
  unsettled messages (deliver_count + 1, lowest seq first), then delivers the never-delivered ones,
  never anything acknowledged or terminated, and the acks cover every matching message but the
  terminated ones. The small consumer is at its max_ack_pending at the crash.
* `test_consumer_at_max_ack_pending_gets_expired_deliveries_again`: a partition at max_ack_pending
  still gets its overdue deliveries back after a crash (the bound holds back new deliveries only).
* `test_sigkill_under_fetch_ack_load_loses_nothing`: publishers and fetch(100)+AckBatch loops run
  concurrently; the node is SIGKILLed three times mid-run. After the last restart a drain (clock past
  ack_wait) shows every acknowledged publish delivered and acknowledged, and no seq whose ack
  answered "ok" delivered again afterwards. Duplicates (redeliveries of deliveries whose ack was
  lost in a crash) are allowed and only reported.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from weir.client import NodeClient, consumer_config, stream_config
from weir.errors import WeirError
from weir.v1 import streams_pb2, types_pb2
from weir_cli.launcher import NodeHandle, start_node
from weir_server.internal_clients import TestClockClient

from tests.conftest import needs_own_processes
from tests.test_crash import until_serving

CALL_TIMEOUT_S = 10.0
TEST_CLOCK_ENV = {"WEIR_NODE_TEST_CLOCK": "true"}
DEFAULT_ACK_WAIT_MS = 30_000


@pytest.fixture
def clock_node(tmp_path: Path) -> Iterator[NodeHandle]:
    """A node of this test's own, reading time from the test clock."""
    needs_own_processes()
    handle = start_node(tmp_path / "data", node_id="consumer-crash", env=TEST_CLOCK_ENV)
    yield handle
    handle.kill()


async def restart(handle: NodeHandle) -> tuple[NodeClient, TestClockClient]:
    """Start the node again on its data directory and ports; new clients once it answers."""
    handle.start(reuse_ports=True)
    client = NodeClient(handle.client_address, timeout_s=CALL_TIMEOUT_S)
    clock = TestClockClient(handle.internal_address, timeout_s=CALL_TIMEOUT_S)
    await until_serving(client.list_streams)
    await until_serving(lambda: clock.advance(0))
    return client, clock


# -- a) state across a crash with messages pending --------------------------------------------------

PER_PARTITION = 1000
PARTITIONS = 2
NAK_DELAY_MS = 5_000


def subject_of(seq: int) -> str:
    """Messages alternate subjects by seq (in both partitions): odd seqs "orders.a", even "orders.b"."""
    return "orders.a" if seq % 2 else "orders.b"


@dataclass
class Model:
    """What one consumer should hold in one partition, from the answers the node gave."""

    name: str
    partition: int
    matching: list[int]  # every stored seq the consumer's filter accepts, ascending
    max_ack_pending: int
    ack_wait_ms: int
    deliver_count: dict[int, int] = field(default_factory=dict)  # seq -> last deliver_count seen
    acked: set[int] = field(default_factory=set)
    termed: set[int] = field(default_factory=set)
    naked: int = 0  # the seq naked with NAK_DELAY_MS (0: none)
    delivered_total: int = 0
    redelivered_total: int = 0

    @property
    def pending(self) -> list[int]:
        return sorted(set(self.deliver_count) - self.acked - self.termed)

    def undelivered(self) -> list[int]:
        return [seq for seq in self.matching if seq not in self.deliver_count]

    def check_new(self, messages: list[types_pb2.Message], batch_size: int) -> list[int]:
        """A fetch with nothing due: the next matching seqs, deliver_count 1, as many as room allows."""
        room = self.max_ack_pending - len(self.pending)
        expected = self.undelivered()[: min(batch_size, room)]
        seqs = [message.seq for message in messages]
        assert seqs == expected, (self.name, self.partition, seqs[:5], expected[:5])
        for message in messages:
            assert message.partition == self.partition
            assert message.deliver_count == 1
            assert message.subject == subject_of(message.seq)
            self.deliver_count[message.seq] = 1
        self.delivered_total += len(messages)
        return seqs


async def fetch_new(client: NodeClient, stream: str, model: Model, batch_size: int) -> list[int]:
    messages = await client.fetch(stream, model.name, model.partition, batch_size=batch_size)
    return model.check_new(messages, batch_size)


async def settle_before_crash(client: NodeClient, clock: TestClockClient, stream: str, model: Model) -> None:
    """Fetches and every kind of settle on partition 0; only a fetch and a batch ack on partition 1."""
    name, partition = model.name, model.partition
    if partition == 1:
        first = await fetch_new(client, stream, model, 25)
        results = await client.ack_batch(stream, name, partition, first[:5])
        assert [(r.seq, r.result_code) for r in results] == [(seq, "ok") for seq in first[:5]]
        model.acked.update(first[:5])
        return
    first = await fetch_new(client, stream, model, 40)
    for seq in first[:10]:
        await client.ack(stream, name, partition, seq)
    model.acked.update(first[:10])
    second = await fetch_new(client, stream, model, 40)
    assert second, (name, "nothing fetched in the second batch")
    to_ack = second[::2]
    never_delivered = model.undelivered()[0]
    results = await client.ack_batch(stream, name, partition, [*to_ack, first[0], never_delivered])
    assert [(r.seq, r.result_code) for r in results] == [
        *[(seq, "ok") for seq in to_ack],
        (first[0], "not_pending"),
        (never_delivered, "not_pending"),
    ]
    model.acked.update(to_ack)
    now_ms = await clock.advance(0)
    await client.nak(stream, name, partition, first[10], delay_ms=NAK_DELAY_MS)
    model.naked = first[10]
    await client.term(stream, name, partition, first[11])
    model.termed.add(first[11])
    redeliver_at_ms = await client.in_progress(stream, name, partition, first[12])
    assert redeliver_at_ms == now_ms + model.ack_wait_ms
    await fetch_new(client, stream, model, 100)  # nothing is due (the clock has not moved)


def check_info_matches_model(info: types_pb2.ConsumerInfo, models: list[Model]) -> None:
    assert [p.partition for p in info.partitions] == [m.partition for m in models]
    for state, model in zip(info.partitions, models, strict=True):
        pending = model.pending
        delivered = max(model.deliver_count, default=0)
        assert state.num_ack_pending == len(pending), (model.name, model.partition)
        assert state.ack_floor == (pending[0] - 1 if pending else state.last_delivered), (model.name, model.partition)
        # last_delivered: the last seq delivered, or a later one the filter skipped (never past the
        # next matching seq).
        upcoming = model.undelivered()
        assert delivered <= state.last_delivered < (upcoming[0] if upcoming else PER_PARTITION + 1)
        assert state.num_pending == len(upcoming), (model.name, model.partition)
        assert state.num_redelivered == sum(1 for seq in pending if model.deliver_count[seq] > 1)
    assert info.num_ack_pending == sum(len(m.pending) for m in models)
    assert info.num_pending == sum(len(m.undelivered()) for m in models)
    assert info.delivered_total == sum(m.delivered_total for m in models)
    assert info.redelivered_total == sum(m.redelivered_total for m in models)
    assert info.acked_total == sum(len(m.acked) for m in models)
    assert info.termed_total == sum(len(m.termed) for m in models)
    assert (info.dead_lettered_total, info.dropped_total) == (0, 0)


async def drain(client: NodeClient, stream: str, model: Model) -> list[types_pb2.Message]:
    """Fetch(100) until nothing is left, acknowledging every batch; returns every delivery."""
    received: list[types_pb2.Message] = []
    for _ in range(PER_PARTITION):  # each round delivers at least one message
        messages = await client.fetch(stream, model.name, model.partition, batch_size=100)
        if not messages:
            return received
        received.extend(messages)
        results = await client.ack_batch(stream, model.name, model.partition, [m.seq for m in messages])
        assert [r.result_code for r in results] == ["ok"] * len(messages), (model.name, model.partition)
    raise AssertionError(f"{model.name}/{model.partition}: drain did not end")


async def publish_every_partition(client: NodeClient, stream_name: str) -> None:
    """PER_PARTITION messages in each partition, subject by seq (subject_of), payload p<partition>-<seq>."""
    for partition in range(PARTITIONS):
        for first in range(1, PER_PARTITION + 1, 500):
            entries = [
                streams_pb2.PublishEntry(
                    subject=subject_of(seq), payload=f"p{partition}-{seq}".encode(), partition=partition
                )
                for seq in range(first, first + 500)
            ]
            results = await client.publish_batch(stream_name, entries)
            assert [(r.result_code, r.partition, r.seq) for r in results] == [
                ("ok", partition, seq) for seq in range(first, first + 500)
            ]


async def create_models(client: NodeClient, stream_name: str) -> dict[str, list[Model]]:
    """Three consumers (every subject, orders.a only, a small max_ack_pending) and a model of each
    one's state per partition."""
    configs = [
        consumer_config("all"),
        consumer_config("only-a", filter_subject="orders.a"),
        consumer_config("small", max_ack_pending=50, ack_wait_ms=10_000),
    ]
    models: dict[str, list[Model]] = {}
    all_seqs = list(range(1, PER_PARTITION + 1))
    for config in configs:
        info = await client.create_consumer(stream_name, config)
        matching = [seq for seq in all_seqs if not config.filter_subject or subject_of(seq) == "orders.a"]
        models[config.name] = [
            Model(config.name, p, matching, info.config.max_ack_pending, info.config.ack_wait_ms)
            for p in range(PARTITIONS)
        ]
    return models


async def redeliver_naked(client: NodeClient, stream_name: str, model: Model) -> None:
    """The naked message comes again alone, with deliver_count 2; ack it."""
    messages = await client.fetch(stream_name, model.name, model.partition, batch_size=1)
    assert [(m.seq, m.deliver_count) for m in messages] == [(model.naked, 2)], (model.name, model.partition)
    await client.ack(stream_name, model.name, model.partition, model.naked)
    model.deliver_count[model.naked] = 2
    model.redelivered_total += 1
    model.acked.add(model.naked)


async def drain_after_ack_wait(client: NodeClient, stream_name: str, model: Model) -> int:
    """Past ack_wait: the unsettled deliveries come first (deliver_count + 1, lowest seq first),
    then the never-delivered messages; everything matching but the terminated ends acknowledged.
    Returns how many were redelivered."""
    pending_before = model.pending
    undelivered_before = model.undelivered()
    received = await drain(client, stream_name, model)
    seqs = [message.seq for message in received]
    assert seqs == pending_before + undelivered_before, (model.name, model.partition)
    for message in received:
        assert message.partition == model.partition
        assert message.subject == subject_of(message.seq)
        assert message.payload == f"p{model.partition}-{message.seq}".encode()
        expected_count = model.deliver_count.get(message.seq, 0) + 1
        assert message.deliver_count == expected_count, (model.name, model.partition, message.seq)
        model.deliver_count[message.seq] = message.deliver_count
    model.acked.update(seqs)
    model.delivered_total += len(undelivered_before)
    model.redelivered_total += len(pending_before)
    # At least once, nothing lost: every matching message acknowledged but the terminated.
    assert model.acked == set(model.matching) - model.termed, (model.name, model.partition)
    assert model.acked.isdisjoint(model.termed)
    return len(pending_before)


@pytest.mark.slow
async def test_sigkill_keeps_consumer_state_and_redelivers_unacked(clock_node: NodeHandle, stream_name: str) -> None:
    """SIGKILL with deliveries pending in three consumers: their info is identical after the restart;
    once the nak delay has passed only the naked message comes again (deliver_count 2); after
    ack_wait exactly the unsettled deliveries come again (deliver_count + 1, first, lowest seq
    first), then the never-delivered messages; nothing acknowledged or terminated comes again, and
    the acks cover every matching message except the terminated ones."""
    client = NodeClient(clock_node.client_address, timeout_s=CALL_TIMEOUT_S)
    clock = TestClockClient(clock_node.internal_address, timeout_s=CALL_TIMEOUT_S)
    try:
        await client.create_stream(stream_config(stream_name, subjects=["orders.>"], partitions=PARTITIONS))
        await publish_every_partition(client, stream_name)
        models = await create_models(client, stream_name)
        for name, partition_models in models.items():
            for model in partition_models:
                if name == "only-a" and model.partition == 1:
                    continue  # left untouched: its state is the creation state
                await settle_before_crash(client, clock, stream_name, model)
        small = models["small"][0]
        assert len(small.pending) == small.max_ack_pending, "the small consumer is not at max_ack_pending"
        # At the bound: no new delivery now; after the restart its overdue deliveries still come back.
        assert await client.fetch(stream_name, "small", 0, batch_size=10) == []
        before = {}
        for name, partition_models in models.items():
            info = await client.consumer_info(stream_name, name)
            check_info_matches_model(info, partition_models)
            before[name] = info
        listed_before = await client.list_consumers(stream_name)
    finally:
        await client.close()
        await clock.close()

    clock_node.kill()
    client, clock = await restart(clock_node)
    try:
        for name in models:
            assert await client.consumer_info(stream_name, name) == before[name], name
        assert await client.list_consumers(stream_name) == listed_before

        # Past the nak delay only: the naked message alone is due (its redeliver time survived).
        await clock.advance(NAK_DELAY_MS + 1)
        for partition_models in models.values():
            for model in partition_models:
                if model.naked:
                    await redeliver_naked(client, stream_name, model)
        await clock.advance(DEFAULT_ACK_WAIT_MS)
        redelivered = 0
        for name, partition_models in models.items():
            for model in partition_models:
                redelivered += await drain_after_ack_wait(client, stream_name, model)
            info = await client.consumer_info(stream_name, name)
            check_info_matches_model(info, partition_models)
            for state in info.partitions:
                assert (state.num_ack_pending, state.num_pending) == (0, 0)
        assert redelivered > 0
    finally:
        await client.close()
        await clock.close()


@pytest.mark.slow
async def test_consumer_at_max_ack_pending_gets_expired_deliveries_again(
    clock_node: NodeHandle, stream_name: str
) -> None:
    """A consumer client dies holding max_ack_pending deliveries (then the node crashes too): once
    ack_wait has passed, those deliveries are due and a fetch redelivers them (a redelivery does not
    add to the unacknowledged count, so the bound does not stop it, as in JetStream), and no new
    message comes with them while the partition is at the bound. Were redeliveries held back by the
    bound, nothing could ever unblock the partition: the seqs would never be redelivered, never
    reach max_deliver and so never be dead-lettered either."""
    client = NodeClient(clock_node.client_address, timeout_s=CALL_TIMEOUT_S)
    try:
        await client.create_stream(stream_config(stream_name, subjects=["jobs.>"]))
        for n in range(10):
            assert (await client.publish(stream_name, "jobs.x", f"{n}".encode())).seq == n + 1
        await client.create_consumer(stream_name, consumer_config("c", max_ack_pending=5, ack_wait_ms=1_000))
        first = await client.fetch(stream_name, "c", batch_size=10)
        assert [(m.seq, m.deliver_count) for m in first] == [(seq, 1) for seq in range(1, 6)]
    finally:
        await client.close()
    clock_node.kill()
    client, clock = await restart(clock_node)
    try:
        await clock.advance(1_001)
        again = await client.fetch(stream_name, "c", batch_size=10)
        assert [(m.seq, m.deliver_count) for m in again] == [(seq, 2) for seq in range(1, 6)]
        results = await client.ack_batch(stream_name, "c", 0, range(1, 6))
        assert [(r.seq, r.result_code) for r in results] == [(seq, "ok") for seq in range(1, 6)]
        rest = await client.fetch(stream_name, "c", batch_size=10)
        assert [(m.seq, m.deliver_count) for m in rest] == [(seq, 1) for seq in range(6, 11)]
    finally:
        await client.close()
        await clock.close()


# -- b) crashes under concurrent publish + fetch/ack load -------------------------------------------

LOAD_PARTITIONS = 2
LOAD_PUBLISHERS = 4
LOAD_BATCH = 8
LOAD_SECONDS = 1.0  # load before each crash
LOAD_MAX_ACKED = 4000  # ... or less when this many publishes were acknowledged
LOAD_CYCLES = 3
LOAD_ACK_WAIT_MS = 3_600_000  # nothing is redelivered during the load (the test clock does not move)
FETCH_BATCH = 100
LOAD_PAYLOAD = b"x" * 256

Key = tuple[int, int]  # (partition, seq)


@dataclass
class ConsumeLoad:
    """Everything the publishers and the consumer loops saw, over every run. Events (deliveries
    and "ok" acks) are numbered in the order this process saw them."""

    stream: str
    consumer: str
    published: set[Key] = field(default_factory=set)  # acknowledged publishes
    deliveries: dict[Key, list[tuple[int, int]]] = field(default_factory=dict)  # -> [(event, deliver_count)]
    acked_ok: dict[Key, int] = field(default_factory=dict)  # -> event of the first "ok" ack
    acked_before_kill: set[Key] = field(default_factory=set)
    ack_in_doubt: set[Key] = field(default_factory=set)  # in an AckBatch cut off by a crash
    problems: list[str] = field(default_factory=list)
    event: int = 0
    ending: bool = False
    over: bool = False
    failures: int = 0

    def next_event(self) -> int:
        self.event += 1
        return self.event

    def delivered(self, message: types_pb2.Message) -> None:
        key = (message.partition, message.seq)
        seen = self.deliveries.setdefault(key, [])
        if seen and message.deliver_count <= seen[-1][1]:
            self.problems.append(f"{key}: deliver_count {message.deliver_count} after {seen[-1][1]}")
        seen.append((self.next_event(), message.deliver_count))

    def acked(self, key: Key) -> None:
        self.acked_ok.setdefault(key, self.next_event())

    def failed(self, who: str, error: WeirError) -> None:
        if self.ending:
            self.failures += 1
        else:
            self.problems.append(f"{who} failed before the node went away: {error!r}")


async def load_publisher(client: NodeClient, load: ConsumeLoad, index: int) -> None:
    n = 0
    while not load.over:
        n += 1
        entries = [
            streams_pb2.PublishEntry(subject=f"load.w{index}", payload=LOAD_PAYLOAD, partition=(n + i) % 2)
            for i in range(LOAD_BATCH)
        ]
        try:
            results = await client.publish_batch(load.stream, entries)
        except WeirError as error:
            load.failed(f"publisher {index}", error)
            return
        for result in results:
            if result.result_code != "ok":
                load.problems.append(f"publish failed: {result.result_code} {result.message}")
            else:
                load.published.add((result.partition, result.seq))


async def consume(client: NodeClient, load: ConsumeLoad, partition: int, *, max_wait_ms: int) -> int:
    """Fetch(100) + AckBatch until the node goes away (`max_wait_ms` > 0) or a fetch comes back
    empty (`max_wait_ms` == 0); returns the fetches that delivered something."""
    rounds = 0
    while not load.over:
        try:
            messages = await client.fetch(
                load.stream, load.consumer, partition, batch_size=FETCH_BATCH, max_wait_ms=max_wait_ms
            )
        except WeirError as error:
            load.failed(f"consumer {partition}", error)
            return rounds
        for message in messages:
            if message.partition != partition:
                load.problems.append(f"fetched from partition {partition}: {message.partition}/{message.seq}")
            load.delivered(message)
        if not messages:
            if max_wait_ms == 0:
                return rounds
            continue
        rounds += 1
        try:
            results = await client.ack_batch(load.stream, load.consumer, partition, [m.seq for m in messages])
        except WeirError as error:
            load.failed(f"consumer {partition}", error)
            load.ack_in_doubt.update((partition, m.seq) for m in messages)
            return rounds
        for message, result in zip(messages, results, strict=True):
            if result.seq != message.seq or result.result_code != "ok":
                load.problems.append(f"ack of {partition}/{message.seq}: {result.seq} {result.result_code}")
            else:
                load.acked((partition, message.seq))
    return rounds


@pytest.mark.slow
async def test_sigkill_under_fetch_ack_load_loses_nothing(clock_node: NodeHandle, stream_name: str) -> None:
    """Publishers and one fetch(100)+AckBatch loop per partition run at once; SIGKILL mid-run,
    three times, restarting after each. A final drain (test clock past ack_wait, so deliveries whose
    ack was lost in a crash come again) must deliver and acknowledge every acknowledged publish, and
    no seq whose ack answered "ok" may be delivered after that answer (acks are durable).
    Redeliveries of the same seq are allowed (at least once) and only reported."""
    load = ConsumeLoad(stream_name, "worker")
    client = NodeClient(clock_node.client_address, timeout_s=CALL_TIMEOUT_S)
    await client.create_stream(stream_config(stream_name, subjects=["load.>"], partitions=LOAD_PARTITIONS))
    await client.create_consumer(stream_name, consumer_config("worker", ack_wait_ms=LOAD_ACK_WAIT_MS))
    rounds = 0
    for cycle in range(LOAD_CYCLES):
        load.ending = load.over = False
        published_before, acked_before = len(load.published), len(load.acked_ok)
        publishers = [asyncio.create_task(load_publisher(client, load, i)) for i in range(LOAD_PUBLISHERS)]
        consumers = [asyncio.create_task(consume(client, load, p, max_wait_ms=200)) for p in range(LOAD_PARTITIONS)]
        deadline = time.monotonic() + LOAD_SECONDS
        while time.monotonic() < deadline and len(load.published) - published_before < LOAD_MAX_ACKED:
            if any(task.done() for task in publishers + consumers):
                break  # one failed before the crash: reported below
            await asyncio.sleep(0.02)
        load.ending = True
        clock_node.kill()
        load.over = True
        async with asyncio.timeout(CALL_TIMEOUT_S * 2):
            await asyncio.gather(*publishers)
            rounds += sum(await asyncio.gather(*consumers))
        assert not load.problems, load.problems[:10]
        assert len(load.published) > published_before, f"cycle {cycle}: nothing published"
        assert len(load.acked_ok) > acked_before, f"cycle {cycle}: nothing acknowledged by the consumer"
        load.acked_before_kill = set(load.acked_ok)
        await client.close()
        client, clock = await restart(clock_node)
        await clock.close()
    assert load.failures > 0, "no call was cut off by a crash"

    clock = TestClockClient(clock_node.internal_address, timeout_s=CALL_TIMEOUT_S)
    try:
        await clock.advance(LOAD_ACK_WAIT_MS + 1)
        load.ending = load.over = False
        drained = await asyncio.gather(*(consume(client, load, p, max_wait_ms=0) for p in range(LOAD_PARTITIONS)))
        assert not load.problems, load.problems[:10]
        info = await client.stream_info(stream_name)
        stored = {(s.partition, seq) for s in info.stats.partitions for seq in range(1, s.last_seq + 1)}
        # Nothing lost: every acknowledged publish (and whatever else got stored) was delivered and
        # acknowledged; nothing but stored messages was delivered.
        assert load.published <= stored
        assert set(load.deliveries) == stored
        # Never seen acknowledged: only seqs whose AckBatch was cut off by a crash after it committed
        # (had it not committed, the drain would have redelivered and acknowledged them); the
        # consumer info below shows the node holds every stored seq as acknowledged.
        missing = stored - set(load.acked_ok)
        assert missing <= load.ack_in_doubt, f"never acknowledged: {sorted(missing - load.ack_in_doubt)[:5]}"
        # Durable acks: nothing is delivered after its "ok" ack (before or after a crash).
        after_ack = [key for key, event in load.acked_ok.items() if any(e > event for e, _ in load.deliveries[key])]
        assert not after_ack, f"{len(after_ack)} seqs delivered after an ok ack, e.g. {sorted(after_ack)[:5]}"
        consumer = await client.consumer_info(stream_name, "worker")
        for stats, state in zip(info.stats.partitions, consumer.partitions, strict=True):
            assert (state.partition, state.ack_floor, state.last_delivered) == (
                stats.partition,
                stats.last_seq,
                stats.last_seq,
            )
            assert (state.num_ack_pending, state.num_pending) == (0, 0)
        assert (consumer.dead_lettered_total, consumer.dropped_total, consumer.termed_total) == (0, 0, 0)
        # Server side every stored seq was delivered new once and acknowledged once; it also counts
        # redeliveries whose fetch answer was lost in a crash, which this process never saw.
        duplicates = sum(len(seen) - 1 for seen in load.deliveries.values())
        assert (consumer.delivered_total, consumer.acked_total) == (len(stored), len(stored))
        assert consumer.redelivered_total >= duplicates
        print(
            f"published {len(load.published)} acknowledged, {len(stored)} stored; "
            f"{sum(len(seen) for seen in load.deliveries.values())} deliveries in {rounds} load fetches and "
            f"{sum(drained)} drain fetches; duplicates {duplicates}; "
            f"acks ok before the last kill {len(load.acked_before_kill)}; acks in doubt {len(load.ack_in_doubt)} "
            f"(committed without an answer {len(missing)}); calls cut off {load.failures}"
        )
    finally:
        await client.close()
        await clock.close()
