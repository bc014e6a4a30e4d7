"""What each kafka-pixy call needs of a Weir user (pure; the gateway's auth interceptor checks it
against the caller's grants, weir_server.auth). A topic is a stream and a produced message's subject
is the topic's name (weir_gateway.kafka_pixy.core), so:

    Produce                              publish on the topic, subject = the topic
    ConsumeNAck, Ack                     consume on the topic
    GetOffsets, GetTopicMetadata,
    ListConsumers                        read on the topic
    SetOffsets                           admin on the topic (it moves a group, as a Weir seek does)
    ListTopics                           any known caller (as Weir's ListStreams)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir_server.auth import CLUSTER
from weir_server.permissions import Requirement

from weir_gateway.kafka_pixy.pb import kafkapixy_pb2

SERVICE = kafkapixy_pb2.DESCRIPTOR.services_by_name["KafkaPixy"].full_name


def _on(action: str) -> Callable[[Any], Requirement]:
    return lambda request: Requirement(action, request.topic)


_RULES: dict[str, Callable[[Any], Requirement]] = {
    "Produce": lambda request: Requirement("publish", request.topic, (request.topic,)),
    "ConsumeNAck": _on("consume"),
    "Ack": _on("consume"),
    "GetOffsets": _on("read"),
    "SetOffsets": _on("admin"),
    "GetTopicMetadata": _on("read"),
    "ListConsumers": _on("read"),
    "ListTopics": lambda request: Requirement(CLUSTER),
}
_BY_METHOD = {f"/{SERVICE}/{name}": rule for name, rule in _RULES.items()}


def requirement(method: str, request: Any) -> Requirement | None:
    """What calling `method` with `request` needs; None for a method not in the table (refused)."""
    rule = _BY_METHOD.get(method)
    return None if rule is None else rule(request)
