"""`weir`: the Weir command line.

    weir demo                      start a node, publish, read and consume a demo workload, stop it
    weir stream create NAME ...    stream admin against a node (--server host:port)
    weir stream info|list|delete
    weir pub STREAM SUBJECT DATA   publish one message
    weir read STREAM               print stored messages of a partition
    weir consumer create STREAM NAME ...   durable consumer admin
    weir consumer info|list|delete
    weir fetch STREAM CONSUMER     fetch (and with --ack acknowledge) a batch of one partition
    weir sub STREAM CONSUMER       push-subscribe, print and acknowledge messages as they come
    weir changes                   print a node's change feed (--server = its internal port)

`--server` defaults to $WEIR_SERVER or 127.0.0.1:7401 (a node's default client port). Errors print
the result code and message and exit with status 1 (2 for usage errors).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from weir.client import DELIVER_POLICIES, ChangeFeedClient, NodeClient, consumer_config, stream_config
from weir.errors import WeirError
from weir.v1 import streams_pb2

DEFAULT_SERVER = "127.0.0.1:7401"
DEFAULT_INTERNAL_SERVER = "127.0.0.1:7402"


def _print_message(message: Any, as_json: bool) -> None:
    if as_json:
        print(
            json_format.MessageToJson(
                message, indent=None, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            )
        )
    else:
        print(
            json_format.MessageToJson(
                message, indent=2, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            )
        )


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- demo -----------------------------------------------------------------------------------------


async def _demo(args: argparse.Namespace) -> int:
    from weir.launcher import start_node  # the demo needs the partition node installed beside us

    with tempfile.TemporaryDirectory(prefix="weir-demo-") as temporary:
        root = Path(args.data_dir) if args.data_dir else Path(temporary)
        _progress(f"starting a partition node (data under {root}) ...")
        handle = start_node(root / "node-1", node_id="node-1")  # from this thread: see die_with_parent
        try:
            summary = await _demo_workload(handle.client_address, args.messages, args.payload_bytes)
            summary["node"] = {
                "client_address": handle.client_address,
                "internal_address": handle.internal_address,
                "metrics": f"http://127.0.0.1:{handle.metrics_port}/metrics",
                "peak_rss_mib": round(handle.peak_rss_bytes() / 2**20, 1),
            }
        finally:
            _progress("stopping the node (SIGTERM: drain, flush, close) ...")
            code = await asyncio.to_thread(handle.stop)
        summary["node"]["exit_code"] = code
        print(json.dumps(summary, indent=None if args.json else 2))
        return 0 if summary["verified"] and code == 0 else 1


async def _demo_workload(address: str, messages: int, payload_bytes: int) -> dict[str, Any]:
    partitions = 3
    async with NodeClient(address) as client:
        await client.create_stream(stream_config("demo", subjects=["demo.>"], partitions=partitions))
        _progress(f"created stream 'demo' with {partitions} partitions; publishing {messages} messages ...")
        digests: dict[tuple[int, int], str] = {}
        started = time.perf_counter()
        batch_size = 500
        for offset in range(0, messages, batch_size):
            count = min(batch_size, messages - offset)
            entries = []
            for index in range(offset, offset + count):
                payload = index.to_bytes(8, "big") * (payload_bytes // 8)
                entries.append(
                    streams_pb2.PublishEntry(
                        subject=f"demo.user.{index % 10}", payload=payload, key=f"user-{index % 10}".encode()
                    )
                )
            for entry, result in zip(entries, await client.publish_batch("demo", entries), strict=True):
                digests[(result.partition, result.seq)] = hashlib.sha256(entry.payload).hexdigest()
            if (offset // batch_size) % 10 == 9 or offset + count == messages:
                _progress(f"  published {offset + count}/{messages}")
        publish_s = time.perf_counter() - started
        started = time.perf_counter()
        read = 0
        mismatches = 0
        for partition in range(partitions):
            async for message in client.read_all("demo", partition):
                read += 1
                if digests.get((partition, message.seq)) != hashlib.sha256(message.payload).hexdigest():
                    mismatches += 1
        read_s = time.perf_counter() - started
        _progress(f"read back {read} messages, {mismatches} mismatches")
        consumed, consume_s = await _demo_consume(client, partitions)
        _progress(f"consumer 'demo-worker' fetched and acknowledged {consumed} messages")
        consumer = await client.consumer_info("demo", "demo-worker")
        latest = await client.latest_at_subject("demo", "demo.user.3", partition=_partition_of(b"user-3", partitions))
        info = await client.stream_info("demo")
        return {
            "stream": "demo",
            "published": len(digests),
            "read": read,
            "consumed": consumed,
            "verified": read == messages and mismatches == 0 and consumed == messages and consumer.num_ack_pending == 0,
            "publish_msgs_per_s": round(messages / publish_s),
            "read_msgs_per_s": round(read / read_s) if read_s else None,
            "consume_msgs_per_s": round(consumed / consume_s) if consume_s else None,
            "consumer_ack_floors": [p.ack_floor for p in consumer.partitions],
            "latest_demo_user_3_seq": latest.seq if latest else None,
            "per_partition_last_seq": [p.last_seq for p in info.stats.partitions],
            "stored_bytes": info.stats.bytes,
        }


async def _demo_consume(client: NodeClient, partitions: int) -> tuple[int, float]:
    """A durable consumer takes every message: Fetch(100) + AckBatch per partition, concurrently."""
    await client.create_consumer("demo", consumer_config("demo-worker", filter_subject="demo.>"))
    started = time.perf_counter()

    async def drain(partition: int) -> int:
        taken = 0
        while messages := await client.fetch("demo", "demo-worker", partition, batch_size=100):
            results = await client.ack_batch("demo", "demo-worker", partition, [m.seq for m in messages])
            taken += sum(1 for result in results if result.result_code == "ok")
        return taken

    counts = await asyncio.gather(*(drain(partition) for partition in range(partitions)))
    return sum(counts), time.perf_counter() - started


def _partition_of(key: bytes, partitions: int) -> int:
    from weir.partitioning import partition_for_key

    return partition_for_key(key, partitions)


# -- admin commands --------------------------------------------------------------------------------


async def _stream_create(args: argparse.Namespace) -> int:
    config = stream_config(
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
    )
    async with NodeClient(args.server) as client:
        _print_message(await client.create_stream(config), args.json)
    return 0


async def _stream_info(args: argparse.Namespace) -> int:
    async with NodeClient(args.server) as client:
        _print_message(await client.stream_info(args.name), args.json)
    return 0


async def _stream_list(args: argparse.Namespace) -> int:
    async with NodeClient(args.server) as client:
        names = await client.list_streams()
    print(json.dumps(names) if args.json else "\n".join(names))
    return 0


async def _stream_delete(args: argparse.Namespace) -> int:
    async with NodeClient(args.server) as client:
        await client.delete_stream(args.name)
    print(json.dumps({"deleted": args.name}) if args.json else f"deleted {args.name}")
    return 0


async def _pub(args: argparse.Namespace) -> int:
    headers = [tuple(item.split("=", 1)) for item in args.header or ()]
    if any(len(pair) != 2 for pair in headers):
        raise SystemExit("weir pub: --header takes KEY=VALUE")
    async with NodeClient(args.server) as client:
        ack = await client.publish(
            args.stream,
            args.subject,
            args.data.encode(),
            headers=[(key, value) for key, value in headers],
            key=args.key.encode() if args.key is not None else None,
            partition=args.partition,
            ack_level=args.ack,
        )
    _print_message(ack, args.json)
    return 0


async def _read(args: argparse.Namespace) -> int:
    async with NodeClient(args.server) as client:
        response = await client.read_messages(args.stream, args.partition, args.from_seq, max_messages=args.max)
    for message in response.messages:
        _print_message(message, True)
    return 0


async def _consumer_create(args: argparse.Namespace) -> int:
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
    async with NodeClient(args.server) as client:
        _print_message(await client.create_consumer(args.stream, config), args.json)
    return 0


async def _consumer_info(args: argparse.Namespace) -> int:
    async with NodeClient(args.server) as client:
        _print_message(await client.consumer_info(args.stream, args.name), args.json)
    return 0


async def _consumer_list(args: argparse.Namespace) -> int:
    async with NodeClient(args.server) as client:
        infos = await client.list_consumers(args.stream)
    names = [info.config.name for info in infos]
    print(json.dumps(names) if args.json else "\n".join(names))
    return 0


async def _consumer_delete(args: argparse.Namespace) -> int:
    async with NodeClient(args.server) as client:
        await client.delete_consumer(args.stream, args.name)
    print(json.dumps({"deleted": args.name}) if args.json else f"deleted consumer {args.name}")
    return 0


async def _fetch(args: argparse.Namespace) -> int:
    async with NodeClient(args.server) as client:
        messages = await client.fetch(
            args.stream, args.consumer, args.partition, batch_size=args.batch, max_wait_ms=args.wait_ms
        )
        for message in messages:
            _print_message(message, True)
        if args.ack and messages:
            await client.ack_batch(args.stream, args.consumer, args.partition, [m.seq for m in messages])
    return 0


async def _sub(args: argparse.Namespace) -> int:
    async with NodeClient(args.server) as client:
        async for event in client.subscribe(
            args.stream,
            args.consumer,
            partitions=args.partition or (),
            stop_when_empty=args.stop_when_empty,
            deliver_group=args.deliver_group,
        ):
            if event.HasField("stopped"):
                _progress(f"subscription ended: {event.stopped.reason}")
                break
            _print_message(event.message, True)
            if not args.no_ack:
                await client.ack(args.stream, args.consumer, event.message.partition, event.message.seq)
    return 0


async def _changes(args: argparse.Namespace) -> int:
    async with ChangeFeedClient(args.server) as client:
        if not args.follow:
            response = await client.read_changes(args.from_change_seq, args.max)
            for change in response.changes:
                _print_message(change, True)
            return 0
        async for batch in client.tail_changes(args.from_change_seq):
            for change in batch.changes:
                _print_message(change, True)
    return 0


# -- parser ------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="weir", description="Weir command line")
    parser.add_argument("--json", action="store_true", help="one-line JSON output")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="start a node, publish and read a demo workload, stop it")
    demo.add_argument("--messages", type=int, default=20_000)
    demo.add_argument("--payload-bytes", type=int, default=1024)
    demo.add_argument("--data-dir", help="keep the node's data here (default: a temporary directory)")
    demo.set_defaults(handler=_demo)

    def server_option(command: argparse.ArgumentParser, default: str = DEFAULT_SERVER) -> None:
        command.add_argument("--server", default=os.environ.get("WEIR_SERVER", default), help="host:port")

    stream = commands.add_parser("stream", help="stream admin").add_subparsers(dest="stream_command", required=True)
    create = stream.add_parser("create")
    create.add_argument("name")
    create.add_argument("--subjects", nargs="*")
    create.add_argument("--partitions", type=int, default=1)
    create.add_argument("--retention", choices=["limits", "work_queue", "interest"], default="limits")
    create.add_argument("--max-age-ms", type=int)
    create.add_argument("--max-msgs", type=int)
    create.add_argument("--max-bytes", type=int)
    create.add_argument("--max-msgs-per-subject", type=int)
    create.add_argument("--max-msg-bytes", type=int, default=0)
    create.add_argument("--storage", choices=["file", "memory"], default="file")
    create.set_defaults(handler=_stream_create)
    for name, handler in (("info", _stream_info), ("delete", _stream_delete)):
        command = stream.add_parser(name)
        command.add_argument("name")
        command.set_defaults(handler=handler)
        server_option(command)
    listing = stream.add_parser("list")
    listing.set_defaults(handler=_stream_list)
    server_option(listing)
    server_option(create)

    pub = commands.add_parser("pub", help="publish one message")
    pub.add_argument("stream")
    pub.add_argument("subject")
    pub.add_argument("data")
    pub.add_argument("--header", action="append", help="KEY=VALUE (repeatable)")
    pub.add_argument("--key")
    pub.add_argument("--partition", type=int)
    pub.add_argument("--ack", choices=["leader", "none", "all"], default="leader")
    pub.set_defaults(handler=_pub)
    server_option(pub)

    read = commands.add_parser("read", help="print stored messages of one partition")
    read.add_argument("stream")
    read.add_argument("--partition", type=int, default=0)
    read.add_argument("--from-seq", type=int, default=0)
    read.add_argument("--max", type=int, default=100)
    read.set_defaults(handler=_read)
    server_option(read)

    consumer = commands.add_parser("consumer", help="durable consumer admin").add_subparsers(
        dest="consumer_command", required=True
    )
    consumer_create = consumer.add_parser("create")
    consumer_create.add_argument("stream")
    consumer_create.add_argument("name")
    consumer_create.add_argument("--filter-subject", default="")
    consumer_create.add_argument("--deliver-policy", choices=sorted(DELIVER_POLICIES), default="all")
    consumer_create.add_argument("--start-seq", type=int, default=0)
    consumer_create.add_argument("--start-time-ms", type=int, default=0)
    consumer_create.add_argument("--ack-wait-ms", type=int, default=0, help="0 = 30000")
    consumer_create.add_argument("--max-deliver", type=int, default=0, help="0 = 5")
    consumer_create.add_argument("--dead-letter-subject", default="")
    consumer_create.add_argument("--max-ack-pending", type=int, default=0, help="0 = 1000 per partition")
    consumer_create.add_argument("--deliver-group", default="")
    consumer_create.set_defaults(handler=_consumer_create)
    server_option(consumer_create)
    for name, handler in (("info", _consumer_info), ("delete", _consumer_delete)):
        command = consumer.add_parser(name)
        command.add_argument("stream")
        command.add_argument("name")
        command.set_defaults(handler=handler)
        server_option(command)
    consumer_list = consumer.add_parser("list")
    consumer_list.add_argument("stream")
    consumer_list.set_defaults(handler=_consumer_list)
    server_option(consumer_list)

    fetch = commands.add_parser("fetch", help="fetch a batch of one partition for a consumer")
    fetch.add_argument("stream")
    fetch.add_argument("consumer")
    fetch.add_argument("--partition", type=int, default=0)
    fetch.add_argument("--batch", type=int, default=10)
    fetch.add_argument("--wait-ms", type=int, default=0, help="long-poll up to this long when nothing is ready")
    fetch.add_argument("--ack", action="store_true", help="acknowledge what was fetched")
    fetch.set_defaults(handler=_fetch)
    server_option(fetch)

    sub = commands.add_parser("sub", help="push-subscribe; prints and acknowledges messages (Ctrl-C ends)")
    sub.add_argument("stream")
    sub.add_argument("consumer")
    sub.add_argument("--partition", type=int, action="append", help="repeatable; default: every partition")
    sub.add_argument("--stop-when-empty", action="store_true")
    sub.add_argument("--deliver-group", default="")
    sub.add_argument("--no-ack", action="store_true", help="print only; messages are redelivered after ack_wait")
    sub.set_defaults(handler=_sub)
    server_option(sub)

    changes = commands.add_parser("changes", help="print a node's change feed")
    changes.add_argument("--from-change-seq", type=int, default=0)
    changes.add_argument("--max", type=int, default=1000)
    changes.add_argument("--follow", action="store_true", help="keep tailing")
    changes.set_defaults(handler=_changes)
    server_option(changes, DEFAULT_INTERNAL_SERVER)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], Coroutine[Any, Any, int]] = args.handler
    try:
        return asyncio.run(handler(args))
    except WeirError as error:
        print(f"weir: {error.result_code}: {error.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
