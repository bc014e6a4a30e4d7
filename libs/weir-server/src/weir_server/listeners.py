"""Advertised listeners: the addresses clients reach a router or a node's client port at, per
network (Kafka's `advertised.listeners`; RocketMQ's route request carries the endpoints the client
used, which is how Weir's routers tell the networks apart).

A process has its default address (``advertise_host:port``, what the other processes use) and may
name more: ``"host=127.0.0.1:17401,lan=10.0.0.5:7401"``. A client's QueryRoute / QueryAssignment
names the router address it dialled (`endpoints`); when that address is one of the router's named
listeners, every node address in the answer is that node's address under the same listener name
(its default when it has none), so a client on the Docker host gets host-published ports and one
inside the compose network gets container names. Pure functions; the settings and the router call
them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
MAX_LISTENERS = 16


def parse_listeners(text: str) -> dict[str, str]:
    """``"name=host:port,..."`` -> {name: "host:port"} ("" -> {}). Errors: ValueError saying which
    entry is wrong (a name of letters, digits, _ and -; a host; a port 1-65535; no repeats)."""
    listeners: dict[str, str] = {}
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        name, equals, address = entry.partition("=")
        name, address = name.strip(), address.strip()
        if not equals or not _NAME.fullmatch(name):
            raise ValueError(f"listener {entry!r}: expected name=host:port with a name of letters, digits, _ and -")
        host, colon, port = address.rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"listener {name!r}: {address!r} is not host:port (port 1-65535)")
        if name in listeners:
            raise ValueError(f"listener {name!r} is named twice")
        listeners[name] = address
    if len(listeners) > MAX_LISTENERS:
        raise ValueError(f"at most {MAX_LISTENERS} listeners, got {len(listeners)}")
    return listeners


def _same_host(address: str) -> str:
    """`localhost:port` and `127.0.0.1:port` name the same listener."""
    host, _, port = address.rpartition(":")
    return f"127.0.0.1:{port}" if host.lower() == "localhost" else address


def listener_for(dialled: Iterable[str], router_listeners: Mapping[str, str]) -> str:
    """The listener name whose address the client dialled ("" = the default network)."""
    by_address = {_same_host(address): name for name, address in router_listeners.items()}
    for address in dialled:
        name = by_address.get(_same_host(address))
        if name is not None:
            return name
    return ""


def address_under(listener: str, default_address: str, listeners: Mapping[str, str]) -> str:
    """A node's client address under `listener` (its default address when it names none)."""
    if not listener:
        return default_address
    return listeners.get(listener, default_address)
