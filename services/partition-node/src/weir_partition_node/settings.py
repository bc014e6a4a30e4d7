"""Partition node settings, read from flags and `WEIR_NODE_*` environment variables (pydantic-settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict
from weir_server.listeners import parse_listeners
from weir_server.metadata_redis import MetadataRedisSettings
from weir_server.service_settings import LogFormat, LogLevel
from weir_server.tls import AccessSettings


class NodeSettings(MetadataRedisSettings, AccessSettings):
    """Every setting is the flag --<setting-in-kebab-case> or the environment variable WEIR_NODE_<SETTING>
    (case-insensitive); a flag wins over the variable."""

    model_config = SettingsConfigDict(env_prefix="WEIR_NODE_", extra="ignore")

    node_id: str = Field("node-1", description="Unique id of this node in the cluster.")
    data_dir: Path = Field(Path("weir-data/node-1"), description="Directory for the catalog and partition logs.")
    host: str = Field("127.0.0.1", description="Address the gRPC and metrics servers bind to.")
    client_port: int = Field(7401, ge=0, le=65535, description="Client-facing gRPC port (0 = pick a free one).")
    internal_port: int = Field(7402, ge=0, le=65535, description="Internal gRPC port: change feed, replication.")
    metrics_port: int = Field(7403, ge=0, le=65535, description="Prometheus /metrics HTTP port (0 = pick one).")
    fsync: Literal["always", "off"] = Field(
        "always",
        description="always: a publish is acknowledged after its group commit is fsynced (default). "
        "off: acknowledged after the write reaches the OS (survives a process crash, not power loss).",
    )
    max_message_bytes: int = Field(1024 * 1024, ge=1024, le=16 * 1024 * 1024, description="Largest message.")
    max_batch_messages: int = Field(2000, ge=1, description="Most messages in one group commit.")
    max_batch_bytes: int = Field(8 * 1024 * 1024, ge=1024, description="Most bytes in one group commit.")
    queue_depth: int = Field(4096, ge=1, description="Publish requests queued per partition before callers wait.")
    tail_cache_bytes: int = Field(
        4 * 1024 * 1024,
        ge=0,
        description="Newest record bytes a file partition's primary keeps in memory, once read, for reads near "
        "the head (0 = off).",
    )
    wal_checkpoint_bytes: int = Field(
        8 * 1024 * 1024,
        ge=0,
        description="Bytes a file partition commits between WAL checkpoints, which run on a background thread "
        "(0 = SQLite's automatic checkpoint inside the commit that crosses 1,000 pages, a 10-15 ms stall).",
    )
    storage_threads: int = Field(4, ge=1, le=64, description="Worker threads for commits.")
    retention_sweep_interval_ms: int = Field(
        1000, ge=10, description="How often max_age_ms and per-message TTLs are enforced."
    )
    change_feed_max_changes: int = Field(1_000_000, ge=1000, description="Changes kept in the node's feed.")
    scrub_bytes_per_second: int = Field(
        4 * 1024 * 1024,
        ge=0,
        description="The background scrub's rate: stored record bytes re-read and checked per second (0 = no "
        "scrub). Reads still verify every record they serve.",
    )
    scrub_interval_ms: int = Field(
        10 * 60 * 1000, ge=0, description="Time from the start of one scrub pass over every partition to the next."
    )
    integrity_check_timeout_ms: int = Field(
        500,
        ge=1,
        description="Bound of SQLite's quick_check of one partition file, at start-up and in each scrub pass "
        "(an interrupted check is retried next pass).",
    )
    shutdown_grace_ms: int = Field(5000, ge=0, description="Time in-flight RPCs get on SIGTERM.")
    max_concurrent_rpcs: int = Field(20_000, ge=1, description="RPCs handled at once per server.")
    internal_identities: str = Field(
        "weir-service",
        description="With TLS: the certificate names (common name or DNS name) the internal port serves, "
        "comma-separated; any other caller gets PERMISSION_DENIED (the development certificates' services are "
        "weir-service, their client weir-client).",
    )
    log_level: LogLevel = Field("INFO", description="Python logging level: DEBUG, INFO, WARNING, ERROR or CRITICAL.")
    log_format: LogFormat = Field(
        "text", description="Log lines: text, or json (one object a line: ts, level, logger, message, exc_info)."
    )
    test_clock: bool = Field(
        False,
        description="Tests only: read time from a manual clock moved by the internal TestClock service "
        "(AdvanceClock), so ack_wait, nak delays and max_age can be tested without sleeping.",
    )
    redis_url: str = Field(
        "",
        description="Cluster metadata Redis (redis://host:port/db). Set = clustered: the node registers, "
        "heartbeats, takes stream placement from the router, and refuses admin calls on the client port. "
        "Empty = standalone.",
    )
    metadata_prefix: str = Field("weir", description="Prefix of the cluster's Redis keys (one cluster per prefix).")
    advertise_host: str = Field(
        "", description="Host other processes reach this node at (registered in Redis); empty = `host`."
    )
    advertised_listeners: str = Field(
        "",
        description="More addresses clients reach the client port at, per network: 'name=host:port,...' "
        "(e.g. host=127.0.0.1:17401 for a port published to the Docker host). A client that reached a "
        "router through the router's listener of the same name is routed to these (Kafka's advertised "
        "listeners).",
    )
    zone: str = Field("", description="Failure zone, registered for placement and operators.")
    capacity: int = Field(1, ge=1, le=1000, description="Relative placement weight.")
    heartbeat_interval_ms: int = Field(250, ge=50, description="How often the node refreshes its registration.")
    heartbeat_ttl_ms: int = Field(
        2000,
        ge=200,
        description="A node whose heartbeat is older than this is marked dead by the controller (failover in about "
        "this plus WEIR_ROUTER_CONTROLLER_TICK_MS); a pause shorter than this less one interval fails nothing over.",
    )
    replica_lag_max_ms: int = Field(
        1000,
        ge=100,
        description="A secondary that has not caught up with the primary for this long leaves the in-sync set "
        "(Kafka replica.lag.time.max.ms; a follower waiting at the log end counts as caught up); it rejoins once "
        "it reaches the high watermark. An ack_level all publish stalls about this long when a secondary dies.",
    )
    replication_linger_ms: int = Field(
        5,
        ge=0,
        le=100,
        description="How long a primary may hold a follower fetch's answer while a group commit with appends is "
        "in flight, so that one replication round carries both commits (Kafka's fetch.max.wait.ms, but only "
        "while more records are certain to come: an idle partition answers at once). 0 = never.",
    )
    replication_timeout_ms: int = Field(
        10_000,
        ge=200,
        description="How long an ack_level all publish waits for the in-sync replicas when the call sets no "
        "deadline (timeout_ms or a gRPC deadline); at least 2 x replica_lag_max_ms, so that a dead secondary has "
        "left the in-sync set well before a publish gives up.",
    )
    placement_refresh_ms: int = Field(
        1000,
        ge=50,
        description="How often the node re-reads the placement of its streams from Redis (leader epochs, roles); "
        "the controller also pushes changes at once.",
    )
    ready_file: Path | None = Field(
        None, description="When set, the node writes its bound ports here as JSON once it serves."
    )

    def internal_identity_names(self) -> list[str]:
        return [name.strip() for name in self.internal_identities.split(",") if name.strip()]

    @field_validator("advertised_listeners")
    @classmethod
    def _listeners_parse(cls, value: str) -> str:
        parse_listeners(value)  # ValueError says which entry is wrong
        return value

    @model_validator(mode="after")
    def _replication_timeout_outlasts_a_dead_secondary(self) -> NodeSettings:
        """A dead secondary leaves the in-sync set within about 1.1 x replica_lag_max_ms; the
        default wait of an ack_level all publish must outlast that with room to spare (issue 22:
        equal defaults made every node kill time publishes out, and their retries duplicate)."""
        if self.replication_timeout_ms < 2 * self.replica_lag_max_ms:
            raise ValueError(
                f"replication_timeout_ms ({self.replication_timeout_ms}) must be at least 2 x replica_lag_max_ms "
                f"({self.replica_lag_max_ms}): a dead secondary must leave the in-sync set well before an "
                "ack_level all publish gives up"
            )
        return self
