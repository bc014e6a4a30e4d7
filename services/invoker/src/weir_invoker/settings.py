"""Invoker settings, read from flags and `WEIR_INVOKER_*` environment variables (pydantic-settings)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict
from weir_server.service_settings import LogFormat, LogLevel, RouterList
from weir_server.tls import AccessSettings

from weir_invoker.runtime import RuntimeSettings


class InvokerSettings(AccessSettings):
    """Every setting is the flag --<setting-in-kebab-case> or the environment variable WEIR_INVOKER_<SETTING>
    (case-insensitive); a flag wins over the variable."""

    model_config = SettingsConfigDict(env_prefix="WEIR_INVOKER_", extra="ignore")
    tls_needs_identity: ClassVar[bool] = True

    invoker_id: str = Field(
        "invoker-1", description="Id of this invoker (its consumer-group member ids start with it)."
    )
    host: str = Field("127.0.0.1", description="Address the gRPC and metrics servers bind to.")
    port: int = Field(
        7720, ge=0, le=65535, description="gRPC port of weir.v1.Invoker, the operator API (0 = pick one)."
    )
    metrics_port: int = Field(7723, ge=0, le=65535, description="Prometheus /metrics HTTP port (0 = pick one).")
    routers: RouterList = Field(
        "127.0.0.1:7501", description="The Weir cluster's routers, 'host:port,host:port' (the SDK's bootstrap)."
    )
    replicas: int = Field(
        1,
        ge=1,
        le=5,
        description="Copies of the invoker's journal stream, invocation records, state and registry (3 in a "
        "production cluster: a journal then survives the loss of its primary).",
    )
    journal_partitions: int = Field(
        4, ge=1, le=256, description="Partitions of the stream `invoker:journal` (fixed once it is created)."
    )
    max_concurrent_attempts: int = Field(
        64, ge=1, le=10_000, description="Attempts open to deployments at once (the rest wait for a slot)."
    )
    max_unfinished_invocations: int = Field(
        10_000,
        ge=1,
        le=1_000_000,
        description="Invocations admitted and not finished; admission (subscriptions, Invoke, calls) waits above it.",
    )
    inactivity_timeout_ms: int = Field(
        60_000,
        ge=100,
        le=24 * 3600 * 1000,
        description="An open attempt with no message either way for this long is asked to suspend (the invoker "
        "ends its side of the stream), as Restate's inactivity timeout.",
    )
    retry_initial_delay_ms: int = Field(
        100, ge=0, le=3600_000, description="Wait before the first retry of a failed attempt."
    )
    retry_factor: float = Field(2.0, ge=1.0, le=10.0, description="Each further retry waits this many times longer.")
    retry_max_delay_ms: int = Field(30_000, ge=0, le=24 * 3600 * 1000, description="The longest wait between retries.")
    max_attempts: int = Field(
        0,
        ge=0,
        le=1_000_000,
        description="Attempts before an invocation fails terminally (dead-lettered); 0 = retry until it succeeds "
        "or the handler fails it terminally (Restate's default).",
    )
    completed_retention_ms: int = Field(
        24 * 3600 * 1000,
        ge=1000,
        le=366 * 24 * 3600 * 1000,
        description="How long a finished invocation's record (status, output) is kept.",
    )
    lease_ms: int = Field(
        10_000,
        ge=1000,
        le=600_000,
        description="The active invoker's lease: a standby takes over this long after the active one stopped "
        "renewing it (it renews every lease_ms / 3).",
    )
    shutdown_grace_ms: int = Field(3000, ge=0, description="Time in-flight RPCs get on SIGTERM.")
    log_level: LogLevel = Field("INFO", description="Python logging level: DEBUG, INFO, WARNING, ERROR or CRITICAL.")
    log_format: LogFormat = Field(
        "text", description="Log lines: text, or json (one object a line: ts, level, logger, message, exc_info)."
    )
    ready_file: Path | None = Field(
        None, description="When set, the invoker writes its bound ports here as JSON once it serves."
    )

    def runtime(self) -> RuntimeSettings:
        return RuntimeSettings(
            replicas=self.replicas,
            journal_partitions=self.journal_partitions,
            max_concurrent_attempts=self.max_concurrent_attempts,
            max_unfinished_invocations=self.max_unfinished_invocations,
            inactivity_timeout_ms=self.inactivity_timeout_ms,
            retry_initial_delay_ms=self.retry_initial_delay_ms,
            retry_factor=self.retry_factor,
            retry_max_delay_ms=self.retry_max_delay_ms,
            max_attempts=self.max_attempts,
            completed_retention_ms=self.completed_retention_ms,
        )
