"""A kafka-pixy application as its Python quick start describes one (written here from that guide,
not copied): a thin `produce(topic, key, msg)` wrapper around KafkaPixyStub.Produce and a
consume-n-ack loop run in threads, using only stubs generated from kafka-pixy's own proto (the
seed). Run as a program by tests/test_kafka_pixy.py against a gateway:

    python kafka_pixy_client.py <stubs dir> <gateway address> <topic> <group> <messages> <threads>

It produces `messages` numbered messages with keys, consumes with `threads` consume-n-ack loops
until every number was seen (or 60 s pass), acknowledges the last message of each loop with Ack,
and prints one JSON line: produced (partition, offset) pairs and consumed (number, partition, offset,
key) entries.
"""

from __future__ import annotations

import json
import sys
import threading
import time

sys.path.insert(0, sys.argv[1])

import grpc
from kafkapixy.kafkapixy_pb2 import AckRq, ConsNAckRq, ProdRq  # type: ignore[import-not-found]
from kafkapixy.kafkapixy_pb2_grpc import KafkaPixyStub  # type: ignore[import-not-found]

PRODUCE_TIMEOUT_S = 30
CONSUME_TIMEOUT_S = 10  # above the gateway's long-polling timeout
BACK_OFF_S = 0.2


def produce(client: KafkaPixyStub, topic: str, key: bytes, message: bytes) -> tuple[int, int]:
    response = client.Produce(ProdRq(topic=topic, key_value=key, message=message), timeout=PRODUCE_TIMEOUT_S)
    return response.partition, response.offset


def consume_n_ack(client: KafkaPixyStub, topic: str, group: str, handle: object, keep_running: threading.Event) -> None:
    """The documented loop: ack the previous message in the same call that fetches the next one;
    NOT_FOUND means the long poll ended empty (nothing left to ack); other errors back off."""
    ack_partition: int | None = None
    ack_offset: int | None = None
    request = ConsNAckRq(topic=topic, group=group)
    while keep_running.is_set():
        if ack_offset is None:
            request.no_ack, request.ack_partition, request.ack_offset = True, 0, 0
        else:
            request.no_ack, request.ack_partition, request.ack_offset = False, ack_partition, ack_offset
        try:
            response = client.ConsumeNAck(request, timeout=CONSUME_TIMEOUT_S)
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:
                ack_offset = None
                continue
            time.sleep(BACK_OFF_S)
            continue
        handle(response)  # type: ignore[operator]
        ack_partition, ack_offset = response.partition, response.offset
    if ack_offset is not None:
        client.Ack(
            AckRq(topic=topic, group=group, partition=ack_partition, offset=ack_offset), timeout=CONSUME_TIMEOUT_S
        )


def main() -> int:
    address, topic, group = sys.argv[2], sys.argv[3], sys.argv[4]
    messages, threads = int(sys.argv[5]), int(sys.argv[6])
    client = KafkaPixyStub(grpc.insecure_channel(address))
    produced = [produce(client, topic, b"key-%d" % (n % 7), b"%d" % n) for n in range(messages)]
    consumed: list[tuple[int, int, int, str]] = []
    lock = threading.Lock()
    keep_running = threading.Event()
    keep_running.set()

    def handle(response: object) -> None:
        with lock:
            consumed.append(
                (int(response.message), response.partition, response.offset, response.key_value.decode())  # type: ignore[attr-defined]
            )
            if len({entry[0] for entry in consumed}) == messages:
                keep_running.clear()

    loops = [
        threading.Thread(target=consume_n_ack, args=(client, topic, group, handle, keep_running))
        for _ in range(threads)
    ]
    for loop in loops:
        loop.start()
    deadline = time.monotonic() + 60
    while keep_running.is_set() and time.monotonic() < deadline:
        time.sleep(0.05)
    keep_running.clear()
    for loop in loops:
        loop.join()
    print(json.dumps({"produced": produced, "consumed": consumed}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
