"""Redis Streams as a comparison anchor: one redis-server (replicas=1) or a primary with two
replicas (replicas=3) on free 127.0.0.1 ports, append-only file fsynced every second, driven with
redis-py's asyncio client (hiredis parses replies when installed).

A topic is one stream key per partition, ``<name>:<partition>``, each with the consumer group
``bench`` (members are the group's consumers ``consumer-<member>``). There is no failover: the
replicas only hold copies (and answer WAIT).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis.asyncio as redis_asyncio
import redis.exceptions
from weir_cli.process_basics import free_port

from bench.compare.driver import BenchError, Consumer, Driver, Producer, TopicSpec
from bench.compare.server_process import ServerProcess, stop_all

#: The consumer group of every topic's stream keys.
GROUP = "bench"
#: How long servers get to answer PING and (replicas=3) the replicas to be online, seconds.
START_TIMEOUT_S = 30.0
#: How long a batch's replies (and WAIT) may take, seconds; also the wait for a pooled connection.
PUBLISH_TIMEOUT_S = 30.0
#: Connections per client (producer or consumer member): concurrent batches or partitions beyond
#: it wait for a free one.
MAX_CONNECTIONS = 64
#: Attempts at starting the servers when a port taken between probe and bind makes one fail.
START_ATTEMPTS = 3
#: The stream entry field holding a message's payload.
PAYLOAD_FIELD = b"p"


def stream_key(topic: str, partition: int) -> str:
    """Redis key of `partition` of `topic`."""
    return f"{topic}:{partition}"


def _client(port: int) -> redis_asyncio.Redis:
    """A client of the server on 127.0.0.1:`port` with at most MAX_CONNECTIONS connections (raw
    bytes replies); closing it closes its pool."""
    pool = redis_asyncio.BlockingConnectionPool(
        host="127.0.0.1", port=port, max_connections=MAX_CONNECTIONS, timeout=PUBLISH_TIMEOUT_S
    )
    return redis_asyncio.Redis.from_pool(pool)


class RedisDriver(Driver):
    """Redis Streams, AOF everysec, on 1 server or a primary and 2 replicas (`replicas` 1 or 3)."""

    system = "redis-streams"
    variant = "appendonly yes, appendfsync everysec"

    def __init__(self, replicas: int) -> None:
        if replicas not in (1, 3):
            raise ValueError(f"RedisDriver replicas must be 1 or 3, not {replicas}")
        super().__init__(replicas)
        stored = (
            "the reply comes once the primary has applied XADD in memory and put it in the AOF buffer; "
            "the AOF is fsynced every second, so a power failure can lose about the last second of "
            "acknowledged messages"
        )
        consume = " XACK is awaited (applied in memory, same AOF durability)."
        if replicas == 1:
            self.semantics = {
                "leader": f"One copy: {stored}.{consume}",
                "all": f"One copy, the same as 'leader': {stored}.{consume}",
            }
        else:
            self.semantics = {
                "leader": (
                    f"{stored[0].upper()}{stored[1:]}; the 2 replicas receive it asynchronously (no WAIT), "
                    f"and there is no automatic failover.{consume}"
                ),
                "all": (
                    f"{stored[0].upper()}{stored[1:]}; then WAIT 2 returns once both replicas received the "
                    f"batch (in memory, not fsynced: they also fsync their AOF every second).{consume}"
                ),
            }
        self._servers: list[ServerProcess] = []
        self._ports: list[int] = []
        self._admin: redis_asyncio.Redis | None = None

    @property
    def primary_port(self) -> int:
        """The primary's port. Raises BenchError when not started."""
        if not self._ports:
            raise BenchError("RedisDriver is not started")
        return self._ports[0]

    async def start(self, workdir: Path, server_cpus: set[int]) -> None:
        """Start the servers under `workdir` (``redis-<n>/`` data, ``redis-<n>.log``) pinned to
        `server_cpus`; return once the primary answers and (replicas=3) both replicas are online.
        Raises BenchError if not, after stopping whatever was started."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise BenchError("redis-server not found on PATH (Debian: apt-get install redis-server)")
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                await self._start_once(binary, workdir, server_cpus)
                return
            except BenchError as error:
                await self.stop()
                if attempt == START_ATTEMPTS or "address already in use" not in str(error).lower():
                    raise

    async def _start_once(self, binary: str, workdir: Path, server_cpus: set[int]) -> None:
        self._ports = [free_port() for _ in range(self.replicas)]
        for index, port in enumerate(self._ports):
            name = f"redis-{index}"
            data_dir = workdir / name
            data_dir.mkdir(parents=True, exist_ok=True)
            command = [
                binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data_dir),
                "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
                "--daemonize", "no", "--repl-diskless-sync-delay", "0",
            ]  # fmt: skip
            if index > 0:
                command += ["--replicaof", "127.0.0.1", str(self._ports[0])]
            server = ServerProcess(name, command, workdir / f"{name}.log", server_cpus)
            self._servers.append(server)
            server.start()
        for server, port in zip(self._servers, self._ports, strict=True):

            async def answers(port: int = port) -> bool:
                return await _pings(port)

            await server.wait_ready(answers, START_TIMEOUT_S, f"answering PING on port {port}")
        self._admin = _client(self._ports[0])
        if self.replicas > 1:
            admin = self._admin

            async def replicas_online() -> bool:
                info = await admin.info("replication")
                online = [
                    value
                    for key, value in info.items()
                    if key.startswith("slave") and isinstance(value, dict) and value.get("state") == "online"
                ]
                return info.get("connected_slaves") == self.replicas - 1 and len(online) == self.replicas - 1

            await self._servers[0].wait_ready(replicas_online, START_TIMEOUT_S, f"{self.replicas - 1} replicas online")

    async def stop(self) -> None:
        """Close the admin client, then SIGTERM every server (SIGKILL after a timeout)."""
        admin, self._admin = self._admin, None
        if admin is not None:
            with contextlib.suppress(redis.exceptions.RedisError, OSError):
                await admin.aclose()
        servers, self._servers = self._servers, []
        await stop_all(servers)

    def server_pids(self) -> dict[str, list[int]]:
        return {"redis-server": [server.pid for server in self._servers if server.running]}

    def _admin_client(self) -> redis_asyncio.Redis:
        if self._admin is None:
            raise BenchError("RedisDriver is not started")
        return self._admin

    async def create_topic(self, spec: TopicSpec) -> None:
        """Create every partition's stream key with the group ``bench`` reading from the start.
        Raises BenchError if `spec.replicas` exceeds the deployment's or Redis refuses (e.g. the
        key exists)."""
        if spec.replicas > self.replicas:
            raise BenchError(f"{self.label} cannot hold a topic with {spec.replicas} replicas")
        admin = self._admin_client()
        try:
            for partition in range(spec.partitions):
                await admin.xgroup_create(stream_key(spec.name, partition), GROUP, id="0", mkstream=True)
        except redis.exceptions.RedisError as error:
            raise BenchError(f"creating topic {spec.name}: {error}") from error

    async def delete_topic(self, spec: TopicSpec) -> None:
        """Delete every partition's stream key (and its group). Raises BenchError if Redis refuses."""
        keys = [stream_key(spec.name, partition) for partition in range(spec.partitions)]
        try:
            await self._admin_client().delete(*keys)
        except redis.exceptions.RedisError as error:
            raise BenchError(f"deleting topic {spec.name}: {error}") from error

    async def producer(self, spec: TopicSpec) -> Producer:
        # WAIT for the topic's other copies: every replica of the deployment gets every key, but a
        # topic of fewer replicas only waits for as many.
        wait_for = spec.replicas - 1 if spec.ack == "all" else 0
        return RedisProducer(_client(self.primary_port), spec, wait_for)

    async def consumer(self, spec: TopicSpec, member: int) -> Consumer:
        return RedisConsumer(_client(self.primary_port), spec, f"consumer-{member}")


async def _pings(port: int) -> bool:
    """Whether a redis-server on 127.0.0.1:`port` answers PING now."""
    client = redis_asyncio.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.5, socket_timeout=0.5)
    try:
        return bool(await client.ping())
    except (redis.exceptions.RedisError, OSError):
        return False
    finally:
        await client.aclose()


class RedisProducer(Producer):
    """One client (a bounded connection pool) sending each batch as one pipeline of XADDs, followed
    by ``WAIT <wait_for>`` on the same connection when `wait_for` > 0."""

    def __init__(self, client: redis_asyncio.Redis, spec: TopicSpec, wait_for: int) -> None:
        self._client = client
        self._spec = spec
        self._wait_for = wait_for

    async def send_batch(self, partition: int, payloads: Sequence[bytes]) -> None:
        """XADD every payload to ``<topic>:<partition>`` in one pipeline (then WAIT, up to
        PUBLISH_TIMEOUT_S). Raises BenchError if an XADD fails or returns no id, or fewer replicas
        than required acknowledge."""
        key = stream_key(self._spec.name, partition)
        try:
            async with self._client.pipeline(transaction=False) as pipeline:
                for payload in payloads:
                    pipeline.xadd(key, {PAYLOAD_FIELD: payload})
                if self._wait_for:
                    pipeline.wait(self._wait_for, int(PUBLISH_TIMEOUT_S * 1000))
                replies = await pipeline.execute()
        except redis.exceptions.RedisError as error:
            raise BenchError(f"XADD of {len(payloads)} to {key}: {type(error).__name__}: {error}") from error
        if len(replies) != len(payloads) + (1 if self._wait_for else 0):
            raise BenchError(f"XADD of {len(payloads)} to {key}: {len(replies)} replies")
        for reply in replies[: len(payloads)]:
            if not isinstance(reply, bytes) or b"-" not in reply:
                raise BenchError(f"XADD to {key}: unexpected reply {reply!r}")
        if self._wait_for and replies[-1] < self._wait_for:
            raise BenchError(
                f"WAIT {self._wait_for} after {len(payloads)} XADDs to {key}: only {replies[-1]} replicas "
                f"acknowledged within {PUBLISH_TIMEOUT_S:.0f} s"
            )

    async def close(self) -> None:
        with contextlib.suppress(redis.exceptions.RedisError, OSError):
            await self._client.aclose()


class RedisConsumer(Consumer):
    """Consumer `name` of every partition key's group ``bench``, on its own client (a bounded
    connection pool: concurrent receives of different partitions use different connections)."""

    def __init__(self, client: redis_asyncio.Redis, spec: TopicSpec, name: str) -> None:
        self._client = client
        self._spec = spec
        self._name = name

    async def receive(self, partition: int, max_messages: int, wait_ms: int) -> list[bytes]:
        """XREADGROUP up to `max_messages` new entries of ``<topic>:<partition>`` (BLOCK `wait_ms`;
        no blocking when `wait_ms` ≤ 0, as BLOCK 0 would wait forever), then XACK them all in one
        call. Raises BenchError on a Redis error or when XACK acknowledges fewer than it was given
        (an entry delivered twice)."""
        key = stream_key(self._spec.name, partition)
        try:
            # RESP2 reply: [[key, [(id, {field: value}), ...]]], or None after BLOCK with nothing.
            response: Any = await self._client.xreadgroup(
                GROUP, self._name, {key: ">"}, count=max_messages, block=wait_ms if wait_ms > 0 else None
            )
            if not response:
                return []
            identifiers: list[bytes] = []
            payloads: list[bytes] = []
            for identifier, fields in response[0][1]:
                payload = fields.get(PAYLOAD_FIELD) if isinstance(fields, dict) else None
                if not isinstance(identifier, bytes) or not isinstance(payload, bytes):
                    raise BenchError(f"XREADGROUP of {key}: unexpected entry {identifier!r} {fields!r}")
                identifiers.append(identifier)
                payloads.append(payload)
            acknowledged = await self._client.xack(key, GROUP, *identifiers)
        except redis.exceptions.RedisError as error:
            raise BenchError(f"receive from {key}: {type(error).__name__}: {error}") from error
        if acknowledged != len(identifiers):
            raise BenchError(f"XACK of {len(identifiers)} entries of {key} acknowledged {acknowledged}")
        return payloads

    async def close(self) -> None:
        with contextlib.suppress(redis.exceptions.RedisError, OSError):
            await self._client.aclose()
