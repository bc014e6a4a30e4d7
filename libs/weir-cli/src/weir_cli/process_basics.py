"""What every process the CLI starts shares: where it runs (`Placement`), the error of a start that
failed, its death with the process that started it, free ports and owner-only secrets."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Placement:
    """Where a process runs: the address it binds and is reached at, and what its command runs
    under (e.g. ``("ip", "netns", "exec", "<namespace>")``: the network fault tests give each process
    a host of its own in a Linux network namespace). The default is this machine's loopback."""

    host: str = LOOPBACK
    command_prefix: tuple[str, ...] = ()


LOCAL = Placement()


class LaunchError(RuntimeError):
    """A node process did not come up; the message carries the end of its log."""


def owner_only_secret(path: Path) -> str:
    """The secret in `path`, made once (32 random bytes, hex, owner-only) when it does not exist."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another process made it first: use theirs
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "w") as file:
                file.write(secrets.token_hex(32))
    return path.read_text().strip()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# Run as `python -c _PARENT_DEATH <parent pid> <command...>`: ask Linux to SIGKILL this process when
# its parent (thread) dies (prctl PR_SET_PDEATHSIG), give up if the parent is already gone, then exec
# the command (the same pid, so the signal setting stays). Done in a tiny exec'd Python rather than
# in a preexec_fn, because running Python between fork and exec in a process with gRPC threads can
# crash it; without a preexec_fn, subprocess forks with vfork/posix_spawn.
_PARENT_DEATH = """
import ctypes, os, signal, sys
try:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
except OSError:
    pass
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def kill_process(process: subprocess.Popen[bytes] | None) -> None:
    """SIGKILL `process` (a crash with no chance to flush anything) and reap it, if it runs."""
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()


def stop_process(process: subprocess.Popen[bytes] | None, timeout_s: float = 10.0) -> None:
    """SIGTERM `process` and wait for it; SIGKILL it if it does not exit within `timeout_s`."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        kill_process(process)


def with_parent_death(command: list[str]) -> list[str]:
    """`command` wrapped so that it is SIGKILLed when this process dies (a crashed test run or
    benchmark leaves no process behind)."""
    return [sys.executable, "-c", _PARENT_DEATH, str(os.getpid()), *command]
