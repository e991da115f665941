"""Spec shapes the examples do not cover: validate clean, and the wiring each one needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from ecs_gpu.spec import parse_spec
from ecs_gpu.validate import validate

from .conftest import EXAMPLES_DIR
from .tpl import as_list, one, props, resources, statements

if TYPE_CHECKING:
    from ecs_gpu.validate import ValidationReport

G5 = (EXAMPLES_DIR / "g5-vllm.toml").read_text(encoding="utf-8")
ECR_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v1"
USER_VPC = """
[network]
vpc_id = "vpc-0a1b2c3d4e5f60718"
subnet_ids = ["subnet-0a1b2c3d4e5f60711", "subnet-0a1b2c3d4e5f60712"]
"""
VARIANTS = {
    "ecr-image": G5.replace('image = "vllm/vllm-openai:v0.11.0"', f'image = "{ECR_IMAGE}"'),
    "internal-alb-in-user-vpc": G5 + USER_VPC + '\n[load_balancer]\nscheme = "internal"\n',
    "public-http-alb-narrowed": G5
    + '\n[load_balancer]\nscheme = "internet-facing"\ningress_cidrs = ["203.0.113.0/24"]\n',
    "user-vpc-no-alb": G5 + USER_VPC,
}


@pytest.fixture(scope="module")
def variant_reports() -> dict[str, ValidationReport]:
    return {k: validate(parse_spec(text, k), path=k) for k, text in VARIANTS.items()}


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
