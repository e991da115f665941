"""Template assertions for every bullet of the template contract, on every example."""

from __future__ import annotations

from typing import Any

import yaml

from ecs_gpu import host
from ecs_gpu.contracts import ami, demand_metric, gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import redeploy
from ecs_gpu.design.managed_scaling import instance_warmup_s, max_scaling_step
from ecs_gpu.spec import Spec

from .conftest import PINNED_AMI, gpu_signal_only
from .tpl import as_list, one, props, render, resources

T = dict[str, Any]
AL2023_GPU_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id"


def _lt_data(t: T) -> dict[str, Any]:
    data: dict[str, Any] = props(t, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    return data


def _boot_and_pull_s(spec: Spec) -> float:
    return spec.simulation.instance_boot_s + spec.simulation.image_pull_s


# --- launch template -----------------------------------------------------------------


def test_launch_template_never_launch_configuration(t: T) -> None:
    assert not resources(t, "AWS::AutoScaling::LaunchConfiguration")
    _, asg = one(t, "AWS::AutoScaling::AutoScalingGroup")
    lt_id, _ = one(t, "AWS::EC2::LaunchTemplate")
    assert "LaunchConfigurationName" not in asg["Properties"]
    assert asg["Properties"]["LaunchTemplate"] == {
        "LaunchTemplateId": {"Ref": lt_id},
        # The latest version: a template change is an ASG change (update policy).
        "Version": {"Fn::GetAtt": [lt_id, "LatestVersionNumber"]},
    }


def test_image_is_the_ami_parameter_with_no_default_and_no_ssm_lookup(t: T) -> None:
    # An explicit id that deploy passes (ecs_gpu.contracts.ami.choose), not the public SSM
    # parameter CloudFormation would re-resolve, and refresh the fleet with, at
    # every deploy. The template's only parameter.
    assert _lt_data(t)["ImageId"] == {"Ref": ami.PARAMETER}
    assert set(t["Parameters"]) == {ami.PARAMETER}
    param = t["Parameters"][ami.PARAMETER]
    assert param["Type"] == "AWS::EC2::Image::Id"
    assert "Default" not in param
    assert AL2023_GPU_PARAMETER == ami.RECOMMENDED_SSM_PARAMETER
    assert AL2023_GPU_PARAMETER in param["Description"]


def test_pinned_ami_is_the_parameters_default(variant_reports: dict[str, Any]) -> None:
    t = variant_reports["pinned-ami"].template
    assert _lt_data(t)["ImageId"] == {"Ref": ami.PARAMETER}
    assert t["Parameters"][ami.PARAMETER]["Default"] == PINNED_AMI
    assert t["Parameters"][ami.PARAMETER]["Type"] == "AWS::EC2::Image::Id"


def test_launch_template_instance_type_imds_disk(t: T, spec: Spec) -> None:
    data = _lt_data(t)
    assert data["InstanceType"] == spec.capacity.instance_type
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    (root,) = data["BlockDeviceMappings"]
    assert root["Ebs"]["Encrypted"] is True
    assert root["Ebs"]["VolumeType"] == "gp3"
    assert root["Ebs"]["VolumeSize"] >= 100
    assert root["Ebs"]["VolumeSize"] == spec.capacity.root_volume_gib


def test_user_data_is_the_hosts_cloud_config(t: T, spec: Spec) -> None:
    user_data = _lt_data(t)["UserData"]["Fn::Base64"]
    assert isinstance(user_data, str)
    assert user_data.startswith("#cloud-config\n")
    assert user_data == host.cloud_config(spec)
    doc = yaml.safe_load(user_data)
    ecs_config = next(f for f in doc["write_files"] if f["path"] == host.ECS_CONFIG_PATH)
    assert f"ECS_CLUSTER={Names(spec.service.name).cluster}\n" in ecs_config["content"]


def test_odcr_targeted_by_the_group_not_the_launch_template(t: T, spec: Spec) -> None:
    # A launch-template target fails every launch beyond a full reservation
    # (EC2 ReservationCapacityExceeded); the group's "capacity-reservations-first"
    # fills the reservation, then launches On-Demand up to max_instances.
    assert "CapacityReservationSpecification" not in _lt_data(t)
    asg = props(t, "AWS::AutoScaling::AutoScalingGroup")
    rid = spec.capacity.capacity_reservation_id
    if rid is None:
        assert "CapacityReservationSpecification" not in asg
        assert "CapacityReservation" not in str(t)
    else:
        assert asg["CapacityReservationSpecification"] == {
            "CapacityReservationPreference": "capacity-reservations-first",
            "CapacityReservationTarget": {"CapacityReservationIds": [rid]},
        }
        assert spec.capacity.max_instances > (spec.capacity.reserved_instances or 0)


# --- Auto Scaling group -------------------------------------------------------------


def test_asg_sizes_protection_metrics(t: T, spec: Spec) -> None:
    p = props(t, "AWS::AutoScaling::AutoScalingGroup")
    names = Names(spec.service.name)
    assert p["AutoScalingGroupName"] == names.asg
    assert int(p["MinSize"]) == spec.capacity.min_instances
    assert int(p["MaxSize"]) == spec.capacity.max_instances
    if spec.capacity.reserved_instances is not None:
        assert int(p["MinSize"]) >= spec.capacity.reserved_instances
    assert p["NewInstancesProtectedFromScaleIn"] is True
    # The dashboard reads GroupInServiceInstances: collect all group metrics
    # (no Metrics list means every metric) or name it.
    (collection,) = p["MetricsCollection"]
    assert collection["Granularity"] == "1Minute"
    assert "GroupInServiceInstances" in collection.get("Metrics", ["GroupInServiceInstances"])


def test_asg_update_policy_reaches_running_instances(t: T, spec: Spec) -> None:
    _, asg = one(t, "AWS::AutoScaling::AutoScalingGroup")
    refresh = asg["UpdatePolicy"]["AutoScalingInstanceRefresh"]
    assert refresh["Strategy"] == "Rolling"
    prefs = refresh["Preferences"]
    assert prefs["InstanceWarmup"] >= _boot_and_pull_s(spec)
    assert prefs["InstanceWarmup"] == instance_warmup_s(spec)
    # Every instance is scale-in protected: "Wait" would stall the refresh.
    assert prefs["ScaleInProtectedInstances"] == "Refresh"
    assert prefs["MinHealthyPercentage"] == 100
    # doctor LT001's start-instance-refresh gives the same preferences.
    assert redeploy.REFRESH_PREFERENCES.items() <= prefs.items()


def test_no_host_cpu_policy_on_the_asg(t: T) -> None:
    assert not resources(t, "AWS::AutoScaling::ScalingPolicy")
    assert "ASGAverageCPUUtilization" not in str(t)


# --- capacity provider ----------------------------------------------------------------


def test_capacity_provider_managed_scaling_protection_draining(t: T, spec: Spec) -> None:
    asg_id, _ = one(t, "AWS::AutoScaling::AutoScalingGroup")
    cp_id, cp = one(t, "AWS::ECS::CapacityProvider")
    p = cp["Properties"]
    assert p["Name"] == Names(spec.service.name).capacity_provider
    provider = p["AutoScalingGroupProvider"]
    assert provider["AutoScalingGroupArn"] == {"Ref": asg_id}
    scaling = provider["ManagedScaling"]
    assert scaling["Status"] == "ENABLED"
    assert scaling["TargetCapacity"] == spec.capacity.target_capacity_percent
    assert scaling["InstanceWarmupPeriod"] >= _boot_and_pull_s(spec)
    assert scaling["InstanceWarmupPeriod"] == instance_warmup_s(spec)
    # One step may cover a whole burst; max_instances already bounds the cost.
    assert scaling["MinimumScalingStepSize"] == 1
    assert scaling["MaximumScalingStepSize"] == max_scaling_step(spec)
    assert scaling["MaximumScalingStepSize"] == spec.capacity.max_instances
    assert provider["ManagedTerminationProtection"] == "ENABLED"
    assert provider["ManagedDraining"] == "ENABLED"
    assoc = props(t, "AWS::ECS::ClusterCapacityProviderAssociations")
    assert assoc["CapacityProviders"] == [{"Ref": cp_id}]


# --- task definition --------------------------------------------------------------------


def app_container(p: dict[str, Any], spec: Spec) -> dict[str, Any]:
    """The serving container; with [service.metrics] the demand sidecar is the other one."""
    names = [c["Name"] for c in p["ContainerDefinitions"]]
    sidecar = [demand_metric.SIDECAR_NAME] if spec.service.metrics is not None else []
    assert sorted(names) == sorted(["app", *sidecar]), names
    found: dict[str, Any] = next(c for c in p["ContainerDefinitions"] if c["Name"] == "app")
    return found


def test_task_definition_gpu_inside_container_as_string(t: T, spec: Spec) -> None:
    p = props(t, "AWS::ECS::TaskDefinition")
    assert p["RequiresCompatibilities"] == ["EC2"]
    assert p["NetworkMode"] == "awsvpc"
    assert p["Family"] == Names(spec.service.name).task_family
    assert p["Cpu"] == str(spec.service.cpu_units)
    assert p["Memory"] == str(spec.service.memory_mib)
    assert "ResourceRequirements" not in p  # never at task level
    container = app_container(p, spec)
    assert container["ResourceRequirements"] == [
        {"Type": "GPU", "Value": str(spec.service.gpus_per_task)}
    ]
    assert isinstance(container["ResourceRequirements"][0]["Value"], str)
    env = {e["Name"]: e["Value"] for e in container["Environment"]}
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == spec.service.nvidia_driver_capabilities
    assert "NVIDIA_VISIBLE_DEVICES" not in env  # ECS sets it to the pinned GPUs
    for k, v in spec.service.environment.items():
        assert env[k] == v
    assert container["Image"] == spec.service.image
    if spec.service.command is not None:
        assert container["Command"] == spec.service.command


def test_task_logs_awslogs_with_retention(t: T, spec: Spec) -> None:
    container = app_container(props(t, "AWS::ECS::TaskDefinition"), spec)
    log = container["LogConfiguration"]
    assert log["LogDriver"] == "awslogs"
    group_id = log["Options"]["awslogs-group"]["Ref"]
    group = t["Resources"][group_id]["Properties"]
    assert group["LogGroupName"] == Names(spec.service.name).task_log_group
    assert group["RetentionInDays"] == spec.service.log_retention_days


# --- service autoscaling ------------------------------------------------------------------


def test_one_scalable_target_carries_gpu_and_cpu_policies(t: T, spec: Spec) -> None:
    gpu_signal_only(spec)
    target_id, target = one(t, "AWS::ApplicationAutoScaling::ScalableTarget")
    tp = target["Properties"]
    assert tp["ServiceNamespace"] == "ecs"
    assert tp["ScalableDimension"] == "ecs:service:DesiredCount"
    assert tp["MinCapacity"] == spec.scaling.min_tasks
    assert tp["MaxCapacity"] == spec.scaling.max_tasks
    names = Names(spec.service.name)
    assert render(tp["ResourceId"]).startswith("service/")
    policies = resources(t, "AWS::ApplicationAutoScaling::ScalingPolicy")
    lb = spec.load_balancer
    expected = 3 if lb is not None and lb.request_count_target is not None else 2
    assert len(policies) == expected
    configs = []
    for pol in policies.values():
        pp = pol["Properties"]
        assert pp["ScalingTargetId"] == {"Ref": target_id}
        assert pp["PolicyType"] == "TargetTrackingScaling"
        cfg = pp["TargetTrackingScalingPolicyConfiguration"]
        assert cfg["ScaleInCooldown"] == spec.scaling.scale_in_cooldown_s
        assert cfg["ScaleOutCooldown"] == spec.scaling.scale_out_cooldown_s
        configs.append(cfg)
    gpu = [c for c in configs if "CustomizedMetricSpecification" in c]
    assert len(gpu) == 1
    assert spec.scaling.gpu_metric == "task-gpus"  # every example keeps the default
    assert gpu[0]["CustomizedMetricSpecification"] == {"Metrics": task_gpu_queries(names)}
    assert gpu[0]["TargetValue"] == spec.scaling.gpu_target_percent
    predefined = {
        c["PredefinedMetricSpecification"]["PredefinedMetricType"]: c
        for c in configs
        if "PredefinedMetricSpecification" in c
    }
    # ECS's 20-second CPU series, which the service is asked to publish.
    assert predefined["ECSServiceAverageCPUUtilizationHighResolution"]["TargetValue"] == (
        spec.scaling.cpu_target_percent
    )
    assert one(t, "AWS::ECS::Service")[1]["Properties"]["Monitoring"] == {
        "MetricConfigurations": [{"MetricNames": ["CPUUtilization"], "ResolutionSeconds": 20}]
    }
    if expected == 3:
        assert lb is not None
        assert predefined["ALBRequestCountPerTarget"]["TargetValue"] == lb.request_count_target


def task_gpu_queries(names: Names) -> list[dict[str, Any]]:
    """The metric-math form spelled out by hand from the contract, not by scaling.py."""
    return [
        {
            "Id": gpu_metric.UTILIZATION_ID,
            "MetricStat": {
                "Metric": {
                    "Namespace": gpu_metric.NAMESPACE,
                    "MetricName": gpu_metric.UTILIZATION,
                    "Dimensions": [{"Name": gpu_metric.DIMENSION, "Value": names.asg}],
                },
                "Stat": gpu_metric.STATISTIC,
            },
            "ReturnData": False,
        },
        {
            "Id": gpu_metric.RESERVATION_ID,
            "MetricStat": {
                "Metric": {
                    "Namespace": gpu_metric.RESERVATION_NAMESPACE,
                    "MetricName": gpu_metric.RESERVATION_METRIC,
                    "Dimensions": [
                        {"Name": gpu_metric.RESERVATION_DIMENSION, "Value": names.cluster}
                    ],
                },
                "Stat": "Average",
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


# --- observability hooks (the teammate's dashboard and alarm are in the template) --------


def test_dashboard_and_missing_metric_alarm_present(t: T, spec: Spec) -> None:
    names = Names(spec.service.name)
    assert props(t, "AWS::CloudWatch::Dashboard")["DashboardName"] == names.dashboard
    alarms = resources(t, "AWS::CloudWatch::Alarm")
    named = [a["Properties"].get("AlarmName") for a in alarms.values()]
    if spec.scaling.signal == "concurrency":
        # Plus the concurrency missing-metric and fast-path alarms (test_scaling_*.py).
        assert names.gpu_metric_missing_alarm in named and len(named) == 3
    else:
        assert named == [names.gpu_metric_missing_alarm]


def test_create_and_delete_order(t: T) -> None:
    # Create: cluster and instance policy before instances boot; the capacity
    # provider on the cluster before the service. Delete runs the reverse, so
    # instances are gone before the cluster (which refuses deletion while
    # container instances are registered).
    cluster_id, _ = one(t, "AWS::ECS::Cluster")
    _, asg = one(t, "AWS::AutoScaling::AutoScalingGroup")
    role_policy_ids = [
        lid
        for lid, r in resources(t, "AWS::IAM::Policy").items()
        if r["Properties"]["PolicyName"] == "ecs-gpu-host"
    ]
    assert cluster_id in as_list(asg["DependsOn"])
    assert set(role_policy_ids) <= set(as_list(asg["DependsOn"]))
