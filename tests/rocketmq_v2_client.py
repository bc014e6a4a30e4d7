"""A program run with RocketMQ's official Python client (`rocketmq-python-client`), in the client's own
virtualenv (tests/rocketmq_client_env.py), never in the workspace: tests/test_rocketmq_v2.py starts it
as `python rocketmq_v2_client.py '<json plan>'` against a Weir gateway's RocketMQ port and reads the one
JSON object it prints (what it sent, received, acknowledged and was asked). It asserts nothing itself
beyond what it must to go on; the test judges the observations.

The plan: {"endpoints": "host:port", "topics": {"normal": ..., "fifo": ..., "delay": ..., "transaction":
...}, "delay_s": N}. Each topic is a stream the test created (with allow_scheduled_messages).

With "mode": "push" the plan is {"mode": "push", "endpoints": ..., "topic": ..., "count": N, "fail":
"<body>"}: the Producer sends N NORMAL messages "push-0".."push-<N-1>" to the topic and a
PushConsumer's MessageListener consumes them, failing the message whose body is "fail" the first time
it sees it (SUCCESS for everything else); the report lists every (body, delivery_attempt) the
listener saw, in order, with when (time.monotonic(), s).

With "mode": "recall" the plan is {"mode": "recall", "endpoints": ..., "topic": ..., "delay_s": N}: the
Producer sends a NORMAL message "normal" and two DELAY messages "kept" and "recalled" due N s from now,
recalls "recalled" with `recall_message` and then recalls it again; a SimpleConsumer receives until
"kept" came (or the deadline passed) and once more after. The report has each send's recall handle
(None when the receipt had none), what each recall answered (the message id, or the exception's type
and text) and every message received.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from rocketmq import (  # type: ignore[import-not-found]  # installed only in the client's virtualenv
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    Message,
    MessageListener,
    Producer,
    PushConsumer,
    SimpleConsumer,
    TransactionChecker,
    TransactionResolution,
)

RECEIVE_WAIT_S = 3  # the consumers' long polling (await_duration)
COLLECT_DEADLINE_S = 30.0


class CommitMarked(TransactionChecker):  # type: ignore[misc]
    """The transaction checker: COMMIT a message whose "resolve" property says commit, else ROLLBACK."""

    def __init__(self) -> None:
        self.checked: list[str] = []

    def check(self, message: Any) -> Any:
        self.checked.append(message.message_id)
        if message.properties.get("resolve") == "commit":
            return TransactionResolution.COMMIT
        return TransactionResolution.ROLLBACK


def message(topic: str, body: str, **attributes: Any) -> Any:
    built = Message()
    built.topic = topic
    built.body = body.encode()
    for key, value in attributes.pop("properties", {}).items():
        built.add_property(key, value)
    for name, value in attributes.items():  # keys: one key as a string (the client's setter takes *keys)
        setattr(built, name, value)
    return built


def described(received: Any) -> dict[str, Any]:
    return {
        "body": received.body.decode(),
        "message_id": received.message_id,
        "tag": received.tag,
        "keys": sorted(received.keys),
        "properties": dict(received.properties),
        "message_group": received.message_group,
        "delivery_attempt": received.delivery_attempt,
        "delivery_timestamp_ms": received.delivery_timestamp,
        "received_at_ms": int(time.time() * 1000),
    }


def produce(config: Any, topics: dict[str, str], delay_s: int) -> dict[str, Any]:
    """NORMAL, FIFO, DELAY and TRANSACTION sends; one transaction left open for the checker."""
    checker = CommitMarked()
    producer = Producer(config, list(topics.values()), checker)
    producer.startup()
    sent: dict[str, Any] = {}
    try:
        sent["normal"] = [
            producer.send(
                message(topics["normal"], f"normal-{index}", tag="TagA", keys=f"k{index}", properties={"n": str(index)})
            ).message_id
            for index in range(3)
        ]
        sent["fifo"] = [
            producer.send(message(topics["fifo"], f"fifo-{index}", message_group="order-1")).message_id
            for index in range(5)
        ]
        deliver_at_s = int(time.time()) + delay_s
        sent["delay_deliver_at_ms"] = deliver_at_s * 1000
        sent["delay"] = producer.send(message(topics["delay"], "delayed", delivery_timestamp=deliver_at_s)).message_id
        for name, resolve in (("committed", "commit"), ("rolled_back", "rollback")):
            transaction = producer.begin_transaction()
            receipt = producer.send(message(topics["transaction"], name), transaction)
            if resolve == "commit":
                transaction.commit()
            else:
                transaction.rollback()
            sent[name] = receipt.message_id
        open_transaction = producer.begin_transaction()
        orphan = message(topics["transaction"], "checked", properties={"resolve": "commit"})
        sent["checked"] = producer.send(orphan, open_transaction).message_id  # never ended by the client
        deadline = time.monotonic() + COLLECT_DEADLINE_S
        while sent["checked"] not in checker.checked and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # the checker's EndTransaction goes out on the client's own threads
        sent["checker_asked"] = checker.checked
    finally:
        producer.shutdown()
    return sent


def consumer_of(config: Any, group: str, topic: str) -> Any:
    consumer = SimpleConsumer(config, group, {topic: FilterExpression()}, await_duration=RECEIVE_WAIT_S)
    consumer.startup()
    return consumer


def collect(consumer: Any, count: int, invisible_s: int = 30) -> list[Any]:
    """Receive until `count` messages came (acknowledging each) or COLLECT_DEADLINE_S passed."""
    got: list[Any] = []
    deadline = time.monotonic() + COLLECT_DEADLINE_S
    while len(got) < count and time.monotonic() < deadline:
        for received in consumer.receive(16, invisible_s):
            got.append(received)
            consumer.ack(received)
    return got


# How long the NORMAL messages are first invisible: long enough that receiving all three and acking
# the first fits in it on a loaded machine (3 s did not, in a CI run beside other tests, nor 10 s on
# a machine running Python at 2.5x its usual time), short enough that the third's redelivery comes
# within the test's time.
FIRST_INVISIBLE_S = 30


def consume_normal(config: Any, topic: str) -> dict[str, Any]:
    """Receive the 3 NORMAL messages invisible for FIRST_INVISIBLE_S: ack the first, change the
    second's invisible duration to 60 s (then ack it after the first duration passed), leave the
    third to be redelivered."""
    consumer = consumer_of(config, "normal-readers", topic)
    seen: dict[str, Any] = {"first": [], "redelivered": [], "after": []}
    try:
        deadline = time.monotonic() + COLLECT_DEADLINE_S
        while len(seen["first"]) < 3 and time.monotonic() < deadline:
            seen["first"].extend(consumer.receive(3 - len(seen["first"]), FIRST_INVISIBLE_S))
        first = sorted(seen["first"], key=lambda received: received.body)
        consumer.ack(first[0])
        consumer.change_invisible_duration(first[1], 60)
        # The third comes back once its FIRST_INVISIBLE_S have passed since it was received, which is
        # at most that long from now: wait that, then as long as any other receive may take.
        deadline = time.monotonic() + FIRST_INVISIBLE_S + COLLECT_DEADLINE_S
        while not seen["redelivered"] and time.monotonic() < deadline:
            seen["redelivered"].extend(consumer.receive(16, 30))
        consumer.ack(first[1])  # with the handle ChangeInvisibleDuration answered, after the first duration
        for received in seen["redelivered"]:
            consumer.ack(received)
        seen["after"] = consumer.receive(16, 30)
        return {key: [described(received) for received in value] for key, value in seen.items()}
    finally:
        consumer.shutdown()


class FailOnce(MessageListener):  # type: ignore[misc]
    """The PushConsumer's listener: records each message it is given; FAILURE for the first sight of
    the message whose body is `fail`, SUCCESS otherwise."""

    def __init__(self, fail: str) -> None:
        self.fail = fail
        self.seen: list[dict[str, Any]] = []
        self.lock = threading.Condition()  # notified at each message the listener is given

    def consume(self, message: Any) -> Any:
        body = message.body.decode()
        with self.lock:
            first_sight = all(entry["body"] != body for entry in self.seen)
            self.seen.append(
                {
                    "body": body,
                    "delivery_attempt": message.delivery_attempt,
                    "id": message.message_id,
                    "at_s": time.monotonic(),
                }
            )
            self.lock.notify_all()
        return ConsumeResult.FAILURE if body == self.fail and first_sight else ConsumeResult.SUCCESS

    def wait_done(self, count: int, timeout_s: float) -> bool:
        """Wait (at most `timeout_s`) until `count` distinct messages came and the failed one came
        again; whether they did."""
        with self.lock:
            return self.lock.wait_for(
                lambda: (
                    len({entry["body"] for entry in self.seen}) >= count
                    and any(entry["body"] == self.fail and entry["delivery_attempt"] > 1 for entry in self.seen)
                ),
                timeout_s,
            )


PUSH_QUIET_S = 3.0  # how long the listener is watched after all it waited for came: a duplicate shows


def push(config: Any, plan: dict[str, Any]) -> dict[str, Any]:
    """Send the plan's NORMAL messages, then consume them with a PushConsumer (see the docstring)."""
    topic, count = plan["topic"], plan["count"]
    producer = Producer(config, [topic])
    producer.startup()
    try:
        sent = [producer.send(message(topic, f"push-{index}")).message_id for index in range(count)]
    finally:
        producer.shutdown()
    listener = FailOnce(plan["fail"])
    started = time.monotonic()
    consumer = PushConsumer(config, "push-readers", listener, {topic: FilterExpression()})
    consumer.startup()
    try:
        listener.wait_done(count, COLLECT_DEADLINE_S)
        consumed_s = time.monotonic() - started
        time.sleep(PUSH_QUIET_S)
    finally:
        consumer.shutdown()
    with listener.lock:
        return {"sent": sent, "seen": list(listener.seen), "consumed_s": round(consumed_s, 2)}


def recall_outcome(producer: Any, topic: str, handle: str) -> dict[str, Any]:
    """What the producer's recall_message answered: {"message_id": ...} or {"error": type, "text": ...}."""
    try:
        return {"message_id": producer.recall_message(topic, handle)}
    except Exception as error:  # the client's ClientException subclasses (NotFoundException, ...)
        return {"error": type(error).__name__, "text": str(error)}


def recall(config: Any, plan: dict[str, Any]) -> dict[str, Any]:
    """Send a NORMAL and two DELAY messages, recall one twice, receive (see the docstring)."""
    topic = plan["topic"]
    producer = Producer(config, [topic])
    producer.startup()
    try:
        normal = producer.send(message(topic, "normal"))
        deliver_at_s = int(time.time()) + plan["delay_s"]
        kept, recalled = (
            producer.send(message(topic, body, delivery_timestamp=deliver_at_s)) for body in ("kept", "recalled")
        )
        report: dict[str, Any] = {
            "deliver_at_ms": deliver_at_s * 1000,
            "ids": {"normal": normal.message_id, "kept": kept.message_id, "recalled": recalled.message_id},
            "handles": {"normal": normal.recall_handle, "kept": kept.recall_handle, "recalled": recalled.recall_handle},
            "first_recall": recall_outcome(producer, topic, recalled.recall_handle),
            "second_recall": recall_outcome(producer, topic, recalled.recall_handle),
            "recalled_at_ms": int(time.time() * 1000),
        }
    finally:
        producer.shutdown()
    consumer = consumer_of(config, "recall-readers", topic)
    try:
        got: list[Any] = []
        deadline = time.monotonic() + plan["delay_s"] + COLLECT_DEADLINE_S
        while all(received.body != b"kept" for received in got) and time.monotonic() < deadline:
            for received in consumer.receive(16, 30):
                got.append(received)
                consumer.ack(received)
        got.extend(consumer.receive(16, 30))  # anything else due by now (the recalled one was, with "kept")
        report["received"] = [described(received) for received in got]
    finally:
        consumer.shutdown()
    return report


def main() -> int:
    plan = json.loads(sys.argv[1])
    config = ClientConfiguration(plan["endpoints"], Credentials("weir-test", "weir-test-secret"), request_timeout=10)
    modes = {"push": push, "recall": recall}
    if plan.get("mode") in modes:
        print(json.dumps(modes[plan["mode"]](config, plan)))
        sys.stdout.flush()
        return 0
    topics = plan["topics"]
    report: dict[str, Any] = {"sent": produce(config, topics, plan["delay_s"])}
    report["normal"] = consume_normal(config, topics["normal"])
    for kind, count in (("fifo", 5), ("delay", 1), ("transaction", 2)):
        consumer = consumer_of(config, f"{kind}-readers", topics[kind])
        try:
            report[kind] = [described(received) for received in collect(consumer, count)]
            report[kind + "_after"] = [described(received) for received in consumer.receive(16, 30)]
        finally:
            consumer.shutdown()
    print(json.dumps(report))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
