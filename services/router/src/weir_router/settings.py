"""Router settings, read from flags and `WEIR_ROUTER_*` environment variables (pydantic-settings)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict
from weir_server.analytics import DEFAULT_STATS_STREAM
from weir_server.listeners import parse_listeners
from weir_server.metadata_redis import MetadataRedisSettings
from weir_server.service_settings import LogFormat, LogLevel
from weir_server.tls import AccessSettings


class RouterSettings(MetadataRedisSettings, AccessSettings):
    """Every setting is the flag --<setting-in-kebab-case> or the environment variable WEIR_ROUTER_<SETTING>
    (case-insensitive); a flag wins over the variable."""

    model_config = SettingsConfigDict(env_prefix="WEIR_ROUTER_", extra="ignore")

    router_id: str = Field("router-1", description="Unique id of this router (shown as the controller).")
    host: str = Field("127.0.0.1", description="Address the gRPC and metrics servers bind to.")
    port: int = Field(7501, ge=0, le=65535, description="gRPC port (0 = pick a free one).")
    metrics_port: int = Field(7503, ge=0, le=65535, description="Prometheus /metrics HTTP port (0 = pick one).")
    advertise_host: str = Field("", description="Host other routers reach this one at; empty = `host`.")
    advertised_listeners: str = Field(
        "",
        description="More addresses clients reach this router at, per network: 'name=host:port,...' (e.g. "
        "host=127.0.0.1:17501 for a port published to the Docker host). A client that dialled one of them "
        "gets node addresses of the same listener name (see WEIR_NODE_ADVERTISED_LISTENERS).",
    )
    redis_url: str = Field("redis://127.0.0.1:6379/0", description="The cluster metadata Redis.")
    metadata_prefix: str = Field("weir", description="Prefix of the cluster's Redis keys (one cluster per prefix).")
    lease_ms: int = Field(
        3000, ge=300, description="Controller lease length; a dead controller is replaced within about this long."
    )
    controller_tick_ms: int = Field(
        250, ge=50, description="How often the lease is renewed (or sought) and node liveness checked."
    )
    group_session_timeout_ms: int = Field(
        6000, ge=100, description="A consumer-group member that does not call QueryAssignment this long leaves."
    )
    node_timeout_ms: int = Field(10_000, ge=100, description="Deadline of one call from the router to a node.")
    leader_rebalance_interval_ms: int = Field(
        5000,
        ge=0,
        description="How often the controller moves leadership back to each partition's preferred leader once "
        "that replica is back in sync after a failover (Kafka's auto leader rebalance); 0 = never.",
    )
    leader_transfer_timeout_ms: int = Field(
        5000,
        ge=100,
        le=30_000,
        description="How long a primary handing leadership over may wait for the new leader to catch up (and "
        "refuses clients meanwhile) before the handover is abandoned.",
    )
    analytics_stream: str = Field(
        DEFAULT_STATS_STREAM,
        description="The stream spark-analytics publishes its stats to; GetClusterStreamStats returns its latest "
        "message (subject `stats`) as `analytics`. Keep it equal to WEIR_ANALYTICS_STATS_STREAM.",
    )
    shutdown_grace_ms: int = Field(3000, ge=0, description="Time in-flight RPCs get on SIGTERM.")
    log_level: LogLevel = Field("INFO", description="Python logging level: DEBUG, INFO, WARNING, ERROR or CRITICAL.")
    log_format: LogFormat = Field(
        "text", description="Log lines: text, or json (one object a line: ts, level, logger, message, exc_info)."
    )
    ready_file: Path | None = Field(
        None, description="When set, the router writes its bound ports here as JSON once it serves."
    )

    @field_validator("advertised_listeners")
    @classmethod
    def _listeners_parse(cls, value: str) -> str:
        parse_listeners(value)  # ValueError says which entry is wrong
        return value
