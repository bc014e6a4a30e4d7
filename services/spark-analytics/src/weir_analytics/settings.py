"""Analytics settings, read from flags and `WEIR_ANALYTICS_*` environment variables (pydantic-settings)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict
from weir_server.analytics import DEFAULT_STATS_STREAM
from weir_server.service_settings import LogFormat, LogLevel
from weir_server.tls import TlsSettings


class AnalyticsSettings(TlsSettings):
    """Every setting is the flag --<setting-in-kebab-case> or the environment variable WEIR_ANALYTICS_<SETTING>
    (case-insensitive); a flag wins over the variable."""

    model_config = SettingsConfigDict(env_prefix="WEIR_ANALYTICS_", extra="ignore")

    router: str = Field("127.0.0.1:7501", description="Router addresses, host:port[,host:port].")
    spark_master: str = Field(
        "local[*]", description="Spark master URL: local[*] runs in this process; spark://host:7077 on a cluster."
    )
    data_dir: Path = Field(Path("weir-analytics"), description="Checkpoint, saved state and Parquet history live here.")
    host: str = Field("127.0.0.1", description="Address the metrics server binds to.")
    metrics_port: int = Field(7604, ge=0, le=65535, description="Prometheus /metrics HTTP port (0 = pick one).")
    trigger_interval_ms: int = Field(
        5000,
        ge=100,
        description="How often a micro-batch starts (also on an idle cluster: windows close with zeros). A publish "
        "shows in the figures about 0.7 of this later (median; bench.analytics_bench).",
    )
    window_ms: int = Field(10_000, ge=1000, description="Length of the tumbling windows the rates are computed over.")
    windows_kept: int = Field(
        60, ge=2, le=10_000, description="Most recent windows kept in memory (Parquet keeps all)."
    )
    max_changes_per_trigger: int = Field(
        100_000, ge=1, description="Most changes in one micro-batch (a large backlog is read in several)."
    )
    starting_offsets: str = Field(
        "earliest",
        description='Where a new job starts in every feed: "earliest", "latest" or JSON {node_id: change_seq}. '
        "A job restarted on the same data directory resumes from its checkpoint instead.",
    )
    fail_on_data_loss: bool = Field(
        True, description="Stop when change-feed retention removed changes not yet read (false: skip, counted)."
    )
    stats_stream: str = Field(
        DEFAULT_STATS_STREAM,
        description="Stream the job publishes each batch's ClusterAnalytics to (created if absent).",
    )
    stats_stream_replicas: int = Field(
        0, ge=0, le=5, description="Replicas of the stats stream when the job creates it (0 = min(3, nodes))."
    )
    stats_stream_max_messages: int = Field(10_000, ge=1, description="Retention of the stats stream (messages).")
    node_timeout_ms: int = Field(10_000, ge=100, description="Deadline of one call to a node or router.")
    spark_shuffle_partitions: int = Field(2, ge=1, description="spark.sql.shuffle.partitions of the job.")
    spark_driver_memory: str = Field(
        "512m", description="spark.driver.memory (local mode: the whole job; its batches need little)."
    )
    spark_ui: bool = Field(False, description="Serve the Spark web UI (port 4040 and up).")
    spark_conf: str = Field(
        "",
        description="More Spark settings, 'key=value,key=value' (spark.executor.memory=2g on a cluster, say); "
        "they win over the job's own.",
    )
    python: str = Field(
        "",
        description="Python the Spark workers run (sets PYSPARK_PYTHON; empty = this interpreter, which has the "
        "weir source installed).",
    )
    once: bool = Field(False, description="Process what the feeds hold now (Trigger.AvailableNow), then exit.")
    log_level: LogLevel = Field(
        "INFO",
        description="Python logging level: DEBUG, INFO, WARNING, ERROR or CRITICAL (Spark's own log is set to WARN).",
    )
    log_format: LogFormat = Field(
        "text",
        description="Log lines: text, or json (one object a line: ts, level, logger, message, exc_info); "
        "Spark's JVM keeps its own log4j format.",
    )
    ready_file: Path | None = Field(
        None, description="When set, the job writes its pid and metrics port here as JSON once its query runs."
    )

    @field_validator("spark_conf")
    @classmethod
    def _conf_pairs(cls, value: str) -> str:
        spark_conf_pairs(value)
        return value


def spark_conf_pairs(value: str) -> dict[str, str]:
    """'key=value,key=value' -> {key: value} (keys start with "spark."). Errors: ValueError."""
    pairs: dict[str, str] = {}
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        key, separator, setting = item.partition("=")
        if not separator or not key.strip().startswith("spark.") or not setting.strip():
            raise ValueError(f"expected spark.key=value pairs separated by commas, got {item!r}")
        pairs[key.strip()] = setting.strip()
    return pairs
