"""Spec shapes the examples do not cover: validate clean, and the wiring each one needs."""

from __future__ import annotations

from typing import Any

import pytest

from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names

from .conftest import VARIANTS
from .tpl import as_list, one, props, resources, statements


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_variant_validates_clean(variant: str, variant_reports: dict[str, Any]) -> None:
    assert variant_reports[variant].findings == []


def _ingress(t: dict[str, Any], sg_id: str) -> list[dict[str, Any]]:
    inline = t["Resources"][sg_id]["Properties"].get("SecurityGroupIngress", [])
    separate = [
        r["Properties"]
        for r in resources(t, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["GroupId"] == {"Fn::GetAtt": [sg_id, "GroupId"]}
    ]
    return [*inline, *separate]


def _sg(t: dict[str, Any], prefix: str) -> str:
    (sg_id,) = [k for k in resources(t, "AWS::EC2::SecurityGroup") if k.startswith(prefix)]
    return sg_id


def test_ecr_image_pull_limited_to_its_repository(variant_reports: dict[str, Any]) -> None:
    t = variant_reports["ecr-image"].template
    (container,) = props(t, "AWS::ECS::TaskDefinition")["ContainerDefinitions"]
    assert "team/vllm:v1" in str(container["Image"])
    pulls = [st for _, st in statements(t) if "ecr:BatchGetImage" in as_list(st["Action"])]
    (pull,) = pulls
    assert "repository/team/vllm" in str(pull["Resource"])
    assert pull["Resource"] != "*"


def test_internal_alb_in_user_vpc_admits_only_the_clients_group(
    variant_reports: dict[str, Any],
) -> None:
    t = variant_reports["internal-alb-in-user-vpc"].template
    rules = _ingress(t, _sg(t, "GpuServiceLoadBalancerSecurityGroup"))
    assert rules and all("CidrIp" not in r for r in rules)
    clients = _sg(t, "GpuServiceClientsSecurityGroup")
    assert all(r["SourceSecurityGroupId"] == {"Fn::GetAtt": [clients, "GroupId"]} for r in rules)


def test_narrowed_public_listener_uses_the_given_cidrs(variant_reports: dict[str, Any]) -> None:
    t = variant_reports["public-http-alb-narrowed"].template
    cidrs = {r.get("CidrIp") for r in _ingress(t, _sg(t, "GpuServiceLoadBalancerSecurityGroup"))}
    assert "203.0.113.0/24" in cidrs and "0.0.0.0/0" not in cidrs
    assert props(t, "AWS::ElasticLoadBalancingV2::Listener")["Protocol"] == "HTTP"


def test_no_alb_tasks_admit_only_the_clients_group(variant_reports: dict[str, Any]) -> None:
    t = variant_reports["user-vpc-no-alb"].template
    rules = _ingress(t, _sg(t, "GpuServiceTaskSecurityGroup"))
    clients = _sg(t, "GpuServiceClientsSecurityGroup")
    assert rules == [
        {
            "IpProtocol": "tcp",
            "FromPort": 8000,
            "ToPort": 8000,
            "Description": "from the clients security group",
            "GroupId": {"Fn::GetAtt": [_sg(t, "GpuServiceTaskSecurityGroup"), "GroupId"]},
            "SourceSecurityGroupId": {"Fn::GetAtt": [clients, "GroupId"]},
        }
    ]
    assert one(t, "AWS::ECS::Service")[1]["Properties"].get("LoadBalancers") is None


def test_asg_average_policy_tracks_the_agent_series_as_is(
    variant_reports: dict[str, Any],
) -> None:
    t = variant_reports["asg-average"].template
    names = Names("vllm-g5")
    (gpu,) = [
        p["Properties"]["TargetTrackingScalingPolicyConfiguration"]
        for p in resources(t, "AWS::ApplicationAutoScaling::ScalingPolicy").values()
        if "CustomizedMetricSpecification"
        in p["Properties"]["TargetTrackingScalingPolicyConfiguration"]
    ]
    assert gpu["CustomizedMetricSpecification"] == {
        "MetricName": gpu_metric.UTILIZATION,
        "Namespace": gpu_metric.NAMESPACE,
        "Statistic": gpu_metric.STATISTIC,
        "Dimensions": [{"Name": gpu_metric.DIMENSION, "Value": names.asg}],
    }
    assert gpu_metric.RESERVATION_METRIC not in str(t)


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        (
            "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v1",
            ("arn:aws:ecr:us-east-1:123456789012:repository/team/vllm", "v1"),
        ),
        (
            "123456789012.dkr.ecr.cn-north-1.amazonaws.com.cn/vllm",
            ("arn:aws-cn:ecr:cn-north-1:123456789012:repository/vllm", "latest"),
        ),
        (
            "123456789012.dkr.ecr.eu-west-1.amazonaws.com/vllm@sha256:" + "a" * 64,
            ("arn:aws:ecr:eu-west-1:123456789012:repository/vllm", "sha256:" + "a" * 64),
        ),
        ("vllm/vllm-openai:v0.11.0", None),
        ("public.ecr.aws/neuron/vllm:1", None),
    ],
)
def test_ecr_repository_arn_names_the_partition(
    image: str, expected: tuple[str, str] | None
) -> None:
    from ecs_gpu.infra.task import ecr_repository

    assert ecr_repository(image) == expected


def test_alerts_email_stack_notifies_its_own_topic(variant_reports: dict[str, Any]) -> None:
    t = variant_reports["alerts-email"].template
    topic_id, topic = one(t, "AWS::SNS::Topic")
    key_id, _ = one(t, "AWS::KMS::Key")
    assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    alarm = props(t, "AWS::CloudWatch::Alarm")
    assert alarm["AlarmName"] == Names("vllm-g5").gpu_metric_missing_alarm
    assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": topic_id}]
    endpoints = sorted(
        r["Properties"]["Endpoint"] for r in resources(t, "AWS::SNS::Subscription").values()
    )
    assert endpoints == ["ml-team@example.com", "oncall@example.com"]


def test_alerts_topic_arn_example_publishes_there(templates: dict[str, Any]) -> None:
    t = templates["g6e-alb-odcr.toml"]
    alarm = props(t, "AWS::CloudWatch::Alarm")
    arn = "arn:aws:sns:us-east-1:123456789012:gpu-alerts"
    assert alarm["AlarmActions"] == alarm["OKActions"] == [arn]
    assert not resources(t, "AWS::SNS::Topic") and not resources(t, "AWS::KMS::Key")


def test_no_alerts_no_actions(templates: dict[str, Any]) -> None:
    # p5: no [alerts] and one alarm (g5-vllm.toml, on concurrency, has three).
    alarm = props(templates["p5-8gpu.toml"], "AWS::CloudWatch::Alarm")
    assert "AlarmActions" not in alarm and "OKActions" not in alarm


@pytest.mark.parametrize("variant", ["alerts-email", "asg-average"])
def test_deployments_do_not_roll_back_on_the_missing_metric_alarm(
    variant: str, variant_reports: dict[str, Any]
) -> None:
    # docs/template.md: the alarm judges the hosts, not a task revision, and
    # is in ALARM until a fresh stack's first instance reports.
    deploy = props(variant_reports[variant].template, "AWS::ECS::Service")[
        "DeploymentConfiguration"
    ]
    # CDK writes the block switched off; it must stay off and name nothing.
    assert deploy.get("Alarms", {}) in ({}, {"AlarmNames": [], "Enable": False, "Rollback": False})
    assert deploy["DeploymentCircuitBreaker"] == {"Enable": True, "Rollback": True}
