"""The metadata store without a single point of failure: Redis with replicas, watched by Redis
Sentinel (`weir cluster up --ha`, the network fault tests).

Three redis-servers (the primary and two replicas replicating from it) and three sentinels, each
sentinel beside one redis-server (the same host in the network fault tests), with a quorum of two:
when the primary stops answering for `devcerts.SENTINEL_DOWN_AFTER_MS`, the sentinels that can still talk
to each other promote a replica, and the services, which reach Redis through the sentinels
(`redis+sentinel://...`: weir_server.metadata_redis), follow. Every server and sentinel takes the
cluster's one Redis password (`requirepass`, `masterauth`, `sentinel auth-pass`,
`sentinel sentinel-pass`), given in owner-only config files. With the development certificates
(`weir cluster up --ha --tls`) every server and sentinel serves TLS only, requiring a client
certificate of the cluster CA, and replicates and talks to the others over TLS
(`rediss+sentinel://...`), as the compose deployment does.

Replication is asynchronous, so a failover can lose the primary's last writes; the cluster does not
depend on them (the nodes keep the newest leader epochs and the controller restores a lost
placement: weir_router.failover.newest_placement).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import redis
from weir_server import devcerts

from weir_cli.metadata_store import RedisHandle, redis_access, redis_server_binary
from weir_cli.process_basics import (
    LOCAL,
    LOOPBACK,
    LaunchError,
    Placement,
    free_port,
    kill_process,
    owner_only_secret,
    stop_process,
    with_parent_death,
)

MASTER_NAME = devcerts.SENTINEL_MASTER_NAME
SENTINELS = 3


REPLICAS = 2


def start_replica_set(
    primary: RedisHandle, placements: Mapping[str, Placement]
) -> tuple[list[RedisHandle], list[SentinelHandle]]:
    """Beside the started `primary` (named "redis"), start its replicas ("redis-2", "redis-3") and
    the sentinels ("sentinel-1" ... "sentinel-3", each where `placements` puts it: beside its
    redis-server in the network fault tests), and wait until the replicas are in sync and every
    sentinel sees the others. Returns (replicas, sentinels); on failure stops what it started and
    raises LaunchError."""
    root = primary.data_dir.parent
    address = (primary.placement.host, primary.port)
    replicas: list[RedisHandle] = []
    sentinels: list[SentinelHandle] = []
    try:
        for number in range(2, REPLICAS + 2):
            name = f"redis-{number}"
            replica = RedisHandle(
                root / name,
                root / f"{name}.log",
                die_with_parent=primary.die_with_parent,
                tls_dir=primary.tls_dir if primary.tls else None,
                placement=placements.get(name, LOCAL),
                replica_of=address,
                in_replica_set=True,
            )
            replicas.append(replica.start())
        for number in range(1, SENTINELS + 1):
            name = f"sentinel-{number}"
            sentinel = SentinelHandle(
                root / name,
                root / f"{name}.log",
                primary.password_file,
                address,
                die_with_parent=primary.die_with_parent,
                placement=placements.get(name, LOCAL),
                tls_dir=primary.tls_dir if primary.tls else None,
            )
            sentinels.append(sentinel.start())
        wait_for_replication(primary, len(replicas))
        wait_for_quorum(sentinels)
    except BaseException:
        for sentinel in sentinels:
            sentinel.kill()
        for replica in replicas:
            replica.kill()
        raise
    return replicas, sentinels


def wait_for_replication(primary: RedisHandle, replicas: int, timeout_s: float = 20.0) -> None:
    """Wait until `primary` reports `replicas` replicas online (INFO replication: synced, not just
    connected). Errors: LaunchError after `timeout_s`."""
    access = primary.access()
    client = redis.Redis.from_url(access.url, **access.options(), socket_timeout=1)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            try:
                info = client.info("replication")
                online = [key for key, value in info.items() if key.startswith("slave") and _online(value)]
                if len(online) >= replicas:
                    return
            except (redis.RedisError, OSError):
                pass
            time.sleep(0.1)
    finally:
        client.close()
    raise LaunchError(f"the metadata Redis's {replicas} replicas did not connect within {timeout_s:.0f} s")


def wait_for_quorum(sentinels: list[SentinelHandle], timeout_s: float = 20.0) -> None:
    """Wait until every sentinel sees all the others (Sentinel's hello messages, every 2 s): the
    services heed only a sentinel that sees another one. Errors: LaunchError after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(sentinel.other_sentinels() >= len(sentinels) - 1 for sentinel in sentinels):
            return
        time.sleep(0.1)
    raise LaunchError(f"the {len(sentinels)} sentinels did not find each other within {timeout_s:.0f} s")


def _online(entry: object) -> bool:
    """Whether an INFO replication `slaveN` entry (redis-py parses it into a dict) is online."""
    return isinstance(entry, dict) and entry.get("state") == "online"


def sentinel_url(sentinels: list[SentinelHandle], master: str = MASTER_NAME) -> str:
    """How the services reach the metadata store: `redis+sentinel://host:port,.../<master>/0`
    (`rediss+sentinel://` when the sentinels serve TLS)."""
    hosts = ",".join(f"{sentinel.placement.host}:{sentinel.port}" for sentinel in sentinels)
    scheme = "rediss+sentinel" if any(sentinel.tls_dir is not None for sentinel in sentinels) else "redis+sentinel"
    return f"{scheme}://{hosts}/{master}/0"


@dataclass
class SentinelHandle:
    """One redis-server in sentinel mode watching the primary at `primary` (host, port), with its
    config in `sentinel.conf` in `data_dir` (owner-only; written at each start, which Sentinel then
    rewrites as it learns of replicas, other sentinels and failovers)."""

    data_dir: Path
    log_path: Path
    password_file: Path
    primary: tuple[str, int]
    die_with_parent: bool = True
    port: int = 0
    placement: Placement = LOCAL
    process: subprocess.Popen[bytes] | None = None
    # the development certificates: TLS only, to clients, other sentinels and the servers (None: plaintext)
    tls_dir: Path | None = None

    @property
    def config_file(self) -> Path:
        return self.data_dir / "sentinel.conf"

    def _write_config(self) -> None:
        """devcerts.sentinel_config (as compose's sentinels run it), listening on this host only:
        plaintext, or TLS only (clients with a certificate of the CA) and TLS to the servers and
        the other sentinels, with the development certificates."""
        password = owner_only_secret(self.password_file)
        listener = devcerts.tls_listener(self.tls_dir, self.port) if self.tls_dir is not None else [f"port {self.port}"]
        lines = [f"bind {self.placement.host}", f"dir {self.data_dir}", f"logfile {self.log_path}"]
        if self.placement.host != LOOPBACK:
            lines.append("protected-mode no")
        text = devcerts.sentinel_config(password, self.primary, listener) + "\n".join(lines) + "\n"
        descriptor = os.open(self.config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(text)

    def start(self) -> SentinelHandle:
        """Start the sentinel and wait until it answers (raises LaunchError with its log if not)."""
        binary, _origin = redis_server_binary()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        self._write_config()
        command = [binary, str(self.config_file), "--sentinel"]
        self.process = subprocess.Popen(
            [*self.placement.command_prefix, *(with_parent_death(command) if self.die_with_parent else command)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=not self.die_with_parent,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.process.poll() is None:
            if self.primary_address() is not None:
                return self
            time.sleep(0.05)
        self.kill()
        raise LaunchError(f"redis sentinel did not start; its log {self.log_path}")

    def primary_address(self) -> tuple[str, int] | None:
        """(host, port) of the primary this sentinel names now; None when it does not answer."""
        client = self._client()
        try:
            answer = client.execute_command(  # type: ignore[no-untyped-call]
                "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME
            )
        except (redis.RedisError, OSError):
            return None
        finally:
            client.close()
        if not answer:
            return None
        host, port = (item.decode() if isinstance(item, bytes) else str(item) for item in answer)
        return host, int(port)

    def other_sentinels(self) -> int:
        """How many other sentinels watching the primary this one knows of (-1: no answer)."""
        client = self._client()
        try:
            state = client.execute_command("SENTINEL", "MASTER", MASTER_NAME)  # type: ignore[no-untyped-call]
        except (redis.RedisError, OSError):
            return -1
        finally:
            client.close()
        values = dict(zip(state[::2], state[1::2], strict=True)) if isinstance(state, list) else dict(state)
        found = values.get(b"num-other-sentinels", values.get("num-other-sentinels"))
        return -1 if found is None else int(found)

    def _client(self) -> redis.Redis:
        scheme = "rediss" if self.tls_dir is not None else "redis"
        access = redis_access(f"{scheme}://{self.placement.host}:{self.port}/0", self.password_file, self.tls_dir)
        return redis.Redis.from_url(access.url, **access.options(), socket_timeout=0.5)

    def kill(self) -> None:
        kill_process(self.process)

    def stop(self, timeout_s: float = 10.0) -> None:
        stop_process(self.process, timeout_s)
