# ruff: noqa: E501  (the CASES table reads best one case per line)
"""The healthy snapshot's breakages, one per check: each changes the one field a real failure changes.

Shared by the per-module check tests (test_<module>.py) and the snapshot tests,
which re-validate every broken snapshot against botocore's service models.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from typing import Any

from ecs_gpu.checks.doctor import run_checks
from ecs_gpu.checks.snapshot import COLLECTION_KEY
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.design.paths import wake
from support.snapshot_variants import (
    FAST_ALARM,
    SCALE_IN_ALARM,
    WARM_IID,
    as_concurrency,
    as_spot,
    as_warm_pool,
)
from support.snapshots import IID, NAMES, asg_average_spec, probe_output, validate_snapshot
from support.zero_alarms import wake_metrics

Snap = dict[str, Any]


def _probe(s: Snap, **override: tuple[str, int] | None) -> None:
    s["host_probes"][IID]["StandardOutputContent"] = probe_output(**override)


def _ci(s: Snap) -> dict[str, Any]:
    ci: dict[str, Any] = s["container_instances"][0]
    return ci


def no_instances(s: Snap) -> None:
    s["container_instances"] = []


def agent_disconnected(s: Snap) -> None:
    _ci(s)["agentConnected"] = False


def no_gpu_registered(s: Snap) -> None:
    for key in ("registeredResources", "remainingResources"):
        _ci(s)[key] = [r for r in _ci(s)[key] if r["name"] != "GPU"]


def td_without_gpu(s: Snap) -> None:
    s["task_definitions"][0]["containerDefinitions"][0]["resourceRequirements"] = []


def gpus_exhausted(s: Snap) -> None:
    svc = s["services"][0]
    svc["desiredCount"], svc["pendingCount"] = 2, 1


def typo_constraint(s: Snap) -> None:
    s["services"][0]["placementConstraints"][0]["expression"] = (
        "attribute:ecs.instance-type == g5.xlarg"
    )


def managed_scaling_off(s: Snap) -> None:
    cp = s["capacity_providers"][0]["autoScalingGroupProvider"]
    cp["managedScaling"]["status"] = "DISABLED"


def stockout(s: Snap) -> None:
    s["scaling_activities"].insert(
        0,
        {
            "ActivityId": "5e3b1c2d-aaaa-4bbb-8ccc-0d1e2f3a4b5c",
            "AutoScalingGroupName": NAMES.asg,
            "Description": "Launching a new EC2 instance.  Status Reason: We currently do not "
            "have sufficient g5.xlarge capacity in the Availability Zone you requested "
            "(us-east-1a). Launching EC2 instance failed.",
            "Cause": "At 2026-11-29T17:00:10Z an instance was started in response to a difference "
            "between desired and actual capacity, increasing the capacity from 1 to 2.",
            "StartTime": "2026-11-29T17:00:10+00:00",
            "EndTime": "2026-11-29T17:00:11+00:00",
            "StatusCode": "Failed",
            "StatusMessage": "We currently do not have sufficient g5.xlarge capacity in the "
            "Availability Zone you requested (us-east-1a). Our system will be working on "
            "provisioning additional capacity. (Service: AmazonEC2; Status Code: 500; Error "
            "Code: InsufficientInstanceCapacity)",
            "Progress": 100,
        },
    )


def asg_at_max(s: Snap) -> None:
    gpus_exhausted(s)
    g = s["auto_scaling_groups"][0]
    g["DesiredCapacity"] = g["MaxSize"] = 1


def no_service(s: Snap) -> None:
    s["services"] = []


def unable_to_place(s: Snap) -> None:
    s["services"][0]["events"].insert(
        0,
        {
            "id": "e3b1c2d4-0000-4000-8000-000000000003",
            "createdAt": "2026-11-29T17:05:00+00:00",
            "message": f"(service {NAMES.service}) was unable to place a task because no "
            "container instance met all of its requirements. The closest matching "
            "(container-instance 5c6e0f1d2a3b4c5d) has insufficient GPU resource available. "
            "For more information, see the Troubleshooting section.",
        },
    )


def tasks_crash_loop(s: Snap) -> None:
    s["services"][0]["runningCount"] = 0
    for n in range(3):
        t = copy.deepcopy(s["tasks"][0])
        t["taskArn"] = t["taskArn"][:-1] + str(n)
        t["lastStatus"] = t["desiredStatus"] = "STOPPED"
        t["stopCode"] = "EssentialContainerExited"
        t["stoppedReason"] = "Essential container in task exited"
        t["stoppedAt"] = f"2026-11-29T16:5{n}:00+00:00"
        t["containers"][0].update(
            lastStatus="STOPPED",
            exitCode=1,
            reason="CannotStartContainerError: Error response from daemon: failed to create "
            "task for container: failed to create shim task: OCI runtime create failed: "
            "nvidia-container-cli: initialization error: nvml error: driver not loaded",
        )
        s["tasks"].append(t)


def metric_missing(s: Snap) -> None:
    for r in s["metric_data"]:
        r["Timestamps"], r["Values"] = [], []


def _reservation(s: Snap) -> dict[str, Any]:
    r: dict[str, Any] = next(
        r for r in s["metric_data"] if r["Label"] == gpu_metric.RESERVATION_METRIC
    )
    return r


def reservation_missing(s: Snap) -> None:
    # The agent writes, but the service's only task stopped: ECS publishes no
    # GPUReservation for a cluster without a RUNNING task.
    _reservation(s)["Timestamps"], _reservation(s)["Values"] = [], []
    svc = s["services"][0]
    svc["runningCount"] = 0
    svc["deployments"][0]["runningCount"] = 0


def alarm_no_data(s: Snap) -> None:
    s["alarms"][0]["StateValue"] = "INSUFFICIENT_DATA"
    s["alarms"][0]["StateReason"] = "Insufficient Data: 3 datapoints were unknown."


def missing_alarm_firing(s: Snap) -> None:
    s["alarms"][2]["StateValue"] = "ALARM"


def _gpu_cms(s: Snap) -> dict[str, Any]:
    cms: dict[str, Any] = s["scaling_policies"][0]["TargetTrackingScalingPolicyConfiguration"][
        "CustomizedMetricSpecification"
    ]
    return cms


def policy_wrong_metric(s: Snap) -> None:
    # The reference module's 8.3.0 bug (a series nobody wrote), in the
    # metric-math form the default gpu_metric = "task-gpus" deploys.
    util = _gpu_cms(s)["Metrics"][0]["MetricStat"]["Metric"]
    util["Namespace"] = "ECS/GPU"
    util["Dimensions"] = [{"Name": "ClusterName", "Value": NAMES.cluster}]


def as_asg_average(s: Snap) -> None:
    """The policy and its alarms as gpu_metric = "asg-average" deploys them (plain form)."""
    cfg = s["scaling_policies"][0]["TargetTrackingScalingPolicyConfiguration"]
    cfg["CustomizedMetricSpecification"] = asg_average_spec()
    for a in s["alarms"][:2]:
        del a["Metrics"]
        a.update(
            MetricName=gpu_metric.UTILIZATION,
            Namespace=gpu_metric.NAMESPACE,
            Statistic=gpu_metric.STATISTIC,
            Dimensions=gpu_metric.dimensions(NAMES.asg),
            Period=gpu_metric.PERIOD_S,
        )


CR_ID = "cr-0123456789abcdef0"


def lt_targets_reservation(s: Snap) -> None:
    # What this tool deployed before the group took over the targeting.
    v2 = next(v for v in s["launch_template_versions"] if v["VersionNumber"] == 2)
    v2["LaunchTemplateData"]["CapacityReservationSpecification"] = {
        "CapacityReservationTarget": {"CapacityReservationId": CR_ID}
    }


def scaling_suspended(s: Snap) -> None:
    s["scalable_targets"][0]["SuspendedState"]["DynamicScalingOutSuspended"] = True


def service_scaling_failed(s: Snap) -> None:
    a = s["service_scaling_activities"][0]
    a["StatusCode"] = "Failed"
    a["StatusMessage"] = "Failed to set desired count to 2. Reason: AccessDeniedException."


def host_cpu_policy(s: Snap) -> None:
    s["asg_policies"].append(
        {
            "AutoScalingGroupName": NAMES.asg,
            "PolicyName": "cpu-target",
            "PolicyARN": "arn:aws:autoscaling:us-east-1:123456789012:scalingPolicy:9:"
            f"autoScalingGroupName/{NAMES.asg}:policyName/cpu-target",
            "PolicyType": "TargetTrackingScaling",
            "TargetTrackingConfiguration": {
                "PredefinedMetricSpecification": {
                    "PredefinedMetricType": "ASGAverageCPUUtilization"
                },
                "TargetValue": 60.0,
            },
            "Alarms": [],
            "Enabled": True,
        }
    )


def old_launch_template(s: Snap) -> None:
    s["auto_scaling_groups"][0]["Instances"][0]["LaunchTemplate"]["Version"] = "1"


def probe_undeliverable(s: Snap) -> None:
    inv = s["host_probes"][IID]
    inv["Status"] = inv["StatusDetails"] = "Undeliverable"
    inv["StandardOutputContent"] = ""
    inv["ResponseCode"] = -1


def no_nvidia_smi(s: Snap) -> None:
    _probe(s, nvidia_smi_path=("", 1), nvidia_smi=("nvidia-smi: command not found", 127))


def agent_cannot_stat(s: Snap) -> None:
    _probe(
        s,
        agent_log=(
            "2026-11-29T17:00:01Z E! Error running agent: validate input plugin nvidia_smi "
            "failed because of Cannot get file's stat /usr/bin/nvidia-smi: no such file or "
            "directory",
            0,
        ),
    )


def restart_loop(s: Snap) -> None:
    # docker ps -a from the field report (seeds/000, Theory 1).
    lines = [
        "Exited (1) 29 seconds ago     :: ecs-svc-cw-agent-daemon-9-cloudwatch-agent-d4a6909b8fdd",
        "Exited (1) 40 seconds ago     :: ecs-svc-cw-agent-daemon-9-cloudwatch-agent-8ec2b4b8cfa6",
        "Exited (1) 51 seconds ago     :: ecs-svc-cw-agent-daemon-9-cloudwatch-agent-90ff96dec88e",
        "Exited (1) About a minute ago :: ecs-svc-cw-agent-daemon-9-cloudwatch-agent-fcc89297d9e0",
        "Up 18 minutes :: ecs-vllm-g5-3-vllm-g5-e2b5c8d9a1f0e7c6d101",
    ]
    _probe(s, containers=("\n".join(lines), 0))


def putmetricdata_denied(s: Snap) -> None:
    _probe(
        s,
        agent_log=(
            "2026-11-29T17:00:01Z E! cloudwatch: code: AccessDenied, message: User: "
            "arn:aws:sts::123456789012:assumed-role/vllm-g5-instance/i-0ad34247c1f0e9b21 is not "
            "authorized to perform: cloudwatch:PutMetricData because no identity-based policy "
            "allows the cloudwatch:PutMetricData action, original error: <nil>",
            0,
        ),
    )


def ecs_inactive(s: Snap) -> None:
    _probe(s, ecs_active=("inactive", 3))


def agent_inactive(s: Snap) -> None:
    _probe(s, agent_active=("failed", 3))


def agent_config_missing(s: Snap) -> None:
    _probe(
        s,
        agent_config=(
            f"cat: {gpu_metric.AGENT_CONFIG_PATH}: No such file or directory",
            1,
        ),
    )


def no_nvidia_runtime(s: Snap) -> None:
    _probe(s, docker_info=(" Runtimes: io.containerd.runc.v2 runc\n Default Runtime: runc", 0))


def env_inert(s: Snap) -> None:
    s["task_definitions"][0]["containerDefinitions"].append(
        {
            "name": "cloudwatch-agent",
            "image": "public.ecr.aws/cloudwatch-agent/cloudwatch-agent:latest",
            "essential": False,
            "environment": [
                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
                {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"},
            ],
        }
    )


def gpu_support_off(s: Snap) -> None:
    _probe(
        s,
        ecs_config=(
            f"# /etc/ecs/ecs.config\nECS_CLUSTER={NAMES.cluster}\n"
            "# /var/lib/ecs/ecs.config (absent)",
            0,
        ),
    )


def wrong_cluster(s: Snap) -> None:
    _probe(
        s,
        ecs_config=(
            "# /etc/ecs/ecs.config\nECS_CLUSTER=default\nECS_ENABLE_GPU_SUPPORT=true",
            0,
        ),
    )


def delete_stuck(s: Snap) -> None:
    s["stacks"][0]["StackStatus"] = "DELETE_IN_PROGRESS"
    s["stacks"][0]["DeletionTime"] = "2026-11-29T16:10:00+00:00"  # 50 min before collection


def _concurrency_series(s: Snap) -> dict[str, Any]:
    series: dict[str, Any] = next(r for r in s["metric_data"] if r["Id"] == "c0")
    return series


def concurrency_metric_missing(s: Snap) -> None:
    as_concurrency(s)
    _concurrency_series(s)["Timestamps"], _concurrency_series(s)["Values"] = [], []


def sidecar_missing(s: Snap) -> None:
    as_concurrency(s)
    td = s["task_definitions"][0]
    td["containerDefinitions"] = td["containerDefinitions"][:1]


def _concurrency_cms(s: Snap) -> dict[str, Any]:
    policy = next(p for p in s["scaling_policies"] if p["PolicyName"] == "concurrency")
    cms: dict[str, Any] = policy["TargetTrackingScalingPolicyConfiguration"][
        "CustomizedMetricSpecification"
    ]
    return cms


def concurrency_policy_other_series(s: Snap) -> None:
    # The 8.3.0 bug on the concurrency signal: the policy reads a series nobody writes.
    as_concurrency(s)
    _concurrency_cms(s)["Dimensions"] = [
        {"Name": "ClusterName", "Value": "other"},
        {"Name": "ServiceName", "Value": "other"},
    ]


def _fast_alarm(s: Snap) -> dict[str, Any]:
    alarm: dict[str, Any] = next(a for a in s["alarms"] if a["AlarmName"] == FAST_ALARM)
    return alarm


def fast_alarm_other_threshold(s: Snap) -> None:
    as_concurrency(s)
    _fast_alarm(s)["Threshold"] = 24.0


def scale_in_alarm_other_threshold(s: Snap) -> None:
    as_concurrency(s)
    alarm = next(a for a in s["alarms"] if a["AlarmName"] == SCALE_IN_ALARM)
    alarm["Threshold"] = 2.0


def zero_without_wake(s: Snap) -> None:
    # MinCapacity 0 behind a load balancer, deployed without the wake alarm (by hand,
    # or by an ecs-gpu older than scale to zero): at zero nothing starts a task.
    s["scalable_targets"][0]["MinCapacity"] = 0
    s["services"][0]["loadBalancers"] = [
        {
            "targetGroupArn": "arn:aws:elasticloadbalancing:us-east-1:123456789012:"
            "targetgroup/vllm-g5/0123456789abcdef",
            "containerName": "app",
            "containerPort": 8000,
        }
    ]


def _hook(s: Snap) -> dict[str, Any]:
    hook: dict[str, Any] = s["lifecycle_hooks"][0]
    return hook


def no_warm_pool(s: Snap) -> None:
    # The spec has [capacity.warm_pool]; the group has none (deleted, or never deployed).
    as_warm_pool(s)
    group = s["auto_scaling_groups"][0]
    del group["WarmPoolConfiguration"], group["WarmPoolSize"]
    s["warm_pools"] = {NAMES.asg: {"Instances": []}}
    s["instances"] = s["instances"][:1]


def no_launch_hook(s: Snap) -> None:
    as_warm_pool(s)
    s["lifecycle_hooks"] = []


def warm_instance_stuck(s: Snap) -> None:
    # Launched 40 min before collection, still warming: the hook's heartbeat is 2015 s.
    as_warm_pool(s)
    s["warm_pools"][NAMES.asg]["Instances"][0]["LifecycleState"] = "Warmed:Pending:Wait"
    s["instances"][1].update(
        State={"Code": 16, "Name": "running"}, LaunchTime="2026-11-29T16:20:00+00:00"
    )


def _spot_group(s: Snap) -> dict[str, Any]:
    group: dict[str, Any] = s["auto_scaling_groups"][1]
    return group


def spot_interrupted(s: Snap) -> None:
    # EC2 reclaimed a Spot instance: the group found it terminated and replaced it.
    as_spot(s)
    s["scaling_activities"].append(
        {
            "ActivityId": "0c3e5a7b-9d1f-4b2c-8e6a-1f3d5b7c9e0a",
            "AutoScalingGroupName": _spot_group(s)["AutoScalingGroupName"],
            "Description": "Terminating EC2 instance: i-0c4d5e6f7a8b9c0d1",
            "Cause": "At 2026-11-29T16:20:00Z an instance was taken out of service in response "
            "to an EC2 health check indicating it has been terminated or stopped.",
            "StartTime": "2026-11-29T16:20:05+00:00",
            "EndTime": "2026-11-29T16:21:00+00:00",
            "StatusCode": "Successful",
            "Progress": 100,
        }
    )


def strategy_without_spot(s: Snap) -> None:
    # The spec has [capacity.spot]; the service still places on the On-Demand provider alone.
    as_spot(s)
    s["services"][0]["capacityProviderStrategy"] = s["services"][0]["capacityProviderStrategy"][:1]


def spot_without_draining(s: Snap) -> None:
    # The Spot group's template is the On-Demand one's user data: no drain flag.
    from ecs_gpu import host
    from support.snapshot_variants import concurrency_spec

    as_spot(s)
    plain = host.cloud_config(concurrency_spec())
    s["launch_template_versions"][-1]["LaunchTemplateData"]["UserData"] = base64.b64encode(
        plain.encode()
    ).decode()


WORKDAYS = "cron(0 8 ? * MON-FRI *)"
NIGHTS = "cron(0 20 ? * MON-FRI *)"


def scheduled_action(name: str, when: str, lo: int | None, hi: int | None) -> dict[str, Any]:
    """A scheduled action as DescribeScheduledActions lists it (CDK names it
    <construct><id>-<hash>; infra/scaling.py's id is Schedule<index>)."""
    bounds = {k: v for k, v in (("MinCapacity", lo), ("MaxCapacity", hi)) if v is not None}
    rid = NAMES.scalable_target_resource_id
    return {
        "ScheduledActionName": name,
        "ScheduledActionARN": "arn:aws:autoscaling:us-east-1:123456789012:scheduledAction:"
        f"0b5c0e2a-6f0e-4d7a-9c1e-2f4b8a1d3c5e:resource/ecs/{rid}:scheduledActionName/{name}",
        "ServiceNamespace": "ecs",
        "Schedule": when,
        "ResourceId": rid,
        "ScalableDimension": "ecs:service:DesiredCount",
        "ScalableTargetAction": bounds,
        "CreationTime": "2026-11-29T16:00:00+00:00",
    }


def with_schedule(s: Snap) -> None:
    """The spec has a workday schedule (1-4 tasks at 08:00, 0 at 20:00), deployed."""
    s[COLLECTION_KEY]["target"]["schedule"] = [
        {"schedule": WORKDAYS, "min_tasks": 1, "max_tasks": 4},
        {"schedule": NIGHTS, "min_tasks": 0, "max_tasks": 0},
    ]
    s["scheduled_actions"] = [
        scheduled_action("vllm-g5-Schedule0-1A2B", WORKDAYS, 1, 4),
        scheduled_action("vllm-g5-Schedule1-3C4D", NIGHTS, 0, 0),
    ]


def schedule_stale(s: Snap) -> None:
    # The spec raised the workday MaxCapacity to 4; the deployment still has 2.
    with_schedule(s)
    s["scheduled_actions"][0]["ScalableTargetAction"]["MaxCapacity"] = 2


def spot_shortfall_firing(s: Snap) -> None:
    """No Spot capacity: the Spot group's shortfall alarm in ALARM, heard by nobody."""
    as_spot(s)
    (a,) = [a for a in s["alarms"] if a["AlarmName"] == NAMES.spot_capacity_shortfall_alarm]
    a["StateValue"] = "ALARM"
    a["StateReason"] = "Threshold Crossed: 10 datapoints were greater than or equal to 1.0."


def concurrency_alarm_no_data(s: Snap) -> None:
    as_concurrency(s)
    for a in s["alarms"]:
        if a["AlarmName"].startswith("TargetTracking-"):
            a["StateValue"] = "INSUFFICIENT_DATA"
            a["StateReason"] = "Insufficient Data: 3 datapoints were unknown."


# (check id, breakage, evidence kind, evidence field contains, evidence value contains, fix contains)
WAKE_ALARM = f"{NAMES.service}-WakeAlarm-1A2B3C4D5E6F"
# The load balancer's full name both alarms read (app/<name>/<id>).
LOAD_BALANCER = "app/vllm-g5/0123456789abcdef"


def with_wake(s: Snap, running_stat: str = wake.RUNNING_STATISTIC) -> None:
    """MinCapacity 0 behind a load balancer with the wake policy and alarm infra/scaling.py
    writes (zero_without_wake, then what the template adds; no sleep path)."""
    zero_without_wake(s)
    svc_id = NAMES.scalable_target_resource_id
    arn = (
        "arn:aws:autoscaling:us-east-1:123456789012:scalingPolicy:9:"
        f"resource/ecs/{svc_id}:policyName/wake"
    )
    alarm_arn = f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{WAKE_ALARM}"
    s["scaling_policies"].append(
        {
            "PolicyARN": arn,
            "PolicyName": "wake",
            "ServiceNamespace": "ecs",
            "ResourceId": svc_id,
            "ScalableDimension": "ecs:service:DesiredCount",
            "PolicyType": "StepScaling",
            "StepScalingPolicyConfiguration": {
                "AdjustmentType": wake.ADJUSTMENT_TYPE,
                "StepAdjustments": [{"MetricIntervalLowerBound": 0.0, "ScalingAdjustment": 1}],
                "Cooldown": 780,
                "MetricAggregationType": "Maximum",
            },
            "Alarms": [{"AlarmName": WAKE_ALARM, "AlarmARN": alarm_arn}],
            "CreationTime": s["scaling_policies"][0]["CreationTime"],
        }
    )

    s["alarms"].append(
        {
            "AlarmName": WAKE_ALARM,
            "AlarmArn": alarm_arn,
            "ActionsEnabled": True,
            "AlarmActions": [arn],
            "StateValue": "OK",
            "StateReason": "Threshold Crossed: no datapoints were received",
            "StateUpdatedTimestamp": s["alarms"][0]["StateUpdatedTimestamp"],
            "Metrics": wake_metrics(LOAD_BALANCER, NAMES.cluster, NAMES.service, running_stat),
            "EvaluationPeriods": wake.EVALUATION_PERIODS,
            "DatapointsToAlarm": wake.DATAPOINTS_TO_ALARM,
            "Threshold": wake.THRESHOLD,
            "ComparisonOperator": wake.COMPARISON,
            "TreatMissingData": "notBreaching",
        }
    )


CASES: list[tuple[str, Callable[[Snap], None], str, str, str, str]] = [
    ("ECS001", no_instances, "container_instances", "status", "none registered", "ECS_CLUSTER="),
    ("ECS002", agent_disconnected, "container_instances", "agentConnected", "False", "ECS agent"),
    ("ECS003", no_gpu_registered, "container_instances", "registeredResources", "MEMORY", "ECS_ENABLE_GPU_SUPPORT=true"),
    ("TD001", sidecar_missing, "task_definitions", "containerDefinitions[].name", NAMES.service, "[service.metrics]"),
    ("TD002", td_without_gpu, "task_definitions", "resourceRequirements", "[]", '"type": "GPU"'),
    ("PLC002", gpus_exhausted, "container_instances", "remainingResources[GPU]", IID, "reserved"),
    ("PLC001", typo_constraint, "services", "placementConstraints[0].expression", "g5.xlarg", "instance_type"),
    ("ASG008", managed_scaling_off, "capacity_providers", "managedScaling.status", "DISABLED", "status=ENABLED"),
    ("ASG001", stockout, "scaling_activities", "StatusMessage", "InsufficientInstanceCapacity", "Availability Zones"),
    ("ASG002", asg_at_max, "auto_scaling_groups", "DesiredCapacity/MaxSize", "1/1", "max_instances"),
    ("ASG009", spot_interrupted, "scaling_activities", "Cause", "terminated or stopped", "instance_types"),
    ("ASG005", no_warm_pool, "auto_scaling_groups", "WarmPoolConfiguration", "None", "aws autoscaling put-warm-pool"),
    ("ASG006", no_launch_hook, "lifecycle_hooks", "LifecycleHookName", "none", "complete-lifecycle-action fails"),
    ("ASG007", warm_instance_stuck, "warm_pools", f"Instances[{WARM_IID}].LifecycleState", "Warmed:Pending:Wait", "/var/log/ecs-gpu-host-setup.log"),
    ("SVC000", no_service, "services", "serviceName/status", "none", "ecs-gpu deploy"),
    ("SVC001", unable_to_place, "services", "message", "insufficient GPU", "ECS003"),
    ("SVC003", strategy_without_spot, "services", "capacityProviderStrategy", "base 1, weight 30", "Spot provider"),
    ("SVC002", tasks_crash_loop, "tasks", "containers[].exitCode/reason", "nvidia-container-cli", "--probe-hosts"),
    ("MET001", metric_missing, "metric_data", "Values", "[]", "--probe-hosts"),
    ("MET004", reservation_missing, "services", "runningCount", "0", "PLC002, SVC001, SVC002"),
    ("MET005", concurrency_metric_missing, "metric_data", "Values", "[]", "demand-metric container's log"),
    ("ALM001", alarm_no_data, "alarms", "StateValue", "INSUFFICIENT_DATA", "MET001"),
    ("ALM002", missing_alarm_firing, "alarms", "StateValue", "ALARM", "HOST checks"),
    ("ALM003", spot_shortfall_firing, "alarms", "StateValue", "ALARM", "on_demand_base"),
    ("SCL001", policy_wrong_metric, "scaling_policies", "CustomizedMetricSpecification", "ECS/GPU", "nobody writes"),
    ("SCL002", scaling_suspended, "scalable_targets", "SuspendedState", "'DynamicScalingOutSuspended': True", "DynamicScalingOutSuspended=false"),
    ("SCL003", service_scaling_failed, "service_scaling_activities", "StatusMessage", "AccessDenied", "StatusMessage"),
    ("SCL004", concurrency_policy_other_series, "scaling_policies", "CustomizedMetricSpecification", "'Value': 'other'", "ecs-gpu deploy"),
    ("SCL005", fast_alarm_other_threshold, "alarms", "Threshold", "24.0", "ecs-gpu deploy"),
    ("SCL006", host_cpu_policy, "asg_policies", "PredefinedMetricType", "ASGAverageCPUUtilization", "delete-policy"),
    ("SCL007", scale_in_alarm_other_threshold, "alarms", "Threshold", "2.0", "ecs-gpu deploy"),
    ("SCL008", zero_without_wake, "scalable_targets", "MinCapacity", "0", "min_tasks = 0 and a [load_balancer]"),
    ("SCL009", schedule_stale, "scheduled_actions", "ScalableTargetAction.MaxCapacity", "2", "ecs-gpu deploy"),
    ("SCL010", with_wake, "scaling_policies", "PolicyName", "wake", "ecs-gpu deploy"),
    ("LT002", lt_targets_reservation, "launch_template_versions", "CapacityReservationTarget", CR_ID, "capacity-reservations-first"),
    ("LT003", spot_without_draining, "launch_template_versions", "ECS_ENABLE_SPOT_INSTANCE_DRAINING", "not set", "ecs-gpu deploy"),
    ("LT001", old_launch_template, "auto_scaling_groups", "LaunchTemplate.Version", IID, '"ScaleInProtectedInstances": "Refresh"'),
    ("HOST000", probe_undeliverable, "host_probes", "Status", "Undeliverable", "AmazonSSMManagedInstanceCore"),
    ("HOST001", no_nvidia_smi, "host_probes", "nvidia_smi", "command not found", "GPU-optimized AMI"),
    ("HOST002", agent_cannot_stat, "host_probes", "agent_log", "Cannot get file's stat", "systemd"),
    ("HOST003", restart_loop, "host_probes", "cloudwatch-agent", "4 exits", "docker logs"),
    ("HOST004", putmetricdata_denied, "host_probes", "agent_log", "cloudwatch:PutMetricData", "cloudwatch:namespace"),
    ("HOST005", ecs_inactive, "host_probes", "is-active ecs", "inactive", "PartOf=docker.service"),
    ("HOST006", agent_inactive, "host_probes", "amazon-cloudwatch-agent", "failed", "fetch-config"),
    ("HOST007", agent_config_missing, "host_probes", gpu_metric.AGENT_CONFIG_PATH, "No such file", "fetch-config"),
    ("HOST008", no_nvidia_runtime, "host_probes", "Runtimes", "runc", "nvidia-container-toolkit"),
    ("HOST009", env_inert, "host_probes", "Default Runtime", "runc", "does nothing"),
    ("HOST010", gpu_support_off, "host_probes", "ECS_ENABLE_GPU_SUPPORT", "None", "ECS_ENABLE_GPU_SUPPORT=true"),
    ("HOST011", wrong_cluster, "host_probes", "ECS_CLUSTER", "default", f"ECS_CLUSTER={NAMES.cluster}"),
    ("STK001", delete_stuck, "auto_scaling_groups", "ProtectedFromScaleIn", IID, "--no-protected-from-scale-in"),
]  # fmt: skip


def _ids(s: Snap) -> set[str]:
    """The id of each finding doctor makes on ``s``."""
    return {f.id for f in run_checks(s).findings}


def _drop_policy(s: Snap, name: str) -> None:
    """``s`` without the scaling policy called ``name``."""
    s["scaling_policies"] = [p for p in s["scaling_policies"] if p["PolicyName"] != name]


def _found(s: Snap, check_id: str) -> list[Any]:
    validate_snapshot(s)
    return [f for f in run_checks(s).findings if f.id == check_id]


def _status(s: Snap) -> dict[str, Any]:
    return {r.check.id: r for r in run_checks(s).results}
