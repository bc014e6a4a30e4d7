"""`weir deployments|subscriptions|invoke|invocations|awakeables ...`: the invoker's operator API
(weir.invoker.InvokerClient on weir.v1.Invoker, proto/weir/v1/invoker.proto).

The invoker is `--invoker HOST:PORT` (before or after the verb), else `$WEIR_INVOKER`, else the
local cluster's first invoker (`weir cluster up`, found as the routers are), else 127.0.0.1:7720.
Its channel is secured as the routers' are: --tls-ca/--tls-cert/--tls-key and --token-file, else the
WEIR_TLS_* variables, else (an invoker found in the local cluster) the cluster's own, else plaintext.

Values a handler takes and returns are JSON with the Restate SDKs' default serde: `--data` and an
awakeable's VALUE are sent as given when they are JSON ('"o1"', '{"id": 1}', '42'); other text is sent
as a JSON string, with a note on stderr; a malformed JSON object, array or string is a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from weir.discovery import read_cluster_state

if TYPE_CHECKING:
    from weir.invoker import InvokerClient
    from weir.v1 import invoker_pb2

from weir_cli.cli_error import CliError
from weir_cli.completers import attach, stream_names
from weir_cli.output import emit, proto_dict, show_payload, table, text_or_size, timestamp
from weir_cli.target import Routers, _reason, cluster_dir, configure_tls, timeout_s, with_progress

if TYPE_CHECKING:
    from weir_cli.tree import Commands, Tree

INVOKER_VARIABLE = "WEIR_INVOKER"
INVOKER_HINT = (
    "start one with 'weir cluster up' or 'python -m weir_invoker', or pass --invoker HOST:PORT (or set WEIR_INVOKER)"
)
MAX_LIST_LIMIT = 10_000  # ListInvocationsRequest.limit's bound
MAX_DATA_FILE_BYTES = 64 * 1024 * 1024  # a data file larger than this is refused before it is read
COMPLETION_TIMEOUT_S = 1.5
TARGET = "SERVICE/HANDLER"
TARGET_HELP = "the handler, e.g. Greeter/greet"
AWAKEABLE_HELP = "the awakeable's id, as the handler got it (prom_1...)"
_JSON_OPENERS = ("{", "[", '"')  # text starting so is meant as JSON: malformed, it is refused


# -- arguments (argparse types and conversions; pure) ------------------------------------------------


def address(text: str) -> str:
    """HOST:PORT (argparse type)."""
    host, colon, port = text.strip().rpartition(":")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (port 1-65535), got {text!r}")
    return text.strip()


def service_handler(text: str) -> tuple[str, str]:
    """SERVICE/HANDLER as (service, handler) (argparse type)."""
    parts = text.split("/")
    if len(parts) == 3 and all(parts):
        raise argparse.ArgumentTypeError(
            f"expected SERVICE/HANDLER, got {text!r}: give the key with --key ({parts[0]}/{parts[2]} --key {parts[1]})"
        )
    if len(parts) != 2 or not all(part.strip() for part in parts) or any(part != part.strip() for part in parts):
        raise argparse.ArgumentTypeError(f"expected SERVICE/HANDLER such as Greeter/greet, got {text!r}")
    return parts[0], parts[1]


def status_choice(text: str) -> str:
    """A status name as written ("Backing-Off" -> "backing_off"); argparse then checks the choice."""
    return text.strip().lower().replace("-", "_").removeprefix("invocation_status_")


def list_limit(text: str) -> int:
    """0..MAX_LIST_LIMIT (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if not 0 <= value <= MAX_LIST_LIMIT:
        raise argparse.ArgumentTypeError(f"must be 0..{MAX_LIST_LIMIT}, got {value}")
    return value


def json_value(text: str, what: str) -> tuple[bytes, str | None]:
    """The bytes a handler gets for `text` and the note to print: JSON as given (no note); "" as no
    bytes; other text as a JSON string, with a note. Errors: CliError (status 2) for text starting
    with { [ or " that is not JSON."""
    if text == "":
        return b"", None
    try:
        json.loads(text)
    except ValueError as error:
        if text.lstrip().startswith(_JSON_OPENERS):
            raise CliError(f"{what}: {text!r} is not valid JSON ({error})", status=2) from None
        encoded = json.dumps(text, ensure_ascii=False)
        return encoded.encode(), f"{what}: {text!r} is not JSON; sent as the JSON string {encoded}"
    return text.encode(), None


def _json_argument(text: str | None, what: str) -> bytes:
    """`json_value` with its note printed on stderr (None = no bytes)."""
    if text is None:
        return b""
    value, note = json_value(text, what)
    if note:
        print(f"weir: note: {note}", file=sys.stderr)
    return value


def _data_file(name: str) -> bytes:
    """A data file's bytes as they are ('-' = standard input). Errors: CliError (status 2)."""
    if name == "-":
        data = sys.stdin.buffer.read(MAX_DATA_FILE_BYTES + 1)
        if len(data) > MAX_DATA_FILE_BYTES:
            raise CliError(f"--data-file: standard input holds more than {MAX_DATA_FILE_BYTES} bytes", status=2)
        return data
    path = Path(name)
    if not path.is_file():
        raise CliError(f"--data-file: {path} is not a readable file", status=2)
    if path.stat().st_size > MAX_DATA_FILE_BYTES:
        raise CliError(f"--data-file: {path} is larger than {MAX_DATA_FILE_BYTES} bytes", status=2)
    return path.read_bytes()


# -- the invoker -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InvokerTarget:
    address: str
    found_from: str  # for messages: "--invoker", "$WEIR_INVOKER", "the local cluster under X", "the default"
    data_dir: Path | None = None  # the local cluster it was found in


def find_invoker(args: Any) -> InvokerTarget:
    """The invoker a command talks to: --invoker, else $WEIR_INVOKER, else the first invoker of the
    local cluster (cluster.json under --data-dir, $WEIR_CLUSTER_DIR, ./weir-cluster or the last one
    started), else 127.0.0.1:7720. Errors: CliError (status 2) for a $WEIR_INVOKER that is not HOST:PORT."""
    from weir.options import DEFAULT_INVOKER_ADDRESS as DEFAULT_ADDRESS

    given = getattr(args, "invoker", None)
    if given:
        return InvokerTarget(given, "--invoker")
    variable = os.environ.get(INVOKER_VARIABLE, "").strip()
    if variable:
        try:
            return InvokerTarget(address(variable), f"${INVOKER_VARIABLE}")
        except argparse.ArgumentTypeError as error:
            raise CliError(f"${INVOKER_VARIABLE}: {error}", status=2) from None
    data_dir = cluster_dir(args, running=True)
    local = _local_invoker(data_dir)
    if local:
        return InvokerTarget(local, f"the local cluster under {data_dir}", data_dir)
    return InvokerTarget(DEFAULT_ADDRESS, "the default")


def _local_invoker(data_dir: Path) -> str | None:
    """The address of the first invoker the local cluster under `data_dir` recorded (None: none)."""
    try:
        state = read_cluster_state(data_dir) or {}
    except (OSError, ValueError):
        return None
    invokers = state.get("invokers")
    first = invokers[0] if isinstance(invokers, list) and invokers else None
    return str(first["address"]) if isinstance(first, dict) and first.get("address") else None


def _hint(target: InvokerTarget) -> str:
    if target.data_dir is not None:
        return f"has it stopped? 'weir cluster status' lists its processes (logs: {target.data_dir}/*.log)"
    return INVOKER_HINT


@contextlib.asynccontextmanager
async def invoker_client(args: Any) -> AsyncIterator[InvokerClient]:
    """An InvokerClient on the invoker (calls bounded by --timeout), its channel secured as
    `configure_tls` says (with the local cluster's own security when it was found there); an
    unreachable invoker is a CliError that says where its address came from."""
    from weir.errors import UnavailableError
    from weir.invoker import InvokerClient

    target = find_invoker(args)
    local = None if target.data_dir is None else Routers([], target.found_from, target.data_dir)
    configure_tls(args, local)
    client = InvokerClient(target.address, timeout_s=timeout_s(args))
    try:
        yield client
    except UnavailableError as error:
        raise CliError(
            f"the invoker at {target.address} (from {target.found_from}) did not answer "
            f"({_reason(error.message)}): {_hint(target)}"
        ) from None
    finally:
        await client.close()


async def _ask(args: argparse.Namespace, call: Callable[[InvokerClient], Awaitable[Any]]) -> Any:
    """`call`'s answer, saying on stderr what is awaited past a second (on a terminal, or with -v)."""
    async with invoker_client(args) as invoker:
        return await with_progress(call(invoker), f"the invoker at {invoker.address}", args.verbose)


# -- what is printed ---------------------------------------------------------------------------------


def _bytes_fields(value: dict[str, Any], name: str, data: bytes) -> None:
    """`name` as text when UTF-8, else `name`_base64 (as output.message_dict does for payloads)."""
    value.pop(name, None)
    try:
        value[name] = data.decode("utf-8")
    except UnicodeDecodeError:
        value[f"{name}_base64"] = base64.b64encode(data).decode()


def invocation_dict(invocation: invoker_pb2.Invocation) -> dict[str, Any]:
    """An invocation for --json: status by name ("suspended"), input and output as text when UTF-8."""
    from weir.invoker import status_name

    value = proto_dict(invocation) | {"status": status_name(invocation.status)}
    _bytes_fields(value, "input", invocation.input)
    if invocation.HasField("output"):
        _bytes_fields(value, "output", invocation.output)
    return value


def journal_dict(entry: invoker_pb2.JournalEntry) -> dict[str, Any]:
    value = proto_dict(entry)
    value["message_base64"] = value.pop("message")
    return value


def _target(invocation: invoker_pb2.Invocation) -> str:
    return f"{invocation.service}/{invocation.handler}"


def _failure(failure: invoker_pb2.InvocationFailure) -> str:
    return f"{failure.code} {failure.message}"


def failure_line(text: str) -> str:
    """The line of an attempt's error that says what failed: its last (an SDK's traceback ends
    with the exception), with a parenthesised remark on a line of its own joined to it."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[-1].startswith("("):
        return f"{lines[-2]} {lines[-1]}"
    return lines[-1] if lines else ""


def _source(invocation: invoker_pb2.Invocation) -> str:
    if invocation.subscription_id:
        subject = f", subject {invocation.source_subject}" if invocation.source_subject else ""
        where = f"{invocation.source_stream}[{invocation.source_partition}] #{invocation.source_seq}{subject}"
        return f"subscription {invocation.subscription_id} ({where})"
    if invocation.parent_id:
        how = f"entry {invocation.parent_entry_index}" if invocation.parent_awaits else "one-way"
        return f"a call from {invocation.parent_id} ({how})"
    return "an Invoke call"


def invocation_lines(invocation: invoker_pb2.Invocation) -> list[str]:
    """An invocation's record for a person, a few lines."""
    from weir.invoker import status_name
    from weir.v1 import invoker_pb2

    key = f" key {invocation.key}" if invocation.key else ""
    origin = f"from {_source(invocation)}"
    if invocation.deployment_id:
        origin += f", deployment {invocation.deployment_id}"
    lines = [
        f"invocation {invocation.id}: {_target(invocation)}{key}, {status_name(invocation.status)} "
        f"({invocation.attempts} attempt{'s' if invocation.attempts != 1 else ''})",
        origin,
        f"created {timestamp(invocation.created_at_ms)}, modified {timestamp(invocation.modified_at_ms)}",
    ]
    if invocation.not_before_ms:
        lines.append(f"starts at {timestamp(invocation.not_before_ms)}")
    if invocation.waiting_on_entries or invocation.wake_up_at_ms:
        waiting = ", ".join(str(index) for index in invocation.waiting_on_entries) or "-"
        lines.append(f"waiting on entries {waiting}; wake-up {timestamp(invocation.wake_up_at_ms)}")
    if invocation.last_failure:
        retrying = invocation.status == invoker_pb2.INVOCATION_STATUS_BACKING_OFF and invocation.next_retry_at_ms
        title = f"last failure (next retry {timestamp(invocation.next_retry_at_ms)})" if retrying else "last failure"
        failure = invocation.last_failure.rstrip().splitlines()
        if len(failure) == 1:
            lines.append(f"{title}: {failure[0]}")
        else:  # an SDK's traceback: as it is, indented
            lines += [f"{title}:", *(f"  {line}".rstrip() for line in failure)]
    if invocation.input:
        lines.append(f"input: {show_payload(invocation.input)}")
    if invocation.HasField("output"):
        lines.append(f"output: {show_payload(invocation.output)}")
    elif invocation.HasField("failure"):
        lines.append(f"failure: {_failure(invocation.failure)}")
    return lines


def journal_table(journal: list[invoker_pb2.JournalEntry]) -> str:
    rows = [(e.index, e.type_name, e.name or "-", "yes" if e.completed else "", e.summary) for e in journal]
    return table(["INDEX", "TYPE", "NAME", "COMPLETED", "SUMMARY"], rows)


def _handlers(service: invoker_pb2.DeployedService) -> str:
    tags = {"SHARED": " (shared)", "WORKFLOW": " (workflow)"}
    return ", ".join(handler.name + tags.get(handler.kind, "") for handler in service.handlers)


def _protocol(deployment: invoker_pb2.Deployment) -> str:
    low, high = deployment.min_protocol_version, deployment.max_protocol_version
    return f"{deployment.protocol_mode} v{low}" + (f"-{high}" if high != low else "")


def _or_dash(text: str) -> str:
    return text or "-"


# -- commands ----------------------------------------------------------------------------------------


async def deployment_register(args: argparse.Namespace) -> int:
    deployment: invoker_pb2.Deployment = await _ask(args, lambda invoker: invoker.register_deployment(args.url))
    server = f"; {deployment.server}" if deployment.server else ""
    lines = [f"registered {deployment.id} at {deployment.url} ({_protocol(deployment)}{server})"]
    rows = [(service.name, service.kind, _handlers(service)) for service in deployment.services]
    lines.append(table(["SERVICE", "KIND", "HANDLERS"], rows))
    emit(deployment, args.json, "\n".join(lines))
    return 0


async def deployment_list(args: argparse.Namespace) -> int:
    deployments: list[invoker_pb2.Deployment] = await _ask(args, lambda invoker: invoker.list_deployments())
    if args.json:
        for deployment in deployments:
            emit(deployment, True)
        return 0
    rows = [
        (
            item.id,
            item.url,
            ", ".join(service.name for service in item.services) or "-",
            _protocol(item),
            timestamp(item.registered_at_ms),
        )
        for item in deployments
    ]
    print(table(["ID", "URL", "SERVICES", "PROTOCOL", "REGISTERED"], rows))
    return 0


async def deployment_remove(args: argparse.Namespace) -> int:
    await _ask(args, lambda invoker: invoker.remove_deployment(args.id))
    emit({"id": args.id, "removed": True}, args.json, f"removed deployment {args.id}")
    return 0


async def subscription_create(args: argparse.Namespace) -> int:
    service, handler = args.target
    item: invoker_pb2.Subscription = await _ask(
        args,
        lambda invoker: invoker.create_subscription(
            args.stream,
            service,
            handler,
            id=args.id,
            consumer=args.consumer,
            filter_subject=args.filter_subject,
            dead_letter_stream=args.dead_letter_stream,
            reply_stream=args.reply_stream,
            start=args.start,
        ),
    )
    where = item.stream + (f" ({item.filter_subject})" if item.filter_subject else "")
    human = f"subscription {item.id}: {where} -> {item.service}/{item.handler}, consumer {item.consumer}"
    human += f", from {item.start or 'earliest'}"
    if item.dead_letter_stream:
        human += f"; dead letters to {item.dead_letter_stream}"
    if item.reply_stream:
        human += f"; outputs to {item.reply_stream}"
    emit(item, args.json, human)
    return 0


async def subscription_list(args: argparse.Namespace) -> int:
    subscriptions: list[invoker_pb2.Subscription] = await _ask(args, lambda invoker: invoker.list_subscriptions())
    if args.json:
        for subscription in subscriptions:
            emit(subscription, True)
        return 0
    rows = [
        (
            item.id,
            item.stream,
            _or_dash(item.filter_subject),
            f"{item.service}/{item.handler}",
            item.consumer,
            _or_dash(item.dead_letter_stream),
            _or_dash(item.reply_stream),
            item.start or "earliest",
        )
        for item in subscriptions
    ]
    headers = ["ID", "STREAM", "FILTER", "HANDLER", "CONSUMER", "DEAD LETTERS", "REPLIES", "START"]
    print(table(headers, rows))
    return 0


async def subscription_delete(args: argparse.Namespace) -> int:
    await _ask(args, lambda invoker: invoker.delete_subscription(args.id))
    emit({"id": args.id, "deleted": True}, args.json, f"deleted subscription {args.id}")
    return 0


def _invoke_input(args: argparse.Namespace) -> bytes:
    if args.data_file is not None:
        return _data_file(args.data_file)
    return _json_argument(args.data, "--data")


async def invoke(args: argparse.Namespace) -> int:
    from weir.invoker import status_name

    service, handler = args.target
    data = _invoke_input(args)
    async with invoker_client(args) as invoker:
        invocation = await with_progress(
            invoker.invoke(service, handler, data, key=args.key, idempotency_key=args.idempotency_key),
            f"the invoker at {invoker.address}",
            args.verbose,
        )
        if not args.wait:
            emit(invocation_dict(invocation), args.json, f"{invocation.id}  {status_name(invocation.status)}")
            return 0
        if not args.json:
            print(f"{invocation.id}  {status_name(invocation.status)}", flush=True)
        invocation = await invoker.wait_for_invocation(invocation.id, on_change=_status_note(args, invocation))
    return _finished(args, invocation)


def _status_note(args: argparse.Namespace, first: invoker_pb2.Invocation) -> Callable[[invoker_pb2.Invocation], None]:
    """What --wait says on stderr (on a terminal, or with -v) each time the status changes before the end."""
    from weir.invoker import is_finished, status_name
    from weir.v1 import invoker_pb2

    last = [first.status]
    show = bool(args.verbose or sys.stderr.isatty())

    def note(invocation: invoker_pb2.Invocation) -> None:
        if invocation.status == last[0] or is_finished(invocation):
            return
        last[0] = invocation.status
        detail = ""
        if invocation.waiting_on_entries:
            detail = f" (waiting on entries {', '.join(str(index) for index in invocation.waiting_on_entries)})"
        elif invocation.status == invoker_pb2.INVOCATION_STATUS_BACKING_OFF and invocation.last_failure:
            detail = f" (attempt {invocation.attempts}: {failure_line(invocation.last_failure)})"
        if show:
            print(f"weir: {invocation.id} is {status_name(invocation.status)}{detail}", file=sys.stderr, flush=True)

    return note


def _finished(args: argparse.Namespace, invocation: invoker_pb2.Invocation) -> int:
    """Print a finished invocation's output; a failure or a cancellation is a CliError (exit 1)."""
    from weir.v1 import invoker_pb2

    if args.json:
        emit(invocation_dict(invocation), True)
    elif invocation.output:  # a handler that returns nothing has empty output
        print(text_or_size(invocation.output))
    if invocation.status == invoker_pb2.INVOCATION_STATUS_COMPLETED:
        return 0
    verb = "was cancelled" if invocation.status == invoker_pb2.INVOCATION_STATUS_CANCELLED else "failed"
    raise CliError(f"invocation {invocation.id} {verb}: {_failure(invocation.failure)}")


async def invocation_list(args: argparse.Namespace) -> int:
    from weir.invoker import status_name

    invocations, truncated = await _ask(
        args, lambda invoker: invoker.list_invocations(status=args.status, service=args.service, limit=args.limit)
    )
    if args.json:
        for invocation in invocations:
            emit(invocation_dict(invocation), True)
    else:
        rows = [
            (
                item.id,
                _target(item),
                _or_dash(item.key),
                status_name(item.status),
                item.attempts,
                timestamp(item.modified_at_ms),
            )
            for item in invocations
        ]
        print(table(["ID", "HANDLER", "KEY", "STATUS", "ATTEMPTS", "MODIFIED"], rows))
    if truncated:
        print(f"(only the first {len(invocations)} are listed: --limit raises it)", file=sys.stderr)
    return 0


async def invocation_show(args: argparse.Namespace) -> int:
    from weir.invoker import is_finished

    invocation, journal = await _ask(args, lambda invoker: invoker.get_invocation(args.id))
    if args.json:
        emit({"invocation": invocation_dict(invocation), "journal": [journal_dict(entry) for entry in journal]}, True)
        return 0
    lines = invocation_lines(invocation)
    if journal:
        lines += ["", journal_table(journal)]
    else:
        lines.append("journal: deleted when it finished" if is_finished(invocation) else "journal: empty")
    print("\n".join(lines))
    return 0


async def invocation_cancel(args: argparse.Namespace) -> int:
    from weir.invoker import status_name
    from weir.v1 import invoker_pb2

    invocation = await _ask(args, lambda invoker: invoker.cancel_invocation(args.id))
    human = f"cancelled {invocation.id}"
    if invocation.status != invoker_pb2.INVOCATION_STATUS_CANCELLED:  # its handler gets a TerminalError
        human = (
            f"cancelling {invocation.id} ({status_name(invocation.status)}; its handler gets 409 cancelled"
            " where it awaits and may compensate before it ends)"
        )
    emit(invocation_dict(invocation), args.json, human)
    return 0


async def awakeable_resolve(args: argparse.Namespace) -> int:
    value = _json_argument(args.value, "VALUE")
    await _ask(args, lambda invoker: invoker.resolve_awakeable(args.id, value))
    emit({"id": args.id, "resolved": True}, args.json, f"resolved {args.id}")
    return 0


async def awakeable_reject(args: argparse.Namespace) -> int:
    await _ask(args, lambda invoker: invoker.reject_awakeable(args.id, args.message, args.code))
    emit({"id": args.id, "rejected": True}, args.json, f"rejected {args.id} ({args.code} {args.message})")
    return 0


# -- completion (argcomplete): asked of the invoker with a short timeout; any failure completes nothing


def _complete(parsed_args: argparse.Namespace, call: Callable[[InvokerClient], Awaitable[list[str]]]) -> list[str]:
    from weir_cli.tree import GLOBAL_DEFAULTS

    args = argparse.Namespace(**{**GLOBAL_DEFAULTS, **vars(parsed_args)})
    args.timeout = min(args.timeout or COMPLETION_TIMEOUT_S, COMPLETION_TIMEOUT_S)

    async def run() -> list[str]:
        async with invoker_client(args) as invoker:
            return await call(invoker)

    with contextlib.suppress(Exception):
        return asyncio.run(asyncio.wait_for(run(), COMPLETION_TIMEOUT_S))
    return []


def deployment_ids(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    async def ids(invoker: InvokerClient) -> list[str]:
        return [deployment.id for deployment in await invoker.list_deployments()]

    return [name for name in _complete(parsed_args, ids) if name.startswith(prefix)]


def subscription_ids(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    async def ids(invoker: InvokerClient) -> list[str]:
        return [subscription.id for subscription in await invoker.list_subscriptions()]

    return [name for name in _complete(parsed_args, ids) if name.startswith(prefix)]


def invocation_ids(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    async def ids(invoker: InvokerClient) -> list[str]:
        return [invocation.id for invocation in (await invoker.list_invocations())[0]]

    return [name for name in _complete(parsed_args, ids) if name.startswith(prefix)]


def handler_targets(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    """SERVICE/HANDLER of every handler the registered deployments serve."""

    async def targets(invoker: InvokerClient) -> list[str]:
        deployments = await invoker.list_deployments()
        return [f"{s.name}/{h.name}" for d in deployments for s in d.services for h in s.handlers]

    return [name for name in _complete(parsed_args, targets) if name.startswith(prefix)]


def service_names(prefix: str, parsed_args: argparse.Namespace, **_: Any) -> list[str]:
    async def names(invoker: InvokerClient) -> list[str]:
        return [service.name for deployment in await invoker.list_deployments() for service in deployment.services]

    return [name for name in _complete(parsed_args, names) if name.startswith(prefix)]


# -- the command tree --------------------------------------------------------------------------------


def add_invoker_option(parser: argparse.ArgumentParser) -> None:
    """--invoker, on the root parser and every invoker command (SUPPRESS: a later position does not
    reset an earlier one)."""
    from weir.options import DEFAULT_INVOKER_ADDRESS as DEFAULT_ADDRESS

    parser.add_argument(
        "--invoker",
        type=address,
        default=argparse.SUPPRESS,
        metavar="HOST:PORT",
        help=f"the invoker (default: ${INVOKER_VARIABLE}, else the local cluster's, else {DEFAULT_ADDRESS})",
    )


def _command(
    tree: Tree,
    parent: Commands,
    name: str,
    help_text: str,
    handler: Callable[[argparse.Namespace], Coroutine[Any, Any, int]],
) -> argparse.ArgumentParser:
    parser = tree.command(parent, name, help_text, handler)
    add_invoker_option(parser)
    return parser


def add_commands(tree: Tree, commands: Commands, *, positive_int: Any, non_negative_int: Any) -> None:
    _deployment_commands(tree, commands)
    _subscription_commands(tree, commands)
    _invocation_commands(tree, commands)
    _awakeable_commands(tree, commands, positive_int)


def _deployment_commands(tree: Tree, commands: Commands) -> None:
    group = tree.group(commands, "deployments", "handler deployments the invoker calls (Restate SDK endpoints)")
    register = _command(
        tree, group, "register", "discover a deployment's handlers and register it", deployment_register
    )
    register.add_argument("url", help="http(s)://HOST:PORT[/PATH], answering GET /discover")
    _command(tree, group, "ls", "the registered deployments", deployment_list)
    remove = _command(tree, group, "rm", "unregister a deployment", deployment_remove)
    attach(remove.add_argument("id", help="the deployment's id (dp_...)"), deployment_ids)


def _subscription_commands(tree: Tree, commands: Commands) -> None:
    group = tree.group(commands, "subscriptions", "bindings of a stream's messages to a handler")
    create = _command(tree, group, "create", "invoke a handler for every message of a stream", subscription_create)
    attach(create.add_argument("stream", help="the stream"), stream_names)
    attach(create.add_argument("target", metavar=TARGET, type=service_handler, help=TARGET_HELP), handler_targets)
    create.add_argument("--id", default="", help="1..64 of A-Z a-z 0-9 - _ (default: STREAM-SERVICE-HANDLER)")
    create.add_argument("--consumer", default="", metavar="GROUP", help="the consumer group (default: the id)")
    create.add_argument(
        "--filter-subject", default="", metavar="PATTERN", help="only messages whose subject matches this pattern"
    )
    dead_letters = create.add_argument(
        "--dead-letter-stream", default="", metavar="STREAM", help="where terminally failed messages go"
    )
    attach(dead_letters, stream_names)
    attach(
        create.add_argument("--reply-stream", default="", metavar="STREAM", help="where each output is published"),
        stream_names,
    )
    create.add_argument("--start", choices=["earliest", "latest"], default="earliest", help="where a new group starts")
    _command(tree, group, "ls", "the subscriptions", subscription_list)
    delete = _command(tree, group, "rm", "stop a subscription (its group keeps its position)", subscription_delete)
    attach(delete.add_argument("id", help="the subscription's id"), subscription_ids)


def _invocation_commands(tree: Tree, commands: Commands) -> None:
    from typing import get_args

    from weir.options import InvocationStatusName

    statuses = get_args(InvocationStatusName)
    call = _command(tree, commands, "invoke", "start an invocation; print its id and status", invoke)
    attach(call.add_argument("target", metavar=TARGET, type=service_handler, help=TARGET_HELP), handler_targets)
    call.add_argument("--key", default="", help="the virtual object's or workflow's key")
    data = call.add_mutually_exclusive_group()
    data.add_argument("--data", metavar="JSON", help="the input: JSON, or text sent as a JSON string")
    data.add_argument("--data-file", metavar="PATH", help="the input as is, from a file ('-' = standard input)")
    call.add_argument("--idempotency-key", default="", metavar="KEY", help="the same key returns the same invocation")
    call.add_argument(
        "--wait", action="store_true", help="wait until it finishes, print its output (exit 1 if it fails)"
    )

    group = tree.group(commands, "invocations", "invocations: list, show with their journal, cancel")
    listing = _command(tree, group, "ls", "invocations, newest first", invocation_list)
    listing.add_argument(
        "--status",
        type=status_choice,
        choices=list(statuses),
        metavar="STATUS",
        help=f"only those in this status: {', '.join(statuses)}",
    )
    attach(listing.add_argument("--service", default="", help="only this service's"), service_names)
    listing.add_argument(
        "--limit",
        type=list_limit,
        default=0,
        metavar="N",
        help=f"at most this many (0 = 1000; at most {MAX_LIST_LIMIT})",
    )
    for name, help_text, handler in (
        ("show", "an invocation's record and journal", invocation_show),
        ("cancel", "cancel an invocation that has not finished", invocation_cancel),
    ):
        command = _command(tree, group, name, help_text, handler)
        attach(command.add_argument("id", help="the invocation's id (inv_...)"), invocation_ids)


def _awakeable_commands(tree: Tree, commands: Commands, positive_int: Any) -> None:
    from weir.options import DEFAULT_FAILURE_CODE

    group = tree.group(commands, "awakeables", "complete a handler's awakeable (ctx.awakeable())")
    resolve = _command(tree, group, "resolve", "complete an awakeable with a value", awakeable_resolve)
    resolve.add_argument("id", help=AWAKEABLE_HELP)
    resolve.add_argument(
        "value", nargs="?", metavar="VALUE_JSON", help="the value: JSON, or text sent as a JSON string (default: none)"
    )
    reject = _command(tree, group, "reject", "complete an awakeable with a failure", awakeable_reject)
    reject.add_argument("id", help=AWAKEABLE_HELP)
    reject.add_argument("message", help="the failure's message")
    reject.add_argument(
        "--code",
        type=positive_int,
        default=DEFAULT_FAILURE_CODE,
        help="the failure's code, an HTTP status (default 500)",
    )
