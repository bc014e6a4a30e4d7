"""Which cluster a client talks to when it is given no router address: the same search as the `weir`
CLI's, so a script and the CLI run from one directory reach one cluster.

First found wins:

1. `$WEIR_ROUTERS` (or `$WEIR_ROUTER`): "host:port[,host:port]";
2. the local cluster under `$WEIR_CLUSTER_DIR`, else `./weir-cluster` (the `cluster.json` that
   `weir cluster up` writes there while the cluster runs);
3. the local cluster `weir cluster up` started last (its data directory is recorded per user in
   `$XDG_STATE_HOME/weir/last-cluster`, default `~/.local/state/weir/last-cluster`);
4. the default addresses `127.0.0.1:7501,127.0.0.1:7502` (where a first `weir cluster up` puts its two
   routers when those ports are free).

A local cluster started with `--tls` records its CA and client certificate in `cluster.json`; a client
that found it there uses them unless the `WEIR_TLS_*` variables name files of their own (a
`$WEIR_TOKEN` / `$WEIR_TOKEN_FILE` adds its token to the local cluster's certificates).
`find_cluster` is pure but for reading those files and the environment.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loaded when a cluster's security is asked for: finding addresses needs no gRPC
    from weir.tls import ChannelSecurity

DEFAULT_CLUSTER_DIR = "weir-cluster"
CLUSTER_STATE_FILE = "cluster.json"
LAST_CLUSTER_FILE = "last-cluster"
DEFAULT_ROUTERS = ("127.0.0.1:7501", "127.0.0.1:7502")
ROUTER_VARIABLES = ("WEIR_ROUTERS", "WEIR_ROUTER")


@dataclass(frozen=True, slots=True)
class FoundCluster:
    """Where a client found its cluster: `routers` ("host:port" each), `found_from` (for messages:
    "$WEIR_ROUTERS", "the local cluster under /path", "the default address", ...), the local
    cluster's `data_dir` when it was found through one, and the channel security to reach it
    (`security`: None = the process default, see weir.tls)."""

    routers: list[str]
    found_from: str
    data_dir: Path | None = None
    security: ChannelSecurity | None = None


def state_home(environ: Mapping[str, str] | None = None) -> Path:
    """Where the CLI keeps per-user state: `$XDG_STATE_HOME/weir`, default `~/.local/state/weir`."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "weir"


def read_cluster_state(data_dir: Path) -> dict[str, Any] | None:
    """The `cluster.json` of a local cluster running under `data_dir` (None when there is none, or
    it cannot be read as JSON: a cluster being written or removed)."""
    try:
        state = json.loads((data_dir / CLUSTER_STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def last_cluster_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """The data directory of the local cluster `weir cluster up` started last (None: none recorded)."""
    with contextlib.suppress(OSError):
        recorded = (state_home(environ) / LAST_CLUSTER_FILE).read_text().strip()
        return Path(recorded) if recorded else None
    return None


def local_cluster_dir(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> Path:
    """`$WEIR_CLUSTER_DIR`, else `./weir-cluster` (from `cwd`, default the working directory)."""
    environ = os.environ if environ is None else environ
    given = environ.get("WEIR_CLUSTER_DIR")
    if given:
        return Path(given).resolve()
    return ((cwd or Path.cwd()) / DEFAULT_CLUSTER_DIR).resolve()


def split_addresses(text: str) -> list[str]:
    """ "a:1, b:2" -> ["a:1", "b:2"] (empty items dropped)."""
    return [address.strip() for address in text.split(",") if address.strip()]


def find_cluster(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> FoundCluster:
    """The cluster a client with no router address talks to (see the module docstring); never fails:
    with nothing else found it is the default address."""
    environ = os.environ if environ is None else environ
    for variable in ROUTER_VARIABLES:
        if environ.get(variable):
            return FoundCluster(split_addresses(environ[variable]), f"${variable}")
    local = local_cluster_dir(environ, cwd)
    found = local_cluster(local, f"the local cluster under {local}", environ)
    if found is not None:
        return found
    last = last_cluster_dir(environ)
    if last is not None:
        found = local_cluster(last, f"the last local cluster started (under {last})", environ)
        if found is not None:
            return found
    return FoundCluster(list(DEFAULT_ROUTERS), "the default address")


def local_cluster(data_dir: Path, found_from: str, environ: Mapping[str, str] | None = None) -> FoundCluster | None:
    """The local cluster running under `data_dir` as a FoundCluster (None when none runs there)."""
    state = read_cluster_state(data_dir)
    if not state or not state.get("routers"):
        return None
    routers = [str(router["address"]) for router in state["routers"]]
    return FoundCluster(routers, found_from, data_dir, cluster_security(state.get("tls"), environ))


def cluster_security(recorded: Any, environ: Mapping[str, str] | None = None) -> ChannelSecurity | None:
    """The client security of a local cluster from what its `cluster.json` recorded ("tls": its CA
    and client certificate files; null = plaintext) and the environment: `WEIR_TLS_*` files of
    their own win (None = use them, the process default); a `$WEIR_TOKEN` or `$WEIR_TOKEN_FILE`
    alone is added to the recorded certificates."""
    from weir.tls import ChannelSecurity

    environment = ChannelSecurity.from_environment(environ)
    if environment is not None and (environment.ca_file or environment.cert_file or environment.server_name):
        return None
    if not isinstance(recorded, dict):
        return environment
    files = [recorded.get(name) or None for name in ("ca_file", "cert_file", "key_file")]
    ca, cert, key = (Path(name) if name else None for name in files)
    security = ChannelSecurity(ca_file=ca, cert_file=cert, key_file=key)
    if environment is not None:
        security = replace(security, token=environment.token, token_file=environment.token_file)
    return security
