"""aws/destroy: the steps before DeleteStack, against moto."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from cli.conftest import Clients
from cli.stacks import record_calls
from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import destroy as ds
from ecs_gpu.contracts.naming import Names


def _launch_template(name: str) -> str:
    ec2 = boto3.Session().client("ec2")
    return str(
        ec2.create_launch_template(
            LaunchTemplateName=name, LaunchTemplateData={"ImageId": "ami-12c6146b"}
        )["LaunchTemplate"]["LaunchTemplateId"]
    )


def _start_delete(
    clients: Clients, deployed: ds.Deployed, on_step: Any = lambda step: None
) -> set[str]:
    """start_delete on a stand-in stack "svc" (the delete itself is not what is tested)."""
    body = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}}}
    clients.cfn.create_stack(StackName="svc", TemplateBody=json.dumps(body))
    state = dp.stack_state(clients.cfn, "svc")
    assert state is not None
    return ds.start_delete(
        clients.ecs,
        clients.autoscaling,
        clients.appscaling,
        clients.cfn,
        ds.Target("svc", state, [], deployed),
        task_timeout_s=0,
        waits=dp.Waits(poll_s=0, sleep=lambda s: None),
        on_step=on_step,
    )


def test_unprotect_handles_more_than_one_batch(clients: Clients) -> None:
    lt = _launch_template("lt")
    clients.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName="big",
        LaunchTemplate={"LaunchTemplateId": lt},
        MinSize=0,
        MaxSize=60,
        DesiredCapacity=60,
        AvailabilityZones=["us-east-1a"],
        NewInstancesProtectedFromScaleIn=True,
    )
    calls = record_calls(clients.autoscaling)
    ids = ds.unprotect_instances(clients.autoscaling, "big")
    assert len(ids) == 60
    assert calls.count("SetInstanceProtection") == 2  # 50 + 10: the API takes 50 at most
    group = clients.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=["big"])[
        "AutoScalingGroups"
    ][0]
    assert not any(i["ProtectedFromScaleIn"] for i in group["Instances"])
    assert group["NewInstancesProtectedFromScaleIn"] is False


def test_wait_for_tasks_is_bounded_and_sees_them_stop(clients: Clients) -> None:
    """moto's ListTasks ignores serviceName (it never starts service tasks), so the
    task here is started with RunTask on a registered container instance."""
    ecs = clients.ecs
    ecs.create_cluster(clusterName="c")
    ec2 = boto3.Session().client("ec2")
    instance = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)["Instances"][0]
    doc = json.dumps({"instanceId": instance["InstanceId"]})
    ecs.register_container_instance(cluster="c", instanceIdentityDocument=doc)
    ecs.register_task_definition(
        family="t", containerDefinitions=[{"name": "a", "image": "x", "memory": 128}]
    )
    task = ecs.run_task(cluster="c", taskDefinition="t", count=1)["tasks"][0]["taskArn"]
    ticks = iter(range(0, 1000, 10))
    waits = dp.Waits(poll_s=0, sleep=lambda s: None, clock=lambda: float(next(ticks)))
    polls: list[int] = []
    alive = ds.wait_tasks_stopped(
        ecs, "c", "svc", timeout_s=30, waits=waits, on_poll=lambda n, t: polls.append(n)
    )
    assert alive == [task] and polls == [1, 1, 1]  # polled at 10, 20, 30 s, then gave up
    ecs.stop_task(cluster="c", task=task)
    assert ds.wait_tasks_stopped(ecs, "c", "svc", timeout_s=30, waits=waits) == []


def _protected_group(clients: Clients, name: str, lt: str, count: int) -> None:
    clients.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchTemplate={"LaunchTemplateId": lt},
        MinSize=0,
        MaxSize=count,
        DesiredCapacity=count,
        AvailabilityZones=["us-east-1a"],
        NewInstancesProtectedFromScaleIn=True,
    )


def test_deployed_tells_the_spot_group_from_the_on_demand_one() -> None:
    names = Names("svc")
    asg = "AWS::AutoScaling::AutoScalingGroup"
    # The stack lists its resources in any order: the Spot group is the one of its name.
    rows = [
        ds.StackResource("SpotAsg", asg, names.spot_asg, "CREATE_COMPLETE"),
        ds.StackResource("Asg", asg, names.asg, "CREATE_COMPLETE"),
    ]
    d = ds.Deployed.of(rows, names)
    assert (d.asg, d.spot_asg, d.groups) == (names.asg, names.spot_asg, [names.asg, names.spot_asg])
    alone = ds.Deployed.of(rows[1:], names)
    assert (alone.spot_asg, alone.groups) == (None, [names.asg])


def test_destroy_unprotects_both_groups_before_the_delete(clients: Clients) -> None:
    lt = _launch_template("lt")
    names = Names("svc")
    _protected_group(clients, names.asg, lt, 2)
    _protected_group(clients, names.spot_asg, lt, 3)
    steps: list[ds.Step] = []
    _start_delete(clients, ds.Deployed("svc", "svc", names.asg, names.spot_asg), steps.append)
    assert [(s.kind, s.group, s.count) for s in steps] == [
        ("unprotected", names.asg, 2),
        ("unprotected", names.spot_asg, 3),
    ]
    groups = clients.autoscaling.describe_auto_scaling_groups(
        AutoScalingGroupNames=[names.asg, names.spot_asg]
    )["AutoScalingGroups"]
    assert len(groups) == 2
    assert not any(i["ProtectedFromScaleIn"] for g in groups for i in g["Instances"])


def test_ctrl_c_between_protection_batches_names_the_instances_already_unprotected(
    clients: Clients, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The half-done message's set-instance-protection command is for what destroy did:
    stopped after the first batch, it names that batch's instance and not the next."""
    from ecs_gpu.errors import EXIT_INTERRUPTED, EcsGpuError

    lt = _launch_template("lt2")
    names = Names("svc")
    _protected_group(clients, names.asg, lt, 2)
    monkeypatch.setattr(ds, "PROTECTION_BATCH", 1)
    sent: list[list[str]] = []

    def ctrl_c_on_the_second(params: dict[str, Any], **_: Any) -> None:
        sent.append(list(params["InstanceIds"]))
        if len(sent) == 2:
            raise KeyboardInterrupt

    clients.autoscaling.meta.events.register(
        "before-parameter-build.auto-scaling.SetInstanceProtection", ctrl_c_on_the_second
    )
    with pytest.raises(EcsGpuError) as exc:
        _start_delete(clients, ds.Deployed(None, None, names.asg))
    assert exc.value.exit_code == EXIT_INTERRUPTED
    (first,), (second,) = sent
    assert f"--instance-ids {first} --protected-from-scale-in" in exc.value.message
    assert second not in exc.value.message
