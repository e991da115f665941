# ruff: noqa: E501  (AWS ARNs and messages are data; wrapping them would hide typos)
"""Doctor test data: the healthy snapshot as other specs deploy it.

Each ``as_*`` turns the healthy snapshot (snapshots.py) into what the template
makes for its spec (concurrency with the fast paths, a warm pool, Spot with and
without an on-demand base), in the same botocore response shapes, so
``validate_snapshot`` holds it to the service models too.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.spec import Spec, parse_spec

from .snapshots import ACCOUNT, LT_ID, NAMES, REGION, T0, T1
from .world import SPEC_TOML


def concurrency_spec() -> Spec:
    """The world's spec scaling on concurrency: target 8 per task, fast path on (the default),
    fast scale-in on."""
    text = SPEC_TOML.replace(
        'signal = "task-gpus"',
        'signal = "concurrency"\ntarget_concurrency_per_task = 8\nfast_scale_in = true',
    )
    return parse_spec(text + '\n[service.metrics]\npreset = "vllm"\n')


FAST_ALARM = f"{NAMES.service}-FastScaleOutAlarm-1A2B3C4D5E6F"
SCALE_IN_ALARM = f"{NAMES.service}-FastScaleInAlarm-6F5E4D3C2B1A"


def as_concurrency(s: dict[str, Any], *, signal_in_target: bool = True) -> None:
    """The healthy snapshot as a service that scales on concurrency ([service.metrics]).

    What the template deploys for :func:`concurrency_spec`: the demand-metric
    sidecar beside the server (infra/task.py), a target-tracking policy on the
    sidecars' series instead of the GPU one (infra/scaling.py, no gpu_guard),
    the fast path's step policy and its 10-s alarm (fast_path.py), and the
    series itself. ``signal_in_target``: the collection had the spec.
    """
    from ecs_gpu.contracts import demand_metric
    from ecs_gpu.design.paths import fast_path, fast_scale_in

    spec = concurrency_spec()
    fp = fast_path.fast_path(spec)
    fsi = fast_scale_in.fast_scale_in(spec)
    assert fp is not None and spec.scaling.target_concurrency_per_task is not None
    assert fsi is not None
    if signal_in_target:
        target = s[COLLECTION_KEY]["target"]
        target["signal"] = spec.scaling.signal
        target["gpu_guard"] = spec.scaling.gpu_guard
        target["fast_path_threshold"] = fp.threshold
        target["fast_path_cooldown_s"] = fp.cooldown_s
        target["fast_scale_in_threshold"] = fsi.threshold
    env = demand_metric.sidecar_environment(
        metrics_port=8000,
        metrics_path="/metrics",
        series=("vllm:num_requests_running", "vllm:num_requests_waiting"),
        cluster_name=NAMES.cluster,
        service_name=NAMES.service,
        starting_max_s=600,
    )
    # As ECS returns it: CloudFormation resolved the script's Fn::Sub body.
    env[demand_metric.SCRIPT_ENV] = demand_metric.resolve_sub(env[demand_metric.SCRIPT_ENV], REGION)
    s["task_definitions"][0]["containerDefinitions"].append(
        {
            "name": demand_metric.SIDECAR_NAME,
            "image": demand_metric.SIDECAR_IMAGE,
            "cpu": demand_metric.SIDECAR_CPU_UNITS,
            "memory": demand_metric.SIDECAR_MEMORY_MIB,
            "essential": False,
            "entryPoint": list(demand_metric.SIDECAR_ENTRY_POINT),
            "command": [demand_metric.sidecar_script()],
            "environment": [{"name": k, "value": v} for k, v in env.items()],
            "dependsOn": [{"containerName": NAMES.service, "condition": "START"}],
        }
    )
    gpu = s["scaling_policies"][0]
    gpu["PolicyName"] = "concurrency"
    gpu["PolicyARN"] = gpu["PolicyARN"].replace("policyName/gpu", "policyName/concurrency")
    gpu["TargetTrackingScalingPolicyConfiguration"]["TargetValue"] = (
        spec.scaling.target_concurrency_per_task
    )
    gpu["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"] = {
        "MetricName": demand_metric.METRIC_NAME,
        "Namespace": demand_metric.NAMESPACE,
        "Dimensions": demand_metric.dimensions(NAMES.cluster, NAMES.service),
        "Statistic": demand_metric.STATISTIC,
    }
    svc_id = NAMES.scalable_target_resource_id
    # The policy's own two alarms replace the GPU policy's (no gpu_guard: no GPU policy).
    target = spec.scaling.target_concurrency_per_task
    concurrency_alarms = []
    for kind, comparison, threshold, periods in (
        ("High", "GreaterThanThreshold", target, 3),
        ("Low", "LessThanThreshold", 0.9 * target, 15),
    ):
        name = f"TargetTracking-{svc_id}-Alarm{kind}-7d2e4b1a"
        concurrency_alarms.append(
            {
                "AlarmName": name,
                "AlarmArn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{name}",
                "AlarmDescription": "DO NOT EDIT OR DELETE. For TargetTrackingScaling policy ...",
                "ActionsEnabled": True,
                "AlarmActions": [gpu["PolicyARN"]],
                "StateValue": "OK",
                "StateReason": "Threshold Crossed: 3 datapoints were not greater than the threshold",
                "StateUpdatedTimestamp": T1,
                "MetricName": demand_metric.METRIC_NAME,
                "Namespace": demand_metric.NAMESPACE,
                "Statistic": demand_metric.STATISTIC,
                "Dimensions": demand_metric.dimensions(NAMES.cluster, NAMES.service),
                "Period": 60,
                "EvaluationPeriods": periods,
                "Threshold": threshold,
                "ComparisonOperator": comparison,
            }
        )
    gpu["Alarms"] = [
        {"AlarmName": a["AlarmName"], "AlarmARN": a["AlarmArn"]} for a in concurrency_alarms
    ]
    s["alarms"] = [
        a for a in s["alarms"] if not a["AlarmName"].startswith("TargetTracking-")
    ] + concurrency_alarms
    step_arn = f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:scalingPolicy:3:resource/ecs/{svc_id}:policyName/fast-scale-out"
    alarm_arn = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{FAST_ALARM}"
    s["scaling_policies"].append(
        {
            "PolicyARN": step_arn,
            "PolicyName": "fast-scale-out",
            "ServiceNamespace": "ecs",
            "ResourceId": svc_id,
            "ScalableDimension": "ecs:service:DesiredCount",
            "PolicyType": "StepScaling",
            "StepScalingPolicyConfiguration": {
                "AdjustmentType": fast_path.ADJUSTMENT_TYPE,
                "StepAdjustments": [
                    {
                        "MetricIntervalLowerBound": step.lower,
                        **({} if step.upper is None else {"MetricIntervalUpperBound": step.upper}),
                        "ScalingAdjustment": step.percent,
                    }
                    for step in fp.steps
                ],
                "MinAdjustmentMagnitude": fp.min_adjustment,
                "Cooldown": fp.cooldown_s,
                "MetricAggregationType": fast_path.METRIC_AGGREGATION,
            },
            "Alarms": [{"AlarmName": FAST_ALARM, "AlarmARN": alarm_arn}],
            "CreationTime": T0,
        }
    )
    s["alarms"].append(
        {
            "AlarmName": FAST_ALARM,
            "AlarmArn": alarm_arn,
            "ActionsEnabled": True,
            "AlarmActions": [step_arn],
            "StateValue": "OK",
            "StateReason": "Threshold Crossed: 2 datapoints were not greater than or equal to the threshold",
            "StateUpdatedTimestamp": T1,
            "MetricName": demand_metric.METRIC_NAME,
            "Namespace": demand_metric.NAMESPACE,
            "Statistic": fast_path.STATISTIC,
            "Dimensions": demand_metric.dimensions(NAMES.cluster, NAMES.service),
            "Period": fp.period_s,
            "EvaluationPeriods": fp.evaluation_periods,
            "DatapointsToAlarm": fp.datapoints_to_alarm,
            "Threshold": fp.threshold,
            "ComparisonOperator": fast_path.COMPARISON,
            "TreatMissingData": "notBreaching",
        }
    )
    in_arn = f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:scalingPolicy:4:resource/ecs/{svc_id}:policyName/fast-scale-in"
    in_alarm_arn = f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{SCALE_IN_ALARM}"
    s["scaling_policies"].append(
        {
            "PolicyARN": in_arn,
            "PolicyName": "fast-scale-in",
            "ServiceNamespace": "ecs",
            "ResourceId": svc_id,
            "ScalableDimension": "ecs:service:DesiredCount",
            "PolicyType": "StepScaling",
            "StepScalingPolicyConfiguration": {
                "AdjustmentType": fast_scale_in.ADJUSTMENT_TYPE,
                "StepAdjustments": [
                    {
                        **({} if st.lower is None else {"MetricIntervalLowerBound": st.lower}),
                        "MetricIntervalUpperBound": st.upper,
                        "ScalingAdjustment": -st.percent,
                    }
                    for st in fsi.steps
                ],
                "MinAdjustmentMagnitude": fsi.min_adjustment,
                "Cooldown": fsi.cooldown_s,
                "MetricAggregationType": fast_scale_in.METRIC_AGGREGATION,
            },
            "Alarms": [{"AlarmName": SCALE_IN_ALARM, "AlarmARN": in_alarm_arn}],
            "CreationTime": T0,
        }
    )
    series = {
        "Namespace": demand_metric.NAMESPACE,
        "MetricName": demand_metric.METRIC_NAME,
        "Dimensions": demand_metric.dimensions(NAMES.cluster, NAMES.service),
    }
    s["alarms"].append(
        {
            "AlarmName": SCALE_IN_ALARM,
            "AlarmArn": in_alarm_arn,
            "ActionsEnabled": True,
            "AlarmActions": [in_arn],
            "StateValue": "OK",
            "StateReason": "Threshold Crossed: 12 datapoints were not less than the threshold",
            "StateUpdatedTimestamp": T1,
            "Metrics": [
                {
                    "Id": "expr_1",
                    "Expression": fast_scale_in.expression(fsi.threshold),
                    "Label": fast_scale_in.EXPRESSION_LABEL,
                    "ReturnData": True,
                },
                *(
                    {
                        "Id": qid,
                        "MetricStat": {"Metric": series, "Period": fsi.period_s, "Stat": stat},
                        "ReturnData": False,
                    }
                    for qid, stat in (
                        (fast_scale_in.SUM_ID, "Sum"),
                        (fast_scale_in.COUNT_ID, "SampleCount"),
                    )
                ),
            ],
            "EvaluationPeriods": fsi.evaluation_periods,
            "DatapointsToAlarm": fsi.datapoints_to_alarm,
            "Threshold": fsi.threshold,
            "ComparisonOperator": fast_scale_in.COMPARISON,
            "TreatMissingData": "notBreaching",
        }
    )
    for q, values in zip(
        demand_metric.metric_data_queries(NAMES.cluster, NAMES.service),
        ([5.5, 6.0], [9.0, 8.0]),
        strict=True,
    ):
        s["metric_data"].append(
            {
                "Id": q["Id"],
                "Label": q["Label"],
                "Timestamps": ["2026-11-29T16:59:50+00:00", "2026-11-29T16:59:40+00:00"],
                "Values": values,
                "StatusCode": "Complete",
            }
        )


WARM_IID = "i-0b7e5d3c2a1f09e88"
WARM_POOL_TOML = "\n[capacity.warm_pool]\nmin_size = 1\n"


def warm_pool_spec() -> Spec:
    """The world's spec with a warm pool of one Stopped instance (the defaults otherwise)."""
    return parse_spec(SPEC_TOML + WARM_POOL_TOML)


def as_warm_pool(s: dict[str, Any]) -> None:
    """The healthy snapshot as :func:`warm_pool_spec` deployed, collected with that spec.

    What the template makes (infra/capacity.py _warm_pool): the pool of one
    Stopped instance, the launch hook host.warm_pool_hook_name with heartbeat
    host.hook_timeout_s; one instance waits in the pool, stopped.
    """
    from ecs_gpu.aws.facts import Target
    from ecs_gpu.checks.doctor.capacity import LAUNCHING

    target = Target.from_spec(warm_pool_spec(), NAMES).as_dict()
    s[COLLECTION_KEY]["target"] = target
    want = target["warm_pool"]
    config = {
        "MinSize": want["min_size"],
        "PoolState": want["pool_state"],
        "MaxGroupPreparedCapacity": want["max_prepared"],
    }
    group = s["auto_scaling_groups"][0]
    group["WarmPoolConfiguration"] = dict(config)
    group["WarmPoolSize"] = 1
    s["warm_pools"] = {
        NAMES.asg: {
            "WarmPoolConfiguration": dict(config),
            "Instances": [
                {
                    "InstanceId": WARM_IID,
                    "InstanceType": "g5.xlarge",
                    "AvailabilityZone": "us-east-1b",
                    "LifecycleState": "Warmed:Stopped",
                    "HealthStatus": "Healthy",
                    "LaunchTemplate": {
                        "LaunchTemplateId": LT_ID,
                        "LaunchTemplateName": "vllm-g5-gpu",
                        "Version": "2",
                    },
                    # The group protects new instances (NewInstancesProtectedFromScaleIn).
                    "ProtectedFromScaleIn": True,
                }
            ],
        }
    }
    s["lifecycle_hooks"] = [
        {
            "LifecycleHookName": want["hook_name"],
            "AutoScalingGroupName": NAMES.asg,
            "LifecycleTransition": LAUNCHING,
            "HeartbeatTimeout": want["hook_timeout_s"],
            # 100 x the heartbeat, at most 48 h (the GlobalTimeout documentation).
            "GlobalTimeout": min(100 * want["hook_timeout_s"], 172800),
            "DefaultResult": "CONTINUE",
        }
    ]
    s["instances"].append(
        {
            "InstanceId": WARM_IID,
            "InstanceType": "g5.xlarge",
            "ImageId": "ami-0f3c9a1b2c3d4e5f6",
            "State": {"Code": 80, "Name": "stopped"},
            "LaunchTime": T0,
            "Placement": {"AvailabilityZone": "us-east-1b"},
        }
    )


SPOT_LT_ID = "lt-0f9e8d7c6b5a43210"
SPOT_ASG_ARN = (
    f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:autoScalingGroup:"
    f"7c1d2e3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f:autoScalingGroupName/{NAMES.spot_asg}"
)
SPOT_TOML = '\n[capacity.spot]\ninstance_types = ["g5.xlarge", "g6.xlarge"]\n'


def spot_spec() -> Spec:
    """:func:`concurrency_spec` with [capacity.spot] over g5 and g6 (base 1, 70 % Spot)."""
    text = SPEC_TOML.replace(
        'signal = "task-gpus"',
        'signal = "concurrency"\ntarget_concurrency_per_task = 8\nfast_scale_in = true',
    )
    return parse_spec(text + '\n[service.metrics]\npreset = "vllm"\n' + SPOT_TOML)


def as_spot(s: dict[str, Any]) -> None:
    """The concurrency snapshot with the Spot group the template adds for :func:`spot_spec`.

    What infra/capacity.py _spot_group deploys: a second group with a mixed
    instances policy (all Spot, price-capacity-optimized over the two types)
    from a launch template whose cloud-config sets the drain flag (no
    instance yet), its capacity provider, and the service's strategy with the
    On-Demand base (infra/service.py).
    """
    from ecs_gpu import host
    from ecs_gpu.aws.facts import Target

    as_concurrency(s)
    spec = spot_spec()
    s[COLLECTION_KEY]["target"] = Target.from_spec(spec, NAMES).as_dict()
    s["services"][0]["capacityProviderStrategy"] = [
        {"capacityProvider": NAMES.capacity_provider, "weight": 30, "base": 1},
        {"capacityProvider": NAMES.spot_capacity_provider, "weight": 70, "base": 0},
    ]
    cp = copy.deepcopy(s["capacity_providers"][0])
    cp.update(
        capacityProviderArn=cp["capacityProviderArn"].replace(
            NAMES.capacity_provider, NAMES.spot_capacity_provider
        ),
        name=NAMES.spot_capacity_provider,
    )
    cp["autoScalingGroupProvider"]["autoScalingGroupArn"] = SPOT_ASG_ARN
    s["capacity_providers"].append(cp)
    group = copy.deepcopy(s["auto_scaling_groups"][0])
    del group["LaunchTemplate"]
    group.update(
        AutoScalingGroupName=NAMES.spot_asg,
        AutoScalingGroupARN=SPOT_ASG_ARN,
        MinSize=0,
        DesiredCapacity=0,
        Instances=[],
        MixedInstancesPolicy={
            "LaunchTemplate": {
                "LaunchTemplateSpecification": {
                    "LaunchTemplateId": SPOT_LT_ID,
                    "LaunchTemplateName": "vllm-g5-spot",
                    "Version": "1",
                },
                "Overrides": [{"InstanceType": "g5.xlarge"}, {"InstanceType": "g6.xlarge"}],
            },
            "InstancesDistribution": {
                "OnDemandAllocationStrategy": "prioritized",
                "OnDemandBaseCapacity": 0,
                "OnDemandPercentageAboveBaseCapacity": 0,
                "SpotAllocationStrategy": "price-capacity-optimized",
            },
        },
    )
    s["auto_scaling_groups"].append(group)
    user_data = host.cloud_config(spec, spot=True)
    s["launch_template_versions"].append(
        {
            "LaunchTemplateId": SPOT_LT_ID,
            "LaunchTemplateName": "vllm-g5-spot",
            "VersionNumber": 1,
            "DefaultVersion": True,
            "CreateTime": T0,
            "LaunchTemplateData": {
                "ImageId": "ami-0f3c9a1b2c3d4e5f6",
                "UserData": base64.b64encode(user_data.encode()).decode(),
            },
        }
    )
    s["alarms"].extend(spot_alarms())


def spot_od0_spec() -> Spec:
    """:func:`spot_spec` with no On-Demand base and no On-Demand floor: every task may run
    on Spot and the On-Demand group may be empty (ecs_gpu.design.spot.on_demand_may_be_empty)."""
    text = SPEC_TOML.replace(
        'signal = "task-gpus"',
        'signal = "concurrency"\ntarget_concurrency_per_task = 8\nfast_scale_in = true',
    ).replace("min_instances = 1", "min_instances = 0", 1)
    spot_toml = SPOT_TOML + "on_demand_base = 0\n"
    return parse_spec(text + '\n[service.metrics]\npreset = "vllm"\n' + spot_toml)


def as_spot_od0(s: dict[str, Any]) -> None:
    """:func:`as_spot` for :func:`spot_od0_spec`: the strategy without base, and the GPU
    missing-metric alarm as infra/observability writes it then, reading the On-Demand
    group's GPU series only while that group has an instance in service."""
    from ecs_gpu.aws.facts import Target
    from ecs_gpu.design import spot

    as_spot(s)
    spec = spot_od0_spec()
    s[COLLECTION_KEY]["target"] = Target.from_spec(spec, NAMES).as_dict()
    s["services"][0]["capacityProviderStrategy"][0]["base"] = 0
    s["auto_scaling_groups"][0]["MinSize"] = 0
    group = [{"Name": spot.GROUP_DIMENSION, "Value": NAMES.asg}]
    (a,) = [a for a in s["alarms"] if a["AlarmName"] == NAMES.gpu_metric_missing_alarm]
    for key in ("MetricName", "Namespace", "Statistic", "Dimensions", "Period"):
        del a[key]
    a.update(
        Metrics=[
            {"Id": "expr_1", "Expression": spot.GPU_MISSING_EXPRESSION, "ReturnData": True},
            _group_stat(spot.GPU_ID, gpu_metric.NAMESPACE, gpu_metric.UTILIZATION, group),
            _group_stat(spot.IN_SERVICE_ID, spot.GROUP_NAMESPACE, spot.IN_SERVICE_METRIC, group),
        ],
        EvaluationPeriods=16,
        DatapointsToAlarm=16,
        Threshold=0.0,
        TreatMissingData="notBreaching",
    )


def _group_stat(
    qid: str, namespace: str, metric: str, dims: list[dict[str, str]]
) -> dict[str, Any]:
    """One hidden one-minute query of a Spot-form alarm, as DescribeAlarms returns it."""
    from ecs_gpu.design import spot

    return {
        "Id": qid,
        "MetricStat": {
            "Metric": {"Namespace": namespace, "MetricName": metric, "Dimensions": dims},
            "Period": spot.GROUP_PERIOD_S,
            "Stat": spot.GROUP_STATISTIC,
        },
        "ReturnData": False,
    }


def spot_alarms() -> list[dict[str, Any]]:
    """The Spot group's two alarms as DescribeAlarms returns them (infra/observability
    _spot_alarms for :func:`spot_spec`): metric math, both OK, no action."""
    from ecs_gpu.design import spot

    group = [{"Name": spot.GROUP_DIMENSION, "Value": NAMES.spot_asg}]
    stat = _group_stat
    in_service = stat(spot.IN_SERVICE_ID, spot.GROUP_NAMESPACE, spot.IN_SERVICE_METRIC, group)
    rows = [
        (
            NAMES.spot_gpu_metric_missing_alarm,
            spot.GPU_MISSING_EXPRESSION,
            stat(spot.GPU_ID, gpu_metric.NAMESPACE, gpu_metric.UTILIZATION, group),
            "LessThanThreshold",
            0.0,
            16,
        ),
        (
            NAMES.spot_capacity_shortfall_alarm,
            spot.SHORTFALL_EXPRESSION,
            stat(spot.DESIRED_ID, spot.GROUP_NAMESPACE, spot.DESIRED_METRIC, group),
            "GreaterThanOrEqualToThreshold",
            spot.SHORTFALL_THRESHOLD,
            10,
        ),
    ]
    return [
        {
            "AlarmName": name,
            "AlarmArn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{name}",
            "ActionsEnabled": True,
            "StateValue": "OK",
            "StateReason": "Threshold Crossed: no datapoints were received for 10 periods",
            "StateUpdatedTimestamp": T1,
            "Metrics": [
                {"Id": "expr_1", "Expression": expression, "ReturnData": True},
                other,
                in_service,
            ],
            "EvaluationPeriods": periods,
            "DatapointsToAlarm": periods,
            "Threshold": threshold,
            "ComparisonOperator": comparison,
            "TreatMissingData": "notBreaching",
        }
        for name, expression, other, comparison, threshold, periods in rows
    ]
