"""How a service reaches the cluster metadata Redis: its URL, TLS for `rediss://` URLs (the
service's own certificate as the client certificate, the cluster CA), and a password (Redis's
`requirepass`, or an ACL user's) read from a file when a connection is made, so it rotates without
a restart and never shows in a process listing or a log.

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
from redis.credentials import CredentialProvider

logger = logging.getLogger(__name__)
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class PasswordFileCredentials(CredentialProvider):
    """Redis credentials whose password is read from a file each time a connection authenticates."""

    def __init__(self, password_file: Path, username: str = "") -> None:
        self.password_file = password_file
        self.username = username

    def get_credentials(self) -> tuple[str] | tuple[str, str]:
        password = self.password_file.read_text().strip()
        return (self.username, password) if self.username else (password,)


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
        return self.url.startswith("rediss://")

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
        """An asyncio client (`options`: redis-py's, e.g. decode_responses, socket_timeout)."""
        return redis_asyncio.Redis.from_url(self.url, **self.options(), **options)

    def warn_if_exposed(self, service_uses_tls: bool) -> None:
        """Log a warning when a service with TLS reaches a Redis off this host without TLS, or
        without a password."""
        host = urlsplit(self.url).hostname or ""
        if not service_uses_tls or host in LOOPBACK:
            return
        if not self.tls:
            logger.warning("the metadata Redis %s is reached WITHOUT TLS (use rediss://)", self.shown())
        if self.password_file is None and urlsplit(self.url).password is None:
            logger.warning("the metadata Redis %s is reached WITHOUT a password (redis_password_file)", self.shown())


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
