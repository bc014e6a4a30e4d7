"""Request rate per identity (issue 23, limits): the token buckets (pure) and the rates an auth
file and the settings give each user."""

from __future__ import annotations

import json

import pytest
from weir import RateLimitedError
from weir.errors import WeirError
from weir_server.auth import AuthFileError, parse_auth_file
from weir_server.ratelimit import Rate, RequestBuckets

HASH = "b" * 64


def test_a_caller_gets_its_burst_at_once_then_the_rate() -> None:
    buckets, rate = RequestBuckets(), Rate(per_second=10, burst=3)
    assert [buckets.take("a", rate, 100.0) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("a", rate, 100.0) == pytest.approx(0.1)  # refused: one request every 100 ms
    assert buckets.take("a", rate, 100.05) == pytest.approx(0.05)  # half a request back, nothing taken
    assert buckets.take("a", rate, 100.1) == 0.0
    assert buckets.take("b", rate, 100.1) == 0.0  # each identity its own bucket
    assert [buckets.take("a", rate, 200.0) for _ in range(4)][-1] > 0  # refills to the burst, no further


def test_the_table_of_callers_is_bounded_and_forgets_the_longest_unused() -> None:
    buckets, rate = RequestBuckets(max_identities=2), Rate(per_second=1, burst=1)
    assert buckets.take("a", rate, 0.0) == 0.0
    assert buckets.take("b", rate, 0.0) == 0.0
    assert buckets.take("b", rate, 0.0) > 0  # b is now the most recently used
    assert buckets.take("c", rate, 0.0) == 0.0  # a goes
    assert len(buckets) == 2
    assert buckets.take("b", rate, 0.0) > 0  # b was kept: still empty
    assert buckets.take("a", rate, 0.0) == 0.0  # a starts again full


def test_rates_are_checked_and_default_to_one_second_of_burst() -> None:
    assert Rate.of(0) is None
    assert Rate.of(50) == Rate(50, 50)
    assert Rate.of(0.5) == Rate(0.5, 1)
    assert Rate.of(50, 5) == Rate(50, 5)
    with pytest.raises(ValueError, match=">= 0"):
        Rate.of(-1)


def user(**extra: object) -> str:
    return json.dumps({"users": [{"name": "x", "token_sha256": HASH, **extra}]})


def test_an_auth_file_user_may_set_its_own_rate() -> None:
    assert parse_auth_file(user())[0].rate == "default"
    assert parse_auth_file(user(requests_per_second=0))[0].rate is None  # no limit for this user
    assert parse_auth_file(user(requests_per_second=20, request_burst=2))[0].rate == Rate(20, 2)
    for bad in ({"requests_per_second": -1}, {"requests_per_second": "5"}, {"requests_per_second": True}):
        with pytest.raises(AuthFileError, match=r"users\[0\]: requests_per_second and request_burst are numbers"):
            parse_auth_file(user(**bad))
    with pytest.raises(AuthFileError, match="request_burst: needs requests_per_second"):
        parse_auth_file(user(request_burst=3))


def test_a_rate_limited_error_carries_its_wait_in_the_status() -> None:
    error = RateLimitedError("slow down", identity="x", retry_after_ms=250)
    assert error.retryable and error.retry_after_s == 0.25
    status = error.to_status()
    assert status.code.name == "RESOURCE_EXHAUSTED"
    assert WeirError("no wait").retry_after_s is None
