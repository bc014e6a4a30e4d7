"""Weir's client SDK.

    import asyncio
    from weir import Client

    async def main() -> None:
        async with Client("127.0.0.1:7501") as client:
            ack = await client.publish("orders", "orders.created", b"hello")
            async with client.consume("orders", "billing") as messages:
                async for message in messages:
                    print(message.subject, message.payload, message.seq)
                    await message.ack()
                    break

`Client` talks to a cluster through its routers (routing, batching, retries, idempotent
publishes, consumer groups); `NodeClient` to one partition node. Every failure raises a
`WeirError` subclass carrying the gRPC status, the server's `result_code` and `retryable`.
Module by module: weir.cluster, weir.client, weir.consuming, weir.message, weir.errors,
weir.kv (key-value buckets), weir.invoker (the invoker's operator API: `InvokerClient`),
weir.subjects (subject and name rules), weir.partitioning (key -> partition), weir.v1 (stubs).
"""

from weir.client import NodeClient, consumer_config, stream_config, stream_source
from weir.cluster import Client
from weir.consuming import GroupConsumer, Subscription
from weir.errors import (
    AlreadyExistsError,
    BeingDeletedError,
    ChangeFeedTruncatedError,
    ConsumerBoundError,
    CorruptRecordError,
    DiscoveryFailedError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    InvalidConfigError,
    InvalidKeyError,
    InvalidNameError,
    InvalidSubjectError,
    LeaderLeaseExpiredError,
    ManagedByRouterError,
    NoMessageError,
    NoSuchBucketError,
    NoSuchConsumerError,
    NoSuchDeploymentError,
    NoSuchHandlerError,
    NoSuchInvocationError,
    NoSuchKeyError,
    NoSuchMessageError,
    NoSuchObjectError,
    NoSuchPartitionError,
    NoSuchStreamError,
    NoSuchSubscriptionError,
    NotEnoughNodesError,
    NotEnoughReplicasError,
    NotLeaderError,
    NotPendingError,
    OverloadedError,
    OversizeError,
    PermissionDeniedError,
    PositionOutOfRangeError,
    RateLimitedError,
    ReplicationTimeoutError,
    ResultCode,
    SchedulingDisabledError,
    ShaMismatchError,
    ShuttingDownError,
    StillPlacedError,
    StorageFailedError,
    SubjectRejectedError,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
    WeirError,
    WrongRevisionError,
)
from weir.invoker import InvokerClient
from weir.kv import KeyValue
from weir.message import Message, PublishAck
from weir.objects import ObjectStore
from weir.tls import ChannelSecurity

__all__ = [
    "AlreadyExistsError",
    "BeingDeletedError",
    "ChangeFeedTruncatedError",
    "ChannelSecurity",
    "Client",
    "ConsumerBoundError",
    "CorruptRecordError",
    "DiscoveryFailedError",
    "FailedPreconditionError",
    "GroupConsumer",
    "InternalError",
    "InvalidArgumentError",
    "InvalidConfigError",
    "InvalidKeyError",
    "InvalidNameError",
    "InvalidSubjectError",
    "InvokerClient",
    "KeyValue",
    "LeaderLeaseExpiredError",
    "ManagedByRouterError",
    "Message",
    "NoMessageError",
    "NoSuchBucketError",
    "NoSuchConsumerError",
    "NoSuchDeploymentError",
    "NoSuchHandlerError",
    "NoSuchInvocationError",
    "NoSuchKeyError",
    "NoSuchMessageError",
    "NoSuchObjectError",
    "NoSuchPartitionError",
    "NoSuchStreamError",
    "NoSuchSubscriptionError",
    "NodeClient",
    "NotEnoughNodesError",
    "NotEnoughReplicasError",
    "NotLeaderError",
    "NotPendingError",
    "ObjectStore",
    "OverloadedError",
    "OversizeError",
    "PermissionDeniedError",
    "PositionOutOfRangeError",
    "PublishAck",
    "RateLimitedError",
    "ReplicationTimeoutError",
    "ResultCode",
    "SchedulingDisabledError",
    "ShaMismatchError",
    "ShuttingDownError",
    "StillPlacedError",
    "StorageFailedError",
    "SubjectRejectedError",
    "Subscription",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "WeirError",
    "WrongRevisionError",
    "consumer_config",
    "stream_config",
    "stream_source",
]
