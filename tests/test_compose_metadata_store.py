"""The compose deployment's metadata store, run as processes (Docker does not run here): the
certs service's files (devcerts --redis-owner), the redis, redis-2, redis-3 and sentinel-1..3
services' own commands, and the services' way in (`rediss+sentinel://`, the password file, the
service certificate). It serves TLS only, the sentinels' health check passes, and after the
primary's SIGKILL the sentinels promote a replica over TLS and the services' client writes again.

On one machine every container becomes 127.0.0.1 with a port of its own: the test rewrites the
service names and the fixed ports of the commands and of the generated sentinel.conf, nothing else.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import yaml
from weir_cli.metadata_store import redis_access, redis_server_binary, redis_supports_tls
from weir_cli.process_basics import free_port
from weir_server import devcerts

from tests.conftest import eventually

pytestmark = pytest.mark.timeout(120)

COMPOSE_FILE = Path(__file__).resolve().parents[1] / "deploy" / "docker-compose.yml"
SERVERS = ("redis", "redis-2", "redis-3")
SENTINELS = ("sentinel-1", "sentinel-2", "sentinel-3")


@pytest.fixture
def compose_services() -> dict[str, Any]:
    services: dict[str, Any] = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    return services


def _localized(part: str, ports: dict[str, int], certs: Path, data: Path) -> str:
    """One argument of a compose command with the containers' names and paths of this machine."""
    part = part.replace("/certs", str(certs)).replace("/data", str(data))
    for name in (*SENTINELS, *sorted(SERVERS, reverse=True)):  # redis-2 before redis
        part = part.replace(f"announce-ip {name}", "announce-ip 127.0.0.1")
    return part


def _server_command(binary: str, service: dict[str, Any], ports: dict[str, int], certs: Path, data: Path) -> list[str]:
    command = [_localized(part, ports, certs, data) for part in service["command"][1:]]
    if "--replicaof" in command:
        at = command.index("--replicaof")
        command[at + 1 : at + 3] = ["127.0.0.1", str(ports["redis"])]
    if "--replica-announce-ip" in command:
        command[command.index("--replica-announce-ip") + 1] = "127.0.0.1"
    return [binary, *command, "--tls-port", str(ports[data.name]), "--dir", str(data), "--bind", "127.0.0.1"]


def _sentinel_command(binary: str, service: dict[str, Any], port: int, certs: Path, data: Path) -> list[str]:
    shell, flag, script = service["entrypoint"]
    script = _localized(script, {}, certs, data).replace("exec redis-server", f"exec {binary}")
    return [shell, flag, script.replace("--sentinel", f"--sentinel --tls-port {port} --bind 127.0.0.1")]


def _spawn(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:  # what a failure needs to be read
        return subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


async def test_the_compose_metadata_store_serves_tls_and_fails_over(
    tmp_path: Path, compose_services: dict[str, Any], processes: list[subprocess.Popen[bytes]]
) -> None:
    binary, _ = redis_server_binary()
    cli_path = f"{Path(binary).parent}:{os.defpath}"
    if not redis_supports_tls(binary) or shutil.which("redis-cli", path=cli_path) is None:
        pytest.skip("needs a redis-server built with TLS and redis-cli (Debian: apt-get install redis-server)")
    certs = tmp_path / "certs"
    assert devcerts.main([str(certs), "--name", "redis", "--redis-owner", str(os.getuid())]) == 0
    ports = {name: free_port() for name in (*SERVERS, *SENTINELS)}
    sentinel_conf = certs / "sentinel.conf"
    text = sentinel_conf.read_text()
    assert f"sentinel monitor weir redis {6379} 2" in text and f"tls-port {devcerts.SENTINEL_PORT}" in text
    sentinel_conf.write_text(text.replace("weir redis 6379", f"weir 127.0.0.1 {ports['redis']}"))
    for name in SERVERS:
        (tmp_path / name).mkdir()
        command = _server_command(binary, compose_services[name], ports, certs, tmp_path / name)
        processes.append(_spawn(command, tmp_path / f"{name}.log"))
    for name in SENTINELS:
        (tmp_path / name).mkdir()
        command = _sentinel_command(binary, compose_services[name], ports[name], certs, tmp_path / name)
        processes.append(_spawn(command, tmp_path / f"{name}.log"))

    health = compose_services["sentinel-1"]["healthcheck"]["test"][1].replace("/certs", str(certs))
    health = health.replace("-p 26379", f"-p {ports['sentinel-1']}").replace("$$", "$")

    async def sentinel_healthy() -> bool:
        command = ["sh", "-c", health]
        checked = await asyncio.to_thread(subprocess.run, command, env={"PATH": cli_path}, timeout=10, check=False)
        return checked.returncode == 0

    await eventually(sentinel_healthy, 30, "the compose sentinel health check passes (it knows a replica)")
    hosts = ",".join(f"127.0.0.1:{ports[name]}" for name in SENTINELS)
    scheme = compose_services["router-1"]["environment"]["WEIR_ROUTER_REDIS_URL"].split("://")[0]
    access = redis_access(f"{scheme}://{hosts}/weir/0", certs / "redis.password", certs)
    assert access.tls
    client = access.client()
    try:
        plain = redis.Redis("127.0.0.1", ports["sentinel-2"], password="x", socket_timeout=1)
        with pytest.raises((redis.ConnectionError, redis.TimeoutError)):
            plain.ping()  # TLS only
        plain.close()

        async def replicas_known() -> bool:  # a sentinel learns of replicas from the primary's INFO (every 10 s)
            known = [await asyncio.to_thread(_known_replicas, ports[name], certs) for name in SENTINELS]
            return known == [2] * len(SENTINELS)

        await eventually(replicas_known, 30, "every sentinel knows both replicas")
        await eventually(lambda: _writes(client, "before"), 10, "a write through the sentinels")
        replicated = await client.execute_command("WAIT", 2, 5000)  # type: ignore[no-untyped-call]
        assert replicated == 2, "both replicas hold the write"
        processes[0].kill()  # the primary
        started = time.monotonic()
        await eventually(lambda: _writes(client, "after"), 30, "a write through the sentinels after the failover")
        assert time.monotonic() - started < 15
        assert await client.get("before") == b"before"  # written before, replicated, kept by the promoted replica
    finally:
        await client.aclose()


def _known_replicas(port: int, certs: Path) -> int:
    """How many replicas of the primary the sentinel on `port` knows (-1: no answer)."""
    access = redis_access(f"rediss://127.0.0.1:{port}/0", certs / "redis.password", certs)
    sentinel = redis.Redis.from_url(access.url, **access.options(), socket_timeout=1)
    try:
        return len(sentinel.execute_command("SENTINEL", "REPLICAS", "weir"))  # type: ignore[no-untyped-call]
    except (redis.RedisError, OSError):
        return -1
    finally:
        sentinel.close()


async def _writes(client: Any, key: str) -> bool:
    try:
        await client.set(key, key)
        return bool(await client.get(key) == key.encode())
    except (TimeoutError, redis.RedisError, OSError):
        return False
