"""Follow a stack's events to a terminal status, say how it ended, and delete a stack.

I/O only, beside :mod:`ecs_gpu.aws.deploy` (which starts what this follows): what an
event stream means is :mod:`ecs_gpu.checks.stack_events`'. Waits go through
:class:`ecs_gpu.aws.deploy.Waits`, so tests never sleep.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ecs_gpu.aws.deploy import (
    SKIP_SERVICE,
    StackOutput,
    Waits,
    follow_hint,
    refusal_is_a_problem,
    seen_event_ids,
    status_by_id,
)
from ecs_gpu.aws.errors import mapped
from ecs_gpu.checks.stack_events import (
    StackEvent,
    explain_stuck_delete,
    first_failure,
    is_success,
    is_terminal,
    parse_event,
)
from ecs_gpu.errors import ProblemsFound, StackInterrupted

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient


# --- following a stack ------------------------------------------------------------


@dataclass
class FollowResult:
    status: str
    events: list[StackEvent]
    stuck: list[str] = field(default_factory=list)
    # The stack's outputs once a deploy succeeded (read by stack_outputs).
    outputs: list[StackOutput] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return is_success(self.status)

    @property
    def failure(self) -> StackEvent | None:
        return first_failure(self.events)


def _new_events(cfn: CloudFormationClient, stack_id: str, seen: set[str]) -> list[StackEvent]:
    """Events not seen yet, oldest first. Pages are newest first: stop at a seen one."""
    fresh: list[StackEvent] = []
    with mapped("cloudformation", "DescribeStackEvents"):
        pages = cfn.get_paginator("describe_stack_events").paginate(StackName=stack_id)
        for page in pages:
            hit_seen = False
            for raw in page.get("StackEvents", []):
                if raw["EventId"] in seen:
                    hit_seen = True
                    break
                seen.add(raw["EventId"])
                fresh.append(parse_event(raw))
            if hit_seen:
                break
    fresh.reverse()
    return fresh


def follow(
    cfn: CloudFormationClient,
    stack_id: str,
    seen: set[str],
    *,
    on_event: Callable[[StackEvent], None] = lambda e: None,
    on_status: Callable[[str, float], None] = lambda s, t: None,
    waits: Waits | None = None,
    stuck_after_s: float | None = None,
) -> FollowResult:
    """Poll the stack until a terminal status, reporting each new event.

    With ``stuck_after_s``, a stack still DELETE_IN_PROGRESS after that long
    is given up on and explained (:func:`explain_stuck_delete`) instead of
    being waited on forever. KeyboardInterrupt propagates: the caller tells
    the user the stack carries on.
    """
    w = waits or Waits()
    start = w.clock()
    events: list[StackEvent] = []
    while True:
        status = status_by_id(cfn, stack_id)
        for e in _new_events(cfn, stack_id, seen):
            events.append(e)
            on_event(e)
        elapsed = w.clock() - start
        on_status(status, elapsed)
        if is_terminal(status):
            return FollowResult(status, events)
        if (
            stuck_after_s is not None
            and status == "DELETE_IN_PROGRESS"
            and elapsed >= stuck_after_s
        ):
            lines = explain_stuck_delete(events) or [
                "no resource reported progress; CloudFormation is waiting on the services"
            ]
            return FollowResult(status, events, stuck=lines)
        w.sleep(w.poll_s)


def interrupted(stack: str, region: str | None, what: str) -> StackInterrupted:
    """Ctrl-C while following ``what`` (a deployment, a delete): the stack is left alone."""
    return StackInterrupted(
        f"stopped following stack {stack} (Ctrl-C). {what} carries on in CloudFormation, and "
        "ecs-gpu leaves the stack as CloudFormation has it (nothing is cancelled or deleted). "
        + follow_hint(stack, region).capitalize()
        + ", or run ecs-gpu again once it has finished."
    )


def report_failure(
    result: FollowResult, stack: str, region: str | None, *, forced_service: str | None = None
) -> ProblemsFound:
    """A stack that ended in failure, named by its first failing resource.

    ``forced_service``: the logical id of the ECS service whose new deployment
    the update forced; a rollback that then failed names the way out.
    """
    f = result.failure
    cause = (
        f"first failure: {f.logical_id} ({f.resource_type}) {f.status}: "
        f"{f.reason or 'no reason given'}"
        if f
        else "CloudFormation reported no failing resource"
    )
    way_out = ""
    if forced_service is not None and result.status == "UPDATE_ROLLBACK_FAILED":
        way_out = " " + SKIP_SERVICE.format(stack=stack, service=forced_service)
    return ProblemsFound(
        f"stack {stack} ended {result.status}; {cause}. The stack is left as CloudFormation "
        f"left it; ecs-gpu does not delete it. See every event: "
        + follow_hint(stack, region)
        + "."
        + way_out
    )


def stuck_delete(
    result: FollowResult, stack: str, region: str | None, after_s: float
) -> ProblemsFound:
    """A delete given up on after ``after_s``: what it waits on (``result.stuck``)."""
    return ProblemsFound(
        f"stack {stack} is still DELETE_IN_PROGRESS after {after_s:.0f} s; "
        "ecs-gpu stops waiting here (CloudFormation carries on):\n  - "
        + "\n  - ".join(result.stuck)
        + "\n"
        + follow_hint(stack, region).capitalize()
        + "."
    )


# --- deleting the stack -----------------------------------------------------------


def delete_stack(cfn: CloudFormationClient, stack_id: str) -> set[str]:
    """Start deleting; return the event ids that predate the delete."""
    seen = seen_event_ids(cfn, stack_id)
    fix = "resolve what it names (or delete it by hand) and run `ecs-gpu destroy SPEC` again."
    with refusal_is_a_problem("DeleteStack", stack_id, fix):
        cfn.delete_stack(StackName=stack_id)
    return seen
