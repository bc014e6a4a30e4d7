"""Gateway settings, read from flags and `WEIR_GATEWAY_*` environment variables (pydantic-settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from weir.cluster import router_addresses
from weir.errors import WeirError
from weir_server.service_settings import LogLevel


class GatewaySettings(BaseSettings):
    """Every setting is the flag --<setting-in-kebab-case> or the environment variable WEIR_GATEWAY_<SETTING>
    (case-insensitive); a flag wins over the variable."""

    model_config = SettingsConfigDict(env_prefix="WEIR_GATEWAY_", extra="ignore")

    gateway_id: str = Field(
        "gateway-1", description="Id of this instance (its consumer-group member ids start with it)."
    )
    host: str = Field("127.0.0.1", description="Address the gRPC and metrics servers bind to.")
    routers: str = Field(
        "127.0.0.1:7501", description="The Weir cluster's routers, 'host:port,host:port' (the SDK's bootstrap)."
    )
    cluster_name: str = Field(
        "default",
        description="The name clients give in kafka-pixy's `cluster` field for this cluster ('' means it too); "
        "any other name is INVALID_ARGUMENT.",
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
    ready_file: Path | None = Field(
        None, description="When set, the gateway writes its bound ports here as JSON once it serves."
    )

    @field_validator("routers")
    @classmethod
    def _routers_parse(cls, value: str) -> str:
        try:
            router_addresses(value)
        except WeirError as error:
            raise ValueError(error.message) from None
        return value
