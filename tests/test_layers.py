"""The layer contracts `make lint` checks (.importlinter, issue 57): the tree keeps them, and a
forbidden import added to a temp copy of the packages breaks the contract it should; plus
scripts/layers.py, which prints the floors and cycles `make layers` shows."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _lint_imports(cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if pythonpath is not None:  # ahead of the workspace's editable installs (site-packages .pth files)
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _copy_of_the_packages(tmp_path: Path) -> Path:
    """The contract's config, bench and every package's source, copied into tmp_path (the packages
    under tmp_path/src, which goes on PYTHONPATH)."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copy(ROOT / ".importlinter", tmp_path / ".importlinter")
    shutil.copytree(ROOT / "bench", tmp_path / "bench", ignore=ignore)
    for package in [*ROOT.glob("libs/*/src/*/__init__.py"), *ROOT.glob("services/*/src/*/__init__.py")]:
        shutil.copytree(package.parent, tmp_path / "src" / package.parent.name, ignore=ignore)
    return tmp_path / "src"


def test_the_tree_keeps_every_contract() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "added", "broken"),
    [
        ("weir/errors.py", "import weir_server.tls", ["Tools above services", "The SDK imports nothing of ours"]),
        ("weir_server/tls.py", "import weir_router.moves", ["Tools above services"]),
        ("weir_router/moves.py", "import weir_gateway.settings", ["Services import no other service"]),
        ("weir_cli/output.py", "import weir_router.moves", ["The CLI imports no service"]),
        ("weir_replicator/settings.py", "import weir_replicator.__main__", ["No import cycles within a package"]),
        ("weir_server/tls.py", "if TYPE_CHECKING:\n    import weir_server.service", ["No import cycles"]),
    ],
    ids=[
        "sdk-imports-server",
        "server-imports-service",
        "service-imports-service",
        "cli-imports-service",
        "cycle",
        "type-checking-cycle",
    ],
)
def test_a_forbidden_import_in_a_copy_breaks_its_contract(
    tmp_path: Path, module: str, added: str, broken: list[str]
) -> None:
    src = _copy_of_the_packages(tmp_path)
    path = src / module
    assert path.exists(), path
    path.write_text(path.read_text() + f"\nfrom typing import TYPE_CHECKING\n{added}\n")
    result = _lint_imports(tmp_path, pythonpath=src)
    assert result.returncode == 1, result.stdout + result.stderr
    for name in broken:
        assert any(line.startswith(name) and " BROKEN" in line for line in result.stdout.splitlines()), (
            name,
            result.stdout,
        )


def _script() -> ModuleType:
    path = ROOT / "scripts" / "layers.py"
    spec = importlib.util.spec_from_file_location("layers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_floors_stack_a_graph_and_a_cycle_shares_one_floor() -> None:
    layers = _script()
    graph = {"a": {"b"}, "b": {"c"}, "c": {"b", "d"}, "d": set(), "e": {"d"}}
    assert layers.floors(graph) == [["d"], ["b", "c", "e"], ["a"]]
    assert layers.cycles(graph) == [[("b", "c"), ("c", "b")]]
    assert layers.cycles({"a": {"b"}, "b": set()}) == []


def test_the_report_names_packages_by_floor_and_each_cycle() -> None:
    layers = _script()
    modules = {
        "tool": {"svc.x"},
        "svc": set(),
        "svc.x": {"svc.y", "lib"},
        "svc.y": {"svc.x"},
        "lib": set(),
    }
    lines = layers.report(modules, None)
    assert lines[1:4] == ["  2  tool", "  1  svc", "  0  lib"]
    assert "  svc -> lib (1)" in lines and "  tool -> svc (1)" in lines
    assert "    cycle of 2 modules, 2 arrows:" in lines
    assert lines[-1] == "Import cycles: 1"
