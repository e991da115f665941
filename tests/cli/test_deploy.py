"""Deploy and diff against moto in server mode (127.0.0.1, via AWS_ENDPOINT_URL).

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
on the skipped alarm, is replaced by a literal ARN). Destroy's tests are in
test_destroy.py.
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
from ecs_gpu.cli import deploy as deploy_cli
from ecs_gpu.cli import main, options, prelude, render
from ecs_gpu.design import redeploy
from ecs_gpu.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_PROBLEMS,
    StackInterrupted,
)
from ecs_gpu.spec import load_spec
from support.moto_cfn import ami_parameters, for_moto

from .conftest import EXAMPLE_SPEC, NAMES, NO_WAIT, Clients, moto_skips
from .stacks import STACK, deploy, record_calls


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
