"""Build a GPU deployment inside moto (server mode), plus hooks for what moto lacks.

Shared by tests/aws/test_facts.py and benchmarks/bench_doctor.py. What
moto 5.2 does not model, and how it is supplied here (each through a botocore
event hook on the session, so the collector's real clients and paginators
still make every call):

* ECS ``registeredResources`` / ``remainingResources`` are hard-coded to CPU,
  MEMORY, PORTS, PORTS_UDP: no GPU entry. ``gpu_hook`` adds the GPU STRINGSET
  (one UUID per instance, the shape the ECS agent registers) after
  DescribeContainerInstances; it also adds ``gpuIds`` to task containers.
* EC2 Auto Scaling DescribeScalingActivities always returns no activity.
  ``activities_hook`` returns recorded activities instead.
* Application Auto Scaling has no DescribeScalingActivities at all.
  ``activities_hook`` answers it too.
* ECS publishes no CloudWatch metric in moto (no AWS/ECS GPUReservation);
  ``build_world`` writes it with PutMetricData, as ECS would while a task runs.
* CloudWatch alarms never evaluate (their state only changes by
  SetAlarmState), which the world uses to put the missing-metric alarm in OK.
* EC2 Auto Scaling DescribeWarmPool returns the pool's configuration but never
  an instance (moto puts none in a pool) and ignores MaxRecords/NextToken.
  ``warm_pool_instances_hook`` adds the recorded ``WARM_POOL_INSTANCES``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.awsrequest import AWSResponse

from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.spec import Spec

NAMES = Names("vllm-g5")
REGION = "us-east-1"
# The spec this world is: one GPU per task on g5.xlarge, scaling on the task-gpus
# signal (what build_world's policy tracks). Written out, not read from
# examples/, so a change of the example's signal does not change the world.
SPEC_TOML = f"""
[service]
name = "{NAMES.service_name}"
image = "vllm/vllm-openai:v0.11.0"
gpus_per_task = 1
container_port = 8000

[capacity]
instance_type = "g5.xlarge"
min_instances = 1
max_instances = 4

[scaling]
signal = "task-gpus"
min_tasks = 1
max_tasks = 4
gpu_target_percent = 70
"""


# botocore event service ids -> boto3 client names, where they differ.
_SERVICE_NAMES = {
    "auto-scaling": "autoscaling",
    "application-auto-scaling": "application-autoscaling",
}


@dataclass
class CallCounter:
    """API calls and HTTP attempts (before-send: retries included) per operation."""

    calls: Counter[str] = field(default_factory=Counter)
    attempts: Counter[str] = field(default_factory=Counter)

    def install(self, session: boto3.Session) -> None:
        # before-parameter-build fires for every call, including the ones a gap
        # hook answers in before-call (which stops the before-call chain).
        session.events.register("before-parameter-build", self._call)
        session.events.register("before-send", self._send)

    def _call(self, event_name: str, **_: Any) -> None:
        self.calls[self._op(event_name)] += 1

    def _send(self, event_name: str, **_: Any) -> None:
        self.attempts[self._op(event_name)] += 1

    @staticmethod
    def _op(event_name: str) -> str:
        # "before-call.auto-scaling.DescribePolicies" -> "autoscaling:DescribePolicies"
        _, service_id, op = event_name.split(".", 2)
        return f"{_SERVICE_NAMES.get(service_id, service_id)}:{op}"

    @property
    def total(self) -> int:
        return sum(self.calls.values())


def _gpu_uuid(instance_id: str) -> str:
    h = instance_id.removeprefix("i-").ljust(20, "0")
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-000000000000"


def gpu_hook(parsed: dict[str, Any], **_: Any) -> None:
    """after-call ecs.DescribeContainerInstances: add the GPU moto does not register."""
    for ci in parsed.get("containerInstances", []):
        uuid = _gpu_uuid(ci.get("ec2InstanceId", "i-0"))
        gpu = {"name": "GPU", "type": "STRINGSET"}
        ci["registeredResources"].append({**gpu, "stringSetValue": [uuid]})
        # One GPU per g5.xlarge: reserved when a task runs there.
        free = [] if ci.get("runningTasksCount", 0) > 0 else [uuid]
        ci["remainingResources"].append({**gpu, "stringSetValue": free})


ASG_ACTIVITIES: list[dict[str, Any]] = []
SERVICE_ACTIVITIES: list[dict[str, Any]] = []
WARM_POOL_INSTANCES: list[dict[str, Any]] = []


def _ok() -> AWSResponse:
    return AWSResponse("http://127.0.0.1/stub", 200, {}, None)


def asg_activities_hook(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
    """before-call autoscaling.DescribeScalingActivities: moto always answers []."""
    return _ok(), {"Activities": list(ASG_ACTIVITIES)}


def service_activities_hook(**_: Any) -> tuple[AWSResponse, dict[str, Any]]:
    """before-call application-auto-scaling.DescribeScalingActivities: not in moto."""
    return _ok(), {"ScalingActivities": list(SERVICE_ACTIVITIES)}


def warm_pool_instances_hook(parsed: dict[str, Any], **_: Any) -> None:
    """after-call autoscaling.DescribeWarmPool: moto never puts an instance in a pool."""
    if "WarmPoolConfiguration" in parsed:
        parsed.setdefault("Instances", []).extend(WARM_POOL_INSTANCES)


def install_moto_gaps(session: boto3.Session) -> None:
    session.events.register("after-call.ecs.DescribeContainerInstances", gpu_hook)
    session.events.register(
        "before-call.auto-scaling.DescribeScalingActivities", asg_activities_hook
    )
    session.events.register(
        "before-call.application-auto-scaling.DescribeScalingActivities", service_activities_hook
    )
    session.events.register("after-call.auto-scaling.DescribeWarmPool", warm_pool_instances_hook)


def task_gpu_queries(*, period: int | None = None, names: Names = NAMES) -> list[dict[str, Any]]:
    """The task-gpus policy's metric math, as DescribeScalingPolicies returns it.

    With ``period`` the same queries in DescribeAlarms' shape (a CloudWatch
    MetricStat carries a Period; Application Auto Scaling's does not).
    """
    stat_extra = {} if period is None else {"Period": period}
    return [
        {
            "Id": gpu_metric.UTILIZATION_ID,
            "MetricStat": {
                "Metric": {
                    "Namespace": gpu_metric.NAMESPACE,
                    "MetricName": gpu_metric.UTILIZATION,
                    "Dimensions": gpu_metric.dimensions(names.asg),
                },
                "Stat": gpu_metric.STATISTIC,
                **stat_extra,
            },
            "ReturnData": False,
        },
        {
            "Id": gpu_metric.RESERVATION_ID,
            "MetricStat": {
                "Metric": {
                    "Namespace": gpu_metric.RESERVATION_NAMESPACE,
                    "MetricName": gpu_metric.RESERVATION_METRIC,
                    "Dimensions": gpu_metric.reservation_dimensions(names.cluster),
                },
                "Stat": "Average",
                **stat_extra,
            },
            "ReturnData": False,
        },
        {
            "Id": gpu_metric.TASK_GPU_EXPRESSION_ID,
            "Expression": gpu_metric.TASK_GPU_EXPRESSION,
            "Label": gpu_metric.TASK_GPU_LABEL,
            "ReturnData": True,
        },
    ]


def build_world(
    session: boto3.Session,
    *,
    instances: int = 1,
    tasks: int = 1,
    metric: bool = True,
    reservation: bool = True,
    names: Names = NAMES,
) -> dict[str, Any]:
    """Create cluster, ASG, capacity provider, service, policies, alarm and metric in moto.

    ``instances`` container instances are registered (one EC2 instance each:
    the ASG's, then extra run_instances); ``tasks`` tasks run on them.
    ``metric`` writes the agent's GPU series; ``reservation`` writes ECS's
    GPUReservation of the cluster, which moto never writes (it has no ECS
    metrics) and ECS writes only while a task runs, so only with ``tasks``.
    ``names`` are the physical names (a spec deployed as another stack has others).
    """
    ec2 = session.client("ec2")
    asg = session.client("autoscaling")
    ecs = session.client("ecs")
    aas = session.client("application-autoscaling")
    cw = session.client("cloudwatch")

    lt = ec2.create_launch_template(
        LaunchTemplateName=f"{names.service_name}-gpu",
        LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": "g5.xlarge"},
    )["LaunchTemplate"]
    asg.create_auto_scaling_group(
        AutoScalingGroupName=names.asg,
        LaunchTemplate={"LaunchTemplateId": lt["LaunchTemplateId"], "Version": "$Latest"},
        MinSize=1,
        MaxSize=4,
        DesiredCapacity=1,
        AvailabilityZones=[f"{REGION}a"],
        NewInstancesProtectedFromScaleIn=True,
    )
    groups = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[names.asg])
    group = groups["AutoScalingGroups"][0]
    ids = [i["InstanceId"] for i in group["Instances"]]
    if instances > len(ids):
        more = ec2.run_instances(
            ImageId="ami-12c6146b",
            InstanceType="g5.xlarge",
            MinCount=instances - len(ids),
            MaxCount=instances - len(ids),
        )["Instances"]
        ids += [i["InstanceId"] for i in more]

    ecs.create_cluster(clusterName=names.cluster)
    ecs.create_capacity_provider(
        name=names.capacity_provider,
        autoScalingGroupProvider={
            "autoScalingGroupArn": group["AutoScalingGroupARN"],
            "managedScaling": {"status": "ENABLED", "targetCapacity": 100},
            "managedTerminationProtection": "ENABLED",
        },
    )
    ecs.put_cluster_capacity_providers(
        cluster=names.cluster,
        capacityProviders=[names.capacity_provider],
        defaultCapacityProviderStrategy=[
            {"capacityProvider": names.capacity_provider, "weight": 1}
        ],
    )
    for iid in ids[:instances]:
        doc = json.dumps({"instanceId": iid, "instanceType": "g5.xlarge", "region": REGION})
        ecs.register_container_instance(cluster=names.cluster, instanceIdentityDocument=doc)
    td = ecs.register_task_definition(
        family=names.task_family,
        requiresCompatibilities=["EC2"],
        containerDefinitions=[
            {
                "name": names.service,
                "image": "vllm/vllm-openai:v0.11.0",
                "cpu": 1024,
                "memory": 1024,
                "essential": True,
                "resourceRequirements": [{"type": "GPU", "value": "1"}],
            }
        ],
    )["taskDefinition"]
    ecs.create_service(
        cluster=names.cluster,
        serviceName=names.service,
        taskDefinition=td["taskDefinitionArn"],
        desiredCount=1,
        launchType="EC2",
    )
    left = tasks
    while left > 0:
        n = min(10, left)  # RunTask starts at most 10 tasks per call
        ecs.run_task(
            cluster=names.cluster,
            taskDefinition=td["taskDefinitionArn"],
            count=n,
            launchType="EC2",
            group=f"service:{names.service}",
        )
        left -= n

    aas.register_scalable_target(
        ServiceNamespace="ecs",
        ResourceId=names.scalable_target_resource_id,
        ScalableDimension="ecs:service:DesiredCount",
        MinCapacity=1,
        MaxCapacity=4,
    )
    aas.put_scaling_policy(
        PolicyName="gpu",
        ServiceNamespace="ecs",
        ResourceId=names.scalable_target_resource_id,
        ScalableDimension="ecs:service:DesiredCount",
        PolicyType="TargetTrackingScaling",
        TargetTrackingScalingPolicyConfiguration={
            "TargetValue": 70.0,
            # The metric-math form gpu_metric = "task-gpus" (the default) deploys.
            "CustomizedMetricSpecification": {"Metrics": task_gpu_queries(names=names)},
        },
    )
    cw.put_metric_alarm(
        AlarmName=names.gpu_metric_missing_alarm,
        Namespace=gpu_metric.NAMESPACE,
        MetricName=gpu_metric.MEMORY_TOTAL,
        Dimensions=gpu_metric.dimensions(names.asg),
        Statistic="SampleCount",
        Period=300,
        EvaluationPeriods=3,
        Threshold=1.0,
        ComparisonOperator="LessThanThreshold",
        TreatMissingData="breaching",
    )
    cw.set_alarm_state(
        AlarmName=names.gpu_metric_missing_alarm, StateValue="OK", StateReason="datapoints arrive"
    )
    if metric:
        now = dt.datetime.now(dt.UTC)
        cw.put_metric_data(
            Namespace=gpu_metric.NAMESPACE,
            MetricData=[
                {
                    "MetricName": name,
                    "Dimensions": gpu_metric.dimensions(names.asg),
                    "Timestamp": now - dt.timedelta(minutes=m),
                    "Value": value,
                }
                for name, value in zip(
                    gpu_metric.METRIC_NAMES, (41.0, 17920.0, 23028.0), strict=True
                )
                for m in (1, 2, 3)
            ],
        )
    if reservation and tasks:
        now = dt.datetime.now(dt.UTC)
        cw.put_metric_data(
            Namespace=gpu_metric.RESERVATION_NAMESPACE,
            MetricData=[
                {
                    "MetricName": gpu_metric.RESERVATION_METRIC,
                    "Dimensions": gpu_metric.reservation_dimensions(names.cluster),
                    "Timestamp": now - dt.timedelta(minutes=m),
                    "Value": 100.0 * min(tasks, instances) / instances,
                    "Unit": "Percent",
                }
                for m in (1, 2, 3)
            ],
        )
    return {"instance_ids": ids[:instances], "launch_template_id": lt["LaunchTemplateId"]}


def add_warm_pool(
    session: boto3.Session,
    spec: Spec,
    *,
    names: Names = NAMES,
    hook: bool = True,
    pool: bool = True,
) -> None:
    """What the template adds for [capacity.warm_pool] (infra/capacity.py ``_warm_pool``).

    The pool (PutWarmPool, as AWS::AutoScaling::WarmPool) and the launch hook
    host.warm_pool_hook_name with heartbeat host.hook_timeout_s, for the spec
    deployed under ``names``; ``hook``/``pool`` False leave one out.
    """
    from ecs_gpu import host
    from ecs_gpu.infra.capacity import LAUNCHING

    wp = spec.capacity.warm_pool
    assert wp is not None
    deployed = spec.model_copy(
        update={"service": spec.service.model_copy(update={"name": names.service_name})}
    )
    asg = session.client("autoscaling")
    if pool:
        # What the template sets: max_prepared or its default (min_size).
        asg.put_warm_pool(
            AutoScalingGroupName=names.asg,
            MinSize=wp.min_size,
            PoolState=wp.pool_state,
            MaxGroupPreparedCapacity=wp.prepared_capacity,
        )
    if hook:
        asg.put_lifecycle_hook(
            AutoScalingGroupName=names.asg,
            LifecycleHookName=host.warm_pool_hook_name(deployed),
            LifecycleTransition=LAUNCHING,
            HeartbeatTimeout=host.hook_timeout_s(deployed),
            DefaultResult="CONTINUE",
        )
