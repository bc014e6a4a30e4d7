"""The SDK's config builders (`weir.stream_config`, `weir.consumer_config`) answering the protobuf
messages (types_pb2.StreamConfig, types_pb2.ConsumerConfig) that a node's or router's internals and
raw gRPC requests take: for tests that drive those in process. Same arguments, same errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, Protocol, TypeVar

from weir import client

P = ParamSpec("P")
T_co = TypeVar("T_co", covariant=True)


class _Convertible(Protocol[T_co]):
    def to_proto(self) -> T_co: ...


def _as_proto(build: Callable[P, _Convertible[T_co]]) -> Callable[P, T_co]:
    def proto(*args: P.args, **kwargs: P.kwargs) -> T_co:
        return build(*args, **kwargs).to_proto()

    return proto


stream_config = _as_proto(client.stream_config)
consumer_config = _as_proto(client.consumer_config)
