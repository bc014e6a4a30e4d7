"""`weir consumer ...`, `weir fetch` and `weir sub`: durable consumers, across every partition of a
stream unless `--partition` names one."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time

from weir.client import consumer_config
from weir.cluster import Client
from weir.message import Message

from weir_cli.cli_error import CliError
from weir_cli.output import consumer_summary, emit, emit_message, progress, table
from weir_cli.streams import partitions_of, target

SUB_IDLE_S = 2.0  # --stop-when-empty: stop after this long without a message


async def consumer_create(args: argparse.Namespace) -> int:
    config = consumer_config(
        args.name,
        filter_subject=args.filter_subject,
        deliver_policy=args.deliver_policy,
        start_seq=args.start_seq,
        start_time_ms=args.start_time_ms,
        ack_wait_ms=args.ack_wait_ms,
        max_deliver=args.max_deliver,
        dead_letter_subject=args.dead_letter_subject,
        max_ack_pending=args.max_ack_pending,
        deliver_group=args.deliver_group,
    )
    async with target(args) as to:
        info = await to.create_consumer(args.stream, config)
    emit(info, args.json, f"created consumer {args.name} of {args.stream}; {info.num_pending} message(s) to deliver")
    return 0


async def consumer_info(args: argparse.Namespace) -> int:
    async with target(args) as to:
        info = await to.consumer_info(args.stream, args.name)
    emit(info, args.json, consumer_summary(info))
    return 0


async def consumer_list(args: argparse.Namespace) -> int:
    async with target(args) as to:
        infos = await to.list_consumers(args.stream)
    names = [info.config.name for info in infos]
    rows = [(info.config.name, info.num_pending, info.num_ack_pending, info.acked_total) for info in infos]
    emit(names, args.json, table(["consumer", "pending", "ack pending", "acked"], rows) if rows else "(no consumers)")
    return 0


async def consumer_delete(args: argparse.Namespace) -> int:
    async with target(args) as to:
        await to.client.delete_consumer(args.stream, args.name)
    emit({"deleted": args.name}, args.json, f"deleted consumer {args.name} of {args.stream}")
    return 0


async def consumer_seek(args: argparse.Namespace) -> int:
    """Move the consumer in every partition (or --partition): --seq, --time-ms, --end, or (reset)
    back to the start. Pending messages there are dropped (not redelivered)."""
    seq = 1 if args.consumer_command == "reset" else args.seq
    time_ms = getattr(args, "time_ms", None)
    end = bool(getattr(args, "end", False))
    if sum((seq is not None, time_ms is not None, end)) != 1:
        raise CliError("weir consumer seek: give exactly one of --seq, --time-ms or --end", status=2)
    moved: dict[int, int] = {}
    async with target(args) as to:
        for partition in partitions_of(args, await to.partitions(args.stream)):
            node = await to.node_for(args.stream, partition)
            response = await node.seek_consumer(args.stream, args.name, partition, seq=seq, time_ms=time_ms, end=end)
            moved[partition] = response.next_seq
    rows = table(["partition", "next seq"], sorted(moved.items()))
    emit({str(partition): seq for partition, seq in moved.items()}, args.json, rows)
    return 0


async def fetch(args: argparse.Namespace) -> int:
    """Up to --batch messages over every partition (or --partition); waits up to --wait-ms for the
    first; --ack acknowledges what was fetched."""
    async with target(args) as to:
        chosen = partitions_of(args, await to.partitions(args.stream))
        deadline = time.monotonic() + args.wait_ms / 1000
        said = False
        while True:
            got = 0
            for partition in chosen:
                if got >= args.batch:
                    break
                node = await to.node_for(args.stream, partition)
                messages = await node.fetch(args.stream, args.consumer, partition, batch_size=args.batch - got)
                got += len(messages)
                for proto in messages:
                    emit_message(Message.from_proto(args.stream, proto, consumer=args.consumer), args.json)
                if args.ack and messages:
                    await node.ack_batch(args.stream, args.consumer, partition, [m.seq for m in messages])
            if got or time.monotonic() >= deadline:
                break
            if not said and (args.verbose or sys.stderr.isatty()):
                progress(f"weir: waiting up to {args.wait_ms} ms for messages for {args.consumer!r} ...")
                said = True
            await asyncio.sleep(0.1)
    if got == 0 and not args.json:
        progress(f"(nothing to deliver to {args.consumer!r} of {args.stream})")
    return 0


async def sub(args: argparse.Namespace) -> int:
    """Consume as a member of group CONSUMER (cluster; the stream must exist) or push-subscribe
    (standalone node); print each message and acknowledge it unless --no-ack. Ctrl-C leaves."""
    async with target(args) as to:
        cluster = to.cluster
        if cluster is None:
            return await _push(args, to.client)
        await cluster.stream_info(args.stream)  # a mistyped stream fails here, before joining
        existed = any(info.config.name == args.consumer for info in await cluster.list_consumers(args.stream))
        try:
            return await _consume(cluster, args)
        finally:
            if not args.durable and not existed:
                await _drop_group_consumer(cluster, args)


async def _consume(cluster: Client, args: argparse.Namespace) -> int:
    """Print (and ack) what group CONSUMER gets until Ctrl-C or, with --stop-when-empty, a quiet spell."""
    async with cluster.consume(args.stream, args.consumer) as messages:
        progress(f"joined group {args.consumer!r} of {args.stream} (Ctrl-C leaves)")
        while True:
            try:
                message = await asyncio.wait_for(anext(messages), SUB_IDLE_S if args.stop_when_empty else None)
            except (TimeoutError, StopAsyncIteration):
                return 0
            emit_message(message, args.json)
            if not args.no_ack:
                with contextlib.suppress(Exception):  # redelivered later: at least once
                    await message.ack()


async def _drop_group_consumer(cluster: Client, args: argparse.Namespace) -> None:
    """An ephemeral `sub` (no --durable) deletes the group's durable consumer it created, once no
    other member is left in the group (one that joined meanwhile keeps it: it is theirs too)."""
    with contextlib.suppress(Exception):  # leaving is best effort: at worst the consumer stays
        if not (await cluster.group_info(args.stream, args.consumer)).members:
            await cluster.delete_consumer(args.stream, args.consumer)
            progress(f"deleted consumer {args.consumer!r} (ephemeral; --durable keeps it)")


async def _push(args: argparse.Namespace, node: object) -> int:
    """Push-subscribe on one standalone node; the durable consumer is created on first use, as a
    cluster's consumer group is."""
    from weir.client import NodeClient
    from weir.errors import NoSuchConsumerError

    assert isinstance(node, NodeClient)
    try:
        await node.consumer_info(args.stream, args.consumer)
    except NoSuchConsumerError:
        await node.create_consumer(args.stream, consumer_config(args.consumer, deliver_group=args.deliver_group))
    progress(f"subscribed as {args.consumer!r} to {args.stream} (Ctrl-C leaves)")
    async for event in node.subscribe(
        args.stream, args.consumer, stop_when_empty=args.stop_when_empty, deliver_group=args.deliver_group
    ):
        if event.HasField("stopped"):
            progress(f"subscription ended: {event.stopped.reason}")
            break
        emit_message(Message.from_proto(args.stream, event.message, consumer=args.consumer), args.json)
        if not args.no_ack:
            await node.ack(args.stream, args.consumer, event.message.partition, event.message.seq)
    return 0
