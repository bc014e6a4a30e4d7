"""What each weir.v1.Invoker call needs of a Weir user (pure; with an auth file the invoker's auth
interceptor checks it against the caller's grants, weir_server.auth, as the routers do).

The invoker stands for its stream `invoker:journal` in grants (a grant on `invoker:*` or `*`):
- read: ListDeployments, ListSubscriptions, ListInvocations, GetInvocation;
- publish: Invoke and CompleteAwakeable (they hand the invoker work, as a publish hands a stream a
  message);
- admin: RegisterDeployment, RemoveDeployment, DeleteSubscription, CancelInvocation (what changes
  what the invoker calls or stops);
- CreateSubscription: admin on the subscription's source stream (it creates a consumer group there
  and has every message of it invoked).
"""

from __future__ import annotations

from typing import Any

from weir.v1 import invoker_pb2
from weir_server.permissions import Requirement

from weir_invoker.store import JOURNAL_STREAM

SERVICE = invoker_pb2.DESCRIPTOR.services_by_name["Invoker"].full_name
_PREFIX = f"/{SERVICE}/"
_ON_THE_INVOKER = {
    "ListDeployments": "read",
    "ListSubscriptions": "read",
    "ListInvocations": "read",
    "GetInvocation": "read",
    "Invoke": "publish",
    "CompleteAwakeable": "publish",
    "RegisterDeployment": "admin",
    "RemoveDeployment": "admin",
    "DeleteSubscription": "admin",
    "CancelInvocation": "admin",
}


def requirement(method: str, request: Any) -> Requirement | None:
    """What calling `method` with `request` needs; None for a method no user may call."""
    if not method.startswith(_PREFIX):
        return None
    name = method[len(_PREFIX) :]
    if name == "CreateSubscription":
        return Requirement("admin", request.subscription.stream)
    action = _ON_THE_INVOKER.get(name)
    return None if action is None else Requirement(action, JOURNAL_STREAM)
