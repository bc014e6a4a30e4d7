"""Real network faults for the slow tier: every process of a test cluster on a host of its own.

`Network` gives each named host (``redis``, ``router-1``, ``node-2`` ...) a Linux network namespace
with one interface, ``eth0``, and an address on a private /24; the interfaces meet on a bridge in a
namespace of their own (the hub), and the test process reaches every host through one more
interface in its own namespace, so clients run where pytest runs. Processes are started inside
their host with `placement(name)` (weir_cli.launcher.Placement: ``ip netns exec``), bind its
address, and register it, so every byte between two of them crosses a real interface where a rule
can stop it.

Faults are nftables rules in the host's own namespace (`cut`, `isolate`, `lose`, `delay`), removed
by `heal`: dropped packets, so TCP sees silence rather than a refused connection, as on a real
network partition. The kernel here has no `netem` (CONFIG_NET_SCH_NETEM is off), so loss comes from
nft's `numgen random`, and latency from NFQUEUE (an iptables rule: nft's `queue` is not in this
kernel either): the packets a host sends wait in the kernel's queue
until tests/netem_delay.py, running in the host, lets them go (in a virtualenv of its own with
NetfilterQueue, built once per run; it needs Debian's libnetfilter-queue-dev).

Needs root, `ip` (iproute2) and `nft` (nftables). Everything is made under names that carry this
process's pid (``weirnet-<pid>-<host>``): `close` kills whatever still runs in the namespaces and
deletes them, and a later run deletes the namespaces of a run whose process is gone, so nothing is
left behind whatever the outcome. Traffic goes only to addresses of the namespaces made here.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest
from weir_cli.launcher import pid_alive
from weir_cli.process_basics import Placement

PREFIX = "weirnet"
FAULT_TABLE = "weirfault"
FIRST_HOST = 10  # host addresses start at .10; .1 is the test process's own
FIRST_QUEUE = 100  # NFQUEUE numbers of the hosts' delays (one per host)
NFQUEUE_HEADER = Path("/usr/include/libnetfilter_queue/libnetfilter_queue.h")
DELAY_PROGRAM = Path(__file__).with_name("netem_delay.py")
DELAY_READY_S = 10.0


class NetworkError(RuntimeError):
    pass


def run(*command: str, stdin: str | None = None) -> str:
    """Run `command`; its stdout. Errors: NetworkError with its stderr when it fails."""
    completed = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=30, check=False)
    if completed.returncode != 0:
        raise NetworkError(f"{' '.join(command)}: {completed.stderr.strip() or completed.stdout.strip()}")
    return completed.stdout


def namespaces() -> list[str]:
    return [line.split()[0] for line in run("ip", "netns", "list").splitlines() if line.strip()]


def delete_namespace(name: str) -> None:
    """SIGKILL every process still in namespace `name`, then delete it (its interfaces go with it)."""
    with contextlib.suppress(NetworkError):
        for pid in run("ip", "netns", "pids", name).split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
    with contextlib.suppress(NetworkError):
        run("ip", "netns", "del", name)


def remove_orphans() -> None:
    """Delete the namespaces of earlier runs whose process is gone (a run killed before `close`)."""
    for name in namespaces():
        match = re.fullmatch(rf"{PREFIX}-(\d+)-.+", name)
        if match and int(match.group(1)) != os.getpid() and not pid_alive(int(match.group(1))):
            delete_namespace(name)


def free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.231.0.0/16 that no interface of this namespace uses."""
    used = set(re.findall(r"inet (10\.231\.\d+)\.", run("ip", "-4", "addr")))
    for third in random.sample(range(1, 255), 254):
        if f"10.231.{third}" not in used:
            return ipaddress.IPv4Network(f"10.231.{third}.0/24")
    raise NetworkError("no free /24 in 10.231.0.0/16")


class Network:
    """Hosts in network namespaces on one bridge, reachable from this process (see the module)."""

    def __init__(self, hosts: Sequence[str]) -> None:
        remove_orphans()
        self.tag = f"{PREFIX}-{os.getpid()}"
        # What an earlier Network of this pid left (a process reusing a pid, or one whose namespaces
        # the kernel still tears down: that is asynchronous): its namespaces, and its interface here
        for name in namespaces():
            if name.startswith(f"{self.tag}-"):
                delete_namespace(name)
        with contextlib.suppress(NetworkError):
            run("ip", "link", "del", f"wn{os.getpid()}r")
        self.subnet = free_subnet()
        addresses = list(self.subnet.hosts())
        self.own_address = str(addresses[0])
        self.addresses = {host: str(addresses[FIRST_HOST + index]) for index, host in enumerate(hosts)}
        self._made: list[str] = []
        self._delays: dict[str, subprocess.Popen[str]] = {}
        self._delay_venv: Path | None = None
        try:
            self._build(hosts)
        except BaseException:
            self.close()
            raise

    def namespace(self, host: str) -> str:
        return f"{self.tag}-{host}"

    def placement(self, host: str) -> Placement:
        """Where a process of `host` runs: inside its namespace, bound to its address."""
        return Placement(self.addresses[host], ("ip", "netns", "exec", self.namespace(host)))

    def _add_namespace(self, name: str) -> None:
        run("ip", "netns", "add", name)
        self._made.append(name)
        run("ip", "-n", name, "link", "set", "lo", "up")

    def _build(self, hosts: Sequence[str]) -> None:
        hub = f"{self.tag}-hub"
        self._add_namespace(hub)
        run("ip", "-n", hub, "link", "add", "br0", "type", "bridge")
        run("ip", "-n", hub, "link", "set", "br0", "up")
        short = f"wn{os.getpid()}"  # interface names: at most 15 characters
        run("ip", "link", "add", f"{short}r", "type", "veth", "peer", "name", f"{short}rh")
        self._attach(hub, f"{short}rh")
        run("ip", "addr", "add", f"{self.own_address}/24", "dev", f"{short}r")
        run("ip", "link", "set", f"{short}r", "up")
        for index, host in enumerate(hosts):
            name = self.namespace(host)
            self._add_namespace(name)
            inside, outside = f"{short}x{index}", f"{short}h{index}"
            run("ip", "link", "add", inside, "type", "veth", "peer", "name", outside)
            run("ip", "link", "set", inside, "netns", name)
            run("ip", "-n", name, "link", "set", inside, "name", "eth0")
            run("ip", "-n", name, "addr", "add", f"{self.addresses[host]}/24", "dev", "eth0")
            run("ip", "-n", name, "link", "set", "eth0", "up")
            self._attach(hub, outside)

    def _attach(self, hub: str, interface: str) -> None:
        run("ip", "link", "set", interface, "netns", hub)
        run("ip", "-n", hub, "link", "set", interface, "master", "br0")
        run("ip", "-n", hub, "link", "set", interface, "up")

    # ---- faults -----------------------------------------------------------------------------

    def _rules(self, host: str, inbound: Iterable[str], outbound: Iterable[str]) -> None:
        """Replace `host`'s fault rules with these (nft statements, per direction)."""
        self.heal(host)
        script = "\n".join(
            [
                f"table inet {FAULT_TABLE} {{",
                "  chain input { type filter hook input priority -10; policy accept;",
                '    iifname "lo" accept',
                *(f"    {rule}" for rule in inbound),
                "  }",
                "  chain output { type filter hook output priority -10; policy accept;",
                '    oifname "lo" accept',
                *(f"    {rule}" for rule in outbound),
                "  }",
                "}",
            ]
        )
        run("ip", "netns", "exec", self.namespace(host), "nft", "-f", "-", stdin=script)

    def isolate(self, host: str) -> None:
        """A full partition: every packet to or from `host` is dropped."""
        self._rules(host, ["drop"], ["drop"])

    def cut(self, host: str, peers: Sequence[str]) -> None:
        """A partial partition: `host` and each of `peers` drop each other's packets (both ways);
        every other link stays up."""
        others = "{ " + ", ".join(self.addresses[peer] for peer in peers) + " }"
        self._rules(host, [f"ip saddr {others} drop"], [f"ip daddr {others} drop"])

    def lose(self, host: str, percent: int, *, inbound: bool = False, outbound: bool = True) -> None:
        """A lossy link: each packet `host` sends (and, with `inbound`, receives) is dropped with
        probability `percent` %."""
        rule = "drop" if percent >= 100 else f"numgen random mod 100 < {percent} drop"
        self._rules(host, [rule] if inbound else [], [rule] if outbound else [])

    def delay(self, host: str, delay_ms: int, loss_percent: int = 0) -> None:
        """Added latency: each packet `host` sends waits `delay_ms` (its round trips grow by that
        much), and `loss_percent` % of them are dropped first. Skips the test (fails it under
        WEIR_PREFLIGHT_STRICT=1) without libnetfilter-queue's headers."""
        queue = FIRST_QUEUE + list(self.addresses).index(host)
        program = subprocess.Popen(
            [
                *self.placement(host).command_prefix,
                str(self._delay_python()),
                str(DELAY_PROGRAM),
                str(queue),
                str(delay_ms),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._delays[host] = program
        assert program.stdout is not None
        ready = program.stdout.readline().strip()  # "ready", or why not (its output ends with the error)
        if ready != "ready":
            self.heal(host)
            raise NetworkError(f"the delay queue of {host} did not start: {ready} {program.stdout.read()[-2000:]}")
        if loss_percent:
            self._rules(host, [], [f"numgen random mod 100 < {loss_percent} drop"])
        # nft's own `queue` is not in this kernel (CONFIG_NFT_QUEUE off); xtables' NFQUEUE target is
        namespace = ("ip", "netns", "exec", self.namespace(host))
        run(
            *namespace,
            "iptables",
            "-A",
            "OUTPUT",
            "-o",
            "eth0",
            "-j",
            "NFQUEUE",
            "--queue-num",
            str(queue),
            "--queue-bypass",
        )

    def _delay_python(self) -> Path:
        """The python of a virtualenv with NetfilterQueue, made once per Network."""
        if not NFQUEUE_HEADER.exists():
            reason = (
                "libnetfilter-queue-dev is missing (added latency needs NFQUEUE): "
                "sudo apt-get install libnetfilter-queue-dev"
            )
            if os.environ.get("WEIR_PREFLIGHT_STRICT") == "1":
                pytest.fail(reason)
            pytest.skip(reason)
        from tests.rocketmq_client_env import isolated_python

        if self._delay_venv is None:
            self._delay_venv = Path(tempfile.mkdtemp(prefix="weir-netem-"))
        return isolated_python(self._delay_venv / "venv", "netfilterqueue==1.1.0")

    def heal(self, host: str) -> None:
        """Remove every fault rule of `host`, and stop its delay queue."""
        with contextlib.suppress(NetworkError):
            run("ip", "netns", "exec", self.namespace(host), "nft", "delete", "table", "inet", FAULT_TABLE)
        program = self._delays.pop(host, None)
        if program is not None:
            with contextlib.suppress(NetworkError):
                run("ip", "netns", "exec", self.namespace(host), "iptables", "-F", "OUTPUT")
            program.kill()
            program.wait()

    def close(self) -> None:
        """Kill what still runs in the namespaces, delete them (and with them every interface)."""
        for host in list(self._delays):
            self.heal(host)
        if self._made:  # at once: a namespace's own teardown is asynchronous, and the next Network of
            with contextlib.suppress(NetworkError):  # this process wants the same interface name
                run("ip", "link", "del", f"wn{os.getpid()}r")
        for name in reversed(self._made):
            delete_namespace(name)
        self._made.clear()
        if self._delay_venv is not None:
            shutil.rmtree(self._delay_venv, ignore_errors=True)
