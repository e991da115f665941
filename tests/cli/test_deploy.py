"""Deploy, diff and destroy against moto in server mode (127.0.0.1, via AWS_ENDPOINT_URL).

What moto models: CloudFormation change sets and stack events (one
CREATE/UPDATE/DELETE pair per operation, no per-resource events), ECS
clusters/services/task definitions, ASGs with scale-in protection,
launch templates, IAM, logs. What moto's CloudFormation skips (it logs "No
Moto CloudFormation support for ..."): AWS::ECS::CapacityProvider,
ClusterCapacityProviderAssociations, ApplicationAutoScaling::*,
CloudWatch::Alarm. Where a test needs one of those (the scalable target),
it creates it through the service API and says so.

Deploy and diff run on the real synthesized template of
examples/g5-vllm.toml (``g5_for_moto``: the one GetAtt moto cannot resolve,
on the skipped alarm, is replaced by a literal ARN). The full destroy runs
on a small stand-in with the same cluster/service/ASG/launch template,
because moto cannot delete the VPC the real stack creates.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from rich.console import Console

from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import destroy as ds
from ecs_gpu.aws import follow as fl
from ecs_gpu.cli import deploy as deploy_cli
from ecs_gpu.cli import destroy as destroy_cli
from ecs_gpu.cli import main, options, prelude, render
from ecs_gpu.design import redeploy
from ecs_gpu.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_PROBLEMS,
    ProblemsFound,
    StackInterrupted,
)
from ecs_gpu.spec import load_spec
from support import aws_cli_model
from support.moto_cfn import ami_parameters, for_moto

from .conftest import EXAMPLE_SPEC, NAMES, NO_WAIT, Clients, moto_skips

STACK = NAMES.stack


def record_calls(*clients: Any) -> list[str]:
    """Names of the API operations the clients send, in order (a botocore event hook)."""
    calls: list[str] = []

    def hook(model: Any, **_: Any) -> None:
        calls.append(model.name)

    for c in clients:
        c.meta.events.register("before-call", hook)
    return calls


def deploy(c: Clients, template: dict[str, Any]) -> fl.FollowResult:
    result = deploy_cli.run_deploy(
        c.cfn,
        STACK,
        template,
        yes=True,
        waits=NO_WAIT,
        service_name=NAMES.service_name,
        parameters=ami_parameters(template),
    )
    assert result is not None
    return result


def test_moto_skips_the_types_this_file_says_it_does(g5_template: dict[str, Any]) -> None:
    types = {r["Type"] for r in g5_template["Resources"].values()}
    assert {t for t in types if moto_skips(t)} == {
        "AWS::ECS::CapacityProvider",
        "AWS::ECS::ClusterCapacityProviderAssociations",
        "AWS::ApplicationAutoScaling::ScalableTarget",
        "AWS::ApplicationAutoScaling::ScalingPolicy",
        "AWS::CloudWatch::Alarm",
    }


def test_deploy_creates_the_stack_and_reports_success(
    clients: Clients, g5_for_moto: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The real synthesized g5 template, deployed into moto."""
    calls = record_calls(clients.cfn)
    result = deploy(clients, g5_for_moto)
    assert result.ok and result.status == "CREATE_COMPLETE"
    stack = clients.cfn.describe_stacks(StackName=STACK)["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    # What moto models of the GPU stack exists under the names from naming.py.
    group = clients.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[NAMES.asg])[
        "AutoScalingGroups"
    ][0]
    assert group["NewInstancesProtectedFromScaleIn"] is True
    assert group["Instances"] and group["Instances"][0]["InstanceType"] == "g5.xlarge"
    svc = clients.ecs.describe_services(cluster=NAMES.cluster, services=[NAMES.service])
    assert svc["services"][0]["status"] == "ACTIVE"
    resources = {r.resource_type for r in ds.stack_resources(clients.cfn, STACK)}
    assert {"AWS::ECS::Service", "AWS::EC2::LaunchTemplate", "AWS::CloudWatch::Dashboard"} <= (
        resources
    )
    assert "ExecuteChangeSet" in calls and "DeleteStack" not in calls
    out = capsys.readouterr().out
    assert "new stack" in out and f"Stack {STACK} is CREATE_COMPLETE" in out


def _diff(clients: Clients, template: dict[str, Any]) -> dp.Plan:
    """``ecs-gpu diff`` of ``template`` against the stack, with its AMI parameter."""
    return deploy_cli.run_diff(
        clients.cfn,
        STACK,
        template,
        waits=NO_WAIT,
        service_name=NAMES.service_name,
        parameters=ami_parameters(template),
    )


def test_diff_on_unchanged_spec_reports_no_changes(
    clients: Clients, g5_for_moto: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    deploy(clients, g5_for_moto)
    capsys.readouterr()
    p = _diff(clients, g5_for_moto)
    assert p.summary.empty and not p.new_stack
    assert f"Stack {STACK}: no changes." in capsys.readouterr().out
    # The preview left no change set behind.
    left = clients.cfn.list_change_sets(StackName=STACK)["Summaries"]
    assert [s["ExecutionStatus"] for s in left] == ["EXECUTE_COMPLETE"]


def test_diff_of_a_new_host_script_says_every_gpu_instance_is_replaced(
    clients: Clients, g5_for_moto: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # An upgrade that changes the host's user data: no resource is replaced, but
    # the launch template's new version refreshes the fleet. (moto's change set
    # has no Details or Replacement: the launch template's Modify is enough.)
    deploy(clients, g5_for_moto)
    capsys.readouterr()
    changed = copy.deepcopy(g5_for_moto)
    (lt,) = [r for r in changed["Resources"].values() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    lt["Properties"]["LaunchTemplateData"]["UserData"] = {"Fn::Base64": "#!/bin/bash\ntrue\n"}
    p = _diff(clients, changed)
    assert "fleet-refreshed" in p.summary.disruptions()
    out = " ".join(capsys.readouterr().out.split())
    assert "FLEET REFRESH:" in out and "replaces every GPU instance" in out


def test_cli_diff_of_a_new_stack_lists_the_synthesized_resources(
    aws: str,
    g5_template: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A pipe or CI log: 80 columns, not a terminal.
    monkeypatch.setattr(render, "console", Console(width=80))
    code = main(["diff", str(EXAMPLE_SPEC)])
    out = capsys.readouterr().out
    assert code == 0
    n = len(g5_template["Resources"])
    assert f"Stack {STACK} (new stack): {n} to add, 0 to modify, 0 to remove" in out
    # Every type and logical id whole, on one line with its row (none cut at 80 columns).
    assert "…" not in out
    lines = out.splitlines()
    for logical, r in g5_template["Resources"].items():
        assert any(r["Type"] in line and logical in line for line in lines), (logical, out)
    # Nothing was created: no change set, no REVIEW_IN_PROGRESS stack.
    with pytest.raises(Exception, match="does not exist"):
        boto3.Session().client("cloudformation").describe_stacks(StackName=STACK)


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


def test_diff_shows_a_modified_and_an_added_resource_then_deletes_the_change_set(
    clients: Clients, template: dict[str, Any], fresh_template: dict[str, Any]
) -> None:
    deploy(clients, template)
    fresh_template["Resources"]["LogGroup"]["Properties"]["RetentionInDays"] = 7
    fresh_template["Resources"]["HostLogs"] = {
        "Type": "AWS::Logs::LogGroup",
        "Properties": {"LogGroupName": NAMES.host_log_group},
    }
    p = dp.diff(clients.cfn, STACK, fresh_template, waits=NO_WAIT, service_name=NAMES.service_name)
    assert {(c.action, c.logical_id) for c in p.summary.changes} == {
        ("Modify", "LogGroup"),
        ("Add", "HostLogs"),
    }
    assert p.change_set_id is None
    left = clients.cfn.list_change_sets(StackName=STACK)["Summaries"]
    assert len(left) == 1  # only the executed one from the deploy


def test_deploy_declined_changes_nothing(
    clients: Clients, template: dict[str, Any], fresh_template: dict[str, Any]
) -> None:
    deploy(clients, template)
    fresh_template["Resources"]["LogGroup"]["Properties"]["RetentionInDays"] = 7
    calls = record_calls(clients.cfn)
    result = deploy_cli.run_deploy(
        clients.cfn,
        STACK,
        fresh_template,
        yes=False,
        waits=NO_WAIT,
        ask=lambda *a, **k: False,
        service_name=NAMES.service_name,
    )
    assert result is None
    assert "ExecuteChangeSet" not in calls and "DeleteChangeSet" in calls
    assert clients.cfn.describe_stacks(StackName=STACK)["Stacks"][0]["StackStatus"] == (
        "CREATE_COMPLETE"
    )


def test_deploy_without_tty_or_yes_refuses_with_exit_2(
    clients: Clients, template: dict[str, Any]
) -> None:
    # pytest's stdin is not a terminal: confirm() must refuse rather than hang.
    with pytest.raises(Exception) as exc:
        deploy_cli.run_deploy(
            clients.cfn, STACK, template, yes=False, waits=NO_WAIT, service_name=NAMES.service_name
        )
    assert getattr(exc.value, "exit_code", None) == 2
    assert "--yes" in str(exc.value)
    with pytest.raises(Exception, match="does not exist"):
        clients.cfn.describe_stacks(StackName=STACK)


def test_ctrl_c_while_following_leaves_the_stack_and_says_how_to_follow(
    clients: Clients, template: dict[str, Any]
) -> None:
    executed: list[bool] = []

    def mark(**_: Any) -> None:
        executed.append(True)

    def interrupt(**_: Any) -> None:
        # The user presses Ctrl-C while deploy polls the stack after executing.
        if executed:
            raise KeyboardInterrupt

    clients.cfn.meta.events.register("after-call.cloudformation.ExecuteChangeSet", mark)
    clients.cfn.meta.events.register("after-call.cloudformation.DescribeStacks", interrupt)
    calls = record_calls(clients.cfn)
    with pytest.raises(StackInterrupted) as exc:
        deploy_cli.run_deploy(
            clients.cfn,
            STACK,
            template,
            yes=True,
            waits=NO_WAIT,
            region="us-east-1",
            service_name=NAMES.service_name,
        )
    clients.cfn.meta.events.unregister("after-call.cloudformation.DescribeStacks", interrupt)
    assert exc.value.exit_code == 130
    assert "aws cloudformation describe-stack-events --stack-name vllm-g5" in exc.value.message
    assert "leaves the stack as CloudFormation has it" in exc.value.message
    assert "ExecuteChangeSet" in calls and "DeleteStack" not in calls
    status = clients.cfn.describe_stacks(StackName=STACK)["Stacks"][0]["StackStatus"]
    assert status == "CREATE_COMPLETE"  # moto finishes at once; the stack is untouched


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


def test_deploy_of_a_change_updates_the_stack_and_shows_only_new_events(
    clients: Clients, template: dict[str, Any], fresh_template: dict[str, Any]
) -> None:
    deploy(clients, template)
    fresh_template["Resources"]["LogGroup"]["Properties"]["RetentionInDays"] = 7
    result = deploy(clients, fresh_template)
    assert result.status == "UPDATE_COMPLETE"
    # Only this run's events: moto writes UPDATE_IN_PROGRESS then UPDATE_COMPLETE.
    assert [e.status for e in result.events] == ["UPDATE_IN_PROGRESS", "UPDATE_COMPLETE"]
    # moto does not apply a log group's new retention in place (AWS does);
    # what it models is the stack's template, which is now the new one.
    body = clients.cfn.get_template(StackName=STACK)["TemplateBody"]
    body = json.loads(body) if isinstance(body, str) else body
    assert body["Resources"]["LogGroup"]["Properties"]["RetentionInDays"] == 7


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


# The stack's outputs as CloudFormation would list them. moto builds a stack's
# outputs when its change set is created, from the empty REVIEW_IN_PROGRESS
# template, and never after ExecuteChangeSet; so DescribeStacks is answered
# AWS-shaped here, with the outputs the stand-in's names give.
OUTPUTS = {
    "ClusterName": NAMES.cluster,
    "ServiceName": NAMES.service,
    "AutoScalingGroupName": NAMES.asg,
}


def _answer_outputs(events: Any) -> None:
    def add(parsed: dict[str, Any], **_: Any) -> None:
        for st in parsed.get("Stacks", []):
            if st["StackStatus"].endswith("_COMPLETE") and not st.get("Outputs"):
                st["Outputs"] = [{"OutputKey": k, "OutputValue": v} for k, v in OUTPUTS.items()]

    events.register("after-call.cloudformation.DescribeStacks", add)


def test_cli_deploy_prints_the_outputs_and_json_has_changes_status_and_outputs(
    aws: str,
    template: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The real command; synth gives the stand-in, DescribeStacks lists its outputs."""
    tpl = template
    monkeypatch.setattr(prelude, "synth_template", lambda *_, **__: tpl)
    real = options.make_session

    def make(profile: str | None = None, region: str | None = None) -> boto3.Session:
        s = real(profile, region)
        _answer_outputs(s.events)
        return s

    monkeypatch.setattr(options, "make_session", make)
    code = main(["deploy", str(EXAMPLE_SPEC), "--yes", "--json"])
    out, err = capsys.readouterr()
    assert code == 0
    doc = json.loads(out)  # standard output carries the JSON alone
    assert doc["stack"] == STACK and doc["new_stack"] is True
    assert doc["status"] == "CREATE_COMPLETE"
    assert {c["logical_id"] for c in doc["changes"]} == set(tpl["Resources"])
    assert {c["action"] for c in doc["changes"]} == {"Add"}
    want = OUTPUTS
    assert doc["outputs"] == want
    # The person reading stderr sees the outputs, as `cdk deploy` prints them.
    assert f"Outputs of stack {STACK}:" in err
    for key, value in want.items():
        assert f"{key} = {value}" in err


def test_deploy_prints_the_outputs_when_it_finishes(
    clients: Clients, template: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    tpl = template
    _answer_outputs(clients.cfn.meta.events)
    docs: list[dict[str, Any]] = []
    result = deploy_cli.run_deploy(
        clients.cfn,
        STACK,
        tpl,
        yes=True,
        waits=NO_WAIT,
        service_name=NAMES.service_name,
        report=docs.append,
    )
    assert result is not None and [o.key for o in result.outputs] == list(OUTPUTS)
    out = capsys.readouterr().out
    assert out.index(f"Stack {STACK} is CREATE_COMPLETE") < out.index("Outputs of stack")
    assert f"ClusterName = {NAMES.cluster}" in out
    # Unchanged: nothing to deploy, and the outputs and status are still reported.
    again = deploy_cli.run_deploy(
        clients.cfn,
        STACK,
        tpl,
        yes=True,
        waits=NO_WAIT,
        service_name=NAMES.service_name,
        report=docs.append,
    )
    assert again is None
    assert "Nothing to deploy." in capsys.readouterr().out
    assert docs[1]["changes"] == [] and docs[1]["status"] == "CREATE_COMPLETE"
    assert docs[1]["outputs"] == docs[0]["outputs"] == {o.key: o.value for o in result.outputs}


def test_cli_diff_json_is_the_change_list(
    aws: str, g5_template: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_file = tmp_path / "changes.json"
    code = main(["diff", str(EXAMPLE_SPEC), "--json", str(out_file)])
    out = capsys.readouterr().out
    assert code == 0
    doc = json.loads(out_file.read_text())
    assert doc["stack"] == STACK and doc["new_stack"] is True
    assert {c["logical_id"] for c in doc["changes"]} == set(g5_template["Resources"])
    assert all(c["action"] == "Add" and c["replaces"] is False for c in doc["changes"])
    assert doc["forces_new_deployment"] is False  # a new stack: CloudFormation creates it
    # With a file the table still prints, and says where the JSON went.
    assert "(new stack)" in out and f"change list JSON: {out_file}" in out


def _running_spot(g5_for_moto: dict[str, Any], spot_weight: int) -> dict[str, Any]:
    """The real g5 template as a stack whose service runs a Spot strategy.

    A real Spot template is over the inline limit, and moto skips the capacity
    providers anyway: the Spot item names its provider. moto's ECS service
    ignores the strategy and ForceNewDeployment (tests/aws/test_deploy.py), so
    these check what deploy decides and what CloudFormation is sent and keeps.
    """
    running = copy.deepcopy(g5_for_moto)
    svc = redeploy.service_properties(running)
    assert svc is not None
    od = svc["CapacityProviderStrategy"][0]
    svc["CapacityProviderStrategy"] = [  # type: ignore[index]
        {**od, "Base": 1, "Weight": 100 - spot_weight},
        {"CapacityProvider": NAMES.spot_capacity_provider, "Base": 0, "Weight": spot_weight},
    ]
    return running


def _synth_told(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The nonces deploy passes to synth (the real synth, for moto)."""
    told: list[str | None] = []
    real = prelude.synth_template

    def synth(spec: Any, stack: str | None = None, *, nonce: str | None = None) -> Any:
        told.append(nonce)
        return for_moto(real(spec, stack, nonce=nonce))

    monkeypatch.setattr(prelude, "synth_template", synth)
    return told


def _service_of_stack(clients: Clients) -> dict[str, Any]:
    body = clients.cfn.get_template(StackName=STACK)["TemplateBody"]
    props = redeploy.service_properties(json.loads(body) if isinstance(body, str) else body)
    assert props is not None
    return dict(props)


DEPLOY = ["deploy", str(EXAMPLE_SPEC), "--yes", "--skip-preflight", "--poll-interval", "0.01"]


def test_removing_spot_that_still_has_tasks_is_refused_before_synth(
    clients: Clients,
    g5_for_moto: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    deploy(clients, _running_spot(g5_for_moto, 70))
    told = _synth_told(monkeypatch)
    for cmd in (DEPLOY, ["diff", str(EXAMPLE_SPEC)]):
        assert main(cmd) == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert f"{EXAMPLE_SPEC}: [capacity.spot] is removed" in " ".join(err.split())
        assert "spot_percent = 0" in err and "replaces every running task" not in err
    assert told == []


def test_removing_drained_spot_forces_the_new_deployment_once(
    clients: Clients,
    g5_for_moto: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    """The Spot weight is 0 (spot_percent = 0 deployed): the plain spec's deploy forces."""
    deploy(clients, _running_spot(g5_for_moto, 0))
    told = _synth_told(monkeypatch)
    out = tmp_path / "deploy.json"
    assert main([*DEPLOY, "--json", str(out)]) == 0
    err = capsys.readouterr().err
    plain_nonce = redeploy.strategy_nonce(load_spec(EXAMPLE_SPEC))
    assert told == [plain_nonce] and "replaces every running task" in err
    assert json.loads(out.read_text())["forces_new_deployment"] is True
    assert _service_of_stack(clients)[redeploy.FORCE_KEY] == {
        "EnableForceNewDeployment": True,
        "ForceNewDeploymentNonce": plain_nonce,
    }
    # The next deploy of the same spec forces nothing: the strategy is the deployed one.
    assert main([*DEPLOY, "--json", str(out)]) == 0
    assert told == [plain_nonce, None] and "replaces every running task" not in (
        capsys.readouterr().err
    )
    assert json.loads(out.read_text())["forces_new_deployment"] is False
    assert redeploy.FORCE_KEY not in _service_of_stack(clients)


def test_a_foreign_or_busy_stack_is_refused_before_its_template_is_read(
    clients: Clients,
    fresh_template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The ownership and state refusals come first: no GetTemplate, no note."""
    spot = [{"CapacityProvider": NAMES.spot_capacity_provider, "Base": 0, "Weight": 70}]
    fresh_template["Resources"]["Service"]["Properties"]["CapacityProviderStrategy"] = spot
    # Someone else's stack by the same name (the stand-in: no ecs-gpu tag or description).
    clients.cfn.create_stack(StackName=STACK, TemplateBody=json.dumps(fresh_template))
    calls: list[str] = []
    real_session = options.make_session

    def make(profile: str | None = None, region: str | None = None) -> boto3.Session:
        s = real_session(profile, region)
        s.events.register("before-call.cloudformation", lambda model, **_: calls.append(model.name))
        return s

    monkeypatch.setattr(options, "make_session", make)
    told = _synth_told(monkeypatch)
    assert main(DEPLOY) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "not made by ecs-gpu" in err and "[capacity.spot]" not in err
    assert "GetTemplate" not in calls and told == []
    # A stack whose rollback failed: the state refusal, not the removal's.
    busy = dp.StackState("id", STACK, "UPDATE_ROLLBACK_FAILED", "", tags={dp.TAG_SPEC: STACK})
    monkeypatch.setattr(dp, "stack_state", lambda *_: busy)
    assert main(DEPLOY) == EXIT_PROBLEMS
    err = " ".join(capsys.readouterr().err.split())
    assert "UPDATE_ROLLBACK_FAILED" in err and "--resources-to-skip" in err
    assert "GetTemplate" not in calls and told == []


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


def _ctrl_c_on(client: Any, operation: str) -> None:
    """Ctrl-C arrives while ``operation`` is being sent (a botocore before-call hook)."""

    def ctrl_c(**_: Any) -> None:
        raise KeyboardInterrupt

    client.meta.events.register(
        f"before-call.{client.meta.service_model.service_id.hyphenize()}.{operation}", ctrl_c
    )


def test_ctrl_c_after_yes_while_a_new_stacks_change_set_computes_deletes_it(
    clients: Clients, template: dict[str, Any]
) -> None:
    _ctrl_c_on(clients.cfn, "DescribeChangeSet")
    calls = record_calls(clients.cfn)
    with pytest.raises(StackInterrupted) as exc:
        deploy(clients, template)
    assert exc.value.exit_code == EXIT_INTERRUPTED
    assert "nothing was deployed and the change set is deleted" in exc.value.message
    assert "REVIEW_IN_PROGRESS with no resources" in exc.value.message
    assert "ExecuteChangeSet" not in calls and "DeleteChangeSet" in calls
    assert clients.cfn.list_change_sets(StackName=STACK)["Summaries"] == []


def test_ctrl_c_after_yes_before_an_update_executes_leaves_the_stack_unchanged(
    clients: Clients, template: dict[str, Any], fresh_template: dict[str, Any]
) -> None:
    deploy(clients, template)
    fresh_template["Resources"]["LogGroup"]["Properties"]["RetentionInDays"] = 7
    _ctrl_c_on(clients.cfn, "DescribeStackEvents")  # the events read before ExecuteChangeSet
    calls = record_calls(clients.cfn)
    with pytest.raises(StackInterrupted) as exc:
        deploy(clients, fresh_template)
    assert f"stack {STACK} is unchanged" in exc.value.message
    assert "ExecuteChangeSet" not in calls and "DeleteChangeSet" in calls
    # Only the first deploy's change set is left, executed (moto keeps it).
    left = clients.cfn.list_change_sets(StackName=STACK)["Summaries"]
    assert [c["ExecutionStatus"] for c in left] == ["EXECUTE_COMPLETE"]
    status = clients.cfn.describe_stacks(StackName=STACK)["Stacks"][0]["StackStatus"]
    assert status == "CREATE_COMPLETE"


def test_ctrl_c_while_execute_change_set_is_sent_says_the_deployment_may_have_started(
    clients: Clients, template: dict[str, Any]
) -> None:
    _ctrl_c_on(clients.cfn, "ExecuteChangeSet")
    with pytest.raises(StackInterrupted) as exc:
        deploy(clients, template)
    assert "may have started" in exc.value.message
    assert f"describe-stack-events --stack-name {STACK}" in exc.value.message
