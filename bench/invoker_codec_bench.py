"""The invoker's protocol codec: protoc's classes (upb) against betterproto's, per invocation
(issue 31 asked for the product owner's betterproto to be measured where the rate is per
invocation rather than per message).

Run: ``uv run --with "betterproto[compiler]==2.0.0b7" python -m bench.invoker_codec_bench``
(betterproto is not a workspace dependency: the measurement chose protoc's classes).

Both sets of classes are generated at run time from the kept seed
(proto/invoker/weir_invoker/restate/pb/protocol.proto) into a scratch directory. One "invocation's
messages" is what the invoker encodes and decodes for a handler with one ctx.run: StartMessage
(with a two-entry state map) and the Input entry encoded, a Run and an Output entry decoded, a
completion encoded. Figures (JSON on stdout): µs per invocation for each, and the ratio.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROTO_ROOT = ROOT / "proto" / "invoker"
PROTO = PROTO_ROOT / "weir_invoker" / "restate" / "pb" / "protocol.proto"


def generate(out: Path) -> tuple[ModuleType, ModuleType]:
    plugin = shutil.which("protoc-gen-python_betterproto")
    if plugin is None:
        raise SystemExit('betterproto is not installed: uv run --with "betterproto[compiler]==2.0.0b7" ...')
    for flag in ("--python_out", "--python_betterproto_out"):
        command = [sys.executable, "-m", "grpc_tools.protoc", f"-I{PROTO_ROOT}", f"{flag}={out}", str(PROTO)]
        subprocess.run(command, check=True, capture_output=True)
    sys.path.insert(0, str(out))
    return importlib.import_module("weir_invoker.restate.pb.protocol_pb2"), importlib.import_module(
        "dev.restate.service.protocol"
    )


def protoc_invocation(pb: Any, stored: dict[str, bytes]) -> None:
    start = pb.StartMessage(id=b"\x01" * 16, debug_id="inv_" + "01" * 16, known_entries=1, key="k")
    start.state_map.add(key=b"count", value=b"3")
    start.state_map.add(key=b"seen", value=b"[1,2]")
    start.SerializeToString()
    pb.InputEntryMessage(value=b'"order-1"').SerializeToString()
    pb.RunEntryMessage.FromString(stored["run"])
    pb.OutputEntryMessage.FromString(stored["output"])
    completion = pb.CompletionMessage(entry_index=2)
    completion.empty.SetInParent()
    completion.SerializeToString()


def betterproto_invocation(bp: Any, stored: dict[str, bytes]) -> None:
    entries = [
        bp.StartMessageStateEntry(key=b"count", value=b"3"),
        bp.StartMessageStateEntry(key=b"seen", value=b"[1,2]"),
    ]
    bytes(bp.StartMessage(id=b"\x01" * 16, debug_id="inv_" + "01" * 16, known_entries=1, key="k", state_map=entries))
    bytes(bp.InputEntryMessage(value=b'"order-1"'))
    bp.RunEntryMessage().parse(stored["run"])
    bp.OutputEntryMessage().parse(stored["output"])
    bytes(bp.CompletionMessage(entry_index=2, empty=bp.Empty()))


def per_invocation_us(run: Any, module: Any, stored: dict[str, bytes], seconds: float = 2.0) -> float:
    run(module, stored)
    count, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        for _ in range(100):
            run(module, stored)
        count += 100
    return (time.perf_counter() - started) / count * 1e6


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="weir-codec-") as scratch:
        pb, bp = generate(Path(scratch))
        stored = {
            "run": pb.RunEntryMessage(value=b'"x"', name="charge").SerializeToString(),
            "output": pb.OutputEntryMessage(value=b'"y"').SerializeToString(),
        }
        protoc_us = per_invocation_us(protoc_invocation, pb, stored)
        betterproto_us = per_invocation_us(betterproto_invocation, bp, stored)
    print(
        json.dumps(
            {
                "protoc_upb_us_per_invocation": round(protoc_us, 1),
                "betterproto_us_per_invocation": round(betterproto_us, 1),
                "betterproto_to_protoc_time": round(betterproto_us / protoc_us, 1),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
