"""The bottom floor of the `weir` command tree: the global options' names and defaults, and `Tree`,
which adds a command or a group of commands taking them. `weir_cli.parser` builds the tree; the
modules that add their own commands (kv, stores, objects, invoker) and the completers take these
from here, so that none of them imports the parser that imports them."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    Commands = argparse._SubParsersAction[Any]  # a command group
else:
    Commands = argparse._SubParsersAction
# the global options' values when not given (weir_cli.parser's _global_options adds them suppressed)
GLOBAL_DEFAULTS = {
    "json": False,
    "router": None,
    "data_dir": None,
    "server": None,
    "timeout": None,
    "verbose": False,
    "tls_ca": None,
    "tls_cert": None,
    "tls_key": None,
    "token_file": None,
    "invoker": None,
    "context": None,
}
# the global options that take a value
GLOBAL_WITH_VALUE = {
    "--router",
    "--data-dir",
    "--server",
    "--timeout",
    "--tls-ca",
    "--tls-cert",
    "--tls-key",
    "--token-file",
    "--invoker",
    "--context",
}


class Tree:
    """Adds commands that all take the global options."""

    def __init__(self, options: argparse.ArgumentParser) -> None:
        self.options = options

    def command(
        self,
        parent: Commands,
        name: str,
        help_text: str,
        handler: Callable[[argparse.Namespace], Coroutine[Any, Any, int]],
    ) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = parent.add_parser(
            name, help=help_text, description=help_text, parents=[self.options]
        )
        parser.set_defaults(handler=handler)
        return parser

    def group(self, parent: Commands, name: str, help_text: str) -> Commands:
        parser: argparse.ArgumentParser = parent.add_parser(
            name, help=help_text, description=help_text, parents=[self.options]
        )
        commands: Commands = parser.add_subparsers(dest=f"{name}_command", required=True, metavar="COMMAND")
        return commands
