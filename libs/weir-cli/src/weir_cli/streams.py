"""`weir stream ...`, `weir pub` and `weir read`: stream admin and messages, on a cluster (through its
routers and partition primaries) or on one standalone node (`--server`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from weir.client import NodeClient, stream_config
from weir.cluster import Client
from weir.errors import NoSuchStreamError
from weir.info import ConsumerConfig, ConsumerInfo, StreamConfig, StreamInfo, StreamUpdate
from weir.message import Message, PublishAck
from weir.subjects import RESERVED_SUBJECT_PREFIX
from weir.v1 import streams_pb2, types_pb2

from weir_cli.cli_error import CliError
from weir_cli.output import emit, emit_message, progress, proto_dict, stream_summary
from weir_cli.target import cluster_client, node_client, with_progress

READ_PAGE = 500  # messages one ReadMessages call asks for


class Target:
    """A cluster (Client) or one standalone node (NodeClient), behind the calls the commands need
    (a node's protobuf answers as the SDK's types, as the cluster client gives them)."""

    def __init__(self, client: Client | NodeClient) -> None:
        self.client = client

    @property
    def cluster(self) -> Client | None:
        return self.client if isinstance(self.client, Client) else None

    async def partitions(self, stream: str) -> int:
        if isinstance(self.client, Client):
            return len((await self.client.route(stream)).partitions)
        return (await self.client.stream_info(stream)).config.partitions

    async def stream_info(self, stream: str) -> StreamInfo:
        if isinstance(self.client, Client):
            return await self.client.stream_info(stream)
        return StreamInfo.from_proto(await self.client.stream_info(stream))

    async def create_stream(self, config: StreamConfig) -> StreamConfig:
        if isinstance(self.client, Client):
            return await self.client.create_stream(config)
        return StreamConfig.from_proto(await self.client.create_stream(config))

    async def update_stream(self, name: str, changes: dict[str, int]) -> StreamUpdate:
        if isinstance(self.client, Client):
            return await self.client.update_stream(name, **changes)
        request = streams_pb2.UpdateStreamRequest(name=name, **changes)
        return StreamUpdate.from_proto(await self.client.update_stream(request))

    async def create_consumer(self, stream: str, config: ConsumerConfig) -> ConsumerInfo:
        if isinstance(self.client, Client):
            return await self.client.create_consumer(stream, config)
        return ConsumerInfo.from_proto(await self.client.create_consumer(stream, config))

    async def consumer_info(self, stream: str, consumer: str) -> ConsumerInfo:
        if isinstance(self.client, Client):
            return await self.client.consumer_info(stream, consumer)
        return ConsumerInfo.from_proto(await self.client.consumer_info(stream, consumer))

    async def list_consumers(self, stream: str) -> list[ConsumerInfo]:
        if isinstance(self.client, Client):
            return await self.client.list_consumers(stream)
        return [ConsumerInfo.from_proto(info) for info in await self.client.list_consumers(stream)]

    async def node_for(self, stream: str, partition: int) -> NodeClient:
        if isinstance(self.client, Client):
            return await self.client.leader(stream, partition)
        return self.client

    async def read(self, stream: str, partition: int, from_seq: int, limit: int) -> streams_pb2.ReadMessagesResponse:
        if isinstance(self.client, Client):
            return await self.client.on_leader(
                stream, partition, lambda node: node.read_messages(stream, partition, from_seq, max_messages=limit)
            )
        return await self.client.read_messages(stream, partition, from_seq, max_messages=limit)


@contextlib.asynccontextmanager
async def target(args: argparse.Namespace) -> AsyncIterator[Target]:
    """The target of a command: --server (one standalone node) or the cluster's routers."""
    if getattr(args, "server", None):
        async with node_client(args) as node:
            yield Target(node)
    else:
        async with cluster_client(args) as client:
            yield Target(client)


def partitions_of(args: argparse.Namespace, count: int) -> list[int]:
    """--partition P (checked against `count`), else every partition."""
    if args.partition is None:
        return list(range(count))
    if args.partition >= count:
        raise CliError(f"stream {args.stream!r} has {count} partition(s): --partition {args.partition} does not exist")
    return [args.partition]


# -- stream admin -------------------------------------------------------------------------------------


def _config_of(args: argparse.Namespace) -> StreamConfig:
    return stream_config(
        args.name,
        subjects=args.subjects or (),
        partitions=args.partitions,
        retention=args.retention,
        max_age_ms=args.max_age_ms,
        max_msgs=args.max_msgs,
        max_bytes=args.max_bytes,
        max_msgs_per_subject=args.max_msgs_per_subject,
        max_msg_bytes=args.max_msg_bytes,
        storage=args.storage,
        replicas=args.replicas,
        min_insync_replicas=args.min_insync_replicas,
        deliver_up_to_high_watermark=args.deliver_up_to_high_watermark,
        allow_scheduled_messages=args.allow_scheduled_messages,
        duplicate_window_ms=args.duplicate_window_ms,
        duplicate_window_max_msgs=args.duplicate_window_max_msgs,
        sources=args.sources,
    )


async def stream_create(args: argparse.Namespace) -> int:
    """Create a stream; one that exists with the same config is left as it is and said so (`--json`:
    the config with `"existed": true|false`); another config is the router's `already_exists`."""
    async with target(args) as to:
        existed = await _exists(to, args.name)
        created = await with_progress(to.create_stream(_config_of(args)), "the cluster", args.verbose)
    human = (
        f"stream {created.name} exists with this config ({created.partitions} partition(s)): nothing changed"
        if existed
        else f"created stream {created.name} ({created.partitions} partition(s))"
    )
    emit({**proto_dict(created.to_proto()), "existed": existed}, args.json, human)
    return 0


async def _exists(to: Target, name: str) -> bool:
    try:
        await to.stream_info(name)
    except NoSuchStreamError:
        return False
    return True


def asks(args: argparse.Namespace) -> bool:
    """Whether a destructive command asks first: on a terminal, unless --force (a script or a pipe
    is not asked)."""
    return not args.force and sys.stdin.isatty() and sys.stderr.isatty()


def confirm(question: str) -> None:
    """Ask `question` [y/N] on the terminal; anything but y/yes is a CliError (status 1), and nothing
    is done."""
    print(f"{question} [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise CliError("nothing done (pass --force to skip this question)")


_UPDATABLE = (
    "max_age_ms",
    "max_msgs",
    "max_bytes",
    "max_msg_bytes",
    "max_msgs_per_subject",
    "duplicate_window_ms",
    "duplicate_window_max_msgs",
)


async def stream_update(args: argparse.Namespace) -> int:
    changes = {field: getattr(args, field) for field in _UPDATABLE if getattr(args, field) is not None}
    if not changes:
        flags = ", ".join("--" + field.replace("_", "-") for field in _UPDATABLE)
        raise CliError(f"weir stream update: nothing to change; give one of {flags}", status=2)
    async with target(args) as to:
        update = await to.update_stream(args.name, changes)
    summary = ", ".join(f"{field} {value}" for field, value in changes.items())
    emit(update, args.json, f"updated stream {args.name}: {summary}; {update.pruned} message(s) pruned")
    return 0


async def _message_count(to: Target, name: str) -> int:
    """The stream's stored messages (its partitions' msg_count). Errors: NoSuchStreamError."""
    info = await to.stream_info(name)
    return sum(partition.msg_count for partition in info.partitions)


async def stream_info(args: argparse.Namespace) -> int:
    """The stream's config essentials, totals and one row per partition with its leader (--json:
    GetStreamInfoResponse, each stats.partitions entry with its `leader` added)."""
    async with target(args) as to:
        info = await with_progress(to.stream_info(args.name), "the cluster", args.verbose)
        leaders = await _leaders(to, args.name)
    value = proto_dict(info.to_proto())
    for entry in value.get("stats", {}).get("partitions", []):
        entry["leader"] = leaders.get(int(entry.get("partition", 0)), "")
    emit(value, args.json, stream_summary(info, leaders))
    return 0


async def _leaders(to: Target, stream: str) -> dict[int, str]:
    """partition -> the node leading it ("node-2", "node-2 (dead)"), from a fresh route; on one
    standalone node, that node."""
    cluster = to.cluster
    if cluster is None:
        node = await to.node_for(stream, 0)
        return {partition: node.address for partition in range(await to.partitions(stream))}
    route = await cluster.route(stream, refresh=True)
    return {
        entry.partition: entry.primary.node_id + ("" if entry.primary.alive else " (dead)")
        for entry in route.partitions
    }


async def stream_list(args: argparse.Namespace) -> int:
    async with target(args) as to:
        names = await with_progress(to.client.list_streams(), "the cluster", args.verbose)
    emit(names, args.json, "\n".join(names) if names else "(no streams)")
    return 0


async def stream_delete(args: argparse.Namespace) -> int:
    async with target(args) as to:
        if asks(args):  # the count only for the question: a script's delete costs one call
            confirm(f"delete stream {args.name} and its {await _message_count(to, args.name)} message(s)?")
        await to.client.delete_stream(args.name)
    emit({"deleted": args.name}, args.json, f"deleted stream {args.name}")
    return 0


async def stream_purge(args: argparse.Namespace) -> int:
    async with target(args) as to:
        count = await to.partitions(args.name)
        args.stream = args.name
        if asks(args):
            which = "every partition" if args.partition is None else f"partition {args.partition}"
            below = f" below seq {args.keep_from_seq}" if args.keep_from_seq else ""
            confirm(f"remove the messages{below} of {which} of stream {args.name}?")
        purged = 0
        for partition in partitions_of(args, count):
            node = await to.node_for(args.name, partition)
            response = await node.purge_partition(args.name, partition, keep_from_seq=args.keep_from_seq)
            purged += response.purged
    emit({"purged": purged}, args.json, f"purged {purged} message(s) from stream {args.name}")
    return 0


# -- pub ------------------------------------------------------------------------------------------------


PUB_WINDOW_MESSAGES = 500  # publishes in flight at once (one SDK batch per partition at most)
PUB_WINDOW_BYTES = 256 * 1024


async def _windows(args: argparse.Namespace) -> AsyncIterator[list[bytes]]:
    """The payloads in windows: DATA --count times ({n} becomes 1..count), or one message per line
    of stdin, as many lines as have arrived (a slow writer's line goes out at once). A window stays
    under the SDK's batch bounds, so a partition's messages keep their order. DATA's bytes are the
    command line's, also when they are not UTF-8 (os.fsencode undoes Python's decoding)."""
    if args.data is not None and args.data != "-":
        payloads = [os.fsencode(args.data.replace("{n}", str(number))) for number in range(1, args.count + 1)]
        window: list[bytes] = []
        for payload in payloads:
            if _full(window):
                yield window
                window = []
            window.append(payload)
        yield window
        return
    if sys.stdin.isatty():
        print("weir pub: reading messages from stdin, one per line (Ctrl-D ends)", file=sys.stderr)
    lines = _stdin_lines()
    while (first := await lines.get()) is not None:
        window = [first]
        while not _full(window) and not lines.empty():
            line = lines.get_nowait()
            if line is None:
                yield window
                return
            window.append(line)
        yield window


def _full(window: list[bytes]) -> bool:
    return len(window) >= PUB_WINDOW_MESSAGES or sum(map(len, window)) >= PUB_WINDOW_BYTES


def _stdin_lines() -> asyncio.Queue[bytes | None]:
    """stdin's lines (without their line end) as a reader thread gets them; None at the end."""
    lines: asyncio.Queue[bytes | None] = asyncio.Queue()
    loop = asyncio.get_running_loop()

    def read() -> None:
        for line in sys.stdin.buffer:
            loop.call_soon_threadsafe(lines.put_nowait, line.removesuffix(b"\n").removesuffix(b"\r"))
        loop.call_soon_threadsafe(lines.put_nowait, None)

    threading.Thread(target=read, name="weir-pub-stdin", daemon=True).start()
    return lines


async def _publish_window(
    to: Target, args: argparse.Namespace, window: list[bytes], **options: Any
) -> list[PublishAck]:
    """Publish a window: on a cluster all in flight at once (batched by the SDK), on one node one
    by one. Acks in order; the first failure is raised (later messages of the window may be stored)."""
    cluster = to.cluster
    if cluster is None:
        return [await to.client.publish(args.stream, args.subject, payload, **options) for payload in window]
    futures = [await cluster.publish_nowait(args.stream, args.subject, payload, **options) for payload in window]
    await cluster.flush()
    return [await future for future in futures]


async def pub(args: argparse.Namespace) -> int:
    """Publish DATA (--count times) or stdin's lines; print where each one went (the first 10, then
    a count; --json: every ack)."""
    headers = []
    for item in args.header or ():
        name, equals, value = item.partition("=")
        if not equals or not name:
            raise CliError(f"weir pub: --header takes KEY=VALUE, got {item!r}", status=2)
        headers.append((name, value))
    options: dict[str, Any] = {"headers": headers, "partition": args.partition, "ack_level": args.ack}
    options["key"] = os.fsencode(args.key) if args.key is not None else None
    if args.delay_ms and args.hold:
        raise CliError("weir pub: --delay-ms and --hold: use one", status=2)
    options.update(delay_ms=args.delay_ms, hold=args.hold)
    published = 0
    async with target(args) as to:
        options["msg_id"] = args.msg_id if to.cluster is not None else args.msg_id or ""
        async for window in _windows(args):
            for ack in await _publish_window(to, args, window, **options):
                published += 1
                if args.json:
                    fields = {"partition": ack.partition, "seq": ack.seq, "duplicate": ack.duplicate}
                    print(json.dumps({**fields, "scheduled": ack.scheduled}))
                elif published <= 10:
                    print(f"published to {args.stream}[{ack.partition}] seq {ack.seq}{_ack_note(args, ack)}")
            sys.stdout.flush()  # a window's acks as soon as they are known (`tail -f log | weir pub`)
    if not args.json and published > 10:
        print(f"... published {published} messages to {args.stream}")
    if not published:
        raise CliError("weir pub: nothing to publish (stdin was empty)")
    return 0


def _ack_note(args: argparse.Namespace, ack: PublishAck) -> str:
    if ack.duplicate:
        return " (duplicate: stored before)"
    if ack.scheduled and args.hold:
        return " (held: 'weir scheduled release' delivers or discards it)"
    if ack.scheduled:
        return f" (scheduled: delivered in {args.delay_ms} ms under a new seq)"
    return ""


# -- read -----------------------------------------------------------------------------------------------


async def read(args: argparse.Namespace) -> int:
    """Stored messages of every partition (or --partition), oldest first per partition, at most
    --max; with --follow, then every new one as it arrives (all partitions) until Ctrl-C. Stored
    messages past --max are not printed (a note on stderr says so), with --follow either."""
    async with target(args) as to:
        count = await to.partitions(args.stream)
        positions = dict.fromkeys(partitions_of(args, count), args.from_seq)
        shown, left = await _read_stored(to, args, positions)
        if left and not args.follow:
            progress(f"weir: showed the first {shown} message(s); more with --max N or --from-seq SEQ")
        elif left:
            progress(f"weir: showed the first {shown} stored message(s) and skipped the rest; following new ones")
            positions.update({partition: last_seq + 1 for partition, last_seq in left.items()})
        elif shown == 0 and not args.json and not args.follow:
            progress(f"(no messages in {args.stream}{_which(args)})")
        if not args.follow:
            return 0
        if args.verbose or sys.stderr.isatty():
            progress(f"weir: following {args.stream}{_which(args)} (Ctrl-C stops) ...")
        while True:
            for partition, from_seq in positions.items():
                response = await to.read(args.stream, partition, from_seq, READ_PAGE)
                for message in _deliverable(response.messages):
                    emit_message(Message.from_proto(args.stream, message), args.json)
                positions[partition] = max(from_seq, response.next_seq)
            await asyncio.sleep(0.2)


async def _read_stored(to: Target, args: argparse.Namespace, positions: dict[int, int]) -> tuple[int, dict[int, int]]:
    """Print up to --max stored messages, partition by partition, advancing `positions`. Returns
    how many were printed and, past --max, the partitions with messages left unprinted (-> their
    last seq)."""
    shown = 0
    for partition, from_seq in positions.items():
        position = from_seq
        while shown < args.max:
            response = await to.read(args.stream, partition, position, min(READ_PAGE, args.max - shown))
            for message in _deliverable(response.messages):
                emit_message(Message.from_proto(args.stream, message), args.json)
                shown += 1
            position = max(position, response.next_seq)
            if not response.messages or response.next_seq > response.last_seq:
                break
        positions[partition] = position
    left: dict[int, int] = {}
    if shown >= args.max:
        for partition, from_seq in positions.items():
            tail = await to.read(args.stream, partition, from_seq, 1)
            if tail.messages:
                left[partition] = tail.last_seq
    return shown, left


def _deliverable(messages: Iterable[types_pb2.Message]) -> Iterator[types_pb2.Message]:
    """The stored messages a consumer could be delivered: not the records of delayed and held
    messages (reserved `$weir.` subjects; `weir scheduled list` shows those)."""
    return (message for message in messages if not message.subject.startswith(RESERVED_SUBJECT_PREFIX))


def _which(args: argparse.Namespace) -> str:
    return f" partition {args.partition}" if args.partition is not None else ""
