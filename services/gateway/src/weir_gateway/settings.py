"""Gateway settings, read from flags and `WEIR_GATEWAY_*` environment variables (pydantic-settings)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import SettingsConfigDict
from weir_server.service_settings import LogFormat, LogLevel, RouterList
from weir_server.tls import AccessSettings

from weir_gateway.rocketmq_v1.mapping import RETRY_DELAYS_MS

MAX_WORKERS = 256


def default_workers() -> int:
    """The CPUs this process may run on (at least 1): the default of WEIR_GATEWAY_WORKERS."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


MAX_RETRY_DELAYS = 64
MAX_RETRY_DELAY_MS = 7 * 24 * 3600 * 1000


def retry_delays_of(value: str) -> tuple[int, ...]:
    """The delays (ms) of a comma-separated setting: 1..64 values of 0..7 days. Errors: ValueError."""
    try:
        delays = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"retry delays {value!r}: comma-separated whole milliseconds") from None
    if not 1 <= len(delays) <= MAX_RETRY_DELAYS or not all(0 <= delay <= MAX_RETRY_DELAY_MS for delay in delays):
        raise ValueError(f"retry delays {value!r}: 1..{MAX_RETRY_DELAYS} values of 0..{MAX_RETRY_DELAY_MS} ms")
    return delays


class GatewaySettings(AccessSettings):
    """Every setting is the flag --<setting-in-kebab-case> or the environment variable WEIR_GATEWAY_<SETTING>
    (case-insensitive); a flag wins over the variable."""

    model_config = SettingsConfigDict(env_prefix="WEIR_GATEWAY_", extra="ignore")

    gateway_id: str = Field(
        "gateway-1", description="Id of this instance (its consumer-group member ids start with it)."
    )
    host: str = Field("127.0.0.1", description="Address the gRPC and metrics servers bind to.")
    routers: RouterList = Field(
        "127.0.0.1:7501", description="The Weir cluster's routers, 'host:port,host:port' (the SDK's bootstrap)."
    )
    cluster_name: str = Field(
        "default",
        description="The name clients give in kafka-pixy's `cluster` field for this cluster ('' means it too); "
        "any other name is INVALID_ARGUMENT.",
    )
    workers: int = Field(
        default_factory=default_workers,
        ge=1,
        le=MAX_WORKERS,
        description="Gateway processes sharing each front door's port (SO_REUSEPORT) under one supervisor, "
        "which restarts a worker that dies and serves the one metrics port for all. Default: the CPUs this "
        "process may use. 1: one process, no supervisor.",
    )
    metrics_port: int = Field(7703, ge=0, le=65535, description="Prometheus /metrics HTTP port (0 = pick one).")
    kafka_pixy_port: int = Field(
        19091, ge=0, le=65535, description="kafka-pixy gRPC port (kafka-pixy's own default; 0 = pick one)."
    )
    kafka_pixy_long_polling_timeout_ms: int = Field(
        3000,
        ge=10,
        le=600_000,
        description="How long ConsumeNAck waits for a message before answering NOT_FOUND (kafka-pixy's "
        "consumer.long_polling_timeout).",
    )
    kafka_pixy_ack_timeout_ms: int = Field(
        300_000,
        ge=100,
        le=7 * 24 * 3600 * 1000,
        description="A consumed message not acknowledged within this is offered again, possibly to another "
        "client (kafka-pixy's consumer.ack_timeout; the group consumer's ack_wait_ms).",
    )
    kafka_pixy_max_waiting_requests: int = Field(
        64,
        ge=1,
        le=100_000,
        description="ConsumeNAck calls that may wait at once per group on this instance; more get "
        "RESOURCE_EXHAUSTED (kafka-pixy's consumer.channel_buffer_size).",
    )
    kafka_pixy_max_pending_messages: int = Field(
        300,
        ge=1,
        le=100_000,
        description="Messages consumed and not yet acknowledged per group and partition; the partition "
        "delivers no more until some are (kafka-pixy's consumer.max_pending_messages).",
    )
    kafka_pixy_group_idle_timeout_ms: int = Field(
        20_000,
        ge=100,
        description="A group no ConsumeNAck asked for this long is left by this instance (its partitions go "
        "to the other members; buffered messages are handed back).",
    )
    kafka_pixy_new_group_start: Literal["earliest", "latest"] = Field(
        "earliest",
        description="Where a group that never consumed starts: 'earliest' (every stored message; what the "
        "quick-start loop expects) or 'latest' (only messages produced from then on, kafka-pixy's choice "
        "that surprised its users, issue #182).",
    )
    waymaker_streams_port: int = Field(
        7710,
        ge=0,
        le=65535,
        description="waymaker.streams (the streams seed's API, verbatim) gRPC port (0 = pick one).",
    )
    rocketmq_port: int = Field(
        8081,
        ge=0,
        le=65535,
        description="RocketMQ gRPC port: v1's and v2's MessagingService (v2 is what RocketMQ 5's clients call) on "
        "one server (RocketMQ 5's proxy serves gRPC on 8081; 0 = pick one).",
    )
    rocketmq_receipt_secret: str = Field(
        "",
        description="Secret (at least 16 bytes) signing RocketMQ receipt handles and transaction ids with "
        "HMAC-SHA256; give every gateway instance the same one. Empty: a random secret per process (logged "
        "warning), so a handle only settles on the instance that issued it.",
    )
    rocketmq_retry_delays_ms: str = Field(
        ",".join(str(delay) for delay in RETRY_DELAYS_MS),
        description="NackMessage's redelivery backoff: the n-th comma-separated value is how long a message "
        "nacked after its n-th delivery stays invisible (the last value for later attempts). Default: "
        "RocketMQ's retry levels 10s 30s 1m 2m .. 2h.",
    )
    rocketmq_auto_create_groups: bool = Field(
        True,
        description="Create a RocketMQ consumer group's durable consumer on its first QueryAssignment or "
        "ReceiveMessage, as RocketMQ 5's brokers do (autoCreateSubscriptionGroup). False: an unknown group is "
        "NOT_FOUND, as the v1 seed says; create it first (weir consumer create STREAM GROUP).",
    )
    rocketmq_max_waiting_receives: int = Field(
        256,
        ge=1,
        le=100_000,
        description="ReceiveMessage / PullMessage calls that may wait at once per consumer group on this "
        "instance; more are answered UNAVAILABLE (service.proto: the group's receive quota).",
    )
    rocketmq_orphaned_transaction_recovery_period_ms: int = Field(
        30_000,
        ge=0,
        le=7 * 24 * 3600 * 1000,
        description="How old an unresolved TRANSACTION message must be before its producer is asked about it "
        "(MultiplexingCall), when the message does not carry orphaned_transaction_recovery_period itself.",
    )
    rocketmq_orphan_scan_interval_ms: int = Field(
        5_000,
        ge=10,
        le=3_600_000,
        description="How often the gateway looks for orphaned transactions of the producers polling it.",
    )
    rocketmq_multiplexing_poll_timeout_ms: int = Field(
        20_000,
        ge=10,
        le=300_000,
        description="How long a producer's MultiplexingCall waits for an orphan to check before an empty "
        "GenericPollingResponse (the producer polls again).",
    )
    rocketmq_max_waiting_polls: int = Field(
        1024,
        ge=1,
        le=100_000,
        description="MultiplexingCall polls that may wait at once on this instance; more are answered "
        "RESOURCE_EXHAUSTED.",
    )
    max_in_flight_batches: int = Field(
        1,
        ge=0,
        le=1000,
        description="Publish batches per partition that may wait for the cluster's answer at once (the SDK's "
        "max_in_flight_batches); while that many are out, further Produce calls to the partition coalesce into "
        "the next batch. 0 = no bound (a batch per linger period, however small).",
    )
    shutdown_grace_ms: int = Field(3000, ge=0, description="Time in-flight RPCs get on SIGTERM.")
    log_level: LogLevel = Field("INFO", description="Python logging level: DEBUG, INFO, WARNING, ERROR or CRITICAL.")
    log_format: LogFormat = Field(
        "text", description="Log lines: text, or json (one object a line: ts, level, logger, message, exc_info)."
    )
    ready_file: Path | None = Field(
        None, description="When set, the gateway writes its bound ports here as JSON once it serves."
    )

    @field_validator("rocketmq_retry_delays_ms")
    @classmethod
    def _retry_delays_parse(cls, value: str) -> str:
        retry_delays_of(value)
        return value

    @field_validator("rocketmq_receipt_secret")
    @classmethod
    def _secret_long_enough(cls, value: str) -> str:
        if value and len(value.encode("utf-8")) < 16:
            raise ValueError("the receipt secret needs at least 16 bytes")
        return value
