"""aws/deploy: which stacks deploy and destroy may touch, and which states refuse a change."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from cli.conftest import NAMES, NO_WAIT
from cli.test_events import ROLLBACK, STACK_ID, describe_stack
from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws.stack_events import StackEvent
from ecs_gpu.errors import EXIT_PROBLEMS, BadInputError, ProblemsFound

STACK = NAMES.stack


def test_a_stack_from_before_the_tags_is_known_by_its_description() -> None:
    old = dp.StackState(
        "id", "vllm-g5", "CREATE_COMPLETE", "", description="ecs-gpu: GPU inference service x"
    )
    dp.check_owned(old, "vllm-g5", action="delete")  # no error
    foreign = dp.StackState("id", "x", "CREATE_COMPLETE", "", description="payments")
    with pytest.raises(BadInputError):
        dp.check_owned(foreign, "vllm-g5", action="delete")


def test_busy_or_failed_stacks_are_refused_with_the_way_out() -> None:
    busy = dp.StackState("id", STACK, "UPDATE_IN_PROGRESS", "")
    with pytest.raises(ProblemsFound, match="describe-stack-events"):
        dp._refuse_busy(busy, "us-east-1")
    failed = dp.StackState("id", STACK, "ROLLBACK_COMPLETE", "")
    with pytest.raises(ProblemsFound, match="ecs-gpu destroy"):
        dp._refuse_busy(failed, None)
    dp._refuse_busy(dp.StackState("id", STACK, "UPDATE_ROLLBACK_COMPLETE", ""), None)


def test_follow_a_rollback_reports_the_first_failure_and_never_deletes(cfn: Any) -> None:
    with Stubber(cfn) as stub:
        stub.add_response(
            "describe_stacks", describe_stack("ROLLBACK_COMPLETE"), {"StackName": STACK_ID}
        )
        stub.add_response(
            "describe_stack_events",
            {"StackEvents": list(reversed(ROLLBACK))},
            {"StackName": STACK_ID},
        )
        seen: set[str] = {ROLLBACK[0]["EventId"]}  # predates the operation
        shown: list[StackEvent] = []
        result = dp.follow(cfn, STACK_ID, seen, on_event=shown.append, waits=NO_WAIT)
        stub.assert_no_pending_responses()
    assert result.status == "ROLLBACK_COMPLETE" and not result.ok
    assert [e.event_id for e in shown] == [e["EventId"] for e in ROLLBACK[1:]]
    assert result.failure is not None and result.failure.logical_id == "Asg"
    problem = dp.report_failure(result, STACK, "us-east-1")
    assert problem.exit_code == EXIT_PROBLEMS
    assert "first failure: Asg" in problem.message and "instance limit" in problem.message
    assert "Resource creation cancelled" not in problem.message
    assert "describe-stack-events --stack-name vllm-g5 --region us-east-1" in problem.message
