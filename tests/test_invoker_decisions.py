"""The invoker's pure parts (issue 31): the service protocol's framing, replayed completions,
invocation and awakeable ids, the retry schedule, manifests, subscriptions and the journal fold."""

from __future__ import annotations

import json

import pytest
from google.protobuf import message_factory
from weir.errors import DiscoveryFailedError, InvalidArgumentError, InvalidNameError
from weir.v1 import invoker_pb2, types_pb2
from weir_invoker import cancellation, ids, workflow
from weir_invoker import permissions as invoker_permissions
from weir_invoker.active import admission_chains, completed_indexes, earliest_wake_up_ms, final_result
from weir_invoker.attempt import StartPlan, start_message
from weir_invoker.discovery import deployment_id, parse_manifest
from weir_invoker.http2 import Endpoint
from weir_invoker.operations import describe_journal
from weir_invoker.protocol import (
    COMPLETED_FLAG,
    HEADER_BYTES,
    MAX_MESSAGE_BYTES,
    REQUIRES_ACK_FLAG,
    Frame,
    FrameDecoder,
    MessageType,
    ProtocolViolation,
    complete_entry,
    encode,
    entry_result,
    parse_header,
)
from weir_invoker.registry import Target, normalized_subscription
from weir_invoker.restate.pb import protocol_pb2 as pb
from weir_invoker.store import (
    COMPLETION_RECORD,
    ENTRY_RECORD,
    FLAGS_HEADER,
    INDEX_HEADER,
    RECORD_HEADER,
    TYPE_HEADER,
    Journal,
    add_record,
)
from weir_server.permissions import Requirement


def test_a_frame_is_an_eight_byte_header_and_the_message() -> None:
    message = pb.RunEntryMessage(value=b'"x"', name="charge")
    framed = encode(MessageType.RUN, message, REQUIRES_ACK_FLAG)
    assert framed[:HEADER_BYTES] == bytes([0x0C, 0x05, 0x80, 0x00]) + len(message.SerializeToString()).to_bytes(
        4, "big"
    )
    [frame] = list(FrameDecoder().feed(framed))
    assert (frame.type, frame.requires_ack, frame.completed) == (MessageType.RUN, True, False)
    assert frame.decode() == message


def test_frames_arrive_in_any_chunks_and_a_cut_one_is_left_pending() -> None:
    stream = encode(MessageType.START, pb.StartMessage(id=b"i", known_entries=1)) + encode(
        MessageType.INPUT, pb.InputEntryMessage(value=b"42")
    )
    decoder = FrameDecoder()
    frames = [frame for byte in stream for frame in decoder.feed(bytes([byte]))]
    assert [frame.type for frame in frames] == [MessageType.START, MessageType.INPUT]
    assert decoder.pending_bytes == 0
    assert list(decoder.feed(stream[:5])) == [] and decoder.pending_bytes == 5


def test_an_oversized_or_unknown_message_is_a_protocol_violation() -> None:
    header = (0x0401).to_bytes(2, "big") + b"\x00\x00" + (MAX_MESSAGE_BYTES + 1).to_bytes(4, "big")
    with pytest.raises(ProtocolViolation, match="over"):
        parse_header(header)
    with pytest.raises(ProtocolViolation, match="0x0ABC"):
        Frame(0x0ABC, 0, b"").decode()
    with pytest.raises(ProtocolViolation, match="does not decode"):
        Frame(MessageType.OUTPUT, 0, b"\xff\xff\xff").decode()


def test_the_state_message_ids_are_the_seeds_not_the_specifications_table() -> None:
    assert (MessageType.SET_STATE, MessageType.CLEAR_STATE, MessageType.CLEAR_ALL_STATE) == (0x0801, 0x0802, 0x0803)
    assert int(MessageType.GET_STATE_KEYS) == 0x0804


def test_a_replayed_entry_carries_its_completion_and_the_completed_flag() -> None:
    sleep = Frame(MessageType.SLEEP, 0, pb.SleepEntryMessage(wake_up_time=5).SerializeToString())
    done = pb.CompletionMessage()
    done.empty.SetInParent()
    completed = complete_entry(sleep, done)
    assert completed.flags & COMPLETED_FLAG and completed.decode().HasField("empty")
    keys = Frame(MessageType.GET_STATE_KEYS, 0, b"")
    listed = pb.GetStateKeysEntryMessage.StateKeys(keys=[b"a", b"b"]).SerializeToString()
    with_keys = complete_entry(keys, pb.CompletionMessage(value=listed))
    assert list(with_keys.decode().value.keys) == [b"a", b"b"]  # type: ignore[attr-defined]
    assert entry_result(with_keys) == pb.CompletionMessage(value=listed)
    call = Frame(MessageType.CALL, 0, pb.CallEntryMessage(service_name="s").SerializeToString())
    failed = complete_entry(call, pb.CompletionMessage(failure=pb.Failure(code=404, message="no")))
    assert failed.decode().failure.code == 404  # type: ignore[attr-defined]
    with pytest.raises(ProtocolViolation, match="not completable"):
        complete_entry(Frame(MessageType.RUN, 0, b""), done)


def test_a_start_plan_replays_the_journal_with_completions_filled_in() -> None:
    start = start_message(
        raw_id=b"\x01" * 16,
        invocation_id="inv_" + "01" * 16,
        key="k",
        known_entries=2,
        state={b"count": b"3"},
        retry_count=1,
        since_last_stored_ms=10,
    )
    assert (start.partial_state, [entry.key for entry in start.state_map]) == (False, [b"count"])
    entries = [
        Frame(MessageType.INPUT, 0, pb.InputEntryMessage(value=b"1").SerializeToString()),
        Frame(MessageType.SLEEP, 0, pb.SleepEntryMessage(wake_up_time=9).SerializeToString()),
    ]
    done = pb.CompletionMessage()
    done.empty.SetInParent()
    frames = StartPlan(start, entries, {1: done.SerializeToString()}).replay_frames()
    decoded = [frame for chunk in frames for frame in FrameDecoder().feed(chunk)]
    assert [frame.type for frame in decoded] == [MessageType.START, MessageType.INPUT, MessageType.SLEEP]
    assert decoded[2].completed and not decoded[1].completed


def test_invocation_ids_come_from_their_source() -> None:
    one = ids.for_message("sub", "orders", 2, 41)
    assert one == ids.for_message("sub", "orders", 2, 41) != ids.for_message("sub", "orders", 2, 42)
    assert one.startswith("inv_") and len(ids.raw_of(one)) == 16
    assert ids.for_call(one, 3) != ids.for_call(one, 4)
    assert ids.for_request("s", "h", "", "key-1") == ids.for_request("s", "h", "", "key-1")
    assert ids.for_request("s", "h", "", "") != ids.for_request("s", "h", "", "")
    for bad in ("inv_zz", "inv_" + "0" * 30, "0" * 32, ""):
        with pytest.raises(InvalidArgumentError, match="inv_"):
            ids.raw_of(bad)


def test_a_batch_stores_each_keys_records_in_order_and_different_keys_side_by_side() -> None:
    """A key's records are one chain (stored one after another, in batch order), so what an invoker
    that stops mid-batch leaves stored of a key is a prefix; records without a key stand alone."""
    keys = ["k2", "k0", "", "k2", "k1", "", "k0", "k2"]
    records = [invoker_pb2.Invocation(service="counter", key=key) for key in keys]
    records.append(invoker_pb2.Invocation(service="other", key="k2"))
    chains = admission_chains(records)
    assert sorted(index for chain in chains for index in chain) == list(range(len(records)))
    assert [0, 3, 7] in chains and [1, 6] in chains and [4] in chains and [8] in chains
    assert [2] in chains and [5] in chains
    assert admission_chains([]) == []


def test_an_awakeable_id_names_its_invocation_and_entry() -> None:
    invocation = ids.for_message("s", "t", 0, 1)
    awakeable = ids.awakeable_id(invocation, 7)
    assert awakeable.startswith("prom_1") and ids.parse_awakeable(awakeable) == (invocation, 7)
    for bad in ("prom_1", "prom_1!!!!", "prom_2" + awakeable[6:], awakeable + "AAAA"):
        with pytest.raises(InvalidArgumentError, match="awakeable"):
            ids.parse_awakeable(bad)


def test_retries_back_off_exponentially_unless_the_sdk_says_when() -> None:
    delays = [ids.retry_delay_ms(n, 100, 2.0, 1000, None) for n in range(1, 7)]
    assert delays == [100, 200, 400, 800, 1000, 1000]
    assert ids.retry_delay_ms(3, 100, 2.0, 1000, 50) == 50
    assert ids.retry_delay_ms(3, 100, 2.0, 1000, 10**9) == 1000


def manifest(**changes: object) -> bytes:
    base: dict[str, object] = {
        "protocolMode": "BIDI_STREAM",
        "minProtocolVersion": 2,
        "maxProtocolVersion": 2,
        "services": [{"name": "counter", "ty": "VIRTUAL_OBJECT", "handlers": [{"name": "add"}]}],
    }
    base.update(changes)
    return json.dumps(base).encode()


def test_a_manifest_becomes_a_deployment() -> None:
    deployment = parse_manifest("http://h:9080/", manifest(), "restate-sdk-python/0.4.1")
    assert deployment.url == "http://h:9080" and deployment.id == deployment_id("http://h:9080")
    [service] = deployment.services
    assert (service.name, service.kind, service.handlers[0].kind) == ("counter", "VIRTUAL_OBJECT", "EXCLUSIVE")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"not json", "not JSON"),
        (b"[]", "not an object"),
        (manifest(minProtocolVersion=3, maxProtocolVersion=4), "versions 3..4"),
        (manifest(protocolMode="CARRIER_PIGEON"), "protocolMode"),
        (manifest(services=[]), "no services"),
        (manifest(services=[{"name": "x", "ty": "ACTOR", "handlers": []}]), "kind"),
        (manifest(maxProtocolVersion="2"), "maxProtocolVersion"),
    ],
)
def test_a_bad_manifest_says_what_is_wrong(body: bytes, message: str) -> None:
    with pytest.raises(DiscoveryFailedError, match=message):
        parse_manifest("http://h:1", body)


def test_deployment_urls_are_http_or_https_with_a_host() -> None:
    assert Endpoint.parse("http://127.0.0.1:9080/prefix/") == Endpoint("http", "127.0.0.1", 9080, "/prefix")
    assert Endpoint.parse("https://h").port == 443
    for bad in ("ftp://h", "http://", "http://h:99999", "http://h?x=1", "http://u:p@h"):
        with pytest.raises(ValueError, match="deployment URL"):
            Endpoint.parse(bad)


def test_a_subscription_gets_its_defaults_and_bad_ones_are_refused() -> None:
    done = normalized_subscription(invoker_pb2.Subscription(stream="orders", service="counter", handler="add"))
    assert (done.id, done.consumer, done.start) == ("orders-counter-add", "orders-counter-add", "earliest")
    with pytest.raises(InvalidArgumentError, match="stream, service and handler"):
        normalized_subscription(invoker_pb2.Subscription(stream="orders"))
    with pytest.raises(InvalidArgumentError, match="start"):
        normalized_subscription(invoker_pb2.Subscription(stream="o", service="s", handler="h", start="middle"))
    with pytest.raises(InvalidArgumentError, match="subscription id"):
        normalized_subscription(invoker_pb2.Subscription(stream="o", service="s", handler="h", id="a b"))
    with pytest.raises(InvalidNameError):
        normalized_subscription(invoker_pb2.Subscription(stream="o o", service="s", handler="h"))


def stored(seq: int, kind: str, index: int, frame: Frame | None = None, payload: bytes = b"") -> types_pb2.Message:
    headers = {RECORD_HEADER: kind, INDEX_HEADER: str(index)}
    if frame is not None:
        headers[TYPE_HEADER] = str(frame.type)
        if frame.flags:
            headers[FLAGS_HEADER] = str(frame.flags)
        payload = frame.body
    return types_pb2.Message(
        seq=seq, payload=payload, headers=[types_pb2.Header(key=k, value=v) for k, v in headers.items()]
    )


def test_a_journal_folds_its_stored_messages_first_copy_wins() -> None:
    input_entry = Frame(MessageType.INPUT, 0, pb.InputEntryMessage(value=b"1").SerializeToString())
    sleep = Frame(MessageType.SLEEP, 0, pb.SleepEntryMessage(wake_up_time=9).SerializeToString())
    run = Frame(MessageType.RUN, REQUIRES_ACK_FLAG, pb.RunEntryMessage(value=b"x").SerializeToString())
    done = pb.CompletionMessage()
    done.empty.SetInParent()
    journal = Journal()
    for message in [
        stored(1, ENTRY_RECORD, 0, input_entry),
        stored(2, ENTRY_RECORD, 1, sleep),
        stored(3, ENTRY_RECORD, 1, run),  # a second copy of index 1 (a late retry): ignored
        stored(4, COMPLETION_RECORD, 1, payload=done.SerializeToString()),
        stored(5, ENTRY_RECORD, 2, run),
        stored(6, COMPLETION_RECORD, 1, payload=b"later"),
    ]:
        add_record(journal, message)
    assert [frame.type for frame in journal.entries] == [MessageType.INPUT, MessageType.SLEEP, MessageType.RUN]
    assert journal.entries[2].requires_ack and journal.completions[1] == done.SerializeToString()
    assert journal.seqs == [1, 2, 3, 4, 5, 6]
    assert completed_indexes(journal) == {0, 1, 2}
    described = describe_journal(journal, ids.for_message("s", "t", 0, 1))
    assert [(entry.type_name, entry.completed) for entry in described] == [
        ("Input", True),
        ("Sleep", True),
        ("Run", True),
    ]
    assert described[1].summary.startswith("until 1970-01-01T00:00:00.009")
    awaiting = Journal(entries=[input_entry, Frame(MessageType.AWAKEABLE, 0, b"")])
    [_, awakeable] = describe_journal(awaiting, ids.for_message("s", "t", 0, 1))
    assert ids.parse_awakeable(awakeable.summary) == (ids.for_message("s", "t", 0, 1), 1)
    assert not awakeable.completed


def test_every_invoker_call_needs_a_named_permission() -> None:
    """Each weir.v1.Invoker method maps to an action on the invoker's stream (a subscription: admin
    on its source stream); nothing else on the port is callable by a user."""
    service = invoker_pb2.DESCRIPTOR.services_by_name["Invoker"]
    for method in service.methods:
        request = message_factory.GetMessageClass(method.input_type)()
        needed = invoker_permissions.requirement(f"/{service.full_name}/{method.name}", request)
        assert needed is not None and needed.action in ("read", "publish", "admin"), method.name
    subscribe = invoker_pb2.CreateSubscriptionRequest(subscription=invoker_pb2.Subscription(stream="orders"))
    assert invoker_permissions.requirement("/weir.v1.Invoker/CreateSubscription", subscribe) == Requirement(
        "admin", "orders"
    )
    assert invoker_permissions.requirement("/weir.v1.Invoker/Invoke", None) == Requirement("publish", "invoker:journal")
    assert invoker_permissions.requirement("/weir.v1.Streams/Publish", None) is None


def test_a_suspended_invocation_wakes_up_at_its_earliest_awaited_sleep() -> None:
    def sleep(wake_up_time: int) -> Frame:
        return Frame(MessageType.SLEEP, 0, pb.SleepEntryMessage(wake_up_time=wake_up_time).SerializeToString())

    run = Frame(MessageType.RUN, 0, pb.RunEntryMessage(name="charge").SerializeToString())
    journal = Journal(entries=[Frame(MessageType.INPUT, 0, b""), sleep(9_000), run, sleep(5_000), sleep(1_000)])
    assert earliest_wake_up_ms(journal, [1, 2, 3]) == 5_000  # entry 4 is not awaited
    assert earliest_wake_up_ms(journal, [2]) == 0  # awaits no sleep
    assert earliest_wake_up_ms(journal, [1, 7]) == 9_000  # an index past the journal is no timer
    assert earliest_wake_up_ms(None, [1]) == 0  # journal not loaded


def test_an_ended_invocation_finishes_with_its_last_output_entry() -> None:
    def output(message: pb.OutputEntryMessage) -> Frame:
        return Frame(MessageType.OUTPUT, 0, message.SerializeToString())

    completed = invoker_pb2.InvocationStatus.INVOCATION_STATUS_COMPLETED
    failed = invoker_pb2.InvocationStatus.INVOCATION_STATUS_FAILED
    first = output(pb.OutputEntryMessage(value=b'"first"'))
    assert final_result(Journal(entries=[first, output(pb.OutputEntryMessage(value=b'"last"'))])) == (
        completed,
        b'"last"',
    )
    failure = pb.Failure(code=422, message="no such account")
    assert final_result(Journal(entries=[first, output(pb.OutputEntryMessage(failure=failure))])) == (failed, failure)
    assert final_result(Journal(entries=[Frame(MessageType.INPUT, 0, b"")])) == (completed, b"")


def _target(service_kind: str, handler_kind: str) -> Target:
    service = invoker_pb2.DeployedService(name="flow", kind=service_kind)
    handler = invoker_pb2.DeployedHandler(name="run", kind=handler_kind)
    return Target(invoker_pb2.Deployment(id="dp_1"), service, handler)


def test_only_a_workflows_run_handler_runs_once_per_key() -> None:
    run = _target("WORKFLOW", "WORKFLOW")
    assert workflow.runs_once_per_key(run)
    assert not workflow.runs_once_per_key(_target("WORKFLOW", "SHARED"))
    assert not workflow.runs_once_per_key(_target("VIRTUAL_OBJECT", "EXCLUSIVE"))
    # every submit of run for one key names one invocation, whatever id it would have had otherwise
    assert workflow.invocation_id(run, "wf1", "inv_a") == workflow.invocation_id(run, "wf1", "inv_b")
    assert workflow.invocation_id(run, "wf1", "inv_a") == ids.for_workflow_run("flow", "wf1")
    assert workflow.invocation_id(run, "wf1", "inv_a") != workflow.invocation_id(run, "wf2", "inv_a")
    ids.raw_of(ids.for_workflow_run("flow", "wf1"))  # a valid invocation id
    assert workflow.invocation_id(_target("WORKFLOW", "SHARED"), "wf1", "inv_a") == "inv_a"


def test_a_caller_attaches_to_a_run_it_did_not_start() -> None:
    Status = invoker_pb2.InvocationStatus
    running = invoker_pb2.Invocation(id="inv_r", status=Status.INVOCATION_STATUS_SUSPENDED)
    done = invoker_pb2.Invocation(id="inv_r", status=Status.INVOCATION_STATUS_COMPLETED, output=b'"x"')
    mine = invoker_pb2.Invocation(
        id="inv_r", status=Status.INVOCATION_STATUS_RUNNING, parent_id="inv_p", parent_entry_index=3, parent_awaits=True
    )
    assert workflow.attach(running, True, "inv_p", 3) == workflow.Attach.NOTHING  # it started the run
    assert workflow.attach(mine, False, "inv_p", 3) == workflow.Attach.NOTHING  # its recorded caller (a replay)
    assert workflow.attach(mine, False, "inv_p", 4) == workflow.Attach.WAIT
    assert workflow.attach(running, False, "inv_p", 3) == workflow.Attach.WAIT
    assert workflow.attach(done, False, "inv_p", 3) == workflow.Attach.RESULT_NOW


def test_a_cancel_fails_what_the_handler_awaits_and_cancels_its_awaited_children() -> None:
    def entry(kind: int, completed: bool = False) -> Frame:
        return Frame(kind, COMPLETED_FLAG if completed else 0, b"")

    journal = Journal(
        entries=[
            entry(MessageType.INPUT),
            entry(MessageType.RUN),
            entry(MessageType.SLEEP),  # awaited: fails
            entry(MessageType.CALL),  # awaited: its child is cancelled
            entry(MessageType.AWAKEABLE, completed=True),  # has its result
            entry(MessageType.ONE_WAY_CALL),  # detached: left alone
            entry(MessageType.GET_PROMISE),  # completed since (in `completions`)
            entry(MessageType.AWAKEABLE),  # awaited: fails
        ],
        completions={6: b""},
    )
    plan = cancellation.plan(journal, completed_indexes(journal))
    assert (plan.fail, plan.children, plan.armed) == ((2, 7), (3,), False)
    nothing = cancellation.plan(Journal(entries=[entry(MessageType.INPUT), entry(MessageType.RUN)]), {0, 1})
    assert nothing.armed  # busy between awaits: the next awaited entry fails
    assert cancellation.awaits_result(entry(MessageType.CALL))
    assert not cancellation.awaits_result(entry(MessageType.RUN))
    assert not cancellation.awaits_result(entry(MessageType.GET_STATE, completed=True))


def test_a_cancel_ends_an_unstarted_invocation_and_names_the_end_of_a_started_one() -> None:
    Status = invoker_pb2.InvocationStatus
    assert not cancellation.started(invoker_pb2.Invocation(attempts=0))
    assert cancellation.started(invoker_pb2.Invocation(attempts=1))
    let_through = cancellation.cancelled_failure()
    assert cancellation.final_status(Status.INVOCATION_STATUS_FAILED, let_through) == Status.INVOCATION_STATUS_CANCELLED
    other = pb.Failure(code=422, message="refused")
    assert cancellation.final_status(Status.INVOCATION_STATUS_FAILED, other) == Status.INVOCATION_STATUS_FAILED
    compensated = cancellation.final_status(Status.INVOCATION_STATUS_COMPLETED, b'"refunded"')
    assert compensated == Status.INVOCATION_STATUS_COMPLETED  # the handler caught it and returned
