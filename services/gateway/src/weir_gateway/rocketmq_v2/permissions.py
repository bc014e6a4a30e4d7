"""What each RocketMQ v2 call needs of a Weir user (as the v1 door's `rocketmq_v1.permissions`, whose
rules these follow; the gateway's auth interceptor checks them against the caller's grants):

    SendMessage                         publish on its messages' topic (one topic per request: the
                                        servicer refuses a request that names several)
    EndTransaction                      publish on the topic its (signed) transaction id names
    RecallMessage                       publish on the request's topic (the servicer refuses a
                                        recall handle issued for another topic)
    ReceiveMessage                      consume on the queue's topic
    AckMessage, ChangeInvisibleDuration,
    ForwardMessageToDeadLetterQueue     consume on the request's topic (required; the receiver
                                        refuses a receipt handle issued for another topic)
    QueryRoute, QueryAssignment,
    Heartbeat, Telemetry,
    NotifyClientTermination             any known caller (as Weir's routes and group membership)
    the methods answered NOT_IMPLEMENTED  any known caller

A request whose names or handles do not parse needs only a known caller here: the servicer then
refuses it as BAD_REQUEST, as it would without an auth file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.errors import WeirError
from weir_server.permissions import Requirement

from weir_gateway.rocketmq_v1.handles import Signer
from weir_gateway.rocketmq_v1.permissions import KNOWN_CALLER, topic_rule
from weir_gateway.rocketmq_v2.pb import service_pb2

SERVICE = service_pb2.DESCRIPTOR.services_by_name["MessagingService"].full_name
_ANY_KNOWN = (
    "QueryRoute",
    "QueryAssignment",
    "Heartbeat",
    "Telemetry",
    "NotifyClientTermination",
    "PullMessage",
    "UpdateOffset",
    "GetOffset",
    "QueryOffset",
    "SyncLiteSubscription",
)


class RocketMQV2Permissions:
    """`requirement(method, request)` for apache.rocketmq.v2.MessagingService; `signer` opens
    transaction ids (they name their stream)."""

    def __init__(self, signer: Signer) -> None:
        self.signer = signer
        consume_on_topic = topic_rule("consume", lambda request: request.topic)
        self._rules: dict[str, Callable[[Any], Requirement]] = {
            "SendMessage": self._send,
            "EndTransaction": self._transaction,
            "RecallMessage": topic_rule("publish", lambda request: request.topic),
            "ReceiveMessage": topic_rule("consume", lambda request: request.message_queue.topic),
            "AckMessage": consume_on_topic,
            "ChangeInvisibleDuration": consume_on_topic,
            "ForwardMessageToDeadLetterQueue": consume_on_topic,
            **{name: lambda request: KNOWN_CALLER for name in _ANY_KNOWN},
        }

    @staticmethod
    def _send(request: Any) -> Requirement:
        if not request.messages:  # refused by the servicer
            return KNOWN_CALLER
        return topic_rule("publish", lambda request: request.messages[0].topic)(request)

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
