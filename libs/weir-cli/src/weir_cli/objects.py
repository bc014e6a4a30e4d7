"""`weir object ...`: object store buckets (weir.objects over the cluster's routers and primaries):
put and get stream files from and to disk in bounded memory with a byte progress bar on stderr
(tqdm; shown on a terminal only), ls, info, rm, gc and the bucket's create / rm-bucket."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    from weir.objects import ObjectMeta

from weir_cli.cli_error import CliError
from weir_cli.output import emit, table
from weir_cli.target import cluster_client

if TYPE_CHECKING:
    from weir_cli.tree import Commands, Tree

READ_BYTES = 1024 * 1024  # a file is read in pieces of this size


def _meta(meta: ObjectMeta) -> dict[str, Any]:
    return {
        "name": meta.name,
        "total_bytes": meta.total_bytes,
        "chunk_size": meta.chunk_size,
        "chunk_count": meta.chunk_count,
        "sha256": meta.sha256,
        "revision": meta.revision,
        "deduped": meta.deduped,
        "headers": meta.headers,
    }


def _bar(total: int | None, what: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, desc=what, file=sys.stderr, disable=None)


async def _pieces(source: BinaryIO, bar: Any) -> AsyncIterator[bytes]:
    while True:
        piece = await asyncio.to_thread(source.read, READ_BYTES)
        if not piece:
            return
        bar.update(len(piece))
        yield piece


async def bucket_create(args: argparse.Namespace) -> int:
    from weir.objects import ObjectStore

    async with cluster_client(args) as client:
        await ObjectStore(client).create_bucket(
            args.bucket,
            history=args.history,
            replicas=args.replicas,
            max_bytes=args.max_bytes,
            ephemeral=args.ephemeral,
        )
    emit({"bucket": args.bucket, "created": True}, args.json, f"created object bucket {args.bucket}")
    return 0


async def bucket_delete(args: argparse.Namespace) -> int:
    from weir.objects import ObjectStore

    async with cluster_client(args) as client:
        await ObjectStore(client).delete_bucket(args.bucket)
    emit({"bucket": args.bucket, "deleted": True}, args.json, f"deleted object bucket {args.bucket}")
    return 0


def _source(file: str) -> tuple[BinaryIO, int | None]:
    """The file to read and its size (standard input and no size for `-`)."""
    if file == "-":
        return sys.stdin.buffer, None
    path = Path(file)
    if not path.is_file():
        raise CliError(f"weir object put: {path} is not a readable file", status=2)
    return path.open("rb"), path.stat().st_size


async def put(args: argparse.Namespace) -> int:
    """Stream a file (or standard input with `-`) into an object."""
    from weir.objects import ObjectStore

    source, total = _source(args.file)
    try:
        with _bar(total, f"put {args.name}") as bar:
            async with cluster_client(args) as client:
                meta = await ObjectStore(client).put(
                    args.bucket, args.name, _pieces(source, bar), chunk_size=args.chunk_size, dedupe=args.dedupe
                )
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    emit(
        _meta(meta), args.json, f"{args.name}: {meta.total_bytes} bytes, sha256 {meta.sha256}, revision {meta.revision}"
    )
    return 0


async def get(args: argparse.Namespace) -> int:
    """Stream an object to a file (or standard output with `-`), checked against its sha256; a
    file is written beside its name and renamed into place once the content checked out."""
    from weir.objects import ObjectStore

    async with cluster_client(args) as client:
        meta, chunks = await ObjectStore(client).get(args.bucket, args.name)
        if args.file == "-":
            with _bar(meta.total_bytes, f"get {args.name}") as bar:
                async for chunk in chunks:
                    sys.stdout.buffer.write(chunk)
                    bar.update(len(chunk))
            sys.stdout.buffer.flush()
            return 0
        target = Path(args.file)
        partial = target.with_name(target.name + ".partial")
        sink = _sink(partial)
        try:
            with sink, _bar(meta.total_bytes, f"get {args.name}") as bar:
                async for chunk in chunks:
                    await asyncio.to_thread(sink.write, chunk)
                    bar.update(len(chunk))
        except BaseException:
            await asyncio.to_thread(partial.unlink, missing_ok=True)
            raise
        await asyncio.to_thread(partial.replace, target)
    emit(_meta(meta), args.json, f"{args.name} -> {target} ({meta.total_bytes} bytes, sha256 checked)")
    return 0


def _sink(path: Path) -> BinaryIO:
    return path.open("wb")


async def info(args: argparse.Namespace) -> int:
    from weir.objects import ObjectStore

    async with cluster_client(args) as client:
        meta = await ObjectStore(client).info(args.bucket, args.name)
    if meta is None:
        raise CliError(f"bucket {args.bucket!r} has no object {args.name!r}")
    emit(_meta(meta), args.json)
    return 0


async def listing(args: argparse.Namespace) -> int:
    from weir.objects import ObjectStore

    async with cluster_client(args) as client:
        entries = await ObjectStore(client).list_objects(args.bucket, args.prefix, args.all)
    if args.json:
        for name, size, deleted in entries:
            emit({"name": name, "total_bytes": size, "deleted": deleted}, True)
    else:
        print(
            table(
                ["NAME", "BYTES", ""], [(name, size, "deleted" if deleted else "") for name, size, deleted in entries]
            )
        )
    return 0


async def remove(args: argparse.Namespace) -> int:
    from weir.objects import ObjectStore

    async with cluster_client(args) as client:
        seq = await ObjectStore(client).delete(args.bucket, args.name)
    emit({"name": args.name, "tombstone_seq": seq}, args.json, f"deleted {args.name}")
    return 0


async def collect(args: argparse.Namespace) -> int:
    from weir.objects import ObjectStore

    async with cluster_client(args) as client:
        removed = await ObjectStore(client).collect_garbage(args.bucket, args.grace_ms)
    emit({"removed": removed}, args.json, f"removed {removed} unused chunk(s)")
    return 0


def add_commands(tree: Tree, commands: Commands, *, positive_int: Any, non_negative_int: Any) -> None:
    from weir.options import OBJECT_GC_GRACE_MS as GC_GRACE_MS
    from weir.options import OBJECT_MAX_CHUNK_BYTES as MAX_CHUNK_BYTES

    group = tree.group(commands, "object", "object store buckets: put, get, ls, info, rm, gc")
    create = tree.command(group, "create", "create an object bucket (idempotent for the same settings)", bucket_create)
    create.add_argument("bucket", help="1..64 characters of A-Z a-z 0-9 - _")
    create.add_argument("--history", type=non_negative_int, default=0, help="revisions kept per name (0 = 16)")
    create.add_argument("--replicas", type=positive_int, default=1, help="copies on distinct nodes")
    create.add_argument("--max-bytes", type=non_negative_int, default=0, help="bucket size bound (0 = none)")
    create.add_argument("--ephemeral", action="store_true", help="in memory only")
    tree.command(group, "rm-bucket", "delete an object bucket and every object in it", bucket_delete).add_argument(
        "bucket", help="the bucket's name"
    )
    put_command = tree.command(group, "put", "store a file as an object (streamed: any size)", put)
    get_command = tree.command(group, "get", "write an object to a file (streamed, sha256 checked)", get)
    for command, where in (
        (put_command, "the file to read ('-' = standard input)"),
        (get_command, "the file to write ('-' = standard output)"),
    ):
        command.add_argument("bucket", help="the bucket's name")
        command.add_argument("name", help="the object's name (1..512 bytes)")
        command.add_argument("file", help=where)
    put_command.add_argument(
        "--chunk-size",
        type=non_negative_int,
        default=0,
        help=f"bytes per chunk (0 = 256 KiB; at most {MAX_CHUNK_BYTES})",
    )
    put_command.add_argument("--dedupe", action="store_true", help="store chunks by content, once across the bucket")
    for name, help_text, handler in (("info", "an object's metadata", info), ("rm", "delete an object", remove)):
        command = tree.command(group, name, help_text, handler)
        command.add_argument("bucket", help="the bucket's name")
        command.add_argument("name", help="the object's name")
    ls = tree.command(group, "ls", "the bucket's objects", listing)
    ls.add_argument("bucket", help="the bucket's name")
    ls.add_argument("--prefix", default="", help="only names starting with this")
    ls.add_argument("--all", action="store_true", help="deleted objects too")
    gc = tree.command(group, "gc", "remove chunks no object uses (cut-off uploads' and deleted objects')", collect)
    gc.add_argument("bucket", help="the bucket's name")
    gc.add_argument("--grace-ms", type=non_negative_int, default=GC_GRACE_MS, help="only chunks older than this")
