"""Which cluster a command talks to, found from anywhere, and the client it uses.

Routers, first found wins: `--router host:port[,host:port]`; the local cluster under `--data-dir`;
then the SDK's search (weir.discovery, so a script and a command run from one directory reach one
cluster): `$WEIR_ROUTERS` (or `$WEIR_ROUTER`); the local cluster under `$WEIR_CLUSTER_DIR` or
`./weir-cluster`; the local cluster `weir cluster up` started last (recorded per user under
`$XDG_STATE_HOME/weir`, default `~/.local/state/weir`); the default address 127.0.0.1:7501,7502. With
-v the command says which it picked. Before the command runs,
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
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import grpc
    from weir.client import NodeClient
    from weir.cluster import Client
    from weir.tls import ChannelSecurity
from weir import discovery
from weir.discovery import read_cluster_state

from weir_cli import contexts
from weir_cli.cli_error import CliError

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_FOUND_FROM = "the default address"
HINT = "start one with 'weir cluster up', or pass --router HOST:PORT (or set WEIR_ROUTERS)"
T = TypeVar("T")


def remember_cluster(data_dir: Path) -> None:
    """Record `data_dir` as the last local cluster started (found from any directory later)."""
    home = discovery.state_home()
    with contextlib.suppress(OSError):
        home.mkdir(parents=True, exist_ok=True)
        (home / discovery.LAST_CLUSTER_FILE).write_text(str(data_dir.resolve()) + "\n")


def cluster_dir(args: Any, *, running: bool = False) -> Path:
    """The local cluster's data directory: --data-dir, else $WEIR_CLUSTER_DIR, else ./weir-cluster;
    with `running` (down, status), the last cluster started when ./weir-cluster holds none."""
    given = getattr(args, "data_dir", None)
    if given:
        return Path(given).resolve()
    local = discovery.local_cluster_dir()
    if running and read_cluster_state(local) is None:
        last = discovery.last_cluster_dir()
        if last is not None and read_cluster_state(last) is not None:
            return last
    return local


@dataclass(frozen=True, slots=True)
class Routers:
    addresses: list[str]
    found_from: str  # for messages: "--router", "$WEIR_ROUTERS", "the local cluster under X", ...
    data_dir: Path | None = None  # the local cluster they were found in
    context: contexts.Context | None = None  # the saved context they came from (weir context)


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
    import weir.tls as weir_tls
    from weir.errors import WeirError
    from weir.tls import ChannelSecurity

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
    elif routers is not None and routers.context is not None:
        security = _context_security(routers.context)
    else:
        security = None
        if routers is not None and routers.data_dir is not None:  # its CA, with $WEIR_TOKEN's token
            security = discovery.cluster_security((read_cluster_state(routers.data_dir) or {}).get("tls"))
        if security is None:
            security = ChannelSecurity.from_environment()
    security = _with_token(args, security)
    weir_tls.set_default(security)
    return security


def _context_security(context: contexts.Context) -> ChannelSecurity | None:
    """A saved context's TLS files and token file (None: plaintext, no token)."""
    from weir.tls import ChannelSecurity

    if not (context.tls_ca or context.tls_cert or context.token_file):
        return None
    return ChannelSecurity(
        ca_file=Path(context.tls_ca) if context.tls_ca else None,
        cert_file=Path(context.tls_cert) if context.tls_cert else None,
        key_file=Path(context.tls_key) if context.tls_key else None,
        token_file=Path(context.token_file) if context.token_file else None,
    )


def _with_token(args: Any, security: ChannelSecurity | None) -> ChannelSecurity | None:
    """`security` with the bearer token of --token-file, else of $WEIR_TOKEN_FILE or $WEIR_TOKEN."""
    import weir.tls as weir_tls
    from weir.errors import WeirError
    from weir.tls import ChannelSecurity

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
    """--router, else weir.discovery's search (the SDK's: $WEIR_ROUTERS, --data-dir or
    $WEIR_CLUSTER_DIR or ./weir-cluster, the last cluster started, the default address)."""
    given = getattr(args, "router", None)
    if given:
        return Routers(_split(given), "--router")
    data_dir = getattr(args, "data_dir", None)
    if data_dir:
        local = Path(data_dir).resolve()
        found = discovery.local_cluster(local, f"the local cluster under {local} (--data-dir)")
        if found is None:
            raise CliError(f"no cluster runs under {local} (--data-dir): {HINT}")
    else:
        context = contexts.active(args)
        if context is not None:
            return Routers(_split(context.routers), f"context {context.name}", context=context)
        found = discovery.find_cluster()
    return Routers(found.routers, found.found_from, found.data_dir)


def _reason(message: str) -> str:
    """The last clause of gRPC's error text ("UNAVAILABLE: failed to connect to all addresses; last
    error: UNKNOWN: ipv4:127.0.0.1:1: Failed to connect to remote host: Connection refused" -> "Connection
    refused"): what a person needs on the one line."""
    return message.rsplit(": ", 1)[-1].strip() or message


def _split(text: str) -> list[str]:
    return discovery.split_addresses(text)


def timeout_s(args: Any) -> float:
    return float(getattr(args, "timeout", None) or DEFAULT_TIMEOUT_S)


async def _settled_state(address: str) -> grpc.ChannelConnectivity:
    """Connect to `address`: READY, or TRANSIENT_FAILURE (refused, no route, unknown host). gRPC's
    default options: the SDK's short reconnect backoff is also its connect timeout (100 ms), which
    would take a slow link for a refusal."""
    import grpc
    import weir.tls as weir_tls

    async with weir_tls.aio_channel(address) as channel:
        state = channel.get_state(try_to_connect=True)
        while state in (grpc.ChannelConnectivity.IDLE, grpc.ChannelConnectivity.CONNECTING):
            await channel.wait_for_state_change(state)
            state = channel.get_state(try_to_connect=True)
        return state


async def reach(routers: Routers, limit: float, verbose: bool) -> None:
    """Return once one of `routers` accepts a connection. Errors (CliError, with the hint): every
    address refused it; none answered within `limit` seconds."""
    import grpc

    deadline = time.monotonic() + limit
    if verbose:
        print(f"weir: using {_where(routers)}", file=sys.stderr, flush=True)
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
        tls_failure = await _tls_failure(routers.addresses[0])
        if tls_failure is not None:
            raise CliError(f"{_where(routers)}: {tls_failure}")
        raise CliError(f"{_where(routers)} refused the connection (nothing listening there?): {_hint(routers)}")
    finally:
        for task in attempts:
            task.cancel()


async def _tls_failure(address: str) -> str | None:
    """Why a channel to `address` failed although something listens there, when it was TLS: one
    sentence that names TLS and what to pass (weir.errors.describe_tls_failure); None when nothing
    listens or it was not TLS."""
    import grpc
    import weir.tls as weir_tls
    from weir.errors import describe_tls_failure

    host, _, port = address.rpartition(":")
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, int(port)), 2.0)
        writer.close()
    except (OSError, TimeoutError, ValueError):
        return None  # nothing listens: the connection was refused
    secured = weir_tls.default() is not None
    async with weir_tls.aio_channel(address) as channel:
        try:  # any method: the handshake fails before the server looks at it
            await channel.unary_unary("/grpc.health.v1.Health/Check")(b"", timeout=3.0)
        except grpc.aio.AioRpcError as error:
            return describe_tls_failure(error.details() or "", secured=secured)
    return None


def _hint(routers: Routers) -> str:
    if routers.found_from == DEFAULT_FOUND_FROM:
        return f"no --router, no $WEIR_ROUTERS, no cluster under ./weir-cluster, none started last: {HINT}"
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
    from weir.cluster import Client
    from weir.errors import TlsHandshakeError, UnavailableError

    routers = find_routers(args)
    limit = timeout_s(args)
    await reach(routers, limit, bool(getattr(args, "verbose", False)))
    client = Client(routers.addresses, timeout_s=limit, retry_timeout_s=limit)
    try:
        yield client
    except TlsHandshakeError as error:
        raise CliError(error.message) from None
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
    from weir.client import NodeClient
    from weir.errors import UnavailableError

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
