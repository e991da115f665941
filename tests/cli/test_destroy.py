"""Destroy against moto in server mode (cli/destroy.py): scale to zero, unprotect, delete.

The full destroy runs on a small stand-in with the same cluster/service/ASG/launch
template, because moto cannot delete the VPC the real stack creates; on the real
synthesized template (``g5_for_moto``) DeleteStack is refused and destroy says so.
What moto's CloudFormation skips (the scalable target) a test creates through the
service API and says so.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from rich.console import Console

from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import destroy as ds
from ecs_gpu.aws import follow as fl
from ecs_gpu.cli import destroy as destroy_cli
from ecs_gpu.cli import options, render
from ecs_gpu.errors import (
    EXIT_INTERRUPTED,
    ProblemsFound,
)
from support import aws_cli_model

from .conftest import NAMES, NO_WAIT, Clients
from .stacks import STACK, deploy, record_calls


def test_destroy_of_the_real_stack_unprotects_its_instances_first(
    clients: Clients, g5_for_moto: dict[str, Any]
) -> None:
    """moto cannot delete the VPC this stack creates (its CloudFormation has no
    delete for the NAT gateway and route tables), so here DeleteStack is refused
    and destroy must say so (exit 1); the full delete runs on the stand-in below.
    What this checks on the real stack: its ASG, found by name, gets unprotected."""
    deploy(clients, g5_for_moto)
    before = clients.autoscaling.describe_auto_scaling_instances()["AutoScalingInstances"]
    assert [i["ProtectedFromScaleIn"] for i in before] == [True]
    with pytest.raises(ProblemsFound) as exc:
        destroy_cli.run_destroy(
            clients.cfn,
            clients.ecs,
            clients.autoscaling,
            clients.appscaling,
            NAMES,
            yes=True,
            waits=NO_WAIT,
            task_timeout_s=5,
            stuck_after_s=60,
        )
    assert exc.value.exit_code == 1
    assert "refused DeleteStack" in exc.value.message and "ecs-gpu destroy" in exc.value.message
    # The service is left at 0 with its scaling held: the message says so and how back.
    assert "suspended its autoscaling" in exc.value.message
    assert "--desired-count MIN_TASKS" in exc.value.message
    after = clients.autoscaling.describe_auto_scaling_instances()["AutoScalingInstances"]
    assert not any(i["ProtectedFromScaleIn"] for i in after)
    # Keeping the service means protecting the fleet again (managed termination
    # protection needs it), which a redeploy of the same template would not do.
    group = before[0]["AutoScalingGroupName"]
    assert (
        f"update-auto-scaling-group --auto-scaling-group-name {group} "
        "--new-instances-protected-from-scale-in" in exc.value.message
    )
    assert (
        f"set-instance-protection --auto-scaling-group-name {group} "
        f"--instance-ids {before[0]['InstanceId']} --protected-from-scale-in" in exc.value.message
    )
    assert aws_cli_model.problems(exc.value.message) == []  # every command runs as quoted
    svc = clients.ecs.describe_services(cluster=NAMES.cluster, services=[NAMES.service])
    assert svc["services"][0]["desiredCount"] == 0


def test_destroy_scales_to_zero_unprotects_then_deletes_the_stack(
    clients: Clients,
    template: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deploy(clients, template)
    physical = [r.physical_id for r in ds.stack_resources(clients.cfn, STACK)]
    monkeypatch.setattr(render, "console", Console(width=80))  # a pipe or CI log
    # moto's CloudFormation skips ApplicationAutoScaling::ScalableTarget, so
    # the test registers the target the stack would have, with the API.
    clients.appscaling.register_scalable_target(
        ServiceNamespace="ecs",
        ResourceId=NAMES.scalable_target_resource_id,
        ScalableDimension="ecs:service:DesiredCount",
        MinCapacity=1,
        MaxCapacity=4,
    )
    protected = clients.autoscaling.describe_auto_scaling_instances()["AutoScalingInstances"]
    assert protected and all(i["ProtectedFromScaleIn"] for i in protected)
    calls = record_calls(clients.cfn, clients.ecs, clients.autoscaling, clients.appscaling)
    result = destroy_cli.run_destroy(
        clients.cfn,
        clients.ecs,
        clients.autoscaling,
        clients.appscaling,
        NAMES,
        yes=True,
        waits=NO_WAIT,
        task_timeout_s=5,
        stuck_after_s=60,
    )
    assert result is not None and result.status == "DELETE_COMPLETE"
    with pytest.raises(Exception, match="does not exist"):
        clients.cfn.describe_stacks(StackName=STACK)
    # Everything that holds the delete up happened, and before DeleteStack.
    order = [
        "RegisterScalableTarget",
        "UpdateService",
        "ListTasks",
        "SetInstanceProtection",
        "DeleteStack",
    ]
    assert [calls.index(op) for op in order] == sorted(calls.index(op) for op in order)
    target = clients.appscaling.describe_scalable_targets(ServiceNamespace="ecs")[
        "ScalableTargets"
    ][0]
    assert target["MinCapacity"] == 0
    assert target["SuspendedState"]["DynamicScalingOutSuspended"] is True
    out = capsys.readouterr().out
    # The table names every resource whole at 80 columns (ARNs included).
    assert "…" not in out and all(p in out for p in physical if p)
    assert "Removed scale-in protection from 1 instance(s)" in out
    assert f"Stack {STACK} is DELETE_COMPLETE" in out


def test_destroy_of_a_missing_stack_is_a_no_op(clients: Clients) -> None:
    calls = record_calls(clients.cfn, clients.ecs)
    assert (
        destroy_cli.run_destroy(
            clients.cfn,
            clients.ecs,
            clients.autoscaling,
            clients.appscaling,
            NAMES,
            yes=True,
            waits=NO_WAIT,
            task_timeout_s=1,
            stuck_after_s=1,
        )
        is None
    )
    assert calls == ["DescribeStacks"]


def _destroy(c: Clients, **kw: Any) -> fl.FollowResult | None:
    return destroy_cli.run_destroy(
        c.cfn,
        c.ecs,
        c.autoscaling,
        c.appscaling,
        NAMES,
        waits=NO_WAIT,
        task_timeout_s=5,
        stuck_after_s=60,
        **kw,
    )


def _untouched(c: Clients, calls: list[str]) -> None:
    """Nothing a destroy changes was changed: only reads were sent."""
    assert [op for op in calls if not op.startswith(("Describe", "List"))] == []
    assert c.cfn.describe_stacks(StackName=STACK)["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    svc = c.ecs.describe_services(cluster=NAMES.cluster, services=[NAMES.service])
    assert svc["services"][0]["desiredCount"] == 1


def test_destroy_without_tty_or_yes_refuses_and_changes_nothing(
    clients: Clients, template: dict[str, Any]
) -> None:
    deploy(clients, template)
    calls = record_calls(clients.cfn, clients.ecs, clients.autoscaling, clients.appscaling)
    # pytest's stdin is not a terminal: no one can confirm, so no --yes means no.
    with pytest.raises(Exception) as exc:
        _destroy(clients, yes=False)
    assert getattr(exc.value, "exit_code", None) == 2
    assert "refusing to destroy without --yes" in str(exc.value)
    _untouched(clients, calls)


def test_destroy_declined_changes_nothing(clients: Clients, template: dict[str, Any]) -> None:
    deploy(clients, template)
    calls = record_calls(clients.cfn, clients.ecs, clients.autoscaling, clients.appscaling)
    assert _destroy(clients, yes=False, ask=lambda *a, **k: False) is None
    _untouched(clients, calls)


def test_ctrl_c_at_the_question_is_an_interruption_not_a_problem(
    clients: Clients, template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer

    def ctrl_c(*_: Any, **__: Any) -> bool:
        raise typer.Abort()  # what typer.confirm raises on Ctrl-C or Ctrl-D

    monkeypatch.setattr(options.sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(options.typer, "confirm", ctrl_c)
    deploy(clients, template)
    calls = record_calls(clients.cfn, clients.ecs, clients.autoscaling, clients.appscaling)
    with pytest.raises(Exception) as exc:
        _destroy(clients, yes=False)
    assert getattr(exc.value, "exit_code", None) == EXIT_INTERRUPTED
    assert "nothing was changed" in str(exc.value)
    _untouched(clients, calls)


def test_ctrl_c_while_tasks_stop_says_what_destroy_already_changed(
    clients: Clients, template: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    deploy(clients, template)

    def ctrl_c(*_: Any, **__: Any) -> list[str]:
        raise KeyboardInterrupt

    monkeypatch.setattr(ds, "wait_tasks_stopped", ctrl_c)
    with pytest.raises(Exception) as exc:
        _destroy(clients, yes=True)
    assert getattr(exc.value, "exit_code", None) == EXIT_INTERRUPTED
    assert "before the stack delete started" in str(exc.value)
    assert f"--service {NAMES.service} --desired-count" in str(exc.value)
    # Nothing was deleted: the stack is still there.
    assert clients.cfn.describe_stacks(StackName=STACK)["Stacks"][0]["StackStatus"] == (
        "CREATE_COMPLETE"
    )


def test_destroy_refuses_a_termination_protected_stack_before_changing_anything(
    clients: Clients, template: dict[str, Any]
) -> None:
    """DeleteStack on a protected stack fails and leaves it as it was; destroy's steps
    before it would already have stopped every task. moto neither returns
    EnableTerminationProtection nor enforces it, so DescribeStacks gets it as AWS sends it."""
    deploy(clients, template)

    def protected(parsed: dict[str, Any], **_: Any) -> None:
        for s in parsed.get("Stacks", []):
            s["EnableTerminationProtection"] = True

    clients.cfn.meta.events.register("after-call.cloudformation.DescribeStacks", protected)
    calls = record_calls(clients.cfn, clients.ecs, clients.autoscaling, clients.appscaling)
    with pytest.raises(ProblemsFound) as exc:
        _destroy(clients, yes=True)
    assert exc.value.exit_code == 1
    assert "termination protection" in exc.value.message
    assert f"--no-enable-termination-protection --stack-name {STACK}" in exc.value.message
    assert aws_cli_model.problems(exc.value.message) == []
    _untouched(clients, calls)


def test_destroy_of_a_stack_whose_service_is_already_inactive_goes_on_to_delete(
    clients: Clients, template: dict[str, Any]
) -> None:
    """A rerun after DELETE_FAILED: CloudFormation already deleted the service, which ECS
    keeps as INACTIVE and refuses to update. moto answers ServiceNotFound instead, so
    UpdateService gets ECS's answer (a 400 with ServiceNotActiveException)."""
    from botocore.awsrequest import AWSResponse

    deploy(clients, template)

    def not_active(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
        error = {"Code": "ServiceNotActiveException", "Message": "Service was not ACTIVE."}
        return AWSResponse("http://127.0.0.1/stub", 400, {}, None), {"Error": error}

    clients.ecs.meta.events.register("before-call.ecs.UpdateService", not_active)
    result = _destroy(clients, yes=True)
    assert result is not None and result.status == "DELETE_COMPLETE"


def test_destroy_leaves_alone_what_has_the_specs_names_but_is_not_in_the_stack(
    clients: Clients,
) -> None:
    """A stack whose create failed before its cluster, service and group existed: the
    ones of those names belong to something else, which destroy neither lists nor changes."""
    ec2 = boto3.Session().client("ec2")
    lt = ec2.create_launch_template(
        LaunchTemplateName="other-lt", LaunchTemplateData={"ImageId": "ami-12c6146b"}
    )["LaunchTemplate"]["LaunchTemplateId"]
    clients.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=NAMES.asg,
        LaunchTemplate={"LaunchTemplateId": lt},
        MinSize=1,
        MaxSize=1,
        AvailabilityZones=["us-east-1a"],
        NewInstancesProtectedFromScaleIn=True,
    )
    clients.ecs.create_cluster(clusterName=NAMES.cluster)
    # A stack ecs-gpu made (its tag) holding none of them.
    body = {"Resources": {"Logs": {"Type": "AWS::Logs::LogGroup"}}}
    clients.cfn.create_stack(
        StackName=STACK,
        TemplateBody=json.dumps(body),
        Tags=[{"Key": dp.TAG_SPEC, "Value": NAMES.service_name}],
    )
    calls = record_calls(clients.cfn, clients.ecs, clients.autoscaling, clients.appscaling)
    result = _destroy(clients, yes=True)
    assert result is not None and result.status == "DELETE_COMPLETE"
    assert not {"UpdateService", "RegisterScalableTarget", "UpdateAutoScalingGroup"} & set(calls)
    assert "SetInstanceProtection" not in calls
    group = clients.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[NAMES.asg])
    g = group["AutoScalingGroups"][0]
    assert g["NewInstancesProtectedFromScaleIn"] is True
    assert all(i["ProtectedFromScaleIn"] for i in g["Instances"])
