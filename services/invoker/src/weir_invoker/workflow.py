"""A workflow's run handler runs once per workflow key (Restate's workflows), decided here (pure);
the operator calls (operations.py), subscriptions (ingress.py) and calls from handlers (entries.py)
act on it.

Every submit of `run` for one workflow key names the same invocation, `ids.for_workflow_run(service,
key)`, whatever else it carries (an idempotency key, a message's position, a caller's entry). The
invocation's record is created in the bucket `invoker-invocations` with create-if-absent, so of two
submits racing (on one invoker, or on an old and a new active invoker around a take-over) one
creates it and the other gets the stored record; a restarted invoker finds the record in the store.
A second submit therefore never runs the body again:

- while the run is unfinished it attaches: an Invoke returns the running invocation (`--wait` then
  waits for its result), a caller's Call entry is completed with its result when it ends, and a
  one-way send is acknowledged;
- once it has finished it gets the stored result (kept `completed_retention_ms`, Restate's workflow
  retention; after that a submit starts a new run).

The workflow's other (shared) handlers are not affected: each submit is an invocation of its own.
"""

from __future__ import annotations

import enum

from weir.v1 import invoker_pb2

from weir_invoker import ids
from weir_invoker.registry import Target

Status = invoker_pb2.InvocationStatus
FINISHED = (Status.INVOCATION_STATUS_COMPLETED, Status.INVOCATION_STATUS_FAILED, Status.INVOCATION_STATUS_CANCELLED)


class Attach(enum.Enum):
    """What a caller's Call of a workflow run that it did not create does (pure decision)."""

    NOTHING = "nothing"  # it created the run (or is its recorded caller): the run's end completes it
    RESULT_NOW = "result-now"  # the run has finished: complete the Call with its stored result
    WAIT = "wait"  # the run is unfinished: complete the Call when it ends


def runs_once_per_key(target: Target) -> bool:
    """A workflow's run handler (manifest: service `ty` WORKFLOW, handler `ty` WORKFLOW)."""
    return target.service.kind == "WORKFLOW" and target.handler.kind == "WORKFLOW"


def invocation_id(target: Target, key: str, otherwise: str) -> str:
    """The id of an invocation of `target` for `key`: the workflow run's own id when `target` runs
    once per key, else `otherwise` (the id the submit would have without this rule)."""
    return ids.for_workflow_run(target.service.name, key) if runs_once_per_key(target) else otherwise


def is_finished(record: invoker_pb2.Invocation) -> bool:
    return record.status in FINISHED


def attach(stored: invoker_pb2.Invocation, created: bool, caller_id: str, entry_index: int) -> Attach:
    """How the Call entry `entry_index` of `caller_id` gets the result of the workflow run `stored`
    (the record its admission returned; `created`: this Call created it)."""
    recorded_caller = stored.parent_awaits and (stored.parent_id, stored.parent_entry_index) == (
        caller_id,
        entry_index,
    )
    if created or recorded_caller:
        return Attach.NOTHING
    return Attach.RESULT_NOW if is_finished(stored) else Attach.WAIT
