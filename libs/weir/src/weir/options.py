"""The SDK's string options as `Literal` types (no imports: the CLI builds its choices from them
without loading gRPC). `weir.client.option` turns a value into its protobuf enum and names the option
and the allowed values when it is not one of them."""

from __future__ import annotations

from typing import Literal

AckLevel = Literal["leader", "none", "all"]
"""How a publish is acknowledged: `leader` (committed and fsynced on the primary), `none` (fire and
forget), `all` (also stored by min_insync_replicas copies)."""
Retention = Literal["limits", "work_queue", "interest"]
"""Limits (max_age_ms, max_msgs, max_bytes, max_msgs_per_subject), WorkQueue (delete on first ack),
Interest (delete once every consumer acked)."""
Storage = Literal["file", "memory"]
DeliverPolicy = Literal["all", "last", "by_start_seq", "by_start_time", "new", "last_per_subject"]
"""Where a new consumer starts (by_start_seq: its start_seq; by_start_time: its start_time_ms)."""
SourceDropPolicy = Literal["halt", "skip"]
"""What a stream's source does when the messages it had yet to copy were removed: stop, or skip to
the first one still stored."""
