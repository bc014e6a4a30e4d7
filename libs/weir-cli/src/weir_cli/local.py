"""`weir cluster up|down|status`, `weir demo`, `weir stats` and `weir changes`: the local cluster as
processes, the demo workload, cluster stats and a node's change feed."""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import hashlib
import json
import os
import secrets
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
from weir import tls as weir_tls
from weir.client import consumer_config, stream_config
from weir.cluster import Client
from weir.consuming import GroupConsumer
from weir.errors import PermissionDeniedError, UnauthenticatedError
from weir.message import Message
from weir.tls import ChannelSecurity
from weir_server import auth
from weir_server.internal_clients import ChangeFeedClient

from weir_cli.cli_error import CliError
from weir_cli.invoker_demo import invoker_round_trip
from weir_cli.kv_demo import collections_round_trip, kv_round_trip, objects_round_trip
from weir_cli.launcher import LocalCluster, add_node_to_running, pid_alive, read_cluster_state, stop_pids
from weir_cli.numaflow_demo import numaflow_round_trip
from weir_cli.output import emit, progress, proto_dict, table
from weir_cli.process_basics import LaunchError
from weir_cli.rocketmq_demo import TOPIC as ROCKETMQ_TOPIC
from weir_cli.rocketmq_demo import rocketmq_round_trip
from weir_cli.sources_demo import sources_round_trip
from weir_cli.target import cluster_client, cluster_dir, find_routers, remember_cluster
from weir_cli.waymaker_demo import waymaker_round_trip

_PROCESS_GROUPS = ("invokers", "gateways", "replicators", "routers", "nodes")
DEMO_STREAM = "demo"


def _start_cluster(data_dir: Path, **options: Any) -> LocalCluster:
    """`LocalCluster.start(data_dir, **options)`; a process that does not come up (no redis-server,
    a node that exits) is the CLI's error (`weir: ...`, status 1), not a traceback."""
    try:
        return LocalCluster.start(data_dir, **options)
    except LaunchError as error:
        raise CliError(f"could not start the local cluster: {error}") from error


async def new_token(args: argparse.Namespace) -> int:
    """A random bearer token (256 bits) and its sha-256, the only form an auth file keeps."""
    token = secrets.token_urlsafe(32)
    made: dict[str, Any] = {"token": token, "token_sha256": auth.token_hash(token)}
    if args.user:
        made["user"] = {"name": args.user, "token_sha256": made["token_sha256"], "allow": []}
    human = [
        f"token:        {token}",
        f"token_sha256: {made['token_sha256']}",
        "give the token to the client ($WEIR_TOKEN, --token-file, Client(tls=ChannelSecurity(token=...)));",
        "put only token_sha256 in the auth file",
    ]
    if args.user:
        human.append(f"auth file entry (add its grants to allow): {json.dumps(made['user'])}")
    emit(made, args.json, "\n".join(human))
    return 0


async def cluster_up(args: argparse.Namespace) -> int:
    data_dir = cluster_dir(args)
    if args.auth_file:
        try:
            auth.parse_auth_file(await asyncio.to_thread(Path(args.auth_file).read_text))
        except (OSError, auth.AuthFileError) as error:
            raise CliError(f"weir cluster up: --auth-file {args.auth_file}: {error}", status=2) from None
    state = read_cluster_state(data_dir)
    if state and _live_pids(state):
        raise CliError(f"weir cluster up: a cluster is already running under {data_dir} (weir cluster down first)")
    progress(f"starting the local cluster under {data_dir} ...")
    cluster = await asyncio.to_thread(
        _start_cluster,
        data_dir,
        nodes=args.nodes,
        routers=args.routers,
        replicators=args.replicators,
        gateways=args.gateways,
        gateway_env={"WEIR_GATEWAY_WORKERS": str(args.gateway_workers)},
        # one invoker unless the parser gives `--invokers N` (it has no such flag yet)
        invokers=args.invokers,
        analytics=args.analytics,
        tls=args.tls or bool(args.auth_file),
        auth_file=Path(args.auth_file) if args.auth_file else None,
        ha=args.ha,
        die_with_parent=False,  # the processes outlive this command; `weir cluster down` stops them
        progress=progress,
        stable_ports=True,  # the ports of its last start, else the well-known ones (weir_cli.ports)
    )
    remember_cluster(data_dir)
    summary = cluster.state()
    summary["router_address"] = cluster.router_addresses[0]
    routers = ",".join(cluster.router_addresses)
    human = "\n".join(
        [
            f"cluster up under {data_dir}: routers {routers}",
            *(f"  {node.name}: {node.client_address}" for node in cluster.nodes),
            *(f"  {gateway.name}: {gateway.doors}" for gateway in cluster.gateways),
            *(f"  {invoker.name}: weir.v1.Invoker at {invoker.address}" for invoker in cluster.invokers),
            "commands find it from this directory, or anywhere as the last cluster started; elsewhere:",
            f"  weir stream list --router {routers}{_elsewhere_security(summary)}",
        ]
    )
    emit(summary, args.json, human)
    return 0


def _elsewhere_security(state: dict[str, Any]) -> str:
    """The client flags a command run elsewhere needs for this cluster: its CA and client
    certificate when it serves TLS ("" for plaintext)."""
    tls = state.get("tls")
    if not isinstance(tls, dict):
        return ""
    return f" --tls-ca {tls['ca_file']} --tls-cert {tls['cert_file']} --tls-key {tls['key_file']}"


def _pids(state: dict[str, Any], groups: tuple[str, ...] = _PROCESS_GROUPS) -> list[int]:
    pids = [int(entry["pid"]) for group in groups for entry in state.get(group, []) or []]
    analytics = state.get("analytics")
    return ([int(analytics["pid"])] if analytics else []) + pids


def _metadata_pids(state: dict[str, Any]) -> list[int]:
    """The metadata store's processes, in stopping order: with `--ha` the sentinels and the
    replicas, then the Redis primary."""
    extra = [int(entry["pid"]) for entry in state.get("metadata_processes", []) or []]
    return [*extra, int(state.get("redis", {}).get("pid", 0))]


def _live_pids(state: dict[str, Any]) -> list[int]:
    pids = [*_pids(state), *_metadata_pids(state)]
    return [pid for pid in pids if pid_alive(pid)]


async def cluster_add_node(args: argparse.Namespace) -> int:
    """Start one more partition node in the running local cluster; it holds nothing until streams
    are created or moved onto it (`weir cluster rebalance`)."""
    data_dir = cluster_dir(args, running=True)
    try:
        node = await asyncio.to_thread(add_node_to_running, data_dir)
    except LaunchError as error:
        raise CliError(f"weir cluster add-node: {error}") from None
    emit(
        {"node_id": node.name, "client_address": node.client_address, "internal_address": node.internal_address},
        args.json,
        f"{node.name} serving at {node.client_address}; `weir cluster rebalance` moves its share of copies onto it",
    )
    return 0


async def cluster_down(args: argparse.Namespace) -> int:
    data_dir = cluster_dir(args, running=True)
    state = read_cluster_state(data_dir)
    if state is None:
        emit({"stopped": 0}, args.json, f"no cluster under {data_dir}")
        return 0
    order = _pids(state)  # analytics, invokers, gateways, replicators, routers, nodes; Redis last
    progress(f"stopping {len(order)} cluster process(es) (SIGTERM: drain, flush, close) ...")
    killed = await asyncio.to_thread(stop_pids, order)
    metadata = _metadata_pids(state)
    killed += await asyncio.to_thread(stop_pids, metadata)
    (data_dir / "cluster.json").unlink(missing_ok=True)
    result = {"stopped": len(order) + len(metadata), "killed_after_timeout": killed, "data_dir": str(data_dir)}
    emit(result, args.json, f"cluster under {data_dir} stopped (data kept)")
    return 0


async def cluster_status(args: argparse.Namespace) -> int:
    data_dir = cluster_dir(args, running=True)
    state = read_cluster_state(data_dir)
    summary: dict[str, Any] = {"data_dir": str(data_dir), "local_processes": None}
    if state is not None:
        summary["local_processes"] = {
            "redis": {
                "url": state["redis"]["url"],
                "password_file": state["redis"].get("password_file"),
                "running": pid_alive(int(state["redis"]["pid"])),
            },
            "routers": {r["router_id"]: pid_alive(int(r["pid"])) for r in state.get("routers", [])},
            "nodes": {n["node_id"]: pid_alive(int(n["pid"])) for n in state.get("nodes", [])},
            "replicators": {r["replicator_id"]: pid_alive(int(r["pid"])) for r in state.get("replicators", [])},
            "gateways": {g["gateway_id"]: pid_alive(int(g["pid"])) for g in state.get("gateways", []) or []},
            "invokers": {i["invoker_id"]: pid_alive(int(i["pid"])) for i in state.get("invokers", []) or []},
        }
        if state.get("analytics"):
            summary["local_processes"]["analytics"] = pid_alive(int(state["analytics"]["pid"]))
    summary["router_address"] = find_routers(args).addresses[0]
    try:
        async with cluster_client(args) as client:
            info = await client.cluster_info()
            streams = await client.list_streams()
    except CliError as error:  # the cluster does not answer: still say which local processes run
        if summary["local_processes"] is None:
            raise
        emit({**summary, "error": str(error)}, args.json, _local_processes(summary["local_processes"]))
        raise
    summary["controller"] = info.controller_id
    summary["nodes"] = [
        {"node_id": node.node_id, "alive": node.alive, "client_address": node.client_address} for node in info.nodes
    ]
    summary["streams"] = streams
    rows = [(node.node_id, "alive" if node.alive else "DEAD", node.client_address) for node in info.nodes]
    human = "\n".join(
        [f"controller {info.controller_id}; {len(streams)} stream(s)", table(["node", "state", "address"], rows)]
    )
    emit(summary, args.json, human)
    return 0 if all(node.alive for node in info.nodes) else 1


def _local_processes(processes: dict[str, Any]) -> str:
    """`local processes: redis up, router-1 DOWN, ...`."""
    states = [("redis", processes["redis"]["running"])]
    for group in ("routers", "nodes", "replicators", "gateways", "invokers"):
        states += list(processes.get(group, {}).items())
    return "local processes: " + ", ".join(f"{name} {'up' if up else 'DOWN'}" for name, up in states)


async def stats(args: argparse.Namespace) -> int:
    async with cluster_client(args) as client:
        figures = await client.cluster_stats(include_per_stream=not args.nodes_only)
    if args.analytics:
        if figures.analytics is None:
            raise CliError(
                "no analytics figures yet: start the job (weir cluster up --analytics, or the spark-analytics "
                "service) and let it finish a micro-batch"
            )
        emit(figures.analytics, args.json)
        return 0
    rows = [(node.node_id, node.status, node.partition_count, node.total_msg_count) for node in figures.nodes]
    human = "\n".join(
        [
            f"{figures.total_stream_count} stream(s), {figures.total_msg_count} message(s); "
            f"skew {figures.skew_msg_count} message(s), {figures.skew_partitions} primaries",
            table(["node", "status", "primaries", "messages"], rows),
        ]
    )
    emit(figures, args.json, human)
    return 0


async def demo(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="weir-demo-") as temporary:
        root = Path(args.data_dir) if args.data_dir else Path(temporary)
        progress(f"starting a local cluster: redis, 2 routers, 3 partition nodes (data under {root}) ...")
        # Started from this (long-lived) thread: the processes die with us if we are killed.
        # TLS on every port and mutual TLS between the services (a development CA under the data
        # directory), and an auth file: this process's clients use the cluster's CA, its client
        # certificate and the demo user's token.
        root.mkdir(parents=True, exist_ok=True)
        demo_token, reader_token = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        auth_file = _demo_auth_file(root, demo_token, reader_token)
        cluster = _start_cluster(root, gateways=1, progress=progress, tls=True, auth_file=auth_file)
        security = cluster.client_security()
        assert security is not None
        weir_tls.set_default(replace(security, token=demo_token))
        try:
            summary = await _demo_workload(cluster.router_addresses, args.messages, args.payload_bytes)
            summary["security"] = await _security_checks(
                cluster.router_addresses, security, reader_token, cluster.gateways[0].kafka_pixy_address
            )
            async with Client(cluster.router_addresses) as client:
                await client.create_stream(stream_config("demo-pixy", partitions=4))
            summary["kafka_pixy"] = await _kafka_pixy_round_trip(cluster.gateways[0].kafka_pixy_address)
            summary["delayed"] = await _delayed_round_trip(cluster.router_addresses)
            summary["sources"] = await sources_round_trip(cluster.router_addresses)
            async with Client(cluster.router_addresses) as client:
                config = stream_config(ROCKETMQ_TOPIC, partitions=2, allow_scheduled_messages=True)
                await client.create_stream(config)
            summary["rocketmq"] = await rocketmq_round_trip(cluster.gateways[0].rocketmq_address)
            summary["numaflow"] = await numaflow_round_trip(cluster)
            summary["waymaker_streams"] = await waymaker_round_trip(cluster.gateways[0].waymaker_streams_address)
            summary["key_value"] = await kv_round_trip(cluster.router_addresses[0])
            summary["collections"] = await collections_round_trip(cluster.router_addresses[0])
            summary["objects"] = await objects_round_trip(cluster.router_addresses[0])
            summary["invoker"] = await invoker_round_trip(cluster, root / "invoker-demo")
            parts = (
                "security",
                "kafka_pixy",
                "delayed",
                "sources",
                "rocketmq",
                "numaflow",
                "waymaker_streams",
                "key_value",
                "collections",
                "objects",
                "invoker",
            )
            summary["verified"] = all(summary[part]["verified"] for part in parts) and bool(summary["verified"])
            summary["cluster"] = {
                "router_addresses": cluster.router_addresses,
                "redis": cluster.redis.address,
                "nodes": {node.name: node.client_address for node in cluster.nodes},
                "peak_rss_mib": {
                    handle.name: round(handle.peak_rss_bytes() / 2**20, 1)
                    for handle in (*cluster.routers, *cluster.nodes)
                },
            }
        finally:
            progress("stopping the cluster (SIGTERM: drain, flush, close) ...")
            await asyncio.to_thread(cluster.stop)
        print(json.dumps(summary, indent=None if args.json else 2))
        return 0 if summary["verified"] else 1


def _demo_auth_file(root: Path, demo_token: str, reader_token: str) -> Path:
    """The demo's auth file: user "demo" may do everything on every stream, "reader" only read."""
    users = [
        {
            "name": "demo",
            "token_sha256": auth.token_hash(demo_token),
            "allow": [{"actions": list(auth.ACTIONS), "streams": ["*"]}],
        },
        {
            "name": "reader",
            "token_sha256": auth.token_hash(reader_token),
            "allow": [{"actions": ["read"], "streams": ["*"]}],
        },
    ]
    path = root / "auth.json"
    path.write_text(json.dumps({"users": users}))
    return path


async def _security_checks(
    routers: list[str], security: ChannelSecurity, reader_token: str, kafka_pixy: str
) -> dict[str, Any]:
    """TLS with tokens: a caller without a token is refused (UNAUTHENTICATED), at a router and at
    the gateway's kafka-pixy front door; the read-only user reads the demo stream and is refused a
    publish (PERMISSION_DENIED), which stores nothing."""
    progress("checking access: no token (router, gateway), and a read-only user's publish ...")
    refusals: dict[str, str] = {}
    refusals["gateway_no_token"] = await _kafka_pixy_produce_status(kafka_pixy, security)
    async with Client(routers, tls=security, timeout_s=5, retry_timeout_s=5) as anonymous:
        try:
            await anonymous.list_streams()
        except UnauthenticatedError as error:
            refusals["no_token"] = error.result_code.value
    async with Client(routers, tls=replace(security, token=reader_token)) as reader:
        before = await reader.stream_info(DEMO_STREAM)
        try:
            await reader.publish(DEMO_STREAM, "demo.intruder", b"refused")
        except PermissionDeniedError as error:
            refusals["reader_publish"] = error.result_code.value
        after = await reader.stream_info(DEMO_STREAM)
    unchanged = sum(p.msg_count for p in after.partitions) == sum(p.msg_count for p in before.partitions)
    expected = {
        "gateway_no_token": "UNAUTHENTICATED",
        "no_token": "unauthenticated",
        "reader_publish": "permission_denied",
    }
    verified = refusals == expected and unchanged
    return {"tls": True, "auth_file": True, "refusals": refusals, "nothing_stored": unchanged, "verified": verified}


async def _kafka_pixy_produce_status(address: str, security: ChannelSecurity) -> str:
    """The gRPC status of a kafka-pixy Produce sent with `security` (its token, or none)."""
    from weir_gateway.kafka_pixy.pb import kafkapixy_pb2, kafkapixy_pb2_grpc

    async with weir_tls.aio_channel(address, security=security) as channel:
        stub = kafkapixy_pb2_grpc.KafkaPixyStub(channel)
        try:
            await stub.Produce(kafkapixy_pb2.ProdRq(topic=DEMO_STREAM, message=b"refused"), timeout=10)
        except grpc.aio.AioRpcError as error:
            return str(error.code().name)
    return "OK"


async def _delayed_round_trip(routers: list[str]) -> dict[str, Any]:
    """Delayed and held messages on a replicas-3 stream (ack all): three delays and a held message
    released after them; each must arrive once, no earlier than its time, in due order."""
    delays_ms = [900, 300, 600]
    async with Client(routers) as client:
        await client.create_stream(stream_config("demo-delayed", replicas=3, allow_scheduled_messages=True))
        await client.create_consumer("demo-delayed", consumer_config("demo"))
        progress(f"publishing messages delayed by {delays_ms} ms and one held message (replicas 3, ack all) ...")
        sent_ms = time.time_ns() // 1_000_000
        for delay_ms in delays_ms:  # due at one reference time + delay (delay_ms would count from each store)
            payload = b"%d" % delay_ms
            await client.publish("demo-delayed", "reminder", payload, deliver_at_ms=sent_ms + delay_ms, ack_level="all")
        held = await client.publish("demo-delayed", "reminder", b"held", hold=True, ack_level="all")
        arrivals: list[tuple[bytes, int]] = []
        deadline = time.monotonic() + 30
        while len(arrivals) < len(delays_ms) + 1 and time.monotonic() < deadline:
            if len(arrivals) == len(delays_ms):
                await client.release_scheduled("demo-delayed", held.partition, held.seq)
            for message in await client.fetch("demo-delayed", "demo", 0, batch_size=10, max_wait_ms=200):
                arrivals.append((message.payload, time.time_ns() // 1_000_000 - sent_ms))
                await client.ack_batch("demo-delayed", "demo", 0, [message.seq])
    expected = [b"%d" % delay for delay in sorted(delays_ms)] + [b"held"]
    on_time = all(elapsed >= int(payload) for payload, elapsed in arrivals if payload != b"held")
    verified = [payload for payload, _ in arrivals] == expected and on_time
    progress(
        f"delayed messages arrived after {[elapsed for _, elapsed in arrivals]} ms (due {sorted(delays_ms)}, then held)"
    )
    return {"arrived_after_ms": {payload.decode(): elapsed for payload, elapsed in arrivals}, "verified": verified}


async def _await_balanced(members: list[GroupConsumer], partitions: int, *, timeout_s: float) -> dict[str, list[int]]:
    """Wait (at most `timeout_s`) until every member holds partitions and together they hold all
    `partitions`; {client_id: its partitions} as they stand then."""
    balanced_by = time.monotonic() + timeout_s
    while time.monotonic() < balanced_by and not (  # noqa: ASYNC110 (the members' view of the router)
        all(member.assigned for member in members) and sum(len(member.assigned) for member in members) == partitions
    ):
        await asyncio.sleep(0.1)
    return {member.client_id: list(member.assigned) for member in members}


async def _demo_workload(routers: list[str], messages: int, payload_bytes: int) -> dict[str, Any]:
    """Through the SDK: a 16-partition stream, a 3-member consumer group that balances first, then
    keyed publishes consumed as they arrive; every message is checked by digest."""
    partitions = 16
    async with Client(routers) as client:
        await client.create_stream(stream_config(DEMO_STREAM, subjects=["demo.>"], partitions=partitions))
        route = await client.route(DEMO_STREAM)
        primaries = collections.Counter(entry.primary.node_id for entry in route.partitions)
        progress(f"created stream 'demo' with {partitions} partitions (primaries per node: {dict(primaries)})")
        digests: dict[tuple[int, int], str] = {}
        seen: dict[tuple[int, int], int] = collections.Counter()
        received: dict[tuple[int, int], str] = {}
        all_seen = asyncio.Event()

        async def handle(message: Message) -> None:
            seen[(message.partition, message.seq)] += 1
            received[(message.partition, message.seq)] = hashlib.sha256(message.payload).hexdigest()
            if len(seen) >= messages:
                all_seen.set()

        progress("starting a consumer group of 3 members (QueryAssignment + Fetch + AckBatch) ...")
        members = [
            client.group_consumer("demo", "demo-workers", handle, client_id=f"member-{i}").start() for i in range(3)
        ]
        assignment = await _await_balanced(members, partitions, timeout_s=30)
        progress(f"group balanced: {[len(partitions) for partitions in assignment.values()]} partitions per member")
        progress(f"publishing {messages} messages through the SDK (keyed, batched) while the group consumes ...")
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
            progress(f"  published {offset + count}/{messages}, consumed {len(seen)}")
        publish_s = time.perf_counter() - started
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(all_seen.wait(), 120)
        end_to_end_s = time.perf_counter() - started
        for member in members:
            await member.stop()
        mismatches = sum(1 for key, digest in received.items() if digests.get(key) != digest)
        progress(f"consumed {len(seen)} distinct messages ({sum(seen.values())} deliveries), {mismatches} mismatches")
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


async def _kafka_pixy_round_trip(address: str, messages: int = 100) -> dict[str, Any]:
    """Through the gateway's kafka-pixy API, as a kafka-pixy client would: Produce keyed messages to
    topic demo-pixy, then a consume-n-ack loop until each came back."""
    import grpc
    from weir_gateway.kafka_pixy.pb import kafkapixy_pb2 as pb
    from weir_gateway.kafka_pixy.pb import kafkapixy_pb2_grpc as pb_grpc

    progress(f"kafka-pixy through the gateway at {address}: {messages} Produce calls, then ConsumeNAck ...")
    async with weir_tls.aio_channel(address) as channel:
        stub = pb_grpc.KafkaPixyStub(channel)
        sent = set()
        for number in range(messages):
            produced = await stub.Produce(
                pb.ProdRq(topic="demo-pixy", key_value=b"pixy-%d" % (number % 8), message=b"pixy %d" % number),
                timeout=30,
            )
            sent.add((produced.partition, produced.offset))
        got: set[tuple[int, int]] = set()
        request = pb.ConsNAckRq(topic="demo-pixy", group="demo-pixy", auto_ack=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not sent <= got:
            try:
                response = await stub.ConsumeNAck(request, timeout=30)
            except grpc.aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.NOT_FOUND:
                    raise
                continue
            got.add((response.partition, response.offset))
    progress(f"kafka-pixy: produced {len(sent)}, consumed {len(got & sent)} of them")
    return {"produced": len(sent), "consumed": len(got & sent), "verified": sent <= got}


DEFAULT_INTERNAL_SERVER = "127.0.0.1:7402"


CHANGES_PAGE = 10_000  # the most changes one ReadChanges call may ask for


async def changes(args: argparse.Namespace) -> int:
    """A node's change feed: --server is its internal port (default $WEIR_SERVER, else 127.0.0.1:7402)."""
    server = args.server or os.environ.get("WEIR_SERVER") or DEFAULT_INTERNAL_SERVER
    async with ChangeFeedClient(server) as client:
        if not args.follow:
            position, left = args.from_change_seq, args.max
            while left > 0:  # pages of at most CHANGES_PAGE (the node's bound per read)
                response = await client.read_changes(position, min(left, CHANGES_PAGE))
                for change in response.changes:
                    print(json.dumps(proto_dict(change)))
                left -= len(response.changes)
                if not response.changes or response.next_change_seq > response.last_change_seq:
                    break
                position = response.next_change_seq
            return 0
        async for batch in client.tail_changes(args.from_change_seq):
            for change in batch.changes:
                print(json.dumps(proto_dict(change)), flush=True)
    return 0
