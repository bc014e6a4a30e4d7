"""Subject, pattern and name rules; the key partitioner."""

from __future__ import annotations

import pytest
from weir.errors import InvalidNameError, InvalidSubjectError
from weir.partitioning import fnv1a_32, partition_for_key
from weir.subjects import (
    SubjectFilter,
    patterns_overlap,
    subject_matches,
    validate_name,
    validate_pattern,
    validate_subject,
)


@pytest.mark.parametrize(
    ("pattern", "subject", "expected"),
    [
        ("orders.*", "orders.eu", True),
        ("orders.*", "orders.eu.fr", False),
        ("orders.>", "orders.eu.fr", True),
        ("orders.>", "orders", False),
        (">", "a", True),
        ("*.b", "a.b", True),
        ("a.b", "a.b", True),
        ("a.b", "a.b.c", False),
        ("a.*.c", "a.b.c", True),
    ],
)
def test_subject_matches(pattern: str, subject: str, expected: bool) -> None:
    assert subject_matches(pattern, subject) is expected
    assert SubjectFilter([pattern]).accepts(subject) is expected


def test_empty_filter_accepts_everything() -> None:
    assert SubjectFilter([]).accepts("any.thing")


@pytest.mark.parametrize("subject", ["", "a..b", ".a", "a.", "a b", "a.*", "a.>", "a\tb", "x" * 1025])
def test_invalid_publish_subjects(subject: str) -> None:
    with pytest.raises(InvalidSubjectError):
        validate_subject(subject)


@pytest.mark.parametrize("pattern", ["a.>.b", "a*", "a.b>", "", "a..b"])
def test_invalid_patterns(pattern: str) -> None:
    with pytest.raises(InvalidSubjectError):
        validate_pattern(pattern)


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ("a.*", "a.b", True),
        ("a.>", "b.>", False),
        ("a.*", "*.b", True),
        ("a", "a.b", False),
        ("a.>", "a.b.c", True),
    ],
)
def test_patterns_overlap(first: str, second: str, expected: bool) -> None:
    assert patterns_overlap(first, second) is expected
    assert patterns_overlap(second, first) is expected


@pytest.mark.parametrize("name", ["orders", "kv:config", "a-b_c", "x" * 128])
def test_valid_names(name: str) -> None:
    validate_name(name)


@pytest.mark.parametrize("name", ["", "a.b", "a b", "a/b", "a*", "x" * 129, "é"])
def test_invalid_names(name: str) -> None:
    with pytest.raises(InvalidNameError):
        validate_name(name)


def test_fnv1a_reference_values() -> None:
    # Reference values of 32-bit FNV-1a (as Go's hash/fnv New32a gives them).
    assert fnv1a_32(b"") == 0x811C9DC5
    assert fnv1a_32(b"a") == 0xE40C292C
    assert fnv1a_32(b"foobar") == 0xBF9CF968


def test_partition_for_key_is_stable_and_in_range() -> None:
    for partitions in (1, 3, 16):
        for key in (b"", b"a", b"user-42", b"\xff" * 9):
            partition = partition_for_key(key, partitions)
            assert 0 <= partition < partitions
            assert partition == partition_for_key(key, partitions)
    # sarama: int32(0xE40C292C) = -468965076; |-468965076 % 16| = 4.
    assert partition_for_key(b"a", 16) == 4
    with pytest.raises(ValueError, match="partitions"):
        partition_for_key(b"a", 0)
