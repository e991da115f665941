# ruff: noqa: E501  (the CASES table reads best one case per line)
"""Every check: quiet on the healthy snapshot, fires with the right evidence and fix when broken.

Each broken snapshot is the healthy one with the one field a real failure
changes, and is re-validated against botocore's service models, so a check
can only be triggered by a shape AWS actually returns.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from ecs_gpu import demand_metric, fast_path, gpu_metric
from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.doctor.checks import CHECKS, CHECKS_BY_ID, run_checks

from .snapshots import (
    FAST_ALARM,
    IID,
    NAMES,
    WARM_IID,
    as_concurrency,
    as_warm_pool,
    asg_average_spec,
    concurrency_spec,
    probe_output,
    validate_snapshot,
)

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


def concurrency_alarm_no_data(s: Snap) -> None:
    as_concurrency(s)
    for a in s["alarms"]:
        if a["AlarmName"].startswith("TargetTracking-"):
            a["StateValue"] = "INSUFFICIENT_DATA"
            a["StateReason"] = "Insufficient Data: 3 datapoints were unknown."


# (check id, breakage, evidence kind, evidence field contains, evidence value contains, fix contains)
CASES: list[tuple[str, Callable[[Snap], None], str, str, str, str]] = [
    ("ECS001", no_instances, "container_instances", "status", "none registered", "ECS_CLUSTER="),
    ("ECS002", agent_disconnected, "container_instances", "agentConnected", "False", "ECS agent"),
    ("GPU001", no_gpu_registered, "container_instances", "registeredResources", "MEMORY", "ECS_ENABLE_GPU_SUPPORT=true"),
    ("TD001", sidecar_missing, "task_definitions", "containerDefinitions[].name", NAMES.service, "[service.metrics]"),
    ("GPU002", td_without_gpu, "task_definitions", "resourceRequirements", "[]", '"type": "GPU"'),
    ("GPU003", gpus_exhausted, "container_instances", "remainingResources[GPU]", IID, "reserved"),
    ("PLC001", typo_constraint, "services", "placementConstraints[0].expression", "g5.xlarg", "instance_type"),
    ("CAP001", managed_scaling_off, "capacity_providers", "managedScaling.status", "DISABLED", "status=ENABLED"),
    ("ASG001", stockout, "scaling_activities", "StatusMessage", "InsufficientInstanceCapacity", "Availability Zones"),
    ("ASG002", asg_at_max, "auto_scaling_groups", "DesiredCapacity/MaxSize", "1/1", "max_instances"),
    ("ASG005", no_warm_pool, "auto_scaling_groups", "WarmPoolConfiguration", "None", "ecs-gpu deploy"),
    ("ASG006", no_launch_hook, "lifecycle_hooks", "LifecycleHookName", "none", "complete-lifecycle-action fails"),
    ("ASG007", warm_instance_stuck, "warm_pools", f"Instances[{WARM_IID}].LifecycleState", "Warmed:Pending:Wait", "/var/log/ecs-gpu-host-setup.log"),
    ("SVC000", no_service, "services", "serviceName/status", "none", "ecs-gpu deploy"),
    ("SVC001", unable_to_place, "services", "message", "insufficient GPU", "GPU001"),
    ("TSK001", tasks_crash_loop, "tasks", "containers[].exitCode/reason", "nvidia-container-cli", "--probe-hosts"),
    ("MET001", metric_missing, "metric_data", "Values", "[]", "--probe-hosts"),
    ("MET004", reservation_missing, "services", "runningCount", "0", "GPU003, SVC001, TSK001"),
    ("MET005", concurrency_metric_missing, "metric_data", "Values", "[]", "demand-metric container's log"),
    ("MET002", alarm_no_data, "alarms", "StateValue", "INSUFFICIENT_DATA", "MET001"),
    ("MET003", missing_alarm_firing, "alarms", "StateValue", "ALARM", "HOST checks"),
    ("SCL001", policy_wrong_metric, "scaling_policies", "CustomizedMetricSpecification", "ECS/GPU", "nobody writes"),
    ("SCL002", scaling_suspended, "scalable_targets", "SuspendedState", "'DynamicScalingOutSuspended': True", "DynamicScalingOutSuspended=false"),
    ("SCL003", service_scaling_failed, "service_scaling_activities", "StatusMessage", "AccessDenied", "StatusMessage"),
    ("SCL004", concurrency_policy_other_series, "scaling_policies", "CustomizedMetricSpecification", "'Value': 'other'", "ecs-gpu deploy"),
    ("SCL005", fast_alarm_other_threshold, "alarms", "Threshold", "24.0", "ecs-gpu deploy"),
    ("ASG003", host_cpu_policy, "asg_policies", "PredefinedMetricType", "ASGAverageCPUUtilization", "delete-policy"),
    ("ASG004", lt_targets_reservation, "launch_template_versions", "CapacityReservationTarget", CR_ID, "capacity-reservations-first"),
    ("LT001", old_launch_template, "auto_scaling_groups", "LaunchTemplate.Version", IID, "start-instance-refresh"),
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


def test_every_check_has_a_broken_case() -> None:
    assert sorted(c[0] for c in CASES) == sorted(c.id for c in CHECKS)


def test_healthy_snapshot_is_real_and_gives_no_finding(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    validate_snapshot(s)
    report = run_checks(s)
    assert [f.as_dict() for f in report.findings] == []
    assert report.unknown == []
    assert not report.has_error
    assert {r.status for r in report.results} == {"ok"}


@pytest.mark.parametrize(
    ("check_id", "breakage", "kind", "field", "value", "fix"), CASES, ids=[c[0] for c in CASES]
)
def test_broken_snapshot_fires_with_evidence_and_fix(
    healthy: Callable[[], Snap],
    check_id: str,
    breakage: Callable[[Snap], None],
    kind: str,
    field: str,
    value: str,
    fix: str,
) -> None:
    s = healthy()
    breakage(s)
    validate_snapshot(s)  # still a shape AWS returns
    report = run_checks(s)
    mine = [f for f in report.findings if f.id == check_id]
    assert mine, f"{check_id} did not fire; findings: {[f.id for f in report.findings]}"
    f = mine[0]
    assert f.severity == CHECKS_BY_ID[check_id].severity or check_id in ("MET003", "SCL001")
    assert fix in f.fix
    assert any(e.kind == kind and field in e.field and value in str(e.value) for e in f.evidence), (
        f.evidence
    )


def test_findings_follow_the_chain_order(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    metric_missing(s)
    no_gpu_registered(s)
    agent_cannot_stat(s)
    ids = [f.id for f in run_checks(s).findings]
    assert ids.index("GPU001") < ids.index("MET001") < ids.index("HOST002")


def test_absent_kind_is_unknown_never_ok(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    del s["host_probes"]
    s[COLLECTION_KEY]["probe_hosts"] = False
    del s["metric_data"]
    report = run_checks(s)
    status = {r.check.id: r for r in report.results}
    assert status["MET001"].status == "unknown"
    assert status["MET001"].missing == ("metric_data",)
    assert status["HOST002"].status == "unknown"
    assert "--probe-hosts" in status["HOST002"].reason
    assert status["GPU001"].status == "ok"


def test_empty_snapshot_is_all_unknown() -> None:
    report = run_checks({})
    assert {r.status for r in report.results} == {"unknown"}
    assert not report.has_error


def test_denied_kind_names_the_permission(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    del s["scaling_activities"]
    s[COLLECTION_KEY]["denied"].append(
        {
            "call": "autoscaling DescribeScalingActivities",
            "permission": "autoscaling:DescribeScalingActivities",
            "code": "AccessDenied",
            "kinds": ["scaling_activities"],
        }
    )
    report = run_checks(s)
    asg001 = next(r for r in report.results if r.check.id == "ASG001")
    assert asg001.status == "unknown"
    assert "autoscaling:DescribeScalingActivities" in asg001.reason
    assert report.as_dict()["missing_permissions"][0]["permission"] == (
        "autoscaling:DescribeScalingActivities"
    )


def test_placement_failure_before_steady_state_is_history(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    unable_to_place(s)
    s["services"][0]["events"][0]["createdAt"] = "2026-11-29T15:00:00+00:00"  # older than steady
    assert not [f for f in run_checks(s).findings if f.id == "SVC001"]


def test_constraint_on_wrong_but_real_type(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["services"][0]["placementConstraints"][0]["expression"] = (
        "attribute:ecs.instance-type == g6.xlarge"
    )
    f = [f for f in run_checks(s).findings if f.id == "PLC001"]
    assert len(f) == 1 and "g5.xlarge" in f[0].fix


def test_nvidia_env_with_nvidia_default_runtime_is_fine(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    env_inert(s)
    _probe(
        s, docker_info=(" Runtimes: io.containerd.runc.v2 nvidia runc\n Default Runtime: nvidia", 0)
    )
    assert not [f for f in run_checks(s).findings if f.id == "HOST009"]


def test_scale_in_protection_alone_does_not_block_a_healthy_stack(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()  # instances are protected, the stack is CREATE_COMPLETE
    assert not [f for f in run_checks(s).findings if f.id == "STK001"]


def test_quota_failure_gets_the_quota_fix(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    stockout(s)
    s["scaling_activities"][0]["StatusMessage"] = (
        "You have requested more vCPU capacity than your current vCPU limit of 0 allows for the "
        "instance bucket that the specified instance type belongs to. (Error Code: "
        "VcpuLimitExceeded)"
    )
    f = next(f for f in run_checks(s).findings if f.id == "ASG001")
    assert "Service Quotas" in f.fix


def test_docs_list_every_check_kind_and_permission() -> None:
    from pathlib import Path

    from ecs_gpu.aws.facts import KINDS, PERMISSIONS, PROBE_PERMISSIONS, WARM_POOL_PERMISSIONS

    doc = (Path(__file__).resolve().parents[2] / "docs" / "doctor.md").read_text()
    for c in CHECKS:
        assert f"| {c.id} | {c.severity} | {c.title} |" in doc, c.id
    for k in KINDS:
        assert f"| `{k}` |" in doc, k
    for p in (*PERMISSIONS, *PROBE_PERMISSIONS, *WARM_POOL_PERMISSIONS):
        assert f"`{p}`" in doc, p


def test_young_delete_is_a_warning(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    delete_stuck(s)
    s["stacks"][0]["DeletionTime"] = "2026-11-29T16:55:00+00:00"  # 5 min before collection
    f = next(f for f in run_checks(s).findings if f.id == "STK001")
    assert f.severity == "warning" and "waiting" in f.title


def test_scaled_to_zero_service_needs_no_instance(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    no_instances(s)
    s["services"][0]["desiredCount"] = s["services"][0]["runningCount"] = 0
    assert not [f for f in run_checks(s).findings if f.id == "ECS001"]


def test_cpu_host_of_another_service_is_not_a_gpu_finding(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    other = copy.deepcopy(s["container_instances"][0])
    other["ec2InstanceId"] = "i-0cccccccccccccccc"
    other["capacityProviderName"] = "cp-web"
    other["registeredResources"] = [r for r in other["registeredResources"] if r["name"] != "GPU"]
    other["attributes"][0]["value"] = "m7i.large"
    s["container_instances"].append(other)
    validate_snapshot(s)
    assert not [f for f in run_checks(s).findings if f.id == "GPU001"]


def _warm_pool_waiting(s: Snap) -> None:
    warm_instance_stuck(s)
    s["auto_scaling_groups"][0]["Instances"][0]["LifecycleState"] = "Pending:Wait"


@pytest.mark.parametrize(
    "variant",
    [lambda s: None, as_concurrency, _warm_pool_waiting],
    ids=["healthy", "concurrency", "warm-pool"],
)
def test_no_check_crashes_when_any_field_is_missing(
    healthy: Callable[[], Snap], variant: Callable[[Snap], None]
) -> None:
    """Drop each field of each item in turn: every check decides or says Unknown.

    Calls the check functions directly, so run_check's safety net for
    malformed snapshots cannot hide a crash here.
    """
    from ecs_gpu.doctor.checks import Unknown

    base = healthy()
    variant(base)
    crashes = []
    for kind, value in base.items():
        # Object kinds (warm_pools): each output is one item, under its key.
        keys: list[Any] = list(value) if kind == "warm_pools" else []
        if not keys and isinstance(value, list):
            keys = list(range(len(value)))
        for i in keys:
            for key in list(value[i]):
                s = copy.deepcopy(base)
                del s[kind][i][key]
                for check in CHECKS:
                    try:
                        check.fn(s, check)
                    except Unknown:
                        pass
                    except Exception as e:
                        crashes.append((check.id, kind, key, repr(e)))
    assert crashes == []


def test_malformed_snapshot_value_is_unknown_not_a_crash(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["container_instances"] = [{"status": "ACTIVE", "registeredResources": "GPU"}]
    report = run_checks(s)
    gpu001 = next(r for r in report.results if r.check.id == "GPU001")
    assert gpu001.status == "unknown" and "mistypes" in gpu001.reason


def test_gpu_policy_in_either_form_is_healthy(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    metrics = _gpu_cms(s)["Metrics"]
    assert [q["Id"] for q in metrics] == [
        gpu_metric.UTILIZATION_ID,
        gpu_metric.RESERVATION_ID,
        gpu_metric.TASK_GPU_EXPRESSION_ID,
    ]
    assert not [f for f in run_checks(s).findings if f.id in ("SCL001", "MET002")]
    as_asg_average(s)
    validate_snapshot(s)
    assert not [f for f in run_checks(s).findings if f.id in ("SCL001", "MET002")]


def test_plain_policy_on_a_series_nobody_writes_fires(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_asg_average(s)
    cms = _gpu_cms(s)
    cms["Namespace"] = "ECS/GPU"
    cms["Dimensions"] = [{"Name": "ClusterName", "Value": NAMES.cluster}]
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "SCL001"]
    assert f.evidence[0].field.endswith("CustomizedMetricSpecification")
    assert "ECS/GPU" in str(f.evidence[0].value) and "nobody writes" in f.fix


def test_task_gpu_divisor_of_another_cluster_fires(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    reserved = _gpu_cms(s)["Metrics"][1]["MetricStat"]["Metric"]
    reserved["Dimensions"] = gpu_metric.reservation_dimensions("default")
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "SCL001"]
    assert f.evidence[0].field.endswith("Metrics[1].MetricStat.Metric")
    assert "'Value': 'default'" in str(f.evidence[0].value)
    assert f"ClusterName={NAMES.cluster}" in f.fix and "ecs-gpu deploy" in f.fix


def test_metric_math_alarm_without_data_is_a_gpu_alarm(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    alarm_no_data(s)
    assert "Metrics" in s["alarms"][0]
    assert [f.id for f in run_checks(s).findings if f.id == "MET002"] == ["MET002"]


def _group_targets_reservation(s: Snap, preference: str) -> None:
    s["auto_scaling_groups"][0]["CapacityReservationSpecification"] = {
        "CapacityReservationPreference": preference,
        "CapacityReservationTarget": {"CapacityReservationIds": [CR_ID]},
    }


def test_reservation_targeted_by_the_group_first_is_healthy(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    _group_targets_reservation(s, "capacity-reservations-first")
    validate_snapshot(s)
    assert not [f for f in run_checks(s).findings if f.id == "ASG004"]
    # The group's preference wins over a leftover launch-template target.
    lt_targets_reservation(s)
    assert not [f for f in run_checks(s).findings if f.id == "ASG004"]


def test_reservation_only_group_cannot_grow(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    _group_targets_reservation(s, "capacity-reservations-only")
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "ASG004"]
    assert f.evidence[0].value == "capacity-reservations-only"
    assert NAMES.asg in f.fix and "capacity-reservations-first" in f.fix


def test_full_reservation_launch_failure_names_the_group_preference(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    stockout(s)
    s["scaling_activities"][0]["StatusMessage"] = (
        "The specified Capacity Reservation does not have enough available capacity to fulfill "
        "your request. Launching EC2 instance failed. (Error Code: ReservationCapacityExceeded)"
    )
    validate_snapshot(s)
    f = next(f for f in run_checks(s).findings if f.id == "ASG001")
    assert "capacity-reservations-first" in f.fix and "ASG004" in f.fix


def _met004(s: Snap) -> list[Any]:
    return [f for f in run_checks(s).findings if f.id == "MET004"]


def test_tracked_signal_empty_while_tasks_run_points_at_the_cluster_series(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    _reservation(s)["Timestamps"], _reservation(s)["Values"] = [], []
    validate_snapshot(s)
    (f,) = _met004(s)
    assert f.severity == "error"
    assert "run doctor again" in f.fix and f"ClusterName={NAMES.cluster}" in f.fix
    assert "min_tasks" not in f.fix
    assert f.evidence[0].id == gpu_metric.RESERVATION_METRIC and f.evidence[0].value == []
    # The agent's datapoints are shown, proving the host side works.
    assert f.evidence[1].id == gpu_metric.UTILIZATION and f.evidence[1].value == [41.0, 41.0]


def test_tracked_signal_empty_on_an_idle_service_is_a_warning(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    reservation_missing(s)
    s["services"][0]["desiredCount"] = 0
    (f,) = _met004(s)
    assert f.severity == "warning"
    # Scaled to zero on purpose: keep a task, or track the agent's series alone.
    assert "min_tasks >= 1" in f.fix and 'gpu_metric = "asg-average"' in f.fix


def test_tracked_signal_is_quiet_when_nothing_is_written_or_policy_is_asg_average(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    metric_missing(s)  # the agent writes nothing: MET001's finding, not MET004's
    ids = [f.id for f in run_checks(s).findings]
    assert "MET001" in ids and "MET004" not in ids
    s = healthy()
    reservation_missing(s)
    as_asg_average(s)  # the plain policy does not read GPUReservation at all
    validate_snapshot(s)
    assert _met004(s) == []
    assert {r.check.id: r.status for r in run_checks(s).results}["MET004"] == "ok"


def test_tracked_signal_unknown_on_a_snapshot_without_the_reservation_series(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    s["metric_data"] = [r for r in s["metric_data"] if r["Label"] != gpu_metric.RESERVATION_METRIC]
    result = {r.check.id: r for r in run_checks(s).results}["MET004"]
    assert result.status == "unknown"
    assert gpu_metric.RESERVATION_METRIC in result.reason


def test_task_definition_constraint_is_indexed_in_its_own_list(
    healthy: Callable[[], Snap],
) -> None:
    # The service keeps its valid constraint; the task definition's first one is wrong.
    s = healthy()
    s["task_definitions"][0]["placementConstraints"] = [
        {"type": "memberOf", "expression": "attribute:ecs.instance-type == g5.xlarg"}
    ]
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "PLC001"][:1]
    ev = f.evidence[0]
    assert (ev.kind, ev.field) == ("task_definitions", "placementConstraints[0].expression")
    assert "g5.xlarg" in str(ev.value)


def test_an_event_without_a_timestamp_sorts_last_not_unknown(healthy: Callable[[], Snap]) -> None:
    # A hand-trimmed snapshot: one old event lost its createdAt. Mixing it
    # with parsed (aware) times must not turn the check into "unknown".
    s = healthy()
    unable_to_place(s)
    s["services"][0]["events"].append({"id": "old", "message": "(service x) started 1 tasks"})
    result = {r.check.id: r for r in run_checks(s).results}["SVC001"]
    assert result.status == "finding", result.reason


def test_met003_says_nobody_was_told_when_the_alarm_has_no_actions(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    missing_alarm_firing(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "MET003"]
    assert "Nobody was told" in f.fix and "[alerts]" in f.fix
    assert any(e.kind == "alarms" and e.field == "AlarmActions" for e in f.evidence)


def test_met003_with_a_topic_does_not_ask_for_alerts(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    missing_alarm_firing(s)
    topic = "arn:aws:sns:us-east-1:123456789012:gpu-alerts"
    s["alarms"][2]["AlarmActions"] = [topic]
    s["alarms"][2]["OKActions"] = [topic]
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "MET003"]
    assert "--probe-hosts" in f.fix
    assert "[alerts]" not in f.fix
    assert not any(e.field == "AlarmActions" for e in f.evidence)


_DENIAL = (
    "2026-11-29T17:00:01Z E! ec2tagger: code: AccessDenied, message: User: "
    "arn:aws:sts::123456789012:assumed-role/vllm-g5-instance/i-0ad34247c1f0e9b21 is not "
    "authorized to perform: ec2:DescribeTags"
)
_PUT_OK = "2026-11-29T17:00:02Z D! cloudwatch: PutMetricData succeeded, 3 datums"


@pytest.mark.parametrize(
    ("log", "fires"),
    [
        # A denial of another call beside an unrelated PutMetricData line: not HOST004.
        (f"{_DENIAL}\n{_PUT_OK}", False),
        (f"{_PUT_OK}\n{_DENIAL}", False),
        # One line with both the denial and PutMetricData: HOST004.
        (
            "2026-11-29T17:00:03Z E! cloudwatch: code: AccessDenied, message: not authorized "
            "to perform: cloudwatch:PutMetricData",
            True,
        ),
    ],
    ids=["denial-then-put", "put-then-denial", "one-line"],
)
def test_host004_needs_the_denial_and_putmetricdata_on_one_line(
    healthy: Callable[[], Snap], log: str, fires: bool
) -> None:
    s = healthy()
    _probe(s, agent_log=(log, 0))
    host004 = [f for f in run_checks(s).findings if f.id == "HOST004"]
    assert bool(host004) is fires, host004
    if fires:
        assert "PutMetricData" in str(host004[0].evidence[0].value)


def test_a_concurrency_service_that_works_gives_no_finding(healthy: Callable[[], Snap]) -> None:
    for signal_in_target in (True, False):  # from the spec, or read off the policies
        s = healthy()
        as_concurrency(s, signal_in_target=signal_in_target)
        validate_snapshot(s)
        report = run_checks(s)
        assert [f.as_dict() for f in report.findings] == []
        assert report.unknown == []
        # No GPU policy is no SCL001 warning when the service scales on concurrency.
        assert {"SCL001", "SCL004", "SCL005", "MET005", "TD001"} <= set(report.as_dict()["ok"])


def test_concurrency_checks_read_the_signal_off_the_policies(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    concurrency_metric_missing(s)
    del s[COLLECTION_KEY]["target"]["signal"]
    assert "MET005" in {f.id for f in run_checks(s).findings}
    del s["scaling_policies"]
    met005 = next(r for r in run_checks(s).results if r.check.id == "MET005")
    assert met005.status == "unknown" and "scales on concurrency" in met005.reason


def test_the_spec_signal_wins_over_the_policies(healthy: Callable[[], Snap]) -> None:
    # The spec says task-gpus: a stray concurrency policy does not make MET005 fire.
    s = healthy()
    concurrency_metric_missing(s)
    s[COLLECTION_KEY]["target"]["signal"] = "task-gpus"
    assert not {"MET005", "TD001"} & {f.id for f in run_checks(s).findings}


def test_sidecar_publishing_another_series_is_td001(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    env = s["task_definitions"][0]["containerDefinitions"][1]["environment"]
    for e in env:
        if e["name"] == "DIMENSIONS":
            e["value"] = "ClusterName=other,ServiceName=other"
    f = next(f for f in run_checks(s).findings if f.id == "TD001")
    assert f.title == "The demand-metric sidecar publishes another series"
    assert f.evidence[0].value == {"DIMENSIONS": "ClusterName=other,ServiceName=other"}
    assert f"ClusterName={NAMES.cluster},ServiceName={NAMES.service}" in f.fix


def test_concurrency_series_of_an_idle_service_is_a_warning(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    concurrency_metric_missing(s)
    s["services"][0]["desiredCount"] = s["services"][0]["runningCount"] = 0
    f = next(f for f in run_checks(s).findings if f.id == "MET005")
    assert f.severity == "warning" and "scaled to 0" in f.fix
    s["services"][0]["desiredCount"] = 1
    f = next(f for f in run_checks(s).findings if f.id == "MET005")
    assert f.severity == "error" and "GPU003, SVC001, TSK001" in f.fix


def test_concurrency_series_absent_from_an_old_snapshot_is_unknown(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    as_concurrency(s)
    s["metric_data"] = [r for r in s["metric_data"] if r["Id"] not in ("c0", "c1")]
    met005 = next(r for r in run_checks(s).results if r.check.id == "MET005")
    assert met005.status == "unknown" and "collect it again" in met005.reason


# --- the concurrency policy, the fast path and the GPU series they leave unread ---------


def _drop_policy(s: Snap, name: str) -> None:
    s["scaling_policies"] = [p for p in s["scaling_policies"] if p["PolicyName"] != name]


def _ids(s: Snap) -> set[str]:
    return {f.id for f in run_checks(s).findings}


@pytest.mark.parametrize("signal_in_target", [True, False], ids=["spec", "policies"])
def test_concurrency_policy_on_another_series_is_scl004(
    healthy: Callable[[], Snap], signal_in_target: bool
) -> None:
    s = healthy()
    concurrency_policy_other_series(s)
    if not signal_in_target:
        del s[COLLECTION_KEY]["target"]["signal"]
    validate_snapshot(s)
    f = next(f for f in run_checks(s).findings if f.id == "SCL004")
    assert f.severity == "error"
    cluster_service = demand_metric.cli_dimensions(NAMES.cluster, NAMES.service)
    assert f"dimensions ClusterName=other,ServiceName=other (want {cluster_service})" in f.fix
    assert "ecs-gpu deploy" in f.fix


def test_concurrency_policy_on_another_statistic_is_scl004(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    _concurrency_cms(s)["Statistic"] = "Maximum"
    f = next(f for f in run_checks(s).findings if f.id == "SCL004")
    assert f"statistic Maximum (want {demand_metric.STATISTIC})" in f.fix
    assert f.evidence[0].value["Statistic"] == "Maximum"


def test_missing_concurrency_policy_is_scl004_not_gpu_advice(healthy: Callable[[], Snap]) -> None:
    # The spec scales on concurrency and only the CPU policy (and the fast path) is left.
    s = healthy()
    as_concurrency(s)
    _drop_policy(s, "concurrency")
    findings = [f for f in run_checks(s).findings if f.id in ("SCL001", "SCL004")]
    assert [(f.id, f.severity) for f in findings] == [("SCL004", "error")]
    assert findings[0].title == "No target-tracking policy scales the service on concurrency"
    assert findings[0].evidence[0].value == ["cpu", "fast-scale-out"]
    assert demand_metric.METRIC_NAME in findings[0].fix and "ecs-gpu deploy" in findings[0].fix


def test_gpu_guard_without_a_gpu_policy_is_scl001(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    assert "SCL001" not in _ids(s)  # gpu_guard off: no GPU policy is right
    s[COLLECTION_KEY]["target"]["gpu_guard"] = True
    f = next(f for f in run_checks(s).findings if f.id == "SCL001")
    assert f.severity == "warning" and f.title == "No GPU guard policy on the service"
    assert "gpu_guard = true" in f.fix


def test_spec_without_the_fast_path_step_policy_is_scl005(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    _drop_policy(s, "fast-scale-out")
    fp = fast_path.fast_path(concurrency_spec())
    assert fp is not None
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert f.severity == "error"
    assert f.title == "The fast path's StepScaling policy is missing"
    assert f.evidence[0].value == {
        "concurrency": "TargetTrackingScaling",
        "cpu": "TargetTrackingScaling",
    }
    assert f"threshold {fp.threshold:g}" in f.fix and "ecs-gpu deploy" in f.fix
    # A spec with fast_scale_out = false deploys none: quiet.
    s[COLLECTION_KEY]["target"]["fast_path_threshold"] = None
    assert "SCL005" not in _ids(s)


def test_fast_path_unknown_without_the_spec(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s, signal_in_target=False)
    _drop_policy(s, "fast-scale-out")
    scl005 = next(r for r in run_checks(s).results if r.check.id == "SCL005")
    assert scl005.status == "unknown" and "ecs-gpu doctor SPEC" in scl005.reason


def test_step_policy_without_an_alarm_is_scl005(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    s["alarms"] = [a for a in s["alarms"] if a["AlarmName"] != FAST_ALARM]
    step = next(p for p in s["scaling_policies"] if p["PolicyName"] == "fast-scale-out")
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert f.title == "The fast path's alarm does not exist"
    assert (f.evidence[1].kind, f.evidence[1].id) == ("alarms", FAST_ALARM)
    step["Alarms"] = []
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert f.title == "No alarm invokes the fast path's step policy"
    assert f.evidence[0].value == []


def test_fast_alarm_found_through_its_actions(healthy: Callable[[], Snap]) -> None:
    # The policy's Alarms list is empty, but the collected alarm invokes it.
    s = healthy()
    as_concurrency(s)
    next(p for p in s["scaling_policies"] if p["PolicyName"] == "fast-scale-out")["Alarms"] = []
    assert next(r for r in run_checks(s).results if r.check.id == "SCL005").status == "ok"


def test_fast_alarm_on_another_series_or_period_is_scl005(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    alarm = _fast_alarm(s)
    alarm["Dimensions"] = [{"Name": "ServiceName", "Value": NAMES.service}]
    alarm["Period"] = 60
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert {e.field: e.value for e in f.evidence} == {
        "Dimensions": [{"Name": "ServiceName", "Value": NAMES.service}],
        "Period": 60,
    }
    assert f"period 60 s (want {fast_path.ALARM_PERIOD_S} s)" in f.fix
    assert "dimensions ServiceName=" in f.fix


def test_fast_alarm_threshold_comes_from_the_spec(healthy: Callable[[], Snap]) -> None:
    # The expected threshold is fast_path.threshold(spec), as collected; none without a spec.
    s = healthy()
    as_concurrency(s)
    s[COLLECTION_KEY]["target"]["fast_path_threshold"] = 12.0
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert "threshold 16 (want 12)" in f.fix
    s = healthy()
    as_concurrency(s, signal_in_target=False)
    _fast_alarm(s)["Threshold"] = 24.0
    assert "SCL005" not in _ids(s)


def test_fast_alarm_without_data_is_a_warning(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    _fast_alarm(s)["StateValue"] = "INSUFFICIENT_DATA"
    f = next(f for f in run_checks(s).findings if f.id == "SCL005")
    assert f.severity == "warning" and f.title == "The fast path's alarm has no data"
    assert f.evidence[0].value == "INSUFFICIENT_DATA" and "MET005" in f.fix


def test_fast_path_needs_the_alarms_only_on_concurrency(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    del s["alarms"]
    assert next(r for r in run_checks(s).results if r.check.id == "SCL005").status == "ok"
    s = healthy()
    as_concurrency(s)
    del s["alarms"]
    scl005 = next(r for r in run_checks(s).results if r.check.id == "SCL005")
    assert scl005.status == "unknown" and "alarms" in scl005.reason


def _gpu_series_missing(s: Snap) -> None:
    for r in s["metric_data"]:
        if r["Label"] in gpu_metric.METRIC_NAMES:
            r["Timestamps"], r["Values"] = [], []


@pytest.mark.parametrize("signal_in_target", [True, False], ids=["spec", "policies"])
def test_gpu_series_no_policy_reads_is_a_met001_warning(
    healthy: Callable[[], Snap], signal_in_target: bool
) -> None:
    s = healthy()
    as_concurrency(s, signal_in_target=signal_in_target)
    _gpu_series_missing(s)
    f = next(f for f in run_checks(s).findings if f.id == "MET001")
    assert f.severity == "warning"
    assert "nobody writes" not in f.fix and "No scaling policy reads it" in f.fix
    assert NAMES.gpu_metric_missing_alarm in f.fix and "dashboard" in f.fix
    # With gpu_guard a policy does read it: the error it always was.
    s[COLLECTION_KEY]["target"]["signal"] = "concurrency"
    s[COLLECTION_KEY]["target"]["gpu_guard"] = True
    f = next(f for f in run_checks(s).findings if f.id == "MET001")
    assert f.severity == "error" and "the scaling policy tracks a series nobody writes" in f.fix


# --- the warm pool ([capacity.warm_pool]) ------------------------------------------------

WARM_CHECKS = ("ASG005", "ASG006", "ASG007")


def _warm(s: Snap) -> Snap:
    as_warm_pool(s)
    validate_snapshot(s)
    return s


def _found(s: Snap, check_id: str) -> list[Any]:
    validate_snapshot(s)
    return [f for f in run_checks(s).findings if f.id == check_id]


def test_a_warm_pool_as_the_spec_deploys_it_gives_no_finding(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    report = run_checks(s)
    assert [f.as_dict() for f in report.findings] == []
    assert report.unknown == []
    assert set(WARM_CHECKS) <= set(report.as_dict()["ok"])


def test_no_warm_pool_anywhere_needs_none_of_its_kinds(healthy: Callable[[], Snap]) -> None:
    # No spec pool, no group pool: decided without warm_pools and lifecycle_hooks.
    s = healthy()
    assert "warm_pools" not in s and "lifecycle_hooks" not in s
    status = {r.check.id: r.status for r in run_checks(s).results}
    assert {status[i] for i in WARM_CHECKS} == {"ok"}


def test_pool_off_the_spec_is_an_asg005_warning(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    cfg = s["auto_scaling_groups"][0]["WarmPoolConfiguration"]
    cfg.update(MinSize=0, PoolState="Running", MaxGroupPreparedCapacity=2)
    (f,) = _found(s, "ASG005")
    assert (f.severity, f.title) == ("warning", "The warm pool differs from the spec")
    assert {e.field: e.value for e in f.evidence} == {
        "WarmPoolConfiguration.PoolState": "Running",
        "WarmPoolConfiguration.MinSize": 0,
        "WarmPoolConfiguration.MaxGroupPreparedCapacity": 2,
    }
    assert "max_prepared unset" in f.fix and "ecs-gpu deploy" in f.fix


def test_unset_max_prepared_may_read_back_as_minus_one(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    s["auto_scaling_groups"][0]["WarmPoolConfiguration"]["MaxGroupPreparedCapacity"] = -1
    assert _found(s, "ASG005") == []


def test_pool_being_deleted_is_an_asg005_error(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    s["auto_scaling_groups"][0]["WarmPoolConfiguration"]["Status"] = "PendingDelete"
    (f,) = _found(s, "ASG005")
    assert f.severity == "error" and "being deleted" in f.fix


@pytest.mark.parametrize(
    ("change", "shown"),
    [
        ({"LifecycleHookName": "launch"}, "launch (autoscaling:EC2_INSTANCE_LAUNCHING)"),
        ({"LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING"}, "TERMINATING"),
    ],
    ids=["other-name", "terminating"],
)
def test_hook_the_unit_does_not_complete_is_asg006(
    healthy: Callable[[], Snap], change: dict[str, str], shown: str
) -> None:
    s = _warm(healthy())
    _hook(s).update(change)
    (f,) = _found(s, "ASG006")
    assert f.severity == "error" and shown in str(f.evidence[0].value)
    assert f"named {NAMES.asg}-launch" in f.fix


def test_hook_heartbeat_off_the_spec_is_an_asg006_warning(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    _hook(s)["HeartbeatTimeout"] = 600
    (f,) = _found(s, "ASG006")
    assert f.severity == "warning" and "another heartbeat" in f.title
    assert [e.value for e in f.evidence] == [600, 2015]


def test_without_a_spec_any_launch_hook_will_do(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    s[COLLECTION_KEY]["target"] = {
        k: v for k, v in s[COLLECTION_KEY]["target"].items() if k in ("cluster", "service")
    }
    _hook(s)["LifecycleHookName"] = "someone-elses-name"
    assert _found(s, "ASG005") == [] and _found(s, "ASG006") == []
    s["lifecycle_hooks"] = []
    (f,) = _found(s, "ASG006")
    assert f.severity == "error"


def test_instance_within_the_heartbeat_is_not_stuck(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    warm_instance_stuck(s)
    assert _found(s, "ASG007")
    s["instances"][1]["LaunchTime"] = "2026-11-29T16:30:00+00:00"  # 1800 s < 2015 s
    assert _found(s, "ASG007") == []


def test_group_instance_waiting_past_the_heartbeat_is_asg007(healthy: Callable[[], Snap]) -> None:
    # A warm start of a Stopped pool restarts the instance: LaunchTime is that start.
    s = _warm(healthy())
    s["auto_scaling_groups"][0]["Instances"][0]["LifecycleState"] = "Pending:Wait"
    s["instances"][0]["LaunchTime"] = "2026-11-29T16:20:00+00:00"
    (f,) = _found(s, "ASG007")
    assert f.evidence[0].kind == "auto_scaling_groups"
    assert f.evidence[0].value == "Pending:Wait" and IID in f.fix
    assert f"{NAMES.host_log_group}, stream {IID}/ecs-gpu-host-setup" in f.fix
    # A Running pool's instance keeps the LaunchTime of its warming: it says nothing.
    s["auto_scaling_groups"][0]["WarmPoolConfiguration"]["PoolState"] = "Running"
    assert _found(s, "ASG007") == []


def test_waiting_instance_without_a_launch_time_is_unknown(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    warm_instance_stuck(s)
    s["instances"] = s["instances"][:1]
    asg007 = next(r for r in run_checks(s).results if r.check.id == "ASG007")
    assert asg007.status == "unknown" and WARM_IID in asg007.reason


def test_denied_warm_pool_is_unknown_naming_the_permission(healthy: Callable[[], Snap]) -> None:
    s = _warm(healthy())
    del s["warm_pools"]
    s[COLLECTION_KEY]["denied"].append(
        {
            "call": "autoscaling DescribeWarmPool",
            "permission": "autoscaling:DescribeWarmPool",
            "code": "AccessDenied",
            "kinds": ["warm_pools"],
        }
    )
    status = {r.check.id: r for r in run_checks(s).results}
    assert status["ASG007"].status == "unknown"
    assert "autoscaling:DescribeWarmPool" in status["ASG007"].reason
    assert status["ASG005"].status == status["ASG006"].status == "ok"


def test_doctor_expects_what_the_template_deploys() -> None:
    """The hook name, heartbeat and pool doctor records are the template's, --stack included."""
    from ecs_gpu.aws.facts import Target
    from ecs_gpu.cli.deploy import synth_template
    from ecs_gpu.cli.options import names_of
    from ecs_gpu.doctor.checks.capacity import LAUNCHING
    from ecs_gpu.infra import capacity

    from .snapshots import warm_pool_spec

    assert LAUNCHING == capacity.LAUNCHING
    spec = warm_pool_spec()
    for stack in (None, "vllm-g5-staging"):
        template = synth_template(spec, stack)
        resources = template["Resources"].values()
        (group,) = [r for r in resources if r["Type"] == "AWS::AutoScaling::AutoScalingGroup"]
        (pool,) = [r for r in resources if r["Type"] == "AWS::AutoScaling::WarmPool"]
        (hook,) = group["Properties"]["LifecycleHookSpecificationList"]
        want = Target.from_spec(spec, names_of(spec, stack)).warm_pool
        assert want is not None
        assert (hook["LifecycleHookName"], hook["HeartbeatTimeout"]) == (
            want.hook_name,
            want.hook_timeout_s,
        )
        assert hook["LifecycleTransition"] == LAUNCHING
        props = pool["Properties"]
        assert (props["MinSize"], props["PoolState"], props.get("MaxGroupPreparedCapacity")) == (
            want.min_size,
            want.pool_state,
            want.max_prepared,
        )


def test_concurrency_alarm_without_data_is_met002(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    concurrency_alarm_no_data(s)
    findings = _found(s, "MET002")
    assert len(findings) == 2  # AlarmHigh and AlarmLow of the concurrency policy
    f = findings[0]
    assert (f.severity, f.title) == ("error", "Concurrency scaling alarm has no data")
    assert f.evidence[0].value == "INSUFFICIENT_DATA" and "AlarmHigh" in f.evidence[0].id
    assert "MET005" in f.fix and demand_metric.SIDECAR_NAME in f.fix
    # The fast path's own alarm without data is SCL005's warning, not MET002.
    s = healthy()
    as_concurrency(s)
    _fast_alarm(s)["StateValue"] = "INSUFFICIENT_DATA"
    assert _found(s, "MET002") == []
    # Without the policies those alarms cannot be told apart: unknown, not ok.
    s = healthy()
    concurrency_alarm_no_data(s)
    del s["scaling_policies"]
    met002 = next(r for r in run_checks(s).results if r.check.id == "MET002")
    assert met002.status == "unknown" and "scaling_policies" in met002.reason


# --- absent is not healthy: a check over a thing that is not there never says ok ----------


def _status(s: Snap) -> dict[str, Any]:
    return {r.check.id: r for r in run_checks(s).results}


def test_no_service_is_an_error_and_the_checks_that_read_it_are_unknown(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    s["services"] = []
    validate_snapshot(s)
    report = run_checks(s)
    assert [f.id for f in report.findings] == ["SVC000"]
    assert report.has_error
    status = _status(s)
    for check_id in ("GPU002", "PLC001", "SVC001", "ASG002"):
        assert status[check_id].status == "unknown", check_id
        assert "SVC000" in status[check_id].reason


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda svc: svc.update(status="INACTIVE"), "it was deleted"),
        (lambda svc: svc.update(status="DRAINING"), "it is being deleted"),
        (lambda svc: svc.update(serviceName="other"), "only other services"),
    ],
    ids=["inactive", "draining", "another-service"],
)
def test_a_deleted_or_other_service_is_no_service(
    healthy: Callable[[], Snap], change: Callable[[Snap], None], why: str
) -> None:
    s = healthy()
    change(s["services"][0])
    f = next(f for f in run_checks(s).findings if f.id == "SVC000")
    assert why in f.fix and NAMES.service in f.fix


def test_a_missing_cluster_is_svc000(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["clusters"] = []
    f = next(f for f in run_checks(s).findings if f.id == "SVC000")
    assert f.title == "The cluster does not exist"
    assert f.evidence[0].kind == "clusters" and f.evidence[0].value == "none"


def test_no_capacity_provider_is_cap001(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["capacity_providers"] = []
    s["clusters"][0]["capacityProviders"] = []
    s["services"][0]["capacityProviderStrategy"] = []
    s[COLLECTION_KEY]["target"]["capacity_provider"] = None
    validate_snapshot(s)
    f = next(f for f in run_checks(s).findings if f.id == "CAP001")
    assert f.severity == "error" and f.title == "No capacity provider grows the fleet"
    assert f.evidence[0].value == "none" and "ecs-gpu deploy" in f.fix
    # A provider with no group (or one being deleted) grows nothing either.
    s = healthy()
    s["capacity_providers"][0]["status"] = "INACTIVE"
    f = next(f for f in run_checks(s).findings if f.id == "CAP001")
    assert f.title == "No capacity provider grows the fleet"
    assert f"the service asks for {NAMES.capacity_provider}" in f.fix


def test_a_capacity_provider_or_its_group_that_is_gone_is_cap001(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    s["auto_scaling_groups"] = []
    f = next(f for f in run_checks(s).findings if f.id == "CAP001")
    assert f.title == "The capacity provider's Auto Scaling group does not exist"
    assert NAMES.asg in f.fix
    s = healthy()
    s["services"][0]["capacityProviderStrategy"].append(
        {"capacityProvider": "gone", "weight": 1, "base": 0}
    )
    f = next(f for f in run_checks(s).findings if f.id == "CAP001")
    assert f.title == "The service's capacity provider does not exist" and "gone" in f.fix


def test_no_stack_of_the_targets_name_is_an_stk001_warning(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["stacks"] = []
    f = next(f for f in run_checks(s).findings if f.id == "STK001")
    assert f.severity == "warning" and f.title == "The stack does not exist"
    assert NAMES.stack in f.fix and "--stack" in f.fix


def test_a_deleted_launch_template_is_an_lt001_error(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["launch_template_versions"] = []
    f = next(f for f in run_checks(s).findings if f.id == "LT001")
    assert f.severity == "error" and f.title == "The group's launch template does not exist"
    assert f.evidence[0].value == "lt-0a1b2c3d4e5f67890"


def test_no_probed_instance_leaves_host000_unknown(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["host_probes"] = {}
    assert _status(s)["HOST000"].status == "unknown"


def test_a_scaling_policys_deleted_alarm_is_met002(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["alarms"] = [a for a in s["alarms"] if not a["AlarmName"].startswith("TargetTracking-")]
    validate_snapshot(s)
    f = next(f for f in run_checks(s).findings if f.id == "MET002")
    assert f.title == "The scaling policy's alarm does not exist" and f.severity == "error"
    assert f.evidence[0].id == "gpu" and "ecs-gpu deploy" in f.fix
    # The CPU policy and the fast path's step policy are not MET002's.
    s = healthy()
    as_concurrency(s)
    s["alarms"] = [a for a in s["alarms"] if a["AlarmName"] != FAST_ALARM]
    assert "MET002" not in {f.id for f in run_checks(s).findings}
