"""aws/follow: a stack followed to its end, and what the user reads of each way it ends."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.stub import Stubber

from cli.conftest import NAMES, NO_WAIT
from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import follow as fl
from ecs_gpu.checks.stack_events import StackEvent
from ecs_gpu.errors import (
    EXIT_INTERRUPTED,
    EXIT_PROBLEMS,
    ProblemsFound,
    StackInterrupted,
)
from support.cfn_events import ROLLBACK, STACK_ID, describe_stack

STACK = NAMES.stack


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
        result = fl.follow(cfn, STACK_ID, seen, on_event=shown.append, waits=NO_WAIT)
        stub.assert_no_pending_responses()
    assert result.status == "ROLLBACK_COMPLETE" and not result.ok
    assert [e.event_id for e in shown] == [e["EventId"] for e in ROLLBACK[1:]]
    assert result.failure is not None and result.failure.logical_id == "Asg"
    problem = fl.report_failure(result, STACK, "us-east-1")
    assert problem.exit_code == EXIT_PROBLEMS
    assert "first failure: Asg" in problem.message and "instance limit" in problem.message
    assert "Resource creation cancelled" not in problem.message
    assert "describe-stack-events --stack-name vllm-g5 --region us-east-1" in problem.message


def test_a_failed_rollback_of_a_forced_update_names_the_way_out() -> None:
    result = fl.FollowResult("UPDATE_ROLLBACK_FAILED", [])
    forced = fl.report_failure(result, STACK, None, forced_service="GpuService3FB432FD")
    assert (
        f"continue-update-rollback --stack-name {STACK} --resources-to-skip GpuService3FB432FD"
        in forced.message
    )
    assert "--resources-to-skip" not in fl.report_failure(result, STACK, None).message
    done = fl.FollowResult("UPDATE_ROLLBACK_COMPLETE", [])
    assert (
        "--resources-to-skip"
        not in fl.report_failure(done, STACK, None, forced_service="GpuService3FB432FD").message
    )
    # A stack found UPDATE_ROLLBACK_FAILED says the same.
    stuck = dp.StackState("id", STACK, "UPDATE_ROLLBACK_FAILED", "Service failed")
    with pytest.raises(ProblemsFound, match="--resources-to-skip"):
        dp._refuse_busy(stuck, None)


def test_ctrl_c_names_what_carries_on_and_how_to_follow_it() -> None:
    e = fl.interrupted(STACK, "eu-west-1", "The deployment")
    assert isinstance(e, StackInterrupted) and e.exit_code == EXIT_INTERRUPTED
    assert e.message.startswith(f"stopped following stack {STACK} (Ctrl-C). The deployment")
    assert "nothing is cancelled or deleted" in e.message
    assert f"describe-stack-events --stack-name {STACK} --region eu-west-1" in e.message


def test_a_delete_given_up_on_lists_what_it_waits_on() -> None:
    waiting = ["Asg (AWS::AutoScaling::AutoScalingGroup): instances protected from scale-in"]
    result = fl.FollowResult("DELETE_IN_PROGRESS", [], stuck=waiting)
    problem = fl.stuck_delete(result, STACK, None, 1200.4)
    assert problem.exit_code == EXIT_PROBLEMS
    assert problem.message.startswith(
        f"stack {STACK} is still DELETE_IN_PROGRESS after 1200 s; ecs-gpu stops waiting here"
    )
    assert f"\n  - {waiting[0]}\n" in problem.message
    assert f"describe-stack-events --stack-name {STACK}" in problem.message


def test_a_failure_without_a_failing_resource_says_so() -> None:
    problem = fl.report_failure(fl.FollowResult("ROLLBACK_COMPLETE", []), STACK, None)
    assert f"stack {STACK} ended ROLLBACK_COMPLETE; CloudFormation reported no failing" in (
        problem.message
    )
    assert "ecs-gpu does not delete it" in problem.message
