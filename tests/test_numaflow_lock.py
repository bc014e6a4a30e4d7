"""The Numaflow sidecar image's lock (services/numaflow-source/requirements.lock, issue 52) is fresh
against the pyproject files it is resolved from, offline: every third-party requirement declared by
the sidecar and its workspace dependencies (weir, weir-server) is pinned there, with hashes, at a
version its specifier allows, and protobuf is below 7, as pynumaflow asks (the lock is resolved
without the workspace's override, so the conflict shows instead of being hidden). `make numaflow-lock`
regenerates it; `make install-check` re-resolves it against the index (scripts/numaflow_lock.sh --check).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
SIDECAR = "weir-numaflow-source"
LOCK_FILE = ROOT / "services" / "numaflow-source" / "requirements.lock"
DOCKERFILE = ROOT / "services" / "numaflow-source" / "Dockerfile"


@dataclass(frozen=True)
class Pin:
    name: str
    version: Version
    marker: Marker | None
    hashes: int

    def in_image(self) -> bool:
        """Whether the image installs it: markers are evaluated here, as the image is CPython 3.11 on
        Linux (python:3.11-slim) like every machine the tests run on (requires-python is 3.11)."""
        return self.marker is None or self.marker.evaluate()


def parse_lock(text: str) -> list[Pin]:
    """Each `name==version [; marker] \\` entry of a hashed requirements file with its hash count (pure)."""
    pins: list[Pin] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.lstrip().startswith("--hash="):
            last = pins[-1]
            pins[-1] = Pin(last.name, last.version, last.marker, last.hashes + 1)
            continue
        assert not line[0].isspace(), f"unexpected line in the lock: {line!r}"
        requirement = Requirement(line.removesuffix("\\").strip())
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"not pinned: {line!r}"
        pins.append(Pin(canonicalize_name(requirement.name), Version(specifier.version), requirement.marker, 0))
    return pins


def workspace_projects() -> dict[str, Any]:
    """Each workspace member's [project] table, by name."""
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    projects: dict[str, Any] = {}
    for member in root["tool"]["uv"]["workspace"]["members"]:
        project = tomllib.loads((ROOT / member / "pyproject.toml").read_text())["project"]
        projects[canonicalize_name(project["name"])] = project
    return projects


def sidecar_requirements() -> tuple[set[str], list[Requirement]]:
    """The sidecar and its workspace dependencies (transitively), and their third-party requirements."""
    projects = workspace_projects()
    members: set[str] = set()
    third_party: list[Requirement] = []
    pending = [SIDECAR]
    while pending:
        name = pending.pop()
        if name in members:
            continue
        members.add(name)
        for declared in projects[name]["dependencies"]:
            requirement = Requirement(declared)
            if canonicalize_name(requirement.name) in projects:
                pending.append(canonicalize_name(requirement.name))
            else:
                third_party.append(requirement)
    return members, third_party


def installed(pins: list[Pin]) -> dict[str, Version]:
    """The version of each pin whose marker holds in the image."""
    return {pin.name: pin.version for pin in pins if pin.in_image()}


def mismatches(pins: list[Pin], requirements: list[Requirement]) -> list[str]:
    """Each declared requirement the lock does not satisfy in the image, said how (pure)."""
    versions = installed(pins)
    found = []
    for requirement in requirements:
        if requirement.marker and not requirement.marker.evaluate():
            continue
        version = versions.get(canonicalize_name(requirement.name))
        if version is None:
            found.append(f"{requirement} is not in the lock")
        elif not requirement.specifier.contains(version, prereleases=True):
            found.append(f"{requirement} is locked at {version}")
    return list(dict.fromkeys(found))  # once each, where two projects declare the same requirement


def test_every_declared_requirement_of_the_sidecar_is_locked_at_a_version_it_allows() -> None:
    members, requirements = sidecar_requirements()
    assert members == {"weir", "weir-server", SIDECAR}, "scripts/numaflow_lock.sh resolves these three: add the new one"
    assert {requirement.name for requirement in requirements} >= {"pynumaflow", "protobuf", "grpcio"}
    stale = mismatches(parse_lock(LOCK_FILE.read_text()), requirements)
    assert not stale, f"{LOCK_FILE.name} is stale, run 'make numaflow-lock' and commit it: " + "; ".join(stale)


def test_the_lock_has_protobuf_6_as_pynumaflow_asks_and_no_workspace_package() -> None:
    pins = parse_lock(LOCK_FILE.read_text())
    versions = installed(pins)
    assert Version("6") <= versions["protobuf"] < Version("7"), "resolved with the workspace's override?"
    assert versions["pynumaflow"] == Version("0.14.0")
    assert not {pin.name for pin in pins} & {"weir", "weir-server", SIDECAR}, "the image installs those from wheels"
    assert all(pin.hashes for pin in pins), "every pin needs its hashes (the image installs with --require-hashes)"
    assert "make numaflow-lock" in LOCK_FILE.read_text().split("\n\n")[0], "the header says how to regenerate it"


def test_the_check_catches_a_pin_the_declared_range_excludes_and_a_missing_package() -> None:
    pins = [Pin("protobuf", Version("7.35.0"), None, 1), Pin("grpcio", Version("1.85.1"), None, 1)]
    requirements = [Requirement("protobuf>=6.31.1,<7"), Requirement("grpcio==1.85.1"), Requirement("uvloop>=0.21")]
    assert mismatches(pins, requirements) == [
        "protobuf<7,>=6.31.1 is locked at 7.35.0",
        "uvloop>=0.21 is not in the lock",
    ]
    guarded = [Pin("async-timeout", Version("5.0.1"), Marker("python_full_version < '3.11.0'"), 1)]
    assert mismatches(guarded, [Requirement("async-timeout>=4")]) == ["async-timeout>=4 is not in the lock"]


def test_the_image_installs_the_sidecar_from_its_own_lock_not_the_workspace_lock() -> None:
    dockerfile = DOCKERFILE.read_text()
    assert "install_image.sh" in dockerfile
    assert "uv.lock" not in dockerfile and "uv sync" not in dockerfile
    script = (DOCKERFILE.parent / "install_image.sh").read_text()
    assert "--require-hashes" in script and "--no-deps" in script and "requirements.lock" in script
