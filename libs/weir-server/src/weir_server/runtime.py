"""Process-wide tuning shared by Weir's services.

`tune_garbage_collector` is called once a service has started (its modules imported, its state
loaded). CPython's cyclic garbage collector otherwise runs a young-generation pass every 700 new
container objects and, every so often, a full pass over every object the process holds (grpc's,
protobuf's and our own long-lived state): with a few container objects per message, a busy node
spent ~13 % of its event loop in the collector (py-spy, `bench.cpu_profile`, docs/benchmarks.md).
Reference counting still frees almost everything at once; the collector is only needed for cycles,
which the hot paths do not make.
"""

from __future__ import annotations

import gc

# New container objects between young-generation passes (CPython's default is 700). Only objects
# still alive at a pass are examined, so a pass costs about the same whatever the threshold, and
# garbage in cycles waits at most this many allocations longer.
GEN0_THRESHOLD = 50_000


def tune_garbage_collector() -> None:
    """Move everything alive now out of the collector's reach (`gc.freeze`: startup state is
    never garbage) and make young-generation passes rarer. Safe to call more than once."""
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)
