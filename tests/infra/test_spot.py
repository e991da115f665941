"""[capacity.spot] in the template: a Spot group, its provider and the strategy with a base."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ecs_gpu import host, spot, template
from ecs_gpu.naming import Names
from ecs_gpu.spec import parse_spec
from ecs_gpu.synth import synth_template

from .conftest import SPOT
from .tpl import render, resources, statements

ASG = "AWS::AutoScaling::AutoScalingGroup"
LT = "AWS::EC2::LaunchTemplate"


@pytest.fixture(scope="module")
def t(variant_reports: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = variant_reports["spot"].template
    return found


def _by_name(t: dict[str, Any], rtype: str, key: str) -> dict[str, dict[str, Any]]:
    return {r["Properties"][key]: r["Properties"] for r in resources(t, rtype).values()}


def _ecs_config(lt_props: dict[str, Any]) -> str:
    user_data = render(lt_props["LaunchTemplateData"]["UserData"]["Fn::Base64"])
    return host.written_files(user_data)["/etc/ecs/ecs.config"]


def _lt_of(t: dict[str, Any], asg: dict[str, Any]) -> dict[str, Any]:
    spec = (
        asg.get("LaunchTemplate")
        or asg["MixedInstancesPolicy"]["LaunchTemplate"]["LaunchTemplateSpecification"]
    )
    props: dict[str, Any] = t["Resources"][spec["LaunchTemplateId"]["Ref"]]["Properties"]
    return props


def test_spot_group_is_all_spot_price_capacity_optimized_over_the_listed_types(
    t: dict[str, Any],
) -> None:
    names = Names("vllm-g5")
    groups = _by_name(t, ASG, "AutoScalingGroupName")
    assert set(groups) == {names.asg, names.spot_asg}
    sp = groups[names.spot_asg]
    mixed = sp["MixedInstancesPolicy"]
    assert mixed["InstancesDistribution"] == {
        "OnDemandBaseCapacity": 0,
        "OnDemandPercentageAboveBaseCapacity": 0,
        "SpotAllocationStrategy": spot.ALLOCATION,
    }
    overrides = mixed["LaunchTemplate"]["Overrides"]
    assert overrides == [{"InstanceType": "g5.xlarge"}, {"InstanceType": "g6.xlarge"}]
    assert (sp["MinSize"], sp["MaxSize"]) == ("0", "4")
    # ECS, not the group, picks which instance goes (managed termination protection).
    assert sp["NewInstancesProtectedFromScaleIn"] is True


def test_only_the_spot_launch_template_turns_on_spot_draining(t: dict[str, Any]) -> None:
    names = Names("vllm-g5")
    groups = _by_name(t, ASG, "AutoScalingGroupName")
    od, sp = _lt_of(t, groups[names.asg]), _lt_of(t, groups[names.spot_asg])
    assert f"{spot.DRAIN_FLAG}=true" in _ecs_config(sp)
    assert spot.DRAIN_FLAG not in _ecs_config(od)
    # One instance profile for both: the Spot template reuses the On-Demand one's.
    od_data, sp_data = od["LaunchTemplateData"], sp["LaunchTemplateData"]
    assert sp_data["IamInstanceProfile"] == od_data["IamInstanceProfile"]
    assert "InstanceType" not in sp_data and od_data["InstanceType"] == "g5.xlarge"


def test_adding_spot_leaves_the_on_demand_group_and_template_as_they_were(
    t: dict[str, Any], templates: dict[str, Any]
) -> None:
    # The same spec without [capacity.spot] (examples/g5-vllm.toml): a redeploy
    # that adds Spot replaces no On-Demand instance.
    plain = templates["g5-vllm.toml"]["Resources"]
    for lid in ("GpuServiceLaunchTemplate9341CA09", "GpuServiceAsgASG2ECFC5B9"):
        assert t["Resources"][lid] == plain[lid], lid


def test_the_service_keeps_its_base_on_demand_and_weights_the_rest(t: dict[str, Any]) -> None:
    (svc,) = resources(t, "AWS::ECS::Service").values()
    props = svc["Properties"]
    od_cp, spot_cp = "GpuServiceCapacityProvider45A9D374", "GpuServiceSpotCapacityProvider71C8D205"
    assert props["CapacityProviderStrategy"] == [
        {"Base": 1, "CapacityProvider": {"Ref": od_cp}, "Weight": 30},
        {"Base": 0, "CapacityProvider": {"Ref": spot_cp}, "Weight": 70},
    ]
    # A task of either provider, or a replacement on On-Demand room, may start on any listed type.
    assert props["PlacementConstraints"] == [
        {"Expression": "attribute:ecs.instance-type in [g5.xlarge, g6.xlarge]", "Type": "memberOf"}
    ]
    (assoc,) = resources(t, "AWS::ECS::ClusterCapacityProviderAssociations").values()
    a = assoc["Properties"]
    assert a["CapacityProviders"] == [{"Ref": od_cp}, {"Ref": spot_cp}]
    assert a["DefaultCapacityProviderStrategy"] == props["CapacityProviderStrategy"]


def test_the_release_empties_both_groups(t: dict[str, Any]) -> None:
    releases = resources(t, "Custom::AsgRelease")
    groups = {json.dumps(r["Properties"]["AutoScalingGroupName"]) for r in releases.values()}
    assert groups == {
        '{"Ref": "GpuServiceAsgASG2ECFC5B9"}',
        '{"Ref": "GpuServiceSpotAsgASGDB1101FC"}',
    }
    (empty,) = [st for lid, st in statements(t) if st.get("Sid") == "EmptyThisGroup"]
    named = [render(r) for r in empty["Resource"]]
    assert [r.rsplit("/", 1)[1] for r in named] == ["vllm-g5-gpu-asg", "vllm-g5-spot-asg"]


def test_the_dashboard_shows_both_groups(t: dict[str, Any]) -> None:
    (dash,) = resources(t, "AWS::CloudWatch::Dashboard").values()
    body = render(dash["Properties"]["DashboardBody"])
    assert "vllm-g5-spot-asg" in body and "cp-vllm-g5-spot" in body


def test_spot_on_the_g5_example_deploys_through_the_template_bucket(t: dict[str, Any]) -> None:
    # Spot needs the concurrency signal, so its template carries the sidecar;
    # since issue 16's estimate (about 1.9 KB of script) the g5 example with
    # Spot is over the inline limit by about 1.8 KB (docs/host.md "Size"):
    # deploy refuses it inline naming --template-bucket, through which it fits.
    body = template.minified(t)
    assert len(body.encode()) > template.MAX_TEMPLATE_BODY_BYTES
    problem = template.template_size_problem(body)
    assert problem is not None and "--template-bucket" in problem
    assert template.template_size_problem(body, bucket=True) is None


def test_the_spot_group_has_no_warm_pool_when_the_on_demand_group_has_one() -> None:
    text = SPOT.replace("[capacity.spot]", "[capacity.warm_pool]\n\n[capacity.spot]", 1)
    t = synth_template(parse_spec(text, "spot-pool.toml"))
    (pool,) = resources(t, "AWS::AutoScaling::WarmPool").values()
    assert pool["Properties"]["AutoScalingGroupName"] == {"Ref": "GpuServiceAsgASG2ECFC5B9"}
    names = Names("vllm-g5")
    groups = _by_name(t, ASG, "AutoScalingGroupName")
    sp_files = host.written_files(
        render(_lt_of(t, groups[names.spot_asg])["LaunchTemplateData"]["UserData"]["Fn::Base64"])
    )
    od_files = host.written_files(
        render(_lt_of(t, groups[names.asg])["LaunchTemplateData"]["UserData"]["Fn::Base64"])
    )
    # The pool's script, units and agent check are the On-Demand group's alone.
    assert "ECS_WARM_POOLS_CHECK=true" in od_files["/etc/ecs/ecs.config"]
    assert "ECS_WARM_POOLS_CHECK" not in sp_files["/etc/ecs/ecs.config"]
    assert len(sp_files) < len(od_files)
    # Only the On-Demand group carries the pool's launch hook.
    hooks = {n: g.get("LifecycleHookSpecificationList") for n, g in groups.items()}
    assert hooks[names.asg] and not hooks[names.spot_asg]
