"""`weir kv ...`: key-value buckets (weir.kv over the cluster's routers and primaries): bucket
admin, put / get / del, keys, history and watch. Values are given as an argument, read from a
file (`--file PATH`, `-` = standard input) and printed as text when UTF-8 (else base64 with --json)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

from weir_cli.cli_error import CliError
from weir_cli.output import emit, proto_dict, table, text_or_size
from weir_cli.target import cluster_client, with_progress

if TYPE_CHECKING:
    from weir_cli.tree import Commands, Tree

MAX_VALUE_FILE_BYTES = 64 * 1024 * 1024  # a value file larger than this is refused before it is read
BUCKET_HELP = "the bucket's name"
KEY_HELP = "the key (A-Z a-z 0-9 - _ / = and '.' between tokens)"


def _value(args: argparse.Namespace) -> bytes:
    if args.file is None:
        if args.value is None:
            raise CliError("weir kv put: give a VALUE or --file PATH ('-' = standard input)", status=2)
        return str(args.value).encode()
    if args.value is not None:
        raise CliError("weir kv put: give a VALUE or --file, not both", status=2)
    if args.file == "-":
        value = sys.stdin.buffer.read(MAX_VALUE_FILE_BYTES + 1)
        if len(value) > MAX_VALUE_FILE_BYTES:
            raise CliError(f"weir kv put: standard input holds more than {MAX_VALUE_FILE_BYTES} bytes", status=2)
        return value
    path = Path(args.file)
    if not path.is_file():
        raise CliError(f"weir kv put: {path} is not a readable file", status=2)
    if path.stat().st_size > MAX_VALUE_FILE_BYTES:
        raise CliError(f"weir kv put: {path} is larger than {MAX_VALUE_FILE_BYTES} bytes", status=2)
    return path.read_bytes()


async def bucket_create(args: argparse.Namespace) -> int:
    from weir.kv import KeyValue
    from weir.v1 import kv_pb2

    request = kv_pb2.KvCreateBucketRequest(
        bucket=args.bucket,
        history=args.history,
        replicas=args.replicas,
        max_bytes=args.max_bytes,
        max_value_size=args.max_value_size,
        max_age_ms=args.max_age_ms,
        ephemeral=args.ephemeral,
    )
    async with cluster_client(args) as client:
        await with_progress(KeyValue(client).create_bucket(request), "the cluster", args.verbose)
    emit(proto_dict(request), args.json, f"created bucket {args.bucket} (history {args.history or 1})")
    return 0


async def bucket_delete(args: argparse.Namespace) -> int:
    from weir.kv import KeyValue

    async with cluster_client(args) as client:
        await KeyValue(client).delete_bucket(args.bucket)
    emit({"bucket": args.bucket, "deleted": True}, args.json, f"deleted bucket {args.bucket}")
    return 0


async def put(args: argparse.Namespace) -> int:
    from weir.kv import KeyValue

    value = _value(args)
    async with cluster_client(args) as client:
        kv = KeyValue(client)
        if args.create:
            revision = await kv.create(args.bucket, args.key, value, args.ttl_ms)
        elif args.expected_revision is not None:
            revision = await kv.update(args.bucket, args.key, value, args.expected_revision, args.ttl_ms)
        else:
            revision = await kv.put(args.bucket, args.key, value, args.ttl_ms)
    emit({"key": args.key, "revision": revision}, args.json, f"{args.key} = revision {revision}")
    return 0


async def get(args: argparse.Namespace) -> int:
    from weir.kv import KeyValue

    async with cluster_client(args) as client:
        entry = await KeyValue(client).get(args.bucket, args.key)
    if entry is None:
        raise CliError(f"key {args.key!r} has no value in bucket {args.bucket!r}", status=1)
    emit(proto_dict(entry) | {"key": args.key}, args.json, text_or_size(entry.value))
    return 0


async def delete(args: argparse.Namespace) -> int:
    from weir.kv import KeyValue

    async with cluster_client(args) as client:
        revision = await KeyValue(client).delete(args.bucket, args.key)
    emit(
        {"key": args.key, "revision": revision, "deleted": True}, args.json, f"deleted {args.key} (revision {revision})"
    )
    return 0


async def touch(args: argparse.Namespace) -> int:
    from weir.kv import KeyValue

    async with cluster_client(args) as client:
        revision = await KeyValue(client).touch(args.bucket, args.key, args.ttl_ms)
    emit({"key": args.key, "revision": revision}, args.json, f"{args.key} = revision {revision} (ttl {args.ttl_ms} ms)")
    return 0


async def purge(args: argparse.Namespace) -> int:
    from weir.kv import KeyValue

    async with cluster_client(args) as client:
        revision = await KeyValue(client).purge(args.bucket, args.key)
    emit({"key": args.key, "revision": revision, "purged": True}, args.json, f"purged {args.key} (revision {revision})")
    return 0


async def keys(args: argparse.Namespace) -> int:
    from weir.kv import KeyValue

    async with cluster_client(args) as client:
        entries, truncated = await KeyValue(client).keys(args.bucket)
    shown = [entry for entry in entries if args.all or not entry.deleted]
    if args.json:
        for entry in shown:
            emit(entry, True)
    else:
        rows = [(entry.key, entry.revision, "deleted" if entry.deleted else "") for entry in shown]
        print(table(["KEY", "REVISION", ""], rows))
    if truncated:
        print("(only the first 10,000 keys are listed)", file=sys.stderr)
    return 0


async def history(args: argparse.Namespace) -> int:
    from weir.kv import KeyValue

    async with cluster_client(args) as client:
        entries = await KeyValue(client).history(args.bucket, args.key, args.from_revision, args.limit)
    if args.json:
        for entry in entries:
            emit(entry, True)
    else:
        rows = [(e.revision, e.ts_ms, "(deleted)" if e.deleted else text_or_size(e.value)) for e in entries]
        print(table(["REVISION", "TS_MS", "VALUE"], rows))
    return 0


async def watch(args: argparse.Namespace) -> int:
    """Each key's value, then every change, one line each, until interrupted (or --count events)."""
    from weir.kv import KeyValue

    seen = 0
    async with cluster_client(args) as client:
        async for event in KeyValue(client).watch(args.bucket, args.key or "", args.from_revision):
            kind = event.WhichOneof("event") or ""
            body: Any = getattr(event, kind)
            if args.json:
                emit(proto_dict(body) | {"event": kind}, True)
            elif kind == "put":
                print(f"{body.revision}  put     {body.key} = {text_or_size(body.value)}", flush=True)
            else:
                print(f"{body.revision}  delete  {body.key}", flush=True)
            seen += 1
            if args.count and seen >= args.count:
                break
    return 0


def add_commands(tree: Tree, commands: Commands, *, positive_int: Any, non_negative_int: Any) -> None:
    kv = tree.group(commands, "kv", "key-value buckets: put, get, del, purge, touch, keys, history, watch")
    create = tree.command(kv, "create", "create a bucket (idempotent for the same settings)", bucket_create)
    create.add_argument("bucket", help="1..64 characters of A-Z a-z 0-9 - _")
    create.add_argument("--history", type=non_negative_int, default=1, help="revisions kept per key (1..64)")
    create.add_argument("--replicas", type=positive_int, default=1, help="copies on distinct nodes")
    create.add_argument("--max-bytes", type=non_negative_int, default=0, help="bucket size bound (0 = none)")
    create.add_argument("--max-value-size", type=non_negative_int, default=0, help="largest value (0 = 1 MiB)")
    create.add_argument("--max-age-ms", type=non_negative_int, default=0, help="bucket TTL (0 = none)")
    create.add_argument("--ephemeral", action="store_true", help="in memory only")
    tree.command(kv, "rm-bucket", "delete a bucket and every key in it", bucket_delete).add_argument(
        "bucket", help=BUCKET_HELP
    )
    put_command = tree.command(kv, "put", "store a value (--create: only if absent; --expected-revision: CAS)", put)
    put_command.add_argument("bucket", help=BUCKET_HELP)
    put_command.add_argument("key", help=KEY_HELP)
    put_command.add_argument("value", nargs="?", help="the value as text (or --file)")
    put_command.add_argument("--file", metavar="PATH", help="read the value from a file ('-' = standard input)")
    put_command.add_argument("--create", action="store_true", help="only if the key has no value")
    put_command.add_argument("--expected-revision", type=non_negative_int, help="only if the key is at this revision")
    put_command.add_argument(
        "--ttl-ms", type=non_negative_int, default=0, help="the value expires this long after (0 = never)"
    )
    for name, help_text, handler in (
        ("get", "a key's value", get),
        ("del", "delete a key (a tombstone)", delete),
        ("purge", "remove every revision of a key, leaving one tombstone", purge),
    ):
        command = tree.command(kv, name, help_text, handler)
        command.add_argument("bucket", help=BUCKET_HELP)
        command.add_argument("key", help=KEY_HELP)
    touch_command = tree.command(kv, "touch", "store a key's value again with a new TTL", touch)
    touch_command.add_argument("bucket", help=BUCKET_HELP)
    touch_command.add_argument("key", help=KEY_HELP)
    touch_command.add_argument("--ttl-ms", type=non_negative_int, required=True, help="from now (0 = never expire)")
    keys_command = tree.command(kv, "keys", "the bucket's keys with their revisions", keys)
    keys_command.add_argument("bucket", help=BUCKET_HELP)
    keys_command.add_argument("--all", action="store_true", help="deleted keys too")
    history_command = tree.command(kv, "history", "a key's kept revisions, oldest first", history)
    history_command.add_argument("bucket", help=BUCKET_HELP)
    history_command.add_argument("key", help=KEY_HELP)
    history_command.add_argument("--from-revision", type=non_negative_int, default=0, help="start here")
    history_command.add_argument("--limit", type=non_negative_int, default=0, help="at most this many (0 = 1,000)")
    watch_command = tree.command(kv, "watch", "each key's value, then every change (Ctrl-C ends)", watch)
    watch_command.add_argument("bucket", help=BUCKET_HELP)
    watch_command.add_argument("key", nargs="?", help="only this key")
    watch_command.add_argument("--from-revision", type=non_negative_int, default=0, help="every change from here")
    watch_command.add_argument("--count", type=non_negative_int, default=0, help="stop after this many events")
