"""The SDK's string options as `Literal` types, and the defaults and limits a command line shows, with
no imports: the CLI builds its parser from them without loading gRPC or protobuf.
`weir.info.option` turns an option's value into its protobuf enum and names the option and the
allowed values when it is not one of them; `weir.invoker` and `weir.objects` use the constants below
(tests/test_sdk.py checks the invocation statuses against invoker.proto)."""

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

InvocationStatusName = Literal["pending", "running", "suspended", "backing_off", "completed", "failed", "cancelled"]
"""An invocation's status as people write it (invoker.proto's InvocationStatus, lower case, without
the INVOCATION_STATUS_ prefix)."""

DEFAULT_INVOKER_PORT = 7720  # the invoker's default gRPC port (WEIR_INVOKER_PORT)
DEFAULT_INVOKER_ADDRESS = f"127.0.0.1:{DEFAULT_INVOKER_PORT}"
DEFAULT_FAILURE_CODE = 500  # Restate's code of a terminal error raised without one
OBJECT_MAX_CHUNK_BYTES = 960 * 1024  # below the nodes' default largest message (1 MiB) with its subject
OBJECT_GC_GRACE_MS = 3_600_000  # an unreferenced chunk outlives a put in progress by this long
