"""Typed Weir errors: one root error carrying a gRPC status, a result code and `retryable`.

Errors are data (as in aiokafka): every failure has a seed-style result code (`no_such_stream`,
`invalid_config`, `wrong_revision`, ...) that fixes its gRPC status code and whether retrying the
same request can succeed. On the wire a failed call ends with that status; its details carry a
`google.rpc.ErrorInfo` with domain ``"weir"``, ``reason`` = the result code and ``metadata`` =
``{"retryable": "true"|"false", ...context}``. `WeirError.from_rpc_error` turns that back into the
same typed error on the client side.

Source: result codes of the streams seed (waymaker.streams `result_code` fields), status codes as
the RocketMQ seed maps them (NOT_FOUND, INVALID_ARGUMENT, FAILED_PRECONDITION, ...).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, ClassVar, NamedTuple

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2

ERROR_DOMAIN = "weir"
_STATUS_DETAILS_KEY = "grpc-status-details-bin"


class _StatusFields(NamedTuple):
    code: grpc.StatusCode
    details: str
    trailing_metadata: Any


class _Status(_StatusFields, grpc.Status):  # type: ignore[misc]
    """A grpc.Status with the google.rpc.Status in its trailing metadata, as grpcio-status's
    `rpc_status.to_status` builds one (done here: that package ties the oldest grpcio the SDK can use
    to the protobuf major, and this is all the SDK needed of it)."""


class ResultCode(StrEnum):
    """Seed-style result codes; each names exactly one failure."""

    OK = "ok"
    NO_SUCH_STREAM = "no_such_stream"
    NO_SUCH_PARTITION = "no_such_partition"
    NO_SUCH_MESSAGE = "no_such_message"
    NO_SUCH_CONSUMER = "no_such_consumer"
    NOT_PENDING = "not_pending"
    CONSUMER_BOUND = "consumer_bound"
    ALREADY_EXISTS = "already_exists"
    INVALID_CONFIG = "invalid_config"
    INVALID_NAME = "invalid_name"
    INVALID_SUBJECT = "invalid_subject"
    INVALID_ARGUMENT = "invalid_argument"
    SUBJECT_REJECTED = "subject_rejected"
    OVERSIZE = "oversize"
    WRONG_REVISION = "wrong_revision"
    CHANGE_FEED_TRUNCATED = "change_feed_truncated"
    POSITION_OUT_OF_RANGE = "position_out_of_range"
    CORRUPT = "corrupt"
    OVERLOADED = "overloaded"
    SHUTTING_DOWN = "shutting_down"
    STORAGE_FAILED = "storage_failed"
    UNAVAILABLE = "unavailable"
    NOT_LEADER = "not_leader"
    NOT_ENOUGH_NODES = "not_enough_nodes"
    MANAGED_BY_ROUTER = "managed_by_router"
    NOT_ENOUGH_REPLICAS = "not_enough_replicas"
    REPLICATION_TIMEOUT = "replication_timeout"
    LEADER_LEASE_EXPIRED = "leader_lease_expired"
    NO_MESSAGE = "no_message"
    SCHEDULING_DISABLED = "scheduling_disabled"
    ALREADY_RESOLVED = "already_resolved"
    STILL_PLACED = "still_placed"
    RATE_LIMITED = "rate_limited"
    BEING_DELETED = "being_deleted"
    UNAUTHENTICATED = "unauthenticated"
    PERMISSION_DENIED = "permission_denied"
    NO_SUCH_BUCKET = "no_such_bucket"
    INVALID_KEY = "invalid_key"
    NO_SUCH_KEY = "no_such_key"
    UNIMPLEMENTED = "unimplemented"
    CATCHING_UP = "catching_up"
    NO_SUCH_OBJECT = "no_such_object"
    SHA_MISMATCH = "sha_mismatch"
    INCOMPLETE = "incomplete"
    NO_SUCH_DEPLOYMENT = "no_such_deployment"
    NO_SUCH_SUBSCRIPTION = "no_such_subscription"
    NO_SUCH_INVOCATION = "no_such_invocation"
    NO_SUCH_HANDLER = "no_such_handler"
    DISCOVERY_FAILED = "discovery_failed"
    FAILED_PRECONDITION = "failed_precondition"
    INTERNAL = "internal"


class WeirError(Exception):
    """Root of every Weir error.

    Attributes:
        result_code: the seed-style code naming the failure.
        status_code: the gRPC status the server answers with.
        retryable: whether the same request may succeed later (overload, shutdown, lost
            connection); never true for bad input.
        refresh_routing: whether the client should refresh its routes (QueryRoute) before
            retrying: the partition has another leader, or its node is gone.
        message: what was wrong, for a person.
        metadata: context (stream, partition, seq, ...), all strings.
    """

    result_code: ClassVar[ResultCode] = ResultCode.INTERNAL
    status_code: ClassVar[grpc.StatusCode] = grpc.StatusCode.INTERNAL
    retryable: ClassVar[bool] = False
    refresh_routing: ClassVar[bool] = False

    _by_code: ClassVar[dict[str, type[WeirError]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A class that names its own result code is the one `for_code` decodes it as; a subclass
        that only refines another (an application's own, say) leaves decoding as it was."""
        super().__init_subclass__(**kwargs)
        if "result_code" in cls.__dict__:
            WeirError._by_code.setdefault(cls.result_code.value, cls)

    def __init__(self, message: str, **metadata: object) -> None:
        super().__init__(message)
        self.message = message
        self.metadata: dict[str, str] = {key: str(value) for key, value in metadata.items()}

    def __str__(self) -> str:
        return f"{self.result_code}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, metadata={self.metadata!r})"

    @staticmethod
    def for_code(result_code: str, message: str, **metadata: object) -> WeirError:
        """The typed error for `result_code` (an unknown code gives an `InternalError`)."""
        error_class = WeirError._by_code.get(result_code, InternalError)
        return error_class(message, **metadata)

    def to_status(self) -> grpc.Status:
        """The gRPC status (with ErrorInfo details) a servicer aborts with."""
        info = error_details_pb2.ErrorInfo(
            reason=self.result_code.value,
            domain=ERROR_DOMAIN,
            metadata={"retryable": "true" if self.retryable else "false", **self.metadata},
        )
        status = status_pb2.Status(code=_google_code(self.status_code), message=self.message)
        status.details.add().Pack(info)
        retry_after_s = self.retry_after_s
        if retry_after_s is not None:  # the standard form of "try again in", for any gRPC client
            retry = error_details_pb2.RetryInfo()
            retry.retry_delay.FromMilliseconds(round(retry_after_s * 1000))
            status.details.add().Pack(retry)
        return _Status(self.status_code, self.message, ((_STATUS_DETAILS_KEY, status.SerializeToString()),))

    @property
    def retry_after_s(self) -> float | None:
        """How long the server asked the caller to wait before retrying (its `retry_after_ms`
        metadata), None when it did not say."""
        value = self.metadata.get("retry_after_ms")
        try:
            return None if value is None else max(0.0, float(value) / 1000)
        except ValueError:
            return None

    @staticmethod
    def from_rpc_error(error: grpc.RpcError) -> WeirError:
        """The typed error behind a failed call (sync or asyncio stubs); transport failures map to
        retryable errors."""
        code: grpc.StatusCode | None = error.code() if hasattr(error, "code") else None
        details: str = (error.details() if hasattr(error, "details") else None) or str(error)
        trailing = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
        for key, value in trailing or ():
            if key != _STATUS_DETAILS_KEY or not isinstance(value, bytes):
                continue
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info) and info.domain == ERROR_DOMAIN:
                    context = {key: value for key, value in info.metadata.items() if key != "retryable"}
                    return WeirError.for_code(info.reason, status.message, **context)
        # CANCELLED from the server side means it went away mid-call (shutdown); a cancel by the caller
        # surfaces as asyncio.CancelledError instead, never as an RpcError.
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED):
            tls_failure = describe_tls_failure(details, secured=True)
            if tls_failure is not None:
                return TlsHandshakeError(tls_failure)
            return UnavailableError(f"{code.name}: {details}")
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
            return OverloadedError(details)
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            return InvalidArgumentError(details)
        return InternalError(f"{code.name if code else 'UNKNOWN'}: {details}")


def _google_code(status_code: grpc.StatusCode) -> int:
    value: int = status_code.value[0]
    assert 0 <= value <= code_pb2.UNAUTHENTICATED, status_code
    return value


class NoSuchStreamError(WeirError):
    result_code = ResultCode.NO_SUCH_STREAM
    status_code = grpc.StatusCode.NOT_FOUND


class NoSuchPartitionError(WeirError):
    result_code = ResultCode.NO_SUCH_PARTITION
    status_code = grpc.StatusCode.INVALID_ARGUMENT


class NoSuchMessageError(WeirError):
    result_code = ResultCode.NO_SUCH_MESSAGE
    status_code = grpc.StatusCode.NOT_FOUND


class NoSuchConsumerError(WeirError):
    result_code = ResultCode.NO_SUCH_CONSUMER
    status_code = grpc.StatusCode.NOT_FOUND


class NotPendingError(WeirError):
    """Ack/Nak/Term/InProgress of a seq that is not in the consumer's pending set: already
    acknowledged, terminated, dead-lettered, or never delivered to this consumer."""

    result_code = ResultCode.NOT_PENDING
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class ConsumerBoundError(WeirError):
    """Subscribe to a consumer without a deliver_group that another Subscribe is bound to, or with
    a deliver_group other than the consumer's."""

    result_code = ResultCode.CONSUMER_BOUND
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class AlreadyExistsError(WeirError):
    result_code = ResultCode.ALREADY_EXISTS
    status_code = grpc.StatusCode.ALREADY_EXISTS


class InvalidConfigError(WeirError):
    result_code = ResultCode.INVALID_CONFIG
    status_code = grpc.StatusCode.INVALID_ARGUMENT


class InvalidNameError(WeirError):
    result_code = ResultCode.INVALID_NAME
    status_code = grpc.StatusCode.INVALID_ARGUMENT


class InvalidSubjectError(WeirError):
    result_code = ResultCode.INVALID_SUBJECT
    status_code = grpc.StatusCode.INVALID_ARGUMENT


class InvalidArgumentError(WeirError):
    result_code = ResultCode.INVALID_ARGUMENT
    status_code = grpc.StatusCode.INVALID_ARGUMENT


class SubjectRejectedError(WeirError):
    """The subject matches none of the stream's subject patterns."""

    result_code = ResultCode.SUBJECT_REJECTED
    status_code = grpc.StatusCode.INVALID_ARGUMENT


class OversizeError(WeirError):
    result_code = ResultCode.OVERSIZE
    status_code = grpc.StatusCode.INVALID_ARGUMENT


class WrongRevisionError(WeirError):
    """expected_last_seq did not match; metadata["last_seq"] is the subject's actual last seq."""

    result_code = ResultCode.WRONG_REVISION
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class NoSuchBucketError(WeirError):
    """A key-value bucket that does not exist (kv.proto)."""

    result_code = ResultCode.NO_SUCH_BUCKET
    status_code = grpc.StatusCode.NOT_FOUND


class InvalidKeyError(WeirError):
    """A key-value key outside the rules of kv.proto."""

    result_code = ResultCode.INVALID_KEY
    status_code = grpc.StatusCode.INVALID_ARGUMENT


class NoSuchKeyError(WeirError):
    """A key-value key without a value (never written, deleted or expired) where one is needed (Touch)."""

    result_code = ResultCode.NO_SUCH_KEY
    status_code = grpc.StatusCode.NOT_FOUND


class NoSuchObjectError(WeirError):
    """An object store name without a live object (never put, or deleted)."""

    result_code = ResultCode.NO_SUCH_OBJECT
    status_code = grpc.StatusCode.NOT_FOUND


class ShaMismatchError(WeirError):
    """An object's content does not match its sha256 (the one a Put named, or the stored one on a
    Get): the seed answers it ABORTED."""

    result_code = ResultCode.SHA_MISMATCH
    status_code = grpc.StatusCode.ABORTED


class IncompleteObjectError(WeirError):
    """An object's metadata names a chunk that is no longer stored (a put that replaced or a delete
    that removed the revision while it was read, or the bucket's retention): the seed's
    `incomplete`. ABORTED: read again (a replaced object reads as its new revision)."""

    result_code = ResultCode.INCOMPLETE
    status_code = grpc.StatusCode.ABORTED


class NoSuchDeploymentError(WeirError):
    """A handler deployment the invoker has not registered (invoker.proto)."""

    result_code = ResultCode.NO_SUCH_DEPLOYMENT
    status_code = grpc.StatusCode.NOT_FOUND


class NoSuchSubscriptionError(WeirError):
    """A subscription the invoker does not have (invoker.proto)."""

    result_code = ResultCode.NO_SUCH_SUBSCRIPTION
    status_code = grpc.StatusCode.NOT_FOUND


class NoSuchInvocationError(WeirError):
    """An invocation the invoker does not know (never existed, or finished longer ago than its
    retention) (invoker.proto)."""

    result_code = ResultCode.NO_SUCH_INVOCATION
    status_code = grpc.StatusCode.NOT_FOUND


class NoSuchHandlerError(WeirError):
    """A service/handler no registered deployment serves (invoker.proto)."""

    result_code = ResultCode.NO_SUCH_HANDLER
    status_code = grpc.StatusCode.NOT_FOUND


class DiscoveryFailedError(WeirError):
    """A deployment URL did not answer a usable endpoint manifest (unreachable, 404, 415, a protocol
    version this invoker does not speak); the message says which (invoker.proto)."""

    result_code = ResultCode.DISCOVERY_FAILED
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class FailedPreconditionError(WeirError):
    """The request is valid but the state it acts on does not allow it (a finished invocation
    cancelled, an awakeable completed twice, a deployment removed while a subscription uses it)."""

    result_code = ResultCode.FAILED_PRECONDITION
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class UnimplementedError(WeirError):
    """A request field Weir does not act on yet (refused rather than ignored)."""

    result_code = ResultCode.UNIMPLEMENTED
    status_code = grpc.StatusCode.UNIMPLEMENTED


class ChangeFeedTruncatedError(WeirError):
    """Retention removed the requested changes; metadata["first_change_seq"] says where to resume."""

    result_code = ResultCode.CHANGE_FEED_TRUNCATED
    status_code = grpc.StatusCode.OUT_OF_RANGE


class PositionOutOfRangeError(WeirError):
    """A start position past the end of what exists (a change feed position beyond the node's
    next change seq: the node's data was replaced, or the position belongs to another node).
    Nothing would ever arrive there, so it is refused instead of waited on. metadata:
    "next_change_seq" (the highest position a reader may start from now)."""

    result_code = ResultCode.POSITION_OUT_OF_RANGE
    status_code = grpc.StatusCode.OUT_OF_RANGE


class CorruptRecordError(WeirError):
    """A stored record failed its checksum; metadata names stream, partition and seq."""

    result_code = ResultCode.CORRUPT
    status_code = grpc.StatusCode.DATA_LOSS


class OverloadedError(WeirError):
    result_code = ResultCode.OVERLOADED
    status_code = grpc.StatusCode.RESOURCE_EXHAUSTED
    retryable = True


class ShuttingDownError(WeirError):
    result_code = ResultCode.SHUTTING_DOWN
    status_code = grpc.StatusCode.UNAVAILABLE
    retryable = True


class StorageFailedError(WeirError):
    """A commit failed on disk; the partition refuses writes until the node restarts (sticky)."""

    result_code = ResultCode.STORAGE_FAILED
    status_code = grpc.StatusCode.UNAVAILABLE
    retryable = True


class UnavailableError(WeirError):
    """The server could not be reached or went away mid-call; routes may have changed."""

    result_code = ResultCode.UNAVAILABLE
    status_code = grpc.StatusCode.UNAVAILABLE
    retryable = True
    refresh_routing = True


class InvalidOptionError(InvalidArgumentError, ValueError):
    """A string option of the SDK (`retention`, `storage`, `ack_level`, `deliver_policy`, `on_drop`)
    that is not one of its values; the message names the option, the value and the allowed ones.
    Raised before anything is sent. Also a ValueError, as Python's own functions raise."""


class TlsHandshakeError(UnavailableError):
    """The TLS handshake with a server failed: its certificate is not signed by a CA this client
    trusts, or it does not serve TLS. Not retried: the same files fail the same way. The message
    says what happened and what to pass (the cluster's CA: `ChannelSecurity(ca_file=...)`,
    `$WEIR_TLS_CA_FILE`, the CLI's `--tls-ca`)."""

    retryable = False
    refresh_routing = False


TLS_CA_HINT = (
    "pass the cluster's CA (Client(..., tls=ChannelSecurity(ca_file=...)), $WEIR_TLS_CA_FILE or the CLI's --tls-ca; "
    "a 'weir cluster up --tls' cluster's is <data-dir>/tls/ca.pem)"
)


def describe_tls_failure(details: str, *, secured: bool) -> str | None:
    """One sentence naming a TLS failure in a gRPC transport error's `details` and what to do, None
    when it is not one (pure). `secured`: the client spoke TLS; a plaintext client's connection that
    the server closed at once ("Socket closed") is what a TLS-only server does to it."""
    reason = details.rsplit("OPENSSL_internal:", 1)[-1].split(": OK", 1)[0].strip() if "OPENSSL" in details else ""
    if secured and "WRONG_VERSION_NUMBER" in details:
        return "TLS handshake failed: the server does not serve TLS (connect without TLS, or start it with TLS)"
    if secured and ("CERTIFICATE_VERIFY_FAILED" in details or "BAD_SIGNATURE" in details):
        untrusted = "the server's certificate is not signed by a CA this client trusts"
        return f"TLS handshake failed: {untrusted} ({reason}): {TLS_CA_HINT}"
    if secured and "handshake failed" in details.lower():
        return f"TLS handshake failed ({reason or details}): {TLS_CA_HINT}"
    if not secured and ("Socket closed" in details or "Connection reset" in details):
        closed = "the server closed the connection at once, as a TLS-only server does to a plaintext client"
        return f"{closed}: {TLS_CA_HINT}"
    return None


class NotLeaderError(WeirError):
    """The node does not lead the addressed partition (DESIGN §4 redirect). metadata names
    "leader_node_id", "leader_address" (when the node knows it) and "leader_epoch"; refresh the
    routes (QueryRoute) and retry there."""

    result_code = ResultCode.NOT_LEADER
    status_code = grpc.StatusCode.FAILED_PRECONDITION
    retryable = True
    refresh_routing = True


class NotEnoughNodesError(WeirError):
    """Fewer partition nodes are alive than the stream's `replicas` needs."""

    result_code = ResultCode.NOT_ENOUGH_NODES
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class ManagedByRouterError(WeirError):
    """A stream or consumer admin call reached a clustered node's client port: in a cluster the
    router places streams and forwards admin calls to the nodes' internal ports."""

    result_code = ResultCode.MANAGED_BY_ROUTER
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class InternalError(WeirError):
    result_code = ResultCode.INTERNAL
    status_code = grpc.StatusCode.INTERNAL


class NotEnoughReplicasError(WeirError):
    """ack_level all while the partition's in-sync set is smaller than the stream's
    min_insync_replicas (Kafka NOT_ENOUGH_REPLICAS). Raised before anything is appended, so the
    publish stored nothing; or after the append when the in-sync set shrank while it waited (then the
    message is stored on the primary and may or may not survive a failover: retrying may duplicate).
    metadata: "in_sync" (count), "min_insync_replicas"."""

    result_code = ResultCode.NOT_ENOUGH_REPLICAS
    status_code = grpc.StatusCode.UNAVAILABLE
    retryable = True


class ReplicationTimeoutError(WeirError):
    """ack_level all: the in-sync replicas did not all confirm the message within the node's
    WEIR_NODE_REPLICATION_TIMEOUT_MS. The message is stored on the primary; retrying may duplicate."""

    result_code = ResultCode.REPLICATION_TIMEOUT
    status_code = grpc.StatusCode.UNAVAILABLE
    retryable = True


class CatchingUpError(WeirError):
    """A primary that has just taken over does not yet know that its followers hold what the
    previous primary may have acknowledged, so it cannot answer a point read of a high-watermark
    stream without perhaps missing an acknowledged write: retry shortly (the SDK does)."""

    result_code = ResultCode.CATCHING_UP
    status_code = grpc.StatusCode.UNAVAILABLE
    retryable = True


class LeaderLeaseExpiredError(WeirError):
    """The node could not renew its heartbeat in the metadata Redis for longer than its lease, so
    another node may already lead its partitions: it refuses writes, consumer operations and ack
    completions until it hears from Redis again (self-fencing). Refresh routes and retry."""

    result_code = ResultCode.LEADER_LEASE_EXPIRED
    status_code = grpc.StatusCode.UNAVAILABLE
    retryable = True
    refresh_routing = True


class UnauthenticatedError(WeirError):
    """The call carries no credentials the server accepts (no client certificate where one is
    required, no or an unknown token)."""

    result_code = ResultCode.UNAUTHENTICATED
    status_code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDeniedError(WeirError):
    """The caller is known but may not do this (a client identity on a node's internal port, say).
    metadata: "identity" when known."""

    result_code = ResultCode.PERMISSION_DENIED
    status_code = grpc.StatusCode.PERMISSION_DENIED


class SchedulingDisabledError(WeirError):
    """A publish asked for delayed delivery (delay_ms / deliver_at_ms) on a stream created without
    allow_scheduled_messages: nothing was stored. Create the stream with it (the setting is immutable)."""

    result_code = ResultCode.SCHEDULING_DISABLED
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class AlreadyResolvedError(FailedPreconditionError):
    """A ReleaseScheduled that contradicts how the held message at `seq` was resolved already: a
    delivery (RocketMQ's EndTransaction COMMIT) of one that was discarded, or a discard (ROLLBACK) of
    one that was delivered. Nothing changed; the first resolution stands. Metadata: stream,
    partition, seq, `resolution` ("commit" | "rollback"), `delivered_seq` (0 for a rollback) and
    `resolved_at_ms`. Repeating the first resolution is no error: it answers as the first did."""

    result_code = ResultCode.ALREADY_RESOLVED
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class RateLimitedError(WeirError):
    """The caller sent requests faster than its identity's request rate (the auth file's
    `requests_per_second`, else the service's default): nothing was done. Retry after
    `retry_after_s` (metadata "retry_after_ms"; the status also carries google.rpc.RetryInfo).
    metadata: "identity", "retry_after_ms"."""

    result_code = ResultCode.RATE_LIMITED
    status_code = grpc.StatusCode.RESOURCE_EXHAUSTED
    retryable = True


class StillPlacedError(WeirError):
    """A DeleteStream reached a clustered node's internal port for a stream the cluster metadata still
    places and the controller router has not marked deleting: a node deletes a stream only on the
    controller's word. Delete it through a router. metadata: "stream"."""

    result_code = ResultCode.STILL_PLACED
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class BeingDeletedError(WeirError):
    """The stream's delete started and did not finish (a node was unreachable, say): the router
    refuses to re-create or change it until a DeleteStream completes it. metadata: "stream"."""

    result_code = ResultCode.BEING_DELETED
    status_code = grpc.StatusCode.FAILED_PRECONDITION


class NoMessageError(WeirError):
    """A long poll ended with nothing to deliver (kafka-pixy's ConsumeNAck answers NOT_FOUND): call
    again."""

    result_code = ResultCode.NO_MESSAGE
    status_code = grpc.StatusCode.NOT_FOUND
    retryable = True
