"""Deploy, diff and destroy through a Stubber: what the user reads of a rollback, a refused
change set, a replacement or a stuck delete.

The CloudFormation answers here are the shapes AWS returns (tests/support/cfn_events.py).
Each goes through ``botocore.stub.Stubber``, which rejects a response that does not
match the service model, so the commands are tested on data AWS could actually send.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from ecs_gpu.aws import deploy as dp
from ecs_gpu.checks.stack_events import (
    changes_from_template,
)
from ecs_gpu.cli import deploy as deploy_cli
from ecs_gpu.cli import destroy as destroy_cli
from ecs_gpu.errors import ProblemsFound
from support.cfn_events import (
    ASG_T,
    CS_ID,
    ROLLBACK,
    STACK,
    STACK_ID,
    STACK_T,
    T0,
    describe_stack,
    ev,
)
from support.stubbed import modify_change

from .conftest import NAMES, NO_WAIT


@pytest.fixture
def cfn() -> Iterator[Any]:
    client = boto3.client(
        "cloudformation",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    yield client


def test_new_stack_preview_lists_every_resource(template: dict[str, Any]) -> None:
    changes = changes_from_template(template)
    assert {c.logical_id for c in changes} == set(template["Resources"])
    assert all(c.action == "Add" and c.disruption is None for c in changes)


# --- through a Stubber (responses validated against botocore's model) ---------------


def test_deploy_rollback_exits_1_and_leaves_the_stack(cfn: Any, template: dict[str, Any]) -> None:
    """The whole deploy of a new stack that rolls back; no DeleteStack is ever sent.

    The Stubber fails on any call it was not given, so a delete would fail the test.
    """
    missing = f"Stack with id {STACK} does not exist"
    with Stubber(cfn) as stub:
        stub.add_client_error("describe_stacks", "ValidationError", missing, 400)
        stub.add_response(
            "create_change_set",
            {"Id": CS_ID, "StackId": STACK_ID},
            {
                "StackName": STACK,
                "ChangeSetName": ANY,
                "TemplateBody": ANY,
                "ChangeSetType": "CREATE",
                "Description": ANY,
                "Capabilities": ["CAPABILITY_IAM"],
                "Tags": [
                    {"Key": "ecs-gpu:spec", "Value": NAMES.service_name},
                    {"Key": "ecs-gpu:version", "Value": ANY},
                ],
            },
        )
        stub.add_response(
            "describe_change_set",
            {"ChangeSetId": CS_ID, "StackId": STACK_ID, "Status": "CREATE_COMPLETE"},
            {"ChangeSetName": CS_ID},
        )
        stub.add_response(
            "describe_stack_events", {"StackEvents": [ROLLBACK[0]]}, {"StackName": STACK_ID}
        )
        stub.add_response("execute_change_set", {}, {"ChangeSetName": CS_ID})
        stub.add_response(
            "describe_stacks", describe_stack("ROLLBACK_COMPLETE"), {"StackName": STACK_ID}
        )
        stub.add_response(
            "describe_stack_events",
            {"StackEvents": list(reversed(ROLLBACK))},
            {"StackName": STACK_ID},
        )
        # deploy --json still says how it ended.
        stub.add_response(
            "describe_stacks", describe_stack("ROLLBACK_COMPLETE"), {"StackName": STACK_ID}
        )
        docs: list[dict[str, Any]] = []
        with pytest.raises(ProblemsFound) as exc:
            deploy_cli.run_deploy(
                cfn,
                STACK,
                template,
                yes=True,
                waits=NO_WAIT,
                service_name=NAMES.service_name,
                report=docs.append,
            )
        stub.assert_no_pending_responses()
    assert exc.value.exit_code == 1
    assert "ended ROLLBACK_COMPLETE" in exc.value.message
    assert "Asg" in exc.value.message and "does not delete it" in exc.value.message
    assert [(d["status"], d["outputs"], d["new_stack"]) for d in docs] == [
        ("ROLLBACK_COMPLETE", {}, True)
    ]
    assert {c["logical_id"] for c in docs[0]["changes"]} == set(template["Resources"])


def _existing_stack_change_set(stub: Stubber, described: dict[str, Any]) -> None:
    stub.add_response("describe_stacks", describe_stack("UPDATE_COMPLETE"), {"StackName": STACK})
    stub.add_response(
        "create_change_set",
        {"Id": CS_ID, "StackId": STACK_ID},
        {
            "StackName": STACK,
            "ChangeSetName": ANY,
            "TemplateBody": ANY,
            "ChangeSetType": "UPDATE",
            "Description": ANY,
            "Capabilities": ANY,
            "Tags": ANY,
        },
    )
    stub.add_response("describe_change_set", described, {"ChangeSetName": CS_ID})


def test_failing_change_set_exits_1_with_the_reason_and_is_deleted(
    cfn: Any, template: dict[str, Any]
) -> None:
    reason = "Template error: instance of Fn::GetAtt references undefined resource Foo"
    with Stubber(cfn) as stub:
        _existing_stack_change_set(
            stub,
            {"ChangeSetId": CS_ID, "StackId": STACK_ID, "Status": "FAILED", "StatusReason": reason},
        )
        stub.add_response("delete_change_set", {}, {"ChangeSetName": CS_ID})
        with pytest.raises(ProblemsFound) as exc:
            dp.diff(cfn, STACK, template, waits=NO_WAIT, service_name=NAMES.service_name)
        stub.assert_no_pending_responses()  # the failed change set was deleted
    assert exc.value.exit_code == 1
    assert reason in exc.value.message and STACK in exc.value.message


def test_refused_template_exits_1_naming_cloudformation_message(
    cfn: Any, template: dict[str, Any]
) -> None:
    msg = "Template format error: Unresolved resource dependencies [Foo] in the Resources block"
    with Stubber(cfn) as stub:
        stub.add_response(
            "describe_stacks", describe_stack("CREATE_COMPLETE"), {"StackName": STACK}
        )
        stub.add_client_error("create_change_set", "ValidationError", msg, 400)
        with pytest.raises(ProblemsFound) as exc:
            dp.diff(cfn, STACK, template, waits=NO_WAIT, service_name=NAMES.service_name)
    assert exc.value.exit_code == 1
    assert (
        "refused the change set" in exc.value.message and "Unresolved resource" in exc.value.message
    )


def _diff_of(cfn: Any, template: dict[str, Any], changes: list[dict[str, Any]]) -> dp.Plan:
    """``ecs-gpu diff`` of an existing stack whose change set lists ``changes``."""
    page = {
        "ChangeSetId": CS_ID,
        "StackId": STACK_ID,
        "Status": "CREATE_COMPLETE",
        "Changes": changes,
    }
    with Stubber(cfn) as stub:
        _existing_stack_change_set(stub, page)
        stub.add_response("describe_change_set", page, {"ChangeSetName": CS_ID})
        stub.add_response("delete_change_set", {}, {"ChangeSetName": CS_ID})
        p = deploy_cli.run_diff(
            cfn, STACK, template, waits=NO_WAIT, service_name=NAMES.service_name
        )
        stub.assert_no_pending_responses()
    return p


def test_asg_replacement_is_called_out_loudly(
    cfn: Any, template: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    changes = [
        {
            "Type": "Resource",
            "ResourceChange": {
                "Action": "Modify",
                "LogicalResourceId": "Asg",
                "PhysicalResourceId": NAMES.asg,
                "ResourceType": ASG_T,
                "Replacement": "True",
                "Scope": ["Properties"],
            },
        },
        {
            "Type": "Resource",
            "ResourceChange": {
                "Action": "Modify",
                "LogicalResourceId": "LogGroup",
                "ResourceType": "AWS::Logs::LogGroup",
                "Replacement": "False",
            },
        },
        {
            "Type": "Resource",
            "ResourceChange": {
                "Action": "Add",
                "LogicalResourceId": "Alarm",
                "ResourceType": "AWS::CloudWatch::Alarm",
            },
        },
    ]
    p = _diff_of(cfn, template, changes)
    assert p.summary.counts() == {"Modify": 2, "Add": 1}
    assert {k: [c.logical_id for c in v] for k, v in p.summary.disruptions().items()} == {
        "fleet-replaced": ["Asg"]
    }
    out = capsys.readouterr().out
    assert "REPLACEMENT: Asg" in out and "new GPU fleet" in out
    assert "REPLACEMENT: LogGroup" not in out


def test_a_new_launch_template_version_and_task_revision_are_called_out(
    cfn: Any, template: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # An upgrade that changes the host's user data and the task definition: no
    # resource is replaced, yet every GPU instance and every task is.
    detail = {
        "Target": {
            "Attribute": "Properties",
            "Name": "LaunchTemplate",
            "RequiresRecreation": "Never",
        },
        "Evaluation": "Dynamic",
        "ChangeSource": "ResourceAttribute",
        "CausingEntity": "LaunchTemplate.LatestVersionNumber",
    }
    changes = [
        {
            "Type": "Resource",
            "ResourceChange": {
                "Action": "Modify",
                "LogicalResourceId": "LaunchTemplate",
                "ResourceType": "AWS::EC2::LaunchTemplate",
                "Replacement": "False",
                "Scope": ["Properties"],
            },
        },
        {
            "Type": "Resource",
            "ResourceChange": {
                "Action": "Modify",
                "LogicalResourceId": "Asg",
                "PhysicalResourceId": NAMES.asg,
                "ResourceType": ASG_T,
                "Replacement": "False",
                "Scope": ["Properties"],
                "Details": [detail],
            },
        },
        {
            "Type": "Resource",
            "ResourceChange": {
                "Action": "Modify",
                "LogicalResourceId": "TaskDef",
                "ResourceType": "AWS::ECS::TaskDefinition",
                "Replacement": "True",
                "Scope": ["Properties"],
            },
        },
    ]
    p = _diff_of(cfn, template, changes)
    assert {k: [c.logical_id for c in v] for k, v in p.summary.disruptions().items()} == {
        "fleet-refreshed": ["LaunchTemplate", "Asg"],
        "tasks-replaced": ["TaskDef"],
    }
    out = " ".join(capsys.readouterr().out.split())
    assert "FLEET REFRESH: LaunchTemplate (AWS::EC2::LaunchTemplate), Asg" in out
    assert "replaces every GPU instance" in out
    assert "TASK RESTART: TaskDef (AWS::ECS::TaskDefinition)" in out
    assert "REPLACEMENT" not in out
    listed = {c["logical_id"]: c["disruption"] for c in p.summary.as_list()}
    assert listed == {
        "LaunchTemplate": "fleet-refreshed",
        "Asg": "fleet-refreshed",
        "TaskDef": "tasks-replaced",
    }


def test_new_subnets_for_the_group_are_a_fleet_refresh_of_the_moved_instances(
    cfn: Any, template: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # A new [network] subnet_ids, as DescribeChangeSet lists it: the group and
    # the service change in place, no launch template version.
    changes = [
        modify_change("Asg", ASG_T, "VPCZoneIdentifier"),
        modify_change("Service", "AWS::ECS::Service", "NetworkConfiguration"),
    ]
    p = _diff_of(cfn, template, changes)
    assert {k: [c.logical_id for c in v] for k, v in p.summary.disruptions().items()} == {
        "fleet-rebalanced": ["Asg"],
        "tasks-replaced": ["Service"],
    }
    out = " ".join(capsys.readouterr().out.split())
    assert "FLEET REFRESH: Asg (AWS::AutoScaling::AutoScalingGroup)" in out
    # At least the instances the new zones leave out, possibly every one: AWS
    # does not say which, so the line says both.
    assert "Availability Zone the group no longer uses" in out
    assert "possibly every GPU instance" in out
    listed = {c["logical_id"]: c["disruption"] for c in p.summary.as_list()}
    assert listed == {"Asg": "fleet-rebalanced", "Service": "tasks-replaced"}


def test_a_stuck_delete_is_explained_not_waited_on_forever(cfn: Any) -> None:
    """A delete already in progress, still DELETE_IN_PROGRESS after --stuck-after."""
    stuck = [
        ev(0, STACK, STACK_T, "DELETE_IN_PROGRESS", "User Initiated"),
        ev(5, "Service", "AWS::ECS::Service", "DELETE_IN_PROGRESS"),
        ev(60, "Service", "AWS::ECS::Service", "DELETE_COMPLETE"),
        ev(61, "Asg", ASG_T, "DELETE_IN_PROGRESS"),
    ]
    stuck[3]["PhysicalResourceId"] = NAMES.asg
    ticks = iter([0.0, 600.0, 1200.0])
    waits = dp.Waits(poll_s=0, sleep=lambda s: None, clock=lambda: next(ticks))
    with Stubber(cfn) as stub:
        stub.add_response(
            "describe_stacks", describe_stack("DELETE_IN_PROGRESS"), {"StackName": STACK}
        )
        stub.add_response(
            "list_stack_resources",
            {
                "StackResourceSummaries": [
                    {
                        "LogicalResourceId": "Asg",
                        "PhysicalResourceId": NAMES.asg,
                        "ResourceType": ASG_T,
                        "LastUpdatedTimestamp": T0,
                        "ResourceStatus": "DELETE_IN_PROGRESS",
                    }
                ]
            },
            {"StackName": STACK},
        )
        for n in (2, 4):  # polls at 600 s and 1200 s, then it gives up
            stub.add_response(
                "describe_stacks", describe_stack("DELETE_IN_PROGRESS"), {"StackName": STACK_ID}
            )
            page = list(reversed(stuck[:n]))
            stub.add_response(
                "describe_stack_events", {"StackEvents": page}, {"StackName": STACK_ID}
            )
        with pytest.raises(ProblemsFound) as exc:
            # No DeleteStack, UpdateService or SetInstanceProtection: a delete is
            # already running, so destroy only follows it (other clients unused).
            destroy_cli.run_destroy(
                cfn,
                None,
                None,
                None,
                NAMES,  # type: ignore[arg-type]
                yes=True,
                waits=waits,
                task_timeout_s=1,
                stuck_after_s=1200,
            )
        stub.assert_no_pending_responses()
    msg = exc.value.message
    assert exc.value.exit_code == 1
    assert "still DELETE_IN_PROGRESS after 1200 s" in msg
    assert f"Asg ({ASG_T}, {NAMES.asg})" in msg and "protected from scale-in" in msg
    assert "Service" not in msg.split("stops waiting here")[1].split("Follow")[0]
    assert "describe-stack-events --stack-name vllm-g5" in msg
