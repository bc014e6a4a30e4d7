"""Every mistake a new user made with the CLI (issue 24) is one clear line on stderr and a non-zero
exit, or now does what they meant. Each command is a real subprocess against the shared cluster."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest
from weir_cli.cli import bench_arguments
from weir_cli.launcher import NodeHandle
from weir_cli.parser import build_parser
from weir_cli.ports import port_is_free

from tests.conftest import needs_own_processes

TIMEOUT_S = 60


def weir(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    clean["XDG_STATE_HOME"] = str(cwd / ".state")
    return subprocess.run(
        [sys.executable, "-m", "weir_cli.cli", *args],
        cwd=cwd,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def one_line_error(result: subprocess.CompletedProcess[str], status: int, fragment: str) -> None:
    assert result.returncode == status, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert lines[0].startswith("weir") and fragment in lines[0], lines


@pytest.fixture(scope="module")
def routers(router_addresses: list[str]) -> str:
    needs_own_processes()
    return ",".join(router_addresses)


def test_sub_on_a_mistyped_stream_fails_at_once(routers: str, tmp_path: Path) -> None:
    started = time.monotonic()
    result = weir("sub", "no-such-orders", "billing", "--router", routers, cwd=tmp_path)
    one_line_error(result, 1, "no_such_stream: stream 'no-such-orders' does not exist ('weir stream list' shows")
    assert time.monotonic() - started < 20
    for args in (("read", "no-such-orders"), ("fetch", "no-such-orders", "c"), ("stream", "info", "no-such-orders")):
        one_line_error(weir(*args, "--router", routers, cwd=tmp_path), 1, "'weir stream list' shows the streams")


def test_read_and_fetch_cover_every_partition(routers: str, tmp_path: Path, stream_name: str) -> None:
    weir("stream", "create", stream_name, "--partitions", "4", "--router", routers, cwd=tmp_path)
    assert weir("pub", stream_name, "x", "m{n}", "--count", "8", "--router", routers, cwd=tmp_path).returncode == 0
    read = [
        json.loads(line)
        for line in weir("--json", "read", stream_name, "--router", routers, cwd=tmp_path).stdout.splitlines()
    ]
    assert sorted(message["payload"] for message in read) == sorted(f"m{n}" for n in range(1, 9))
    assert {message["partition"] for message in read} == {0, 1, 2, 3}
    weir("consumer", "create", stream_name, "c", "--router", routers, cwd=tmp_path)
    fetched = weir("fetch", stream_name, "c", "--batch", "8", "--json", "--router", routers, cwd=tmp_path)
    assert len(fetched.stdout.splitlines()) == 8
    beyond = weir("read", stream_name, "--partition", "9", "--router", routers, cwd=tmp_path)
    one_line_error(beyond, 1, "has 4 partition(s)")


def test_human_output_shows_text_payloads_keys_and_a_short_stream_info(
    routers: str, tmp_path: Path, stream_name: str
) -> None:
    weir("stream", "create", stream_name, "--router", routers, cwd=tmp_path)
    weir("pub", stream_name, "x", "héllo", "--key", "k9", "--router", routers, cwd=tmp_path)
    (line,) = weir("read", stream_name, "--router", routers, cwd=tmp_path).stdout.splitlines()
    assert line.endswith("  héllo") and "key=k9" in line and f"{stream_name}[0] #1" in line
    info = weir("stream", "info", stream_name, "--router", routers, cwd=tmp_path).stdout.splitlines()
    assert len(info) < 12 and info[0].startswith(f"stream {stream_name}: 1 partition(s)")
    assert info[-2].split() == ["partition", "leader", "seqs", "messages", "bytes", "in-sync", "replicas"]
    partition, leader, seqs, messages, *_ = info[-1].split()
    assert (partition, leader.startswith("node-"), seqs, messages) == ("0", True, "1..1", "1"), info
    as_json = json.loads(weir("stream", "info", stream_name, "--json", "--router", routers, cwd=tmp_path).stdout)
    assert as_json["stats"]["msg_count"] == 1  # a number, not a string
    assert as_json["stats"]["partitions"][0]["leader"] == leader


def test_a_stream_with_sources_from_the_command_line(routers: str, tmp_path: Path, stream_name: str) -> None:
    """`weir stream create --source` makes a sourcing stream; `weir stream info` shows its tails."""
    origin, copy = f"{stream_name}-o", f"{stream_name}-c"
    weir("stream", "create", origin, "--router", routers, cwd=tmp_path)
    for subject in ("a.1", "b.2", "a.3"):
        weir("pub", origin, subject, "x", "--router", routers, cwd=tmp_path)
    source = f"{origin},filter=a.*,transform=a.*->copied.{{{{wildcard(1)}}}}"
    created = weir("stream", "create", copy, "--source", source, "--router", routers, cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    deadline = time.monotonic() + 20
    subjects: list[str] = []
    while time.monotonic() < deadline and len(subjects) < 2:
        read = weir("--json", "read", copy, "--router", routers, cwd=tmp_path)
        subjects = [json.loads(line)["subject"] for line in read.stdout.splitlines() if line.strip()]
        time.sleep(0.2)
    assert subjects == ["copied.1", "copied.3"]
    info = weir("stream", "info", copy, "--router", routers, cwd=tmp_path).stdout.splitlines()
    assert info[-2].split()[:4] == ["source", "last", "sourced", "seq"]
    assert info[-1].split()[:3] == [f"{origin}/0", "3", "2"], info


def test_payloads_that_are_not_text(routers: str, tmp_path: Path, stream_name: str) -> None:
    """Bytes on the command line that are not UTF-8 are published as given (no traceback); people see
    them as hex, --json as base64."""
    weir("stream", "create", stream_name, "--router", routers, cwd=tmp_path)
    published = subprocess.run(
        [
            sys.executable,
            "-m",
            "weir_cli.cli",
            "pub",
            stream_name,
            "x",
            b"a\xffb",
            "--key",
            b"\xfe",
            "--router",
            routers,
        ],
        cwd=tmp_path,
        capture_output=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert published.returncode == 0 and published.stderr == b"", published.stderr
    (line,) = weir("read", stream_name, "--router", routers, cwd=tmp_path).stdout.splitlines()
    assert line.endswith("key=<1 bytes: fe>  <3 bytes: 61ff62>"), line
    (message,) = weir("read", stream_name, "--json", "--router", routers, cwd=tmp_path).stdout.splitlines()
    decoded = json.loads(message)
    assert (decoded["payload_base64"], decoded["key_base64"]) == ("Yf9i", "/g==")
    assert "payload" not in decoded


def test_global_options_after_the_verb_and_the_printed_hint(routers: str, tmp_path: Path) -> None:
    after = weir("stream", "list", "--router", routers, "--json", cwd=tmp_path)
    assert after.returncode == 0 and isinstance(json.loads(after.stdout), list)
    hint = f"weir stream list --router {routers}"  # what `cluster up` prints
    assert weir(*hint.split()[1:], cwd=tmp_path).returncode == 0


def test_bad_numbers_are_refused_before_anything_is_sent(tmp_path: Path) -> None:
    for args, fragment in (
        (("fetch", "s", "c", "--batch", "-1"), "--batch: must be 1 or more, got -1"),
        (("fetch", "s", "c", "--batch", "x"), "not an integer"),
        (("read", "s", "--max", "0"), "--max: must be 1 or more"),
        (("stream", "create", "s", "--partitions", "-2"), "--partitions: must be 1 or more"),
        (("pub", "s", "x", "y", "--count", "0"), "--count: must be 1 or more"),
        (("stream", "list", "--timeout", "0"), "--timeout"),
        (("stream", "create", "s", "--source", "o,filtre=x"), "give key=value with a key among filter"),
        (("stream", "create", "s", "--source", "o,transform=a.*"), "PATTERN->DESTINATION"),
        (("stream", "create", "s", "--source", "o,on-drop=maybe"), "halt or skip"),
        (("stream", "create", "s", "--source", "o,start-seq=-1"), "must be 0 or more"),
    ):
        one_line_error(weir(*args, cwd=tmp_path), 2, fragment)


def test_a_closed_pipe_ends_quietly(routers: str, tmp_path: Path, stream_name: str) -> None:
    weir("stream", "create", stream_name, "--router", routers, cwd=tmp_path)
    weir("pub", stream_name, "x", "line {n}", "--count", "300", "--router", routers, cwd=tmp_path)
    env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    piped = subprocess.run(
        f"{sys.executable} -m weir_cli.cli read {stream_name} --max 300 --router {routers} | head -1",
        shell=True,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    assert piped.stdout.count("\n") == 1 and piped.stderr == "", piped.stderr


def test_no_cluster_found_says_how_to_get_one(tmp_path: Path) -> None:
    """Nothing to go by (no flag, variable, local or last cluster): the default address is tried;
    with nothing there, one line with the hint. (Where a cluster on this machine holds the default
    address, the command finds it and says so with -v.)"""
    if port_is_free(7501) and port_is_free(7502):
        one_line_error(weir("stream", "list", cwd=tmp_path), 1, "start one with 'weir cluster up'")
    else:
        found = weir("-v", "stream", "list", cwd=tmp_path)
        assert "(from the default address)" in found.stderr, found.stderr


def test_a_dead_router_answers_at_once_and_a_silent_one_within_the_timeout(tmp_path: Path) -> None:
    started = time.monotonic()
    refused = weir("stream", "list", "--router", "127.0.0.1:1,127.0.0.1:2", cwd=tmp_path)
    one_line_error(refused, 1, "the routers at 127.0.0.1:1,127.0.0.1:2 (from --router) refused the connection")
    assert "start one with 'weir cluster up'" in refused.stderr
    assert time.monotonic() - started < 5  # not the 10 s --timeout: nothing listens there
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts TCP, never speaks gRPC
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        result = weir("read", "s", "--router", address, "--timeout", "2", "-v", cwd=tmp_path)
        elapsed = time.monotonic() - started
    assert result.returncode == 1 and elapsed < 10, (result.stderr, elapsed)
    using, waiting, failed = result.stderr.splitlines()  # -v: which, what it waits for, then the one line
    assert using == f"weir: using the router at {address} (from --router)"
    assert waiting == f"weir: waiting for the router at {address} (from --router) ..."
    assert failed.startswith(f"weir: the router at {address} (from --router) did not answer within 2 s")


def test_nothing_to_update_is_a_usage_error(tmp_path: Path) -> None:
    one_line_error(weir("stream", "update", "s", "--router", "127.0.0.1:1", cwd=tmp_path), 2, "nothing to change")


def test_every_flag_has_help_and_there_is_a_version_and_completion(tmp_path: Path) -> None:
    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, f"{path} {name}")
            elif not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser("test"), "weir")
    assert missing == []
    version = weir("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout == f"weir {importlib.metadata.version('weir-cli')}\n"
    for shell in ("bash", "zsh", "fish"):
        script = weir("completion", shell, cwd=tmp_path)
        assert script.returncode == 0 and "weir" in script.stdout, script.stderr


_COMPLETE = """source <(weir completion bash)
for line in "$@"; do
  COMP_LINE="$line"; COMP_POINT=${#line}; COMP_TYPE=9; read -ra COMP_WORDS <<< "$line"
  [[ "$line" == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
  COMPREPLY=(); _python_argcomplete weir
  echo "${COMPREPLY[*]}"
done
"""


def test_bash_completion_completes_commands_flags_choices_and_stream_names(
    routers: str, tmp_path: Path, stream_name: str
) -> None:
    """The script `weir completion bash` prints, sourced in a real bash and asked as TAB asks it."""
    weir("stream", "create", stream_name, "--router", routers, cwd=tmp_path)
    weir("consumer", "create", stream_name, "billing-c", "--router", routers, cwd=tmp_path)
    lines = [
        "weir st",
        "weir stream i",
        "weir stream create orders --ret",
        "weir stream create orders --retention ",
        f"weir --router {routers} read {stream_name[:-2]}",
        f"weir fetch {stream_name} --router {routers} bil",
    ]
    clean = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    bin_dir = str(Path(sys.executable).parent)  # where the `weir` script of this install is
    env = {**clean, "PATH": f"{bin_dir}:{clean.get('PATH', '')}", "XDG_STATE_HOME": str(tmp_path / ".state")}
    completed = subprocess.run(
        ["bash", "-c", _COMPLETE, "complete", *lines],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=True,
    )
    answers = [set(line.split()) for line in completed.stdout.splitlines()]
    assert answers == [
        {"stats", "stream"},
        {"info"},
        {"--retention"},
        {"limits", "work_queue", "interest"},
        {stream_name},
        {"billing-c"},
    ], completed.stderr


def test_global_options_before_bench_are_passed_to_it() -> None:
    assert bench_arguments(["--router", "h:1", "bench", "--smoke"]) == ["--smoke", "--router", "h:1"]
    assert bench_arguments(["--router=h:1", "-v", "bench"]) == ["--router", "h:1"]
    assert bench_arguments(["bench", "--router", "h:2"]) == ["--router", "h:2"]
    assert bench_arguments(["--router", "h:1", "bench", "--router", "h:2"]) == ["--router", "h:2"]
    assert bench_arguments(["--router", "bench", "stream", "list"]) is None
    assert bench_arguments(["stream", "list"]) is None


def test_read_says_when_max_left_messages_out(routers: str, tmp_path: Path, stream_name: str) -> None:
    weir("stream", "create", stream_name, "--partitions", "2", "--router", routers, cwd=tmp_path)
    weir("pub", stream_name, "x", "m{n}", "--count", "5", "--router", routers, cwd=tmp_path)
    shown = weir("read", stream_name, "--max", "3", "--router", routers, cwd=tmp_path)
    assert len(shown.stdout.splitlines()) == 3
    assert shown.stderr == "weir: showed the first 3 message(s); more with --max N or --from-seq SEQ\n"
    every = weir("read", stream_name, "--max", "5", "--router", routers, cwd=tmp_path)
    assert (len(every.stdout.splitlines()), every.stderr) == (5, "")


# `weir` with Ctrl-C as a terminal delivers it, whatever the suite's own SIGINT disposition: a suite
# started in the background (nohup) ignores SIGINT and its children inherit that, so they would never
# see the test's Ctrl-C. The child resets it itself before the CLI runs (a preexec_fn would run Python
# between fork and exec in this multi-threaded process, which can crash the child).
_WEIR_WITH_CTRL_C = (
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('weir_cli.cli', run_name='__main__', alter_sys=True)"
)


class Running:
    """A `weir` command left running (read --follow, sub), its output read line by line as it comes
    (a thread per pipe). Killed when the test is done with it (`interrupt`, or leaving `with`), so a
    failing test leaves no process behind."""

    def __init__(self, *args: str, cwd: Path) -> None:
        env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WEIR_WITH_CTRL_C, *args],
            cwd=cwd,
            env={**env, "XDG_STATE_HOME": str(cwd / ".state")},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.output: dict[str, queue.Queue[str | None]] = {"stdout": queue.Queue(), "stderr": queue.Queue()}
        for name, pipe in (("stdout", self.process.stdout), ("stderr", self.process.stderr)):
            threading.Thread(target=self._pump, args=(pipe, self.output[name]), daemon=True).start()

    @staticmethod
    def _pump(pipe: IO[str] | None, lines: queue.Queue[str | None]) -> None:
        assert pipe is not None
        for line in pipe:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    def lines(self, count: int, stream: str = "stdout") -> list[str]:
        got: list[str] = []
        while len(got) < count:
            try:
                line = self.output[stream].get(timeout=TIMEOUT_S)
            except queue.Empty:
                raise AssertionError(f"waited {TIMEOUT_S} s for line {len(got) + 1} of {stream}; got {got}") from None
            assert line is not None, f"{stream} closed after {got}; exit {self.process.poll()}"
            got.append(line)
        return got

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def interrupt(self) -> tuple[int, str, str]:
        """Ctrl-C: the exit status and what was left on stdout and stderr (killed if Ctrl-C did not
        end it in TIMEOUT_S)."""
        try:
            self.process.send_signal(signal.SIGINT)
            status = self.process.wait(timeout=TIMEOUT_S)
        finally:
            self.kill()
        left: dict[str, list[str]] = {name: [] for name in self.output}
        for name, lines in self.output.items():
            while (line := lines.get(timeout=TIMEOUT_S)) is not None:
                left[name].append(line)
        return status, "\n".join(left["stdout"]), "\n".join(left["stderr"])


def test_ctrl_c_ends_a_command_also_when_the_suite_ignores_sigint(
    routers: str, tmp_path: Path, stream_name: str
) -> None:
    """A suite started in the background (nohup) ignores SIGINT, and its children would inherit
    that: the command under test must still get Ctrl-C, and never outlive the test (issue 54)."""
    weir("stream", "create", stream_name, "--router", routers, cwd=tmp_path)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        follow = Running("read", stream_name, "--follow", "--router", routers, cwd=tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)
    weir("pub", stream_name, "x", "hello", "--router", routers, cwd=tmp_path)
    try:
        assert follow.lines(1)[0].endswith("  hello")
    finally:
        status, _, err = follow.interrupt()
    assert (status, err) == (0, "")
    assert follow.process.poll() is not None


def test_read_follow_prints_new_messages_of_every_partition_until_ctrl_c(
    routers: str, tmp_path: Path, stream_name: str
) -> None:
    weir("stream", "create", stream_name, "--partitions", "3", "--router", routers, cwd=tmp_path)
    weir("pub", stream_name, "x", "old", "--partition", "2", "--router", routers, cwd=tmp_path)
    follow = Running("read", stream_name, "--follow", "--router", routers, cwd=tmp_path)
    try:
        assert follow.lines(1)[0].endswith("  old")
        for partition in (0, 1, 2):
            weir(
                "pub",
                stream_name,
                "x",
                f"new {partition}",
                "--partition",
                str(partition),
                "--router",
                routers,
                cwd=tmp_path,
            )
        new = follow.lines(3)
        assert sorted(line.rsplit("  ", 1)[1] for line in new) == ["new 0", "new 1", "new 2"]
        assert {line.split()[0] for line in new} == {f"{stream_name}[{partition}]" for partition in (0, 1, 2)}
    finally:
        status, out, err = follow.interrupt()
    assert (status, out, err) == (0, "", "")  # Ctrl-C: what the user asked for, no traceback


def test_sub_prints_and_leaves_on_ctrl_c(routers: str, tmp_path: Path, stream_name: str) -> None:
    """`sub` is ephemeral: the group consumer it created goes when it leaves; with --durable it stays."""
    weir("stream", "create", stream_name, "--partitions", "2", "--router", routers, cwd=tmp_path)
    sub = Running("sub", stream_name, "group-a", "--router", routers, cwd=tmp_path)
    try:
        assert sub.lines(1, "stderr") == [f"joined group 'group-a' of {stream_name} (Ctrl-C leaves)"]
        weir("pub", stream_name, "x", "hello {n}", "--count", "2", "--router", routers, cwd=tmp_path)
        assert sorted(line.rsplit("  ", 1)[1] for line in sub.lines(2)) == ["hello 1", "hello 2"]
    finally:
        status, out, err = sub.interrupt()
    assert (status, out, err) == (0, "", "deleted consumer 'group-a' (ephemeral; --durable keeps it)")
    consumers = weir("--json", "consumer", "list", stream_name, "--router", routers, cwd=tmp_path)
    assert consumers.returncode == 0 and "group-a" not in consumers.stdout, consumers.stdout
    kept = weir("sub", stream_name, "group-b", "--durable", "--stop-when-empty", "--router", routers, cwd=tmp_path)
    assert kept.returncode == 0 and "deleted consumer" not in kept.stderr, kept.stderr
    consumers = weir("--json", "consumer", "list", stream_name, "--router", routers, cwd=tmp_path)
    assert "group-b" in consumers.stdout, consumers.stdout


def test_create_again_says_it_exists_and_delete_asks_on_a_terminal_unless_forced(
    routers: str, tmp_path: Path, stream_name: str
) -> None:
    first = weir("stream", "create", stream_name, "--router", routers, cwd=tmp_path)
    again = weir("stream", "create", stream_name, "--router", routers, cwd=tmp_path)
    assert first.stdout == f"created stream {stream_name} (1 partition(s))\n"
    assert again.stdout == f"stream {stream_name} exists with this config (1 partition(s)): nothing changed\n"
    as_json = weir("--json", "stream", "create", stream_name, "--router", routers, cwd=tmp_path)
    assert json.loads(as_json.stdout)["existed"] is True
    weir("pub", stream_name, "s", "x", "--router", routers, cwd=tmp_path)
    for refused_by in ("n\n", ""):  # "n", and a closed terminal, both do nothing
        asked = on_a_terminal(["stream", "delete", stream_name, "--router", routers], refused_by, tmp_path)
        assert f"delete stream {stream_name} and its 1 message(s)? [y/N]" in asked and "nothing done" in asked, asked
    assert weir("stream", "info", stream_name, "--router", routers, cwd=tmp_path).returncode == 0
    purged = on_a_terminal(["stream", "purge", stream_name, "--router", routers], "y\n", tmp_path)
    assert "purged 1 message(s)" in purged, purged
    forced = on_a_terminal(["stream", "delete", stream_name, "--force", "--router", routers], "", tmp_path)
    assert "[y/N]" not in forced and f"deleted stream {stream_name}" in forced, forced
    piped = weir("stream", "delete", stream_name, "--router", routers, cwd=tmp_path)  # no terminal: no question
    assert piped.returncode == 1 and "no_such_stream" in piped.stderr


def on_a_terminal(arguments: list[str], answer: str, cwd: Path) -> str:
    """Run `weir ARGUMENTS` with a pseudo-terminal as its stdin, stdout and stderr, type `answer`
    once it asks (or close the terminal when `answer` is empty); everything it printed."""
    import pty

    clean = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    clean["XDG_STATE_HOME"] = str(cwd / ".state")
    primary, secondary = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "weir_cli.cli", *arguments], cwd=cwd, env=clean, stdin=secondary,
        stdout=secondary, stderr=secondary, close_fds=True,
    )  # fmt: skip
    os.close(secondary)
    printed, answered = b"", False
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            if select.select([primary], [], [], 0.2)[0]:
                try:
                    chunk = os.read(primary, 4096)
                except OSError:  # the command exited and closed the terminal
                    break
                printed += chunk
            elif process.poll() is not None:
                break
            if b"[y/N]" in printed and not answered:
                os.write(primary, answer.encode() or b"\x04")  # the answer, or end of input
                answered = True
    finally:
        process.kill()
        process.wait()
        os.close(primary)
    return printed.decode(errors="replace")


def test_one_standalone_node_with_server(node: NodeHandle, tmp_path: Path, stream_name: str) -> None:
    """--server: the same commands on one node without a cluster (every partition; sub creates its
    consumer on first use, as a cluster's group does)."""
    at = ("--server", node.client_address)
    assert weir("stream", "create", stream_name, "--partitions", "2", *at, cwd=tmp_path).returncode == 0
    assert weir("pub", stream_name, "x", "m{n}", "--count", "4", "--partition", "1", *at, cwd=tmp_path).returncode == 0
    assert weir("pub", stream_name, "x", "zero", "--partition", "0", *at, cwd=tmp_path).returncode == 0
    read = weir("read", stream_name, *at, cwd=tmp_path).stdout.splitlines()
    assert [line.rsplit("  ", 1)[1] for line in read] == ["zero", "m1", "m2", "m3", "m4"]
    info = weir("stream", "info", stream_name, *at, cwd=tmp_path).stdout.splitlines()
    assert [row.split()[:2] for row in info[-2:]] == [["0", node.client_address], ["1", node.client_address]]
    sub = weir("sub", stream_name, "workers", "--stop-when-empty", *at, cwd=tmp_path)
    assert sub.returncode == 0 and len(sub.stdout.splitlines()) == 5, sub.stderr
    assert sub.stderr.splitlines()[0] == f"subscribed as 'workers' to {stream_name} (Ctrl-C leaves)"
    consumers = weir("consumer", "list", stream_name, "--json", *at, cwd=tmp_path)
    assert json.loads(consumers.stdout) == ["workers"]


def test_a_local_cluster_that_stopped_says_which_processes_are_down(tmp_path: Path) -> None:
    """./weir-cluster names a cluster whose processes have exited (a reboot, a kill): status lists
    them, and every command says so in one line with how to start it again, at once."""
    exited = subprocess.Popen(["true"])
    exited.wait()
    dead = exited.pid
    state = {
        "data_dir": str(tmp_path / "weir-cluster"),
        "redis": {"url": "redis://127.0.0.1:1/0", "pid": dead},
        "routers": [{"router_id": "router-1", "address": "127.0.0.1:1", "metrics_port": 0, "pid": dead}],
        "replicators": [],
        "analytics": None,
        "gateways": [],
        "nodes": [
            {"node_id": "node-1", "client_address": "127.0.0.1:2", "internal_address": "127.0.0.1:3", "pid": dead}
        ],
    }
    (tmp_path / "weir-cluster").mkdir()
    (tmp_path / "weir-cluster" / "cluster.json").write_text(json.dumps(state))
    status = weir("cluster", "status", cwd=tmp_path)
    assert status.stdout == "local processes: redis DOWN, router-1 DOWN, node-1 DOWN\n"
    one_line_error(status, 1, "refused the connection")
    started = time.monotonic()
    listing = weir("stream", "list", cwd=tmp_path)
    one_line_error(listing, 1, f"(from the local cluster under {tmp_path / 'weir-cluster'}) refused the connection")
    assert "'weir cluster down' then 'weir cluster up' starts it again" in listing.stderr
    assert time.monotonic() - started < 5


def test_changes_prints_a_nodes_change_feed(node: NodeHandle, tmp_path: Path, stream_name: str) -> None:
    weir("stream", "create", stream_name, "--server", node.client_address, cwd=tmp_path)
    printed = weir("changes", "--server", node.internal_address, "--max", "100000", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    changes = [json.loads(line) for line in printed.stdout.splitlines()]
    assert any(change.get("stream") == stream_name and "stream_created" in change for change in changes)
    assert all(isinstance(change["change_seq"], int) for change in changes)  # numbers, not strings
    one_line_error(weir("changes", "--server", "127.0.0.1:1", cwd=tmp_path), 1, "could not connect")


def test_pub_from_stdin_sends_each_line_as_it_comes_and_keeps_their_order(
    routers: str, tmp_path: Path, stream_name: str
) -> None:
    weir("stream", "create", stream_name, "--partitions", "3", "--router", routers, cwd=tmp_path)
    with Running("pub", stream_name, "x", "--json", "--router", routers, cwd=tmp_path) as pub:
        stdin = pub.process.stdin
        assert stdin is not None
        stdin.write("line 0\n")
        stdin.flush()
        (first,) = pub.lines(1)  # acknowledged while the writer is still writing
        assert json.loads(first)["seq"] == 1
        started = time.monotonic()
        stdin.write("".join(f"line {number}\n" for number in range(1, 3000)))
        stdin.close()
        assert len(pub.lines(2999)) == 2999
        assert pub.process.wait(timeout=TIMEOUT_S) == 0
        assert time.monotonic() - started < 30  # in flight together, not one round trip each
    read = weir("read", stream_name, "--max", "5000", "--json", "--router", routers, cwd=tmp_path)
    stored = [json.loads(line) for line in read.stdout.splitlines()]
    assert len(stored) == 3000
    for partition in range(3):
        numbers = [int(m["payload"].split()[1]) for m in stored if m["partition"] == partition]
        assert numbers == sorted(numbers) and numbers, partition  # in seq order = in the order written


def test_a_mistyped_command_or_choice_names_the_closest(tmp_path: Path) -> None:
    for args, fragment in (
        (("strem", "list"), "weir: unknown command 'strem'; did you mean 'stream'?"),
        (("stream", "lst"), "weir stream: unknown command 'lst'; did you mean 'list'?"),
        (
            ("stream", "create", "s", "--retention", "wq"),
            "--retention: 'wq' is not a choice; one of limits, work_queue",
        ),
        (
            ("read", "s", "--folow"),
            "weir read: unknown flag '--folow'; did you mean '--follow'? (see 'weir read --help')",
        ),
        (("stream", "create", "s", "--partitionz=3"), "did you mean '--partitions'? (see 'weir stream create --help')"),
    ):
        one_line_error(weir(*args, cwd=tmp_path), 2, fragment)


def test_json_errors_are_json_objects_on_stderr(tmp_path: Path) -> None:
    usage = weir("--json", "stream", "lst", cwd=tmp_path)
    assert usage.returncode == 2 and usage.stdout == ""
    assert json.loads(usage.stderr) == {
        "error": "weir stream: unknown command 'lst'; did you mean 'list'?",
        "status": 2,
        "help": "weir stream --help",
    }
    refused = weir("stream", "list", "--router", "127.0.0.1:1", "--json", cwd=tmp_path)
    error = json.loads(refused.stderr)
    assert refused.returncode == 1 and error["status"] == 1 and "refused the connection" in error["error"]
