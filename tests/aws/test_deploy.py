"""aws/deploy: which stacks deploy and destroy may touch, and which states refuse a change."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from botocore.stub import Stubber

from cli.conftest import EXAMPLE_SPEC, NAMES
from cli.stacks import record_calls
from ecs_gpu.aws import deploy as dp
from ecs_gpu.design import Design, redeploy
from ecs_gpu.errors import BadInputError, ProblemsFound
from ecs_gpu.spec import parse_spec
from support.cfn_events import STACK_ID

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


# --- the running stack's strategy: its template, the forced deployment -----------
#
# moto's AWS::ECS::Service ignores CapacityProviderStrategy and ForceNewDeployment
# (moto/ecs/models.py, Service.create/update_from_cloudformation_json): it neither
# refuses a strategy change nor starts a deployment. What moto does keep is what
# these read: the stack's state and tags and the template it runs (GetTemplate).


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


def _spec(spot: str | None) -> Any:
    text = EXAMPLE_SPEC.read_text(encoding="utf-8")
    if spot is not None:
        table = '[capacity.spot]\ninstance_types = ["g5.xlarge", "g6.xlarge"]\n'
        text = text.replace("\n[scaling]\n", f"\n{table}{spot}\n[scaling]\n", 1)
    return parse_spec(text, "g5.toml")


def test_deployed_template_is_the_one_the_stack_runs(
    clients: Any, template: dict[str, Any]
) -> None:
    running = _running(template, spot=True)
    clients.cfn.create_stack(StackName=STACK, TemplateBody=json.dumps(running))
    state = dp.stack_state(clients.cfn, STACK)
    assert state is not None
    assert dp.deployed_template(clients.cfn, state) == running


def test_a_yaml_body_is_named_not_read(cfn: Any) -> None:
    """botocore Stubber: GetTemplate answers a YAML body as AWS sends it, a string."""
    state = dp.StackState(STACK_ID, STACK, "UPDATE_COMPLETE", "")
    with Stubber(cfn) as stub:
        stub.add_response(
            "get_template", {"TemplateBody": "Resources:\n  Q: {Type: AWS::SQS::Queue}\n"}
        )
        assert dp.deployed_template(cfn, state) == "its template body is not JSON (YAML?)"


def test_forced_deployment_compares_the_running_strategy(
    clients: Any, template: dict[str, Any]
) -> None:
    calls = record_calls(clients.cfn)
    args = ("g5.toml", STACK, "us-east-1")
    # No stack yet: CloudFormation creates the service, nothing to force or read.
    assert not dp.forced_deployment(clients.cfn, Design.of(_spec("")), *args).forces
    assert "GetTemplate" not in calls
    running = _running(template, spot=True)
    tags = dp.stack_tags(NAMES.service_name)
    clients.cfn.create_stack(StackName=STACK, TemplateBody=json.dumps(running), Tags=tags)
    # The same strategy: nothing forced.
    same = dp.forced_deployment(clients.cfn, Design.of(_spec("")), *args)
    assert not same.forces and same.warning is None and "GetTemplate" in calls
    # A new base: forced, with the spec's nonce.
    based = _spec("on_demand_base = 2\n")
    assert dp.forced_deployment(
        clients.cfn, Design.of(based), *args
    ).nonce == redeploy.strategy_nonce(based)
    # The table removed while Spot has a weight: refused, naming the spec file.
    with pytest.raises(BadInputError, match=r"^g5.toml: \[capacity.spot\] is removed"):
        dp.forced_deployment(clients.cfn, Design.of(_spec(None)), *args)


def test_a_stack_deploy_refuses_is_refused_before_its_template_is_read(
    clients: Any, template: dict[str, Any]
) -> None:
    running = json.dumps(_running(template, spot=True))
    clients.cfn.create_stack(StackName=STACK, TemplateBody=running)  # no ecs-gpu tag
    calls = record_calls(clients.cfn)
    with pytest.raises(BadInputError, match="not made by ecs-gpu"):
        dp.forced_deployment(clients.cfn, Design.of(_spec(None)), "g5.toml", STACK, None)
    assert calls == ["DescribeStacks"]
