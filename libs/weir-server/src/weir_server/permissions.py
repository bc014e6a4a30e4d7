"""What each `weir.v1` call needs: an action on a stream (and, for publishes, its subjects).

Pure: `requirement(method, request)` maps a gRPC method path and its decoded request to a
`Requirement`, or None for a method no auth file user may call (the cluster's internal calls: only
its services may). The actions are those of `weir_server.auth`: publish, consume, read, admin, and
`cluster` (what any authenticated caller may do: list streams, cluster figures), and `any` (some
action on the stream: a route).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from weir_server.auth import ANY, CLUSTER


@dataclass(frozen=True, slots=True)
class Requirement:
    action: str
    stream: str = ""
    subjects: tuple[str, ...] = ()

    def describe(self) -> str:
        if self.action == CLUSTER:
            return "call this"
        if self.action == ANY:
            return f"use stream {self.stream!r} (no grant names it)"
        what = f"{self.action} on stream {self.stream!r}"
        if self.subjects:
            shown = ", ".join(repr(subject) for subject in self.subjects[:3])
            more = f" and {len(self.subjects) - 3} more" if len(self.subjects) > 3 else ""
            what += f" with subject {shown}{more}"
        return what


def _on(action: str, field: str = "stream") -> Callable[[Any], Requirement]:
    return lambda request: Requirement(action, getattr(request, field))


def _cluster(request: Any) -> Requirement:
    return Requirement(CLUSTER)


def _publish(request: Any) -> Requirement:
    return Requirement("publish", request.stream, (request.subject,))


def _publish_batch(request: Any) -> Requirement:
    return Requirement("publish", request.stream, tuple(dict.fromkeys(entry.subject for entry in request.entries)))


def _create_stream(request: Any) -> Requirement:
    return Requirement("admin", request.config.name)


_STREAMS: dict[str, Callable[[Any], Requirement]] = {
    "CreateStream": _create_stream,
    "DeleteStream": _on("admin", "name"),
    "UpdateStream": _on("admin", "name"),
    "PurgePartition": _on("admin"),
    "CreateConsumer": _on("admin"),
    "DeleteConsumer": _on("admin"),
    "SeekConsumer": _on("admin"),
    "ReleaseScheduled": _on("admin"),
    "GetStreamInfo": _on("read", "name"),
    "ListConsumers": _on("read"),
    "GetConsumerInfo": _on("read"),
    "GetMessage": _on("read"),
    "ReadMessages": _on("read"),
    "SeqAtTime": _on("read"),
    "ReadLatestAtSubject": _on("read"),
    "ListSubjectsByPrefix": _on("read"),
    "ScanExactAtSubject": _on("read"),
    "ListScheduled": _on("read"),
    "Publish": _publish,
    "PublishBatch": _publish_batch,
    "PublishBatchStream": _publish_batch,
    "Fetch": _on("consume"),
    "FetchStream": _on("consume"),
    "Ack": _on("consume"),
    "AckBatch": _on("consume"),
    "AckBatchStream": _on("consume"),
    "Nak": _on("consume"),
    "Term": _on("consume"),
    "InProgress": _on("consume"),
    "Subscribe": _on("consume"),
    "ListStreams": _cluster,
    "WatchStreams": _cluster,
}
_ROUTER: dict[str, Callable[[Any], Requirement]] = {
    # A route answers whether the stream exists: only to a caller with some grant on it, so a
    # publish to a stream the caller may not touch is refused as such, not as a missing stream.
    "QueryRoute": _on(ANY),
    "ListStreams": _cluster,
    "GetClusterStreamStats": _cluster,
    "GetClusterInfo": _cluster,
    "StartScrub": lambda request: Requirement("admin", "*"),  # admin on every stream: a node-wide action
    "QueryAssignment": _on("consume"),
    "LeaveGroup": _on("consume"),
    "GetGroupInfo": _on("read"),
    "CreateStream": _create_stream,
    "DeleteStream": _on("admin", "name"),
    "UpdateStream": _on("admin", "name"),
    "CreateConsumer": _on("admin"),
    "DeleteConsumer": _on("admin"),
    "GetStreamInfo": _on("read", "name"),
    "ListConsumers": _on("read"),
    "GetConsumerInfo": _on("read"),
    "MovePartition": _on("admin"),
    "SetPartitionPinned": _on("admin"),
    "PlanRebalance": lambda request: Requirement("admin", "*"),  # it reads every stream's placement
}


def _bucket(action: str, with_key: bool = False) -> Callable[[Any], Requirement]:
    """A KeyValue call: `action` on the bucket's stream `kv:<bucket>` (a write: with its key's subject)."""

    def rule(request: Any) -> Requirement:
        return Requirement(action, f"kv:{request.bucket}", (request.key,) if with_key else ())

    return rule


_KEY_VALUE: dict[str, Callable[[Any], Requirement]] = {
    "CreateBucket": _bucket("admin"),
    "DeleteBucket": _bucket("admin"),
    "Put": _bucket("publish", with_key=True),
    "Create": _bucket("publish", with_key=True),
    "Update": _bucket("publish", with_key=True),
    "Delete": _bucket("publish", with_key=True),
    "Purge": _bucket("publish", with_key=True),
    "Touch": _bucket("publish", with_key=True),
    "Get": _bucket("read"),
    "Keys": _bucket("read"),
    "History": _bucket("read"),
    "Watch": _bucket("read"),
}


def _store(action: str, prefix: str, field: str = "bucket") -> Callable[[Any], Requirement]:
    """A Collections call: `action` on the store's stream `<prefix><name>` (the subject-level
    grant of a publish is not checked: a store's subjects are encoded keys, not names people write)."""
    return lambda request: Requirement(action, prefix + getattr(request, field))


_COLLECTIONS: dict[str, Callable[[Any], Requirement]] = {
    **{
        f"Create{kind}": _store("admin", prefix, "name")
        for kind, prefix in (("HashStore", "hash:"), ("SetStore", "set:"), ("Queue", "queue:"))
    },
    **{
        f"Delete{kind}": _store("admin", prefix, "name")
        for kind, prefix in (("HashStore", "hash:"), ("SetStore", "set:"), ("Queue", "queue:"))
    },
    **{name: _store("publish", "hash:") for name in ("HashSet", "HashDelete")},
    **{name: _store("read", "hash:") for name in ("HashGet", "HashExists", "HashGetAll", "HashFields", "HashLen")},
    **{name: _store("publish", "set:") for name in ("SetAdd", "SetRemove")},
    **{name: _store("read", "set:") for name in ("SetIsMember", "SetMembers", "SetLen")},
    "QueuePush": _store("publish", "queue:"),
    "QueuePop": _store("consume", "queue:"),
    **{name: _store("read", "queue:") for name in ("QueueRange", "QueueLen")},
}
_OBJECTS: dict[str, Callable[[Any], Requirement]] = {
    **{name: _store("admin", "obj:") for name in ("CreateObjectBucket", "DeleteObjectBucket", "CollectGarbage")},
    **{name: _store("publish", "obj:") for name in ("PutObject", "DeleteObject")},
    "PutObjectStream": lambda request: Requirement("publish", "obj:" + request.start.bucket),
    **{
        name: _store("read", "obj:")
        for name in (
            "GetObject",
            "GetObjectStream",
            "GetObjectInfo",
            "ListObjects",
            "ListObjectRevisions",
            "GetObjectRange",
        )
    },
}
_BY_METHOD: dict[str, Callable[[Any], Requirement]] = {
    **{f"/weir.v1.Streams/{name}": rule for name, rule in _STREAMS.items()},
    **{f"/weir.v1.Router/{name}": rule for name, rule in _ROUTER.items()},
    **{f"/weir.v1.KeyValue/{name}": rule for name, rule in _KEY_VALUE.items()},
    **{f"/weir.v1.Collections/{name}": rule for name, rule in _COLLECTIONS.items()},
    **{f"/weir.v1.ObjectStore/{name}": rule for name, rule in _OBJECTS.items()},
}


# Request streams whose first item names what the whole call acts on (later items carry only data):
# every item is checked against the first one's requirement.
_FIRST_ITEM_NAMES_IT = frozenset({"/weir.v1.ObjectStore/PutObjectStream"})


def first_item_names_it(method: str) -> bool:
    """Whether `method`'s request stream is authorized by its first item for every item."""
    return method in _FIRST_ITEM_NAMES_IT


def known(method: str) -> bool:
    """Whether auth file users may call `method` at all (else only the cluster's services)."""
    return method in _BY_METHOD


def requirement(method: str, request: Any) -> Requirement | None:
    """What calling `method` with `request` needs; None when only the cluster's services may."""
    rule = _BY_METHOD.get(method)
    return None if rule is None else rule(request)
