"""scripts/check_sizes.py, the size ceilings `make lint` holds the code to: a function over
MAX_FUNCTION_LINES or a class over MAX_CLASS_LINES is named with its file, line and length."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def _script() -> ModuleType:
    path = Path(__file__).resolve().parents[1] / "scripts" / "check_sizes.py"
    spec = importlib.util.spec_from_file_location("check_sizes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _function(name: str, lines: int) -> str:
    body = "".join("    x = 1\n" for _ in range(lines - 1))
    return f"def {name}():\n{body}"


def test_a_function_at_its_ceiling_passes_and_one_line_more_is_named() -> None:
    sizes = _script()
    ceiling = sizes.MAX_FUNCTION_LINES
    source = _function("fits", ceiling) + "\n\nasync " + _function("too_long", ceiling + 1)
    assert sizes.oversized(Path("a.py"), source) == [
        f"a.py:{ceiling + 3}: function too_long is {ceiling + 1} lines (at most {ceiling})"
    ]


def test_a_class_over_its_ceiling_is_named_and_its_short_methods_are_not() -> None:
    sizes = _script()
    methods = "".join("    " + line + "\n" for _ in range(60) for line in _function("m", 7).splitlines())
    source = "class Big:\n" + methods
    length = 1 + 60 * 7
    assert length > sizes.MAX_CLASS_LINES
    assert sizes.oversized(Path("b.py"), source) == [
        f"b.py:1: class Big is {length} lines (at most {sizes.MAX_CLASS_LINES})"
    ]


def test_the_main_reports_every_oversized_one_under_the_checked_folders(tmp_path: Path) -> None:
    sizes = _script()
    (tmp_path / "services" / "x").mkdir(parents=True)
    (tmp_path / "tests").mkdir()
    (tmp_path / "services" / "x" / "long.py").write_text(_function("long", sizes.MAX_FUNCTION_LINES + 5))
    (tmp_path / "tests" / "test_long.py").write_text(_function("test_long", sizes.MAX_FUNCTION_LINES + 5))
    generated = tmp_path / "services" / "x" / "pb"
    generated.mkdir()
    (generated / "stub_pb2.py").write_text(_function("stub", sizes.MAX_FUNCTION_LINES + 5))
    assert sizes.main(["check_sizes", str(tmp_path)]) == 1  # only services/x/long.py: tests and stubs are skipped
    (tmp_path / "services" / "x" / "long.py").write_text(_function("short", 3))
    assert sizes.main(["check_sizes", str(tmp_path)]) == 0
