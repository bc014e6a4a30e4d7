"""The README's quick start, run top to bottom as written in a fresh directory (each `weir` is the
same program as `python -m weir_cli.cli`; `make install-cli` puts it on the PATH, and .ci/run's
install check runs that install's `weir` from outside the workspace), checking what every command prints."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from weir.partitioning import partition_for_key
from weir_server.auth import ACTIONS, token_hash

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
    assert commands[0] == "weir cluster up" and commands[-1] == "weir cluster down"
    assert all(command.startswith("weir ") or "| weir " in command for command in commands)


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
    # with nothing else to go by, a command tries the default address: where the cluster holds it
    # (a first `up` takes 7501 and 7502 when free) it is found there, and says so with -v
    found = subprocess.run(
        f"{weir} -v stream list",
        shell=True,
        cwd=elsewhere,
        env=nobody,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if routers == "127.0.0.1:7501,127.0.0.1:7502":
        assert found.returncode == 0, found.stderr
        assert "(from the default address)" in found.stderr, found.stderr
    else:
        assert found.returncode == 1 and "start one with 'weir cluster up'" in found.stderr


def test_the_readme_quickstart_runs_top_to_bottom(tmp_path: Path) -> None:
    needs_own_processes()
    weir = f"{shlex.quote(sys.executable)} -m weir_cli.cli"
    env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    outputs: dict[str, str] = {}
    try:
        for command in quickstart_commands():
            completed = subprocess.run(
                re.sub(r"(^|\| )weir ", rf"\g<1>{weir} ", command),
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


def readme_sdk_example() -> str:
    text = README.read_text()
    found = re.search(r"<!-- sdk-example -->\n```python\n(.*?)```\n<!-- /sdk-example -->", text, re.S)
    assert found, "README.md lost its <!-- sdk-example --> block"
    return found.group(1)


def test_the_sdk_example_finds_the_cluster_across_down_and_up(tmp_path: Path) -> None:
    """The README's SDK example run as a script from the directory where `weir cluster up` ran, with
    no WEIR_ROUTERS: it finds the cluster (./weir-cluster); after `down` and `up` the cluster has
    the same addresses and the same script runs again."""
    needs_own_processes()
    env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    script = tmp_path / "example.py"
    script.write_text(readme_sdk_example())
    weir = [sys.executable, "-m", "weir_cli.cli"]
    addresses = []
    try:
        for _ in range(2):
            up = run([*weir, "--json", "cluster", "up"], tmp_path, env)
            assert up.returncode == 0, up.stderr
            state = json.loads(up.stdout)
            addresses.append(sorted(_addresses(state)))
            ran = run([sys.executable, str(script)], tmp_path, env)
            assert ran.returncode == 0, ran.stderr
            lines = ran.stdout.splitlines()
            assert len(lines) == 6 and lines[0].startswith("stored at partition "), lines
            down = run([*weir, "cluster", "down"], tmp_path, env)
            assert down.returncode == 0
    finally:
        subprocess.run([*weir, "cluster", "down"], cwd=tmp_path, env=env, capture_output=True, check=False)
    assert addresses[0] == addresses[1], "a cluster brought down and up again keeps its addresses"
    recorded = json.loads((tmp_path / "weir-cluster" / "ports.json").read_text())
    assert set(recorded) >= {"router-1", "router-2", "node-1", "gateway-1", "invoker-1"}


def run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False)


def _addresses(state: dict[str, Any]) -> list[str]:
    """Every address a `cluster up --json` names: routers, nodes, each front door, invokers."""
    found = [router["address"] for router in state["routers"]]
    found += [node["client_address"] for node in state["nodes"]] + [node["internal_address"] for node in state["nodes"]]
    for gateway in state["gateways"]:
        found += [gateway["kafka_pixy_address"], gateway["rocketmq_address"], gateway["waymaker_streams_address"]]
    return found + [invoker["address"] for invoker in state["invokers"]]


def readme_context_commands() -> list[str]:
    text = README.read_text()
    found = re.search(r"<!-- context-example -->\n```bash\n(.*?)```\n<!-- /context-example -->", text, re.S)
    assert found, "README.md lost its <!-- context-example --> block"
    return [line.split("  #", 1)[0].strip() for line in found.group(1).splitlines() if line.strip()]


def test_the_readme_context_flow_against_a_cluster_with_tls_and_an_auth_file(tmp_path: Path) -> None:
    """`weir cluster up --auth-file` (TLS implied), then the README's context block as written, run
    from another directory: the saved context carries the CA and the token file; without it the same
    command is refused in one line that names TLS."""
    needs_own_processes()
    cluster_dir, home = tmp_path / "cluster", tmp_path / "home"
    cluster_dir.mkdir()
    home.mkdir()
    token = "quickstart-admin-token"
    (home / "token").write_text(token + "\n")
    users = [
        {"name": "admin", "token_sha256": token_hash(token), "allow": [{"actions": list(ACTIONS), "streams": ["*"]}]}
    ]
    (cluster_dir / "auth.json").write_text(json.dumps({"users": users}))
    env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    env |= {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env |= {"HOME": str(home), "CLUSTER": str(cluster_dir / "weir-cluster")}
    weir = f"{shlex.quote(sys.executable)} -m weir_cli.cli"
    cli = [sys.executable, "-m", "weir_cli.cli"]
    up = run([*cli, "--json", "cluster", "up", "--auth-file", "auth.json"], cluster_dir, env)
    try:
        assert up.returncode == 0, up.stderr
        routers = ",".join(router["address"] for router in json.loads(up.stdout)["routers"])
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        plain = subprocess.run(
            f"{weir} stream list --router {routers}", shell=True, cwd=elsewhere, env=env, capture_output=True,
            text=True, timeout=60, check=False,
        )  # fmt: skip
        assert plain.returncode == 1 and "TLS" in plain.stderr and len(plain.stderr.splitlines()) == 1, plain.stderr
        outputs = []
        for written in readme_context_commands():
            command = written.replace("127.0.0.1:7501,127.0.0.1:7502", routers).replace("weir ", f"{weir} ", 1)
            done = subprocess.run(
                command, shell=True, cwd=elsewhere, env=env, capture_output=True,
                text=True, timeout=60, check=False,
            )  # fmt: skip
            assert done.returncode == 0 and "Traceback" not in done.stderr, (command, done.stderr)
            outputs.append(done.stdout)
        assert outputs[0].startswith("saved context prod") and outputs[1].startswith("using context prod")
        assert outputs[2] == "created stream audit (1 partition(s))\n"
        assert outputs[3].startswith("published to audit[0] seq 1")
        assert outputs[4].splitlines()[1].startswith("* prod")
        saved = json.loads((tmp_path / "config" / "weir" / "contexts" / "prod.json").read_text())
        assert token not in json.dumps(saved) and saved["token_file"] == str(home / "token")
    finally:
        run([*cli, "cluster", "down"], cluster_dir, env)
