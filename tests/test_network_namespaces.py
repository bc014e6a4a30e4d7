"""The network fault harness itself (tests/network_namespaces.py): hosts reach each other, a fault
silences exactly the links it names, an added delay slows a host's packets by that much, `heal`
restores them, and `close` leaves no namespace and no process behind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.network_namespaces import PREFIX, Network, namespaces
from tests.system_tools import needs_tool

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

PORT = 7777
LISTENER = f"""
import socket
server = socket.create_server((__import__("sys").argv[1], {PORT}))
while True:
    connection, _ = server.accept()
    connection.sendall(b"hello")
    connection.close()
"""
# Run inside a host: connect to argv[1], print "ok", "refused" or "silent" (no answer within 1 s).
CONNECT = f"""
import socket, sys
try:
    with socket.create_connection((sys.argv[1], {PORT}), timeout=1) as connection:
        print("ok" if connection.recv(5) == b"hello" else "garbled")
except ConnectionRefusedError:
    print("refused")
except OSError:
    print("silent")
"""


@pytest.fixture
def network() -> Iterator[Network]:
    needs_tool("ip")
    needs_tool("nft")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    made = Network(["a", "b"])
    try:
        yield made
    finally:
        made.close()


def connect_from_here(address: str) -> str:
    try:
        with socket.create_connection((address, PORT), timeout=1) as connection:
            return "ok" if connection.recv(5) == b"hello" else "garbled"
    except ConnectionRefusedError:
        return "refused"
    except OSError:
        return "silent"


def timed_connect(address: str) -> float:
    """Seconds from a TCP connect to `address` until its greeting arrived (one round trip and more)."""
    started = time.monotonic()
    assert connect_from_here(address) == "ok"
    return time.monotonic() - started


def connect_from(network: Network, host: str, address: str) -> str:
    command = [*network.placement(host).command_prefix, sys.executable, "-c", CONNECT, address]
    return subprocess.run(command, capture_output=True, text=True, timeout=10, check=True).stdout.strip()


def test_faults_silence_exactly_the_links_they_name_and_heal_restores_them(network: Network) -> None:
    a, b = network.addresses["a"], network.addresses["b"]
    listener = subprocess.Popen([*network.placement("a").command_prefix, sys.executable, "-c", LISTENER, a])
    try:
        deadline = time.monotonic() + 10
        while connect_from_here(a) != "ok":
            assert time.monotonic() < deadline, "the listener in host a never answered"
            time.sleep(0.1)
        assert connect_from(network, "b", a) == "ok"
        assert connect_from_here(b) == "refused"  # b is reachable, nothing listens there

        network.isolate("a")
        assert connect_from_here(a) == "silent"  # dropped, not refused: a partition, not a crash
        assert connect_from(network, "b", a) == "silent"
        network.heal("a")
        assert connect_from_here(a) == "ok"

        network.cut("a", ["b"])
        assert connect_from(network, "b", a) == "silent"
        assert connect_from_here(a) == "ok"  # every other link stays up
        network.heal("a")
        assert connect_from(network, "b", a) == "ok"

        network.lose("a", 100)  # one way: a's replies are lost, so the handshake never completes
        assert connect_from_here(a) == "silent"
        network.heal("a")
        assert connect_from_here(a) == "ok"

        network.delay("a", 300)  # every packet a sends waits 300 ms in an NFQUEUE
        assert timed_connect(a) >= 0.3
        network.heal("a")
        assert timed_connect(a) < 0.1
    finally:
        network.close()
        listener.wait(timeout=10)  # killed with its namespace
    assert listener.returncode == -9
    assert not [name for name in namespaces() if name.startswith(f"{PREFIX}-{os.getpid()}-")]
