"""What each RocketMQ v1 call needs of a Weir user (pure but for the gateway's receipt signer; the
gateway's auth interceptor checks it against the caller's grants, weir_server.auth). A topic is a
stream and a sent message's subject is the stream's name (weir_gateway.rocketmq_v1.core), so:

    SendMessage                         publish on the message's topic
    EndTransaction                      publish on the topic its (signed) transaction id names
    ReceiveMessage, PullMessage,
    QueryOffset                         consume on the partition's topic
    AckMessage, NackMessage,
    ForwardMessageToDeadLetterQueue     consume on the topic the (signed) receipt handle names
    QueryRoute, QueryAssignment,
    Heartbeat, HealthCheck,
    MultiplexingCall,
    NotifyClientTermination             any known caller (as Weir's routes and group membership)

A request whose names or handles do not parse needs only a known caller here: the servicer then
refuses it as INVALID_ARGUMENT, as it would without an auth file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.errors import WeirError
from weir_server.auth import CLUSTER
from weir_server.permissions import Requirement

from weir_gateway.rocketmq_v1 import mapping
from weir_gateway.rocketmq_v1.handles import Signer
from weir_gateway.rocketmq_v1.pb import service_pb2

SERVICE = service_pb2.DESCRIPTOR.services_by_name["MessagingService"].full_name
KNOWN_CALLER = Requirement(CLUSTER)
_ANY_KNOWN = (
    "QueryRoute",
    "QueryAssignment",
    "Heartbeat",
    "HealthCheck",
    "MultiplexingCall",
    "NotifyClientTermination",
)


def topic_rule(action: str, topic_of: Callable[[Any], Any]) -> Callable[[Any], Requirement]:
    """The rule of a call that does `action` on the topic `topic_of(request)` names (its stream; a
    publish also needs the stream routable). Shared by the v1 and v2 doors."""

    def rule(request: Any) -> Requirement:
        topic = topic_of(request)
        stream = mapping.weir_name_of(topic.resource_namespace, topic.name)
        return Requirement(action, stream, (stream,) if action == "publish" else ())

    return rule


class RocketMQPermissions:
    """`requirement(method, request)` for the MessagingService; `signer` opens receipt handles and
    transaction ids (they name their stream)."""

    def __init__(self, signer: Signer) -> None:
        self.signer = signer
        self._rules: dict[str, Callable[[Any], Requirement]] = {
            "SendMessage": topic_rule("publish", lambda request: request.message.topic),
            "EndTransaction": self._transaction,
            "ReceiveMessage": topic_rule("consume", lambda request: request.partition.topic),
            "PullMessage": topic_rule("consume", lambda request: request.partition.topic),
            "QueryOffset": topic_rule("consume", lambda request: request.partition.topic),
            "AckMessage": self._receipt,
            "NackMessage": self._receipt,
            "ForwardMessageToDeadLetterQueue": self._receipt,
            **{name: lambda request: KNOWN_CALLER for name in _ANY_KNOWN},
        }

    def _receipt(self, request: Any) -> Requirement:
        if "handle" in request.DESCRIPTOR.oneofs_by_name and request.WhichOneof("handle") == "offset":
            return topic_rule("consume", lambda request: request.topic)(request)  # an ack by offset (refused later)
        return Requirement("consume", self.signer.receipt(request.receipt_handle).stream)

    def _transaction(self, request: Any) -> Requirement:
        stream = self.signer.transaction(request.transaction_id).stream
        return Requirement("publish", stream, (stream,))

    def requirement(self, method: str, request: Any) -> Requirement | None:
        """What calling `method` with `request` needs; None for a method not in the table (refused)."""
        service, _, name = method.rpartition("/")
        rule = self._rules.get(name) if service == f"/{SERVICE}" else None
        if rule is None:
            return None
        try:
            return rule(request)
        except WeirError:  # unparsable names or handles: the servicer says what is wrong
            return KNOWN_CALLER
