"""How much freed memory a Weir service keeps for reuse: glibc malloc's two thresholds, fixed at
start-up instead of left to glibc's own adjustment.

Why (measured, `bench.cpu_profile --cases publish-r3-all`, docs/benchmarks.md "The allocator
keeps what a replication round frees"): a replication round allocates a few MiB of large buffers
(the record batches, their protobuf encodings, gRPC's frames) and frees them all when it ends.
Under glibc's defaults a freed heap top larger than the trim threshold (128 KiB at first, twice
the adjusted mmap threshold later) goes back to the kernel, so the next round faults every page in
again. Where glibc's adjustment lands depends on which large buffers a process freed first, so the
same code thrashed in one build and not in another. Under the defaults the replicator took ~150
minor page faults per 100 messages. With the thresholds fixed it takes ~1, and spends 30-40 % less
CPU a message. p1-r3-all publish in `bench.compare` went from 0.44-0.54x JetStream R3 to
0.65-0.73x in alternating runs.

What it costs: a process keeps up to `TRIM_THRESHOLD_BYTES` of freed heap top instead of returning
it. Resident memory under load measured 1-6 MiB higher per process, of ~75-105 MiB.

Set `WEIR_MALLOC_TUNING=off` to leave glibc's defaults, or glibc's own `MALLOC_TRIM_THRESHOLD_`,
`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TOP_PAD_` or `GLIBC_TUNABLES` (`glibc.malloc.*`), which win
over this. On a C library other than glibc (musl, macOS) nothing is changed."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

ENV_TUNING = "WEIR_MALLOC_TUNING"  # "on" (the default) or "off"
# glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# The ceiling glibc's own adjustment would reach on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX), and twice
# it for the trim threshold, as glibc sets it when it adjusts.
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 2 * MMAP_THRESHOLD_BYTES
_GLIBC_VARIABLES = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_")


def tuning_refusal(environ: Mapping[str, str]) -> str | None:
    """Why the thresholds are left as they are (a sentence), or None to set them: `WEIR_MALLOC_TUNING`
    is "off", or the environment already tells glibc its own malloc settings. A value other than
    "on"/"off" is a ValueError naming the variable."""
    chosen = environ.get(ENV_TUNING, "on").strip().lower()
    if chosen not in ("on", "off"):
        raise ValueError(f"{ENV_TUNING} must be 'on' or 'off' (got {environ[ENV_TUNING]!r})")
    if chosen == "off":
        return f"{ENV_TUNING}=off"
    given = [name for name in _GLIBC_VARIABLES if environ.get(name)]
    if "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""):
        given.append("GLIBC_TUNABLES")
    if given:
        return f"glibc's own settings are given ({', '.join(given)})"
    return None


def keep_freed_memory(environ: Mapping[str, str] | None = None) -> bool:
    """Fix glibc malloc's mmap threshold at `MMAP_THRESHOLD_BYTES` and its trim threshold at
    `TRIM_THRESHOLD_BYTES` for this process, unless `tuning_refusal` says not to (its ValueError
    passes through). Call it first in a service's main, before the large allocations begin. True
    when both were set; False when refused, when this C library has no mallopt, or when it refused
    a value."""
    if tuning_refusal(os.environ if environ is None else environ) is not None:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # this process's own symbols, libc's among them
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # the mmap threshold first: setting either turns glibc's adjustment of both off
    accepted: bool = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
    return accepted and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1


def describe(environ: Mapping[str, str], kept: bool) -> str:
    """The start-up log line: what `keep_freed_memory` did, given its result `kept`."""
    if kept:
        return f"malloc thresholds fixed: mmap {MMAP_THRESHOLD_BYTES >> 20} MiB, trim {TRIM_THRESHOLD_BYTES >> 20} MiB"
    refusal = tuning_refusal(environ)
    return f"malloc thresholds left as they are: {refusal or 'this C library did not take them'}"
