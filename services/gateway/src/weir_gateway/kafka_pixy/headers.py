"""Kafka record headers (byte values) as Weir headers (text values), and back, losslessly. Source:
kafkapixy.proto's `RecordHeader {string key; bytes value}` (Produce's and ConsumeNAck's headers;
Kafka's header values are bytes) and weir.v1's `Header {string key; string value}` (the stored form,
which every Weir reader and front door shares).

**Stored form.** A value that is UTF-8 text is stored as that text, so Weir's own readers and the
other front doors see text headers unchanged. A header key any of whose values is not UTF-8 is
stored with every value of that key in base64 (RFC 4648's standard alphabet, padded), and the message
gets one more header, BASE64_HEADERS_KEY, whose value is the JSON array of those keys (sorted). A
message with only text values gets no extra header. ConsumeNAck undoes the encoding, so the bytes a
producer sent are the bytes a consumer gets.

BASE64_HEADERS_KEY is under Weir's reserved `x-weir-` prefix: a Produce that sets it itself is
refused. A stored message whose BASE64_HEADERS_KEY is not such an array, or names a value that is not
base64 (a Weir publisher wrote it by hand), is returned as stored: every value as its UTF-8 bytes,
that header included.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Sequence

from weir.errors import InvalidArgumentError

BASE64_HEADERS_KEY = "x-weir-base64-headers"


def _is_text(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def stored_headers(headers: Sequence[tuple[str, bytes]]) -> list[tuple[str, str]]:
    """The Weir headers (key, text) of a Produce's (key, bytes) headers, in order, as the module
    docstring says. Errors: InvalidArgumentError for a header named BASE64_HEADERS_KEY."""
    if any(key == BASE64_HEADERS_KEY for key, _ in headers):
        raise InvalidArgumentError(
            f"header {BASE64_HEADERS_KEY!r} is reserved: the gateway names the headers whose values it "
            "stored in base64 with it"
        )
    encoded = sorted({key for key, value in headers if not _is_text(value)})
    stored = [
        (key, base64.b64encode(value).decode("ascii") if key in encoded else value.decode("utf-8"))
        for key, value in headers
    ]
    if encoded:
        stored.append((BASE64_HEADERS_KEY, json.dumps(encoded, ensure_ascii=False, separators=(",", ":"))))
    return stored


def _encoded_keys(marker: str | None) -> frozenset[str] | None:
    """The keys a BASE64_HEADERS_KEY value lists; None when it is not a JSON array of strings."""
    if marker is None:
        return frozenset()
    try:
        keys = json.loads(marker)
    except json.JSONDecodeError:
        return None
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        return None
    return frozenset(keys)


def record_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, bytes]]:
    """The Kafka (key, bytes) headers of a stored message's Weir headers, in order: base64 values
    of the keys BASE64_HEADERS_KEY lists decoded and that header left out; a message whose marker is
    not one the gateway writes comes back as stored (the module docstring)."""
    pairs = list(headers)
    marker = next((value for key, value in reversed(pairs) if key == BASE64_HEADERS_KEY), None)
    encoded = _encoded_keys(marker)
    as_stored = [(key, value.encode("utf-8")) for key, value in pairs]
    if not encoded:
        return as_stored
    decoded = []
    for key, value in pairs:
        if key == BASE64_HEADERS_KEY:
            continue
        if key not in encoded:
            decoded.append((key, value.encode("utf-8")))
            continue
        try:
            decoded.append((key, base64.b64decode(value, validate=True)))
        except (binascii.Error, ValueError):
            return as_stored
    return decoded
