"""`weir`: the Weir command line.

    weir cluster up|down|status    the local cluster as processes (redis, routers, nodes, replicator, gateway)
    weir demo                      bring up a cluster, publish and consume a demo workload, stop it
    weir stream create|update|info|list|delete|purge
    weir pub STREAM SUBJECT [DATA] publish DATA (--count times) or one message per line of stdin
    weir read STREAM               stored messages of every partition (--follow: then new ones)
    weir consumer create|info|list|delete|seek|reset
    weir fetch STREAM CONSUMER     a batch from every partition (--ack acknowledges it)
    weir sub STREAM GROUP          consume as a group member; print and acknowledge (Ctrl-C leaves)
    weir deployments register|ls|rm    the invoker's handler deployments (--invoker HOST:PORT)
    weir subscriptions create|ls|rm    bind a stream's messages to a handler
    weir invoke SERVICE/HANDLER        start an invocation (--wait: print its output)
    weir invocations ls|show|cancel    invocations with their journals
    weir awakeables resolve|reject     complete a handler's awakeable
    weir stats | changes | completion bash|zsh|fish | bench [--router HOST:PORT]

Output is for people unless `--json` (one JSON value per line). Global options go before or after
the verb. The cluster is found from anywhere (weir_cli.target). Errors print one line `weir: ...`
and exit 1 (2 for usage mistakes); Ctrl-C and a closed pipe (`| head`) end quietly.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

# gRPC's core logs a failed TLS handshake on stderr at INFO; a command says it in its one line
# instead. Set before grpc is imported (it reads the variable once); a user's own setting wins.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

if TYPE_CHECKING:
    from weir.errors import WeirError


def version() -> str:
    try:
        return importlib.metadata.version("weir-cli")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _bench(argv: list[str]) -> int:
    """`weir bench ...`: the comparison harness (bench/compare in a Weir source checkout), found from
    the current directory upwards; its flags are `python -m bench.compare`'s (`--router` targets an
    existing cluster instead of the ones it starts)."""
    for directory in (Path.cwd(), *Path.cwd().parents):
        if (directory / "bench" / "compare" / "harness.py").is_file():
            sys.path.insert(0, str(directory))
            from bench.compare.harness import main as bench_main

            result: int = bench_main(argv)
            return result
    print(
        "weir: weir bench runs from a Weir source checkout (the harness and the NATS and Redis clients it "
        "compares with are dev tools): cd into the checkout, run 'make setup', then 'uv run weir bench'",
        file=sys.stderr,
    )
    return 2


def bench_arguments(arguments: list[str]) -> list[str] | None:
    """The harness's arguments when the verb is `bench` (after any global options: `weir --router A
    bench` passes `--router A` on), else None."""
    from weir_cli.tree import GLOBAL_WITH_VALUE

    index, router = 0, None
    while index < len(arguments):
        word = arguments[index]
        if word in GLOBAL_WITH_VALUE:
            if word == "--router" and index + 1 < len(arguments):
                router = arguments[index + 1]
            index += 2
        elif word.startswith("-"):
            if word.startswith("--router="):
                router = word.split("=", 1)[1]
            index += 1
        else:
            break
    if arguments[index : index + 1] != ["bench"]:
        return None
    rest = arguments[index + 1 :]
    if router and not any(word == "--router" or word.startswith("--router=") for word in rest):
        rest += ["--router", router]
    return rest


def _describe(error: WeirError, args: argparse.Namespace) -> str:
    """One line for a server's error: its result code, its message, and a hint for a mistyped name."""
    from weir import errors

    listed_by: dict[type[WeirError], str] = {  # what lists the names a "no such" error is about
        errors.NoSuchStreamError: " ('weir stream list' shows the streams)",
        errors.NoSuchDeploymentError: " ('weir deployments ls' shows them)",
        errors.NoSuchHandlerError: " ('weir deployments ls' shows the services the deployments serve)",
        errors.NoSuchSubscriptionError: " ('weir subscriptions ls' shows them)",
        errors.NoSuchInvocationError: " ('weir invocations ls' shows them)",
    }
    hint = next((hint for kind, hint in listed_by.items() if isinstance(error, kind)), "")
    if isinstance(error, errors.NoSuchConsumerError):
        hint = f" ('weir consumer list {getattr(args, 'stream', None) or 'STREAM'}' shows its consumers)"
    elif isinstance(error, errors.UnavailableError) and "failed to connect" in error.message:
        return f"{error.result_code}: could not connect ({error.message.rsplit(': ', 1)[-1]})"
    return f"{error.result_code}: {error.message}{hint}"


def _run(args: argparse.Namespace) -> int:
    from weir.errors import WeirError

    from weir_cli.cli_error import CliError

    handler: Callable[[argparse.Namespace], Coroutine[Any, Any, int]] = args.handler
    try:
        return asyncio.run(handler(args))
    except CliError as error:
        _say_error(args, f"weir: {error}", error.status)
        return error.status
    except WeirError as error:
        _say_error(args, f"weir: {_describe(error, args)}", 1, error.result_code.value, error.retryable)
        return 1
    except KeyboardInterrupt:
        return 0  # Ctrl-C ends `sub`, `read --follow`, `changes --follow`: what the user asked for


def _say_error(
    args: argparse.Namespace, line: str, status: int, result_code: str | None = None, retryable: bool | None = None
) -> None:
    """The command's one error line on stderr; with --json a JSON object ({"error", "status", and a
    server's "result_code" and "retryable"})."""
    if not args.json:
        print(line, file=sys.stderr)
        return
    error: dict[str, object] = {"error": line.removeprefix("weir: "), "status": status}
    if result_code is not None:
        error |= {"result_code": result_code, "retryable": retryable}
    print(json.dumps(error), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments == ["--version"] and "_ARGCOMPLETE" not in os.environ:
        print(f"weir {version()}")  # at once: no parser, no SDK, no gRPC
        return 0
    import argcomplete
    from argcomplete.shell_integration import shellcode

    from weir_cli.parser import Parser, build_parser
    from weir_cli.tree import GLOBAL_DEFAULTS

    Parser.json_errors = "--json" in arguments
    parser = build_parser(version())
    # Only when the shell asks for completions (TAB): answers and exits. Flags show once '-' is typed.
    argcomplete.autocomplete(parser, always_complete_options=False)
    bench = bench_arguments(arguments)
    if bench is not None:
        return _bench(bench)
    args = parser.parse_args(arguments)
    for name, default in GLOBAL_DEFAULTS.items():
        if not hasattr(args, name):
            setattr(args, name, default)
    if args.command == "completion":
        print(shellcode(["weir"], shell=args.shell), end="")
        return 0
    try:
        status = _run(args)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # The reader went away (`weir read s | head`): stop quietly, as other Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
