"""Who a caller is and what it may do: bearer tokens, and per-stream (and subject) permissions for
publish, consume, read and admin (pure: no gRPC; unit-tested).

The auth file (JSON, `..._AUTH_FILE` of a node or router; read again when it changes, so tokens and
permissions rotate without a restart) names the users:

    {"users": [
      {"name": "billing",
       "token_sha256": "<hex sha-256 of the token>",
       "allow": [
         {"actions": ["publish", "read"], "streams": ["orders", "billing-*"], "subjects": ["orders.>"]},
         {"actions": ["consume"], "streams": ["orders"]},
         {"actions": ["admin"], "streams": ["billing-*"]}]}]}

Streams are glob patterns (`*`, `?`); subjects (publish only; none = any) are NATS patterns. The
actions: `publish`, `consume` (fetch, ack, nak, term, in progress, subscribe, group membership),
`read` (messages, subjects, stream and consumer info), `admin` (create, update, delete and purge
streams; create, delete and seek consumers), `metrics` (every service's /metrics page, which covers
every stream: its grant must name the streams `["*"]`; it gives no stream action, not even a route).
Listing streams and cluster figures needs any known identity. The file holds token hashes, never
tokens; tokens are never logged. A user may set `"requests_per_second"` (0 = no limit) and
`"request_burst"`; without them the service's `requests_per_second` / `request_burst` settings apply
(weir_server.ratelimit). A user may also hold RocketMQ keys, `"rocketmq": {"access_key": ...,
"secret_key": ...}`, for the gateway's RocketMQ front door, whose clients sign each call with them
(RocketMQ keeps the secret key, not a hash, on its side too: the signature is an HMAC of it, so keep
the file readable by the services only).

The cluster's own services that call client ports (a gateway, the Numaflow source, the analytics
job) present the service token (`service_token_file`) and may do everything; or, for least
privilege, each its own user's token. Client certificates do not name users on client ports:
grpc's Python server either requires a client certificate or does not ask for one (it cannot ask
without requiring), so callers with and without certificates cannot share a port that reads them;
mutual TLS names the services on the internal port (weir_server.identity).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from weir.subjects import subject_matches

from weir_server.ratelimit import Rate

logger = logging.getLogger(__name__)

METRICS = "metrics"  # the services' /metrics pages (weir_server.metrics_server), which cover every stream
ACTIONS = ("publish", "consume", "read", "admin", METRICS)
EVERY_STREAM = ("*",)  # the only streams a metrics grant may name
CLUSTER = "cluster"  # what any known identity may do: list streams, cluster figures and info
ANY = "any"  # any action on the stream: what learning its route needs (no grant: permission denied)


class AuthFileError(ValueError):
    """The auth file is not valid; the message says where."""


@dataclass(frozen=True, slots=True)
class Grant:
    actions: frozenset[str]
    streams: tuple[str, ...]
    subjects: tuple[str, ...] = ()  # publish only; () = any subject

    def covers(self, action: str, stream: str, subjects: Sequence[str]) -> bool:
        if not any(fnmatch.fnmatchcase(stream, pattern) for pattern in self.streams):
            return False
        if action == ANY:  # a stream action: metrics is none
            return bool(self.actions - {METRICS})
        if action not in self.actions:
            return False
        if action != "publish" or not self.subjects:
            return True
        return all(any(subject_matches(pattern, subject) for pattern in self.subjects) for subject in subjects)


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller: a user of the auth file, or the cluster's services. `rate`: its
    request rate (None = no limit; the services have none)."""

    name: str
    grants: tuple[Grant, ...] = ()
    service: bool = False
    rate: Rate | None = None

    def may(self, action: str, stream: str = "", subjects: Sequence[str] = ()) -> bool:
        if self.service or action == CLUSTER:
            return True
        return any(grant.covers(action, stream, subjects) for grant in self.grants)

    def may_read_metrics(self) -> bool:
        """Whether it may read the services' /metrics pages: the services, or a user with a metrics
        grant (on every stream: the parser allows no other)."""
        return self.service or any(METRICS in grant.actions for grant in self.grants)


@dataclass(frozen=True, slots=True)
class User:
    name: str
    token_sha256: str
    grants: tuple[Grant, ...] = ()
    rate: Rate | Literal["default"] | None = "default"  # "default": the service's setting
    # RocketMQ's access key and secret key (its clients sign each call with them: the gateway's
    # RocketMQ front door checks the signature); "" when the user has none.
    rocketmq_access_key: str = ""
    rocketmq_secret_key: str = ""


def token_hash(token: str) -> str:
    """The sha-256 (hex) an auth file stores for `token`."""
    return hashlib.sha256(token.encode()).hexdigest()


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise AuthFileError(f"{where}: expected a list of non-empty strings")
    return tuple(value)


def _grant(entry: Any, where: str) -> Grant:
    if not isinstance(entry, Mapping):
        raise AuthFileError(f"{where}: expected an object with actions and streams")
    actions = _strings(entry.get("actions"), f"{where}.actions")
    unknown = sorted(set(actions) - set(ACTIONS))
    if unknown:
        raise AuthFileError(f"{where}.actions: unknown {unknown} (known: {', '.join(ACTIONS)})")
    subjects = _strings(entry["subjects"], f"{where}.subjects") if "subjects" in entry else ()
    streams = _strings(entry.get("streams"), f"{where}.streams")
    if METRICS in actions and streams != EVERY_STREAM:
        raise AuthFileError(f'{where}.streams: a metrics grant covers every stream: give it "streams": ["*"]')
    return Grant(frozenset(actions), streams, subjects)


def parse_auth_file(text: str) -> list[User]:
    """The users of an auth file. Errors: AuthFileError naming what is wrong and where."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise AuthFileError(f"not JSON: {error}") from None
    users = document.get("users") if isinstance(document, Mapping) else None
    if not isinstance(users, list):
        raise AuthFileError('expected {"users": [...]}')
    parsed: list[User] = []
    for index, entry in enumerate(users):
        where = f"users[{index}]"
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"]:
            raise AuthFileError(f"{where}: a user needs a name")
        token = str(entry.get("token_sha256", "")).lower()
        if len(token) != 64 or any(char not in "0123456789abcdef" for char in token):
            raise AuthFileError(
                f"{where}.token_sha256: expected 64 hex digits, the sha-256 of the user's token (weir cluster token)"
            )
        grants = tuple(_grant(grant, f"{where}.allow[{n}]") for n, grant in enumerate(entry.get("allow") or []))
        for other in parsed:
            clash = "name" if other.name == entry["name"] else "token_sha256" if other.token_sha256 == token else ""
            if clash:
                raise AuthFileError(f"{where}: the same {clash} as user {other.name!r}")
        access_key, secret_key = _rocketmq_keys(entry, where)
        for other in parsed:
            if access_key and other.rocketmq_access_key == access_key:
                raise AuthFileError(f"{where}.rocketmq.access_key: the same as user {other.name!r}'s")
        parsed.append(User(entry["name"], token, grants, _user_rate(entry, where), access_key, secret_key))
    return parsed


def _rocketmq_keys(entry: Mapping[str, Any], where: str) -> tuple[str, str]:
    """A user's `"rocketmq": {"access_key": ..., "secret_key": ...}` (both or no entry)."""
    keys = entry.get("rocketmq")
    if keys is None:
        return "", ""
    if not isinstance(keys, Mapping) or not all(
        isinstance(keys.get(name), str) and keys[name] for name in ("access_key", "secret_key")
    ):
        raise AuthFileError(f"{where}.rocketmq: expected non-empty access_key and secret_key strings")
    return keys["access_key"], keys["secret_key"]


def _user_rate(entry: Mapping[str, Any], where: str) -> Rate | Literal["default"] | None:
    """A user's `requests_per_second` (0 = no limit) and `request_burst`; "default" when unset."""
    if "requests_per_second" not in entry:
        if "request_burst" in entry:
            raise AuthFileError(f"{where}.request_burst: needs requests_per_second")
        return "default"
    figures = [entry["requests_per_second"], entry.get("request_burst", 0)]
    if not all(isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 for value in figures):
        raise AuthFileError(f"{where}: requests_per_second and request_burst are numbers >= 0")
    return Rate.of(float(figures[0]), float(figures[1]))


SERVICES = "weir-services"  # the principal of the service token


def read_token(path: Path) -> str:
    """The token in a token file (surrounding whitespace dropped). Errors: AuthFileError when it is
    empty, OSError when it cannot be read."""
    token = path.read_text().strip()
    if not token:
        raise AuthFileError(f"token file {path} is empty")
    return token


class Authenticator:
    """The users of an auth file and the service token, each read again when its file changes."""

    RELOAD_INTERVAL_S = 1.0  # how often the files' modification times are looked at

    def __init__(self, path: Path, service_token_file: Path | None = None, default_rate: Rate | None = None) -> None:
        self.path = path
        self.service_token_file = service_token_file
        self.default_rate = default_rate  # of users whose entry sets none
        self._stamp: tuple[int, ...] | None = None
        self._checked_at = 0.0
        self._by_token: dict[str, User] = {}
        self._by_access_key: dict[str, User] = {}
        self._service_hash = ""
        self.reload()

    def _stamps(self) -> tuple[int, ...]:
        files = [self.path] if self.service_token_file is None else [self.path, self.service_token_file]
        return tuple(os.stat(path).st_mtime_ns for path in files)

    def reload(self) -> None:
        """Read the files when one changed since the last read. Errors: AuthFileError, OSError."""
        stamp = self._stamps()
        if stamp == self._stamp:
            return
        self._stamp = stamp  # a version that fails is not read again until a file changes
        users = parse_auth_file(self.path.read_text())
        service_hash = token_hash(read_token(self.service_token_file)) if self.service_token_file else ""
        self._by_token = {user.token_sha256: user for user in users}
        self._by_access_key = {user.rocketmq_access_key: user for user in users if user.rocketmq_access_key}
        self._service_hash = service_hash
        logger.info("auth file %s: %d users", self.path, len(users))

    def refresh(self) -> None:
        """`reload` at most once per RELOAD_INTERVAL_S; files that became unreadable or invalid keep
        the users read before (and say so in the log)."""
        now = time.monotonic()
        if now - self._checked_at < self.RELOAD_INTERVAL_S:
            return
        self._checked_at = now
        try:
            self.reload()
        except (OSError, AuthFileError) as error:
            logger.error("auth file %s not reloaded, the users read before stay: %s", self.path, error)

    def authenticate(self, token: str) -> Principal | None:
        """The caller presenting `token`, or None when nobody has it."""
        if not token:
            return None
        # Looked up by hash: timing can tell only about hashes, which do not lead back to tokens.
        digest = token_hash(token)
        if self._service_hash and digest == self._service_hash:
            return Principal(SERVICES, service=True)
        user = self._by_token.get(digest)
        return None if user is None else self._principal(user)

    def rocketmq_user(self, access_key: str) -> tuple[Principal, str] | None:
        """The user whose RocketMQ access key is `access_key`, with its secret key; None when none."""
        user = self._by_access_key.get(access_key) if access_key else None
        return None if user is None else (self._principal(user), user.rocketmq_secret_key)

    def _principal(self, user: User) -> Principal:
        return Principal(user.name, user.grants, rate=self.default_rate if user.rate == "default" else user.rate)
