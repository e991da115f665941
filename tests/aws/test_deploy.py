"""aws/deploy: which stacks deploy and destroy may touch, and which states refuse a change."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from botocore.stub import Stubber

from cli.conftest import NAMES, NO_WAIT
from cli.test_deploy import record_calls
from cli.test_events import ROLLBACK, STACK_ID, describe_stack
from ecs_gpu import redeploy
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


# --- the running stack's strategy: Spot output, template, forced deployment ----------
#
# moto's AWS::ECS::Service ignores CapacityProviderStrategy and ForceNewDeployment
# (moto/ecs/models.py, Service.create/update_from_cloudformation_json): it neither
# refuses a strategy change nor starts a deployment. What moto does keep is what
# these read: the stack's outputs and the template it runs (GetTemplate).


def _running(template: dict[str, Any], *, spot: bool) -> dict[str, Any]:
    """The stand-in as a stack whose service runs the plain or the Spot strategy."""
    t = copy.deepcopy(template)
    od = {"CapacityProvider": NAMES.capacity_provider, "Base": 1 if spot else 0}
    strategy = [{**od, "Weight": 30 if spot else 1}]
    outputs: dict[str, Any] = {"ClusterName": {"Value": {"Ref": "Cluster"}}}
    if spot:
        strategy.append({"CapacityProvider": NAMES.spot_capacity_provider, "Base": 0, "Weight": 70})
        outputs[redeploy.SPOT_OUTPUT] = {"Value": NAMES.spot_capacity_provider}
    t["Resources"]["Service"]["Properties"]["CapacityProviderStrategy"] = strategy
    t["Outputs"] = outputs
    return t


def _forcing(template: dict[str, Any]) -> dict[str, Any]:
    t = copy.deepcopy(template)
    t["Resources"]["Service"]["Properties"][redeploy.FORCE_KEY] = {
        "EnableForceNewDeployment": True,
        "ForceNewDeploymentNonce": "strategy-0123456789abcdef",
    }
    return t


def test_spot_in_stack_reads_the_output_naming_the_spot_provider(
    clients: Any, template: dict[str, Any]
) -> None:
    assert dp.spot_in_stack(clients.cfn, STACK) is False  # no stack yet
    clients.cfn.create_stack(
        StackName=STACK, TemplateBody=json.dumps(_running(template, spot=True))
    )
    plain = _running(template, spot=False)
    # Other physical names, so the two stacks do not collide.
    for lid, key in (
        ("Cluster", "ClusterName"),
        ("Service", "ServiceName"),
        ("LogGroup", "LogGroupName"),
    ):
        plain["Resources"][lid]["Properties"][key] = "other"
    clients.cfn.create_stack(StackName="other", TemplateBody=json.dumps(plain))
    assert dp.spot_in_stack(clients.cfn, STACK) is True
    assert dp.spot_in_stack(clients.cfn, "other") is False


def test_deployed_template_is_the_one_the_stack_runs(
    clients: Any, template: dict[str, Any]
) -> None:
    assert dp.deployed_template(clients.cfn, STACK) is None
    running = _running(template, spot=True)
    clients.cfn.create_stack(StackName=STACK, TemplateBody=json.dumps(running))
    assert dp.deployed_template(clients.cfn, STACK) == running


def test_the_forced_deployment_stays_only_when_the_strategy_changes(
    clients: Any, template: dict[str, Any]
) -> None:
    with_spot = _running(template, spot=True)
    # A new stack: CloudFormation creates the service, nothing to force.
    assert not redeploy.forces(dp.settle_forced_deployment(clients.cfn, STACK, _forcing(with_spot)))
    clients.cfn.create_stack(StackName=STACK, TemplateBody=json.dumps(with_spot))
    calls = record_calls(clients.cfn)
    # The same strategy redeployed: dropped, so the redeploy touches no task.
    same = dp.settle_forced_deployment(clients.cfn, STACK, _forcing(with_spot))
    assert not redeploy.forces(same) and same == with_spot
    assert "GetTemplate" in calls
    # [capacity.spot] removed, or its base changed: kept.
    removed = _forcing(_running(template, spot=False))
    assert dp.settle_forced_deployment(clients.cfn, STACK, removed) == removed
    based = _forcing(with_spot)
    based["Resources"]["Service"]["Properties"]["CapacityProviderStrategy"][0]["Base"] = 2
    assert redeploy.forces(dp.settle_forced_deployment(clients.cfn, STACK, based))
    # A template that forces nothing is not compared: no GetTemplate for it.
    calls.clear()
    assert dp.settle_forced_deployment(clients.cfn, STACK, with_spot) is with_spot
    assert calls == []
