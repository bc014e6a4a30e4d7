"""Outcomes the RocketMQ front door reports that are not Weir's own errors (Weir's typed errors keep
their status): each carries the google.rpc code the servicer puts in ResponseCommon.status and a
reason for its ErrorInfo. Not WeirError subclasses: they are RocketMQ's outcomes, not Weir result codes."""

from __future__ import annotations

from google.rpc import code_pb2


class GatewayStatusError(Exception):
    """A RocketMQ outcome with google.rpc `code` and ErrorInfo `reason`; str(error) is the message."""

    code: int = code_pb2.INTERNAL
    reason: str = "internal"


class StaleReceiptError(GatewayStatusError):
    """A receipt handle whose delivery is over (settled, or delivered again since): INVALID_ARGUMENT,
    as service.proto says of AckMessage ("illegal or out of date")."""

    code = code_pb2.INVALID_ARGUMENT
    reason = "stale_receipt_handle"


class OffsetNotPendingError(GatewayStatusError):
    """An AckMessage by offset whose message is not pending for the group (never delivered to it,
    or settled already): INVALID_ARGUMENT, as service.proto answers an out-of-date receipt handle."""

    code = code_pb2.INVALID_ARGUMENT
    reason = "offset_not_pending"


class GroupMismatchError(GatewayStatusError):
    """A consumer group used in a way its durable consumer was not created for (a FIFO receive on a
    group created without FIFO): FAILED_PRECONDITION."""

    code = code_pb2.FAILED_PRECONDITION
    reason = "group_mismatch"


class TooManyWaitingError(GatewayStatusError):
    """More waiting receives for one group than the instance allows: UNAVAILABLE (service.proto:
    "If the pending concurrent receive requests exceed the quota of the given consumer group")."""

    code = code_pb2.UNAVAILABLE
    reason = "too_many_waiting_receives"


class TooManyPollsError(GatewayStatusError):
    """More waiting MultiplexingCall polls than the instance allows: RESOURCE_EXHAUSTED."""

    code = code_pb2.RESOURCE_EXHAUSTED
    reason = "too_many_waiting_polls"
