"""aws/destroy: the steps before DeleteStack, against moto."""

from __future__ import annotations

import json

import boto3

from cli.conftest import Clients
from cli.test_deploy import record_calls
from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import destroy as ds


def test_unprotect_handles_more_than_one_batch(clients: Clients) -> None:
    ec2 = boto3.Session().client("ec2")
    lt = ec2.create_launch_template(
        LaunchTemplateName="lt", LaunchTemplateData={"ImageId": "ami-12c6146b"}
    )["LaunchTemplate"]["LaunchTemplateId"]
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
