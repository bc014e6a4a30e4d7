"""`weir`: the Weir command line.

    weir cluster up|down|status    run the local cluster as processes (redis, 2 routers, 3 nodes)
    weir demo                      bring up a cluster, publish and consume a demo workload, stop it
    weir stream create NAME ...    stream admin (placed by the router)
    weir stream info|list|delete
    weir pub STREAM SUBJECT DATA   publish one message
    weir read STREAM               print stored messages of a partition
    weir consumer create STREAM NAME ...   durable consumer admin
    weir consumer info|list|delete
    weir fetch STREAM CONSUMER     fetch (and with --ack acknowledge) a batch of one partition
    weir sub STREAM CONSUMER       consume as a member of group CONSUMER (cluster), or push-subscribe
                                   (standalone node); prints and acknowledges messages
    weir stats [--analytics]       cluster stats (GetClusterStreamStats: per node, per stream, skew;
                                   --analytics: the spark-analytics figures only)
    weir changes                   print a node's change feed (--server = its internal port)

Target: `--router host:port[,host:port]` (or $WEIR_ROUTER; else the routers of the local cluster
under --data-dir, default ./weir-cluster; else 127.0.0.1:7501). `--server host:port` (or
$WEIR_SERVER) talks to one standalone node instead. Errors print the result code and message and
exit with status 1 (2 for usage errors).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import contextlib
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from weir.client import DELIVER_POLICIES, NodeClient, consumer_config, stream_config
from weir.cluster import WeirClient
from weir.errors import WeirError
from weir.message import Message, PublishAck
from weir_server.internal_clients import ChangeFeedClient

from weir_cli.launcher import LocalCluster, pid_alive, read_cluster_state, stop_pids

DEFAULT_INTERNAL_SERVER = "127.0.0.1:7402"
DEFAULT_ROUTER = "127.0.0.1:7501"
DEFAULT_CLUSTER_DIR = "weir-cluster"


def _cluster_dir(args: argparse.Namespace) -> Path:
    return Path(getattr(args, "data_dir", None) or os.environ.get("WEIR_CLUSTER_DIR") or DEFAULT_CLUSTER_DIR)


def _routers(args: argparse.Namespace) -> list[str]:
    """--router, else $WEIR_ROUTER, else the local cluster's routers, else the default port."""
    given = getattr(args, "router", None) or os.environ.get("WEIR_ROUTER")
    if given:
        return [address.strip() for address in given.split(",") if address.strip()]
    state = read_cluster_state(_cluster_dir(args))
    if state and state.get("routers"):
        return [str(router["address"]) for router in state["routers"]]
    return [DEFAULT_ROUTER]


def _standalone(args: argparse.Namespace) -> str | None:
    server = getattr(args, "server", None) or os.environ.get("WEIR_SERVER")
    return str(server) if server else None


@contextlib.asynccontextmanager
async def _client(args: argparse.Namespace) -> AsyncIterator[Any]:
    """A NodeClient for --server (one standalone node), else a WeirClient on the routers."""
    server = _standalone(args)
    client: Any = NodeClient(server) if server else WeirClient(_routers(args))
    try:
        yield client
    finally:
        await client.close()


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


def _print_delivered(message: Message) -> None:
    """One delivered message as a JSON line (payload as text when it is UTF-8, else base64)."""
    try:
        payload: dict[str, str] = {"payload": message.payload.decode()}
    except UnicodeDecodeError:
        payload = {"payload_base64": base64.b64encode(message.payload).decode()}
    fields = {
        "partition": message.partition,
        "seq": message.seq,
        "subject": message.subject,
        **payload,
        "headers": message.headers,
        "timestamp_ms": message.timestamp_ms,
        "deliver_count": message.deliver_count,
    }
    print(json.dumps(fields))


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- local cluster ----------------------------------------------------------------------------------


async def _cluster_up(args: argparse.Namespace) -> int:
    data_dir = _cluster_dir(args)
    state = read_cluster_state(data_dir)
    if state and _live_pids(state):
        raise SystemExit(f"weir cluster up: a cluster is already running under {data_dir} (weir cluster down first)")
    _progress(f"starting the local cluster under {data_dir} ...")
    cluster = await asyncio.to_thread(
        LocalCluster.start,
        data_dir,
        nodes=args.nodes,
        routers=args.routers,
        replicators=args.replicators,
        analytics=args.analytics,
        die_with_parent=False,  # the processes outlive this command; `weir cluster down` stops them
        progress=_progress,
    )
    summary = cluster.state()
    summary["router_address"] = cluster.router_addresses[0]
    print(json.dumps(summary, indent=None if args.json else 2))
    _progress(f"cluster up: weir --router {','.join(cluster.router_addresses)} ... (or run from this directory)")
    return 0


def _analytics_pids(state: dict[str, Any]) -> list[int]:
    analytics = state.get("analytics")
    return [int(analytics["pid"])] if analytics else []


def _live_pids(state: dict[str, Any]) -> list[int]:
    pids = [int(entry["pid"]) for group in ("replicators", "routers", "nodes") for entry in state.get(group, [])]
    pids += _analytics_pids(state)
    pids.append(int(state.get("redis", {}).get("pid", 0)))
    return [pid for pid in pids if pid_alive(pid)]


async def _cluster_down(args: argparse.Namespace) -> int:
    data_dir = _cluster_dir(args)
    state = read_cluster_state(data_dir)
    if state is None:
        print(json.dumps({"stopped": 0}) if args.json else f"no cluster under {data_dir}")
        return 0
    order = [
        *_analytics_pids(state),
        *(int(entry["pid"]) for entry in state.get("replicators", [])),
        *(int(entry["pid"]) for entry in state.get("routers", [])),
        *(int(entry["pid"]) for entry in state.get("nodes", [])),
    ]
    _progress(f"stopping {len(order)} cluster process(es) (SIGTERM: drain, flush, close) ...")
    killed = await asyncio.to_thread(stop_pids, order)
    redis_pid = int(state.get("redis", {}).get("pid", 0))
    killed += await asyncio.to_thread(stop_pids, [redis_pid])
    (data_dir / "cluster.json").unlink(missing_ok=True)
    result = {"stopped": len(order) + 1, "killed_after_timeout": killed, "data_dir": str(data_dir)}
    print(json.dumps(result) if args.json else f"cluster under {data_dir} stopped (data kept)")
    return 0


async def _cluster_status(args: argparse.Namespace) -> int:
    data_dir = _cluster_dir(args)
    state = read_cluster_state(data_dir)
    summary: dict[str, Any] = {"data_dir": str(data_dir), "local_processes": None}
    if state is not None:
        summary["local_processes"] = {
            "redis": {"url": state["redis"]["url"], "running": pid_alive(int(state["redis"]["pid"]))},
            "routers": {r["router_id"]: pid_alive(int(r["pid"])) for r in state.get("routers", [])},
            "nodes": {n["node_id"]: pid_alive(int(n["pid"])) for n in state.get("nodes", [])},
            "replicators": {r["replicator_id"]: pid_alive(int(r["pid"])) for r in state.get("replicators", [])},
        }
        if state.get("analytics"):
            summary["local_processes"]["analytics"] = pid_alive(int(state["analytics"]["pid"]))
    routers = _routers(args)
    summary["router_address"] = routers[0]
    async with WeirClient(routers, retry_timeout_s=3.0, timeout_s=5.0) as client:
        info = await client.cluster_info()
        streams = await client.list_streams()
    summary["controller"] = info.controller_id
    summary["nodes"] = [
        {"node_id": node.node_id, "alive": node.alive, "client_address": node.client_address} for node in info.nodes
    ]
    summary["streams"] = streams
    print(json.dumps(summary, indent=None if args.json else 2))
    return 0 if all(node.alive for node in info.nodes) else 1


async def _stats(args: argparse.Namespace) -> int:
    async with WeirClient(_routers(args)) as client:
        stats = await client.cluster_stats(include_per_stream=not args.nodes_only)
    if args.analytics:
        if not stats.HasField("analytics"):
            print(
                "no analytics figures yet: start the job (weir cluster up --analytics, or the spark-analytics "
                "service) and let it finish a micro-batch",
                file=sys.stderr,
            )
            return 1
        _print_message(stats.analytics, args.json)
        return 0
    _print_message(stats, args.json)
    return 0


# -- demo -----------------------------------------------------------------------------------------


async def _demo(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="weir-demo-") as temporary:
        root = Path(args.data_dir) if args.data_dir else Path(temporary)
        _progress(f"starting a local cluster: redis, 2 routers, 3 partition nodes (data under {root}) ...")
        # Started from this (long-lived) thread: the processes die with us if we are killed.
        cluster = LocalCluster.start(root, progress=_progress)
        try:
            summary = await _demo_workload(cluster.router_addresses, args.messages, args.payload_bytes)
            summary["cluster"] = {
                "router_addresses": cluster.router_addresses,
                "redis": cluster.redis.url,
                "nodes": {node.name: node.client_address for node in cluster.nodes},
                "peak_rss_mib": {
                    handle.name: round(handle.peak_rss_bytes() / 2**20, 1)
                    for handle in (*cluster.routers, *cluster.nodes)
                },
            }
        finally:
            _progress("stopping the cluster (SIGTERM: drain, flush, close) ...")
            await asyncio.to_thread(cluster.stop)
        print(json.dumps(summary, indent=None if args.json else 2))
        return 0 if summary["verified"] else 1


async def _demo_workload(routers: list[str], messages: int, payload_bytes: int) -> dict[str, Any]:
    """Through the SDK: a 16-partition stream, a 3-member consumer group that balances first, then
    keyed publishes consumed as they arrive; every message is checked by digest."""
    partitions = 16
    async with WeirClient(routers) as client:
        await client.create_stream(stream_config("demo", subjects=["demo.>"], partitions=partitions))
        route = await client.route("demo")
        primaries = collections.Counter(entry.primary.node_id for entry in route.partitions)
        _progress(f"created stream 'demo' with {partitions} partitions (primaries per node: {dict(primaries)})")
        digests: dict[tuple[int, int], str] = {}
        seen: dict[tuple[int, int], int] = collections.Counter()
        received: dict[tuple[int, int], str] = {}
        all_seen = asyncio.Event()

        async def handle(message: Message) -> None:
            seen[(message.partition, message.seq)] += 1
            received[(message.partition, message.seq)] = hashlib.sha256(message.payload).hexdigest()
            if len(seen) >= messages:
                all_seen.set()

        _progress("starting a consumer group of 3 members (QueryAssignment + Fetch + AckBatch) ...")
        members = [
            client.group_consumer("demo", "demo-workers", handle, client_id=f"member-{i}").start() for i in range(3)
        ]
        balanced_by = time.monotonic() + 30
        while time.monotonic() < balanced_by and not (  # noqa: ASYNC110 (the members' view of the router)
            all(member.assigned for member in members) and sum(len(member.assigned) for member in members) == partitions
        ):
            await asyncio.sleep(0.1)
        assignment = {member.client_id: list(member.assigned) for member in members}
        _progress(f"group balanced: {[len(partitions) for partitions in assignment.values()]} partitions per member")
        _progress(f"publishing {messages} messages through the SDK (keyed, batched) while the group consumes ...")
        started = time.perf_counter()
        step = 2000
        for offset in range(0, messages, step):
            count = min(step, messages - offset)
            payloads = [index.to_bytes(8, "big") * (payload_bytes // 8) for index in range(offset, offset + count)]
            futures = [
                await client.publish_nowait("demo", f"demo.user.{index % 10}", payload, key=f"user-{index}".encode())
                for index, payload in zip(range(offset, offset + count), payloads, strict=True)
            ]
            for payload, ack in zip(payloads, await asyncio.gather(*futures), strict=True):
                digests[(ack.partition, ack.seq)] = hashlib.sha256(payload).hexdigest()
            _progress(f"  published {offset + count}/{messages}, consumed {len(seen)}")
        publish_s = time.perf_counter() - started
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_seen.wait(), 120)
        end_to_end_s = time.perf_counter() - started
        for member in members:
            await member.stop()
        mismatches = sum(1 for key, digest in received.items() if digests.get(key) != digest)
        _progress(f"consumed {len(seen)} distinct messages ({sum(seen.values())} deliveries), {mismatches} mismatches")
        consumer = await client.consumer_info("demo", "demo-workers")
        stats = await client.cluster_stats(include_per_stream=False)
        return {
            "stream": "demo",
            "partitions": partitions,
            "published": len(digests),
            "consumed": len(seen),
            "redelivered": sum(seen.values()) - len(seen),
            "verified": len(digests) == messages
            and len(seen) == messages
            and mismatches == 0
            and consumer.num_ack_pending == 0,
            "publish_msgs_per_s": round(messages / publish_s),
            "publish_and_consume_msgs_per_s": round(len(seen) / end_to_end_s) if end_to_end_s else None,
            "group_assignment": assignment,
            "primaries_per_node": dict(primaries),
            "messages_per_node": {node.node_id: node.total_msg_count for node in stats.nodes},
            "skew_msg_count": stats.skew_msg_count,
        }


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
        replicas=args.replicas,
        min_insync_replicas=args.min_insync_replicas,
        deliver_up_to_high_watermark=args.deliver_up_to_high_watermark,
        duplicate_window_ms=args.duplicate_window_ms,
        duplicate_window_max_msgs=args.duplicate_window_max_msgs,
    )
    async with _client(args) as client:
        _print_message(await client.create_stream(config), args.json)
    return 0


async def _stream_info(args: argparse.Namespace) -> int:
    async with _client(args) as client:
        _print_message(await client.stream_info(args.name), args.json)
    return 0


async def _stream_list(args: argparse.Namespace) -> int:
    async with _client(args) as client:
        names = await client.list_streams()
    print(json.dumps(names) if args.json else "\n".join(names))
    return 0


async def _stream_delete(args: argparse.Namespace) -> int:
    async with _client(args) as client:
        await client.delete_stream(args.name)
    print(json.dumps({"deleted": args.name}) if args.json else f"deleted {args.name}")
    return 0


async def _pub(args: argparse.Namespace) -> int:
    headers = [tuple(item.split("=", 1)) for item in args.header or ()]
    if any(len(pair) != 2 for pair in headers):
        raise SystemExit("weir pub: --header takes KEY=VALUE")
    async with _client(args) as client:
        ack = await client.publish(
            args.stream,
            args.subject,
            args.data.encode(),
            headers=[(key, value) for key, value in headers],
            key=args.key.encode() if args.key is not None else None,
            partition=args.partition,
            ack_level=args.ack,
            msg_id=args.msg_id if isinstance(client, WeirClient) else args.msg_id or "",
        )
    if isinstance(ack, PublishAck):
        print(json.dumps({"partition": ack.partition, "seq": ack.seq, "duplicate": ack.duplicate}))
    else:
        _print_message(ack, args.json)
    return 0


async def _read(args: argparse.Namespace) -> int:
    async with _client(args) as client:
        if isinstance(client, WeirClient):
            response = await client.on_leader(
                args.stream,
                args.partition,
                lambda node: node.read_messages(args.stream, args.partition, args.from_seq, max_messages=args.max),
            )
        else:
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
    async with _client(args) as client:
        _print_message(await client.create_consumer(args.stream, config), args.json)
    return 0


async def _consumer_info(args: argparse.Namespace) -> int:
    async with _client(args) as client:
        _print_message(await client.consumer_info(args.stream, args.name), args.json)
    return 0


async def _consumer_list(args: argparse.Namespace) -> int:
    async with _client(args) as client:
        infos = await client.list_consumers(args.stream)
    names = [info.config.name for info in infos]
    print(json.dumps(names) if args.json else "\n".join(names))
    return 0


async def _consumer_delete(args: argparse.Namespace) -> int:
    async with _client(args) as client:
        await client.delete_consumer(args.stream, args.name)
    print(json.dumps({"deleted": args.name}) if args.json else f"deleted consumer {args.name}")
    return 0


async def _fetch(args: argparse.Namespace) -> int:
    async with _client(args) as client:
        messages = await client.fetch(
            args.stream, args.consumer, args.partition, batch_size=args.batch, max_wait_ms=args.wait_ms
        )
        for message in messages:
            _print_message(message, True)
        if args.ack and messages:
            await client.ack_batch(args.stream, args.consumer, args.partition, [m.seq for m in messages])
    return 0


async def _sub(args: argparse.Namespace) -> int:
    if not _standalone(args):
        return await _sub_group(args)
    async with _client(args) as client:
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


async def _sub_group(args: argparse.Namespace) -> int:
    """In a cluster: join consumer group CONSUMER (its durable consumer) and print what arrives."""
    async with WeirClient(_routers(args)) as client:
        idle_since = time.monotonic()

        async def handle(message: Message) -> None:
            nonlocal idle_since
            idle_since = time.monotonic()
            _print_delivered(message)
            if args.no_ack:
                raise RuntimeError("--no-ack: left for redelivery")

        member = client.group_consumer(args.stream, args.consumer, handle).start()
        _progress(f"joined group {args.consumer!r} as {member.client_id} (Ctrl-C leaves)")
        try:
            while True:
                await asyncio.sleep(0.2)
                if args.stop_when_empty and member.assigned and time.monotonic() - idle_since > 2.0:
                    break
        finally:
            await member.stop()
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

    demo = commands.add_parser("demo", help="bring up a local cluster, publish and consume a demo workload, stop it")
    demo.add_argument("--messages", type=int, default=20_000)
    demo.add_argument("--payload-bytes", type=int, default=1024)
    demo.add_argument("--data-dir", help="keep the cluster's data here (default: a temporary directory)")
    demo.set_defaults(handler=_demo)

    commands.add_parser(
        "bench",
        help="benchmarks side by side with NATS JetStream and Redis Streams (from a source checkout; "
        "'weir bench --help' lists its flags)",
        add_help=False,
    )
    cluster = commands.add_parser("cluster", help="the local cluster as processes").add_subparsers(
        dest="cluster_command", required=True
    )
    cluster_up = cluster.add_parser(
        "up", help="start redis-server, routers, partition nodes and replicators; returns once serving"
    )
    cluster_up.add_argument("--nodes", type=int, default=3)
    cluster_up.add_argument("--routers", type=int, default=2)
    cluster_up.add_argument("--replicators", type=int, default=1)
    cluster_up.add_argument(
        "--analytics",
        action="store_true",
        help="also start the spark-analytics job (needs Java 17+; takes 15-30 s more); `weir stats` shows its figures",
    )
    cluster_up.set_defaults(handler=_cluster_up)
    cluster_down = cluster.add_parser("down", help="stop every process of the local cluster (data is kept)")
    cluster_down.set_defaults(handler=_cluster_down)
    cluster_status = cluster.add_parser("status", help="processes, node liveness, controller, streams")
    cluster_status.set_defaults(handler=_cluster_status)
    for command in (cluster_up, cluster_down, cluster_status):
        command.add_argument("--data-dir", help=f"cluster data and cluster.json (default: ./{DEFAULT_CLUSTER_DIR})")
    cluster_status.add_argument("--router", help="host:port[,host:port] (default: the local cluster's)")

    def server_option(command: argparse.ArgumentParser, default: str | None = None) -> None:
        """Where a command goes: the routers (default) or one standalone node (--server)."""
        command.add_argument(
            "--server", default=default, help="a standalone node's host:port (default $WEIR_SERVER; else the routers)"
        )
        if default is None:
            command.add_argument("--router", help="router host:port[,host:port] (default $WEIR_ROUTER)")
            command.add_argument("--data-dir", help=f"find the routers in this local cluster (./{DEFAULT_CLUSTER_DIR})")

    stats = commands.add_parser("stats", help="cluster stats: per node, per stream, skew")
    stats.add_argument("--nodes-only", action="store_true")
    stats.add_argument(
        "--analytics",
        action="store_true",
        help="only the spark-analytics figures (rates, consumer lag, replication lag, node skew)",
    )
    stats.add_argument("--router", help="router host:port[,host:port]")
    stats.add_argument("--data-dir")
    stats.set_defaults(handler=_stats)

    stream = commands.add_parser("stream", help="stream admin").add_subparsers(dest="stream_command", required=True)
    create = stream.add_parser("create")
    create.add_argument("name")
    create.add_argument("--subjects", nargs="*")
    create.add_argument("--partitions", type=int, default=1)
    create.add_argument("--replicas", type=int, default=1, help="copies on distinct nodes (cluster only)")
    create.add_argument(
        "--min-insync-replicas", type=int, default=0, help="in-sync copies ack_level all needs (0 = min(2, replicas))"
    )
    create.add_argument(
        "--deliver-up-to-high-watermark",
        action="store_true",
        help="deliver to consumers only what every in-sync replica holds",
    )
    create.add_argument("--retention", choices=["limits", "work_queue", "interest"], default="limits")
    create.add_argument("--max-age-ms", type=int)
    create.add_argument("--max-msgs", type=int)
    create.add_argument("--max-bytes", type=int)
    create.add_argument("--max-msgs-per-subject", type=int)
    create.add_argument("--max-msg-bytes", type=int, default=0)
    create.add_argument(
        "--duplicate-window-ms",
        type=int,
        default=0,
        help="how long a msg_id is remembered (idempotent publish; 0 = 2 minutes, or max_age_ms when shorter)",
    )
    create.add_argument(
        "--duplicate-window-max-msgs",
        type=int,
        default=0,
        help="most msg_ids a partition remembers (0 = 100,000)",
    )
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
    pub.add_argument(
        "--msg-id",
        help="idempotence key: a second publish with it within the duplicate window stores nothing and "
        "answers the first one's seq (default through routers: a generated one)",
    )
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
    server_option(changes, os.environ.get("WEIR_SERVER", DEFAULT_INTERNAL_SERVER))
    return parser


def _bench(argv: list[str]) -> int:
    """`weir bench ...`: the comparison harness (bench/compare in a Weir source checkout), found from
    the current directory upwards; its flags are `python -m bench.compare`'s."""
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


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    if arguments[:1] == ["bench"]:
        return _bench(arguments[1:])
    args = _parser().parse_args(arguments)
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
