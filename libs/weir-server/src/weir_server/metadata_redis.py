"""How a service reaches the cluster metadata Redis: its URL, TLS for `rediss://` URLs (the
service's own certificate as the client certificate, the cluster CA), and a password (Redis's
`requirepass`, or an ACL user's) read from a file when a connection is made, so it rotates without
a restart and never shows in a process listing or a log.

A Redis with replicas watched by Redis Sentinel (no single point of failure) is reached through
its sentinels: `redis+sentinel://host:port,host:port,.../<master name>[/<db>]`. The client asks
the sentinels which server is the primary, and again after a connection to it fails, so a Sentinel
failover needs no restart (redis-py's Sentinel support). The sentinels take the same password.

Settings (the routers', nodes' and replicators' prefixes apply: WEIR_NODE_REDIS_PASSWORD_FILE, ...):
`redis_url` (each service's own), `redis_password_file`, `redis_username`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis.asyncio as redis_asyncio
from pydantic import Field
from pydantic_settings import BaseSettings
from redis.asyncio.connection import SSLConnection
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import Sentinel, SentinelManagedConnection
from redis.backoff import ConstantBackoff, NoBackoff
from redis.credentials import CredentialProvider
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

logger = logging.getLogger(__name__)
LOOPBACK = ("127.0.0.1", "localhost", "::1")
# How long a metadata call waits for its Redis, and a question to a sentinel for its answer.
REDIS_TIMEOUT_S = 2.0
SENTINEL_TIMEOUT_S = 0.5


class PasswordFileCredentials(CredentialProvider):
    """Redis credentials whose password is read from a file each time a connection authenticates."""

    def __init__(self, password_file: Path, username: str = "") -> None:
        self.password_file = password_file
        self.username = username

    def get_credentials(self) -> tuple[str] | tuple[str, str]:
        password = self.password_file.read_text().strip()
        return (self.username, password) if self.username else (password,)

    async def get_credentials_async(self) -> tuple[str] | tuple[str, str]:
        # redis-py's asyncio client asks this; its default logs a warning at every connection
        return self.get_credentials()


@dataclass(frozen=True, slots=True)
class RedisAccess:
    """Where the metadata Redis is and how to authenticate to it. `url`: redis:// or rediss:// (TLS,
    checked against `ca_file`, presenting `cert_file`/`key_file` when given)."""

    url: str
    password_file: Path | None = None
    username: str = ""
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None

    @property
    def tls(self) -> bool:
        return self.url.startswith(("rediss://", f"{SENTINEL_TLS_SCHEME}://"))

    @property
    def sentinel(self) -> SentinelTarget | None:
        """The sentinels and master name of a `redis+sentinel://` URL; None for a plain Redis URL."""
        return sentinel_target(self.url)

    def hosts(self) -> list[str]:
        """The host names the URL names (every sentinel's for a Sentinel URL)."""
        target = self.sentinel
        if target is None:
            return [urlsplit(self.url).hostname or ""]
        return [host for host, _ in target.sentinels]

    def shown(self) -> str:
        """The URL without a password it may carry (for logs and status)."""
        parts = urlsplit(self.url)
        if parts.password is None:
            return self.url
        user = f"{parts.username}:***@" if parts.username else ":***@"
        host = parts.netloc.rsplit("@", 1)[1]
        return urlunsplit(parts._replace(netloc=user + host))

    def options(self) -> dict[str, Any]:
        """The keyword arguments of a redis-py client (async or blocking) for this access."""
        options: dict[str, Any] = {}
        if self.password_file is not None:
            options["credential_provider"] = PasswordFileCredentials(self.password_file, self.username)
        if self.tls:
            options.update(
                ssl_ca_certs=str(self.ca_file) if self.ca_file else None,
                ssl_certfile=str(self.cert_file) if self.cert_file else None,
                ssl_keyfile=str(self.key_file) if self.key_file else None,
                ssl_cert_reqs="required",
            )
        return options

    def client(self, **options: Any) -> redis_asyncio.Redis:
        """An asyncio client (`options`: redis-py's, e.g. decode_responses, socket_timeout; a call
        waits at most REDIS_TIMEOUT_S unless `options` say otherwise, so a Redis cut off by the
        network fails the call instead of holding it for TCP's minutes); for a Sentinel URL, one that
        follows the sentinels' primary: it asks them again after a connection error, a READONLY
        answer (the primary it knew was made a replica) or a NOREPLICAS one (it lost its replicas,
        which have likely promoted another), and heeds only a sentinel that sees another sentinel,
        so one cut off with the old primary is not believed."""
        options = {
            "socket_timeout": REDIS_TIMEOUT_S,
            "socket_connect_timeout": REDIS_TIMEOUT_S,
            # one quick retry (after a failover, onto the new primary), not redis-py's default of three
            # with backoff up to 10 s: the callers' own loops (heartbeats, controller ticks) retry
            "retry": Retry(ConstantBackoff(0.05), 1),
            **options,
        }
        target = self.sentinel
        if target is None:
            return redis_asyncio.Redis.from_url(self.url, **self.options(), **options)
        tls = {"ssl": True} if self.tls else {}  # the sentinels and the servers both serve TLS only
        asking = {  # a sentinel that does not answer at once is skipped for the next (no retries)
            **self.options(),
            **tls,
            "socket_timeout": SENTINEL_TIMEOUT_S,
            "socket_connect_timeout": SENTINEL_TIMEOUT_S,
            "retry": Retry(NoBackoff(), 0),
        }
        sentinels = Sentinel(  # type: ignore[no-untyped-call]
            list(target.sentinels),
            min_other_sentinels=1 if len(target.sentinels) > 1 else 0,
            sentinel_kwargs=asking,
            **self.options(),
        )
        connection_class = FollowingPrimaryTLSConnection if self.tls else FollowingPrimaryConnection
        client: redis_asyncio.Redis = sentinels.master_for(
            target.master, db=target.db, connection_class=connection_class, **options
        )
        return client

    def warn_if_exposed(self, service_uses_tls: bool) -> None:
        """Log a warning when a service with TLS reaches a Redis off this host without TLS, or
        without a password."""
        if not service_uses_tls or all(host in LOOPBACK for host in self.hosts()):
            return
        if not self.tls:
            logger.warning("the metadata Redis %s is reached WITHOUT TLS (use rediss://)", self.shown())
        if self.password_file is None and urlsplit(self.url).password is None:
            logger.warning("the metadata Redis %s is reached WITHOUT a password (redis_password_file)", self.shown())


class FollowingPrimaryConnection(SentinelManagedConnection):
    """A connection to the Sentinel-named primary that also treats NOREPLICAS (a primary that lost
    every replica refuses writes: `min-replicas-to-write`) as the sign of a failover: it disconnects,
    so the next attempt asks the sentinels again, as redis-py does for READONLY. A RuntimeError
    while asking the sentinels (uvloop's, for a sentinel connection that broke) is a connection
    error, which the services answer as UNAVAILABLE (retryable), not as an internal error."""

    async def connect(self) -> None:
        try:
            await super().connect()  # type: ignore[no-untyped-call]
        except RuntimeError as error:  # uvloop: asking a sentinel over a connection closed under it
            raise RedisConnectionError(f"asking the sentinels for the primary: {error}") from error

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().read_response(*args, **kwargs)
        except ResponseError as error:
            if not str(error).startswith("NOREPLICAS"):
                raise
            await self.disconnect()
            raise RedisConnectionError("the metadata Redis primary lost its replicas: asking the sentinels") from error


class FollowingPrimaryTLSConnection(FollowingPrimaryConnection, SSLConnection):
    """FollowingPrimaryConnection over TLS (a `rediss+sentinel://` URL), as redis-py's
    SentinelManagedSSLConnection is SentinelManagedConnection's."""


@dataclass(frozen=True, slots=True)
class SentinelTarget:
    sentinels: tuple[tuple[str, int], ...]
    master: str
    db: int = 0


SENTINEL_SCHEME = "redis+sentinel"
SENTINEL_TLS_SCHEME = "rediss+sentinel"  # every sentinel and server serves TLS only (the compose deployment)


def sentinel_target(url: str) -> SentinelTarget | None:
    """The parts of `redis+sentinel://host:port[,host:port...]/<master>[/<db>]`, or of the same with
    `rediss+sentinel://` (TLS to the sentinels and the servers), (pure); None for any other scheme.
    Errors: ValueError naming what is wrong (no sentinel, a port that is not a number, no master
    name, a db that is not a number, credentials in the URL)."""
    scheme, _, rest = url.partition("://")
    if scheme not in (SENTINEL_SCHEME, SENTINEL_TLS_SCHEME):
        return None
    netloc, _, path = rest.partition("/")
    if "@" in netloc:
        raise ValueError(f"{url!r}: give the password in a file (redis_password_file), not in the URL")
    sentinels = []
    for item in netloc.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"{url!r}: each sentinel is host:port, got {item!r}")
        sentinels.append((host.strip("[]"), int(port)))
    master, _, db = path.partition("/")
    if not master:
        raise ValueError(f"{url!r}: name the master the sentinels watch: {SENTINEL_SCHEME}://host:port/<master>")
    if db and not db.isdigit():
        raise ValueError(f"{url!r}: the db is a number, got {db!r}")
    return SentinelTarget(tuple(sentinels), master, int(db or 0))


class MetadataRedisSettings(BaseSettings):
    """The metadata Redis's credentials (mixed into the routers', nodes' and replicators' settings,
    next to their `redis_url`)."""

    redis_password_file: Path | None = Field(
        None,
        description="File holding the metadata Redis's password (requirepass, or redis_username's ACL password); "
        "read at each new connection, so it rotates without a restart. With a rediss:// URL the connection also "
        "uses TLS with this service's certificate and CA.",
    )
    redis_username: str = Field("", description="ACL user of the metadata Redis ('' = the default user).")

    def redis_access(self, url: str) -> RedisAccess:
        """How this service reaches the Redis at `url` (its TLS files for rediss://)."""
        return RedisAccess(
            url=url,
            password_file=self.redis_password_file,
            username=self.redis_username,
            ca_file=getattr(self, "tls_ca_file", None),
            cert_file=getattr(self, "tls_cert_file", None),
            key_file=getattr(self, "tls_key_file", None),
        )
