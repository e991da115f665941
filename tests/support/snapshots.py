# ruff: noqa: E501  (AWS ARNs and messages are data; wrapping them would hide typos)
"""Doctor test data: a healthy snapshot in real AWS API shapes, and a validator.

Every item of the healthy snapshot follows the botocore service model of the
call that returns it (field names and types from DescribeServices,
DescribeContainerInstances, ...; values modelled on the AWS documentation
examples and the field reports). ``validate_snapshot`` checks that claim with
botocore's own response validator, the one ``botocore.stub.Stubber`` uses,
so a fabricated field or a wrong type fails the test.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import botocore.session
from botocore.validate import ParamValidator

from ecs_gpu.aws.facts import COLLECTION_KEY, SNAPSHOT_VERSION
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names

from .world import task_gpu_queries

DATA = Path(__file__).resolve().parents[1] / "data"
NAMES = Names("vllm-g5")
ACCOUNT = "123456789012"
REGION = "us-east-1"
IID = "i-0ad34247c1f0e9b21"
GPU_UUID = "GPU-9a9a6c50-2a47-2f51-a902-b82c3b127e94"  # the A10G in tests/data/nvidia-smi
LT_ID = "lt-0a1b2c3d4e5f67890"
TD_ARN = f"arn:aws:ecs:{REGION}:{ACCOUNT}:task-definition/{NAMES.task_family}:3"
CLUSTER_ARN = f"arn:aws:ecs:{REGION}:{ACCOUNT}:cluster/{NAMES.cluster}"
CI_ARN = f"arn:aws:ecs:{REGION}:{ACCOUNT}:container-instance/{NAMES.cluster}/5c6e0f1d2a3b4c5d"
ASG_ARN = (
    f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:autoScalingGroup:"
    f"2f3e4d5c-6b7a-4f8e-9d0c-1b2a3c4d5e6f:autoScalingGroupName/{NAMES.asg}"
)
T0 = "2026-11-29T16:00:00+00:00"
T1 = "2026-11-29T17:00:00+00:00"

# kind -> (service, operation, output member holding the items); how the collector reads it.
KIND_SHAPES: dict[str, tuple[str, str, str | None]] = {
    "clusters": ("ecs", "DescribeClusters", "clusters"),
    "services": ("ecs", "DescribeServices", "services"),
    "task_definitions": ("ecs", "DescribeTaskDefinition", None),
    "container_instances": ("ecs", "DescribeContainerInstances", "containerInstances"),
    "tasks": ("ecs", "DescribeTasks", "tasks"),
    "capacity_providers": ("ecs", "DescribeCapacityProviders", "capacityProviders"),
    "auto_scaling_groups": ("autoscaling", "DescribeAutoScalingGroups", "AutoScalingGroups"),
    "scaling_activities": ("autoscaling", "DescribeScalingActivities", "Activities"),
    "asg_policies": ("autoscaling", "DescribePolicies", "ScalingPolicies"),
    "warm_pools": ("autoscaling", "DescribeWarmPool", None),
    "lifecycle_hooks": ("autoscaling", "DescribeLifecycleHooks", "LifecycleHooks"),
    "launch_template_versions": (
        "ec2",
        "DescribeLaunchTemplateVersions",
        "LaunchTemplateVersions",
    ),
    "instances": ("ec2", "DescribeInstances", None),
    "scalable_targets": ("application-autoscaling", "DescribeScalableTargets", "ScalableTargets"),
    "scaling_policies": ("application-autoscaling", "DescribeScalingPolicies", "ScalingPolicies"),
    "service_scaling_activities": (
        "application-autoscaling",
        "DescribeScalingActivities",
        "ScalingActivities",
    ),
    "scheduled_actions": (
        "application-autoscaling",
        "DescribeScheduledActions",
        "ScheduledActions",
    ),
    "alarms": ("cloudwatch", "DescribeAlarms", "MetricAlarms"),
    "metric_data": ("cloudwatch", "GetMetricData", "MetricDataResults"),
    "stacks": ("cloudformation", "DescribeStacks", "Stacks"),
    "host_probes": ("ssm", "GetCommandInvocation", None),
}

_BOTOCORE = botocore.session.get_session()


def validate_response(
    service: str, operation: str, response: dict[str, Any], *, required: bool = True
) -> None:
    """Raise if ``response`` is not a valid output of the operation (Stubber's check).

    ``required=False`` tolerates missing required members only: moto leaves
    some out (e.g. ScalableTarget.RoleARN) while every field it does return
    must still exist in the model with the right type.
    """
    shape = _BOTOCORE.get_service_model(service).operation_model(operation).output_shape
    report = ParamValidator().validate(response, shape)
    if not required:
        report._errors = [e for e in report._errors if e[0] != "missing required field"]
    if report.has_errors():
        raise AssertionError(f"{service} {operation}: {report.generate_report()}")


def validate_snapshot(snapshot: dict[str, Any], *, required: bool = True) -> None:
    for kind, value in snapshot.items():
        if kind == COLLECTION_KEY:
            continue
        service, op, member = KIND_SHAPES[kind]
        if kind == "task_definitions":
            for td in value:
                validate_response(service, op, {"taskDefinition": td}, required=required)
        elif kind == "instances":
            validate_response(
                service, op, {"Reservations": [{"Instances": value}]}, required=required
            )
        elif kind in ("host_probes", "warm_pools"):
            # Object kinds: key -> the whole output of one call.
            for output in value.values():
                validate_response(service, op, output, required=required)
        else:
            assert member is not None
            validate_response(service, op, {member: value}, required=required)


def nvidia_smi_section(xml_name: str = "a10g.xml") -> str:
    """The nvidia_smi section exactly as probe.sh encodes it (gzip + base64)."""
    raw = (DATA / "nvidia-smi" / xml_name).read_bytes()
    return "encoding: gzip+base64\n" + base64.b64encode(gzip.compress(raw)).decode()


def healthy_agent_config() -> dict[str, Any]:
    from ecs_gpu.host import agent_config
    from ecs_gpu.spec import load_spec

    return agent_config(load_spec(Path(__file__).resolve().parents[2] / "examples/g5-vllm.toml"))


def probe_output(**override: tuple[str, int] | None) -> str:
    """A probe run in probe.sh's format; ``name=(text, rc)`` replaces, ``name=None`` drops."""
    sections: dict[str, tuple[str, int] | None] = {
        "nvidia_smi_path": ("/usr/bin/nvidia-smi", 0),
        "nvidia_smi": (nvidia_smi_section(), 0),
        # The two docker info lines from the field report (seeds/000, Theory 2).
        "docker_info": (" Runtimes: io.containerd.runc.v2 nvidia runc\n Default Runtime: runc", 0),
        "ecs_active": ("active", 0),
        "agent_active": ("active", 0),
        "agent_config": (json.dumps(healthy_agent_config(), indent=2), 0),
        "agent_log": (
            "2026-11-29T16:59:01Z I! Loaded inputs: nvidia_smi\n"
            "2026-11-29T16:59:01Z I! Loaded outputs: cloudwatch\n"
            "2026-11-29T16:59:01Z I! [agent] Config: Interval:1m0s, Quiet:false\n"
            "2026-11-29T16:59:02Z I! cloudwatch: get unique roll up list [[AutoScalingGroupName]]",
            0,
        ),
        "containers": (
            "Up 18 minutes :: ecs-vllm-g5-3-vllm-g5-e2b5c8d9a1f0e7c6d101\n"
            "Up 20 minutes :: ecs-agent",
            0,
        ),
        "ecs_config": (
            f"# /etc/ecs/ecs.config\nECS_CLUSTER={NAMES.cluster}\nECS_ENABLE_GPU_SUPPORT=true\n"
            "ECS_RESERVED_MEMORY=512\n# /var/lib/ecs/ecs.config\nECS_ENABLE_GPU_SUPPORT=true",
            0,
        ),
    }
    sections.update(override)
    out = []
    for name, value in sections.items():
        if value is None:
            continue
        text, rc = value
        out += [f"@@ecs-gpu-probe begin {name}", text, f"@@ecs-gpu-probe end {name} rc={rc}"]
    return "\n".join(out) + "\n"


def _resources(gpus: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "name": "CPU",
            "type": "INTEGER",
            "doubleValue": 0.0,
            "longValue": 0,
            "integerValue": 4096,
        },
        {"name": "MEMORY", "type": "INTEGER", "integerValue": 15577},
        {"name": "PORTS", "type": "STRINGSET", "stringSetValue": ["22", "2375", "2376", "51678"]},
        {"name": "PORTS_UDP", "type": "STRINGSET", "stringSetValue": []},
        {"name": "GPU", "type": "STRINGSET", "stringSetValue": gpus},
    ]


def asg_average_spec() -> dict[str, Any]:
    """The asg-average policy's CustomizedMetricSpecification (the plain form)."""
    return {
        "MetricName": gpu_metric.UTILIZATION,
        "Namespace": gpu_metric.NAMESPACE,
        "Dimensions": gpu_metric.dimensions(NAMES.asg),
        "Statistic": gpu_metric.STATISTIC,
    }


def _tt_alarm(kind: str, state: str) -> dict[str, Any]:
    # A metric-math policy's alarms carry the same queries as Metrics[].
    name = f"TargetTracking-{NAMES.scalable_target_resource_id}-Alarm{kind}-3f1c9a2e"
    return {
        "AlarmName": name,
        "AlarmArn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{name}",
        "AlarmDescription": "DO NOT EDIT OR DELETE. For TargetTrackingScaling policy ...",
        "ActionsEnabled": True,
        "StateValue": state,
        "StateReason": "Threshold Crossed: 3 datapoints were not greater than the threshold",
        "StateUpdatedTimestamp": T1,
        "Metrics": task_gpu_queries(period=gpu_metric.PERIOD_S),
        "EvaluationPeriods": 3 if kind == "High" else 15,
        "Threshold": 70.0 if kind == "High" else 63.0,
        "ComparisonOperator": "GreaterThanThreshold" if kind == "High" else "LessThanThreshold",
    }


def build_healthy() -> dict[str, Any]:
    svc_id = NAMES.scalable_target_resource_id
    gpu_policy_alarms = [_tt_alarm("High", "OK"), _tt_alarm("Low", "OK")]
    return {
        COLLECTION_KEY: {
            "version": SNAPSHOT_VERSION,
            "tool": "ecs-gpu doctor",
            "region": REGION,
            "collected_at": T1,
            "target": {
                "cluster": NAMES.cluster,
                "service": NAMES.service,
                "asg": NAMES.asg,
                "capacity_provider": NAMES.capacity_provider,
                "stack": NAMES.stack,
                "missing_metric_alarm": NAMES.gpu_metric_missing_alarm,
            },
            "probe_hosts": True,
            "denied": [],
            "errors": [],
            "metric_window": {"start": "2026-11-29T16:30:00+00:00", "end": T1},
        },
        "clusters": [
            {
                "clusterArn": CLUSTER_ARN,
                "clusterName": NAMES.cluster,
                "status": "ACTIVE",
                "registeredContainerInstancesCount": 1,
                "runningTasksCount": 1,
                "pendingTasksCount": 0,
                "activeServicesCount": 1,
                "capacityProviders": [NAMES.capacity_provider],
                "defaultCapacityProviderStrategy": [],
            }
        ],
        "services": [
            {
                "serviceArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:service/{NAMES.cluster}/{NAMES.service}",
                "serviceName": NAMES.service,
                "clusterArn": CLUSTER_ARN,
                "status": "ACTIVE",
                "desiredCount": 1,
                "runningCount": 1,
                "pendingCount": 0,
                "taskDefinition": TD_ARN,
                "capacityProviderStrategy": [
                    {"capacityProvider": NAMES.capacity_provider, "weight": 1, "base": 0}
                ],
                "deployments": [
                    {
                        "id": "ecs-svc/9223370482914728376",
                        "status": "PRIMARY",
                        "taskDefinition": TD_ARN,
                        "desiredCount": 1,
                        "pendingCount": 0,
                        "runningCount": 1,
                        "createdAt": T0,
                        "updatedAt": T1,
                        "rolloutState": "COMPLETED",
                    }
                ],
                "events": [
                    {
                        "id": "e3b1c2d4-0000-4000-8000-000000000002",
                        "createdAt": T1,
                        "message": f"(service {NAMES.service}) has reached a steady state.",
                    },
                    {
                        "id": "e3b1c2d4-0000-4000-8000-000000000001",
                        "createdAt": T0,
                        "message": f"(service {NAMES.service}) has started 1 tasks: "
                        "(task 4f1e2d3c4b5a69788796a5b4c3d2e1f0).",
                    },
                ],
                "placementConstraints": [
                    {"type": "memberOf", "expression": "attribute:ecs.instance-type == g5.xlarge"}
                ],
                "placementStrategy": [
                    {"type": "spread", "field": "attribute:ecs.availability-zone"}
                ],
                "schedulingStrategy": "REPLICA",
                "createdAt": T0,
            }
        ],
        "task_definitions": [
            {
                "taskDefinitionArn": TD_ARN,
                "family": NAMES.task_family,
                "revision": 3,
                "status": "ACTIVE",
                "networkMode": "awsvpc",
                "requiresCompatibilities": ["EC2"],
                "placementConstraints": [],
                "containerDefinitions": [
                    {
                        "name": NAMES.service,
                        "image": "vllm/vllm-openai:v0.11.0",
                        "cpu": 3072,
                        "memory": 12288,
                        "essential": True,
                        "portMappings": [{"containerPort": 8000, "protocol": "tcp"}],
                        "environment": [
                            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility,compute"}
                        ],
                        "resourceRequirements": [{"type": "GPU", "value": "1"}],
                    }
                ],
            }
        ],
        "container_instances": [
            {
                "containerInstanceArn": CI_ARN,
                "ec2InstanceId": IID,
                "capacityProviderName": NAMES.capacity_provider,
                "version": 12,
                "versionInfo": {
                    "agentVersion": "1.98.0",
                    "agentHash": "a1b2c3d4",
                    "dockerVersion": "DockerVersion: 25.0.8",
                },
                "remainingResources": _resources([]),
                "registeredResources": _resources([GPU_UUID]),
                "status": "ACTIVE",
                "agentConnected": True,
                "runningTasksCount": 1,
                "pendingTasksCount": 0,
                "attributes": [
                    {"name": "ecs.instance-type", "value": "g5.xlarge"},
                    {"name": "ecs.ami-id", "value": "ami-0f3c9a1b2c3d4e5f6"},
                    {"name": "ecs.os-type", "value": "linux"},
                    {"name": "ecs.capability.nvidia-driver-version.580.95.05"},
                ],
                "registeredAt": T0,
            }
        ],
        "tasks": [
            {
                "taskArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:task/{NAMES.cluster}/4f1e2d3c4b5a69788796a5b4c3d2e1f0",
                "clusterArn": CLUSTER_ARN,
                "taskDefinitionArn": TD_ARN,
                "containerInstanceArn": CI_ARN,
                "capacityProviderName": NAMES.capacity_provider,
                "group": f"service:{NAMES.service}",
                "launchType": "EC2",
                "lastStatus": "RUNNING",
                "desiredStatus": "RUNNING",
                "containers": [
                    {
                        "containerArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:container/{NAMES.cluster}/4f1e/9c8b",
                        "name": NAMES.service,
                        "lastStatus": "RUNNING",
                        "gpuIds": [GPU_UUID],
                    }
                ],
                "startedAt": T0,
            }
        ],
        "capacity_providers": [
            {
                "capacityProviderArn": f"arn:aws:ecs:{REGION}:{ACCOUNT}:capacity-provider/{NAMES.capacity_provider}",
                "name": NAMES.capacity_provider,
                "status": "ACTIVE",
                "autoScalingGroupProvider": {
                    "autoScalingGroupArn": ASG_ARN,
                    "managedScaling": {
                        "status": "ENABLED",
                        "targetCapacity": 100,
                        "minimumScalingStepSize": 1,
                        "maximumScalingStepSize": 10,
                        "instanceWarmupPeriod": 300,
                    },
                    "managedTerminationProtection": "ENABLED",
                    "managedDraining": "ENABLED",
                },
                "updateStatus": "UPDATE_COMPLETE",
            }
        ],
        "auto_scaling_groups": [
            {
                "AutoScalingGroupName": NAMES.asg,
                "AutoScalingGroupARN": ASG_ARN,
                "LaunchTemplate": {
                    "LaunchTemplateId": LT_ID,
                    "LaunchTemplateName": "vllm-g5-gpu",
                    "Version": "$Latest",
                },
                "MinSize": 1,
                "MaxSize": 4,
                "DesiredCapacity": 1,
                "DefaultCooldown": 300,
                "AvailabilityZones": ["us-east-1a", "us-east-1b"],
                "HealthCheckType": "EC2",
                "HealthCheckGracePeriod": 0,
                "CreatedTime": T0,
                "VPCZoneIdentifier": "subnet-0a1b2c3d,subnet-4e5f6a7b",
                "NewInstancesProtectedFromScaleIn": True,
                "Instances": [
                    {
                        "InstanceId": IID,
                        "InstanceType": "g5.xlarge",
                        "AvailabilityZone": "us-east-1a",
                        "LifecycleState": "InService",
                        "HealthStatus": "Healthy",
                        "LaunchTemplate": {
                            "LaunchTemplateId": LT_ID,
                            "LaunchTemplateName": "vllm-g5-gpu",
                            "Version": "2",
                        },
                        "ProtectedFromScaleIn": True,
                    }
                ],
            }
        ],
        "scaling_activities": [
            {
                "ActivityId": "f9f2d65b-f1f2-43e7-b46d-d86756459699",
                "AutoScalingGroupName": NAMES.asg,
                "Description": f"Launching a new EC2 instance: {IID}",
                "Cause": "At 2026-11-29T16:00:00Z a user request update of AutoScalingGroup "
                "constraints to min: 1, max: 4, desired: 1 changing the desired capacity from 0 to 1.",
                "StartTime": T0,
                "EndTime": "2026-11-29T16:01:00+00:00",
                "StatusCode": "Successful",
                "Progress": 100,
            }
        ],
        "asg_policies": [
            {
                "AutoScalingGroupName": NAMES.asg,
                "PolicyName": "ECSManagedAutoScalingPolicy-8e6a4a5c-1b2c-4d3e-9f8a-7b6c5d4e3f2a",
                "PolicyARN": f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:scalingPolicy:1:autoScalingGroupName/{NAMES.asg}:policyName/ECSManagedAutoScalingPolicy",
                "PolicyType": "TargetTrackingScaling",
                "TargetTrackingConfiguration": {
                    "CustomizedMetricSpecification": {
                        "MetricName": "CapacityProviderReservation",
                        "Namespace": "AWS/ECS/ManagedScaling",
                        "Dimensions": [
                            {"Name": "CapacityProviderName", "Value": NAMES.capacity_provider},
                            {"Name": "ClusterName", "Value": NAMES.cluster},
                        ],
                        "Statistic": "Average",
                    },
                    "TargetValue": 100.0,
                    "DisableScaleIn": False,
                },
                "Alarms": [],
                "Enabled": True,
            }
        ],
        "launch_template_versions": [
            {
                "LaunchTemplateId": LT_ID,
                "LaunchTemplateName": "vllm-g5-gpu",
                "VersionNumber": 2,
                "DefaultVersion": True,
                "CreateTime": T0,
                "LaunchTemplateData": {
                    "ImageId": "ami-0f3c9a1b2c3d4e5f6",
                    "InstanceType": "g5.xlarge",
                },
            },
            {
                "LaunchTemplateId": LT_ID,
                "LaunchTemplateName": "vllm-g5-gpu",
                "VersionNumber": 1,
                "DefaultVersion": False,
                "CreateTime": "2026-11-01T10:00:00+00:00",
                "LaunchTemplateData": {
                    "ImageId": "ami-0aaaaaaaaaaaaaaa1",
                    "InstanceType": "g5.xlarge",
                },
            },
        ],
        "instances": [
            {
                "InstanceId": IID,
                "InstanceType": "g5.xlarge",
                "ImageId": "ami-0f3c9a1b2c3d4e5f6",
                "State": {"Code": 16, "Name": "running"},
                "LaunchTime": T0,
                "Placement": {"AvailabilityZone": "us-east-1a"},
                "IamInstanceProfile": {
                    "Arn": f"arn:aws:iam::{ACCOUNT}:instance-profile/vllm-g5-instance",
                    "Id": "AIPAEXAMPLEEXAMPLE1",
                },
            }
        ],
        "scalable_targets": [
            {
                "ServiceNamespace": "ecs",
                "ResourceId": svc_id,
                "ScalableDimension": "ecs:service:DesiredCount",
                "MinCapacity": 1,
                "MaxCapacity": 4,
                "RoleARN": f"arn:aws:iam::{ACCOUNT}:role/aws-service-role/ecs.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_ECSService",
                "CreationTime": T0,
                "SuspendedState": {
                    "DynamicScalingInSuspended": False,
                    "DynamicScalingOutSuspended": False,
                    "ScheduledScalingSuspended": False,
                },
            }
        ],
        "scaling_policies": [
            {
                "PolicyARN": f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:scalingPolicy:1:resource/ecs/{svc_id}:policyName/gpu",
                "PolicyName": "gpu",
                "ServiceNamespace": "ecs",
                "ResourceId": svc_id,
                "ScalableDimension": "ecs:service:DesiredCount",
                "PolicyType": "TargetTrackingScaling",
                "TargetTrackingScalingPolicyConfiguration": {
                    "TargetValue": 70.0,
                    # gpu_metric = "task-gpus", the spec's default.
                    "CustomizedMetricSpecification": {"Metrics": task_gpu_queries()},
                    "ScaleOutCooldown": 60,
                    "ScaleInCooldown": 300,
                },
                "Alarms": [
                    {"AlarmName": a["AlarmName"], "AlarmARN": a["AlarmArn"]}
                    for a in gpu_policy_alarms
                ],
                "CreationTime": T0,
            },
            {
                "PolicyARN": f"arn:aws:autoscaling:{REGION}:{ACCOUNT}:scalingPolicy:2:resource/ecs/{svc_id}:policyName/cpu",
                "PolicyName": "cpu",
                "ServiceNamespace": "ecs",
                "ResourceId": svc_id,
                "ScalableDimension": "ecs:service:DesiredCount",
                "PolicyType": "TargetTrackingScaling",
                "TargetTrackingScalingPolicyConfiguration": {
                    "TargetValue": 70.0,
                    "PredefinedMetricSpecification": {
                        "PredefinedMetricType": "ECSServiceAverageCPUUtilization"
                    },
                },
                "Alarms": [],
                "CreationTime": T0,
            },
        ],
        "service_scaling_activities": [
            {
                "ActivityId": "e6c5f7d1-dbbb-4a3f-89b2-51f33e766399",
                "ServiceNamespace": "ecs",
                "ResourceId": svc_id,
                "ScalableDimension": "ecs:service:DesiredCount",
                "Description": "Setting desired count to 1.",
                "Cause": "monitor alarm TargetTracking-service/vllm-g5/vllm-g5-AlarmLow in state ALARM triggered policy gpu",
                "StartTime": T0,
                "EndTime": "2026-11-29T16:00:30+00:00",
                "StatusCode": "Successful",
                "StatusMessage": "Successfully set desired count to 1. Change successfully fulfilled by ecs.",
            }
        ],
        "scheduled_actions": [],
        "alarms": [
            *gpu_policy_alarms,
            {
                "AlarmName": NAMES.gpu_metric_missing_alarm,
                "AlarmArn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{NAMES.gpu_metric_missing_alarm}",
                "ActionsEnabled": True,
                "StateValue": "OK",
                "StateReason": "Threshold Crossed: 1 datapoint [1.0 (29/11/26 16:59:00)] was not less than the threshold (1.0).",
                "StateUpdatedTimestamp": T1,
                "MetricName": gpu_metric.MEMORY_TOTAL,
                "Namespace": gpu_metric.NAMESPACE,
                "Statistic": "SampleCount",
                "Dimensions": gpu_metric.dimensions(NAMES.asg),
                "Period": 300,
                "EvaluationPeriods": 3,
                "Threshold": 1.0,
                "ComparisonOperator": "LessThanThreshold",
                "TreatMissingData": "breaching",
            },
        ],
        "metric_data": [
            {
                "Id": f"m{i}",
                "Label": name,
                "Timestamps": ["2026-11-29T16:59:00+00:00", "2026-11-29T16:58:00+00:00"],
                "Values": [value, value],
                "StatusCode": "Complete",
            }
            for i, (name, value) in enumerate(
                zip(gpu_metric.METRIC_NAMES, (41.0, 17920.0, 23028.0), strict=True)
            )
        ]
        + [
            # The task-gpus divisor: one of the cluster's GPUs is held by the task.
            {
                "Id": gpu_metric.RESERVATION_ID,
                "Label": gpu_metric.RESERVATION_METRIC,
                "Timestamps": ["2026-11-29T16:59:00+00:00", "2026-11-29T16:58:00+00:00"],
                "Values": [100.0, 100.0],
                "StatusCode": "Complete",
            }
        ],
        "stacks": [
            {
                "StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{NAMES.stack}/1b2c3d4e-5f6a-11ef-8b9c-0a1b2c3d4e5f",
                "StackName": NAMES.stack,
                "CreationTime": T0,
                "StackStatus": "CREATE_COMPLETE",
            }
        ],
        "host_probes": {
            IID: {
                "CommandId": "0b1c2d3e-4f5a-6b7c-8d9e-0f1a2b3c4d5e",
                "InstanceId": IID,
                "Comment": "ecs-gpu doctor read-only host probe",
                "DocumentName": "AWS-RunShellScript",
                "PluginName": "aws:runShellScript",
                "ResponseCode": 0,
                "Status": "Success",
                "StatusDetails": "Success",
                "StandardOutputContent": probe_output(),
                "StandardErrorContent": "",
            }
        },
    }
