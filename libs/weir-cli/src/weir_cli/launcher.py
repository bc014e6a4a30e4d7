"""Start Weir's processes for real: partition nodes, routers, a Redis of their own, and the whole
local cluster (`weir cluster up`, the demo, the tests and the benchmarks use this).

A process started here binds port 0 for every server and reports the ports it got through its
ready file, so many can run side by side without port races. `stop()` sends SIGTERM (drain and
flush), `kill()` sends SIGKILL (crash), `restart()` starts the same process on the same data
directory (and the same ports, when they are still free).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Self

from weir.tls import ChannelSecurity
from weir_server import devcerts
from weir_server.metadata_redis import RedisAccess

from weir_cli.files import write_atomically
from weir_cli.metadata_store import (
    EMBEDDED_REDIS_ORIGIN,
    RedisHandle,
    redis_server_binary,
)
from weir_cli.ports import Ports, plan_ports, port_is_free, read_ports, wanted_ports, write_ports
from weir_cli.process_basics import (
    LOCAL,
    LOOPBACK,
    LaunchError,
    Placement,
    owner_only_secret,
    with_parent_death,
)
from weir_cli.redis_ha import SentinelHandle, sentinel_url, start_replica_set

READY_TIMEOUT_S = 30.0


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (/proc), 0 if unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


@dataclass
class ProcessHandle:
    """A Weir service process started from Python: its settings come only from `env` plus what the
    subclass adds (a stray variable of ours with the service's prefix must not leak in), it binds
    port 0 unless told otherwise and reports the ports it got through its ready file."""

    name: str
    data_dir: Path
    log_path: Path
    env: dict[str, str]
    taskset_cpus: str | None = None
    # SIGKILL the process when the thread that started it exits (prctl PR_SET_PDEATHSIG): start it
    # from a long-lived thread (not a short-lived worker thread) or set this to False.
    die_with_parent: bool = True
    # Address-space limit (RLIMIT_AS) of the process, for tests that must show a request cannot make
    # it allocate out of proportion: an allocation past it fails instead of exhausting the machine.
    memory_limit_bytes: int | None = None
    # The development certificates (weir_server.devcerts) the process serves and calls with; None =
    # its explicit plaintext setting (local development). A TLS or plaintext setting in `env` wins.
    tls_dir: Path | None = None
    placement: Placement = LOCAL
    process: subprocess.Popen[bytes] | None = None
    _log_file: object | None = field(default=None, repr=False)

    module: ClassVar[str] = ""
    env_prefix: ClassVar[str] = ""
    ready_timeout_s: ClassVar[float] = READY_TIMEOUT_S
    port_fields: ClassVar[tuple[str, ...]] = ("metrics_port",)

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def ready_file(self) -> Path:
        return self.data_dir / "ready.json"

    def _settings(self, reuse_ports: bool) -> dict[str, str]:
        raise NotImplementedError

    def _take_ports(self, ready: dict[str, object]) -> None:
        raise NotImplementedError

    def start(self, *, reuse_ports: bool = False) -> Self:
        """Start the process and wait until it serves (raises LaunchError with its log if not)."""
        self.spawn(reuse_ports=reuse_ports)
        deadline = time.monotonic() + self.ready_timeout_s
        while not self.poll_ready(deadline):
            time.sleep(0.02)
        return self

    def spawn(self, *, reuse_ports: bool = False) -> None:
        """Start the process without waiting (`poll_ready` says when it serves). `reuse_ports`: bind
        the ports in this handle's fields (0 = any free one) instead of any free one."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.ready_file.unlink(missing_ok=True)
        env = {key: value for key, value in os.environ.items() if not key.startswith(self.env_prefix)}
        env.update(self.env)
        env.update(self._settings(reuse_ports))
        if not any(key.startswith(f"{self.env_prefix}TLS_") or key == f"{self.env_prefix}PLAINTEXT" for key in env):
            env.update(self._security_settings())
        env[f"{self.env_prefix}READY_FILE"] = str(self.ready_file)
        if self.placement.host != LOOPBACK:
            env[f"{self.env_prefix}HOST"] = self.placement.host
        command: list[str] = [sys.executable, "-m", self.module]
        if self.taskset_cpus:
            command = ["taskset", "-c", self.taskset_cpus, *command]
        if self.memory_limit_bytes is not None:
            command = [sys.executable, "-c", _MEMORY_LIMIT, str(self.memory_limit_bytes), *command]
        if self.die_with_parent:
            command = with_parent_death(command)
        command = [*self.placement.command_prefix, *command]
        log_file = open(self.log_path, "ab")  # noqa: SIM115 (kept open for the child's lifetime)
        self._log_file = log_file
        self.process = subprocess.Popen(
            command,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=not self.die_with_parent,
        )

    def poll_ready(self, deadline: float) -> bool:
        """True once the spawned process serves (its ports taken from its ready file), False while it
        starts. Errors: LaunchError with its log when it exited, or (killed) when `deadline`
        (time.monotonic) passed."""
        assert self.process is not None, "spawn first"
        if self.ready_file.exists():
            self._take_ports(json.loads(self.ready_file.read_text()))
            return True
        if self.process.poll() is not None:
            raise LaunchError(f"{self.name} exited with {self.process.returncode}:\n{self.log_tail()}")
        if time.monotonic() >= deadline:
            self.kill()
            raise LaunchError(f"{self.name} not ready after {self.ready_timeout_s:.0f}s:\n{self.log_tail()}")
        return False

    def ports(self) -> dict[str, int]:
        """This process's ports by field name (what `weir cluster up` records and binds again)."""
        return {name: int(getattr(self, name)) for name in self.port_fields}

    def want_ports(self, ports: Mapping[str, int]) -> None:
        """Set the port fields named in `ports` (bound by `spawn(reuse_ports=True)`)."""
        for name, port in ports.items():
            if name in self.port_fields:
                setattr(self, name, int(port))

    def _security_settings(self) -> dict[str, str]:
        prefix = self.env_prefix
        if self.tls_dir is None:
            return {f"{prefix}PLAINTEXT": "true"}
        return {
            f"{prefix}TLS_CERT_FILE": str(self.tls_dir / f"{devcerts.SERVICE}.pem"),
            f"{prefix}TLS_KEY_FILE": str(self.tls_dir / f"{devcerts.SERVICE}-key.pem"),
            f"{prefix}TLS_CA_FILE": str(self.tls_dir / f"{devcerts.CA}.pem"),
            # the services' token, for a cluster with an auth file: what they send, and (routers and
            # nodes) the token they serve as the cluster's services
            f"{prefix}TOKEN_FILE": str(self.tls_dir / devcerts.SERVICE_TOKEN),
            f"{prefix}SERVICE_TOKEN_FILE": str(self.tls_dir / devcerts.SERVICE_TOKEN),
        }

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout_s: float = 20.0) -> int:
        """SIGTERM and wait (drain, flush, close); SIGKILL if it does not exit in time."""
        if self.process is None:  # never spawned (a start that failed before its turn)
            return 0
        if self.process.poll() is not None:
            return self._returncode()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return self._returncode()

    def kill(self) -> None:
        """SIGKILL: a crash with no chance to flush anything."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self) -> Self:
        self.stop()
        return self.start(reuse_ports=True)

    def peak_rss_bytes(self) -> int:
        """High-water resident set size of the running process (VmHWM), 0 if unknown."""
        if self.process is None:
            return 0
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def cpu_seconds(self) -> float:
        """User + system CPU time of the running process, 0 if unknown."""
        return 0.0 if self.process is None else process_cpu_seconds(self.process.pid)

    def _returncode(self) -> int:
        assert self.process is not None
        return self.process.returncode if self.process.returncode is not None else 0


@dataclass
class NodeHandle(ProcessHandle):
    """One partition node process and how to reach it."""

    client_port: int = 0
    internal_port: int = 0
    metrics_port: int = 0

    module: ClassVar[str] = "weir_partition_node"
    env_prefix: ClassVar[str] = "WEIR_NODE_"
    port_fields: ClassVar[tuple[str, ...]] = ("client_port", "internal_port", "metrics_port")

    @property
    def node_id(self) -> str:
        return self.name

    @property
    def client_address(self) -> str:
        return f"{self.placement.host}:{self.client_port}"

    @property
    def internal_address(self) -> str:
        return f"{self.placement.host}:{self.internal_port}"

    def _settings(self, reuse_ports: bool) -> dict[str, str]:
        return {
            "WEIR_NODE_NODE_ID": self.name,
            "WEIR_NODE_DATA_DIR": str(self.data_dir),
            "WEIR_NODE_CLIENT_PORT": str(self.client_port if reuse_ports else 0),
            "WEIR_NODE_INTERNAL_PORT": str(self.internal_port if reuse_ports else 0),
            "WEIR_NODE_METRICS_PORT": str(self.metrics_port if reuse_ports else 0),
        }

    def _take_ports(self, ready: dict[str, object]) -> None:
        self.client_port = int(str(ready["client_port"]))
        self.internal_port = int(str(ready["internal_port"]))
        self.metrics_port = int(str(ready["metrics_port"]))


@dataclass
class RouterHandle(ProcessHandle):
    """One router process."""

    port: int = 0
    metrics_port: int = 0

    module: ClassVar[str] = "weir_router"
    env_prefix: ClassVar[str] = "WEIR_ROUTER_"
    port_fields: ClassVar[tuple[str, ...]] = ("port", "metrics_port")

    @property
    def router_id(self) -> str:
        return self.name

    @property
    def address(self) -> str:
        return f"{self.placement.host}:{self.port}"

    def _settings(self, reuse_ports: bool) -> dict[str, str]:
        return {
            "WEIR_ROUTER_ROUTER_ID": self.name,
            "WEIR_ROUTER_PORT": str(self.port if reuse_ports else 0),
            "WEIR_ROUTER_METRICS_PORT": str(self.metrics_port if reuse_ports else 0),
        }

    def _take_ports(self, ready: dict[str, object]) -> None:
        self.port = int(str(ready["port"]))
        self.metrics_port = int(str(ready["metrics_port"]))


class ReplicatorHandle(ProcessHandle):
    """One replicator process."""

    metrics_port: int = 0

    module: ClassVar[str] = "weir_replicator"
    env_prefix: ClassVar[str] = "WEIR_REPLICATOR_"

    def _settings(self, reuse_ports: bool) -> dict[str, str]:
        return {
            "WEIR_REPLICATOR_REPLICATOR_ID": self.name,
            "WEIR_REPLICATOR_METRICS_PORT": str(self.metrics_port if reuse_ports else 0),
        }

    def _take_ports(self, ready: dict[str, object]) -> None:
        self.metrics_port = int(str(ready["metrics_port"]))


class GatewayHandle(ProcessHandle):
    """One protocol gateway process (kafka-pixy's API on `kafka_pixy_address`; RocketMQ's
    MessagingService on `rocketmq_address`, both v1's and v2's, which RocketMQ 5's clients call; the
    streams seed's WaymakerStreamsService on `waymaker_streams_address`)."""

    kafka_pixy_port: int = 0
    rocketmq_port: int = 0
    waymaker_streams_port: int = 0
    metrics_port: int = 0

    module: ClassVar[str] = "weir_gateway"
    env_prefix: ClassVar[str] = "WEIR_GATEWAY_"
    port_fields: ClassVar[tuple[str, ...]] = (
        "kafka_pixy_port",
        "rocketmq_port",
        "waymaker_streams_port",
        "metrics_port",
    )

    @property
    def kafka_pixy_address(self) -> str:
        return f"{self.placement.host}:{self.kafka_pixy_port}"

    @property
    def rocketmq_address(self) -> str:
        return f"{self.placement.host}:{self.rocketmq_port}"

    @property
    def waymaker_streams_address(self) -> str:
        return f"{self.placement.host}:{self.waymaker_streams_port}"

    @property
    def doors(self) -> str:
        """Where each front door serves, as `weir cluster up` prints it: "kafka-pixy at HOST:PORT,
        RocketMQ (v1 and 5.x/v2) at HOST:PORT, waymaker.streams at HOST:PORT"."""
        return (
            f"kafka-pixy at {self.kafka_pixy_address}, RocketMQ (v1 and 5.x/v2) at {self.rocketmq_address}, "
            f"waymaker.streams at {self.waymaker_streams_address}"
        )

    def _settings(self, reuse_ports: bool) -> dict[str, str]:
        return {
            "WEIR_GATEWAY_GATEWAY_ID": self.name,
            "WEIR_GATEWAY_KAFKA_PIXY_PORT": str(self.kafka_pixy_port if reuse_ports else 0),
            "WEIR_GATEWAY_ROCKETMQ_PORT": str(self.rocketmq_port if reuse_ports else 0),
            "WEIR_GATEWAY_WAYMAKER_STREAMS_PORT": str(self.waymaker_streams_port if reuse_ports else 0),
            "WEIR_GATEWAY_METRICS_PORT": str(self.metrics_port if reuse_ports else 0),
        }

    def _take_ports(self, ready: dict[str, object]) -> None:
        self.kafka_pixy_port = int(str(ready["kafka_pixy_port"]))
        self.rocketmq_port = int(str(ready["rocketmq_port"]))
        self.waymaker_streams_port = int(str(ready["waymaker_streams_port"]))
        self.metrics_port = int(str(ready["metrics_port"]))


MAX_SOCKET_PATH_CHARS = 100  # sun_path holds 108 bytes


@dataclass
class NumaflowSourceHandle(ProcessHandle):
    """One Numaflow source sidecar (source.v1 on the Unix socket `socket_path`; its server-info file
    next to it), reading a stream of this cluster as one member of a consumer group."""

    socket_path: Path | None = None
    metrics_port: int = 0

    module: ClassVar[str] = "weir_numaflow_source"
    env_prefix: ClassVar[str] = "WEIR_NUMAFLOW_SOURCE_"

    def __post_init__(self) -> None:
        if self.socket_path is None:
            inside = self.data_dir / "source.sock"
            digest = hashlib.sha256(str(inside).encode()).hexdigest()[:16]
            short = Path(tempfile.gettempdir()) / f"weir-nf-{digest}.sock"
            self.socket_path = inside if len(str(inside)) <= MAX_SOCKET_PATH_CHARS else short

    @property
    def server_info_file(self) -> Path:
        return self.data_dir / "sourcer-server-info"

    def _settings(self, reuse_ports: bool) -> dict[str, str]:
        return {
            "WEIR_NUMAFLOW_SOURCE_SOCKET_PATH": str(self.socket_path),
            "WEIR_NUMAFLOW_SOURCE_SERVER_INFO_FILE": str(self.server_info_file),
            "WEIR_NUMAFLOW_SOURCE_HOST": "127.0.0.1",
            "WEIR_NUMAFLOW_SOURCE_METRICS_PORT": str(self.metrics_port if reuse_ports else 0),
        }

    def _take_ports(self, ready: dict[str, object]) -> None:
        self.metrics_port = int(str(ready["metrics_port"]))


class InvokerHandle(ProcessHandle):
    """The invoker: durable handlers over streams (weir.v1.Invoker on `address`), speaking the
    Restate service protocol V2 to handler deployments."""

    port: int = 0
    metrics_port: int = 0

    module: ClassVar[str] = "weir_invoker"
    env_prefix: ClassVar[str] = "WEIR_INVOKER_"
    port_fields: ClassVar[tuple[str, ...]] = ("port", "metrics_port")

    @property
    def address(self) -> str:
        return f"{self.placement.host}:{self.port}"

    def _settings(self, reuse_ports: bool) -> dict[str, str]:
        return {
            "WEIR_INVOKER_INVOKER_ID": self.name,
            "WEIR_INVOKER_PORT": str(self.port if reuse_ports else 0),
            "WEIR_INVOKER_METRICS_PORT": str(self.metrics_port if reuse_ports else 0),
        }

    def _take_ports(self, ready: dict[str, object]) -> None:
        self.port = int(str(ready["port"]))
        self.metrics_port = int(str(ready["metrics_port"]))


class AnalyticsHandle(ProcessHandle):
    """The spark-analytics job (a JVM and Python workers; starting takes 15-30 s)."""

    metrics_port: int = 0

    module: ClassVar[str] = "weir_analytics"
    env_prefix: ClassVar[str] = "WEIR_ANALYTICS_"
    ready_timeout_s: ClassVar[float] = 180.0

    def _settings(self, reuse_ports: bool) -> dict[str, str]:
        return {
            "WEIR_ANALYTICS_DATA_DIR": str(self.data_dir),
            "WEIR_ANALYTICS_METRICS_PORT": str(self.metrics_port if reuse_ports else 0),
        }

    def _take_ports(self, ready: dict[str, object]) -> None:
        self.metrics_port = int(str(ready["metrics_port"]))


def gateway_secret(data_dir: Path) -> str:
    """The secret this cluster's gateways share (`<data_dir>/gateway-secret`), so their receipt
    handles verify on every instance and survive restarts."""
    return owner_only_secret(data_dir / "gateway-secret")


# Sets RLIMIT_AS (inherited across exec) and execs the command.
_MEMORY_LIMIT = """
import os, resource, sys
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
os.execvp(sys.argv[2], sys.argv[2:])
"""


def start_node(
    data_dir: Path,
    *,
    node_id: str = "node-1",
    env: Mapping[str, str] | None = None,
    taskset_cpus: str | None = None,
) -> NodeHandle:
    """Start one partition node with its data (and log, `node.log`) under `data_dir`."""
    handle = NodeHandle(
        name=node_id,
        data_dir=data_dir,
        log_path=data_dir.parent / f"{node_id}.log",
        env=dict(env or {}),
        taskset_cpus=taskset_cpus,
    )
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    return handle.start()


def stop_all(handles: Sequence[ProcessHandle]) -> None:
    for handle in handles:
        handle.stop()


def start_together(handles: Sequence[ProcessHandle], *, reuse_ports: bool = False) -> None:
    """Spawn every one of `handles`, then wait until all serve: processes that do not depend on one
    another start in the time of the slowest, not of their sum. Errors: the first LaunchError (the
    caller stops what it started)."""
    for handle in handles:
        handle.spawn(reuse_ports=reuse_ports)
    started = time.monotonic()
    waiting = list(handles)
    while waiting:
        waiting = [handle for handle in waiting if not handle.poll_ready(started + handle.ready_timeout_s)]
        if waiting:
            time.sleep(0.02)


CLUSTER_STATE_FILE = "cluster.json"
ProgressCallback = Callable[[str], None]


@dataclass
class LocalCluster:
    """The DESIGN §8 topology as local processes: one redis-server, `routers` routers, `nodes`
    partition nodes, `replicators` replicators, `gateways` gateways and `invokers` invokers, with data
    and logs under `data_dir` (``redis/``, ``router-N/``, ``node-N/``, ``replicator-N/``,
    ``gateway-N/``, ``invoker-N/``, ``*.log``) and the addresses in ``cluster.json``. The environment
    variables are the ones the compose file sets (`WEIR_NODE_*`, `WEIR_ROUTER_*`, `WEIR_REPLICATOR_*`,
    `WEIR_GATEWAY_*`, `WEIR_INVOKER_*`)."""

    data_dir: Path
    redis: RedisHandle
    routers: list[RouterHandle]
    nodes: list[NodeHandle]
    replicators: list[ReplicatorHandle] = field(default_factory=list)
    analytics: AnalyticsHandle | None = None
    gateways: list[GatewayHandle] = field(default_factory=list)
    invokers: list[InvokerHandle] = field(default_factory=list)
    # With TLS: the development CA and certificates every process uses (weir_server.devcerts).
    tls_dir: Path | None = None
    # With an auth file: the users the routers', nodes' and gateways' client ports serve.
    auth_file: Path | None = None
    # The environment every node got at start (add_node gives a new one the same).
    node_env: dict[str, str] = field(default_factory=dict)
    memory_limit_bytes: int | None = None
    # Where each process runs, by name ("redis", "router-1", "node-2", ...); loopback when absent.
    placements: dict[str, Placement] = field(default_factory=dict)
    # With `ha`: the metadata Redis's replicas and the sentinels that fail it over (weir_cli.redis_ha).
    redis_replicas: list[RedisHandle] = field(default_factory=list)
    sentinels: list[SentinelHandle] = field(default_factory=list)

    def metadata_access(self) -> RedisAccess:
        """How a client in this process reaches the metadata store (with `ha`, through the sentinels,
        following their failovers)."""
        return dataclasses.replace(self.redis.access(), url=self.metadata_address)

    @property
    def metadata_address(self) -> str:
        """How the services reach the metadata store: the Redis URL, or with `ha` its sentinels'."""
        return sentinel_url(self.sentinels) if self.sentinels else self.redis.address

    @property
    def router_addresses(self) -> list[str]:
        return [router.address for router in self.routers]

    def client_security(self) -> ChannelSecurity | None:
        """How a client reaches this cluster: its CA and the development client certificate (None:
        plaintext)."""
        return client_security(self.tls_dir) if self.tls_dir is not None else None

    @classmethod
    def start(
        cls,
        data_dir: Path,
        *,
        nodes: int = 3,
        routers: int = 2,
        node_env: Mapping[str, str] | None = None,
        router_env: Mapping[str, str] | None = None,
        replicators: int = 1,
        replicator_env: Mapping[str, str] | None = None,
        analytics: bool = False,
        analytics_env: Mapping[str, str] | None = None,
        gateways: int = 0,
        gateway_env: Mapping[str, str] | None = None,
        invokers: int = 0,
        invoker_env: Mapping[str, str] | None = None,
        die_with_parent: bool = True,
        progress: ProgressCallback | None = None,
        memory_limit_bytes: int | None = None,
        tls: bool = False,
        auth_file: Path | None = None,
        stable_ports: bool = False,
        placements: Mapping[str, Placement] | None = None,
        ha: bool = False,
    ) -> LocalCluster:
        """Start Redis, then the routers, the nodes (which register with Redis) and the replicators
        together, then the gateways and the invokers together, then (with `analytics`) the
        spark-analytics job; returns once every process serves. An invoker keeps its journals, records
        and state in the cluster with `min(3, nodes)` replicas (1 without a replicator: nothing would
        copy them), unless `invoker_env` sets WEIR_INVOKER_REPLICAS. On failure everything started is
        stopped again. `memory_limit_bytes` limits the address space of each router, node and
        replicator. `tls`: every gRPC port with TLS and the internal ports with mutual TLS, from a
        development CA made under `<data_dir>/tls` (kept across restarts); else every process runs with
        its explicit plaintext setting. `auth_file` (needs `tls`): the routers' and nodes' client ports
        serve only its users, within their grants (weir_server.auth), and the services' /metrics only
        over TLS to a user with the metrics grant (weir_server.metrics_server). `stable_ports` (`weir cluster
        up`): every process binds the ports recorded under `data_dir` by the last start, else the
        well-known ones, when free (weir_cli.ports). `placements`: where each process runs, by name.
        `ha`: the metadata Redis with two replicas and three sentinels (weir_cli.redis_ha)."""
        say = progress or (lambda _message: None)
        _check_options(tls=tls, auth_file=auth_file)
        access = {"AUTH_FILE": str(auth_file.resolve())} if auth_file is not None else {}
        cluster = cls._prepared(data_dir.resolve(), die_with_parent, tls, say, placements or {})
        cluster.auth_file, cluster.memory_limit_bytes = auth_file and auth_file.resolve(), memory_limit_bytes
        plan = _port_plan(cluster.data_dir, say) if stable_ports else {}
        try:
            cluster._start_redis(access, say, plan.get("redis", {}).get("port", 0), ha=ha)
            # Routers, nodes and replicators need only Redis: they start together; then the front
            # doors and invokers, which need the routers' addresses.
            started = [
                *cluster._add_routers(routers, access, router_env, die_with_parent),
                *cluster._add_nodes(nodes, access, node_env, die_with_parent),
                *cluster._add_replicators(replicators, access, replicator_env, die_with_parent),
            ]
            cluster._start_planned(started, plan, say)
            front = [
                *cluster._add_front_doors(gateways, gateway_env, die_with_parent),
                *cluster._add_invokers(invokers, _invoker_env(nodes, replicators, invoker_env), die_with_parent),
            ]
            cluster._start_planned(front, plan, say)
            if analytics:
                cluster._start_analytics_job(analytics_env, die_with_parent, say)
        except BaseException:
            cluster.stop()
            raise
        cluster.write_state()
        if stable_ports:
            write_ports(cluster.data_dir, cluster.ports())
        return cluster

    @classmethod
    def _prepared(
        cls, data_dir: Path, die_with_parent: bool, tls: bool, say: ProgressCallback, where: Mapping[str, Placement]
    ) -> LocalCluster:
        """The cluster before any process starts: its data directory, its Redis handle and, with
        `tls`, the development certificates (made once under `<data_dir>/tls`)."""
        data_dir.mkdir(parents=True, exist_ok=True)
        redis = RedisHandle(
            data_dir / "redis",
            data_dir / "redis.log",
            die_with_parent=die_with_parent,
            placement=where.get("redis", LOCAL),
        )
        cluster = cls(data_dir, redis, [], [], placements=dict(where))
        if tls:
            redis.tls_dir = cluster.tls_dir = devcerts.make_dev_certificates(data_dir / "tls")
            say(f"TLS on: development CA and certificates in {cluster.tls_dir}")
        return cluster

    def ports(self) -> Ports:
        """Every process's ports by name, Redis's too (what `weir cluster up` records and binds again)."""
        return {"redis": {"port": self.redis.port}, **{handle.name: handle.ports() for handle in self.handles()}}

    def handles(self) -> list[ProcessHandle]:
        """Every service process of the cluster (Redis aside)."""
        analytics = [self.analytics] if self.analytics is not None else []
        return [*self.routers, *self.nodes, *self.replicators, *self.gateways, *self.invokers, *analytics]

    def _start_planned(self, handles: Sequence[ProcessHandle], plan: Ports, say: ProgressCallback) -> None:
        """Start `handles` together on the ports `plan` gives them (any free one elsewhere), then say
        where each serves."""
        for handle in handles:
            handle.want_ports(plan.get(handle.name, {}))
        start_together(handles, reuse_ports=True)
        for handle in handles:
            say(serving_line(handle))

    def _service_env(self, prefix: str, access: Mapping[str, str], env: Mapping[str, str] | None) -> dict[str, str]:
        """A service's shared settings: the metadata Redis URL and `access` (its password file, the
        auth file) under the service's `prefix` (WEIR_NODE_ …), then `env` over them."""
        return {
            f"{prefix}REDIS_URL": self.metadata_address,
            **{f"{prefix}{name}": value for name, value in access.items()},
            **(env or {}),
        }

    def _handle_args(self, name: str, env: Mapping[str, str], die_with_parent: bool) -> dict[str, Any]:
        """A process's handle arguments (`_placed`) with this cluster's certificates and its placement."""
        placement = self.placements.get(name, LOCAL)
        return {**_placed(self.data_dir, name, env, die_with_parent, self.tls_dir), "placement": placement}

    def _add_nodes(
        self, count: int, access: dict[str, str], node_env: Mapping[str, str] | None, die_with_parent: bool
    ) -> list[NodeHandle]:
        """`count` node handles (not started) registering with the cluster's Redis; `node_env` (kept
        for nodes added later) over the Redis URL and `access`."""
        self.node_env = self._service_env("WEIR_NODE_", access, node_env)
        return [self._new_node(die_with_parent) for _ in range(count)]

    def _add_invokers(self, count: int, env: Mapping[str, str], die_with_parent: bool) -> list[InvokerHandle]:
        """invoker-1 … invoker-`count` (not started), each with `env`, added to the cluster."""
        for index in range(1, count + 1):
            self.invokers.append(self._invoker_handle(f"invoker-{index}", env, die_with_parent))
        return self.invokers[-count:] if count else []

    def _start_analytics_job(self, env: Mapping[str, str] | None, die_with_parent: bool, say: ProgressCallback) -> None:
        say("starting spark-analytics (a Spark session takes 15-30 s to start)")
        self.analytics = self.start_analytics(env, die_with_parent=die_with_parent)
        say(f"spark-analytics running (metrics port {self.analytics.metrics_port})")

    def _start_redis(self, access: dict[str, str], say: ProgressCallback, port: int = 0, *, ha: bool = False) -> None:
        """Start the metadata Redis (on `port`, else a free one: `cluster up` keeps its port too, as a
        random one could take a port its plan gives another process); `access` gets its password
        file for every service. With `ha`, then its replicas and sentinels (weir_cli.redis_ha)."""
        redis = self.redis
        redis.port, redis.in_replica_set = port, ha
        binary, origin = redis_server_binary()
        embedded = "embedded, " if origin == EMBEDDED_REDIS_ORIGIN else ""
        say(f"starting redis-server ({embedded}from {origin}: {binary})")
        redis.start()
        access["REDIS_PASSWORD_FILE"] = str(redis.password_file)
        if redis.tls_dir is not None and not redis.tls:
            say(f"this redis-server was built without TLS: it serves {redis.address} with a password on loopback")
        say(f"redis at {redis.address} (password in {redis.password_file})")
        if ha:
            self.redis_replicas, self.sentinels = start_replica_set(redis, self.placements)
            say(f"redis replicas at {', '.join(replica.address for replica in self.redis_replicas)}")
            say(f"redis sentinels watching them: {self.metadata_address}")

    def _add_routers(
        self, count: int, access: Mapping[str, str], env: Mapping[str, str] | None, die_with_parent: bool
    ) -> list[RouterHandle]:
        shared = self._service_env("WEIR_ROUTER_", access, env)
        for index in range(1, count + 1):
            self.routers.append(
                RouterHandle(
                    **self._handle_args(f"router-{index}", shared, die_with_parent),
                    memory_limit_bytes=self.memory_limit_bytes,
                )
            )
        return list(self.routers)

    def _add_replicators(
        self, count: int, access: Mapping[str, str], env: Mapping[str, str] | None, die_with_parent: bool
    ) -> list[ReplicatorHandle]:
        # a replicator serves no client port: its auth file guards its /metrics only
        shared = self._service_env("WEIR_REPLICATOR_", access, env)
        for index in range(1, count + 1):
            self.replicators.append(
                ReplicatorHandle(
                    **self._handle_args(f"replicator-{index}", shared, die_with_parent),
                    memory_limit_bytes=self.memory_limit_bytes,
                )
            )
        return list(self.replicators)

    def _add_front_doors(self, count: int, env: Mapping[str, str] | None, die_with_parent: bool) -> list[GatewayHandle]:
        """`count` protocol gateways (not started; kafka-pixy, RocketMQ v1 and v2, waymaker.streams, each
        protocol family on its own port), added to the cluster."""
        for index in range(1, count + 1):
            self.gateways.append(self._gateway_handle(f"gateway-{index}", env, die_with_parent))
        return list(self.gateways)

    def _new_node(self, die_with_parent: bool) -> NodeHandle:
        """The next node's handle (`node-<N+1>`, the other nodes' settings), added, not started."""
        node = NodeHandle(
            **self._handle_args(f"node-{len(self.nodes) + 1}", self.node_env, die_with_parent),
            memory_limit_bytes=self.memory_limit_bytes,
        )
        self.nodes.append(node)
        return node

    def add_node(self, *, die_with_parent: bool = True) -> NodeHandle:
        """Start one more partition node (`node-<N+1>`, the other nodes' settings), which registers
        with the cluster; it holds nothing until streams are created or moved onto it (`weir
        cluster rebalance`)."""
        node = self._new_node(die_with_parent)
        node.start()
        self.write_state()
        return node

    def start_gateway(
        self, name: str, env: Mapping[str, str] | None = None, *, die_with_parent: bool = True
    ) -> GatewayHandle:
        """Start one protocol gateway against this cluster's routers (not added to `gateways`). Every
        gateway of the cluster signs RocketMQ receipt handles with the cluster's one secret, so a handle
        settles through any of them; with the cluster's auth file its front doors serve only its users."""
        return self._gateway_handle(name, env, die_with_parent).start()

    def _gateway_handle(self, name: str, env: Mapping[str, str] | None, die_with_parent: bool) -> GatewayHandle:
        settings = {
            "WEIR_GATEWAY_ROUTERS": ",".join(self.router_addresses),
            # One process unless `env` says more: each worker takes ~3 s of CPU to import and start,
            # which on a 2-core machine lands on the cluster's own start (the gateway's default is the
            # CPU count; `weir cluster up --gateway-workers N`).
            "WEIR_GATEWAY_WORKERS": "1",
            "WEIR_GATEWAY_ROCKETMQ_RECEIPT_SECRET": gateway_secret(self.data_dir),
            **({"WEIR_GATEWAY_AUTH_FILE": str(self.auth_file)} if self.auth_file is not None else {}),
            **(env or {}),
        }
        return GatewayHandle(**self._handle_args(name, settings, die_with_parent))

    def start_numaflow_source(
        self, name: str, stream: str, env: Mapping[str, str] | None = None, *, die_with_parent: bool = True
    ) -> NumaflowSourceHandle:
        """Start one Numaflow source sidecar reading `stream` of this cluster (its member id is `name`
        unless `env` says otherwise; not added to the cluster's processes)."""
        settings = {
            "WEIR_NUMAFLOW_SOURCE_ROUTERS": ",".join(self.router_addresses),
            "WEIR_NUMAFLOW_SOURCE_STREAM": stream,
            "WEIR_NUMAFLOW_SOURCE_MEMBER_ID": name,
            **(env or {}),
        }
        handle = NumaflowSourceHandle(**self._handle_args(name, settings, die_with_parent))
        handle.start()
        return handle

    def start_invoker(
        self, name: str = "invoker", env: Mapping[str, str] | None = None, *, die_with_parent: bool = True
    ) -> InvokerHandle:
        """Start an invoker against this cluster's routers (not added to the cluster's processes); with
        the cluster's auth file its operator port serves only its users."""
        return self._invoker_handle(name, env, die_with_parent).start()

    def _invoker_handle(self, name: str, env: Mapping[str, str] | None, die_with_parent: bool) -> InvokerHandle:
        settings = {
            "WEIR_INVOKER_ROUTERS": ",".join(self.router_addresses),
            **({"WEIR_INVOKER_AUTH_FILE": str(self.auth_file)} if self.auth_file is not None else {}),
            **(env or {}),
        }
        return InvokerHandle(**self._handle_args(name, settings, die_with_parent))

    def start_analytics(self, env: Mapping[str, str] | None = None, *, die_with_parent: bool = True) -> AnalyticsHandle:
        """Start the spark-analytics job against this cluster's routers (data in `analytics/`)."""
        settings = {"WEIR_ANALYTICS_ROUTER": ",".join(self.router_addresses), **(env or {})}
        handle = AnalyticsHandle(**self._handle_args("analytics", settings, die_with_parent))
        handle.start()
        return handle

    def state(self) -> dict[str, object]:
        return {
            "data_dir": str(self.data_dir),
            "redis": {
                "url": self.metadata_address,
                "password_file": str(self.redis.password_file),
                "pid": self.redis.process.pid if self.redis.process else 0,
            },
            # with `ha`: the replicas and sentinels, stopped by `weir cluster down` before the primary
            "metadata_processes": [
                *({"name": s.data_dir.name, "pid": s.process.pid if s.process else 0} for s in self.sentinels),
                *({"name": r.data_dir.name, "pid": r.process.pid if r.process else 0} for r in self.redis_replicas),
            ],
            "routers": [
                {"router_id": r.name, "address": r.address, "metrics_port": r.metrics_port, "pid": r.pid}
                for r in self.routers
            ],
            "replicators": [
                {"replicator_id": r.name, "metrics_port": r.metrics_port, "pid": r.pid} for r in self.replicators
            ],
            "analytics": (
                {"metrics_port": self.analytics.metrics_port, "pid": self.analytics.pid} if self.analytics else None
            ),
            "gateways": [
                {
                    "gateway_id": g.name,
                    "kafka_pixy_address": g.kafka_pixy_address,
                    "rocketmq_address": g.rocketmq_address,
                    "waymaker_streams_address": g.waymaker_streams_address,
                    "metrics_port": g.metrics_port,
                    "pid": g.pid,
                }
                for g in self.gateways
            ],
            "invokers": [
                {"invoker_id": i.name, "address": i.address, "metrics_port": i.metrics_port, "pid": i.pid}
                for i in self.invokers
            ],
            "nodes": [
                {
                    "node_id": n.name,
                    "client_address": n.client_address,
                    "internal_address": n.internal_address,
                    "metrics_port": n.metrics_port,
                    "pid": n.pid,
                }
                for n in self.nodes
            ],
            # what every node was started with (`weir cluster add-node` starts one more the same way)
            "node_env": self.node_env,
            # how clients reach it: TLS with this CA and client certificate, or plaintext (null)
            "tls": (
                {
                    "ca_file": str(security.ca_file),
                    "cert_file": str(security.cert_file),
                    "key_file": str(security.key_file),
                }
                if (security := self.client_security()) is not None
                else None
            ),
        }

    def write_state(self) -> None:
        write_atomically(self.data_dir / CLUSTER_STATE_FILE, json.dumps(self.state(), indent=2))

    def stop(self) -> None:
        """SIGTERM every process (analytics, invokers, gateways, replicators, routers, then nodes,
        then Redis) and wait for each."""
        if self.analytics is not None:
            self.analytics.stop(timeout_s=60.0)
        for invoker in self.invokers:
            invoker.stop()
        for gateway in self.gateways:
            gateway.stop()
        for replicator in self.replicators:
            replicator.stop()
        for router in self.routers:
            router.stop()
        for node in self.nodes:
            node.stop()
        for sentinel in self.sentinels:  # first: no failover while the servers stop
            sentinel.stop()
        for replica in self.redis_replicas:
            replica.stop()
        self.redis.stop()
        (self.data_dir / CLUSTER_STATE_FILE).unlink(missing_ok=True)


def _check_options(*, tls: bool, auth_file: Path | None) -> None:
    """Errors: LaunchError for options that do not go together."""
    if auth_file is not None and not tls:
        raise LaunchError("an auth file needs TLS (tls=True)")


def _port_plan(data_dir: Path, say: ProgressCallback) -> Ports:
    """The ports `weir cluster up` binds under `data_dir` (weir_cli.ports), saying which it wanted
    and could not have."""
    plan, taken = plan_ports(wanted_ports(read_ports(data_dir)), port_is_free)
    for line in taken:
        say(line)
    return plan


def _invoker_env(nodes: int, replicators: int, invoker_env: Mapping[str, str] | None) -> dict[str, str]:
    """An invoker's settings: its journals are copied like any stream's (3 copies at most, 1 without a
    replicator: nothing would copy them), unless `invoker_env` says otherwise."""
    replicas = min(3, nodes) if replicators and nodes else 1
    return {"WEIR_INVOKER_REPLICAS": str(replicas), **(invoker_env or {})}


def serving_line(handle: ProcessHandle) -> str:
    """One progress line saying where a started process serves."""
    if isinstance(handle, NodeHandle):
        return f"{handle.name} serving at {handle.client_address} (internal {handle.internal_address})"
    if isinstance(handle, RouterHandle):
        return f"{handle.name} serving at {handle.address}"
    if isinstance(handle, GatewayHandle):
        return f"{handle.name} serving {handle.doors}"
    if isinstance(handle, InvokerHandle):
        return f"{handle.name} serving weir.v1.Invoker at {handle.address}"
    return f"{handle.name} running (metrics port {handle.ports().get('metrics_port', 0)})"


def _placed(
    data_dir: Path, name: str, env: Mapping[str, str], die_with_parent: bool, tls_dir: Path | None = None
) -> dict[str, Any]:
    """A cluster process's handle arguments: data in `<data_dir>/<name>`, log `<data_dir>/<name>.log`."""
    return {
        "name": name,
        "data_dir": data_dir / name,
        "log_path": data_dir / f"{name}.log",
        "env": dict(env),
        "die_with_parent": die_with_parent,
        "tls_dir": tls_dir,
    }


def client_security(tls_dir: Path) -> ChannelSecurity:
    """The channel security of a client of a local cluster whose development certificates are in
    `tls_dir`: its CA and the client certificate."""
    return ChannelSecurity(
        ca_file=tls_dir / f"{devcerts.CA}.pem",
        cert_file=tls_dir / f"{devcerts.CLIENT}.pem",
        key_file=tls_dir / f"{devcerts.CLIENT}-key.pem",
    )


def add_node_to_running(data_dir: Path) -> NodeHandle:
    """Start one more node (`node-<N+1>`, the others' settings from ``cluster.json``) for a cluster
    `weir cluster up` started under `data_dir`, outliving this process, and record it there (so
    `weir cluster down` stops it too). Errors: LaunchError when there is no such cluster or it was
    started before nodes' settings were recorded."""
    state = read_cluster_state(data_dir)
    if state is None or "node_env" not in state:
        raise LaunchError(
            f"no cluster under {data_dir} records its nodes' settings (start it with this version's `weir cluster up`)"
        )
    tls_dir = data_dir / "tls" if state.get("tls") else None
    name = f"node-{len(state['nodes']) + 1}"
    node = NodeHandle(**_placed(data_dir, name, state["node_env"], False, tls_dir))
    node.start()
    state["nodes"].append(
        {
            "node_id": node.name,
            "client_address": node.client_address,
            "internal_address": node.internal_address,
            "metrics_port": node.metrics_port,
            "pid": node.pid,
        }
    )
    write_atomically(data_dir / CLUSTER_STATE_FILE, json.dumps(state, indent=2))
    return node


def read_cluster_state(data_dir: Path) -> dict[str, Any] | None:
    """The ``cluster.json`` of a cluster started under `data_dir` (None when there is none)."""
    path = data_dir / CLUSTER_STATE_FILE
    if not path.exists():
        return None
    state: dict[str, Any] = json.loads(path.read_text())
    return state


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped) is not alive
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def stop_pids(pids: Sequence[int], timeout_s: float = 20.0) -> list[int]:
    """SIGTERM each process and wait; SIGKILL what is still running after `timeout_s`. Returns the
    pids that had to be killed."""
    for pid in pids:
        if pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(pid_alive(pid) for pid in pids):
        time.sleep(0.05)
    killed = [pid for pid in pids if pid_alive(pid)]
    for pid in killed:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return killed
