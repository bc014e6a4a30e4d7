"""Every mistake a new user made with the CLI (issue 24) is one clear line on stderr and a non-zero
exit, or now does what they meant. Each command is a real subprocess against the shared cluster."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from weir_cli.parser import build_parser

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
    one_line_error(result, 1, "no_such_stream")
    assert time.monotonic() - started < 20


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
    as_json = json.loads(weir("stream", "info", stream_name, "--json", "--router", routers, cwd=tmp_path).stdout)
    assert as_json["stats"]["msg_count"] == 1  # a number, not a string


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
    one_line_error(weir("stream", "list", cwd=tmp_path), 1, "start one with 'weir cluster up'")


def test_a_dead_router_answers_within_the_timeout(tmp_path: Path) -> None:
    started = time.monotonic()
    result = weir("stream", "list", "--router", "127.0.0.1:1", "--timeout", "2", cwd=tmp_path)
    one_line_error(result, 1, "did not answer within 2 s")
    assert time.monotonic() - started < 15


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
    assert version.returncode == 0 and version.stdout.startswith("weir ")
    completion = weir("completion", "bash", cwd=tmp_path)
    assert completion.returncode == 0 and "complete -o default -F _weir_complete weir" in completion.stdout
    assert '"stream") words="' in completion.stdout and "purge" in completion.stdout
