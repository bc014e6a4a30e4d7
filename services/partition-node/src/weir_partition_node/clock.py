"""Injectable clocks: the node reads time only through a `Clock`, so tests can move it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds since the Unix epoch."""
        ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to (tests)."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = start_ms
        self._listeners: list[Callable[[], None]] = []

    def now_ms(self) -> int:
        return self._now_ms

    def advance(self, delta_ms: int) -> None:
        """Move forward by `delta_ms` (>= 0) and call every listener (the node wakes waiters)."""
        if delta_ms < 0:
            raise ValueError(f"a clock only moves forward; got delta_ms={delta_ms}")
        self._now_ms += delta_ms
        for listener in self._listeners:
            listener()

    def on_advance(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)


def monotonic_ms() -> int:
    """Monotonic milliseconds (intervals only: leases, replica lag)."""
    return time.monotonic_ns() // 1_000_000
