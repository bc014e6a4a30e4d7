"""The comparison benchmark's anchor drivers move messages correctly against real servers: NATS
JetStream (one server with default and with always-fsync storage, a three-server cluster) and Redis
Streams (one server, a primary with two replicas).

Each driver starts its servers pinned to CPU 0, makes a two-partition topic, publishes distinct
payloads per partition in sequential batches, and two group members (one per partition) drain it:
every payload arrives exactly once and in publish order. Afterwards the topic is deleted and the
servers are gone. No figure is measured here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from weir_cli.launcher import pid_alive

from bench.compare.driver import AckLevel, Consumer, Driver, Producer, TopicSpec
from bench.compare.nats_driver import NatsDriver
from bench.compare.redis_driver import RedisDriver
from tests.conftest import needs_own_processes

PARTITIONS = 2
MESSAGES_PER_PARTITION = 300
BATCH = 50
#: A receive's wait for the first message, milliseconds; a drained partition returns [] after it.
WAIT_MS = 200
#: Receives a member may make for one partition before the test gives up (bounds the drain loop).
MAX_RECEIVES = MESSAGES_PER_PARTITION + 20
SERVER_CPUS = {0}

DRIVERS: dict[str, Callable[[], Driver]] = {
    "nats-r1": lambda: NatsDriver(1),
    "nats-sync-r1": lambda: NatsDriver(1, sync_always=True),
    "nats-r3": lambda: NatsDriver(3),
    "redis-r1": lambda: RedisDriver(1),
    "redis-r3": lambda: RedisDriver(3),
}


def payloads_of(partition: int) -> list[bytes]:
    """The distinct payloads sent to `partition`, in publish order."""
    return [
        f"partition-{partition}-message-{index:04d}".encode() + b"x" * 64 for index in range(MESSAGES_PER_PARTITION)
    ]


def allowed_cpus(pid: int) -> set[str]:
    """The Cpus_allowed_list of every thread of `pid` (one entry when they all agree)."""
    lists = set()
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        for line in status.read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                lists.add(line.split(":", 1)[1].strip())
    return lists


async def send_partition(producer: Producer, partition: int) -> None:
    """Publish `payloads_of(partition)` in batches of BATCH, one batch after the other (so the
    partition's order is the publish order)."""
    payloads = payloads_of(partition)
    for start in range(0, len(payloads), BATCH):
        await producer.send_batch(partition, payloads[start : start + BATCH])


async def drain(consumer: Consumer, partition: int) -> list[bytes]:
    """Receive `partition` until a receive comes back empty; at most MAX_RECEIVES receives."""
    received: list[bytes] = []
    for _ in range(MAX_RECEIVES):
        batch = await consumer.receive(partition, 100, WAIT_MS)
        if not batch:
            return received
        received.extend(batch)
    raise AssertionError(f"partition {partition} still not drained after {MAX_RECEIVES} receives")


@pytest.mark.slow
@pytest.mark.parametrize("driver_name", list(DRIVERS))
async def test_anchor_delivers_every_message_once_in_order(driver_name: str, tmp_path: Path) -> None:
    needs_own_processes()
    driver = DRIVERS[driver_name]()
    ack: AckLevel = "all" if driver.replicas > 1 else "leader"
    spec = TopicSpec(name="anchor-topic", partitions=PARTITIONS, replicas=driver.replicas, ack=ack)
    pids: list[int] = []
    try:
        await driver.start(tmp_path, SERVER_CPUS)
        pids = [pid for kind_pids in driver.server_pids().values() for pid in kind_pids]
        assert len(pids) == driver.replicas, driver.server_pids()
        for pid in pids:
            assert allowed_cpus(pid) == {"0"}, (pid, allowed_cpus(pid))
        assert set(driver.semantics) == {"leader", "all"}
        await driver.create_topic(spec)

        producer = await driver.producer(spec)
        try:
            await asyncio.gather(*(send_partition(producer, partition) for partition in range(PARTITIONS)))
        finally:
            await producer.close()

        members = [await driver.consumer(spec, member) for member in range(PARTITIONS)]
        try:
            received = await asyncio.gather(*(drain(member, partition) for partition, member in enumerate(members)))
        finally:
            for member in members:
                await member.close()
        for partition in range(PARTITIONS):
            assert received[partition] == payloads_of(partition), f"partition {partition} of {driver.label}"

        await driver.delete_topic(spec)
    finally:
        await driver.stop()
    assert not any(driver.server_pids().values()), driver.server_pids()
    assert not [pid for pid in pids if pid_alive(pid)], "server processes left running"
