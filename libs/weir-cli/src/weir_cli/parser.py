"""The `weir` command tree (argparse). Global options (`--json`, `--router`, `--data-dir`,
`--server`, `--timeout`, `-v`) are accepted before or after the verb; every flag has help; numbers
are checked before anything is sent."""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
import re
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn, get_args

from weir.discovery import DEFAULT_CLUSTER_DIR
from weir.options import DeliverPolicy, SourceDropPolicy

from weir_cli import invoker, kv, objects, stores
from weir_cli.completers import attach, consumer_names, stream_names
from weir_cli.target import DEFAULT_TIMEOUT_S
from weir_cli.tree import Commands, Tree

if TYPE_CHECKING:
    from weir.info import StreamSource


class Parser(argparse.ArgumentParser):
    """argparse with mistakes in one line: `weir fetch: --batch: must be 1 or more, got -1 (see
    'weir fetch --help')`, exit status 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # No abbreviated options: each level also sees the words meant for the levels below, so
        # `cluster up --tls` would be an ambiguous --tls-ca/--tls-cert/--tls-key to `weir` and
        # `weir cluster`; a full name is what scripts should write anyway.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    # Set by `weir` when --json is among its arguments: mistakes are then JSON objects on stderr.
    json_errors: ClassVar[bool] = False

    def error(self, message: str) -> NoReturn:
        mistyped = re.fullmatch(r"argument ([^:]+): invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if mistyped:
            argument, given, listed = mistyped.groups()
            choices = re.findall(r"'([^']*)'", listed)
            close = difflib.get_close_matches(given, choices, n=1)
            what = f"unknown command {given!r}" if argument == "COMMAND" else f"{argument}: {given!r} is not a choice"
            message = f"{what}; " + (f"did you mean {close[0]!r}?" if close else f"one of {', '.join(choices)}")
        if Parser.json_errors:
            error = {"error": f"{self.prog}: {message}", "status": 2, "help": f"{self.prog} --help"}
            self.exit(2, json.dumps(error) + "\n")
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """argparse's, but a command (a parser with no subcommands) refuses a flag it does not know
        itself, naming the closest of its own flags and its own help; argparse would leave it to the
        top-level parser, whose error names `weir --help`."""
        parsed, extras = super().parse_known_args(args, namespace)
        is_command = not any(isinstance(action, argparse._SubParsersAction) for action in self._actions)
        unknown = [word for word in extras if word.startswith("-") and word != "-"]
        if is_command and unknown and self.prog != "weir" and "_ARGCOMPLETE" not in os.environ:
            flag = unknown[0].split("=", 1)[0]
            close = difflib.get_close_matches(flag, list(self._option_string_actions), n=1)
            self.error(f"unknown flag {flag!r}" + (f"; did you mean {close[0]!r}?" if close else ""))
        return parsed, extras


Handler = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]


def lazy(module: str, name: str) -> Handler:
    """Command handler `name` of `weir_cli.<module>`, imported when the command runs: `weir --help`,
    completion and every other command do not pay for its imports (the local cluster's launcher
    brings Redis, pydantic and the services' shared code; most commands need only the SDK)."""

    async def run(args: argparse.Namespace) -> int:
        function: Handler = getattr(importlib.import_module(f"weir_cli.{module}"), name)
        return await function(args)

    run.__qualname__ = run.__name__ = f"{module}.{name}"
    return run


def positive_int(text: str) -> int:
    """An integer >= 1 (argparse type)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0 (argparse type)."""
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


SOURCE_KEYS = ("filter", "transform", "start-seq", "backfill", "on-drop", "dlq")


def stream_source_arg(text: str) -> StreamSource:
    """`--source NAME[,filter=PATTERN][,transform=PATTERN->DESTINATION][,start-seq=N][,backfill=N]
    [,on-drop=halt|skip][,dlq=STREAM]` (argparse type): one of a stream's sources."""
    name, *options = text.split(",")
    fields: dict[str, str] = {}
    for option in options:
        key, equals, value = option.partition("=")
        if not equals or key not in SOURCE_KEYS:
            raise argparse.ArgumentTypeError(
                f"{option!r}: give key=value with a key among {', '.join(SOURCE_KEYS)} (e.g. orders,filter=orders.eu.>)"
            )
        fields[key] = value
    transform = None
    if "transform" in fields:
        pattern, arrow, destination = fields["transform"].partition("->")
        if not arrow:
            raise argparse.ArgumentTypeError("transform: give PATTERN->DESTINATION, e.g. orders.*->eu.{{wildcard(1)}}")
        transform = (pattern, destination)
    if fields.get("on-drop", "halt") not in get_args(SourceDropPolicy):
        raise argparse.ArgumentTypeError(f"on-drop: halt or skip, got {fields['on-drop']!r}")
    from weir.client import stream_source  # the SDK (and gRPC) only when a command has a --source

    return stream_source(
        name,
        filter_subject=fields.get("filter", ""),
        transform=transform,
        start_seq=non_negative_int(fields.get("start-seq", "0")),
        max_initial_backfill=non_negative_int(fields.get("backfill", "0")),
        on_drop="skip" if fields.get("on-drop") == "skip" else "halt",
        dlq_stream=fields.get("dlq", ""),
    )


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be in (0, 3600] seconds, got {text}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def _global_options() -> argparse.ArgumentParser:
    """The options every command takes, before or after its verb (SUPPRESS: a later position does
    not reset an earlier one)."""
    options = Parser(add_help=False)
    group = options.add_argument_group("global options")
    hide = argparse.SUPPRESS
    group.add_argument("--json", action="store_true", default=hide, help="machine output: one JSON value per line")
    group.add_argument(
        "--router",
        default=hide,
        metavar="HOST:PORT[,...]",
        help="the cluster's routers (default: $WEIR_ROUTERS, else the local cluster)",
    )
    group.add_argument(
        "--data-dir",
        default=hide,
        metavar="DIR",
        help=f"the local cluster's data directory (default: $WEIR_CLUSTER_DIR, else ./{DEFAULT_CLUSTER_DIR})",
    )
    group.add_argument(
        "--server", default=hide, metavar="HOST:PORT", help="talk to one standalone node instead of a cluster"
    )
    group.add_argument(
        "--tls-ca",
        default=hide,
        metavar="FILE",
        help="TLS: the CA (PEM) the cluster's certificates are checked against (default: $WEIR_TLS_CA_FILE, else "
        "the local cluster's own when it runs with --tls)",
    )
    group.add_argument(
        "--tls-cert", default=hide, metavar="FILE", help="TLS: this client's certificate (PEM; $WEIR_TLS_CERT_FILE)"
    )
    group.add_argument("--tls-key", default=hide, metavar="FILE", help="TLS: its key (PEM; $WEIR_TLS_KEY_FILE)")
    group.add_argument(
        "--token-file",
        default=hide,
        metavar="FILE",
        help="the file holding this client's bearer token, for a cluster with an auth file (default: "
        "$WEIR_TOKEN_FILE, or the token in $WEIR_TOKEN)",
    )
    group.add_argument(
        "--timeout",
        type=positive_seconds,
        default=hide,
        metavar="SECONDS",
        help=f"give up on an unreachable cluster after this many seconds (default {DEFAULT_TIMEOUT_S:g})",
    )
    group.add_argument(
        "--context",
        default=hide,
        metavar="NAME",
        help="use saved context NAME ('weir context ls'; default: $WEIR_CONTEXT, else the selected one)",
    )
    group.add_argument("-v", "--verbose", action="store_true", default=hide, help="say what is being waited for")
    return options


def build_parser(version: str) -> argparse.ArgumentParser:
    options = _global_options()
    parser = Parser(prog="weir", description="The Weir command line.", parents=[options])
    parser.add_argument("--version", action="version", version=f"weir {version}", help="print the version and exit")
    invoker.add_invoker_option(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    tree = Tree(options)
    _local_commands(tree, commands)
    _context_commands(tree, commands)
    _stream_commands(tree, commands)
    _message_commands(tree, commands)
    _consumer_commands(tree, commands)
    kv.add_commands(tree, commands, positive_int=positive_int, non_negative_int=non_negative_int)
    stores.add_commands(tree, commands, positive_int=positive_int, non_negative_int=non_negative_int)
    objects.add_commands(tree, commands, positive_int=positive_int, non_negative_int=non_negative_int)
    invoker.add_commands(tree, commands, positive_int=positive_int, non_negative_int=non_negative_int)
    _name_numbers(parser)
    completion = commands.add_parser(
        "completion",
        help="print a shell completion script: source <(weir completion bash) (stream names complete too)",
    )
    completion.add_argument("shell", choices=["bash", "zsh", "fish"], help="the shell to complete for")
    commands.add_parser(
        "bench",
        help="benchmarks side by side with NATS JetStream and Redis Streams (from a source checkout; "
        "'weir bench --help' lists its flags)",
        add_help=False,
    )
    return parser


def _name_numbers(parser: argparse.ArgumentParser) -> None:
    """`--batch N` rather than `--batch BATCH` in usage and help, for every numeric flag."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _name_numbers(child)
        elif action.type in (positive_int, non_negative_int) and action.metavar is None:
            action.metavar = "N"


def _local_commands(tree: Tree, commands: Commands) -> None:
    demo = tree.command(
        commands,
        "demo",
        "bring up a local cluster, publish and consume a demo workload, stop it",
        lazy("local", "demo"),
    )
    demo.add_argument("--messages", type=positive_int, default=20_000, help="messages to publish and consume")
    demo.add_argument("--payload-bytes", type=positive_int, default=1024, help="bytes per message payload")
    cluster = tree.group(commands, "cluster", "the local cluster as processes")
    _cluster_up_command(tree, cluster)
    token = tree.command(
        cluster,
        "token",
        "make a new bearer token and the token_sha256 an auth file stores for it",
        lazy("local", "new_token"),
    )
    token.add_argument("--user", default="", help="also print the auth file entry of this user name")
    tree.command(
        cluster, "down", "stop every process of the local cluster (data is kept)", lazy("local", "cluster_down")
    )
    tree.command(
        cluster,
        "add-node",
        "start one more partition node in the running local cluster",
        lazy("local", "cluster_add_node"),
    )
    tree.command(cluster, "status", "processes, node liveness, controller, streams", lazy("local", "cluster_status"))
    rebalance = tree.command(
        cluster,
        "rebalance",
        "move partition copies so every node holds its share (plan, then move)",
        lazy("moves", "cluster_rebalance"),
    )
    rebalance.add_argument("--dry-run", action="store_true", help="print the plan; move nothing")
    rebalance.add_argument("--max-moves", type=positive_int, default=100, help="moves planned at most (default 100)")
    _catch_up_flag(rebalance)
    doctor_command = tree.command(
        commands,
        "doctor",
        "each node's scrub: passes, corrupt records, storage checks (exit 1 if any)",
        lazy("doctor", "doctor"),
    )
    doctor_command.add_argument(
        "--scrub", action="store_true", help="start a scrub pass on every node now and wait until each ended"
    )
    stats = tree.command(commands, "stats", "cluster stats: per node, per stream, skew", lazy("local", "stats"))
    stats.add_argument("--nodes-only", action="store_true", help="leave out the per-stream figures")
    stats.add_argument(
        "--analytics", action="store_true", help="only the spark-analytics figures (rates, lags, node skew)"
    )
    changes = tree.command(
        commands, "changes", "print a node's change feed (--server = its internal port)", lazy("local", "changes")
    )
    changes.add_argument(
        "--from-change-seq", type=non_negative_int, default=0, help="first change to print (0 = oldest)"
    )
    changes.add_argument("--max", type=positive_int, default=1000, help="most changes to print (without --follow)")
    changes.add_argument("--follow", action="store_true", help="keep printing new changes until Ctrl-C")


def _context_commands(tree: Tree, commands: Commands) -> None:
    """weir context save|use|ls|show|rm (weir_cli.contexts)."""
    context = tree.group(commands, "context", "saved connection profiles: routers, TLS files, token file")
    save = tree.command(
        context,
        "save",
        "save a context from --router, --tls-ca/cert/key, --token-file",
        lazy("contexts", "context_save"),
    )
    save.add_argument("name", help="its name (A-Z a-z 0-9 _ . -)")
    save.add_argument("--description", default="", help="a line saying what it is")
    save.add_argument("--select", action="store_true", help="also select it (as 'weir context use NAME')")
    use = tree.command(context, "use", "select a context for the commands that follow", lazy("contexts", "context_use"))
    use.add_argument("name", nargs="?", help="the context")
    use.add_argument("--none", action="store_true", help="select none (back to $WEIR_ROUTERS and the local cluster)")
    tree.command(context, "ls", "the saved contexts (* = selected)", lazy("contexts", "context_ls"))
    show = tree.command(context, "show", "a context's settings", lazy("contexts", "context_show"))
    show.add_argument("name", nargs="?", help="the context (default: the selected one)")
    rm = tree.command(context, "rm", "remove a saved context", lazy("contexts", "context_rm"))
    rm.add_argument("name", help="the context")


def _cluster_up_command(tree: Tree, cluster: Commands) -> None:
    up = tree.command(
        cluster,
        "up",
        "start redis-server, routers, nodes, a replicator, a gateway and an invoker; returns once serving",
        lazy("local", "cluster_up"),
    )
    up.add_argument("--nodes", type=positive_int, default=3, help="partition nodes to start")
    up.add_argument("--routers", type=positive_int, default=2, help="routers to start")
    up.add_argument("--replicators", type=non_negative_int, default=1, help="replicators to start")
    up.add_argument("--gateways", type=non_negative_int, default=1, help="protocol gateways (kafka-pixy) to start")
    up.add_argument(
        "--gateway-workers",
        type=positive_int,
        default=1,
        help="processes per gateway sharing its ports (WEIR_GATEWAY_WORKERS; 1 starts fastest)",
    )
    up.add_argument(
        "--invokers",
        type=non_negative_int,
        default=1,
        help="invokers to start (durable handlers: Restate SDK deployments run from streams; one is active, "
        "the others stand by)",
    )
    up.add_argument(
        "--analytics",
        action="store_true",
        help="also start the spark-analytics job (needs Java 17+; takes 15-30 s more); `weir stats` shows its figures",
    )
    up.add_argument(
        "--tls",
        action="store_true",
        help="TLS on every gRPC port and mutual TLS between the services, with a development CA made under "
        "<data-dir>/tls (without it, every process runs with its explicit plaintext setting)",
    )
    up.add_argument(
        "--auth-file",
        metavar="FILE",
        help="JSON file of the users (token hashes) and what each may do on which streams: "
        "the routers and nodes serve only them (implies --tls; see the README's Security section)",
    )
    up.add_argument(
        "--ha",
        action="store_true",
        help="the metadata Redis with two replicas and three Redis Sentinels that fail it over, so it is no "
        "single point of failure (the services reach it through the sentinels; with --tls, all of them over TLS)",
    )


def _catch_up_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--catch-up-timeout-ms",
        type=non_negative_int,
        default=0,
        help="how long the new copy may take to catch up (0 = 10 minutes)",
    )


def _stream_commands(tree: Tree, commands: Commands) -> None:
    stream = tree.group(commands, "stream", "stream admin")
    _stream_create_command(tree, stream)
    update = tree.command(
        stream, "update", "change a stream's limits (lowering one prunes at once)", lazy("streams", "stream_update")
    )
    attach(update.add_argument("name", help="the stream's name"), stream_names)
    update.add_argument("--max-msg-bytes", type=non_negative_int, help="largest message")
    _limit_flags(update)
    for name, help_text, handler in (
        ("info", "a stream's config, totals and partitions", lazy("streams", "stream_info")),
        ("delete", "delete a stream and every message of it", lazy("streams", "stream_delete")),
    ):
        command = tree.command(stream, name, help_text, handler)
        attach(command.add_argument("name", help="the stream's name"), stream_names)
        if name == "delete":
            _force_flag(command)
    tree.command(stream, "list", "the streams' names", lazy("streams", "stream_list"))
    _partition_commands(tree, stream)


def _stream_create_command(tree: Tree, stream: Commands) -> None:
    create = tree.command(stream, "create", "create a stream (placed by the router)", lazy("streams", "stream_create"))
    create.add_argument("name", help="the stream's name")
    create.add_argument("--subjects", nargs="*", help="subject patterns it accepts (default: any subject)")
    create.add_argument("--partitions", type=positive_int, default=1, help="partitions (default 1)")
    create.add_argument("--replicas", type=positive_int, default=1, help="copies on distinct nodes (cluster only)")
    create.add_argument(
        "--min-insync-replicas",
        type=non_negative_int,
        default=0,
        help="copies ack level all waits for (0 = min(2, replicas))",
    )
    create.add_argument(
        "--deliver-up-to-high-watermark", action="store_true", help="deliver only what every in-sync replica holds"
    )
    create.add_argument(
        "--allow-scheduled-messages",
        action="store_true",
        help="accept delayed (pub --delay-ms) and held (pub --hold) messages",
    )
    create.add_argument(
        "--source",
        dest="sources",
        action="append",
        type=stream_source_arg,
        default=[],
        metavar="NAME[,filter=P][,transform=P->D][,start-seq=N][,backfill=N][,on-drop=halt|skip][,dlq=S]",
        help="copy another stream into this one (repeat for more; the stream then has one partition)",
    )
    create.add_argument(
        "--retention", choices=["limits", "work_queue", "interest"], default="limits", help="retention policy"
    )
    create.add_argument("--storage", choices=["file", "memory"], default="file", help="where messages are stored")
    create.add_argument("--max-msg-bytes", type=non_negative_int, default=0, help="largest message (0 = the node's)")
    _limit_flags(create)


def _partition_commands(tree: Tree, stream: Commands) -> None:
    """A partition's copies and contents: move, pin, unpin, purge."""
    move = tree.command(
        stream, "move", "move a partition's copy to another node while it serves", lazy("moves", "stream_move")
    )
    attach(move.add_argument("name", help="the stream's name"), stream_names)
    move.add_argument("--to", dest="to_node", required=True, help="the node that gets the copy (e.g. node-4)")
    move.add_argument("--from", dest="from_node", default="", help="the node that gives it up (default: the primary)")
    move.add_argument("--partition", type=non_negative_int, default=0, help="which partition (default 0)")
    _catch_up_flag(move)
    for name, help_text, handler in (
        ("pin", "keep a partition where it is (no move, no preferred-leader handover)", lazy("moves", "stream_pin")),
        (
            "unpin",
            "let moves and the preferred-leader rebalance touch a partition again",
            lazy("moves", "stream_unpin"),
        ),
    ):
        command = tree.command(stream, name, help_text, handler)
        attach(command.add_argument("name", help="the stream's name"), stream_names)
        command.add_argument("--partition", type=non_negative_int, default=0, help="which partition (default 0)")
    purge = tree.command(
        stream, "purge", "remove a stream's messages (seqs keep counting)", lazy("streams", "stream_purge")
    )
    attach(purge.add_argument("name", help="the stream's name"), stream_names)
    purge.add_argument("--partition", type=non_negative_int, help="only this partition (default: every one)")
    purge.add_argument("--keep-from-seq", type=positive_int, help="remove only the messages below this seq")
    _force_flag(purge)


def _force_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--force", "-f", action="store_true", help="do not ask first (it asks only when run on a terminal)"
    )


def _message_commands(tree: Tree, commands: Commands) -> None:
    """pub and read."""
    pub = tree.command(
        commands, "pub", "publish: DATA (--count times), or one message per line of stdin", lazy("streams", "pub")
    )
    attach(pub.add_argument("stream", help="the stream"), stream_names)
    pub.add_argument("subject", help="the message's subject")
    pub.add_argument("data", nargs="?", help="the payload ('{n}' becomes 1..count); omitted or '-': read stdin")
    pub.add_argument("--count", type=positive_int, default=1, help="publish DATA this many times")
    pub.add_argument("--header", action="append", help="KEY=VALUE (repeatable)")
    pub.add_argument("--key", help="partitioning key (stored with the message)")
    pub.add_argument("--partition", type=non_negative_int, help="this partition instead of the key's")
    pub.add_argument("--ack", choices=["leader", "none", "all"], default="leader", help="acknowledgement level")
    pub.add_argument(
        "--msg-id", help="idempotence key: a repeat within the duplicate window stores nothing (default: generated)"
    )
    pub.add_argument(
        "--delay-ms",
        type=positive_int,
        default=0,
        help="deliver this many milliseconds later (the stream needs --allow-scheduled-messages)",
    )
    pub.add_argument("--hold", action="store_true", help="store held until 'weir scheduled release' (a half message)")
    read = tree.command(commands, "read", "print stored messages of every partition (or one)", lazy("streams", "read"))
    attach(read.add_argument("stream", help="the stream"), stream_names)
    read.add_argument("--partition", type=non_negative_int, help="only this partition (default: every one)")
    read.add_argument("--from-seq", type=non_negative_int, default=0, help="first seq per partition (0 = oldest)")
    read.add_argument(
        "--max", type=positive_int, default=100, help="most stored messages to print (default 100; then --follow)"
    )
    read.add_argument("--follow", action="store_true", help="then print new messages as they arrive, until Ctrl-C")


def _limit_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-age-ms", type=non_negative_int, help="remove messages older than this")
    parser.add_argument("--max-msgs", type=non_negative_int, help="keep at most this many messages per partition")
    parser.add_argument("--max-bytes", type=non_negative_int, help="keep at most this many bytes per partition")
    parser.add_argument("--max-msgs-per-subject", type=non_negative_int, help="keep the newest N per subject")
    parser.add_argument(
        "--duplicate-window-ms", type=non_negative_int, help="how long a msg_id is remembered (0 = 2 minutes)"
    )
    parser.add_argument(
        "--duplicate-window-max-msgs", type=non_negative_int, help="most msg_ids a partition remembers (0 = 100,000)"
    )


def _scheduled_commands(tree: Tree, commands: Commands) -> None:
    group = tree.group(commands, "scheduled", "delayed and held messages (streams with --allow-scheduled-messages)")
    listing = tree.command(
        group, "list", "the messages still to deliver, in seq order", lazy("scheduled", "scheduled_list")
    )
    attach(listing.add_argument("stream", help="the stream"), stream_names)
    listing.add_argument("--partition", type=non_negative_int, help="only this partition (default: every one)")
    listing.add_argument("--held", action="store_true", help="only held messages (not delayed ones)")
    listing.add_argument("--max", type=positive_int, default=100, help="most to print (default 100)")
    release = tree.command(
        group, "release", "deliver one now (or --discard it)", lazy("scheduled", "scheduled_release")
    )
    attach(release.add_argument("stream", help="the stream"), stream_names)
    release.add_argument("partition", type=non_negative_int, help="its partition")
    release.add_argument("seq", type=positive_int, help="its seq (as 'weir pub' or 'scheduled list' showed)")
    release.add_argument("--discard", action="store_true", help="remove it undelivered (a rollback)")


def _consumer_commands(tree: Tree, commands: Commands) -> None:
    consumer = tree.group(commands, "consumer", "durable consumer admin")
    create = tree.command(consumer, "create", "create a durable consumer", lazy("consumers", "consumer_create"))
    attach(create.add_argument("stream", help="the stream"), stream_names)
    create.add_argument("name", help="the consumer's name")
    create.add_argument("--filter-subject", default="", help="deliver only subjects matching this pattern")
    policies = sorted(get_args(DeliverPolicy))
    create.add_argument("--deliver-policy", choices=policies, default="all", help="where it starts")
    create.add_argument("--start-seq", type=non_negative_int, default=0, help="with --deliver-policy by_start_seq")
    create.add_argument("--start-time-ms", type=non_negative_int, default=0, help="with --deliver-policy by_start_time")
    create.add_argument("--ack-wait-ms", type=non_negative_int, default=0, help="redeliver after this (0 = 30000)")
    create.add_argument(
        "--max-deliver", type=non_negative_int, default=0, help="deliveries before dead-lettering (0 = 5)"
    )
    create.add_argument("--dead-letter-subject", default="", help="where messages past max-deliver go")
    create.add_argument("--max-ack-pending", type=non_negative_int, default=0, help="per partition (0 = 1000)")
    create.add_argument("--deliver-group", default="", help="push subscribers sharing the consumer")
    for name, help_text, handler in (
        ("info", "a consumer's position and counts per partition", lazy("consumers", "consumer_info")),
        ("delete", "delete a consumer and its state", lazy("consumers", "consumer_delete")),
    ):
        command = tree.command(consumer, name, help_text, handler)
        attach(command.add_argument("stream", help="the stream"), stream_names)
        attach(command.add_argument("name", help="the consumer's name"), consumer_names)
    listing = tree.command(consumer, "list", "a stream's consumers", lazy("consumers", "consumer_list"))
    attach(listing.add_argument("stream", help="the stream"), stream_names)
    seek = tree.command(
        consumer, "seek", "move a consumer: --seq, --time-ms or --end", lazy("consumers", "consumer_seek")
    )
    reset = tree.command(
        consumer, "reset", "move a consumer back to the first message", lazy("consumers", "consumer_seek")
    )
    for command in (seek, reset):
        attach(command.add_argument("stream", help="the stream"), stream_names)
        attach(command.add_argument("name", help="the consumer's name"), consumer_names)
        command.add_argument("--partition", type=non_negative_int, help="only this partition (default: every one)")
    seek.add_argument("--seq", type=positive_int, help="deliver from this seq on")
    seek.add_argument("--time-ms", type=non_negative_int, help="from the first message stored at or after this time")
    seek.add_argument("--end", action="store_true", help="only messages published from now on")
    reset.set_defaults(seq=None)
    _scheduled_commands(tree, commands)
    _fetch_and_sub_commands(tree, commands)


def _fetch_and_sub_commands(tree: Tree, commands: Commands) -> None:
    fetch = tree.command(
        commands, "fetch", "fetch a batch for a consumer from every partition (or one)", lazy("consumers", "fetch")
    )
    attach(fetch.add_argument("stream", help="the stream"), stream_names)
    attach(fetch.add_argument("consumer", help="the consumer's name"), consumer_names)
    fetch.add_argument("--partition", type=non_negative_int, help="only this partition (default: every one)")
    fetch.add_argument("--batch", type=positive_int, default=10, help="most messages to fetch")
    fetch.add_argument("--wait-ms", type=non_negative_int, default=0, help="wait this long for the first message")
    fetch.add_argument("--ack", action="store_true", help="acknowledge what was fetched")
    sub = tree.command(
        commands,
        "sub",
        "consume as a member of group CONSUMER; print and ack (Ctrl-C leaves)",
        lazy("consumers", "sub"),
    )
    attach(sub.add_argument("stream", help="the stream (it must exist)"), stream_names)
    attach(
        sub.add_argument("consumer", help="the consumer group (its durable consumer is created on first use)"),
        consumer_names,
    )
    sub.add_argument("--stop-when-empty", action="store_true", help="stop after 2 s without a message")
    sub.add_argument(
        "--durable",
        action="store_true",
        help="keep the group's consumer (and its position) after leaving; without it, a consumer this command "
        "created is deleted when the last member leaves",
    )
    sub.add_argument("--deliver-group", default="", help="(--server push subscriptions) the deliver group")
    sub.add_argument("--no-ack", action="store_true", help="print only; messages come back after ack_wait")
