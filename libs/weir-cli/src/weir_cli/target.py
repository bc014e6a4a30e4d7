"""Which cluster a command talks to, found from anywhere, and the client it uses.

Routers, first found wins: `--router host:port[,host:port]`; `$WEIR_ROUTERS` (or `$WEIR_ROUTER`);
the local cluster whose data directory is `--data-dir`, `$WEIR_CLUSTER_DIR` or `./weir-cluster`;
the local cluster `weir cluster up` started last (recorded per user under `$XDG_STATE_HOME/weir`,
default `~/.local/state/weir`). None found is a one-line error with a hint, as is a cluster that
does not answer within `--timeout`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from weir.client import NodeClient
from weir.cluster import Client
from weir.errors import UnavailableError

from weir_cli.launcher import read_cluster_state

DEFAULT_CLUSTER_DIR = "weir-cluster"
DEFAULT_TIMEOUT_S = 10.0
HINT = "start one with 'weir cluster up', or pass --router HOST:PORT (or set WEIR_ROUTERS)"
T = TypeVar("T")


class CliError(Exception):
    """A mistake or a failure the CLI reports in one line (exit status `status`)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


def state_home() -> Path:
    """Where the CLI keeps per-user state (the last local cluster's data directory)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "weir"


def remember_cluster(data_dir: Path) -> None:
    """Record `data_dir` as the last local cluster started (found from any directory later)."""
    home = state_home()
    with contextlib.suppress(OSError):
        home.mkdir(parents=True, exist_ok=True)
        (home / "last-cluster").write_text(str(data_dir.resolve()) + "\n")


def cluster_dir(args: Any, *, running: bool = False) -> Path:
    """The local cluster's data directory: --data-dir, else $WEIR_CLUSTER_DIR, else ./weir-cluster;
    with `running` (down, status), the last cluster started when ./weir-cluster holds none."""
    given = getattr(args, "data_dir", None) or os.environ.get("WEIR_CLUSTER_DIR")
    if given:
        return Path(given).resolve()
    local = Path(DEFAULT_CLUSTER_DIR).resolve()
    if running and read_cluster_state(local) is None:
        with contextlib.suppress(OSError):
            last = Path((state_home() / "last-cluster").read_text().strip())
            if read_cluster_state(last) is not None:
                return last
    return local


@dataclass(frozen=True, slots=True)
class Routers:
    addresses: list[str]
    found_from: str  # for messages: "--router", "$WEIR_ROUTERS", "the local cluster under X", ...


def _state_routers(data_dir: Path) -> list[str]:
    state = read_cluster_state(data_dir)
    if not state or not state.get("routers"):
        return []
    return [str(router["address"]) for router in state["routers"]]


def find_routers(args: Any) -> Routers:
    """The routers this command talks to (see the module docstring). Errors: CliError with a hint."""
    given = getattr(args, "router", None)
    if given:
        return Routers(_split(given), "--router")
    for variable in ("WEIR_ROUTERS", "WEIR_ROUTER"):
        if os.environ.get(variable):
            return Routers(_split(os.environ[variable]), f"${variable}")
    local = cluster_dir(args)
    addresses = _state_routers(local)
    if addresses:
        return Routers(addresses, f"the local cluster under {local}")
    with contextlib.suppress(OSError):
        last = Path((state_home() / "last-cluster").read_text().strip())
        addresses = _state_routers(last)
        if addresses:
            return Routers(addresses, f"the last local cluster started (under {last})")
    raise CliError(f"no Weir cluster found (no --router, no $WEIR_ROUTERS, no running cluster under {local}): {HINT}")


def _reason(message: str) -> str:
    """The last clause of gRPC's error text ("UNAVAILABLE: failed to connect to all addresses; last
    error: UNKNOWN: ipv4:127.0.0.1:1: Failed to connect to remote host: Connection refused" -> "Connection
    refused"): what a person needs on the one line."""
    return message.rsplit(": ", 1)[-1].strip() or message


def _split(text: str) -> list[str]:
    return [address.strip() for address in text.split(",") if address.strip()]


def timeout_s(args: Any) -> float:
    return float(getattr(args, "timeout", None) or DEFAULT_TIMEOUT_S)


@contextlib.asynccontextmanager
async def cluster_client(args: Any) -> AsyncIterator[Client]:
    """A Client on the routers, retrying for at most --timeout; an unreachable cluster is a CliError
    that says which addresses were tried and where they came from."""
    routers = find_routers(args)
    limit = timeout_s(args)
    client = Client(routers.addresses, timeout_s=limit, retry_timeout_s=limit)
    try:
        yield client
    except UnavailableError as error:
        raise CliError(
            f"the cluster at {','.join(routers.addresses)} (from {routers.found_from}) did not answer within "
            f"{limit:g} s ({_reason(error.message)}): {HINT}"
        ) from None
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def node_client(args: Any) -> AsyncIterator[NodeClient]:
    """A NodeClient on --server (one standalone node)."""
    client = NodeClient(args.server, timeout_s=timeout_s(args))
    try:
        yield client
    except UnavailableError as error:
        raise CliError(f"the node at {args.server} did not answer: {error.message}") from None
    finally:
        await client.close()


async def with_progress(work: Awaitable[T], what: str, verbose: bool) -> T:
    """Await `work`; past one second, say on stderr what is awaited (when stderr is a terminal or
    with -v), so a slow or dead cluster is never silent."""
    task = asyncio.ensure_future(work)
    done, _ = await asyncio.wait({task}, timeout=1.0)
    if not done and (verbose or sys.stderr.isatty()):
        print(f"weir: waiting for {what} ...", file=sys.stderr, flush=True)
    return await task
