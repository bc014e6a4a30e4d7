"""`weir-gateway --workers 2` (issue 58): one supervisor, two worker processes sharing each front door's
port. Against a real cluster, each door's client flow runs over connections that land on both workers
(a gRPC channel stays on the worker the kernel gave its connection; the supervisor's one /metrics page
labels each worker's samples, which tells where each call went), settling on one worker what the
other delivered, and losing nothing. Also: a killed worker is restarted while the other serves, and
the pure parts (restart backoff, the merged metrics page, the shared port reservation)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families
from weir import Client, stream_config
from weir_cli.launcher import GatewayHandle, LocalCluster
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2 as kp
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2_grpc as kp_grpc
from weir_gateway.workers import (
    RestartPolicy,
    merged,
    read_worker_metrics,
    remove_stale_run_dirs,
    reserve_port,
    serve_worker_metrics,
)

from tests.conftest import http_get, needs_own_processes
from tests.test_bench_smoke import run_json
from tests.test_rocketmq_v1 import RocketMQClient, read_all, reference_pool  # noqa: F401  (the fixture)
from tests.test_waymaker_streams import SeedClient, seed_pool  # noqa: F401  (the fixture)

GATEWAY_ENV = {
    "WEIR_GATEWAY_WORKERS": "2",
    "WEIR_GATEWAY_KAFKA_PIXY_LONG_POLLING_TIMEOUT_MS": "300",
    "WEIR_GATEWAY_KAFKA_PIXY_ACK_TIMEOUT_MS": "3000",
    "WEIR_GATEWAY_KAFKA_PIXY_GROUP_IDLE_TIMEOUT_MS": "5000",
}
# A channel of its own (not the process-wide subchannel pool), so each is its own TCP connection.
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]
MAX_PROBED_CHANNELS = 24  # all on one worker: a 2**-23 chance
MESSAGES = 40
PRODUCERS = 8
PRODUCED_PER_THREAD = 60


# -- the pure parts ----------------------------------------------------------------------------------


def test_restarts_back_off_and_give_up_past_the_window() -> None:
    policy = RestartPolicy(max_restarts=3, window_s=10.0)
    assert [policy.delay_after_death(t) for t in (0.0, 1.0, 2.0)] == [0.5, 1.0, 2.0]
    assert policy.delay_after_death(3.0) is None  # a 4th death within 10 s
    later = RestartPolicy(max_restarts=3, window_s=10.0)
    assert [later.delay_after_death(t) for t in (0.0, 20.0, 40.0, 60.0)] == [0.5, 0.5, 0.5, 0.5]
    assert len(later.deaths) <= later.deaths.maxlen  # type: ignore[operator]


def test_the_merged_page_labels_each_workers_samples() -> None:
    page = '# HELP c_total c\n# TYPE c_total counter\nc_total{door="a"} 2.0\n'
    families = merged([("0", page), ("1", page.replace("2.0", "5.0"))])
    (family,) = families
    assert sorted((s.labels["worker"], s.value) for s in family.samples if s.name == "c_total") == [
        ("0", 2.0),
        ("1", 5.0),
    ]


def test_only_the_run_directories_of_dead_supervisors_are_removed(tmp_path: Path) -> None:
    alive = tmp_path / f"weir-gateway-workers-{os.getpid()}-abc"
    dead = tmp_path / "weir-gateway-workers-999999999-def"
    other = tmp_path / "weir-gateway-workers-notapid"
    for directory in (alive, dead, other):
        directory.mkdir()
        (directory / "worker-0.json").write_text("{}")
    assert remove_stale_run_dirs(tmp_path) == [dead]
    assert alive.exists() and other.exists() and not dead.exists()


def test_a_workers_metrics_page_is_served_on_its_unix_socket(tmp_path: Path) -> None:
    """A worker serves its page on a Unix socket (no port of its own), which the supervisor reads."""
    path = tmp_path / "worker-0.metrics.sock"
    server = serve_worker_metrics(path)
    try:
        page = read_worker_metrics(path)
        assert "weir_gateway_groups_served" in page or "python_info" in page
    finally:
        server.shutdown()
    with pytest.raises(OSError):
        read_worker_metrics(tmp_path / "nobody.sock")


def test_a_reserved_port_is_shared_by_reuseport_listeners_only() -> None:
    import socket

    reserved = reserve_port("127.0.0.1", 0)
    port = reserved.getsockname()[1]
    try:
        sharing = socket.socket()
        sharing.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sharing.bind(("127.0.0.1", port))
        sharing.listen()
        sharing.close()
        plain = socket.socket()
        with pytest.raises(OSError):
            plain.bind(("127.0.0.1", port))
        plain.close()
    finally:
        reserved.close()


# -- against a cluster -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gateway(cluster: LocalCluster) -> Iterator[GatewayHandle]:
    needs_own_processes()
    handle = cluster.start_gateway("workers-gateway", GATEWAY_ENV)
    supervisor = handle.process.pid if handle.process is not None else 0
    try:
        yield handle
    finally:
        workers = children_of(supervisor)
        handle.stop()
        assert all(not Path(f"/proc/{pid}").exists() for pid in workers), "a worker outlived the supervisor"


def children_of(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def calls_by_worker(gateway: GatewayHandle, protocol: str) -> dict[str, float]:
    """RPCs answered per worker for `protocol`, from the supervisor's one /metrics page."""
    page = http_get(f"http://127.0.0.1:{gateway.metrics_port}/metrics")
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(page):
        for sample in family.samples:
            if sample.name == "weir_gateway_rpc_seconds_count" and sample.labels.get("protocol") == protocol:
                worker = sample.labels["worker"]
                counts[worker] = counts.get(worker, 0.0) + sample.value
    return counts


def worker_of(gateway: GatewayHandle, protocol: str, before: dict[str, float]) -> str:
    """The worker whose count of `protocol` calls rose since `before` (one call made since)."""
    after = calls_by_worker(gateway, protocol)
    (worker,) = [w for w, count in after.items() if count > before.get(w, 0.0)]
    return worker


def one_per_worker(gateway: GatewayHandle, protocol: str, probe: Callable[[int], Any]) -> dict[str, Any]:
    """{worker: what `probe(n)` returned} for a probe whose call landed there, one per worker: probes
    (each opening its own connection and making one call) until both workers answered one."""
    found: dict[str, Any] = {}
    for attempt in range(MAX_PROBED_CHANNELS):
        before = calls_by_worker(gateway, protocol)
        opened = probe(attempt)
        worker = worker_of(gateway, protocol, before)
        if worker not in found:
            found[worker] = opened
        if len(found) == 2:
            return found
    raise AssertionError(f"every connection landed on worker(s) {sorted(found)}")


def test_kafka_pixy_produce_and_consume_across_two_workers(gateway: GatewayHandle, cluster: LocalCluster) -> None:
    """Produce alternates between a connection on each worker; two ConsumeNAck loops (one a worker) get
    every message, each acking through the other worker what it got; the group's lag ends at 0."""
    topic = f"workers-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_stream(cluster, topic, partitions=2))

    def probe(n: int) -> Any:
        channel = grpc.insecure_channel(gateway.kafka_pixy_address, options=OWN_CONNECTION)
        kp_grpc.KafkaPixyStub(channel).Produce(kp.ProdRq(topic=topic, message=b"probe-%d" % n), timeout=10)
        return channel

    channels = one_per_worker(gateway, "kafka_pixy", probe)
    stubs = [kp_grpc.KafkaPixyStub(channels[worker]) for worker in sorted(channels)]
    before = calls_by_worker(gateway, "kafka_pixy")
    for n in range(MESSAGES):
        stubs[n % 2].Produce(kp.ProdRq(topic=topic, message=b"m-%d" % n), timeout=10)
    produced = calls_by_worker(gateway, "kafka_pixy")
    assert all(produced[w] - before.get(w, 0.0) == MESSAGES / 2 for w in sorted(channels)), produced
    seen: set[bytes] = set()
    deadline = time.monotonic() + 60
    expected = {b"m-%d" % n for n in range(MESSAGES)}  # the probes' messages come too, unchecked
    turn = 0
    while not expected <= seen and time.monotonic() < deadline:
        stub, other = stubs[turn % 2], stubs[(turn + 1) % 2]
        turn += 1
        try:
            message = stub.ConsumeNAck(kp.ConsNAckRq(topic=topic, group="g", no_ack=True), timeout=10)
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.NOT_FOUND, error  # the long poll's "no message yet"
            continue
        seen.add(message.message)
        other.Ack(kp.AckRq(topic=topic, group="g", partition=message.partition, offset=message.offset), timeout=10)
    assert expected <= seen

    def lag() -> int:
        offsets = stubs[0].GetOffsets(kp.GetOffsetsRq(topic=topic, group="g"), timeout=10).offsets
        return sum(entry.end - entry.offset for entry in offsets)

    until(lambda: lag() == 0, 15, "the group's lag to reach 0")
    for channel in channels.values():
        channel.close()


async def create_stream(cluster: LocalCluster, name: str, partitions: int = 1) -> None:
    async with Client(cluster.router_addresses) as client:
        await client.create_stream(stream_config(name, partitions=partitions, replicas=1))


def until(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"waited {timeout_s} s for {what}"
        time.sleep(0.2)


async def one_client_per_worker(gateway: GatewayHandle, protocol: str, new: Callable[[], Any], probe: Any) -> list[Any]:
    """Clients (each its own connection, made by `new`) whose first call (`await probe(client)`)
    landed on worker 0 and on worker 1, in that order; the others are closed."""
    found: dict[str, Any] = {}
    for _ in range(MAX_PROBED_CHANNELS):
        before = await asyncio.to_thread(calls_by_worker, gateway, protocol)
        client = new()
        await probe(client)
        worker = await asyncio.to_thread(worker_of, gateway, protocol, before)
        if worker in found:
            await client.channel.close()
        else:
            found[worker] = client
        if len(found) == 2:
            return [found["0"], found["1"]]
    raise AssertionError(f"every connection landed on worker(s) {sorted(found)}")


async def test_rocketmq_v1_receipt_handles_settle_on_the_other_worker(
    gateway: GatewayHandle,
    cluster: LocalCluster,
    reference_pool: Any,  # noqa: F811  (the imported fixture)
) -> None:
    """One RocketMQ v1 client over two connections, one a worker: sends alternate; it receives on
    worker 0 and acks every message on worker 1 (a receipt handle one worker issued settles on the
    other: one receipt secret for all); nothing comes back after the invisible duration."""
    topic = f"rmq-workers-{uuid.uuid4().hex[:8]}"
    await create_stream(cluster, topic, partitions=1)
    client_id = f"10.0.0.7@{uuid.uuid4().hex[:6]}#1"

    def new() -> RocketMQClient:
        client = RocketMQClient(reference_pool, gateway.rocketmq_address, client_id)
        client.channel = grpc.aio.insecure_channel(gateway.rocketmq_address, options=OWN_CONNECTION)
        return client

    async def probe(client: RocketMQClient) -> None:
        await client.call("QueryRoute", client.new("QueryRouteRequest", topic=client.resource(topic)))

    receiver, acker = await one_client_per_worker(gateway, "rocketmq_v1", new, probe)
    try:
        for n in range(MESSAGES):
            sender = (receiver, acker)[n % 2]
            response = await sender.send(sender.message(sender.resource(topic), b"m-%d" % n))
            assert response.common.status.code == 0, response.common.status
        received: dict[bytes, Any] = {}
        deadline = time.monotonic() + 30
        while len(received) < MESSAGES and time.monotonic() < deadline:
            answer = await receiver.receive(topic, "g", 0, batch_size=16, invisible_ms=3000, await_ms=200)
            assert answer.common.status.code == 0, answer.common.status
            for message in answer.messages:
                received[message.body] = message
        assert set(received) == {b"m-%d" % n for n in range(MESSAGES)}
        before = await asyncio.to_thread(calls_by_worker, gateway, "rocketmq_v1")
        for message in received.values():
            settled = await acker.settle("AckMessage", topic, "g", message)
            assert settled.common.status.code == 0, settled.common.status
        after = await asyncio.to_thread(calls_by_worker, gateway, "rocketmq_v1")
        assert after["1"] - before.get("1", 0.0) == MESSAGES and after["0"] == before["0"]  # acks on worker 1 only
        await asyncio.sleep(3.5)  # past the invisible duration: an unsettled message would be back
        again = await receiver.receive(topic, "g", 0, batch_size=16, await_ms=500)
        assert list(again.messages) == []
    finally:
        await receiver.channel.close()
        await acker.channel.close()


async def test_waymaker_streams_fetch_on_one_worker_ack_on_the_other(
    gateway: GatewayHandle,
    seed_pool: Any,  # noqa: F811  (the imported fixture)
    stream_name: str,
) -> None:
    """The streams seed's client over two connections, one a worker: publishes alternate, fetches go
    to worker 0 and acks to worker 1; the consumer's ack floor reaches the last message."""

    def new() -> SeedClient:
        client = SeedClient(seed_pool, gateway.waymaker_streams_address)
        client.channel = grpc.aio.insecure_channel(gateway.waymaker_streams_address, options=OWN_CONNECTION)
        return client

    async def probe(client: SeedClient) -> None:
        await client.call("ListStreams")

    fetcher, acker = await one_client_per_worker(gateway, "waymaker_streams", new, probe)
    try:
        config = fetcher.new("StreamConfigPb", name=stream_name, subjects_filter=["w.>"])
        await fetcher.ok("CreateStream", config=config)
        for n in range(MESSAGES):
            await (fetcher, acker)[n % 2].ok("Publish", stream=stream_name, subject=f"w.{n}", payload=b"m-%d" % n)
        await acker.ok("CreateConsumer", stream=stream_name, config=acker.new("ConsumerConfigPb", name="c"))
        fetched = (await fetcher.ok("Fetch", stream=stream_name, consumer="c", batch_size=MESSAGES)).messages
        assert sorted(m.payload for m in fetched) == sorted(b"m-%d" % n for n in range(MESSAGES))
        for message in fetched:
            await acker.ok("Ack", stream=stream_name, consumer="c", seq=message.seq)
        state = (await fetcher.ok("GetConsumerInfo", stream=stream_name, consumer="c")).consumer
        assert state.ack_floor == MESSAGES
    finally:
        await fetcher.channel.close()
        await acker.channel.close()


def test_a_worker_killed_under_produce_load_loses_no_acknowledged_message(
    gateway: GatewayHandle, cluster: LocalCluster
) -> None:
    """Producers over 8 connections (both workers) produce numbered messages; one worker is SIGKILLed
    midway. Calls it was answering fail (UNAVAILABLE) and are retried on a new connection, which the
    other worker takes; every message a Produce acknowledged is in the stream, and the producers
    finish while the killed worker is restarted."""
    topic = f"workers-kill-{uuid.uuid4().hex[:8]}"
    asyncio.run(create_stream(cluster, topic, partitions=2))
    supervisor = gateway.process.pid if gateway.process is not None else 0
    acknowledged: set[bytes] = set()
    retried = [0]
    lock = threading.Lock()
    killed = threading.Event()

    def producer(index: int) -> None:
        channel = grpc.insecure_channel(gateway.kafka_pixy_address, options=OWN_CONNECTION)
        try:
            for n in range(PRODUCED_PER_THREAD):
                body = b"p%d-%d" % (index, n)
                for _ in range(20):
                    try:
                        stub = kp_grpc.KafkaPixyStub(channel)
                        stub.Produce(kp.ProdRq(topic=topic, message=body), timeout=10, wait_for_ready=True)
                        break
                    except grpc.RpcError as error:
                        assert error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED), error
                        with lock:
                            retried[0] += 1
                        channel.close()
                        channel = grpc.insecure_channel(gateway.kafka_pixy_address, options=OWN_CONNECTION)
                else:
                    raise AssertionError(f"{body!r} was never acknowledged")
                with lock:
                    acknowledged.add(body)
                if index == 0 and n == PRODUCED_PER_THREAD // 3:
                    killed.set()
        finally:
            channel.close()

    threads = [threading.Thread(target=producer, args=(index,)) for index in range(PRODUCERS)]
    for thread in threads:
        thread.start()
    assert killed.wait(60)
    victim, *_ = children_of(supervisor)
    os.kill(victim, signal.SIGKILL)
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    assert len(acknowledged) == PRODUCERS * PRODUCED_PER_THREAD

    async def stored() -> set[bytes]:
        async with Client(cluster.router_addresses) as client:
            return {message.payload for message in await read_all(client, topic, len(acknowledged))}

    assert acknowledged <= asyncio.run(stored())  # a retried call may have stored one twice, never none
    until(lambda: victim not in children_of(supervisor) and len(children_of(supervisor)) == 2, 30, "a new worker")


def test_a_killed_worker_is_restarted_while_the_other_serves(gateway: GatewayHandle) -> None:
    """SIGKILL one worker: the supervisor starts it again (its log says so), the other serves
    throughout (a new connection's call succeeds at once), /readyz stays ready, and both workers are
    back on the one metrics page."""
    supervisor = gateway.process.pid if gateway.process is not None else 0
    victim, *_ = children_of(supervisor)
    os.kill(victim, signal.SIGKILL)
    # Its listening sockets close as it exits (a connection already in its accept queue is reset:
    # clients connect again, as to any gateway that dies).
    until(lambda: exited(victim), 10, "the killed worker to exit")
    channel = grpc.insecure_channel(gateway.kafka_pixy_address, options=OWN_CONNECTION)
    try:
        # wait_for_ready: a connection that met the dying worker's listener is reset, and is made again
        kp_grpc.KafkaPixyStub(channel).ListTopics(kp.ListTopicRq(), timeout=5, wait_for_ready=True)
    finally:
        channel.close()
    assert http_get(f"http://127.0.0.1:{gateway.metrics_port}/readyz").strip() == "ready"
    until(lambda: victim not in children_of(supervisor) and len(children_of(supervisor)) == 2, 30, "a new worker")
    until(lambda: sorted(calls_or_none(gateway)) == ["0", "1"], 30, "both workers on the metrics page")


def exited(pid: int) -> bool:
    """True once `pid` is gone or a zombie (its sockets closed)."""
    status = Path(f"/proc/{pid}/status")
    try:
        return "\tZ" in next(line for line in status.read_text().splitlines() if line.startswith("State:"))
    except (OSError, StopIteration):
        return True


def calls_or_none(gateway: GatewayHandle) -> dict[str, float]:
    page = http_get(f"http://127.0.0.1:{gateway.metrics_port}/metrics")
    workers = {
        sample.labels["worker"]: 0.0
        for family in text_string_to_metric_families(page)
        for sample in family.samples
        if sample.name == "weir_gateway_groups_served"
    }
    return workers


async def test_rocketmq_assignment_moving_to_another_worker_releases_nothing_early(
    gateway: GatewayHandle,
    cluster: LocalCluster,
    reference_pool: Any,  # noqa: F811  (the imported fixture)
) -> None:
    """A RocketMQ client's QueryAssignment reports, as owned, what the router gave it at its previous
    call, which a worker remembers. When the client's next call lands on the other worker (it
    connected again), that worker has no memory of it and lists every partition, so a partition the
    router moves to a second client is released one call later, as on one worker, never early."""
    topic = f"rmq-assign-{uuid.uuid4().hex[:8]}"
    await create_stream(cluster, topic, partitions=2)
    holder_id = f"10.0.0.7@{uuid.uuid4().hex[:6]}#1"

    def new(client_id: str) -> Callable[[], RocketMQClient]:
        def make() -> RocketMQClient:
            client = RocketMQClient(reference_pool, gateway.rocketmq_address, client_id)
            client.channel = grpc.aio.insecure_channel(gateway.rocketmq_address, options=OWN_CONNECTION)
            return client

        return make

    async def assigned(client: RocketMQClient) -> list[int]:
        request = client.new(
            "QueryAssignmentRequest",
            topic=client.resource(topic),
            group=client.resource("g"),
            endpoints=client.endpoints(),
        )
        response = await client.call("QueryAssignment", request)
        assert response.common.status.code == 0, response.common.status
        return sorted(entry.Partition.id for entry in response.assignments)

    async def route(client: RocketMQClient) -> None:  # finds the worker without a QueryAssignment
        await client.call("QueryRoute", client.new("QueryRouteRequest", topic=client.resource(topic)))

    on_0, on_1 = await one_client_per_worker(gateway, "rocketmq_v1", new(holder_id), route)
    other = new(f"10.0.0.8@{uuid.uuid4().hex[:6]}#1")()
    try:
        assert await assigned(on_0) == [0, 1]  # the holder, alone, on worker 0
        assert await assigned(other) == []  # a second member: one partition is to move to it
        assert await assigned(on_0) in ([0], [1])  # told to give one up: it still lists both (one call later)
        assert await assigned(on_1) in ([0], [1])  # now through worker 1, which never answered it: lists both
        assert await assigned(other) == []  # so nothing was released early
        await assigned(on_1)  # worker 1's second answer: it lists only what worker 1 gave it, the move's one
        assert len(await assigned(other)) == 1
    finally:
        for client in (on_0, on_1, other):
            await client.channel.close()


@pytest.mark.slow
def test_gateway_workers_bench_smoke() -> None:
    """`python -m bench.gateway_workers_bench --smoke`: Produce and SendMessage through a gateway of 1
    and of 2 workers, each with a rate, the gateway's CPU per call and the calls each worker answered."""
    needs_own_processes()
    report = run_json(["bench.gateway_workers_bench", "--smoke"], timeout_s=300)
    for workers in ("workers_1", "workers_2"):
        for phase in ("produce_sync", "send_message"):
            figures = report[workers][phase]
            assert figures["calls"] > 0 and figures["msgs_per_s"] > 0, (workers, phase)
            assert sum(figures["calls_by_worker"].values()) == figures["calls"], (workers, phase)
    assert set(report["workers_2"]["produce_sync"]["calls_by_worker"]) <= {"0", "1"}
    assert report["produce_sync_two_to_one_throughput"] > 0 and report["send_message_two_to_one_throughput"] > 0


def test_cluster_up_passes_its_gateway_workers_to_the_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`weir cluster up --gateway-workers 2` starts its gateways with WEIR_GATEWAY_WORKERS=2; without
    the flag, 1 (the launcher's own default is 1 too: a quick start on 2 cores)."""
    from weir_cli import local
    from weir_cli.parser import build_parser

    started: list[dict[str, Any]] = []

    class Started(Exception):
        pass

    def fake_start(data_dir: Path, **options: Any) -> None:
        started.append(options)
        raise Started

    monkeypatch.setattr(local, "_start_cluster", fake_start)
    parser = build_parser("test")
    for flags, expected in ((["--gateway-workers", "2"], "2"), ([], "1")):
        args = parser.parse_args(["cluster", "up", "--data-dir", str(tmp_path / expected), *flags])
        with pytest.raises(Started):
            asyncio.run(local.cluster_up(args))
        assert started[-1]["gateway_env"] == {"WEIR_GATEWAY_WORKERS": expected}
