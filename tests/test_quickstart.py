"""The README's quick start, run top to bottom as written in a fresh directory (each `uv run weir`
is the same program as `python -m weir_cli.cli`), checking what every command prints."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from weir.partitioning import partition_for_key

from tests.conftest import needs_own_processes

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
README = Path(__file__).resolve().parents[1] / "README.md"


def quickstart_commands() -> list[str]:
    text = README.read_text()
    found = re.search(r"<!-- quickstart -->\n```bash\n(.*?)```\n<!-- /quickstart -->", text, re.S)
    assert found, "README.md lost its <!-- quickstart --> block"
    commands = []
    for line in found.group(1).splitlines():
        command = line.split("   #", 1)[0].strip()  # drop the aligned comment
        if command:
            commands.append(command)
    return commands


def test_the_quickstart_block_is_a_plain_sequence() -> None:
    commands = quickstart_commands()
    assert commands[0] == "uv run weir cluster up" and commands[-1] == "uv run weir cluster down"
    assert all("uv run weir " in command for command in commands)


def run_the_printed_hint(printed: str, weir: str, env: dict[str, str], tmp_path: Path) -> None:
    """`cluster up` prints how to reach the cluster from elsewhere: run that line as printed, from a
    directory with no cluster and a user with no last cluster (only its --router can find it); and
    from that directory without it, the cluster is found through $WEIR_ROUTERS, then through the
    user's last cluster started."""
    (hint,) = [line.strip() for line in printed.splitlines() if line.strip().startswith("weir ")]
    assert " --router 127.0.0.1:" in hint, hint
    routers = hint.split(" --router ", 1)[1].split()[0]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    nobody = {**env, "XDG_STATE_HOME": str(elsewhere / "state")}
    for command, variables in (
        (weir + hint.removeprefix("weir"), nobody),
        (f"{weir} stream list", {**nobody, "WEIR_ROUTERS": routers}),
        (f"{weir} stream list", env),
    ):
        completed = subprocess.run(
            command, shell=True, cwd=elsewhere, env=variables, capture_output=True, text=True, timeout=60, check=False
        )
        assert (completed.returncode, completed.stderr) == (0, ""), command
        assert completed.stdout == "(no streams)\n"
    lost = subprocess.run(
        f"{weir} stream list",
        shell=True,
        cwd=elsewhere,
        env=nobody,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert lost.returncode == 1 and "start one with 'weir cluster up'" in lost.stderr


def test_the_readme_quickstart_runs_top_to_bottom(tmp_path: Path) -> None:
    needs_own_processes()
    weir = f"{shlex.quote(sys.executable)} -m weir_cli.cli"
    env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    outputs: dict[str, str] = {}
    try:
        for command in quickstart_commands():
            completed = subprocess.run(
                command.replace("uv run weir", weir),
                shell=True,
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert completed.returncode == 0, f"{command}\n{completed.stderr}"
            assert "Traceback" not in completed.stderr, completed.stderr
            outputs[command] = completed.stdout
            if command.endswith("weir cluster up"):
                run_the_printed_hint(completed.stdout, weir, env, tmp_path)
    finally:
        subprocess.run([sys.executable, "-m", "weir_cli.cli", "cluster", "down"], cwd=tmp_path, env=env, check=False)
    lines = {command: output.splitlines() for command, output in outputs.items()}

    def of(fragment: str) -> list[str]:
        (command,) = [command for command in lines if fragment in command]
        return lines[command]

    assert of("cluster up")[0].startswith("cluster up under ")
    assert of("stream create") == ["created stream orders (3 partition(s))"]
    keyed = partition_for_key(b"customer-7", 3)
    assert of("--key customer-7") == [f"published to orders[{keyed}] seq 1"]
    assert len(of("printf")) == 2 and len(of("--count 3")) == 3
    read = of("weir read orders")
    assert len(read) == 6
    payloads = sorted(line.rsplit("  ", 1)[1] for line in read)
    assert payloads == sorted(['{"id": 1}', "first", "second", "order 1", "order 2", "order 3"])
    assert any("key=customer-7" in line for line in read)
    assert of("stream info")[0].startswith("stream orders: 3 partition(s)")
    assert of("consumer create") == ["created consumer billing of orders; 6 message(s) to deliver"]
    assert len(of("fetch orders billing")) == 6
    assert "acked 6" in "\n".join(of("consumer info"))
    assert of("consumer reset")[1:] == [f"{partition}          1" for partition in range(3)]
    assert len(of("sub orders workers")) == 6
    assert of("cluster status")[0].startswith("controller router-")
    assert of("cluster down")[0].endswith("stopped (data kept)")
