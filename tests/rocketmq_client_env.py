"""A virtualenv of its own for RocketMQ's official Python client (`rocketmq-python-client`, PyPI), so
its pins (protobuf >= 6.33.5, grpcio-tools, OpenTelemetry) never meet the workspace's: made with
`uv venv` + `uv pip install` into a directory the caller gives (pytest's temporary directory), from
the index (uv's cache makes a second build take a second). Client programs run in it as
subprocesses, over the real transport, and share no module with the gateway (the client's generated
apache.rocketmq.v2 stubs and the gateway's would clash in one descriptor pool anyway).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CLIENT_PACKAGE = "rocketmq-python-client"
CLIENT_VERSION = "5.1.2"
INSTALL_TIMEOUT_S = 300


def uv_binary() -> str | None:
    """uv on the PATH, else ~/.local/bin/uv (where `make setup`'s pip install puts it), else None."""
    found = shutil.which("uv")
    if found:
        return found
    local = Path.home() / ".local" / "bin" / "uv"
    return str(local) if local.exists() else None


def client_python(directory: Path) -> Path:
    """The python of a virtualenv in `directory` holding rocketmq-python-client==CLIENT_VERSION (and
    only what it pulls in), made now. Fails the test when uv is missing or the install fails
    (with uv's own words: a resolution conflict shows as such, nothing overrides it)."""
    return isolated_python(directory / "rocketmq-client-venv", f"{CLIENT_PACKAGE}=={CLIENT_VERSION}")


def isolated_python(venv: Path, requirement: str) -> Path:
    """The python of a virtualenv at `venv` holding `requirement` (and only what it pulls in), made
    now unless it exists, with `uv venv` + `uv pip install` (uv's cache makes a second build quick).
    Fails the test when uv is missing or the install fails, with uv's own words."""
    uv = uv_binary()
    if uv is None:
        pytest.fail(f"uv is needed to build a virtualenv for {requirement}: python3 -m pip install 'uv>=0.9'")
    python = venv / "bin" / "python"
    if python.exists():
        return python
    major, minor = sys.version_info[:2]
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("VIRTUAL_ENV", "UV_PROJECT"))}
    commands = [
        [uv, "venv", "--quiet", "--python", f"{major}.{minor}", str(venv)],
        [uv, "pip", "install", "--quiet", "--python", str(python), requirement],
    ]
    for command in commands:
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False, env=environ
        )
        if completed.returncode != 0:
            pytest.fail(f"{' '.join(command)} failed ({completed.returncode}):\n{completed.stderr[-4000:]}")
    return python
