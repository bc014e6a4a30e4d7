"""Weir's client SDK.

    import asyncio
    from weir import Client

    async def main() -> None:
        async with Client() as client:  # $WEIR_ROUTERS, ./weir-cluster, ... (weir.discovery)
            ack = await client.publish("orders", "orders.created", b"hello")
            async with client.consume("orders", "billing") as messages:
                async for message in messages:
                    print(message.subject, message.payload, message.seq)
                    await message.ack()
                    break

`Client` talks to a cluster through its routers (routing, batching, retries, idempotent
publishes, consumer groups) and takes and returns the SDK's own types: `StreamConfig` and
`ConsumerConfig` (built with `stream_config(...)` and `consumer_config(...)`), `StreamInfo`,
`ConsumerInfo` (weir.info), `Message` and `PublishAck` (weir.message). `NodeClient` is the low-level
client of one partition node that Weir's own services use: it answers in the generated protobuf
messages of weir.v1. Every failure raises a
`WeirError` subclass carrying the gRPC status, the server's `result_code` and `retryable`.
Module by module: weir.cluster, weir.client, weir.info, weir.consuming, weir.message, weir.errors,
weir.kv (key-value buckets), weir.invoker (the invoker's operator API: `InvokerClient`),
weir.discovery (which cluster `Client()` finds), weir.subjects (subject and name rules),
weir.partitioning (key -> partition), weir.v1 (stubs).
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names as type checkers see them; at run time each loads on first use
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
        InvalidOptionError,
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
        TlsHandshakeError,
        UnauthenticatedError,
        UnavailableError,
        UnimplementedError,
        WeirError,
        WrongRevisionError,
    )
    from weir.info import (
        ConsumerConfig,
        ConsumerInfo,
        ConsumerPartitionState,
        PartitionInfo,
        PartitionPlacement,
        SourceStatus,
        StreamConfig,
        StreamInfo,
        StreamSource,
    )
    from weir.invoker import InvokerClient
    from weir.kv import KeyValue
    from weir.message import Message, PublishAck
    from weir.objects import ObjectStore
    from weir.options import AckLevel, DeliverPolicy, Retention, SourceDropPolicy, Storage
    from weir.tls import ChannelSecurity


# name -> the module that defines it: `import weir` loads none of them (the CLI, and a program that
# uses one part, pay only for what they use); `weir.Client` loads weir.cluster on first use.
_FROM = {
    "AckLevel": "weir.options",
    "DeliverPolicy": "weir.options",
    "NodeClient": "weir.client",
    "Retention": "weir.options",
    "SourceDropPolicy": "weir.options",
    "Storage": "weir.options",
    "consumer_config": "weir.client",
    "stream_config": "weir.client",
    "stream_source": "weir.client",
    "Client": "weir.cluster",
    "GroupConsumer": "weir.consuming",
    "Subscription": "weir.consuming",
    "AlreadyExistsError": "weir.errors",
    "BeingDeletedError": "weir.errors",
    "ChangeFeedTruncatedError": "weir.errors",
    "ConsumerBoundError": "weir.errors",
    "CorruptRecordError": "weir.errors",
    "DiscoveryFailedError": "weir.errors",
    "FailedPreconditionError": "weir.errors",
    "InternalError": "weir.errors",
    "InvalidArgumentError": "weir.errors",
    "InvalidConfigError": "weir.errors",
    "InvalidKeyError": "weir.errors",
    "InvalidNameError": "weir.errors",
    "InvalidOptionError": "weir.errors",
    "InvalidSubjectError": "weir.errors",
    "LeaderLeaseExpiredError": "weir.errors",
    "ManagedByRouterError": "weir.errors",
    "NoMessageError": "weir.errors",
    "NoSuchBucketError": "weir.errors",
    "NoSuchConsumerError": "weir.errors",
    "NoSuchDeploymentError": "weir.errors",
    "NoSuchHandlerError": "weir.errors",
    "NoSuchInvocationError": "weir.errors",
    "NoSuchKeyError": "weir.errors",
    "NoSuchMessageError": "weir.errors",
    "NoSuchObjectError": "weir.errors",
    "NoSuchPartitionError": "weir.errors",
    "NoSuchStreamError": "weir.errors",
    "NoSuchSubscriptionError": "weir.errors",
    "NotEnoughNodesError": "weir.errors",
    "NotEnoughReplicasError": "weir.errors",
    "NotLeaderError": "weir.errors",
    "NotPendingError": "weir.errors",
    "OverloadedError": "weir.errors",
    "OversizeError": "weir.errors",
    "PermissionDeniedError": "weir.errors",
    "PositionOutOfRangeError": "weir.errors",
    "RateLimitedError": "weir.errors",
    "ReplicationTimeoutError": "weir.errors",
    "ResultCode": "weir.errors",
    "SchedulingDisabledError": "weir.errors",
    "ShaMismatchError": "weir.errors",
    "ShuttingDownError": "weir.errors",
    "StillPlacedError": "weir.errors",
    "StorageFailedError": "weir.errors",
    "SubjectRejectedError": "weir.errors",
    "TlsHandshakeError": "weir.errors",
    "UnauthenticatedError": "weir.errors",
    "UnavailableError": "weir.errors",
    "UnimplementedError": "weir.errors",
    "WeirError": "weir.errors",
    "WrongRevisionError": "weir.errors",
    "ConsumerConfig": "weir.info",
    "ConsumerInfo": "weir.info",
    "ConsumerPartitionState": "weir.info",
    "PartitionInfo": "weir.info",
    "PartitionPlacement": "weir.info",
    "SourceStatus": "weir.info",
    "StreamConfig": "weir.info",
    "StreamInfo": "weir.info",
    "StreamSource": "weir.info",
    "InvokerClient": "weir.invoker",
    "KeyValue": "weir.kv",
    "Message": "weir.message",
    "PublishAck": "weir.message",
    "ObjectStore": "weir.objects",
    "ChannelSecurity": "weir.tls",
}


def __getattr__(name: str) -> Any:
    module = _FROM.get(name)
    if module is None:
        raise AttributeError(f"module 'weir' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups do not come here again
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_FROM])


__version__ = "0.1.0"  # the distribution's version (tests/test_sdk.py checks they agree)

__all__ = [
    "AckLevel",
    "AlreadyExistsError",
    "BeingDeletedError",
    "ChangeFeedTruncatedError",
    "ChannelSecurity",
    "Client",
    "ConsumerBoundError",
    "ConsumerConfig",
    "ConsumerInfo",
    "ConsumerPartitionState",
    "CorruptRecordError",
    "DeliverPolicy",
    "DiscoveryFailedError",
    "FailedPreconditionError",
    "GroupConsumer",
    "InternalError",
    "InvalidArgumentError",
    "InvalidConfigError",
    "InvalidKeyError",
    "InvalidNameError",
    "InvalidOptionError",
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
    "PartitionInfo",
    "PartitionPlacement",
    "PermissionDeniedError",
    "PositionOutOfRangeError",
    "PublishAck",
    "RateLimitedError",
    "ReplicationTimeoutError",
    "ResultCode",
    "Retention",
    "SchedulingDisabledError",
    "ShaMismatchError",
    "ShuttingDownError",
    "SourceDropPolicy",
    "SourceStatus",
    "StillPlacedError",
    "Storage",
    "StorageFailedError",
    "StreamConfig",
    "StreamInfo",
    "StreamSource",
    "SubjectRejectedError",
    "Subscription",
    "TlsHandshakeError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "WeirError",
    "WrongRevisionError",
    "consumer_config",
    "stream_config",
    "stream_source",
]
