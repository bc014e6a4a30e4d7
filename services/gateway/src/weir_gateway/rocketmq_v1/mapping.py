"""Pure translations between RocketMQ v1 and Weir: names, headers, body digests and encodings, delays.
No I/O; every function raises `InvalidArgumentError` (INVALID_ARGUMENT) on bad input.

**Names.** A RocketMQ resource is (namespace, name); a Weir stream or consumer group is one name of
`[A-Za-z0-9_-:]{1,128}`. RocketMQ names use `[%|A-Za-z0-9_-]` (`%` and `|` appear in its system
resources such as `%RETRY%group` and `%DLQ%group`), so the mapping escapes `%` as `:p` and `|` as
`:v`, and joins a namespace to a name with `::`:

    ("", "orders")           -> "orders"
    ("tenant-a", "orders")   -> "tenant-a::orders"
    ("", "%DLQ%billing")     -> ":pDLQ:pbilling"

An escaped part holds `:` only before `p` or `v`, so it never contains `::` nor ends with `:`; the
first `::` of a Weir name therefore splits it back, and `resource_of(weir_name_of(ns, name)) == (ns,
name)` for every valid pair. Weir names without `::` are topics of the empty namespace.

**Headers.** RocketMQ's system attributes travel as Weir headers under the reserved prefix
`x-rocketmq-` (`HEADER_*` below); user attributes keep their own names. A user attribute named like
one of RocketMQ's reserved message properties (MessageConst.STRING_HASH_SET, which the proto's
`Message.user_attribute` comment points to), starting with RocketMQ's transient prefix
`__RMQ.TRANSIENT.`, or starting with `x-rocketmq-` or Weir's own `x-weir-` (any case) is refused.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import zlib
from collections.abc import Mapping, Sequence

from weir.errors import InvalidArgumentError

NAMESPACE_SEPARATOR = "::"
MAX_WEIR_NAME_CHARS = 128
MAX_TOPIC_CHARS = 127  # RocketMQ's Validators.TOPIC_MAX_LENGTH
_ROCKETMQ_NAME = re.compile(r"[%|A-Za-z0-9_-]+")
_ESCAPES = {"%": ":p", "|": ":v"}
_UNESCAPES = {value: key for key, value in _ESCAPES.items()}

HEADER_PREFIX = "x-rocketmq-"
HEADER_TAG = "x-rocketmq-tag"
HEADER_KEYS = "x-rocketmq-keys"  # a JSON array of strings (lossless; RocketMQ's KEYS joins with spaces)
HEADER_MESSAGE_TYPE = "x-rocketmq-message-type"  # NORMAL | DELAY | FIFO | TRANSACTION
HEADER_BORN_TIMESTAMP_MS = "x-rocketmq-born-timestamp-ms"
HEADER_BORN_HOST = "x-rocketmq-born-host"
HEADER_DELIVERY_TIMESTAMP_MS = "x-rocketmq-delivery-timestamp-ms"  # DELAY messages: when it becomes visible
HEADER_PRODUCER_GROUP = "x-rocketmq-producer-group"  # its Weir name (namespace::group)
HEADER_TRACE_CONTEXT = "x-rocketmq-trace-context"
HEADER_MESSAGE_GROUP = "x-rocketmq-message-group"  # FIFO messages: the group whose order is kept
# TRANSACTION messages: when the gateway first asks the producer about an unresolved one (ms after storing).
HEADER_RECOVERY_PERIOD_MS = "x-rocketmq-orphaned-transaction-recovery-period-ms"
RESERVED_FOREIGN_PREFIXES = (HEADER_PREFIX, "x-weir-")
TRANSIENT_PROPERTY_PREFIX = "__RMQ.TRANSIENT."

# MessageConst.STRING_HASH_SET of apache/rocketmq (the reserved keys the proto comment names).
RESERVED_PROPERTY_NAMES = frozenset(
    {
        "TRACE_ON", "MSG_REGION", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID",
        "TRAN_MSG", "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG",
        "CORRECTION_FLAG", "MQ2_FLAG", "RECONSUME_TIME", "UNIQ_KEY", "MAX_RECONSUME_TIMES", "CONSUME_START_TIME",
        "POP_CK", "POP_CK_OFFSET", "1ST_POP_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "DUP_INFO", "EXTEND_UNIQ_INFO",
        "INSTANCE_ID", "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL", "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER",
        "MSG_TYPE", "INNER_MULTI_QUEUE_OFFSET", "TIMER_DELAY_SEC", "TIMER_DELIVER_MS", "TIMER_ENQUEUE_MS",
        "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "TIMER_OUT_MS", "TIMER_DEL_UNIQKEY", "TIMER_DELAY_LEVEL",
        "__BORNHOST", "BORN_TIMESTAMP",
    }
)  # fmt: skip

# RocketMQ's default messageDelayLevel "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h":
# level N (1-based) waits DELAY_LEVELS_MS[N - 1].
DELAY_LEVELS_MS = tuple(
    seconds * 1000
    for seconds in (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
)

# RocketMQ's retry schedule for a consumer's failed message: the n-th redelivery (n = delivery_attempt
# of the failed delivery) waits RETRY_DELAYS_MS[n - 1], the delay levels 3.. of the table above (10s 30s
# 1m 2m .. 2h), as RocketMQ's broker sends a message back with delayLevel = 3 + reconsumeTimes.
RETRY_DELAYS_MS = DELAY_LEVELS_MS[2:]
DEFAULT_MAX_DELIVERY_ATTEMPTS = 16  # DeadLetterPolicy.max_delivery_attempts: "If this parameter is 0, ... 16"
TAG_SEPARATOR = "||"
MATCH_ALL_TAGS = "*"

# Languages RocketMQ's LanguageCode knows (x-mq-language); Heartbeat refuses others (service.proto).
KNOWN_LANGUAGES = frozenset(
    {"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "GOLANG", "PHP", "OMS",
     "RUST", "NODE_JS"}
)  # fmt: skip


# -- names -----------------------------------------------------------------------------------------


def _escape(part: str, what: str) -> str:
    if not _ROCKETMQ_NAME.fullmatch(part):
        raise InvalidArgumentError(f"{what} {part!r} is invalid: use 1 or more characters of A-Z a-z 0-9 _ - % |")
    for character, escaped in _ESCAPES.items():
        part = part.replace(character, escaped)
    return part


def _unescape(part: str) -> str:
    return re.sub(r":[pv]", lambda match: _UNESCAPES[match.group(0)], part)


def weir_name_of(namespace: str, name: str, what: str = "topic") -> str:
    """The Weir stream (or consumer group) name of RocketMQ resource (namespace, name); see the module
    docstring. Errors: InvalidArgumentError for an empty or invalid name or namespace, or a result
    longer than Weir's 128 characters."""
    if not name:
        raise InvalidArgumentError(f"{what}: a name is required")
    if len(name) > MAX_TOPIC_CHARS:
        raise InvalidArgumentError(f"{what} {name[:40]!r}...: at most {MAX_TOPIC_CHARS} characters (RocketMQ's limit)")
    escaped = _escape(name, what)
    if namespace:
        escaped = _escape(namespace, "namespace") + NAMESPACE_SEPARATOR + escaped
    if len(escaped) > MAX_WEIR_NAME_CHARS:
        raise InvalidArgumentError(
            f"{what} {name!r} in namespace {namespace!r} maps to a Weir name of {len(escaped)} characters; "
            f"the maximum is {MAX_WEIR_NAME_CHARS} (each % or | counts 2, the namespace separator 2)"
        )
    return escaped


def resource_of(weir_name: str) -> tuple[str, str]:
    """(namespace, name) of a Weir name made by `weir_name_of` (the inverse)."""
    namespace, separator, name = weir_name.partition(NAMESPACE_SEPARATOR)
    if not separator:
        return "", _unescape(weir_name)
    return _unescape(namespace), _unescape(name)


# -- headers ---------------------------------------------------------------------------------------


def check_user_attributes(attributes: Mapping[str, str]) -> None:
    """Refuse user attributes RocketMQ or this gateway reserve (Message.user_attribute's comment:
    such a send is aborted with INVALID_ARGUMENT) and empty names (Weir headers need a key)."""
    for name in attributes:
        if not name:
            raise InvalidArgumentError("user_attribute: an attribute has an empty name")
        if name in RESERVED_PROPERTY_NAMES or name.startswith(TRANSIENT_PROPERTY_PREFIX):
            raise InvalidArgumentError(
                f"user_attribute {name!r} is one of RocketMQ's reserved message properties (MessageConst)"
            )
        if name.lower().startswith(RESERVED_FOREIGN_PREFIXES):
            raise InvalidArgumentError(
                f"user_attribute {name!r}: names starting with {' or '.join(RESERVED_FOREIGN_PREFIXES)} are reserved "
                "for the gateway's and Weir's own headers"
            )


def keys_header(keys: Sequence[str]) -> str:
    """The x-rocketmq-keys value: a JSON array (keys may hold spaces, which RocketMQ's KEYS cannot)."""
    return json.dumps(list(keys), ensure_ascii=False, separators=(",", ":"))


def keys_of(header: str) -> list[str]:
    """The keys of an x-rocketmq-keys value."""
    keys = json.loads(header)
    return [str(key) for key in keys]


# -- body ------------------------------------------------------------------------------------------


def checksum_matches(digest_type: str, checksum: str, body: bytes) -> bool:
    """Whether `checksum` is the digest of `body` as RocketMQ's v1 clients write it (UtilAll):
    CRC32 as hex of the unsigned value (Long.toHexString, upper case, no leading zeros), MD5 and
    SHA1 as hex; compared case-insensitively (CRC32 by value, so leading zeros are fine too).
    Errors: InvalidArgumentError for an unknown `digest_type` or a CRC32 checksum that is not hex."""
    if digest_type == "CRC32":
        try:
            return int(checksum, 16) == zlib.crc32(body)
        except ValueError:
            raise InvalidArgumentError(f"body_digest: CRC32 checksum {checksum!r} is not hexadecimal") from None
    if digest_type == "MD5":
        return checksum.lower() == hashlib.md5(body, usedforsecurity=False).hexdigest()
    if digest_type == "SHA1":
        return checksum.lower() == hashlib.sha1(body, usedforsecurity=False).hexdigest()
    raise InvalidArgumentError(f"body_digest: unknown digest type {digest_type!r}")


def decoded_body(encoding: str, body: bytes) -> bytes:
    """The body as stored: GZIP bodies are decompressed (so every Weir consumer and other protocol
    sees the producer's bytes); IDENTITY bodies are kept. Errors: InvalidArgumentError for a body
    that is not valid gzip, or an unknown encoding."""
    if encoding == "IDENTITY":
        return body
    if encoding == "GZIP":
        try:
            return gzip.decompress(body)
        except (OSError, EOFError, zlib.error) as error:
            raise InvalidArgumentError(f"body_encoding GZIP: the body is not valid gzip ({error})") from None
    raise InvalidArgumentError(f"body_encoding: unknown encoding {encoding!r}")


# -- delays ----------------------------------------------------------------------------------------


def delay_level_ms(level: int) -> int:
    """How long delay level `level` waits (RocketMQ's 18 default levels, 1s .. 2h). A level above
    18 waits as level 18, as RocketMQ's broker clamps it. Errors: InvalidArgumentError for level < 1
    (level 0 means "no delay" in RocketMQ, which a DELAY message contradicts)."""
    if level < 1:
        raise InvalidArgumentError(f"delay_level: must be 1..{len(DELAY_LEVELS_MS)} for a DELAY message, got {level}")
    return DELAY_LEVELS_MS[min(level, len(DELAY_LEVELS_MS)) - 1]


def retry_delay_ms(delivery_attempt: int, delays_ms: Sequence[int] = RETRY_DELAYS_MS) -> int:
    """How long a message nacked after its `delivery_attempt`-th delivery (1-based) stays invisible
    before delivery `delivery_attempt + 1`: `delays_ms[delivery_attempt - 1]`, the last entry for
    every later attempt (RocketMQ's broker clamps its delay level the same way); 0 with no delays."""
    if not delays_ms:
        return 0
    return delays_ms[min(max(delivery_attempt, 1), len(delays_ms)) - 1]


# -- filters ---------------------------------------------------------------------------------------


def tag_filter(expression: str) -> frozenset[str] | None:
    """The tags a FilterExpression of type TAG accepts: None for every message (`*`, or an empty
    expression, as RocketMQ's SubscriptionData treats both), else the set of `||`-separated tags
    (spaces around them ignored, as RocketMQ's FilterAPI trims them). A message matches when its
    tag is in the set; a message without a tag matches only `*`. Errors: InvalidArgumentError for
    an expression with an empty alternative (`a||`)."""
    stripped = expression.strip()
    if not stripped or stripped == MATCH_ALL_TAGS:
        return None
    tags = [tag.strip() for tag in stripped.split(TAG_SEPARATOR)]
    if any(not tag for tag in tags):
        raise InvalidArgumentError(f"filter_expression {expression!r}: an empty tag between '||'")
    if MATCH_ALL_TAGS in tags:
        return None
    return frozenset(tags)


def tag_matches(accepted: frozenset[str] | None, tag: str) -> bool:
    """Whether a message with `tag` ("" = none) passes the filter `tag_filter` made."""
    return accepted is None or tag in accepted


# -- offsets and subjects ----------------------------------------------------------------------------


def offset_of(seq: int) -> int:
    """A RocketMQ partition offset (0-based) of a Weir seq (1-based): seq - 1."""
    return seq - 1


def seq_of(offset: int) -> int:
    """The Weir seq of a RocketMQ partition offset: offset + 1."""
    return offset + 1


def dead_letter_subject(stream: str, weir_group: str) -> str:
    """Where the group's dead letters go in the topic's own stream: `<stream>.dlq.<group>` (RocketMQ's
    `%DLQ%<group>` topic). The group's consumer filters `<stream>` (one token), which never matches
    it; Weir names hold no `.`, so the subject has exactly three tokens."""
    return f"{stream}.dlq.{weir_group}"
