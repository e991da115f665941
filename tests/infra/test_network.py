"""The network on every example's template (infra/network.py): its own VPC, or the given ids."""

from __future__ import annotations

from typing import Any

from ecs_gpu.spec import Spec

from .tpl import props, resources

T = dict[str, Any]


def test_network_own_vpc_or_given_ids(t: T, spec: Spec) -> None:
    p = props(t, "AWS::ECS::Service")
    subnets = p["NetworkConfiguration"]["AwsvpcConfiguration"]["Subnets"]
    if spec.network is None:
        assert len(resources(t, "AWS::EC2::NatGateway")) == 1
        assert len(resources(t, "AWS::EC2::FlowLog")) == 1
        flow_group = props(t, "AWS::EC2::FlowLog")["LogGroupName"]
        assert t["Resources"][flow_group["Ref"]]["Properties"]["RetentionInDays"] > 0
        assert all("Ref" in s for s in subnets)
    else:
        assert not resources(t, "AWS::EC2::VPC")
        assert subnets == spec.network.subnet_ids
        asg = props(t, "AWS::AutoScaling::AutoScalingGroup")
        assert asg["VPCZoneIdentifier"] == spec.network.subnet_ids
