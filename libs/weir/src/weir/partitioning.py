"""Choosing a partition for a message.

`partition_for_key` is sarama's hash partitioner (FNV-1a 32-bit, as signed int32, modulo, absolute
value), which is what kafka-pixy uses: a key lands on the same partition whichever Weir front door or
client library published it. An empty key hashes like any other value.
"""

from __future__ import annotations

from functools import lru_cache

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


@lru_cache(maxsize=65536)
def fnv1a_32(data: bytes) -> int:
    """32-bit FNV-1a of `data` (cached: hot keys repeat)."""
    value = _FNV_OFFSET
    for byte in data:
        value ^= byte
        value = (value * _FNV_PRIME) & 0xFFFFFFFF
    return value


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition (0-based) of `key` among `partitions` (>= 1)."""
    if partitions <= 0:
        raise ValueError(f"partitions must be >= 1, got {partitions}")
    signed = fnv1a_32(key)
    if signed >= 0x80000000:
        signed -= 0x100000000
    # Go's % truncates toward zero; abs() afterwards matches sarama.
    remainder = abs(signed) % partitions
    return remainder
