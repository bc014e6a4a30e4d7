"""Replicator settings, read from flags and `WEIR_REPLICATOR_*` environment variables (pydantic-settings)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import SettingsConfigDict
from weir_server.metadata_redis import MetadataRedisSettings
from weir_server.service_settings import LogFormat, LogLevel
from weir_server.tls import AuthFileSettings


class ReplicatorSettings(MetadataRedisSettings, AuthFileSettings):
    """Every setting is the flag --<setting-in-kebab-case> or the environment variable WEIR_REPLICATOR_<SETTING>
    (case-insensitive); a flag wins over the variable."""

    model_config = SettingsConfigDict(env_prefix="WEIR_REPLICATOR_", extra="ignore")

    replicator_id: str = Field("replicator-1", description="Unique id of this replicator instance.")
    host: str = Field("127.0.0.1", description="Address the metrics server binds to.")
    metrics_port: int = Field(7603, ge=0, le=65535, description="Prometheus /metrics HTTP port (0 = pick one).")
    auth_file: Path | None = Field(
        None,
        description="The cluster's auth file (users and grants): with it the metrics port serves /metrics over TLS "
        "(this service's certificate) only to a user with the metrics grant (Authorization: Bearer) or the "
        "services' token. The replicator serves no client port. Read again when it changes. Needs TLS.",
    )
    redis_url: str = Field("redis://127.0.0.1:6379/0", description="The cluster metadata Redis.")
    metadata_prefix: str = Field("weir", description="Prefix of the cluster's Redis keys (one cluster per prefix).")
    tick_ms: int = Field(
        500, ge=20, description="How often placements are re-read, partition leases renewed and ownership balanced."
    )
    lease_ms: int = Field(
        3000,
        ge=200,
        description="Partition lease: a partition whose replicator died is taken over within about this long.",
    )
    fetch_wait_ms: int = Field(
        10_000,
        ge=0,
        le=30_000,
        description="How long one FetchReplication waits at the primary for new records (it returns at once when "
        "one arrives, or any other work such as an ack to copy); the primary counts a follower whose fetch waits at "
        "its log end as caught up. Each idle partition costs one fetch per wait at both ends: 2 s cost an idle "
        "768 x 3-partition cluster 40 % of a core, 10 s 16 %.",
    )
    fetch_coalesce_ms: int = Field(
        25,
        ge=0,
        le=1000,
        description="How long a follower's fetch waits for the followers that got the same records last round, "
        "to fetch for them too (one FetchReplication instead of one each); 0 = every follower fetches alone.",
    )
    replication_sessions: bool = Field(
        False,
        description="Run the rounds of every partition of a (primary, follower) node pair in one replication "
        "session (one FetchReplicationSession and one ReplicateSession exchange a round, issue 53) instead of a "
        "loop per partition and follower. Off by default: on its own it costs more CPU than the loops "
        "(docs/benchmarks.md, 'Replication sessions').",
    )
    session_max_bytes: int = Field(
        16 * 1024 * 1024,
        ge=1024,
        le=32 * 1024 * 1024,
        description="Most record bytes one replication session's fetch brings, over all of its partitions "
        "(one session per primary and follower node pair).",
    )
    max_batch_messages: int = Field(1000, ge=1, le=10_000, description="Most records shipped in one call.")
    max_batch_bytes: int = Field(4 * 1024 * 1024, ge=1024, description="Most record bytes shipped in one call.")
    snapshot_interval_ms: int = Field(
        100, ge=0, description="Shortest interval between two consumer-state snapshots shipped to one follower."
    )
    node_timeout_ms: int = Field(10_000, ge=100, description="Deadline of one call to a node (fetches add their wait).")
    retry_backoff_ms: int = Field(200, ge=10, description="Pause after a failed call before a follower loop retries.")
    log_level: LogLevel = Field("INFO", description="Python logging level: DEBUG, INFO, WARNING, ERROR or CRITICAL.")
    log_format: LogFormat = Field(
        "text", description="Log lines: text, or json (one object a line: ts, level, logger, message, exc_info)."
    )
    ready_file: Path | None = Field(
        None, description="When set, the replicator writes its pid and metrics port here as JSON once it runs."
    )
