"""Subjects, subject patterns and names (NATS syntax).

A subject is tokens separated by ``.``: no empty token, no whitespace, at most
`MAX_SUBJECT_BYTES` UTF-8 bytes. A pattern may use ``*`` (exactly one token) and ``>`` (one or more
tokens; last token only); a published subject may not. Source: NATS subject rules, which the streams
seed's `subjects_filter` follows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from weir.errors import InvalidNameError, InvalidSubjectError

MAX_SUBJECT_BYTES = 1024
# Weir's own subjects (the records of delayed and held messages): publishers may not use them and
# consumers are never delivered them.
RESERVED_SUBJECT_PREFIX = "$weir."
MAX_NAME_CHARS = 128

_NAME = re.compile(r"[A-Za-z0-9_\-:]{1,128}")
_BAD_TOKEN_CHARS = re.compile(r"[\s\x00]")


def validate_name(name: str, what: str = "stream name") -> None:
    """Raise `InvalidNameError` unless `name` is 1..128 characters of ``[A-Za-z0-9_-:]``."""
    if not _NAME.fullmatch(name):
        shown = name if len(name) <= 64 else name[:61] + "..."
        raise InvalidNameError(
            f"{what} {shown!r} is invalid: use 1..{MAX_NAME_CHARS} characters of A-Z a-z 0-9 _ - :",
            name=shown,
        )


def _check_common(subject: str, what: str) -> list[str]:
    if not subject:
        raise InvalidSubjectError(f"{what} is empty")
    size = len(subject.encode("utf-8", "surrogatepass"))
    if size > MAX_SUBJECT_BYTES:
        raise InvalidSubjectError(f"{what} is {size} bytes; the maximum is {MAX_SUBJECT_BYTES}")
    if _BAD_TOKEN_CHARS.search(subject):
        raise InvalidSubjectError(f"{what} {subject!r} contains whitespace or NUL")
    tokens = subject.split(".")
    if any(token == "" for token in tokens):
        raise InvalidSubjectError(f"{what} {subject!r} has an empty token")
    return tokens


def validate_subject(subject: str) -> None:
    """A subject to publish to: no wildcards."""
    tokens = _check_common(subject, "subject")
    for token in tokens:
        if token in ("*", ">"):
            raise InvalidSubjectError(f"subject {subject!r} contains wildcard {token!r}; publish needs a literal")


def validate_pattern(pattern: str) -> None:
    """A subject pattern: ``*`` as a whole token anywhere, ``>`` as the last token only."""
    tokens = _check_common(pattern, "subject pattern")
    for index, token in enumerate(tokens):
        if token == ">" and index != len(tokens) - 1:
            raise InvalidSubjectError(f"subject pattern {pattern!r}: '>' must be the last token")
        if len(token) > 1 and ("*" in token or ">" in token):
            raise InvalidSubjectError(f"subject pattern {pattern!r}: wildcards must be whole tokens")


def subject_matches(pattern: str, subject: str) -> bool:
    """Whether the literal `subject` matches `pattern`."""
    pattern_tokens = pattern.split(".")
    subject_tokens = subject.split(".")
    for index, token in enumerate(pattern_tokens):
        if token == ">":
            return len(subject_tokens) > index
        if index >= len(subject_tokens):
            return False
        if token != "*" and token != subject_tokens[index]:
            return False
    return len(pattern_tokens) == len(subject_tokens)


def patterns_overlap(first: str, second: str) -> bool:
    """Whether some literal subject matches both patterns."""
    first_tokens = first.split(".")
    second_tokens = second.split(".")
    for index in range(max(len(first_tokens), len(second_tokens))):
        a = first_tokens[index] if index < len(first_tokens) else None
        b = second_tokens[index] if index < len(second_tokens) else None
        if a == ">" or b == ">":
            return a is not None and b is not None
        if a is None or b is None:
            return False
        if a != "*" and b not in ("*", a):
            return False
    return True


class SubjectFilter:
    """A stream's accepted subjects: matches a literal subject against its patterns.

    An empty pattern list accepts every subject. Results are cached (bounded) because a busy stream
    sees the same few subjects again and again.
    """

    _CACHE_LIMIT = 4096

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)
        self._cache: dict[str, bool] = {}

    def accepts(self, subject: str) -> bool:
        """Whether the (already valid) literal `subject` matches one of the patterns."""
        return not self.patterns or any(subject_matches(pattern, subject) for pattern in self.patterns)

    def accepts_valid(self, subject: str) -> bool:
        """`validate_subject(subject)` (raises InvalidSubjectError), then `accepts(subject)`; the
        outcome for a valid subject is cached, so a hot subject costs one dict lookup."""
        cached = self._cache.get(subject)
        if cached is not None:
            return cached
        validate_subject(subject)
        result = self.accepts(subject)
        if len(self._cache) >= self._CACHE_LIMIT:
            self._cache.clear()
        self._cache[subject] = result
        return result
