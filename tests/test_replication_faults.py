"""Replication fault tests against a real multi-process cluster (DESIGN §5, issue 5).

Every test starts its own cluster (redis-server, 2 routers, 3 partition nodes, 1 replicator) with
the test timings of conftest (heartbeat TTL 1.5 s, replica lag bound 2 s) and kills processes with
SIGKILL. What they show:

- killing the primary under continuous ack_level ALL publishing loses no acknowledged message: each
  one is readable afterwards at the seq it was acknowledged with, identical on every replica, and a
  consumer group reading through the failover receives every one of them (duplicates counted);
- killing the replicator mid-stream and restarting it leaves the replicas without gaps or
  duplicates;
- a secondary that missed messages removed meanwhile (work-queue acks) ends up without them;
- a secondary that was down leaves the in-sync set, and catches up and rejoins it after restart;
- a node cut off from Redis (a TCP proxy in front of its Redis connection) stops accepting writes
  once it cannot renew its lease, a new leader takes over, and when the cut heals the old primary
  follows the new one;
- a consumer deleted while one copy's node is down fails (UNAVAILABLE), and the same delete retried
  once the node is back removes it there too, though the other copies already answer NOT_FOUND.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from pathlib import Path

import pytest
from weir.client import NodeClient, consumer_config, stream_config
from weir.cluster import WeirClient
from weir.errors import NoSuchConsumerError, WeirError
from weir.message import Message
from weir.v1 import types_pb2
from weir_cli.launcher import LocalCluster, NodeHandle
from weir_server.internal_clients import ReplicationClient

from tests.conftest import (
    CLUSTER_NODE_ENV,
    CLUSTER_REPLICATOR_ENV,
    CLUSTER_ROUTER_ENV,
    eventually,
    needs_own_processes,
    start_cluster,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def node_named(cluster: LocalCluster, node_id: str) -> NodeHandle:
    return next(node for node in cluster.nodes if node.name == node_id)


async def replica_records(node: NodeHandle, stream: str, partition: int) -> list[tuple[int, bytes]]:
    """(seq, encoded message) of one node's copy, read through its internal port."""
    async with NodeClient(node.internal_address) as client:
        return [(message.seq, message.SerializeToString()) async for message in client.read_all(stream, partition)]


async def replica_state(node: NodeHandle, stream: str, partition: int) -> tuple[int, int, int]:
    """(replica_epoch, last_seq, role) of one node's copy."""
    async with ReplicationClient(node.internal_address) as client:
        state = await client.replica_state(stream, partition)
    return state.replica_epoch, state.last_seq, state.role


async def in_sync_of(node: NodeHandle, stream: str, partition: int) -> list[str]:
    async with NodeClient(node.internal_address) as client:
        info = await client.stream_info(stream)
    return next(list(entry.in_sync_node_ids) for entry in info.stats.partitions if entry.partition == partition)


async def all_replicas_equal(cluster: LocalCluster, stream: str, partition: int) -> bool:
    ends = []
    for node in cluster.nodes:
        try:
            ends.append((await replica_state(node, stream, partition))[1])
        except WeirError:
            return False
    return len(set(ends)) == 1


class Publisher:
    """Publishes unique payloads with the given ack level until stopped; remembers what was
    acknowledged (payload -> (partition, seq)) and how many calls failed for good."""

    def __init__(self, client: WeirClient, stream: str, partitions: int, ack_level: str) -> None:
        self.client = client
        self.stream = stream
        self.partitions = partitions
        self.ack_level = ack_level
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed = 0
        self.errors: collections.Counter[str] = collections.Counter()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> Publisher:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def _one(self, worker: int, index: int) -> None:
        payload = f"w{worker}-m{index}".encode()
        try:
            ack = await self.client.publish(
                self.stream, "orders.new", payload, partition=index % self.partitions, ack_level=self.ack_level
            )
        except WeirError as error:
            self.failed += 1
            self.errors[error.result_code.value] += 1
            return
        self.acked[payload] = (ack.partition, ack.seq)

    async def _run(self) -> None:
        async def worker(number: int) -> None:
            index = 0
            while not self._stop.is_set():
                await self._one(number, index)
                index += 1

        await asyncio.gather(*(worker(number) for number in range(8)))

    async def wait_for(self, count: int, timeout_s: float) -> None:
        async def enough() -> bool:
            if self._task is not None and self._task.done():
                self._task.result()  # a publisher that crashed: show why
            return len(self.acked) >= count

        await eventually(enough, timeout_s, f"{count} acknowledged publishes (errors so far: {self.errors})")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task


async def _true(value: bool) -> bool:
    return value


async def test_killing_the_primary_under_ack_all_loses_no_acknowledged_message(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    try:
        async with WeirClient(cluster.router_addresses, retry_timeout_s=30) as client:
            stream = "payments"
            await client.create_stream(
                stream_config(stream, subjects=["orders.>"], partitions=2, replicas=3, min_insync_replicas=2)
            )
            seen: collections.Counter[bytes] = collections.Counter()

            async def handle(message: Message) -> None:
                seen[message.payload] += 1

            members = [
                client.group_consumer(stream, "billing", handle, batch_size=50, max_wait_ms=200).start()
                for _ in range(2)
            ]
            publisher = Publisher(client, stream, 2, "all").start()
            await publisher.wait_for(300, 60)
            route = await client.route(stream)
            victim = node_named(cluster, route.partitions[0].primary.node_id)
            victim.kill()  # SIGKILL: no goodbye, no flush beyond what was fsynced
            acked_before_kill = len(publisher.acked)

            async def failed_over() -> bool:
                entry = (await client.route(stream, refresh=True)).partitions[0]
                return entry.primary.node_id != victim.name and entry.leader_epoch == 2 and entry.primary.alive

            took = await eventually(failed_over, 20, "a new primary for partition 0")
            await publisher.wait_for(acked_before_kill + 300, 60)  # publishing continues on the new primary
            await publisher.stop()
            assert took < 10

            victim.restart()  # it returns as a secondary, truncates any divergent tail, catches up
            for partition in range(2):
                await eventually(
                    lambda p=partition: all_replicas_equal(cluster, stream, p),  # type: ignore[misc]
                    30,
                    f"every replica of partition {partition} at the same last seq",
                )
            copies = {
                (node.name, partition): await replica_records(node, stream, partition)
                for node in cluster.nodes
                for partition in range(2)
            }
            for partition in range(2):
                reference = copies[(cluster.nodes[0].name, partition)]
                seqs = [seq for seq, _ in reference]
                assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
                for node in cluster.nodes[1:]:
                    assert copies[(node.name, partition)] == reference, f"{node.name} differs on partition {partition}"
            by_position = {
                (partition, types_pb2.Message.FromString(record).seq): types_pb2.Message.FromString(record).payload
                for (node_id, partition), records in copies.items()
                if node_id == cluster.nodes[0].name
                for _, record in records
            }
            lost = [payload for payload, position in publisher.acked.items() if by_position.get(position) != payload]
            assert not lost, f"{len(lost)} acknowledged messages missing or changed, e.g. {lost[:3]}"

            async def all_consumed() -> bool:
                return all(payload in seen for payload in publisher.acked)

            await eventually(all_consumed, 60, "the group consumed every acknowledged message")
            for member in members:
                await member.stop()
            duplicates = sum(count - 1 for count in seen.values() if count > 1)
            print(
                f"acknowledged {len(publisher.acked)}, failed for good {publisher.failed}, "
                f"failover {took:.2f}s, consumer duplicates {duplicates}"
            )
    finally:
        cluster.stop()


async def test_killing_the_replicator_mid_stream_resumes_without_gaps_or_duplicates(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    try:
        async with WeirClient(cluster.router_addresses, retry_timeout_s=30) as client:
            stream = "ledger"
            await client.create_stream(stream_config(stream, subjects=["orders.>"], partitions=2, replicas=3))
            publisher = Publisher(client, stream, 2, "leader").start()
            await publisher.wait_for(300, 60)
            replicator = cluster.replicators[0]
            replicator.kill()
            await publisher.wait_for(len(publisher.acked) + 300, 60)  # the primaries keep taking writes
            replicator.restart()
            await publisher.wait_for(len(publisher.acked) + 300, 60)
            await publisher.stop()
            stored = 0
            for partition in range(2):
                await eventually(
                    lambda p=partition: all_replicas_equal(cluster, stream, p),  # type: ignore[misc]
                    30,
                    f"the secondaries of partition {partition} caught up",
                )
                copies = [await replica_records(node, stream, partition) for node in cluster.nodes]
                seqs = [seq for seq, _ in copies[0]]
                assert seqs == list(range(1, len(seqs) + 1)), "a gap or a duplicate in the log"
                assert all(copy == copies[0] for copy in copies[1:])
                stored += len(seqs)
            assert stored == len(publisher.acked)
    finally:
        cluster.stop()


async def test_a_lagging_secondary_ends_up_without_the_messages_removed_while_it_lagged(tmp_path: Path) -> None:
    """Work-queue acks remove messages on the primary while its secondaries have none of them yet
    (the replicator is down): once it is back, pulling 10 records at a time, every copy ends up
    holding exactly the messages the primary still holds (the removed ones are never sent)."""
    needs_own_processes()
    cluster = LocalCluster.start(
        tmp_path,
        nodes=3,
        routers=1,
        replicators=1,
        node_env=CLUSTER_NODE_ENV,
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env={**CLUSTER_REPLICATOR_ENV, "WEIR_REPLICATOR_MAX_BATCH_MESSAGES": "10"},
    )
    try:
        async with WeirClient(cluster.router_addresses, retry_timeout_s=30) as client:
            stream = "jobs"
            await client.create_stream(stream_config(stream, retention="work_queue", replicas=3))
            cluster.replicators[0].kill()  # the secondaries get nothing until it is back
            pending = [await client.publish_nowait(stream, "jobs.run", b"job-%d" % index) for index in range(200)]
            assert [ack.seq for ack in await asyncio.gather(*pending)] == list(range(1, 201))
            await client.create_consumer(stream, consumer_config("workers", ack_wait_ms=60_000))
            fetched = await client.fetch(stream, "workers", 0, batch_size=200)
            assert [message.seq for message in fetched] == list(range(1, 201))
            assert set(await client.ack_batch(stream, "workers", 0, list(range(181, 201)))) == {"ok"}
            cluster.replicators[0].restart()

            async def copies_equal() -> bool:
                copies = [await replica_records(node, stream, 0) for node in cluster.nodes]
                return all(copy == copies[0] for copy in copies[1:]) and len(copies[0]) == 180

            await eventually(copies_equal, 60, "every copy holds seqs 1-180 and none of the acked 181-200")
            copy = await replica_records(cluster.nodes[0], stream, 0)
            assert [seq for seq, _ in copy] == list(range(1, 181))
    finally:
        cluster.stop()


async def test_a_stopped_secondary_leaves_the_in_sync_set_then_catches_up_and_rejoins(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    try:
        async with WeirClient(cluster.router_addresses, retry_timeout_s=30) as client:
            stream = "audit"
            await client.create_stream(
                stream_config(stream, subjects=["orders.>"], partitions=1, replicas=3, min_insync_replicas=2)
            )
            entry = (await client.route(stream, refresh=True)).partitions[0]
            primary = node_named(cluster, entry.primary.node_id)
            secondary = node_named(cluster, entry.secondaries[0].node_id)
            publisher = Publisher(client, stream, 1, "all").start()
            await publisher.wait_for(100, 60)
            secondary.kill()

            async def left() -> bool:
                return secondary.name not in await in_sync_of(primary, stream, 0)

            await eventually(left, 15, f"{secondary.name} dropped from the in-sync set")
            before = len(publisher.acked)
            await publisher.wait_for(before + 500, 60)  # ack=all goes on with 2 in sync (min_insync 2)
            secondary.restart()

            async def rejoined() -> bool:
                return secondary.name in await in_sync_of(primary, stream, 0)

            took = await eventually(rejoined, 30, f"{secondary.name} back in the in-sync set")
            await publisher.stop()
            await eventually(lambda: all_replicas_equal(cluster, stream, 0), 30, "every replica caught up")
            copies = [await replica_records(node, stream, 0) for node in cluster.nodes]
            assert all(copy == copies[0] for copy in copies[1:])
            print(f"rejoined {took:.2f}s after restart; acknowledged {len(publisher.acked)}")
    finally:
        cluster.stop()


async def test_a_delete_retried_after_a_copy_was_down_removes_the_consumer_there_too(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    try:
        async with WeirClient(cluster.router_addresses, retry_timeout_s=30) as client:
            stream = "ledger"
            await client.create_stream(stream_config(stream, subjects=["ledger.>"], partitions=1, replicas=3))
            await client.create_consumer(stream, consumer_config("billing"))
            entry = (await client.route(stream, refresh=True)).partitions[0]
            secondary = node_named(cluster, entry.secondaries[0].node_id)
            secondary.kill()
            async with WeirClient(cluster.router_addresses, retry_timeout_s=1) as impatient:
                with pytest.raises(WeirError) as failed:
                    await impatient.delete_consumer(stream, "billing")
            assert not isinstance(failed.value, NoSuchConsumerError), failed.value
            assert failed.value.retryable, failed.value
            secondary.restart()

            async def deleted_everywhere() -> bool:
                try:
                    await client.delete_consumer(stream, "billing")
                except NoSuchConsumerError:
                    pass  # no copy answered that it deleted it: whether one still has it is checked below
                except WeirError:  # the restarted node is not serving yet
                    return False
                return all([await lacks_consumer(node, stream, "billing") for node in cluster.nodes])

            await eventually(deleted_everywhere, 60, "the retried delete reaching the restarted copy")
            with pytest.raises(NoSuchConsumerError):  # now no copy has it: NOT_FOUND, as for any unknown consumer
                await client.delete_consumer(stream, "billing")
    finally:
        cluster.stop()


async def lacks_consumer(node: NodeHandle, stream: str, consumer: str) -> bool:
    """Whether one node's copy of `stream` has no consumer `consumer` (asked on its internal port)."""
    async with NodeClient(node.internal_address) as client:
        try:
            await client.consumer_info(stream, consumer)
        except NoSuchConsumerError:
            return True
    return False


class TcpProxy:
    """A TCP proxy on 127.0.0.1 that can cut every connection through it and refuse new ones."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.cut = False
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut:
            writer.close()
            return
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers.update((writer, upstream_writer))

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ConnectionError):
                while not self.cut and (data := await source.read(65536)):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    def sever(self) -> None:
        self.cut = True
        for writer in self._writers:
            writer.close()
        self._writers.clear()

    def heal(self) -> None:
        self.cut = False

    async def close(self) -> None:
        self.sever()
        if self._server is not None:
            self._server.close()


async def test_a_node_cut_off_from_the_cluster_cannot_accept_writes_once_a_new_leader_exists(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, nodes=2)
    proxy = await TcpProxy(cluster.redis.placement.host, cluster.redis.port).start()
    isolated = NodeHandle(
        name="node-3",
        data_dir=tmp_path / "node-3",
        log_path=tmp_path / "node-3.log",
        env={
            **CLUSTER_NODE_ENV,
            "WEIR_NODE_REDIS_URL": f"redis://127.0.0.1:{proxy.port}/0",
            "WEIR_NODE_REDIS_PASSWORD_FILE": str(cluster.redis.password_file),
        },
        die_with_parent=False,  # started from a worker thread; cluster.stop() below ends it
    )
    cluster.nodes.append(isolated)
    await asyncio.to_thread(isolated.start)  # the proxy runs on this event loop: keep it free
    try:
        async with WeirClient(cluster.router_addresses, retry_timeout_s=30) as client:
            stream = "fenced"
            await client.create_stream(
                stream_config(stream, subjects=["orders.>"], partitions=3, replicas=3, min_insync_replicas=2)
            )
            route = await client.route(stream)
            partition = next(entry.partition for entry in route.partitions if entry.primary.node_id == isolated.name)
            for index in range(50):
                await client.publish(stream, "orders.new", b"before-%d" % index, partition=partition, ack_level="all")
            proxy.sever()  # the node keeps running and serving, but cannot reach Redis

            async def new_leader() -> bool:
                entry = (await client.route(stream, refresh=True)).partitions[partition]
                return entry.primary.node_id != isolated.name and entry.leader_epoch == 2

            await eventually(new_leader, 20, "the controller replaced the cut-off primary")
            async with NodeClient(isolated.client_address) as direct:
                for ack_level in ("leader", "all", "none"):
                    with pytest.raises(WeirError) as refused:
                        await direct.publish(stream, "orders.new", b"stale", partition=partition, ack_level=ack_level)
                    assert refused.value.result_code.value in ("leader_lease_expired", "not_leader")
                    assert refused.value.retryable
            for index in range(50):
                await client.publish(stream, "orders.new", b"after-%d" % index, partition=partition, ack_level="all")
            proxy.heal()

            async def follows() -> bool:
                epoch, _, role = await replica_state(isolated, stream, partition)
                return epoch == 2 and role == types_pb2.PARTITION_ROLE_SECONDARY

            await eventually(follows, 20, "the old primary follows the new leader")
            await eventually(lambda: all_replicas_equal(cluster, stream, partition), 30, "it caught up")
            copies = [await replica_records(node, stream, partition) for node in cluster.nodes]
            assert all(copy == copies[0] for copy in copies[1:])
            payloads = [types_pb2.Message.FromString(record).payload for _, record in copies[0]]
            assert b"stale" not in payloads
            assert payloads == [b"before-%d" % i for i in range(50)] + [b"after-%d" % i for i in range(50)]
    finally:
        await proxy.close()
        cluster.stop()
