"""The ports of a local cluster, kept for its data directory: `weir cluster up` takes the ports the
cluster had last time (`<data-dir>/ports.json`, kept across `down`), else the well-known defaults
(routers 7501 and 7502, kafka-pixy 19091, RocketMQ 8081, waymaker.streams 7710, the invoker 7720),
else a free one, and says so when a port it wanted is taken. So an address a user exported, a script
or a client stays right across `down`/`up`.

`plan_ports` decides (pure); `port_is_free` and the file I/O are the shell around it.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable, Mapping
from pathlib import Path

from weir_cli.files import write_atomically

PORTS_FILE = "ports.json"
Ports = dict[str, dict[str, int]]  # process name -> {port field: port}

# The ports a first `weir cluster up` asks for: each service's own default where it has one.
WELL_KNOWN_PORTS: Mapping[str, Mapping[str, int]] = {
    "router-1": {"port": 7501},
    "router-2": {"port": 7502},
    "gateway-1": {"kafka_pixy_port": 19091, "rocketmq_port": 8081, "waymaker_streams_port": 7710},
    "invoker-1": {"port": 7720},
}


def plan_ports(wanted: Mapping[str, Mapping[str, int]], is_free: Callable[[int], bool]) -> tuple[Ports, list[str]]:
    """The port each process field binds (0 = any free one) and one line for each port wanted but
    taken (pure but for `is_free`). `wanted`: the recorded ports over the well-known ones; a port
    wanted twice goes to its first field only."""
    plan: Ports = {}
    taken: list[str] = []
    claimed: set[int] = set()
    for name, fields in wanted.items():
        for field, port in fields.items():
            if port <= 0:
                continue
            if port in claimed or not is_free(port):
                taken.append(f"{name}: port {port} ({field}) is taken: it takes a free one")
                continue
            claimed.add(port)
            plan.setdefault(name, {})[field] = port
    return plan, taken


def wanted_ports(recorded: Mapping[str, Mapping[str, int]]) -> Ports:
    """The well-known ports with what the data directory recorded over them (pure)."""
    wanted: Ports = {name: dict(fields) for name, fields in WELL_KNOWN_PORTS.items()}
    for name, fields in recorded.items():
        wanted.setdefault(name, {}).update({field: int(port) for field, port in fields.items()})
    return wanted


def read_ports(data_dir: Path) -> Ports:
    """The ports recorded under `data_dir` ({} when none, or the file is unreadable)."""
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        recorded = json.loads((data_dir / PORTS_FILE).read_text())
        return {str(name): {str(f): int(p) for f, p in fields.items()} for name, fields in recorded.items()}
    return {}


def write_ports(data_dir: Path, ports: Ports) -> None:
    """Record `ports` under `data_dir` (atomically)."""
    write_atomically(data_dir / PORTS_FILE, json.dumps(ports, indent=2, sort_keys=True))


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could bind `host:port` now: a probe bind with SO_REUSEADDR (a port in
    TIME_WAIT after a `down` counts as free, as it does for the servers) and without SO_REUSEPORT
    (gRPC servers set it; a probe with it could share a port another cluster listens on)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True
