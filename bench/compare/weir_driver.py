"""The comparison harness's driver for Weir: a local cluster (``weir_cli.launcher.LocalCluster``: its own
redis-server, one router, `replicas` partition nodes, a replicator when replicas > 1), every process
pinned to the server CPUs. Producers and consumers talk to each partition's primary over gRPC, as the
SDK does after its route lookup: PublishBatch with the topic's ack level; Fetch + AckBatch for a
durable consumer.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import secrets
import time
from collections.abc import Sequence
from pathlib import Path

from weir.client import NodeClient, consumer_config, stream_config
from weir.errors import WeirError
from weir.v1 import streams_pb2
from weir_cli.launcher import LocalCluster

from bench.compare.driver import BenchError, Consumer, Driver, Producer, TopicSpec

SUBJECT = "bench"
CONSUMER = "bench"
CALL_TIMEOUT_S = 60.0
REPLICA_LAG_MAX_MS = 5_000
READY_TIMEOUT_S = 60.0


def pin_process(pid: int, cpus: set[int]) -> None:
    """Pin every thread of process `pid` to `cpus` (threads it starts later inherit it)."""
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # the thread ended meanwhile
            os.sched_setaffinity(int(task), cpus)


class WeirDriver(Driver):
    system = "weir"
    semantics = {
        "leader": "The PublishBatch answer comes once the batch is committed and fsynced (SQLite WAL, "
        "synchronous=FULL) on the partition's primary. Consumer acks (AckBatch) are fsynced before their "
        "answer; the harness pipelines them (the next Fetch does not wait for the previous ack) and checks "
        "every answer.",
        "all": "The PublishBatch answer comes once the batch is fsynced on the primary and every in-sync replica "
        "(min_insync_replicas = 3 here) has stored and fsynced it; a follower leaves the in-sync set after 5 s behind "
        "(replica_lag_max_ms; the default is 1 s). Consumer acks (AckBatch) are fsynced on "
        "the primary before their answer (pipelined and checked, as for ack leader), then replicated.",
    }

    def __init__(
        self, replicas: int, fsync: str = "always", *, idempotent: bool = False, routers: list[str] | None = None
    ) -> None:
        super().__init__(replicas)
        # An existing cluster (`weir bench --router ...`): nothing is started, its processes are not
        # ours to pin or meter (server CPU and RSS read 0).
        self.existing_routers = routers
        self.fsync = fsync
        self.idempotent = idempotent
        if idempotent:
            self.system = "weir-idempotent"
        self.variant = f"fsync={fsync}, SQLite WAL per partition" + (
            ", a msg_id on every message (the SDK's default: idempotent publish)" if idempotent else ""
        )
        self.cluster: LocalCluster | None = None
        self._clients: dict[str, NodeClient] = {}
        self._primaries: dict[str, list[str]] = {}

    @property
    def router_addresses(self) -> list[str]:
        if self.existing_routers:
            return self.existing_routers
        if self.cluster is None:
            raise BenchError("the weir driver is not started")
        return self.cluster.router_addresses

    async def start(self, workdir: Path, server_cpus: set[int]) -> None:
        if self.existing_routers:
            self.variant += f"; an existing cluster at {','.join(self.existing_routers)} (server CPU not metered)"
            return
        # Followers leave the in-sync set after 5 s behind, not the default 1 s: the servers share the
        # pinned server CPUs, and on a busy machine (CI) a follower 1 s behind made ack-all publishes
        # fail not_enough_replicas (min_insync_replicas = 3) mid-run: a fault-handling figure, not this
        # benchmark's. The ack waits for every in-sync replica all the same.
        node_env = {"WEIR_NODE_FSYNC": self.fsync, "WEIR_NODE_REPLICA_LAG_MAX_MS": str(REPLICA_LAG_MAX_MS)}
        try:
            self.cluster = await asyncio.to_thread(
                LocalCluster.start,
                workdir,
                nodes=self.replicas,
                routers=1,
                replicators=1 if self.replicas > 1 else 0,
                node_env=node_env,
            )
        except Exception as error:
            raise BenchError(f"weir cluster did not start: {error}") from error
        for pids in self.server_pids().values():
            for pid in pids:
                pin_process(pid, server_cpus)

    async def stop(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
        if self.cluster is not None:
            await asyncio.to_thread(self.cluster.stop)
            self.cluster = None

    def server_pids(self) -> dict[str, list[int]]:
        cluster = self.cluster
        if cluster is None:
            return {}
        pids = {
            "weir-partition-node": [node.pid for node in cluster.nodes],
            "weir-router": [router.pid for router in cluster.routers],
            "redis-server (metadata)": [cluster.redis.process.pid] if cluster.redis.process is not None else [],
        }
        if cluster.replicators:
            pids["weir-replicator"] = [replicator.pid for replicator in cluster.replicators]
        return pids

    def primaries(self, topic: str) -> list[str]:
        """The client address of each partition's primary of `topic` (a created topic)."""
        return list(self._primaries[topic])

    def _client(self, address: str) -> NodeClient:
        client = self._clients.get(address)
        if client is None:
            client = self._clients[address] = NodeClient(address, timeout_s=CALL_TIMEOUT_S)
        return client

    def _admin(self) -> NodeClient:
        if self.cluster is None:
            raise BenchError("the weir driver is not started")
        return self._client(self.cluster.nodes[0].client_address)

    async def create_topic(self, spec: TopicSpec) -> None:
        from weir.cluster import WeirClient

        config = stream_config(
            spec.name,
            partitions=spec.partitions,
            replicas=spec.replicas,
            min_insync_replicas=spec.replicas if spec.replicas > 1 else 0,
            storage="file",
        )
        async with WeirClient(self.router_addresses) as admin:
            await admin.create_stream(config)
            await admin.create_consumer(spec.name, consumer_config(CONSUMER))
            route = await admin.route(spec.name, refresh=True)
        primaries = [entry.primary.address for entry in sorted(route.partitions, key=lambda e: e.partition)]
        if len(primaries) != spec.partitions or not all(primaries):
            raise BenchError(f"stream {spec.name}: no primary for every partition in the route")
        self._primaries[spec.name] = primaries
        await self._wait_writable(spec, primaries)

    async def _wait_writable(self, spec: TopicSpec, primaries: list[str]) -> None:
        """Until every partition's primary accepts a publish at the topic's ack level (a replicas=3
        partition needs the replicator to start shipping it). Probes with an empty-payload publish
        to a subject the harness never reads: Weir counts it, so the consumers skip it by subject."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        for partition, address in enumerate(primaries):
            client = self._client(address)
            while True:
                try:
                    await client.publish(spec.name, f"{SUBJECT}-probe", b"", partition=partition, ack_level=spec.ack)
                    break
                except WeirError as error:
                    if not error.retryable or time.monotonic() > deadline:
                        raise BenchError(f"{spec.name}/{partition} did not accept publishes: {error}") from error
                    await asyncio.sleep(0.05)

    async def delete_topic(self, spec: TopicSpec) -> None:
        from weir.cluster import WeirClient

        if self.cluster is None and not self.existing_routers:
            return
        async with WeirClient(self.router_addresses) as admin:
            await admin.delete_stream(spec.name)
        self._primaries.pop(spec.name, None)

    async def producer(self, spec: TopicSpec) -> Producer:
        return WeirProducer(
            spec, [self._client(address) for address in self._primaries[spec.name]], idempotent=self.idempotent
        )

    async def consumer(self, spec: TopicSpec, member: int) -> Consumer:
        return WeirConsumer(spec, [self._client(address) for address in self._primaries[spec.name]])


class WeirProducer(Producer):
    """PublishBatch to each partition's primary; `idempotent`: every entry carries a msg_id made as
    the SDK makes them (a random prefix per producer and a counter), so the node keeps its
    duplicate window."""

    def __init__(self, spec: TopicSpec, primaries: list[NodeClient], *, idempotent: bool = False) -> None:
        self.spec = spec
        self.primaries = primaries
        self.idempotent = idempotent
        self._msg_id_prefix = secrets.token_urlsafe(12)
        self._counter = itertools.count(1)

    async def send_batch(self, partition: int, payloads: Sequence[bytes]) -> None:
        entry = streams_pb2.PublishEntry
        if self.idempotent:
            prefix, counter = self._msg_id_prefix, self._counter
            entries = [
                entry(subject=SUBJECT, payload=payload, partition=partition, msg_id=f"{prefix}.{next(counter)}")
                for payload in payloads
            ]
        else:
            entries = [entry(subject=SUBJECT, payload=payload, partition=partition) for payload in payloads]
        try:  # the SDK's publish_batch: PublishBatch exchanges on a lockstep stream
            results = await self.primaries[partition].publish_batch(self.spec.name, entries, ack_level=self.spec.ack)
        except Exception as error:
            raise BenchError(f"weir PublishBatch to partition {partition} failed: {error}") from error
        for result in results:
            if result.result_code != "ok" or result.seq <= 0:
                raise BenchError(f"weir refused a message: {result.result_code} {result.message}")

    async def close(self) -> None:
        return None


class WeirConsumer(Consumer):
    """Fetch + AckBatch per partition, the acks pipelined: a receive sends the AckBatch of what it
    fetched without waiting for its commit, so the next Fetch overlaps it; the next receive on that
    partition (or close) waits for it and checks every result (at most one ack in flight per
    partition, so a failed ack fails the run one batch later at most)."""

    def __init__(self, spec: TopicSpec, primaries: list[NodeClient]) -> None:
        self.spec = spec
        self.primaries = primaries
        self._acks: dict[int, asyncio.Task[None]] = {}

    async def _ack(self, partition: int, seqs: list[int]) -> None:
        try:
            results = await self.primaries[partition].ack_batch(self.spec.name, CONSUMER, partition, seqs)
        except WeirError as error:
            raise BenchError(f"weir AckBatch on partition {partition} failed: {error}") from error
        for result in results:
            if result.result_code != "ok":
                raise BenchError(f"weir ack of seq {result.seq} answered {result.result_code}")

    async def _settle(self, partition: int) -> None:
        previous = self._acks.pop(partition, None)
        if previous is not None:
            await previous

    async def receive(self, partition: int, max_messages: int, wait_ms: int) -> list[bytes]:
        client = self.primaries[partition]
        try:
            messages = await client.fetch(
                self.spec.name, CONSUMER, partition, batch_size=max_messages, max_wait_ms=wait_ms
            )
        except WeirError as error:
            if error.retryable:  # a fetch that timed out on a busy machine: the loop asks again
                return []
            raise BenchError(f"weir fetch on partition {partition} failed: {error}") from error
        await self._settle(partition)
        if not messages:
            return []
        redelivered = [m.seq for m in messages if m.deliver_count != 1]
        if redelivered:
            raise BenchError(f"weir redelivered seqs {redelivered[:5]} (the run must not need redeliveries)")
        self._acks[partition] = asyncio.create_task(self._ack(partition, [m.seq for m in messages]))
        return [m.payload for m in messages if m.subject == SUBJECT]

    async def close(self) -> None:
        for partition in list(self._acks):
            await self._settle(partition)
