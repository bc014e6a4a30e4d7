"""Cross-stream sources (StreamConfig.sources, issue 29): the pure rules (validation, subject
transforms, positions), then the real node over gRPC: filter, transform and provenance, the
position record surviving a SIGKILL, on_drop HALT and SKIP, the dead-letter stream, the status in
GetStreamInfo, and bad configs refused with INVALID_ARGUMENT before anything is stored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from weir import NodeClient, consumer_config, stream_config, stream_source
from weir.errors import InvalidConfigError, InvalidNameError, InvalidSubjectError, NoSuchStreamError, WeirError
from weir.v1 import types_pb2
from weir_server.sources import (
    SubjectRewrite,
    decode_position,
    encode_position,
    initial_position,
    provenance,
    validate_sources,
)
from weir_server.streamconfig import MAX_MESSAGE_BYTES, normalize_config

from tests.conftest import eventually
from weir_cli.launcher import NodeHandle, start_node

# -- pure rules ----------------------------------------------------------------------------------------


def transform(pattern: str, destination: str) -> types_pb2.SubjectTransform:
    return types_pb2.SubjectTransform(source_pattern=pattern, destination=destination)


def test_a_transform_substitutes_the_wildcards_it_matched() -> None:
    rewrite = SubjectRewrite.of(transform("events.*.>", "audit.{{wildcard(2)}}.from.{{ wildcard(1) }}"))
    assert rewrite.apply("events.eu.orders.created") == "audit.orders.created.from.eu"
    assert rewrite.apply("events.eu") is None
    assert rewrite.apply("other.eu.x") is None
    assert SubjectRewrite.of(transform("a.b", "c")).apply("a.b") == "c"


@pytest.mark.parametrize(
    ("pattern", "destination", "error"),
    [
        ("events.>", "audit.{{wildcard(2)}}", InvalidConfigError),
        ("events.>", "", InvalidConfigError),
        ("events..x", "audit", InvalidSubjectError),
        ("events.*", "audit.*", InvalidConfigError),
        ("events.*", "audit.{{partition(1)}}", InvalidConfigError),
    ],
)
def test_a_bad_transform_is_refused(pattern: str, destination: str, error: type[WeirError]) -> None:
    with pytest.raises(error):
        SubjectRewrite.of(transform(pattern, destination))


def sourcing(*sources: types_pb2.StreamSource, partitions: int = 1, name: str = "mirror") -> types_pb2.StreamConfig:
    return stream_config(name, partitions=partitions, sources=sources)


@pytest.mark.parametrize(
    ("config", "error", "says"),
    [
        (sourcing(stream_source("a"), partitions=2), InvalidConfigError, "one partition"),
        (sourcing(stream_source("mirror")), InvalidConfigError, "cannot source itself"),
        (sourcing(stream_source("a"), stream_source("a")), InvalidConfigError, "listed twice"),
        (sourcing(stream_source("bad name")), InvalidNameError, "source_stream"),
        (sourcing(stream_source("a", filter_subject="x.>.y")), InvalidSubjectError, "'>'"),
        (sourcing(stream_source("a", dlq_stream="mirror")), InvalidConfigError, "dead-letter"),
        (sourcing(*(stream_source(f"s{index}") for index in range(17))), InvalidConfigError, "at most 16"),
        (sourcing(types_pb2.StreamSource(source_stream="a", on_drop=7)), InvalidConfigError, "on_drop"),
    ],
)
def test_bad_sources_are_refused_with_what_was_wrong(config: types_pb2.StreamConfig, error: type, says: str) -> None:
    with pytest.raises(error, match=says):
        normalize_config(config, MAX_MESSAGE_BYTES)


def test_good_sources_pass_and_positions_round_trip() -> None:
    validate_sources(sourcing(stream_source("a", filter_subject="x.*", transform=("x.*", "y.{{wildcard(1)}}"))))
    assert decode_position(encode_position(41)) == 41
    assert decode_position(b"not json") == 0
    headers = [("waymaker-source-stream", "a"), ("waymaker-source-partition", "2"), ("waymaker-source-seq", "9")]
    assert provenance(headers) == ("a", 2, 9)
    assert provenance([("other", "1")]) is None


def test_the_initial_position_follows_start_seq_then_backfill_then_the_first_message() -> None:
    assert initial_position(stream_source("a", start_seq=10), 1, 100) == 9
    assert initial_position(stream_source("a", max_initial_backfill=30), 1, 100) == 70
    assert initial_position(stream_source("a", max_initial_backfill=300), 1, 100) == 0
    assert initial_position(stream_source("a"), 5, 100) == 4


# -- the real node over gRPC ---------------------------------------------------------------------------


async def sourced(client: NodeClient, stream: str) -> list[types_pb2.Message]:
    """Every message a consumer of `stream` is delivered (position records are not among them)."""
    return [message async for message in client.read_all(stream) if not message.subject.startswith("$weir.")]


async def wait_for_count(
    client: NodeClient, stream: str, count: int, timeout_s: float = 20.0
) -> list[types_pb2.Message]:
    found: list[types_pb2.Message] = []

    async def enough() -> bool:
        nonlocal found
        found = await sourced(client, stream)
        return len(found) >= count

    await eventually(enough, timeout_s, f"{count} messages sourced into {stream}")
    return found


def origin(message: types_pb2.Message) -> tuple[str, int, int] | None:
    return provenance([(header.key, header.value) for header in message.headers])


@pytest.fixture
def sources_node(tmp_path: Path) -> NodeHandle:
    handle = start_node(tmp_path / "data", node_id="sources")
    yield handle
    handle.kill()


async def test_a_stream_sources_two_others_with_a_filter_and_a_transform(sources_node: NodeHandle) -> None:
    async with NodeClient(sources_node.client_address) as client:
        await client.create_stream(stream_config("orders", partitions=2))
        await client.create_stream(stream_config("payments"))
        for index in range(40):
            await client.publish(
                "orders", f"orders.{'eu' if index % 2 else 'us'}.{index}", b"o%d" % index, key=b"%d" % index
            )
            await client.publish("payments", f"pay.{index}", b"p%d" % index, headers={"h": str(index)})
        await client.create_stream(
            stream_config(
                "audit",
                sources=[
                    stream_source(
                        "orders",
                        filter_subject="orders.eu.*",
                        transform=("orders.*.*", "audit.{{wildcard(1)}}.{{wildcard(2)}}"),
                    ),
                    stream_source("payments"),
                ],
            )
        )
        found = await wait_for_count(client, "audit", 20 + 40)
        per_origin: dict[tuple[str, int], list[int]] = {}
        for message in found:
            where = origin(message)
            assert where is not None
            per_origin.setdefault(where[:2], []).append(where[2])
            if where[0] == "orders":
                assert message.subject.startswith("audit.eu.")
            else:
                assert (
                    dict((header.key, header.value) for header in message.headers)["h"] == message.payload[1:].decode()
                )
        for (stream, partition), seqs in per_origin.items():
            assert seqs == sorted(seqs), f"{stream}/{partition} out of order"
        assert sum(len(seqs) for (stream, _), seqs in per_origin.items() if stream == "orders") == 20
        info = await client.stream_info("audit")
        statuses = {(status.source_stream, status.source_partition): status for status in info.sources_status}
        assert set(statuses) == {("orders", 0), ("orders", 1), ("payments", 0)}
        assert statuses[("payments", 0)].last_sourced_seq == 40 and statuses[("payments", 0)].pulled_total == 40
        assert not any(status.last_error for status in statuses.values())
        # Live: a new message flows through; the position record is never delivered to a consumer.
        await client.publish("payments", "pay.live", b"live")
        await wait_for_count(client, "audit", 61)
        await client.create_consumer("audit", consumer_config("reader", ack_wait_ms=30_000))
        delivered = await client.fetch("audit", "reader", batch_size=1000, max_wait_ms=500)
        assert len(delivered) == 61 and not any(message.subject.startswith("$weir.") for message in delivered)
