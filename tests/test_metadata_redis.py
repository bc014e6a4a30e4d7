"""How services name the metadata store (pure): a Redis URL, or Redis Sentinel's
`redis+sentinel://host:port,.../<master>[/<db>]` (weir_server.metadata_redis)."""

from __future__ import annotations

import pytest
from weir_server.metadata_redis import RedisAccess, SentinelTarget, sentinel_target


def test_a_sentinel_url_names_every_sentinel_the_master_and_the_db() -> None:
    assert sentinel_target("redis+sentinel://10.0.0.1:26379,s2:26380/weir/3") == SentinelTarget(
        (("10.0.0.1", 26379), ("s2", 26380)), "weir", 3
    )
    assert sentinel_target("redis+sentinel://[::1]:26379/weir") == SentinelTarget((("::1", 26379),), "weir", 0)
    assert sentinel_target("redis://127.0.0.1:6379/0") is None  # a plain Redis
    access = RedisAccess("redis+sentinel://a:1,b:2/weir/0")
    assert access.hosts() == ["a", "b"] and not access.tls
    assert RedisAccess("redis://127.0.0.1:6379/0").hosts() == ["127.0.0.1"]
    tls = RedisAccess("rediss+sentinel://a:1,b:2/weir/3")  # TLS to the sentinels and the servers
    assert tls.tls and tls.hosts() == ["a", "b"]
    assert sentinel_target(tls.url) == SentinelTarget((("a", 1), ("b", 2)), "weir", 3)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("redis+sentinel:///weir", "each sentinel is host:port"),
        ("redis+sentinel://a:x/weir", "each sentinel is host:port"),
        ("redis+sentinel://a:1", "name the master"),
        ("redis+sentinel://a:1/weir/zero", "the db is a number"),
        ("redis+sentinel://:secret@a:1/weir", "not in the URL"),
        ("rediss+sentinel://a:1,b:x/weir", "each sentinel is host:port"),
    ],
)
def test_a_bad_sentinel_url_says_what_is_wrong(url: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        sentinel_target(url)
