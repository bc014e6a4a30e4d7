"""Request rate per identity: one token bucket per caller (pure: no gRPC, no clock of its own;
unit-tested).

A bucket holds up to `burst` requests and refills at `rate_per_s`; a request takes one. When the
bucket is empty the request is refused and told how long until one is available (what the server
sends back as RESOURCE_EXHAUSTED with google.rpc.RetryInfo). The table of buckets is bounded
(`max_identities`): past it, the bucket used longest ago goes first; a caller dropped that way
starts again full, which only ever lets a request through that a longer table would have refused.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rate:
    """Requests per second and how many may come at once (`burst` >= 1)."""

    per_second: float
    burst: float

    @staticmethod
    def of(per_second: float, burst: float = 0) -> Rate | None:
        """`per_second` requests a second with `burst` at once (0 = one second's worth, at least 1);
        None when `per_second` is 0 (no limit). Errors: ValueError for negative figures."""
        if per_second < 0 or burst < 0:
            raise ValueError(f"a request rate needs figures >= 0, not {per_second}/s with burst {burst}")
        if per_second == 0:
            return None
        return Rate(per_second, burst or max(1.0, per_second))


class RequestBuckets:
    """See the module docstring. Not thread-safe: one event loop uses it."""

    def __init__(self, max_identities: int = 100_000) -> None:
        if max_identities < 1:
            raise ValueError("max_identities must be >= 1")
        self.max_identities = max_identities
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # identity -> (tokens, at_s)

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, identity: str, rate: Rate, now_s: float) -> float:
        """Take one request of `identity`'s bucket at time `now_s` (monotonic seconds): 0.0 when
        it may go, else the seconds until it may (nothing is taken then)."""
        tokens, at_s = self._buckets.pop(identity, (rate.burst, now_s))
        tokens = min(rate.burst, tokens + max(0.0, now_s - at_s) * rate.per_second)
        if tokens >= 1.0 - 1e-9:  # within float rounding of a whole request
            tokens = max(0.0, tokens - 1.0)
            wait_s = 0.0
        else:
            wait_s = (1.0 - tokens) / rate.per_second
        self._buckets[identity] = (tokens, now_s)  # most recently used last
        while len(self._buckets) > self.max_identities:
            self._buckets.popitem(last=False)
        return wait_s
