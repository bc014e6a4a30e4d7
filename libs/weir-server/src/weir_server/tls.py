"""TLS for Weir's services: the settings every service shares, its server ports and its channels.

Every gRPC port is TLS unless the service was started with its explicit `plaintext` setting (local
development; the process logs a warning). A service presents its certificate (`tls_cert_file`,
`tls_key_file`) to its clients and, as the client side of mutual TLS, to the services it calls;
`tls_ca_file` is the cluster CA it trusts for both. Internal ports (a partition node's change feed,
replication and placement) require a client certificate signed by that CA; client ports accept one
without requiring it. Certificates and keys are read again when their files change, for new
connections, so they rotate without a restart.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any, ClassVar

import grpc
from pydantic import Field, model_validator
from pydantic_settings import BaseSettings
from weir import tls as sdk_tls

from weir_server import auth
from weir_server.metrics_server import MetricsAccess
from weir_server.ratelimit import Rate

logger = logging.getLogger(__name__)


class TlsSettings(BaseSettings):
    """The TLS settings of a service (its env prefix applies: WEIR_NODE_TLS_CERT_FILE, ...)."""

    # A service that only calls client ports (no server of its own, no internal port) needs no
    # certificate of its own; the CA is enough.
    tls_needs_identity: ClassVar[bool] = True

    tls_cert_file: Path | None = Field(
        None,
        description="PEM certificate chain this service presents: to its clients, and to the services it calls "
        "(mutual TLS). Read again when the file changes.",
    )
    tls_key_file: Path | None = Field(None, description="PEM private key of tls_cert_file.")
    tls_ca_file: Path | None = Field(
        None,
        description="PEM of the cluster CA: the certificates of the services this one calls, and client "
        "certificates on its internal port, must be signed by it.",
    )
    token_file: Path | None = Field(
        None,
        description="File holding the bearer token this service sends on its calls to client ports of a cluster "
        "with an auth file (the cluster's service token, or a user's). Read when a channel is made.",
    )
    plaintext: bool = Field(
        False,
        description="Serve and call without TLS: local development only (the process logs a warning). Needed when "
        "no TLS files are given.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> TlsSettings:
        given = [self.tls_cert_file, self.tls_key_file, self.tls_ca_file]
        if self.plaintext and any(given):
            raise ValueError("plaintext is set together with TLS files: choose one (tls_*_file or plaintext)")
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("a certificate needs both tls_cert_file and tls_key_file")
        return self

    def tls_missing(self) -> str:
        """What a service started with these settings lacks to run, "" when nothing: TLS files, or
        the explicit plaintext setting (checked at start: settings objects made in code for tests
        or tools need neither)."""
        if self.plaintext:
            return ""
        prefix = str(self.model_config.get("env_prefix", ""))
        names = ("tls_cert_file", "tls_key_file", "tls_ca_file") if self.tls_needs_identity else ("tls_ca_file",)
        missing = [name for name in names if getattr(self, name) is None]
        if not missing:
            return ""
        variables = ", ".join(f"{prefix}{name}".upper() for name in names)
        return (
            f"TLS needs {variables} (PEM files; `weir cluster up --tls` makes a development CA), or "
            f"{prefix}PLAINTEXT=true for local development"
        )

    def unreadable_files(self) -> list[Path]:
        """The TLS files given that this process cannot read (checked at start, not when the
        settings are parsed: a deployment file names paths of the machine that runs it)."""
        files = (self.tls_cert_file, self.tls_key_file, self.tls_ca_file, self.token_file)
        return [path for path in files if path is not None and not os.access(path, os.R_OK)]

    def channel_security(self) -> sdk_tls.ChannelSecurity | None:
        """How this service's own channels to other services are secured (None = plaintext)."""
        if self.plaintext:
            return None
        return sdk_tls.ChannelSecurity(
            ca_file=self.tls_ca_file,
            cert_file=self.tls_cert_file,
            key_file=self.tls_key_file,
            token_file=self.token_file,
        )


def refuse_unless_startable(settings: object, prog: str) -> None:
    """Before a service starts anything: a TlsSettings without TLS files and without plaintext, or
    with a file it cannot read, ends the process with one `<prog>: ...` line on stderr and exit
    status 2 (as any bad setting). Settings of other kinds pass."""
    if not isinstance(settings, TlsSettings):
        return
    problem = settings.tls_missing()
    unreadable = settings.unreadable_files()
    password_file = getattr(settings, "redis_password_file", None)  # weir_server.metadata_redis
    if password_file is not None and not os.access(password_file, os.R_OK):
        unreadable.append(password_file)
    if unreadable:
        problem = f"cannot read {', '.join(str(path) for path in unreadable)}"
    elif isinstance(settings, AuthFileSettings) and settings.auth_file is not None:
        try:
            auth.Authenticator(settings.auth_file, settings.service_token_file)
        except auth.AuthFileError as error:
            problem = f"auth file {settings.auth_file}: {error}"
    if problem:
        print(f"{prog}: {problem}", file=sys.stderr)
        raise SystemExit(2)


def configure(settings: TlsSettings, service: str) -> None:
    """At a service's start: its channels use its TLS settings from now on (weir.tls's process
    default), and a plaintext service says so in its log. Missing TLS settings (and no plaintext),
    or a TLS file it cannot read, end the process with one line saying what (exit status 2, as a
    bad setting)."""
    problem = settings.tls_missing()
    unreadable = settings.unreadable_files()
    password_file = getattr(settings, "redis_password_file", None)  # weir_server.metadata_redis
    if password_file is not None and not os.access(password_file, os.R_OK):
        unreadable.append(password_file)
    if unreadable:
        problem = f"cannot read {', '.join(str(path) for path in unreadable)}"
    if problem:
        logger.error("%s: %s", service, problem)
        raise SystemExit(2)
    sdk_tls.set_default(settings.channel_security())
    if settings.plaintext:
        logger.warning(
            "%s runs WITHOUT TLS (plaintext setting): every port is open to anyone who reaches it; for local "
            "development only",
            service,
        )


class _ReloadingCredentials:
    """The server certificate configuration, built again when a file's modification time changes."""

    def __init__(self, settings: TlsSettings) -> None:
        assert settings.tls_cert_file and settings.tls_key_file and settings.tls_ca_file
        self.files = (settings.tls_cert_file, settings.tls_key_file, settings.tls_ca_file)
        self.stamp = self._stamp()

    def _stamp(self) -> tuple[int, ...]:
        return tuple(os.stat(path).st_mtime_ns for path in self.files)

    def configuration(self) -> Any:
        chain, key, ca = (path.read_bytes() for path in self.files)
        return grpc.ssl_server_certificate_configuration([(key, chain)], root_certificates=ca)

    def fetch(self) -> Any:
        """grpc's fetcher, at each new handshake: a new configuration when a file changed, else None."""
        try:
            stamp = self._stamp()
            if stamp == self.stamp:
                return None
            configuration = self.configuration()
        except OSError as error:  # a file being replaced: keep the current configuration
            logger.warning("TLS files not reloaded: %s", error)
            return None
        self.stamp = stamp
        logger.info("TLS certificate files changed: new connections use them")
        return configuration


def add_port(server: grpc.aio.Server, address: str, settings: TlsSettings, *, require_client_cert: bool) -> int:
    """Bind `address` on `server` with TLS (a client certificate signed by the CA required, or
    accepted), or plaintext when the settings say so; returns the bound port."""
    if settings.plaintext:
        return int(server.add_insecure_port(address))
    reloading = _ReloadingCredentials(settings)
    credentials = grpc.dynamic_ssl_server_credentials(
        reloading.configuration(), reloading.fetch, require_client_authentication=require_client_cert
    )
    return int(server.add_secure_port(address, credentials))


class AuthFileSettings(TlsSettings):
    """TLS plus the auth file and the services' token: who may read the service's /metrics (with an
    auth file: over TLS, a bearer token of a user with the metrics grant or the services' token;
    weir_server.metrics_server) and, in AccessSettings, call its client port."""

    auth_file: Path | None = Field(
        None,
        description="JSON file of the users (token hashes) and what each may do on which "
        "streams; read again when it changes. Unset = any caller that passes TLS may do everything. Needs TLS. "
        "With it the metrics port serves /metrics over TLS (this service's certificate) only to a user with the "
        "metrics grant (Authorization: Bearer) or the services' token.",
    )
    service_token_file: Path | None = Field(
        None,
        description="With an auth file: the file holding the token of the cluster's own services, which may do "
        "everything (the gateways, the Numaflow source and the analytics job send it: their token_file). Read "
        "again when it changes.",
    )

    @model_validator(mode="after")
    def _auth_needs_tls(self) -> AuthFileSettings:
        if self.auth_file is not None and self.plaintext:
            raise ValueError("auth_file needs TLS: tokens would cross the network in clear")
        return self

    def unreadable_files(self) -> list[Path]:
        unreadable = super().unreadable_files()
        for path in (self.auth_file, self.service_token_file):
            if path is not None and not os.access(path, os.R_OK):
                unreadable.append(path)
        return unreadable

    def metrics_access(self) -> MetricsAccess | None:
        """How the metrics port guards /metrics: None without an auth file (plain HTTP, open), else
        TLS with this service's certificate and the auth file's users (weir_server.metrics_server).
        Errors: ValueError without this service's certificate; AuthFileError, OSError (the files are
        checked at start: `refuse_unless_startable`)."""
        if self.auth_file is None:
            return None
        if self.tls_cert_file is None or self.tls_key_file is None:
            raise ValueError("auth_file needs this service's certificate (tls_cert_file, tls_key_file)")
        return MetricsAccess.of(self.tls_cert_file, self.tls_key_file, self.auth_file, self.service_token_file)


class AccessSettings(AuthFileSettings):
    """AuthFileSettings plus what the service's client port serves the auth file's users: request
    rates and streams a connection (the node's, router's, gateway's and invoker's settings; their env
    prefix applies: WEIR_NODE_AUTH_FILE, ...)."""

    requests_per_second: float = Field(
        0,
        ge=0,
        description="With an auth file: each user's request rate (calls, and items of request streams) unless "
        "its entry sets requests_per_second; past it a call gets RESOURCE_EXHAUSTED with the wait (RetryInfo). "
        "0 = no limit. The services' token has none.",
    )
    request_burst: float = Field(
        0, ge=0, description="With requests_per_second: how many requests may come at once (0 = one second's worth)."
    )

    max_concurrent_streams: int = Field(
        1000,
        ge=1,
        description="Calls one client connection may have open at once on the client port (HTTP/2 "
        "SETTINGS_MAX_CONCURRENT_STREAMS): past it the client's new calls wait for one to end.",
    )

    def default_rate(self) -> Rate | None:
        """The request rate of users whose auth-file entry sets none (None = no limit)."""
        return Rate.of(self.requests_per_second, self.request_burst)
