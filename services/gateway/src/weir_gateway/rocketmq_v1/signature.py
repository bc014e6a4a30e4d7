"""RocketMQ's call signature, checked (pure). RocketMQ's clients sign every call with their access
key and secret key (the `authorization` and `x-mq-date-time` metadata, as apache/rocketmq-clients'
Signature.sign):

    x-mq-date-time: 20261127T021500Z
    authorization:  MQv2-HMAC-SHA1 Credential=<access key>, SignedHeaders=x-mq-date-time,
                    Signature=<hex HMAC-SHA1 of the date-time under the secret key>

The gateway finds the Weir user holding that access key in the auth file (weir_server.auth), checks
the signature, and refuses a date-time more than `MAX_SKEW_S` from its own clock (a captured
header cannot be replayed for longer). Some clients append a scope to the credential
(`<access key>/...`); the access key is the part before the first `/`.
"""

from __future__ import annotations

import calendar
import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass

ALGORITHM = "MQv2-HMAC-SHA1"
AUTHORIZATION, DATE_TIME = "authorization", "x-mq-date-time"
DATE_TIME_FORMAT = "%Y%m%dT%H%M%SZ"
MAX_SKEW_S = 15 * 60


@dataclass(frozen=True, slots=True)
class SignedCall:
    access_key: str
    signature: str  # hex, lower case
    date_time: str


def signed_call(metadata: Mapping[str, str]) -> SignedCall | None:
    """The signature a call carries; None when its authorization is not RocketMQ's (or absent)."""
    value = metadata.get(AUTHORIZATION, "")
    algorithm, _, rest = value.strip().partition(" ")
    if algorithm != ALGORITHM:
        return None
    fields: dict[str, str] = {}
    for part in rest.split(","):
        name, separator, field_value = part.strip().partition("=")
        if separator:
            fields[name] = field_value.strip()
    access_key = fields.get("Credential", "").split("/", 1)[0]
    return SignedCall(access_key, fields.get("Signature", "").lower(), metadata.get(DATE_TIME, ""))


def sign(secret_key: str, date_time: str) -> str:
    """The hex signature of `date_time` under `secret_key` (what a client sends)."""
    return hmac.new(secret_key.encode(), date_time.encode(), hashlib.sha1).hexdigest()


def problem(call: SignedCall, secret_key: str, now_s: float) -> str:
    """Why `call` is not a valid signature of the holder of `secret_key` at `now_s`, "" when it is."""
    try:
        signed_at = calendar.timegm(time.strptime(call.date_time, DATE_TIME_FORMAT))
    except ValueError:
        return f"{DATE_TIME} {call.date_time!r} is not a time like 20261127T021500Z"
    if abs(now_s - signed_at) > MAX_SKEW_S:
        return f"{DATE_TIME} {call.date_time} is more than {MAX_SKEW_S // 60} minutes from the gateway's clock"
    if not hmac.compare_digest(sign(secret_key, call.date_time), call.signature):
        return f"the signature does not verify with access key {call.access_key!r}'s secret key"
    return ""
