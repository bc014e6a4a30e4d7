"""kafka-pixy through two gateway instances under faults: they split a group's partitions; a client
that stops mid-loop (its last message unacknowledged) and a gateway SIGKILLed mid-loop lose nothing:
every produced message is consumed, duplicates only for messages whose ack never arrived (counted).
Real cluster, real gateway processes, real gRPC."""

from __future__ import annotations

import collections
import threading
import time
from pathlib import Path

import grpc
import pytest
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2 as pb
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2_grpc as pb_grpc

from tests.conftest import start_cluster
from tests.test_kafka_pixy import create_topic

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

GATEWAY_ENV = {
    "WEIR_GATEWAY_KAFKA_PIXY_LONG_POLLING_TIMEOUT_MS": "300",
    "WEIR_GATEWAY_KAFKA_PIXY_ACK_TIMEOUT_MS": "2000",
}
MESSAGES = 300


class Loop(threading.Thread):
    """A consume-n-ack loop against one gateway address (moved to another with `use`)."""

    def __init__(self, name: str, address: str, topic: str, seen: collections.Counter[int], lock: threading.Lock):
        super().__init__(name=name, daemon=True)
        self.address, self.topic, self.seen, self.lock = address, topic, seen, lock
        self.partitions: set[int] = set()
        self.keep_running = threading.Event()
        self.keep_running.set()
        self.ack_last = True

    def use(self, address: str) -> None:
        self.address = address

    def run(self) -> None:
        last: tuple[int, int] | None = None
        address, channel = "", None
        while self.keep_running.is_set():
            if address != self.address:
                address = self.address
                channel = grpc.insecure_channel(address)
            stub = pb_grpc.KafkaPixyStub(channel)
            request = pb.ConsNAckRq(topic=self.topic, group="workers", no_ack=last is None)
            if last is not None:
                request.ack_partition, request.ack_offset = last
            try:
                response = stub.ConsumeNAck(request, timeout=10)
            except grpc.RpcError as error:
                if error.code() == grpc.StatusCode.NOT_FOUND:
                    last = None
                else:
                    time.sleep(0.1)  # the gateway is gone: the ack of `last` is lost; retried below
                continue
            with self.lock:
                self.seen[int(response.message)] += 1
                self.partitions.add(response.partition)
            last = (response.partition, response.offset)
        if last is not None and self.ack_last:
            pb_grpc.KafkaPixyStub(grpc.insecure_channel(self.address)).Ack(
                pb.AckRq(topic=self.topic, group="workers", partition=last[0], offset=last[1]), timeout=10
            )


def test_two_gateways_split_a_group_and_survive_a_client_and_a_gateway_dying(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path / "cluster", routers=1)
    try:
        gateways = [cluster.start_gateway(f"gateway-{n}", GATEWAY_ENV) for n in (1, 2)]
        cluster.gateways.extend(gateways)
        topic = "faulty"
        create_topic(cluster, topic, partitions=4)
        seen: collections.Counter[int] = collections.Counter()
        lock = threading.Lock()
        first = Loop("on-gateway-1", gateways[0].kafka_pixy_address, topic, seen, lock)
        second = Loop("on-gateway-2", gateways[1].kafka_pixy_address, topic, seen, lock)
        first.start()
        second.start()
        time.sleep(3)  # both instances join the group and the router splits its partitions (heartbeats: 1 s)
        producer = pb_grpc.KafkaPixyStub(grpc.insecure_channel(gateways[0].kafka_pixy_address))
        for n in range(MESSAGES // 3):
            producer.Produce(pb.ProdRq(topic=topic, key_value=b"%d" % n, message=b"%d" % n), timeout=30)
        _wait(lambda: len(seen) >= MESSAGES // 3, 60, "the first third consumed")
        with lock:  # both instances are members: each serves only its own partitions
            assert first.partitions and second.partitions and not first.partitions & second.partitions
        listing = producer.ListConsumers(pb.ListConsumersRq(topic=topic, group="workers"), timeout=10)
        members = listing.groups["workers"].consumers
        assert len(members) == 2 and sorted(p for m in members.values() for p in m.partitions) == [0, 1, 2, 3]

        # A client stops mid-loop without acknowledging its last message: it is offered again.
        second.ack_last = False
        second.keep_running.clear()
        second.join()
        third = Loop("on-gateway-2-again", gateways[1].kafka_pixy_address, topic, seen, lock)
        third.start()
        for n in range(MESSAGES // 3, 2 * MESSAGES // 3):
            producer.Produce(pb.ProdRq(topic=topic, key_value=b"%d" % n, message=b"%d" % n), timeout=30)

        # A gateway dies mid-loop: its client moves to the other; its partitions follow after the
        # group session timeout, and its unacknowledged messages come back after the ack timeout.
        gateways[0].kill()
        first.use(gateways[1].kafka_pixy_address)
        producer = pb_grpc.KafkaPixyStub(grpc.insecure_channel(gateways[1].kafka_pixy_address))
        for n in range(2 * MESSAGES // 3, MESSAGES):
            producer.Produce(pb.ProdRq(topic=topic, key_value=b"%d" % n, message=b"%d" % n), timeout=30)
        _wait(lambda: len(seen) == MESSAGES, 90, "every message consumed")
        for loop in (first, third):
            loop.keep_running.clear()
            loop.join()
        with lock:
            assert sorted(seen) == list(range(MESSAGES))
            duplicates = sum(count - 1 for count in seen.values())
        # Only messages whose ack was lost come twice: the stopped client's last one and the few
        # in flight on the killed gateway (each loop holds one unacknowledged message at a time).
        assert duplicates <= 6, duplicates
    finally:
        cluster.stop()


def _wait(check: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
