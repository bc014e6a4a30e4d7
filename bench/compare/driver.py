"""What the comparison harness needs of a system under test: start it, make a topic, publish batches
and wait for their acknowledgement, receive-and-acknowledge batches, stop it.

One `Driver` instance is one deployment of one system (a Weir cluster, a NATS JetStream server or
cluster, a Redis primary with or without replicas) able to hold topics with up to `replicas` copies.
The harness (``bench.compare.harness``) owns the workloads, the clock, pinning, CPU and memory
figures; a driver only moves messages, with the acknowledgement semantics its ``semantics`` text
states. Every driver raises `BenchError` when a message is refused, lost or duplicated: a run that
does not get every message acknowledged fails, it never reports a figure.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

AckLevel = Literal["leader", "all"]


class BenchError(RuntimeError):
    """A run broke its contract: a publish was refused or not acknowledged, a message was lost or
    delivered twice, a server did not start."""


@dataclass(frozen=True)
class TopicSpec:
    """One topic (Weir stream, JetStream stream, set of Redis stream keys) of a run.

    `name` is unique per run ([A-Za-z0-9_-]); `partitions` ≥ 1; `replicas` copies of every message
    (1 or 3); `ack` what a publish acknowledgement waits for: "leader" (the partition's primary
    stored it) or "all" (every in-sync replica stored it)."""

    name: str
    partitions: int
    replicas: int
    ack: AckLevel


class Producer(abc.ABC):
    """One producer connection. `send_batch` may be called concurrently (the harness keeps several
    batches in flight per producer)."""

    @abc.abstractmethod
    async def send_batch(self, partition: int, payloads: Sequence[bytes]) -> None:
        """Publish `payloads` (in order) to `partition` (0-based) and return once every one is
        acknowledged at the topic's ack level. Raises BenchError if any is refused."""

    @abc.abstractmethod
    async def close(self) -> None: ...


class Consumer(abc.ABC):
    """One member of the topic's single durable consumer group (every member shares one cursor per
    partition: a message goes to one member). `receive` may be called concurrently for different
    partitions, never for the same partition."""

    @abc.abstractmethod
    async def receive(self, partition: int, max_messages: int, wait_ms: int) -> list[bytes]:
        """Up to `max_messages` payloads of `partition` not yet delivered to the group, waiting up to
        `wait_ms` for the first when none is ready (then []). Acknowledges them before returning
        (the acknowledgement's durability is the system's own: see Driver.semantics)."""

    @abc.abstractmethod
    async def close(self) -> None: ...


class Driver(abc.ABC):
    """One deployment of one system, started by `start` and stopped by `stop`."""

    #: "weir", "nats-jetstream" or "redis-streams".
    system: str
    #: The settings a reader needs to interpret the figures, e.g. "fsync=always",
    #: "file storage, sync_interval=always", "appendonly yes, appendfsync everysec".
    variant: str
    #: One sentence per ack level: what an acknowledged publish promises (durability, copies).
    semantics: dict[str, str]

    def __init__(self, replicas: int) -> None:
        self.replicas = replicas

    @property
    def label(self) -> str:
        """Short unique name of the deployment in reports, e.g. "weir r3" or "nats-jetstream(sync) r1"."""
        return f"{self.system} r{self.replicas}"

    @abc.abstractmethod
    async def start(self, workdir: Path, server_cpus: set[int]) -> None:
        """Start the servers (on free 127.0.0.1 ports, data under `workdir`), every thread pinned
        to `server_cpus`; return when they accept work. Raises BenchError if they do not start."""

    @abc.abstractmethod
    async def stop(self) -> None:
        """Stop every server process this driver started (also after a failed start)."""

    @abc.abstractmethod
    def server_pids(self) -> dict[str, list[int]]:
        """Process kind -> pids of the running servers (for CPU seconds and peak RSS)."""

    @abc.abstractmethod
    async def create_topic(self, spec: TopicSpec) -> None:
        """Create the topic and its consumer group; return when it accepts publishes."""

    @abc.abstractmethod
    async def delete_topic(self, spec: TopicSpec) -> None:
        """Delete the topic (untimed cleanup between runs)."""

    @abc.abstractmethod
    async def producer(self, spec: TopicSpec) -> Producer: ...

    @abc.abstractmethod
    async def consumer(self, spec: TopicSpec, member: int) -> Consumer:
        """Member `member` (0-based) of the topic's consumer group."""
