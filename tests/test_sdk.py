"""The public SDK (`import weir`): the README's example runs as written and type-checks for a user;
`Client` takes addresses as a string or a list; `client.consume` is an async iterator of typed
`Message`s settled with ack/nak/term/in_progress; the callback form gets the same `Message`; the
node and cluster clients return one publish result type. Real clusters over real gRPC."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.metadata
import inspect
import os
import re
import subprocess
import sys
import time
import typing
from pathlib import Path
from typing import Any, get_args

import pytest
import weir
from weir import (
    Client,
    Message,
    NoSuchStreamError,
    NotPendingError,
    PublishAck,
    consumer_config,
    options,
    stream_config,
)
from weir.client import NodeClient
from weir.errors import InvalidArgumentError, WeirError
from weir.router_client import router_addresses
from weir.v1 import streams_pb2

from tests.conftest import needs_own_processes

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_example() -> str:
    text = README.read_text()
    found = re.search(r"<!-- sdk-example -->\n```python\n(.*?)```\n<!-- /sdk-example -->", text, re.S)
    assert found, "README.md lost its <!-- sdk-example --> block"
    return found.group(1)


def test_the_public_names_import_from_weir() -> None:
    for name in weir.__all__:
        assert getattr(weir, name) is not None, name
    assert {"Client", "Message", "PublishAck", "Subscription", "WeirError", "NoSuchStreamError"} <= set(weir.__all__)
    assert (Path(weir.__file__).parent / "py.typed").exists()


def test_every_public_member_says_what_it_does_and_the_version_is_the_distributions() -> None:
    undocumented = []
    for name in weir.__all__:
        value = getattr(weir, name)
        if not inspect.isclass(value) or issubclass(value, WeirError):
            continue
        undocumented += [
            f"{name}.{member}"
            for member, attribute in inspect.getmembers(value)
            if not member.startswith("_") and callable(attribute) and not inspect.getdoc(attribute)
        ]
    assert undocumented == []
    assert weir.__version__ == importlib.metadata.version("weir")


WIRE_LEVEL_ESCAPE_HATCHES = {"node", "leader", "on_leader"}  # documented: they hand out a NodeClient


def _wire_types_in(hint: Any, seen: set[Any]) -> list[str]:
    """The generated protobuf types (a `*_pb2` module's, or google.protobuf's) and NodeClient that
    `hint` mentions: in its arguments (`list[X]`, `X | None`, `Callable[[X], Y]`) and, for a
    dataclass of the SDK, in its fields' types, at any depth."""
    if isinstance(hint, list):  # a Callable's parameters
        return [found for item in hint for found in _wire_types_in(item, seen)]
    if hint in seen:
        return []
    seen.add(hint)
    module = getattr(hint, "__module__", "") or ""
    found = [f"{module}.{getattr(hint, '__qualname__', hint)}"] if module.endswith("_pb2") else []
    if module.startswith("google.protobuf") or hint is NodeClient:
        found.append(f"{module}.{getattr(hint, '__qualname__', hint)}")
    for argument in get_args(hint):
        found += _wire_types_in(argument, seen)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type) and module.startswith("weir."):
        hints = typing.get_type_hints(hint)  # its fields' (not its ClassVars', such as the proto it follows)
        for field in dataclasses.fields(hint):
            found += _wire_types_in(hints[field.name], seen)
    return found


def test_client_takes_and_returns_no_generated_protobuf_type() -> None:
    """Issue 52: every public method of weir.Client takes and returns the SDK's own types, down to
    the fields of the dataclasses it returns; only the documented wire-level escape hatches (`node`,
    `leader`, `on_leader`) hand out a NodeClient, which answers in weir.v1's messages."""
    leaks = []
    for name, method in inspect.getmembers(Client, callable):
        if name.startswith("_") or name in WIRE_LEVEL_ESCAPE_HATCHES:
            continue
        for parameter, hint in typing.get_type_hints(method).items():
            leaks += [f"Client.{name} {parameter}: {found}" for found in _wire_types_in(hint, set())]
    assert leaks == []
    for name in WIRE_LEVEL_ESCAPE_HATCHES:
        assert "wire-level escape hatch" in " ".join((inspect.getdoc(getattr(Client, name)) or "").split()), name


def test_the_cli_s_light_copies_of_the_sdk_s_choices_agree_with_the_protos() -> None:
    """weir.options holds what the CLI's parser needs without loading gRPC; each must match the
    mapping or enum the SDK sends."""
    from weir.client import ACK_LEVELS
    from weir.info import DELIVER_POLICIES, RETENTION_POLICIES, SOURCE_DROP_POLICIES, STORAGE_KINDS
    from weir.invoker import STATUS_NAMES

    for literal, mapping in (
        (options.AckLevel, ACK_LEVELS),
        (options.Retention, RETENTION_POLICIES),
        (options.Storage, STORAGE_KINDS),
        (options.DeliverPolicy, DELIVER_POLICIES),
        (options.SourceDropPolicy, SOURCE_DROP_POLICIES),
        (options.InvocationStatusName, STATUS_NAMES),
    ):
        assert set(get_args(literal)) == set(mapping), literal
    command = [
        sys.executable,
        "-c",
        "import sys, weir, weir_cli.parser; print(sorted(m for m in sys.modules if m.startswith(('grpc', 'google'))))",
    ]
    loaded = subprocess.run(command, capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert loaded == "[]", loaded  # `import weir` and the CLI's parser load neither gRPC nor protobuf


def test_a_string_option_out_of_its_values_names_the_option_and_the_values() -> None:
    """mypy --strict refuses these (the options are Literal types); at run time each is a ValueError
    (and an InvalidArgumentError) that names the option, the value and the allowed ones."""
    typo: Any = "limtis"
    for call, expected in (
        (lambda: stream_config("s", retention=typo), "retention: 'limtis' is not one of limits, work_queue, interest"),
        (lambda: stream_config("s", storage=typo), "storage: 'limtis' is not one of file, memory"),
        (lambda: consumer_config("c", deliver_policy=typo), "deliver_policy: 'limtis' is not one of all, last,"),
    ):
        with pytest.raises(ValueError, match=re.escape(expected)) as raised:
            call()
        assert isinstance(raised.value, InvalidArgumentError) and not raised.value.retryable


def test_an_application_subclass_of_an_error_does_not_change_decoding() -> None:
    """A subclass that refines a Weir error without a result code of its own (the gateway's
    MultiPartitionError, say) must not become what every `invalid_argument` decodes as: it did, once
    the gateway's module was imported, and every test decoding errors in that process saw it."""

    class Refined(InvalidArgumentError):
        pass

    assert type(WeirError.for_code("invalid_argument", "bad")) is InvalidArgumentError
    assert isinstance(Refined("bad"), InvalidArgumentError)


def test_router_addresses_take_a_string_or_a_list() -> None:
    assert router_addresses("127.0.0.1:7501") == ["127.0.0.1:7501"]
    assert router_addresses("a:1, b:2,") == ["a:1", "b:2"]
    assert router_addresses(["a:1", "b:2"]) == ["a:1", "b:2"]
    for bad in ("", "localhost", "a:b", "a:0", "a:70000", [":1"]):
        with pytest.raises(InvalidArgumentError):
            router_addresses(bad)


def test_a_plain_message_has_nothing_to_settle() -> None:
    message = Message(stream="s", partition=0, seq=1, subject="a", payload=b"x")
    with pytest.raises(NotPendingError, match="not delivered by a consumer"):
        asyncio.run(message.ack())


def test_the_readme_example_type_checks_for_a_user(tmp_path: Path) -> None:
    """mypy --strict on a user's script that imports weir (outside this repository's config)."""
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    wrong = tmp_path / "wrong.py"
    wrong.write_text('from weir import Client\n\nseq: str = Client("a:1").timeout_s\n')
    command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache")]
    good = subprocess.run(
        [*command, str(script)], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=240
    )
    assert good.returncode == 0, good.stdout + good.stderr
    bad = subprocess.run([*command, str(wrong)], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert bad.returncode == 1 and "Incompatible types" in bad.stdout, bad.stdout  # weir's types are seen


def test_the_readme_example_runs_as_written(router_addresses: list[str], tmp_path: Path) -> None:
    needs_own_processes()
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    env = {**os.environ, "WEIR_ROUTERS": ",".join(router_addresses)}
    completed = subprocess.run(
        [sys.executable, str(script)], check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert len(lines) == 6, lines
    assert all(re.fullmatch(r"stored at partition \d seq \d+", line) for line in lines[:3]), lines
    consumed = sorted(lines[3:])
    assert consumed == [f"orders.created order {n} (seq {n + 1}, delivery 1)" for n in range(3)], consumed


async def test_consume_yields_typed_messages_settled_by_the_caller(weir_client: Client, stream_name: str) -> None:
    await weir_client.create_stream(stream_config(stream_name, subjects=[f"{stream_name}.>"], partitions=3))
    acks = [
        await weir_client.publish(stream_name, f"{stream_name}.{n}", b"%d" % n, headers={"n": str(n)}) for n in range(6)
    ]
    assert all(isinstance(ack, PublishAck) for ack in acks)
    config = consumer_config("workers", ack_wait_ms=60_000)
    seen: dict[bytes, Message] = {}
    async with weir_client.consume(stream_name, "workers", consumer_config=config) as messages:
        async for message in messages:
            assert isinstance(message, Message) and message.stream == stream_name
            assert message.headers == {"n": message.payload.decode()} and message.deliver_count == 1
            assert message.timestamp_ms > 0 and message.msg_id
            seen[message.payload] = message
            if len(seen) == 6:
                break
        assert {(m.partition, m.seq) for m in seen.values()} == {(a.partition, a.seq) for a in acks}
        await seen[b"0"].ack()
        with pytest.raises(NotPendingError):
            await seen[b"0"].ack()  # settled already
        await seen[b"1"].term()
        redeliver_at_ms = await seen[b"2"].in_progress()
        assert redeliver_at_ms > time.time() * 1000 + 30_000
        await seen[b"3"].nak()
        await seen[b"4"].ack()
        await seen[b"5"].ack()
        async for message in messages:  # the nak'ed one comes back at once, to the same loop
            assert (message.payload, message.deliver_count) == (b"3", 2)
            await message.ack()
            break
    info = await weir_client.consumer_info(stream_name, "workers")
    assert info.num_ack_pending == 1  # "2" is in progress, not settled


async def test_leaving_the_loop_hands_buffered_messages_back(weir_client: Client, stream_name: str) -> None:
    await weir_client.create_stream(stream_config(stream_name, subjects=[f"{stream_name}.>"]))
    for n in range(20):
        await weir_client.publish(stream_name, f"{stream_name}.x", b"%d" % n)
    config = consumer_config("g", ack_wait_ms=600_000)
    async with weir_client.consume(stream_name, "g", consumer_config=config, batch_size=20) as messages:
        async for message in messages:  # 20 fetched into the buffer; one handed out
            await message.ack()
            break
    # the 19 buffered ones were nak'ed on leaving: a new member gets them now, not after 10 minutes
    got: list[bytes] = []
    async with weir_client.consume(stream_name, "g", consumer_config=config) as messages:
        async for message in messages:
            got.append(message.payload)
            await message.ack()
            if len(got) == 19:
                break
    assert sorted(got, key=int) == [b"%d" % n for n in range(1, 20)]


async def test_a_member_that_stopped_iterating_gives_up_a_revoked_partition(
    weir_client: Client, stream_name: str
) -> None:
    """A subscription whose loop stopped iterating with a full buffer still hands a partition the
    router moved away back (its fetched batch is nak'ed), so a new member gets it: the member
    releases a revoked partition only once its batch is handed over, which must not wait for a
    loop that may never ask for more."""
    await weir_client.create_stream(stream_config(stream_name, partitions=2))
    for n in range(200):
        await weir_client.publish(stream_name, "s", b"%d" % n, partition=n % 2)
    config = consumer_config("pair", ack_wait_ms=600_000)
    async with weir_client.consume(stream_name, "pair", consumer_config=config, batch_size=10) as idle:
        first = await anext(idle)  # then no more: its buffer (20) fills and its fetch loops wait
        await first.ack()
        got: set[bytes] = set()
        async with weir_client.consume(stream_name, "pair", consumer_config=config, batch_size=10) as busy:

            async def take(message: Message) -> None:
                got.add(message.payload)
                await message.ack()

            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and len(got) < 20:
                await take(await asyncio.wait_for(anext(busy), deadline - time.monotonic()))
            assert len(got) >= 20
            # Both stay members with a partition each: the idle one released its partition and kept
            # heartbeating (before, its release waited on the full buffer, its heartbeats stopped
            # and the router dropped it after the group session timeout, 3 s here).
            await asyncio.sleep(4)
            info = await weir_client.group_info(stream_name, "pair")
            assert sorted(len(member.partitions) for member in info.members) == [1, 1]


async def test_consuming_a_missing_stream_fails_fast(weir_client: Client) -> None:
    started = time.monotonic()
    with pytest.raises(NoSuchStreamError):
        async for _ in weir_client.consume("no-such-stream-sdk", "billing"):
            pass
    assert time.monotonic() - started < 5


async def test_the_callback_form_gets_messages_and_may_settle_them(weir_client: Client, stream_name: str) -> None:
    await weir_client.create_stream(stream_config(stream_name, subjects=[f"{stream_name}.>"]))
    for n in range(4):
        await weir_client.publish(stream_name, f"{stream_name}.x", b"%d" % n)
    handled: list[Message] = []
    all_handled = asyncio.Event()

    async def handle(message: Message) -> None:
        handled.append(message)
        if message.payload == b"1":
            await message.term()  # settled by the handler: not acked after it
        if len(handled) == 4:
            all_handled.set()

    member = weir_client.group_consumer(stream_name, "cb", handle, max_wait_ms=100).start()
    try:
        await asyncio.wait_for(all_handled.wait(), 30)
    finally:
        await member.stop()
    assert sorted(message.payload for message in handled) == [b"0", b"1", b"2", b"3"]
    assert member.processed == 3
    info = await weir_client.consumer_info(stream_name, "cb")
    assert info.num_ack_pending == 0


async def test_node_and_cluster_clients_return_one_publish_type(weir_client: Client, stream_name: str) -> None:
    await weir_client.create_stream(stream_config(stream_name, subjects=[f"{stream_name}.>"]))
    cluster_ack = await weir_client.publish(stream_name, f"{stream_name}.a", b"x")
    node = await weir_client.leader(stream_name, 0)
    node_ack = await node.publish(stream_name, f"{stream_name}.a", b"y")
    assert type(cluster_ack) is type(node_ack) is PublishAck
    assert (node_ack.partition, node_ack.seq, node_ack.duplicate) == (0, cluster_ack.seq + 1, False)


async def test_a_bounded_client_coalesces_publishes_while_a_batch_is_out(
    router_addresses: list[str], stream_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """max_in_flight_batches=1: while a partition's batch waits for its answer, the publishes made
    meanwhile wait too and then go out together, in order (a full batch goes at once all the same)."""
    sent: list[int] = []  # entries of each batch, in the order they went out
    first_answer = asyncio.Event()
    batch_out = asyncio.Condition()
    exchange = NodeClient.exchange_publish_batch

    async def held(self: NodeClient, request: streams_pb2.PublishBatchRequest) -> streams_pb2.PublishBatchResponse:
        first = not sent
        sent.append(len(request.entries))
        async with batch_out:
            batch_out.notify_all()
        response = await exchange(self, request)
        if first:  # stored; its answer is held back
            await first_answer.wait()
        return response

    async def batches_sent(count: int) -> None:
        async with asyncio.timeout(10), batch_out:
            await batch_out.wait_for(lambda: len(sent) >= count)

    subject = f"{stream_name}.a"
    async with Client(router_addresses, linger_ms=1, max_in_flight_batches=1, batch_max_messages=5) as client:
        await client.create_stream(stream_config(stream_name, subjects=[f"{stream_name}.>"]))
        await client.route(stream_name)
        monkeypatch.setattr(NodeClient, "exchange_publish_batch", held)
        publishes = [asyncio.create_task(client.publish(stream_name, subject, b"0"))]
        await batches_sent(1)
        publishes += [asyncio.create_task(client.publish(stream_name, subject, b"%d" % n)) for n in range(1, 4)]
        await asyncio.sleep(0.1)  # their linger passes: still held back by the batch that is out
        assert sent == [1]
        publishes += [asyncio.create_task(client.publish(stream_name, subject, b"%d" % n)) for n in range(4, 6)]
        await batches_sent(2)  # the next batch filled up (3 + 2): out at once
        first_answer.set()
        acks = await asyncio.gather(*publishes)
    assert [ack.seq for ack in acks] == [1, 2, 3, 4, 5, 6]
    assert sent == [1, 5]


async def test_a_rejected_message_fails_alone_in_its_batch(router_addresses: list[str], stream_name: str) -> None:
    """The node rejects a whole batch for one invalid entry (storing nothing): the SDK fails that
    publish alone and stores the others, in order. A batch carries different callers' messages (the
    gateway coalesces concurrent Produce calls), so one bad message must not fail its neighbours."""
    subject = f"{stream_name}.a"
    async with Client(router_addresses, linger_ms=60_000) as client:
        await client.create_stream(stream_config(stream_name, subjects=[f"{stream_name}.>"], max_msg_bytes=64))
        messages = [(subject, b"1"), (subject, b"x" * 100), ("elsewhere.b", b"2"), (subject, b"3")]
        futures = [await client.publish_nowait(stream_name, name, payload) for name, payload in messages]
        await client.flush()  # one batch of four
    assert [futures[0].result().seq, futures[3].result().seq] == [1, 2]
    with pytest.raises(weir.OversizeError):
        futures[1].result()
    with pytest.raises(weir.SubjectRejectedError):
        futures[2].result()


@pytest.mark.parametrize("routers", ["127.0.0.1:1", ["127.0.0.1:1", "127.0.0.1:2"]])
def test_client_accepts_a_string_or_a_list(routers: str | list[str]) -> None:
    async def build() -> list[str]:
        client = Client(routers)
        try:
            return client.router.addresses
        finally:
            await client.close()

    assert asyncio.run(build()) == ([routers] if isinstance(routers, str) else routers)


async def test_keys_are_stored_and_returned(weir_client: Client, stream_name: str) -> None:
    """The publisher's key is stored with the message (kafka-pixy returns it on consume); an
    empty key is a key, no key is None; the key counts toward max_msg_bytes."""
    await weir_client.create_stream(
        stream_config(stream_name, subjects=[f"{stream_name}.>"], partitions=2, replicas=1, max_msg_bytes=64)
    )
    keyed = await weir_client.publish(stream_name, f"{stream_name}.a", b"1", key=b"customer-7")
    empty = await weir_client.publish(stream_name, f"{stream_name}.a", b"2", key=b"")
    keyless = await weir_client.publish(stream_name, f"{stream_name}.a", b"3", partition=0)
    node = await weir_client.leader(stream_name, keyed.partition)
    stored = await node.get_message(stream_name, keyed.partition, keyed.seq)
    assert stored.HasField("key") and stored.key == b"customer-7"
    with pytest.raises(weir.OversizeError):
        await weir_client.publish(stream_name, f"{stream_name}.a", b"x", key=b"k" * 64)
    keys: dict[bytes, bytes | None] = {}
    async with weir_client.consume(stream_name, "keys") as messages:
        async for message in messages:
            keys[message.payload] = message.key
            await message.ack()
            if len(keys) == 3:
                break
    assert keys == {b"1": b"customer-7", b"2": b"", b"3": None}
    assert {keyed.partition, empty.partition, keyless.partition} <= {0, 1}
