"""A least-recently-used map with a fixed capacity: what the front door remembers per group or per
message stays bounded however many groups and messages pass through one instance."""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

Key = TypeVar("Key")
Value = TypeVar("Value")


class BoundedMap(Generic[Key, Value]):
    """At most `capacity` entries; setting a new key past it forgets the least recently used one."""

    def __init__(self, capacity: int) -> None:
        assert capacity >= 1, capacity
        self.capacity = capacity
        self._entries: OrderedDict[Key, Value] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Key) -> Value | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def set(self, key: Key, value: Value) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.capacity:
            self._entries.popitem(last=False)

    def pop(self, key: Key) -> Value | None:
        return self._entries.pop(key, None)
