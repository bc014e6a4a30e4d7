"""What each waymaker.streams call needs of a Weir user (pure; the gateway's auth interceptor checks
it against the caller's grants, weir_server.auth). The seed's client RPCs carry the same names and
request fields (`stream`, `name`, `config.name`, `subject`) as their weir.v1 counterparts, so each
needs what that one needs (weir_server.permissions): CreateStream / DeleteStream / UpdateStream /
CreateConsumer / DeleteConsumer admin on the stream, Publish publish with its subject, Fetch / Ack /
Nak / Term / InProgress / Subscribe consume, the info and subject lookups read, ListStreams,
GetStreamSources, GetClusterStreamStats, ListStreamAuthorityOverrides and WatchStreams any known caller;
SetStreamPinned, ClearStreamAuthority, MigrateStream and TransferStream admin on the stream (they move
its copies or its leadership, as Router.MovePartition needs), RebalanceStreams admin
on every stream ("*": its plan may name any). The object calls (PutObject ... GetObjectRange) carry
the names and fields of their `weir.v1.ObjectStore` namesakes, so each needs what that one needs:
publish on the bucket's stream `obj:<bucket>` to put or delete, read to get, list or look up; a
PutObjectStream is checked frame by frame against its first frame's `start`. The seed's internal
Replicate* calls need what no user holds (refused before they run).
"""

from __future__ import annotations

from typing import Any

from weir_server import permissions as weir_permissions
from weir_server.auth import CLUSTER
from weir_server.permissions import Requirement

from weir_gateway.waymaker_streams.mapping import OBJECT_METHODS
from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2

SERVICE = waymaker_streams_pb2.DESCRIPTOR.services_by_name["WaymakerStreamsService"].full_name
_PREFIX = f"/{SERVICE}/"
_CLIENT_METHODS = frozenset(
    {
        "CreateStream",
        "DeleteStream",
        "GetStreamInfo",
        "ListStreams",
        "UpdateStream",
        "Publish",
        "Fetch",
        "Ack",
        "Nak",
        "Term",
        "InProgress",
        "Subscribe",
        "CreateConsumer",
        "DeleteConsumer",
        "ListConsumers",
        "GetConsumerInfo",
        "ReadLatestAtSubject",
        "ListSubjectsByPrefix",
        "ScanExactAtSubject",
    }
)


def requirement(method: str, request: Any) -> Requirement | None:
    """What calling `method` with `request` needs; None for a method no user may call."""
    if not method.startswith(_PREFIX):
        return None
    name = method[len(_PREFIX) :]
    if name in ("GetStreamSources", "GetClusterStreamStats", "ListStreamAuthorityOverrides", "WatchStreams"):
        return Requirement(CLUSTER)
    if name in ("SetStreamPinned", "ClearStreamAuthority"):
        return Requirement("admin", request.stream)
    if name in ("MigrateStream", "TransferStream"):
        return Requirement("admin", request.name)
    if name == "RebalanceStreams":  # its plan may name any stream
        return Requirement("admin", "*")
    if name in OBJECT_METHODS:
        return weir_permissions.requirement(f"/weir.v1.ObjectStore/{name}", request)
    if name not in _CLIENT_METHODS:
        return None
    return weir_permissions.requirement(f"/weir.v1.Streams/{name}", request)


def first_item_names_it(method: str) -> bool:
    """Whether `method`'s request stream is authorized by its first item (PutObjectStream's
    `start`) for every item, as its `weir.v1` namesake is."""
    return method.startswith(_PREFIX) and weir_permissions.first_item_names_it(
        "/weir.v1.ObjectStore/" + method[len(_PREFIX) :]
    )
