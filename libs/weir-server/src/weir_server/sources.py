"""Cross-stream sources as pure rules: config validation, subject transforms, provenance headers,
the msg_id of a sourced message (which says the source position it settles) and the position
records that sourcing streams of earlier versions kept in their own log.

Shared by the router (which validates a config before it places anything) and the partition node
(whose tails apply them). Source: the streams seed's `StreamSourceConfigPb` / `SubjectTransformPb`
/ `OnDropPolicy` and JetStream's stream sources (NATS subject transforms' `{{wildcard(N)}}`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from weir.errors import InvalidConfigError, WeirError
from weir.subjects import RESERVED_SUBJECT_PREFIX, subject_matches, validate_name, validate_pattern, validate_subject
from weir.v1 import types_pb2

MAX_SOURCES = 16
SOURCE_POSITION_PREFIX = f"{RESERVED_SUBJECT_PREFIX}source."
# A sourced message's msg_id: `$weir.source/<source stream>/<source partition>/<source seq>`. Stream
# names have no "/" (validate_name). Publishers may not use msg_ids beginning with `$weir.`.
SOURCE_MSG_ID_PREFIX = f"{RESERVED_SUBJECT_PREFIX}source/"
HEADER_SOURCE_STREAM = "waymaker-source-stream"  # the seed's provenance headers
HEADER_SOURCE_SEQ = "waymaker-source-seq"
HEADER_SOURCE_PARTITION = "waymaker-source-partition"
_WILDCARD = re.compile(r"\{\{\s*wildcard\(\s*(\d+)\s*\)\s*\}\}")


def validate_sources(config: types_pb2.StreamConfig) -> None:
    """Raise InvalidConfigError (or the name/subject error) naming the first bad `sources` entry:
    a sourcing stream has one partition and at most MAX_SOURCES sources, each a valid, distinct
    stream other than itself, with a valid filter, transform and dead-letter stream."""
    if not config.sources:
        return
    if len(config.sources) > MAX_SOURCES:
        raise InvalidConfigError(f"sources: at most {MAX_SOURCES}, got {len(config.sources)}")
    if config.retention == types_pb2.RETENTION_POLICY_INTEREST:
        raise InvalidConfigError(
            f"sources: not supported on an interest-retention stream ({config.name!r}): its position records "
            "would be removed with what every consumer acknowledged; use limits or work-queue retention"
        )
    if config.partitions > 1:
        raise InvalidConfigError(
            f"sources: a sourcing stream has one partition (its tails append in one order); "
            f"{config.name!r} asks for {config.partitions}"
        )
    seen: set[str] = set()
    for index, source in enumerate(config.sources):
        where = f"sources[{index}]"
        validate_name(source.source_stream, f"{where}.source_stream")
        if source.source_stream == config.name:
            raise InvalidConfigError(f"{where}: stream {config.name!r} cannot source itself")
        if source.source_stream in seen:
            raise InvalidConfigError(f"{where}: {source.source_stream!r} is listed twice")
        seen.add(source.source_stream)
        if source.filter_subject:
            validate_pattern(source.filter_subject)
        if source.on_drop not in types_pb2.SourceDropPolicy.values():
            raise InvalidConfigError(f"{where}.on_drop: unknown policy {source.on_drop}")
        if source.dlq_stream:
            validate_name(source.dlq_stream, f"{where}.dlq_stream")
            if source.dlq_stream == config.name:
                raise InvalidConfigError(f"{where}.dlq_stream: a stream cannot be its own sources' dead-letter stream")
        if source.HasField("subject_transform"):
            SubjectRewrite.of(source.subject_transform, where=f"{where}.subject_transform")


@dataclass(frozen=True, slots=True)
class SubjectRewrite:
    """A compiled `SubjectTransform`: `apply` gives the rewritten subject, None when the pattern
    does not match."""

    pattern: str
    destination: str
    wildcard_tokens: tuple[int, ...]  # pattern token index of each wildcard, in order

    @classmethod
    def of(cls, transform: types_pb2.SubjectTransform, *, where: str = "subject_transform") -> SubjectRewrite:
        """Raises InvalidConfigError / InvalidSubjectError for a bad pattern or destination."""
        if not transform.source_pattern or not transform.destination:
            raise InvalidConfigError(f"{where}: source_pattern and destination are both required")
        validate_pattern(transform.source_pattern)
        tokens = transform.source_pattern.split(".")
        wildcards = tuple(index for index, token in enumerate(tokens) if token in ("*", ">"))
        for match in _WILDCARD.finditer(transform.destination):
            number = int(match.group(1))
            if not 1 <= number <= len(wildcards):
                raise InvalidConfigError(
                    f"{where}.destination: wildcard({number}) but the pattern "
                    f"{transform.source_pattern!r} has {len(wildcards)} wildcard(s)"
                )
        literal = _WILDCARD.sub("x", transform.destination)
        if "{{" in literal or "}}" in literal:
            raise InvalidConfigError(f"{where}.destination: only {{{{wildcard(N)}}}} may be substituted")
        try:
            validate_subject(literal)
        except WeirError as error:
            raise InvalidConfigError(f"{where}.destination: {error.message}") from error
        return cls(transform.source_pattern, transform.destination, wildcards)

    def apply(self, subject: str) -> str | None:
        if not subject_matches(self.pattern, subject):
            return None
        tokens = subject.split(".")
        rest = self.pattern.endswith(">")  # its last wildcard stands for every remaining token
        last = len(self.wildcard_tokens) - 1
        values = [
            ".".join(tokens[index:]) if rest and number == last else tokens[index]
            for number, index in enumerate(self.wildcard_tokens)
        ]
        return _WILDCARD.sub(lambda match: values[int(match.group(1)) - 1], self.destination)


def source_msg_id(source_stream: str, source_partition: int, source_seq: int) -> str:
    """The msg_id of the message sourced from `source_seq` of a source partition: the duplicate
    window's key, and the position the message settles (`parse_source_msg_id`)."""
    return f"{SOURCE_MSG_ID_PREFIX}{source_stream}/{source_partition}/{source_seq}"


def parse_source_msg_id(msg_id: str) -> tuple[str, int, int] | None:
    """(source stream, source partition, source seq) of a `source_msg_id`; None for any other id."""
    if not msg_id.startswith(SOURCE_MSG_ID_PREFIX):
        return None
    parts = msg_id[len(SOURCE_MSG_ID_PREFIX) :].split("/")
    if len(parts) != 3 or not parts[0] or not all(_is_seq(part) for part in parts[1:]):
        return None
    return parts[0], int(parts[1]), int(parts[2])


def _is_seq(text: str) -> bool:
    """ASCII digits of a uint64 that fits a signed 64-bit integer (what a log stores)."""
    return 0 < len(text) <= 19 and text.isascii() and text.isdigit() and int(text) < 2**63


def position_subject(source_stream: str, source_partition: int) -> str:
    """The reserved subject of the position record a sourcing stream of an earlier version kept in
    its own log (read once to resume, then removed: sources.py)."""
    return f"{SOURCE_POSITION_PREFIX}{source_stream}.{source_partition}"


def encode_position(last_sourced_seq: int) -> bytes:
    """An earlier version's position record payload (tests make one to check the upgrade)."""
    return json.dumps({"last_sourced_seq": last_sourced_seq}).encode()


def decode_position(payload: bytes) -> int:
    """The last_sourced_seq a position record of an earlier version holds; 0 for one that cannot be read."""
    try:
        value = json.loads(payload).get("last_sourced_seq", 0)
    except (ValueError, AttributeError):
        return 0
    return value if isinstance(value, int) and value >= 0 else 0


def provenance(headers: list[tuple[str, str]]) -> tuple[str, int, int] | None:
    """(source stream, source partition, source seq) of a sourced message's headers; None when it
    carries none (it was published directly)."""
    found = dict(headers)
    stream, seq = found.get(HEADER_SOURCE_STREAM), found.get(HEADER_SOURCE_SEQ, "")
    if not stream or not seq.isdigit():
        return None
    partition = found.get(HEADER_SOURCE_PARTITION, "0")
    return stream, int(partition) if partition.isdigit() else 0, int(seq)


def initial_position(source: types_pb2.StreamSource, first_seq: int, last_seq: int) -> int:
    """The last_sourced_seq a tail starts from when nothing of this source partition was read
    yet: before `start_seq`, or `max_initial_backfill` before the source's last seq, else before
    the first stored message (`first_seq`, `last_seq` of the source partition now)."""
    if source.start_seq:
        return source.start_seq - 1
    if source.max_initial_backfill:
        return max(0, last_seq - source.max_initial_backfill)
    return max(0, first_seq - 1)
