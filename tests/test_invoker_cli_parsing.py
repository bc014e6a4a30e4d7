"""The invoker's CLI commands and SDK helpers without an invoker: argument parsing (SERVICE/HANDLER,
statuses, limits, --invoker before or after the verb), values sent as JSON, what is printed, and every
mistake as one line with exit status 2 before anything is sent."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import weir
from weir import tls as weir_tls
from weir.errors import InvalidArgumentError, NoSuchHandlerError, NoSuchInvocationError
from weir.invoker import STATUS_NAMES, invocation_status, is_finished, status_name
from weir.v1 import invoker_pb2
from weir_cli import cli
from weir_cli import invoker as commands
from weir_cli.cli_error import CliError
from weir_cli.parser import build_parser


@pytest.fixture
def parser() -> argparse.ArgumentParser:
    return build_parser("test")


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No WEIR_* variable, local cluster or TLS default of this machine leaks in (or out)."""
    for name in [name for name in __import__("os").environ if name.startswith("WEIR_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / ".state"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(weir_tls._Default, "value", weir_tls._Default.value)


def usage_error(parser: argparse.ArgumentParser, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a usage mistake prints (exit status 2)."""
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(argv)
    assert exited.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = cli.main(argv)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# -- parsing -----------------------------------------------------------------------------------------


def test_every_command_parses_with_its_defaults(parser: argparse.ArgumentParser) -> None:
    args = parser.parse_args(["deployments", "register", "http://127.0.0.1:9080"])
    assert (args.handler, args.url) == (commands.deployment_register, "http://127.0.0.1:9080")
    assert parser.parse_args(["deployments", "ls"]).handler is commands.deployment_list
    assert parser.parse_args(["deployments", "rm", "dp_1"]).id == "dp_1"
    args = parser.parse_args(["subscriptions", "create", "orders", "Greeter/greet"])
    assert (args.stream, args.target, args.start) == ("orders", ("Greeter", "greet"), "earliest")
    assert (args.id, args.consumer, args.filter_subject, args.dead_letter_stream, args.reply_stream) == ("",) * 5
    assert parser.parse_args(["subscriptions", "ls"]).handler is commands.subscription_list
    assert parser.parse_args(["subscriptions", "rm", "s1"]).handler is commands.subscription_delete
    args = parser.parse_args(["invoke", "Cart/add"])
    assert (args.target, args.key, args.data, args.data_file, args.idempotency_key, args.wait) == (
        ("Cart", "add"),
        "",
        None,
        None,
        "",
        False,
    )
    args = parser.parse_args(["invocations", "ls"])
    assert (args.status, args.service, args.limit) == (None, "", 0)
    assert parser.parse_args(["invocations", "show", "inv_1"]).handler is commands.invocation_show
    assert parser.parse_args(["invocations", "cancel", "inv_1"]).handler is commands.invocation_cancel
    args = parser.parse_args(["awakeables", "resolve", "prom_1x"])
    assert (args.handler, args.id, args.value) == (commands.awakeable_resolve, "prom_1x", None)
    args = parser.parse_args(["awakeables", "reject", "prom_1x", "no stock"])
    assert (args.message, args.code) == ("no stock", 500)


def test_every_flag_is_taken(parser: argparse.ArgumentParser) -> None:
    flags = ["--id", "s1", "--consumer", "g", "--filter-subject", "orders.*", "--dead-letter-stream", "dead"]
    flags += ["--reply-stream", "replies", "--start", "latest"]
    args = parser.parse_args(["subscriptions", "create", "orders", "Cart/add", *flags])
    assert (args.id, args.consumer, args.filter_subject) == ("s1", "g", "orders.*")
    assert (args.dead_letter_stream, args.reply_stream, args.start) == ("dead", "replies", "latest")
    args = parser.parse_args(
        ["invoke", "Cart/add", "--key", "alice", "--data", '"o1"', "--idempotency-key", "k", "--wait"]
    )
    assert (args.key, args.data, args.idempotency_key, args.wait) == ("alice", '"o1"', "k", True)
    args = parser.parse_args(["invocations", "ls", "--status", "Backing-Off", "--service", "Cart", "--limit", "10000"])
    assert (args.status, args.service, args.limit) == ("backing_off", "Cart", 10000)
    assert parser.parse_args(["awakeables", "reject", "p", "m", "--code", "409"]).code == 409


def test_the_invoker_is_taken_before_or_after_the_verb(parser: argparse.ArgumentParser) -> None:
    assert parser.parse_args(["--invoker", "h:1", "invocations", "ls"]).invoker == "h:1"
    assert parser.parse_args(["invocations", "ls", "--invoker", "h:2"]).invoker == "h:2"
    assert parser.parse_args(["--invoker", "h:1", "invoke", "A/b", "--invoker", "h:2"]).invoker == "h:2"
    assert not hasattr(parser.parse_args(["deployments", "ls"]), "invoker")  # main fills in None


def test_the_invoker_is_the_flag_the_variable_the_local_clusters_or_the_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    no_flag = argparse.Namespace(invoker=None, data_dir=None)
    assert commands.find_invoker(no_flag) == commands.InvokerTarget("127.0.0.1:7720", "the default")
    local = tmp_path / "weir-cluster"
    local.mkdir()
    (local / "cluster.json").write_text(json.dumps({"invokers": []}))
    assert commands.find_invoker(no_flag).found_from == "the default"
    (local / "cluster.json").write_text(json.dumps({"invokers": [{"invoker_id": "invoker-1", "address": "h:41"}]}))
    assert commands.find_invoker(no_flag) == commands.InvokerTarget("h:41", f"the local cluster under {local}", local)
    monkeypatch.setenv("WEIR_INVOKER", "invoker.local:7800")
    assert commands.find_invoker(no_flag) == commands.InvokerTarget("invoker.local:7800", "$WEIR_INVOKER")
    flag = argparse.Namespace(invoker="h:1", data_dir=None)
    assert commands.find_invoker(flag) == commands.InvokerTarget("h:1", "--invoker")
    monkeypatch.setenv("WEIR_INVOKER", "invoker.local")
    with pytest.raises(CliError) as error:
        commands.find_invoker(no_flag)
    assert error.value.status == 2 and "$WEIR_INVOKER: expected HOST:PORT" in str(error.value)


def test_service_handler_mistakes_are_one_line_with_status_2(
    parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    assert commands.service_handler("greeter.Greeter/greet") == ("greeter.Greeter", "greet")
    for bad in ("Greeter", "Greeter/", "/greet", "A/b/c/d", "Greeter/ greet", ""):
        line = usage_error(parser, ["invoke", bad], capsys)
        assert line.startswith("weir invoke: argument SERVICE/HANDLER: expected SERVICE/HANDLER"), line
        assert "(see 'weir invoke --help')" in line
    line = usage_error(parser, ["subscriptions", "create", "orders", "Cart/alice/add"], capsys)
    assert "give the key with --key (Cart/add --key alice)" in line


def test_bad_statuses_limits_codes_and_addresses_are_refused(
    parser: argparse.ArgumentParser, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, fragment in (
        (["invocations", "ls", "--status", "suspend"], "'suspend' is not a choice; did you mean 'suspended'?"),
        (["invocations", "ls", "--status", "zzz"], "--status: 'zzz' is not a choice; one of pending, running,"),
        (["invocations", "ls", "--limit", "10001"], "--limit: must be 0..10000, got 10001"),
        (["invocations", "ls", "--limit", "x"], "--limit: not an integer: 'x'"),
        (["awakeables", "reject", "p", "m", "--code", "0"], "--code: must be 1 or more, got 0"),
        (["subscriptions", "create", "s", "A/b", "--start", "first"], "--start: 'first' is not a choice"),
        (["deployments", "ls", "--invoker", "localhost"], "--invoker: expected HOST:PORT (port 1-65535)"),
        (["invoke", "A/b", "--data", "1", "--data-file", "f"], "not allowed with argument --data"),
        (["invocations", "show"], "the following arguments are required: id"),
    ):
        assert fragment in usage_error(parser, argv, capsys), argv


# -- values and statuses -----------------------------------------------------------------------------


def test_values_are_json_as_given_and_other_text_becomes_a_json_string() -> None:
    for given in ('"o1"', '{"id": 1}', "[1, 2]", "42", "true", "null", ' "spaced" '):
        assert commands.json_value(given, "--data") == (given.encode(), None)
    value, note = commands.json_value("approved", "VALUE")
    assert value == b'"approved"'
    assert note == """VALUE: 'approved' is not JSON; sent as the JSON string "approved\""""
    assert commands.json_value("héllo wörld", "--data")[0] == '"héllo wörld"'.encode()
    assert commands.json_value("", "--data") == (b"", None)
    for malformed in ("{id: 1}", "[1,", '"open'):
        with pytest.raises(CliError) as error:
            commands.json_value(malformed, "--data")
        assert error.value.status == 2 and str(error.value).startswith(f"--data: {malformed!r} is not valid JSON (")


def test_the_status_names_and_their_values() -> None:
    assert list(STATUS_NAMES) == ["pending", "running", "suspended", "backing_off", "completed", "failed", "cancelled"]
    assert invocation_status(None) == invocation_status("") == invoker_pb2.INVOCATION_STATUS_UNSPECIFIED
    assert invocation_status("suspended") == invoker_pb2.INVOCATION_STATUS_SUSPENDED
    assert invocation_status("BACKING-OFF") == invoker_pb2.INVOCATION_STATUS_BACKING_OFF
    assert invocation_status("INVOCATION_STATUS_FAILED") == invoker_pb2.INVOCATION_STATUS_FAILED
    assert invocation_status(invoker_pb2.INVOCATION_STATUS_RUNNING) == invoker_pb2.INVOCATION_STATUS_RUNNING
    for bad in ("suspend", 99):
        with pytest.raises(InvalidArgumentError):
            invocation_status(bad)
    assert [status_name(value) for value in (0, 4, 7, 99)] == ["unspecified", "backing_off", "cancelled", "99"]
    assert commands.status_choice("Invocation_Status_Backing-Off") == "backing_off"
    finished = [name for name, value in STATUS_NAMES.items() if is_finished(invoker_pb2.Invocation(status=value))]
    assert finished == ["completed", "failed", "cancelled"]


# -- what is printed ---------------------------------------------------------------------------------


def _invocation(**fields: object) -> invoker_pb2.Invocation:
    base: dict[str, object] = {"id": "inv_1", "service": "Cart", "handler": "add", "created_at_ms": 1_700_000_000_000}
    return invoker_pb2.Invocation(**(base | fields))  # type: ignore[arg-type]


def test_json_shows_status_names_text_values_and_base64_for_bytes() -> None:
    completed = commands.invocation_dict(
        _invocation(status=invoker_pb2.INVOCATION_STATUS_COMPLETED, input=b'"o1"', output=b'"ok"', source_seq=7)
    )
    assert (completed["status"], completed["input"], completed["output"]) == ("completed", '"o1"', '"ok"')
    assert completed["source_seq"] == 7 and completed["created_at_ms"] == 1_700_000_000_000  # numbers
    binary = commands.invocation_dict(_invocation(output=b"\xff\x00"))
    assert binary["output_base64"] == "/wA=" and "output" not in binary
    failed = commands.invocation_dict(
        _invocation(status=6, failure=invoker_pb2.InvocationFailure(code=500, message="boom"))
    )
    assert failed["failure"] == {"code": 500, "message": "boom"} and "output" not in failed
    entry = commands.journal_dict(invoker_pb2.JournalEntry(index=1, type_name="Sleep", message=b"\x01"))
    assert entry["message_base64"] == "AQ==" and "message" not in entry
    json.dumps([completed, binary, failed, entry])


def test_an_invocation_and_its_journal_for_a_person() -> None:
    suspended = _invocation(
        key="alice",
        status=invoker_pb2.INVOCATION_STATUS_SUSPENDED,
        attempts=1,
        subscription_id="orders-Cart-add",
        source_stream="orders",
        source_partition=2,
        source_seq=17,
        source_subject="orders.new",
        waiting_on_entries=[3, 5],
        deployment_id="dp_9",
    )
    lines = commands.invocation_lines(suspended)
    assert lines[0] == "invocation inv_1: Cart/add key alice, suspended (1 attempt)"
    assert lines[1] == "from subscription orders-Cart-add (orders[2] #17, subject orders.new), deployment dp_9"
    assert lines[3].startswith("waiting on entries 3, 5; wake-up -")
    failed = _invocation(
        status=6, attempts=3, parent_id="inv_0", parent_entry_index=4, parent_awaits=True, last_failure="boom"
    )
    failed.failure.CopyFrom(invoker_pb2.InvocationFailure(code=500, message="boom"))
    text = "\n".join(commands.invocation_lines(failed))
    assert "from a call from inv_0 (entry 4)" in text and "failure: 500 boom" in text and "(3 attempts)" in text
    assert "from an Invoke call" in commands.invocation_lines(_invocation())[1]
    journal = [
        invoker_pb2.JournalEntry(index=0, type_name="Input", completed=False, summary="8 bytes"),
        invoker_pb2.JournalEntry(index=1, type_name="Run", name="charge", completed=True, summary="ok"),
    ]
    header, first, second = commands.journal_table(journal).splitlines()
    assert header.split() == ["INDEX", "TYPE", "NAME", "COMPLETED", "SUMMARY"]
    assert first.split() == ["0", "Input", "-", "8", "bytes"] and second.split() == ["1", "Run", "charge", "yes", "ok"]


def test_an_sdks_traceback_is_shown_whole_and_summed_up_in_its_last_line() -> None:
    traceback = '500: Traceback (most recent call last):\n\n  File "h.py", line 9, in flaky\n'
    traceback += "    raise RuntimeError('flaky')\n\nRuntimeError: flaky failure 1 of f\n (entry 0)"
    assert commands.failure_line(traceback) == "RuntimeError: flaky failure 1 of f (entry 0)"
    assert commands.failure_line("500: boom") == "500: boom" and commands.failure_line("") == ""
    backing_off = _invocation(status=4, last_failure=traceback, next_retry_at_ms=1_700_000_001_000)
    lines = commands.invocation_lines(backing_off)
    title = next(line for line in lines if line.startswith("last failure"))
    assert title.startswith("last failure (next retry ") and title.endswith(":")
    assert "  RuntimeError: flaky failure 1 of f" in lines and all(line == line.rstrip() for line in lines)
    completed = commands.invocation_lines(_invocation(status=5, last_failure="500: boom", output=b"1"))
    assert "last failure: 500: boom" in completed  # no retry is coming


def test_a_finished_invocation_prints_its_output_or_fails_with_status_1(capsys: pytest.CaptureFixture[str]) -> None:
    human = argparse.Namespace(json=False)
    completed = _invocation(status=invoker_pb2.INVOCATION_STATUS_COMPLETED, output=b'"hello"')
    assert commands._finished(human, completed) == 0
    assert capsys.readouterr().out == '"hello"\n'
    assert commands._finished(human, _invocation(status=5, output=b"")) == 0  # a handler returning nothing
    assert capsys.readouterr().out == ""
    failed = _invocation(status=invoker_pb2.INVOCATION_STATUS_FAILED)
    failed.failure.CopyFrom(invoker_pb2.InvocationFailure(code=500, message="out of stock"))
    with pytest.raises(CliError) as error:
        commands._finished(human, failed)
    assert (str(error.value), error.value.status) == ("invocation inv_1 failed: 500 out of stock", 1)
    cancelled = _invocation(status=invoker_pb2.INVOCATION_STATUS_CANCELLED)
    cancelled.failure.CopyFrom(invoker_pb2.InvocationFailure(code=409, message="cancelled"))
    with pytest.raises(CliError, match="invocation inv_1 was cancelled: 409 cancelled"):
        commands._finished(argparse.Namespace(json=True), cancelled)
    assert json.loads(capsys.readouterr().out)["status"] == "cancelled"


def test_wait_says_each_status_change_before_the_end(capsys: pytest.CaptureFixture[str]) -> None:
    note = commands._status_note(argparse.Namespace(verbose=True), _invocation(status=1))
    for status, fields in (
        (1, {}),
        (2, {}),
        (4, {"attempts": 1, "last_failure": "500: Traceback\nValueError: no"}),
        (2, {}),
        (3, {"waiting_on_entries": [2]}),
        (5, {}),
    ):
        note(_invocation(status=status, **fields))
    assert capsys.readouterr().err.splitlines() == [
        "weir: inv_1 is running",
        "weir: inv_1 is backing_off (attempt 1: ValueError: no)",
        "weir: inv_1 is running",
        "weir: inv_1 is suspended (waiting on entries 2)",
    ]


def test_the_invokers_errors_name_the_command_that_lists_the_names() -> None:
    args = argparse.Namespace()
    described = cli._describe(NoSuchInvocationError("invocation inv_9 does not exist"), args)
    assert described == "no_such_invocation: invocation inv_9 does not exist ('weir invocations ls' shows them)"
    assert "'weir deployments ls' shows" in cli._describe(NoSuchHandlerError("Cart/x"), args)


# -- whole commands that stop before anything is sent, or at a closed port ---------------------------


def test_a_bare_word_is_noted_and_malformed_json_stops_before_anything_is_sent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, err = run(["invoke", "Cart/add", "--data", "{id: 1}", "--invoker", "127.0.0.1:1"], capsys)
    assert (status, out) == (2, "")
    assert err.startswith("weir: --data: '{id: 1}' is not valid JSON (Expecting property name") and err.count("\n") == 1
    status, out, err = run(["awakeables", "resolve", "prom_1x", "approved", "--invoker", "127.0.0.1:1"], capsys)
    assert status == 1  # nothing listens there
    note, failed = err.splitlines()
    assert note == """weir: note: VALUE: 'approved' is not JSON; sent as the JSON string "approved\""""
    assert failed.startswith("weir: the invoker at 127.0.0.1:1 (from --invoker) did not answer (")
    assert "python -m weir_invoker" in failed


def test_a_missing_data_file_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run(["invoke", "Cart/add", "--data-file", str(tmp_path / "none.json")], capsys)
    assert status == 2 and err == f"weir: --data-file: {tmp_path / 'none.json'} is not a readable file\n"


def test_the_sdk_exports_the_client_and_the_invokers_errors() -> None:
    for name in (
        "InvokerClient",
        "NoSuchDeploymentError",
        "NoSuchSubscriptionError",
        "NoSuchInvocationError",
        "NoSuchHandlerError",
        "DiscoveryFailedError",
        "FailedPreconditionError",
    ):
        assert name in weir.__all__ and getattr(weir, name) is not None
    assert weir.WeirError.for_code("discovery_failed", "x").__class__ is weir.DiscoveryFailedError


def test_a_full_option_name_is_never_read_as_an_abbreviation() -> None:
    """`cluster up --tls` is its own flag, not an ambiguous --tls-ca/--tls-cert/--tls-key at the
    levels above it (every level sees the words of the levels below)."""
    parser = build_parser("test")
    assert parser.parse_args(["cluster", "up", "--tls"]).tls is True
    assert parser.parse_args(["--tls-ca", "ca.pem", "stream", "list"]).tls_ca == "ca.pem"
