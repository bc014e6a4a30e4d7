"""Sidecar settings, read from flags and `WEIR_NUMAFLOW_SOURCE_*` environment variables
(pydantic-settings), the way a Numaflow Pipeline passes them: the `env` of the `udsource` container.
Numaflow's own `NUMAFLOW_*` variables name the default member id."""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict
from weir.errors import WeirError
from weir.subjects import validate_name, validate_pattern
from weir_server.service_settings import LogFormat, LogLevel, RouterList
from weir_server.tls import TlsSettings

# Where Numaflow's data plane looks for a user-defined source (pynumaflow's defaults).
NUMAFLOW_SOURCE_SOCKET = "/var/run/numaflow/source.sock"
NUMAFLOW_SOURCE_SERVER_INFO = "/var/run/numaflow/sourcer-server-info"


def default_member_id() -> str:
    """`<pipeline>-<vertex>-<replica>` from the variables Numaflow sets in a vertex pod, else the
    pod or host name: one consumer-group member per source replica."""
    pipeline = os.environ.get("NUMAFLOW_PIPELINE_NAME", "")
    vertex = os.environ.get("NUMAFLOW_VERTEX_NAME", "")
    replica = os.environ.get("NUMAFLOW_REPLICA", "")
    if pipeline and vertex and replica:
        return f"{pipeline}-{vertex}-{replica}"
    return os.environ.get("NUMAFLOW_POD") or os.environ.get("HOSTNAME") or f"numaflow-source-{os.getpid()}"


class NumaflowSourceSettings(TlsSettings):
    """Every setting is the flag --<setting-in-kebab-case> or the environment variable
    WEIR_NUMAFLOW_SOURCE_<SETTING> (case-insensitive); a flag wins over the variable."""

    model_config = SettingsConfigDict(env_prefix="WEIR_NUMAFLOW_SOURCE_", extra="ignore")
    tls_needs_identity: ClassVar[bool] = False  # it calls the client ports only; a certificate is optional

    routers: RouterList = Field(
        "127.0.0.1:7501", description="The Weir cluster's routers, 'host:port,host:port' (the SDK's bootstrap)."
    )
    stream: str = Field(..., description="The Weir stream this source reads (required).")
    consumer: str = Field(
        "numaflow",
        description="The consumer group (a durable consumer of the stream) the source replicas share: each "
        "partition is read by one replica at a time.",
    )
    filter_subject: str = Field("", description="Only messages whose subject matches this pattern (empty = all).")
    new_group_start: Literal["earliest", "latest"] = Field(
        "earliest",
        description="Where a group that never read starts: 'earliest' (every stored message) or 'latest' (only "
        "messages published from then on). An existing group always resumes where it is.",
    )
    ack_wait_ms: int = Field(
        60_000,
        ge=1000,
        le=12 * 3600 * 1000,
        description="A message read and not acknowledged within this is delivered again (to this or another "
        "replica): long enough for Numaflow to write a read batch to its buffer and ack it.",
    )
    max_deliver: int = Field(
        1_000_000,
        ge=1,
        le=1_000_000,
        description="Deliveries before the consumer drops a message. Every redelivery counts (an ack_wait that "
        "ran out, a nack, a replica's buffered messages handed back when it stops or loses a partition), and a "
        "source must not drop data, so the default is effectively no limit.",
    )
    max_ack_pending: int = Field(
        10_000,
        ge=1,
        le=100_000,
        description="Messages read and not yet acknowledged per partition; the partition delivers no more "
        "until some are.",
    )
    fetch_batch: int = Field(500, ge=1, le=10_000, description="Messages one partition fetch brings at most.")
    member_id: str = Field(
        default_factory=default_member_id,
        min_length=1,
        max_length=256,
        description="This replica's consumer-group member id (default <pipeline>-<vertex>-<replica> from "
        "Numaflow's variables).",
    )
    socket_path: Path = Field(Path(NUMAFLOW_SOURCE_SOCKET), description="Unix socket the source.v1 server binds.")
    server_info_file: Path = Field(
        Path(NUMAFLOW_SOURCE_SERVER_INFO),
        description="Where the server-info file is written once the server serves (Numaflow's data plane "
        "waits for it).",
    )
    metrics_port: int = Field(9102, ge=0, le=65535, description="Prometheus /metrics HTTP port (0 = pick one).")
    host: str = Field("0.0.0.0", description="Address the metrics server binds to.")
    log_level: LogLevel = Field("INFO", description="Python logging level: DEBUG, INFO, WARNING, ERROR or CRITICAL.")
    log_format: LogFormat = Field(
        "text", description="Log lines: text, or json (one object a line: ts, level, logger, message, exc_info)."
    )
    ready_file: Path | None = Field(
        None,
        description="When set, the sidecar writes its pid, metrics port and socket path here as JSON once it serves.",
    )

    @field_validator("stream", "consumer")
    @classmethod
    def _names(cls, value: str) -> str:
        try:
            validate_name(value, "name")
        except WeirError as error:
            raise ValueError(error.message) from None
        return value

    @field_validator("filter_subject")
    @classmethod
    def _pattern(cls, value: str) -> str:
        if value:
            try:
                validate_pattern(value)
            except WeirError as error:
                raise ValueError(error.message) from None
        return value
