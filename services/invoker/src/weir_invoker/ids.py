"""Invocation ids, awakeable ids and the retry schedule (pure).

An invocation id is 16 bytes (StartMessage.id), shown as `inv_<32 hex>`. It is derived from where
the invocation comes from, so the same source is the same invocation: a subscription's message
(subscription, stream, partition, seq), a parent's call (parent id, entry index), an Invoke call
with an idempotency key (service, handler, key, idempotency key), a workflow's run handler
(service, workflow key: one run per key, whoever submits it).

An awakeable id is what the SDK builds from StartMessage.id and the Awakeable entry's index
(the specification's "Awakeable identifier"): `prom_1` + base64url(id + index as u32 big-endian).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import struct

from weir.errors import InvalidArgumentError

INVOCATION_PREFIX = "inv_"
AWAKEABLE_PREFIX = "prom_1"
ID_BYTES = 16


def _derived(*parts: object) -> bytes:
    return hashlib.sha256("\x00".join(str(part) for part in parts).encode()).digest()[:ID_BYTES]


def show(raw: bytes) -> str:
    return INVOCATION_PREFIX + raw.hex()


def raw_of(invocation_id: str) -> bytes:
    """Errors: InvalidArgumentError (not inv_ and 32 hex digits)."""
    body = invocation_id.removeprefix(INVOCATION_PREFIX)
    try:
        raw = bytes.fromhex(body)
    except ValueError:
        raw = b""
    if not invocation_id.startswith(INVOCATION_PREFIX) or len(raw) != ID_BYTES:
        shown = invocation_id if len(invocation_id) <= 64 else invocation_id[:61] + "..."
        raise InvalidArgumentError(f"invocation id {shown!r}: expected inv_ and 32 hex digits")
    return raw


def for_message(subscription_id: str, stream: str, partition: int, seq: int) -> str:
    return show(_derived("message", subscription_id, stream, partition, seq))


def for_call(parent_id: str, entry_index: int) -> str:
    return show(_derived("call", parent_id, entry_index))


def for_request(service: str, handler: str, key: str, idempotency_key: str) -> str:
    if not idempotency_key:
        return show(secrets.token_bytes(ID_BYTES))
    return show(_derived("request", service, handler, key, idempotency_key))


def for_workflow_run(service: str, key: str) -> str:
    """The one invocation of workflow `service`'s run handler for workflow `key` (Restate runs a
    workflow once per key: every submit of it, from Invoke, a subscription or a call, names it)."""
    return show(_derived("workflow-run", service, key))


def awakeable_id(invocation_id: str, entry_index: int) -> str:
    """The id an SDK gives the handler for the Awakeable entry `entry_index`."""
    raw = raw_of(invocation_id) + struct.pack(">I", entry_index)
    return AWAKEABLE_PREFIX + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def parse_awakeable(awakeable: str) -> tuple[str, int]:
    """(invocation id, entry index) of an awakeable id. Errors: InvalidArgumentError."""
    shown = awakeable if len(awakeable) <= 64 else awakeable[:61] + "..."
    body = awakeable.removeprefix(AWAKEABLE_PREFIX)
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if not awakeable.startswith(AWAKEABLE_PREFIX) or len(raw) != ID_BYTES + 4:
        raise InvalidArgumentError(f"awakeable id {shown!r}: expected prom_1 and the base64url of 20 bytes")
    (index,) = struct.unpack(">I", raw[ID_BYTES:])
    return show(raw[:ID_BYTES]), index


def retry_delay_ms(failed_attempts: int, initial_ms: int, factor: float, max_ms: int, hint_ms: int | None) -> int:
    """The wait before the next attempt after `failed_attempts` (>= 1) failed in a row: the SDK's
    `next_retry_delay` when it gave one (ErrorMessage field 8, for the next attempt only), else
    initial_ms * factor^(failed_attempts - 1), at most max_ms."""
    if hint_ms is not None:
        return max(0, min(hint_ms, max_ms))
    delay = initial_ms * factor ** max(0, failed_attempts - 1)
    return int(min(delay, max_ms))
