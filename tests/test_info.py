"""weir.info and weir.cluster_info: the SDK's dataclasses against the protos they follow. Each
round-trips a message with every field set (so a field added to the proto and not mapped fails
here), and each dataclass has exactly the proto's fields, under the same names (pure; no servers)."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message as ProtoMessage
from weir import cluster_info, info
from weir.errors import InvalidOptionError
from weir.v1 import router_pb2, streams_pb2, types_pb2

# dataclass, the proto it follows, and the proto fields it flattens: field -> the fields it becomes
FOLLOWS: list[tuple[type[Any], type[ProtoMessage], dict[str, tuple[str, ...]]]] = [
    (info.StreamSource, types_pb2.StreamSource, {}),
    (info.StreamConfig, types_pb2.StreamConfig, {"limits": info.LIMITS}),
    (info.PartitionInfo, types_pb2.PartitionStats, {}),
    (info.SourceStatus, types_pb2.SourceStatus, {}),
    (info.EpochStart, types_pb2.EpochStart, {}),
    (info.PartitionPlacement, types_pb2.PartitionPlacement, {}),
    (info.StreamInfo, streams_pb2.GetStreamInfoResponse, {"stats": ("msg_count", "bytes", "partitions")}),
    (info.ConsumerConfig, types_pb2.ConsumerConfig, {}),
    (info.ConsumerPartitionState, types_pb2.ConsumerPartitionState, {}),
    (info.ConsumerInfo, types_pb2.ConsumerInfo, {}),
    (info.StreamUpdate, streams_pb2.UpdateStreamResponse, {}),
]
# weir.cluster_info's: each follows its proto field for field, under the same names (ProtoMirror)
FOLLOWS += [
    (mirror, mirror._proto, {})
    for mirror in (getattr(cluster_info, name) for name in cluster_info.__all__)
    if isinstance(mirror, type) and issubclass(mirror, info.ProtoMirror)
]


def filled(message: ProtoMessage, counter: itertools.count[int]) -> ProtoMessage:
    """`message` with every field set to a value of its own: numbers from `counter`, the last value
    of each enum, two entries in each repeated field, nested messages filled the same way."""
    for field in message.DESCRIPTOR.fields:
        if field.is_repeated:
            target = getattr(message, field.name)
            for _ in range(2):
                if field.type == FieldDescriptor.TYPE_MESSAGE:
                    filled(target.add(), counter)
                else:
                    target.append(_scalar(field, counter))
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            filled(getattr(message, field.name), counter)
        else:
            setattr(message, field.name, _scalar(field, counter))
    return message


def _scalar(field: Any, counter: itertools.count[int]) -> Any:
    number = next(counter)
    if field.type == FieldDescriptor.TYPE_ENUM:
        assert field.enum_type is not None
        return field.enum_type.values[-1].number
    if field.type == FieldDescriptor.TYPE_BOOL:
        return True
    if field.type == FieldDescriptor.TYPE_STRING:
        return f"{field.name}-{number}"
    if field.type == FieldDescriptor.TYPE_BYTES:
        return b"%d" % number
    return number


@pytest.mark.parametrize(("cls", "proto_cls", "flattened"), FOLLOWS, ids=lambda value: getattr(value, "__name__", ""))
def test_each_dataclass_has_the_protos_fields(
    cls: type[Any], proto_cls: type[ProtoMessage], flattened: dict[str, tuple[str, ...]]
) -> None:
    expected: list[str] = []
    for field in proto_cls.DESCRIPTOR.fields:
        expected += flattened.get(field.name, (field.name,))
    assert sorted(field.name for field in dataclasses.fields(cls)) == sorted(expected)
    for flat, fields in flattened.items():  # a flattened message's fields are all there
        nested = proto_cls.DESCRIPTOR.fields_by_name[flat].message_type
        assert nested is not None
        assert {field.name for field in nested.fields} == set(fields)


@pytest.mark.parametrize(("cls", "proto_cls", "flattened"), FOLLOWS, ids=lambda value: getattr(value, "__name__", ""))
def test_every_field_round_trips(
    cls: type[Any], proto_cls: type[ProtoMessage], flattened: dict[str, tuple[str, ...]]
) -> None:
    proto = filled(proto_cls(), itertools.count(1))
    value = cls.from_proto(proto)
    assert value.to_proto() == proto
    assert cls.from_proto(value.to_proto()) == value
    for field in dataclasses.fields(cls):  # nothing left at a default: each field was read
        assert getattr(value, field.name) not in (0, "", (), None, False), field.name


def test_unset_bounds_and_transforms_are_none_and_stay_unset() -> None:
    config = info.StreamConfig("orders", max_msgs=0, sources=(info.StreamSource("raw"),))
    proto = config.to_proto()
    assert proto.HasField("limits") and proto.limits.HasField("max_msgs") and not proto.limits.HasField("max_age_ms")
    assert not proto.sources[0].HasField("subject_transform")
    back = info.StreamConfig.from_proto(proto)
    assert back == config and back.max_msgs == 0 and back.max_age_ms is None
    assert back.sources[0].subject_transform is None


def test_a_stream_without_placement_answers_none_and_a_router_s_answers_it() -> None:
    from_node = streams_pb2.GetStreamInfoResponse(config=types_pb2.StreamConfig(name="s"))
    assert info.StreamInfo.from_proto(from_node).placement == ()
    assert not info.StreamInfo.from_proto(from_node).to_proto().HasField("placement")
    partition = types_pb2.PartitionPlacement(partition=0, primary_node_id="node-1")
    from_router = streams_pb2.GetStreamInfoResponse(
        config=types_pb2.StreamConfig(name="s"), placement=types_pb2.StreamPlacement(partitions=[partition])
    )
    assert info.StreamInfo.from_proto(from_router).placement == (info.PartitionPlacement(0, "node-1"),)


def test_options_out_of_their_values_are_refused_both_ways() -> None:
    bad: Any = "limtis"
    with pytest.raises(InvalidOptionError, match="retention: 'limtis' is not one of limits, work_queue, interest"):
        info.StreamConfig("s", retention=bad).to_proto()
    with pytest.raises(InvalidOptionError, match="deliver_policy: enum value 99 is unknown"):
        info.ConsumerConfig.from_proto(types_pb2.ConsumerConfig(name="c", deliver_policy=99))  # type: ignore[arg-type]


def test_the_dataclasses_are_frozen_values() -> None:
    config = info.ConsumerConfig("c", ack_wait_ms=1_000)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.ack_wait_ms = 2  # type: ignore[misc]
    assert dataclasses.replace(config, ack_wait_ms=2) == info.ConsumerConfig("c", ack_wait_ms=2)
    assert hash(config) == hash(info.ConsumerConfig("c", ack_wait_ms=1_000))


def test_every_mirrored_answer_is_checked_here() -> None:
    """Each ProtoMirror dataclass of weir.info and weir.cluster_info is in FOLLOWS (and so
    round-trips every field): a new one that is not fails here."""
    defined = {
        value
        for module in (info, cluster_info)
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, info.ProtoMirror)
        and value is not info.ProtoMirror
        and value.__module__ == module.__name__
    }
    checked = {cls for cls, _, _ in FOLLOWS}
    assert defined and not defined - checked, sorted(cls.__name__ for cls in defined - checked)
    assert {router_pb2.QueryRouteResponse, router_pb2.GetClusterStreamStatsResponse, types_pb2.ClusterAnalytics} <= {
        cls._proto for cls in defined
    }


def test_unset_messages_and_optional_fields_are_none_and_stay_unset() -> None:
    stats = cluster_info.ClusterStats.from_proto(router_pb2.GetClusterStreamStatsResponse(total_bytes=5))
    assert stats.analytics is None and not stats.to_proto().HasField("analytics")
    record = cluster_info.ScheduledMessage.from_proto(types_pb2.Message(seq=3, key=b""))
    assert record.key == b"" and record.to_proto().HasField("key")  # an empty key is a key
    assert cluster_info.ScheduledMessage.from_proto(types_pb2.Message(seq=3)).key is None


def test_a_route_reads_as_the_proto_does() -> None:
    proto = router_pb2.QueryRouteResponse(config=types_pb2.StreamConfig(name="orders", partitions=1))
    proto.partitions.add(
        partition=0,
        primary=router_pb2.Broker(node_id="node-1", address="127.0.0.1:7601", alive=True),
        secondaries=[router_pb2.Broker(node_id="node-2")],
        leader_epoch=4,
        permission=router_pb2.PERMISSION_READ_WRITE,
    )
    route = cluster_info.Route.from_proto(proto)
    (entry,) = route.partitions
    assert (route.config.name, entry.primary.address, entry.leader_epoch, entry.permission) == (
        "orders",
        "127.0.0.1:7601",
        4,
        "read_write",
    )
    assert entry.secondaries == (cluster_info.Broker("node-2"),)
    with pytest.raises(InvalidOptionError, match="permission: enum value 99 is unknown"):
        cluster_info.PartitionRoute.from_proto(router_pb2.PartitionRoute(permission=99))  # type: ignore[arg-type]
