"""What the front-door benchmarks share: run the measuring coroutine in a scratch directory on
uvloop, print its figures as JSON and, with --out, write them there too."""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

Measure = Callable[[argparse.Namespace, Path], Coroutine[Any, Any, dict[str, Any]]]


def run_and_report(measure: Measure, args: argparse.Namespace, prefix: str) -> int:
    """`measure(args, scratch_directory)` on uvloop; its figures to stdout (and `args.out`). Returns
    the exit status (0)."""
    import uvloop

    with tempfile.TemporaryDirectory(prefix=prefix) as temporary:
        results = uvloop.run(measure(args, Path(temporary)))
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0
