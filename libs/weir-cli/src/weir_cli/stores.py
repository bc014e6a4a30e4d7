"""`weir hash ...`, `weir set ...` and `weir queue ...`: the hash, set and queue stores
(weir.collections over the cluster's routers and primaries)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from weir.collections import Collections
    from weir.v1 import collections_pb2 as pb

from weir_cli.cli_error import CliError
from weir_cli.output import emit, table, text_or_size
from weir_cli.target import cluster_client

if TYPE_CHECKING:
    from weir_cli.tree import Commands, Tree

STORE_HELP = "the store's name (1..64 characters of A-Z a-z 0-9 - _)"


async def _run(args: argparse.Namespace) -> Any:
    from weir.collections import Collections

    async with cluster_client(args) as client:
        return await args.operation(Collections(client), args)


async def command(args: argparse.Namespace) -> int:
    """Every collections command: its `operation` does the call, its `show` prints the answer."""
    result = await _run(args)
    args.show(args, result)
    return 0


def _done(what: str) -> Any:
    return lambda args, result: emit({"ok": True, "result": result}, args.json, what)


def _create_store(args: argparse.Namespace, collections: Collections) -> Any:
    from weir.v1 import collections_pb2 as pb

    fields = {"name": args.name, "max_bytes": args.max_bytes, "ephemeral": args.ephemeral, "replicas": args.replicas}
    if args.kind == "hash":
        return collections.create_hash_store(pb.CreateHashStoreRequest(**fields))
    if args.kind == "set":
        return collections.create_set_store(pb.CreateSetStoreRequest(**fields))
    return collections.create_queue(pb.CreateQueueRequest(max_messages=args.max_messages, **fields))  # queue only


def _delete_store(args: argparse.Namespace, collections: Collections) -> Any:
    deleting = {"hash": collections.delete_hash_store, "set": collections.delete_set_store}
    return deleting.get(args.kind, collections.delete_queue)(args.name)


async def _hash_get(collections: Collections, args: argparse.Namespace) -> bytes:
    message = await collections.hash_get(args.name, args.key, args.field)
    if message is None:
        raise CliError(f"field {args.field!r} of {args.key!r} has no value in hash store {args.name!r}")
    return bytes(message.payload)


async def _queue_pop(collections: Collections, args: argparse.Namespace) -> bytes:
    value = await collections.queue_pop(args.name)
    if value is None:
        raise CliError(f"queue {args.name!r} is empty")
    return value


def _print_value(args: argparse.Namespace, value: bytes) -> None:
    emit({"value": text_or_size(value)}, args.json, text_or_size(value))


def _print_lines(args: argparse.Namespace, lines: list[str]) -> None:
    if args.json:
        emit(lines, True)
    else:
        for line in lines:
            print(line)


def _print_entries(args: argparse.Namespace, entries: list[pb.HashFieldEntry]) -> None:
    rows = [(entry.field, entry.revision, text_or_size(entry.value)) for entry in entries]
    if args.json:
        emit([{"field": field, "revision": revision, "value": value} for field, revision, value in rows], True)
    else:
        print(table(["FIELD", "REVISION", "VALUE"], rows))


def add_commands(tree: Tree, commands: Commands, *, positive_int: Any, non_negative_int: Any) -> None:
    groups: dict[str, Commands] = {}
    for kind, help_text in (
        ("hash", "hash stores: set, get, del, getall, len (fields of a key)"),
        ("set", "set stores: add, rm, ismember, members, len (members of a key)"),
        ("queue", "queues: push, pop, range, len"),
    ):
        group = groups[kind] = tree.group(commands, kind, help_text)
        create = tree.command(group, "create", f"create a {kind} store (idempotent for the same settings)", command)
        create.add_argument("name", help=STORE_HELP)
        create.add_argument("--max-bytes", type=non_negative_int, default=0, help="size bound (0 = none)")
        create.add_argument("--replicas", type=positive_int, default=1, help="copies on distinct nodes")
        create.add_argument("--ephemeral", action="store_true", help="in memory only")
        if kind == "queue":
            create.add_argument(
                "--max-messages", type=non_negative_int, default=0, help="most elements kept (0 = no bound)"
            )
        create.set_defaults(kind=kind, operation=lambda c, a: _create_store(a, c), show=_done(f"created {kind} store"))
        remove = tree.command(group, "rm-store", f"delete a {kind} store and everything in it", command)
        remove.add_argument("name", help=STORE_HELP)
        remove.set_defaults(kind=kind, operation=lambda c, a: _delete_store(a, c), show=_done(f"deleted {kind} store"))
    _hash_commands(tree, groups["hash"])
    _set_commands(tree, groups["set"])
    _queue_commands(tree, groups["queue"], non_negative_int)


def _subcommand(tree: Tree, parent: Commands, name: str, help_text: str, arguments: tuple[str, ...]) -> Any:
    parser = tree.command(parent, name, help_text, command)
    parser.add_argument("name", help=STORE_HELP)
    for argument in arguments:
        parser.add_argument(argument, help=f"the {argument}")
    return parser


def _hash_commands(tree: Tree, group: Commands) -> None:
    _subcommand(tree, group, "set", "set a field of a key", ("key", "field", "value")).set_defaults(
        operation=lambda c, a: c.hash_set(a.name, a.key, a.field, a.value.encode()),
        show=lambda a, revision: emit({"revision": revision}, a.json, f"revision {revision}"),
    )
    _subcommand(tree, group, "get", "a field's value", ("key", "field")).set_defaults(
        operation=_hash_get, show=_print_value
    )
    _subcommand(tree, group, "del", "delete a field", ("key", "field")).set_defaults(
        operation=lambda c, a: c.hash_delete(a.name, a.key, a.field), show=_done("deleted")
    )
    _subcommand(tree, group, "getall", "every field of a key with its value", ("key",)).set_defaults(
        operation=lambda c, a: c.hash_get_all(a.name, a.key), show=_print_entries
    )
    _subcommand(tree, group, "len", "how many fields a key has", ("key",)).set_defaults(
        operation=lambda c, a: c.hash_get_all(a.name, a.key),
        show=lambda a, entries: emit({"count": len(entries)}, a.json, str(len(entries))),
    )


def _set_commands(tree: Tree, group: Commands) -> None:
    _subcommand(tree, group, "add", "add a member to a key's set", ("key", "member")).set_defaults(
        operation=lambda c, a: c.set_add(a.name, a.key, a.member), show=_done("added")
    )
    _subcommand(tree, group, "rm", "remove a member", ("key", "member")).set_defaults(
        operation=lambda c, a: c.set_remove(a.name, a.key, a.member), show=_done("removed")
    )
    _subcommand(tree, group, "ismember", "whether it is a member (exit 1 if not)", ("key", "member")).set_defaults(
        operation=lambda c, a: c.set_is_member(a.name, a.key, a.member), show=_print_membership
    )
    _subcommand(tree, group, "members", "every member of a key's set, sorted", ("key",)).set_defaults(
        operation=lambda c, a: c.set_members(a.name, a.key), show=_print_lines
    )
    _subcommand(tree, group, "len", "how many members a key's set has", ("key",)).set_defaults(
        operation=lambda c, a: c.set_members(a.name, a.key),
        show=lambda a, members: emit({"count": len(members)}, a.json, str(len(members))),
    )


def _print_membership(args: argparse.Namespace, member: bool) -> None:
    if not member:
        raise CliError(f"{args.member!r} is not a member of {args.key!r}")
    emit({"is_member": True}, args.json, "yes")


def _queue_commands(tree: Tree, group: Commands, non_negative_int: Any) -> None:
    _subcommand(tree, group, "push", "append an element", ("value",)).set_defaults(
        operation=lambda c, a: c.queue_push(a.name, a.value.encode()),
        show=lambda a, sequence: emit({"sequence": sequence}, a.json, f"sequence {sequence}"),
    )
    _subcommand(tree, group, "pop", "take the oldest element (exit 1 when empty)", ()).set_defaults(
        operation=_queue_pop, show=_print_value
    )
    ranged = _subcommand(tree, group, "range", "elements still queued, without taking them", ())
    ranged.add_argument("--from-sequence", type=non_negative_int, default=0, help="start here (0 = the oldest)")
    ranged.add_argument("--limit", type=non_negative_int, default=0, help="at most this many (0 = 100)")
    ranged.set_defaults(
        operation=lambda c, a: c.queue_range(a.name, a.from_sequence, a.limit),
        show=lambda a, values: _print_lines(a, [text_or_size(value) for value in values]),
    )
    _subcommand(tree, group, "len", "how many elements are queued", ()).set_defaults(
        operation=lambda c, a: c.queue_len(a.name), show=lambda a, count: emit({"count": count}, a.json, str(count))
    )
