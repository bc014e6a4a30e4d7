"""Which cluster a command talks to, found from anywhere, and the client it uses.

Routers, first found wins: `--router host:port[,host:port]`; `$WEIR_ROUTERS` (or `$WEIR_ROUTER`);
the local cluster whose data directory is `--data-dir`, `$WEIR_CLUSTER_DIR` or `./weir-cluster`;
the local cluster `weir cluster up` started last (recorded per user under `$XDG_STATE_HOME/weir`,
default `~/.local/state/weir`). None found is a one-line error with a hint. Before the command runs,
one connection to any of the routers (or the --server node) is made: refused everywhere fails at
once, nothing answering fails after `--timeout`, both in one line with the hint; a connection that
takes longer than a second says what it is waiting for (on a terminal, or with -v).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import grpc
from weir import tls as weir_tls
from weir.client import NodeClient
from weir.cluster import Client
from weir.errors import UnavailableError, WeirError
from weir.tls import ChannelSecurity

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
    data_dir: Path | None = None  # the local cluster they were found in


def _state_routers(data_dir: Path) -> list[str]:
    state = read_cluster_state(data_dir)
    if not state or not state.get("routers"):
        return []
    return [str(router["address"]) for router in state["routers"]]


def find_routers(args: Any) -> Routers:
    """The routers this command talks to (see the module docstring), with this process's channel
    security set for them (`configure_tls`). Errors: CliError with a hint."""
    routers = _find_routers(args)
    configure_tls(args, routers)
    return routers


def configure_tls(args: Any, routers: Routers | None = None) -> ChannelSecurity | None:
    """This process's channel security: --tls-ca/--tls-cert/--tls-key, else the WEIR_TLS_* variables,
    else the local cluster's own (a cluster started with `weir cluster up --tls`), else plaintext;
    with the bearer token of --token-file, else of $WEIR_TOKEN_FILE or $WEIR_TOKEN."""
    ca, cert, key = (getattr(args, name, None) for name in ("tls_ca", "tls_cert", "tls_key"))
    security: ChannelSecurity | None
    if ca or cert or key:
        try:
            security = ChannelSecurity(
                ca_file=Path(ca) if ca else None,
                cert_file=Path(cert) if cert else None,
                key_file=Path(key) if key else None,
            )
        except WeirError as error:
            raise CliError(f"--tls-cert and --tls-key: {error.message}", status=2) from None
    else:
        security = ChannelSecurity.from_environment()
        if security is None and routers is not None and routers.data_dir is not None:
            state = read_cluster_state(routers.data_dir) or {}
            security = _state_security(state.get("tls"))
    security = _with_token(args, security)
    weir_tls.set_default(security)
    return security


def _state_security(recorded: Any) -> ChannelSecurity | None:
    """The client security a local cluster recorded in its cluster.json ("tls": its CA and client
    certificate files; null = plaintext)."""
    if not isinstance(recorded, dict):
        return None
    files = [recorded.get(name) or None for name in ("ca_file", "cert_file", "key_file")]
    ca, cert, key = (Path(name) if name else None for name in files)
    return ChannelSecurity(ca_file=ca, cert_file=cert, key_file=key)


def _with_token(args: Any, security: ChannelSecurity | None) -> ChannelSecurity | None:
    """`security` with the bearer token of --token-file, else of $WEIR_TOKEN_FILE or $WEIR_TOKEN."""
    token_file = getattr(args, "token_file", None)
    token = os.environ.get(weir_tls.ENV_TOKEN, "")
    if not token_file:
        token_file = os.environ.get(weir_tls.ENV_TOKEN_FILE, "")
        given = f"${weir_tls.ENV_TOKEN_FILE}"
    else:
        token, given = "", "--token-file"
    if not (token or token_file):
        return security
    try:
        chosen = replace(
            security or ChannelSecurity(), token=token, token_file=Path(token_file) if token_file else None
        )
        chosen.bearer_token()
    except WeirError as error:
        raise CliError(f"{given}: {error.message}", status=2) from None
    return chosen


def _find_routers(args: Any) -> Routers:
    given = getattr(args, "router", None)
    if given:
        return Routers(_split(given), "--router")
    for variable in ("WEIR_ROUTERS", "WEIR_ROUTER"):
        if os.environ.get(variable):
            return Routers(_split(os.environ[variable]), f"${variable}")
    local = cluster_dir(args)
    addresses = _state_routers(local)
    if addresses:
        return Routers(addresses, f"the local cluster under {local}", local)
    with contextlib.suppress(OSError):
        last = Path((state_home() / "last-cluster").read_text().strip())
        addresses = _state_routers(last)
        if addresses:
            return Routers(addresses, f"the last local cluster started (under {last})", last)
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


async def _settled_state(address: str) -> grpc.ChannelConnectivity:
    """Connect to `address`: READY, or TRANSIENT_FAILURE (refused, no route, unknown host). gRPC's
    default options: the SDK's short reconnect backoff is also its connect timeout (100 ms), which
    would take a slow link for a refusal."""
    async with weir_tls.aio_channel(address) as channel:
        state = channel.get_state(try_to_connect=True)
        while state in (grpc.ChannelConnectivity.IDLE, grpc.ChannelConnectivity.CONNECTING):
            await channel.wait_for_state_change(state)
            state = channel.get_state(try_to_connect=True)
        return state


async def reach(routers: Routers, limit: float, verbose: bool) -> None:
    """Return once one of `routers` accepts a connection. Errors (CliError, with the hint): every
    address refused it; none answered within `limit` seconds."""
    deadline = time.monotonic() + limit
    attempts = {asyncio.ensure_future(_settled_state(address)) for address in routers.addresses}
    said = False
    try:
        while attempts:
            wait = min(1.0, deadline - time.monotonic()) if not said else deadline - time.monotonic()
            done, attempts = await asyncio.wait(attempts, timeout=max(0.0, wait), return_when=asyncio.FIRST_COMPLETED)
            if any(task.result() == grpc.ChannelConnectivity.READY for task in done):
                return
            if not done and time.monotonic() >= deadline:
                raise CliError(f"{_where(routers)} did not answer within {limit:g} s: {_hint(routers)}")
            if not done and not said:
                said = True
                if verbose or sys.stderr.isatty():
                    print(f"weir: waiting for {_where(routers)} ...", file=sys.stderr, flush=True)
        raise CliError(f"{_where(routers)} refused the connection (nothing listening there?): {_hint(routers)}")
    finally:
        for task in attempts:
            task.cancel()


def _hint(routers: Routers) -> str:
    if routers.found_from == "--server":
        return "check the address and that the node is running"
    if routers.data_dir is not None:
        return (
            f"has it stopped? 'weir cluster status' lists its processes (logs: {routers.data_dir}/*.log); "
            "'weir cluster down' then 'weir cluster up' starts it again"
        )
    return HINT


def _where(routers: Routers) -> str:
    if routers.found_from == "--server":
        return f"the node at {routers.addresses[0]} (--server)"
    plural = "s" if len(routers.addresses) > 1 else ""
    return f"the router{plural} at {','.join(routers.addresses)} (from {routers.found_from})"


@contextlib.asynccontextmanager
async def cluster_client(args: Any) -> AsyncIterator[Client]:
    """A Client on the routers, retrying for at most --timeout; an unreachable cluster is a CliError
    that says which addresses were tried and where they came from."""
    routers = find_routers(args)
    limit = timeout_s(args)
    await reach(routers, limit, bool(getattr(args, "verbose", False)))
    client = Client(routers.addresses, timeout_s=limit, retry_timeout_s=limit)
    try:
        yield client
    except UnavailableError as error:
        raise CliError(
            f"the cluster at {','.join(routers.addresses)} (from {routers.found_from}) did not answer within "
            f"{limit:g} s ({_reason(error.message)}): {_hint(routers)}"
        ) from None
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def node_client(args: Any) -> AsyncIterator[NodeClient]:
    """A NodeClient on --server (one standalone node)."""
    configure_tls(args)
    await reach(Routers([args.server], "--server"), timeout_s(args), bool(getattr(args, "verbose", False)))
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
