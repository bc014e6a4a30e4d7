"""Waiting for a service started by a test as a real subprocess: its ready file (the JSON of its
bound ports, `weir_server.service.write_ready_file`) is how the launcher learns it is up, too."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

READY_TIMEOUT_S = 30.0
POLL_INTERVAL_S = 0.05


def wait_until_ready(
    process: subprocess.Popen[Any],
    ready: Path,
    name: str,
    *,
    log: Path | None = None,
    timeout_s: float = READY_TIMEOUT_S,
) -> dict[str, Any]:
    """The parsed ready file of `process` once it exists. Fails the test when the process exits
    first (with `log`'s text, if given) or after `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while not ready.exists():
        if process.poll() is not None:
            output = f": {log.read_text()}" if log is not None else ""
            raise AssertionError(f"the {name} exited with {process.returncode}{output}")
        assert time.monotonic() < deadline, f"the {name} did not get ready in {timeout_s:.0f} s"
        time.sleep(POLL_INTERVAL_S)
    ready_fields: dict[str, Any] = json.loads(ready.read_text())
    return ready_fields
