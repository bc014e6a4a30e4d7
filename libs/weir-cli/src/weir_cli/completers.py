"""What TAB completes beyond the command tree (argcomplete completers): the streams of the cluster
the command would talk to (found as for the command itself: --router, $WEIR_ROUTERS, the local
cluster, ...) and a stream's consumers. The cluster is asked with a short timeout; a cluster that
is not there, or any other failure, completes nothing rather than slowing the shell down."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from weir_cli.streams import Target

COMPLETION_TIMEOUT_S = 1.5


def attach(action: argparse.Action, completer: Callable[..., list[str]]) -> None:
    """Make argcomplete call `completer` for `action`'s value."""
    vars(action)["completer"] = completer


def _ask(parsed_args: argparse.Namespace, call: Callable[[Target], Awaitable[list[str]]]) -> list[str]:
    from weir_cli.streams import target  # the SDK only once TAB asks the cluster
    from weir_cli.tree import GLOBAL_DEFAULTS

    args = argparse.Namespace(**{**GLOBAL_DEFAULTS, **vars(parsed_args)})
    args.timeout = min(args.timeout or COMPLETION_TIMEOUT_S, COMPLETION_TIMEOUT_S)

    async def run() -> list[str]:
        async with target(args) as to:
            return await call(to)

    with contextlib.suppress(Exception):
        return asyncio.run(asyncio.wait_for(run(), COMPLETION_TIMEOUT_S))
    return []


def stream_names(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    """The cluster's streams starting with `prefix`."""

    async def names(to: Target) -> list[str]:
        return list(await to.client.list_streams())

    return [name for name in _ask(parsed_args, names) if name.startswith(prefix)]


def consumer_names(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    """The consumers of the stream already on the command line, starting with `prefix`."""
    stream = getattr(parsed_args, "stream", None)
    if not stream:
        return []

    async def names(to: Target) -> list[str]:
        return [info.config.name for info in await to.list_consumers(stream)]

    return [name for name in _ask(parsed_args, names) if name.startswith(prefix)]
