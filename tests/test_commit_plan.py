"""The pure part of a group commit's plan (weir_partition_node.commit_plan): which change-feed
entries a commit's data produces, and when a commit has nothing to store."""

from __future__ import annotations

from weir.v1 import types_pb2
from weir_partition_node.commit_plan import CommitPlan, data_changes
from weir_partition_node.retention import RetentionPlan
from weir_partition_node.storage.base import CommitBatch, RowInfo, make_record

PRIMARY = types_pb2.PARTITION_ROLE_PRIMARY


def test_data_changes_describe_the_append_then_each_removal_reason_then_the_truncation() -> None:
    records = [make_record(seq, 1_000 + seq, "orders.eu", b"x" * seq) for seq in (11, 12, 13)]
    retention = RetentionPlan(
        remove_seqs=[4, 6],
        removed_bytes=30,
        truncate_before=3,
        truncated_count=2,
        truncated_bytes=20,
        truncate_reason="max_msgs",
        consumer_removals={"work_queue_ack": [RowInfo(7, 5, 0), RowInfo(8, 6, 0)], "ttl": [RowInfo(9, 1, 0)]},
    )
    changes = data_changes("orders", 2, PRIMARY, records=records, appended_bytes=36, last_seq=13, retention=retention)
    kinds = [change.WhichOneof("kind") for change in changes]
    assert kinds == ["append", "remove", "remove", "remove", "truncate"]
    assert all((change.stream, change.partition, change.role) == ("orders", 2, PRIMARY) for change in changes)
    append = changes[0].append
    assert (append.first_seq, append.last_seq, append.message_count, append.bytes) == (11, 13, 3, 36)
    removes = [(list(change.remove.seqs), change.remove.removed_bytes, change.remove.reason) for change in changes[1:4]]
    assert removes == [([4, 6], 30, "max_msgs_per_subject"), ([7, 8], 11, "work_queue_ack"), ([9], 1, "ttl")]
    truncate = changes[4].truncate
    assert (truncate.first_seq, truncate.removed_count, truncate.removed_bytes, truncate.reason) == (
        3,
        2,
        20,
        "max_msgs",
    )
    assert all(change.change_seq == 0 for change in changes)  # allocated by the caller


def test_a_commit_without_data_has_no_data_changes_and_stores_nothing() -> None:
    secondary = types_pb2.PARTITION_ROLE_SECONDARY
    assert (
        data_changes("orders", 0, secondary, records=[], appended_bytes=0, last_seq=5, retention=RetentionPlan()) == []
    )
    plan = CommitPlan(CommitBatch(last_seq=5), RetentionPlan(), [], [])
    assert plan.empty
    for batch in (
        CommitBatch(last_seq=5, drop_changes_before=3),
        CommitBatch(last_seq=5, consumer_deletes=["c"]),
        CommitBatch(last_seq=5, msg_ids_after=4),
        CommitBatch(last_seq=5, remove_seqs=[2]),
    ):
        assert not CommitPlan(batch, RetentionPlan(), [], []).empty, batch
