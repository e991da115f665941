"""[capacity.spot] in the template: a Spot group, its provider and the strategy with a base."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ecs_gpu import host
from ecs_gpu.contracts import signals
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import Design, spot
from ecs_gpu.design.paths import wake
from ecs_gpu.infra import observability
from ecs_gpu.spec import parse_spec
from ecs_gpu.template import limits as template
from ecs_gpu.template.synth import synth_template

from .conftest import SPOT, SPOT_OD0
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


def _agent_poll_actions(t: dict[str, Any]) -> list[str]:
    from ecs_gpu.infra.iam import SID_ECS_POLL

    (poll,) = [st for _, st in statements(t) if st.get("Sid") == SID_ECS_POLL]
    actions = poll["Action"]
    return actions if isinstance(actions, list) else [actions]


def test_the_agent_may_set_a_noticed_spot_instance_draining_on_this_cluster_only(
    t: dict[str, Any], templates: dict[str, Any]
) -> None:
    """The drain flag makes the agent call UpdateContainerInstancesState as the instance
    role; without the action the call is refused and the instance stays ACTIVE."""
    from ecs_gpu.infra.iam import SID_ECS_POLL

    assert spot.DRAIN_ACTION in _agent_poll_actions(t)
    (poll,) = [st for _, st in statements(t) if st.get("Sid") == SID_ECS_POLL]
    assert "ecs:cluster" in poll["Condition"]["ArnEquals"]
    # Least privilege: a fleet without Spot has no flag and no such grant.
    assert spot.DRAIN_ACTION not in _agent_poll_actions(templates["g5-vllm.toml"])


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
    # since issue 16's estimate (about 1.9 KB of script) and the Spot alarms
    # (3.0 KB) the g5 example with Spot is over the inline limit by about
    # 4.8 KB (docs/host.md "Size"):
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


ALARM = "AWS::CloudWatch::Alarm"


def _alarms(t: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        r["Properties"]["AlarmName"]: r["Properties"]
        for r in resources(t, ALARM).values()
        if "AlarmName" in r["Properties"]
    }


def _queries(alarm: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {q["Id"]: q for q in alarm["Metrics"]}


def _stat(q: dict[str, Any]) -> tuple[str, str, list[dict[str, str]], str, int]:
    ms = q["MetricStat"]
    m = ms["Metric"]
    return m["Namespace"], m["MetricName"], m["Dimensions"], ms["Stat"], ms["Period"]


def test_the_spot_gpu_series_alarm_reads_it_only_while_the_group_has_instances(
    t: dict[str, Any],
) -> None:
    names = Names("vllm-g5")
    spec = parse_spec(SPOT, "spot.toml")
    a = _alarms(t)[names.spot_gpu_metric_missing_alarm]
    qs = _queries(a)
    (expr,) = [q for q in qs.values() if "Expression" in q]
    assert (
        expr["Expression"] == spot.GPU_MISSING_EXPRESSION == ("IF(FILL(n, 0) > 0, FILL(m, -1), 0)")
    )
    assert expr["ReturnData"] is True
    group = [{"Name": "AutoScalingGroupName", "Value": names.spot_asg}]
    assert _stat(qs["m"]) == ("CWAgent", "nvidia_smi_utilization_gpu", group, "Average", 60)
    assert _stat(qs["n"]) == ("AWS/AutoScaling", "GroupInServiceInstances", group, "Average", 60)
    assert (a["ComparisonOperator"], a["Threshold"]) == ("LessThanThreshold", 0)
    # At zero Spot instances the expression reads 0: no data is no fault.
    assert a["TreatMissingData"] == "notBreaching"
    # The On-Demand GPU alarm's wait: twice the launch-to-first-datapoint time.
    gpu = signals.SERIES[signals.SignalPlan.of(spec.scaling).gpu_series]
    periods = observability.series_missing_alarm_evaluation_periods(Design.of(spec), gpu)
    assert a["EvaluationPeriods"] == a["DatapointsToAlarm"] == periods
    assert names.spot_asg in a["AlarmDescription"]


def _missing(t: dict[str, Any], construct_id: str) -> dict[str, Any]:
    (a,) = [
        r["Properties"] for lid, r in resources(t, ALARM).items() if lid.startswith(construct_id)
    ]
    return a


_GPU_MISSING = "GpuServiceObservabilityGpuMetricMissing"
_CONCURRENCY_MISSING = "GpuServiceObservabilityConcurrencyMetricMissing"


def test_with_a_base_on_demand_the_on_demand_gpu_alarm_stays_plain(t: dict[str, Any]) -> None:
    # on_demand_base 1 (the default), min_instances 1: the group always has a host.
    a = _missing(t, _GPU_MISSING)
    assert a["MetricName"] == "nvidia_smi_utilization_gpu" and "Metrics" not in a
    assert a["TreatMissingData"] == "breaching"


def test_without_base_the_on_demand_gpu_alarm_reads_its_series_only_while_it_has_instances(
    variant_reports: dict[str, Any],
) -> None:
    t = variant_reports["spot-od0"].template
    names = Names("vllm-g5")
    spec = parse_spec(SPOT_OD0, "spot-od0.toml")
    assert spot.on_demand_may_be_empty(spec) and not wake.scales_to_zero(spec)
    a = _missing(t, _GPU_MISSING)
    assert a["AlarmName"] == names.gpu_metric_missing_alarm
    qs = _queries(a)
    (expr,) = [q for q in qs.values() if "Expression" in q]
    # The Spot alarm's form, on the On-Demand group's own hosts and instance count.
    assert expr["Expression"] == spot.GPU_MISSING_EXPRESSION
    assert expr["Label"] == spot.ON_DEMAND_GPU_MISSING_LABEL
    group = [{"Name": "AutoScalingGroupName", "Value": names.asg}]
    assert _stat(qs["m"]) == ("CWAgent", "nvidia_smi_utilization_gpu", group, "Average", 60)
    assert _stat(qs["n"]) == ("AWS/AutoScaling", "GroupInServiceInstances", group, "Average", 60)
    assert (a["ComparisonOperator"], a["Threshold"]) == ("LessThanThreshold", 0)
    assert a["TreatMissingData"] == "notBreaching"
    assert a["AlarmDescription"].startswith(f"While {names.asg} has instances in service: ")
    gpu = signals.SERIES[signals.SignalPlan.of(spec.scaling).gpu_series]
    periods = observability.series_missing_alarm_evaluation_periods(Design.of(spec), gpu)
    assert a["EvaluationPeriods"] == a["DatapointsToAlarm"] == periods
    # The concurrency series is the service's, written by its tasks on either group: it
    # must arrive whenever a task runs, Spot or not, so its alarm stays plain.
    c = _missing(t, _CONCURRENCY_MISSING)
    assert c["MetricName"] == "ConcurrentRequestsPerTask" and "Metrics" not in c
    assert c["TreatMissingData"] == "breaching"


_ZERO = '\n[load_balancer]\nscheme = "internal"\n'


def test_at_zero_without_base_the_gpu_alarm_needs_a_task_and_an_on_demand_instance() -> None:
    text = SPOT_OD0.replace("min_tasks = 1", "min_tasks = 0", 1) + _ZERO
    spec = parse_spec(text, "spot-od0-zero.toml")
    assert spot.on_demand_may_be_empty(spec) and wake.scales_to_zero(spec)
    t = synth_template(spec)
    a = _missing(t, _GPU_MISSING)
    qs = _queries(a)
    (expr,) = [q for q in qs.values() if "Expression" in q]
    assert expr["Expression"] == "IF(FILL(c, 0) > 0, IF(FILL(n, 0) > 0, FILL(m, -1), 0), 0)"
    assert expr["Label"] == spot.ON_DEMAND_GPU_MISSING_ASLEEP_LABEL
    assert _stat(qs["c"])[:2] == (wake.RUNNING_NAMESPACE, wake.RUNNING_METRIC)
    assert _stat(qs["n"])[2] == [{"Name": "AutoScalingGroupName", "Value": Names("vllm-g5").asg}]
    assert a["TreatMissingData"] == "notBreaching"
    # The concurrency alarm keeps the scale-to-zero form alone.
    c = _missing(t, _CONCURRENCY_MISSING)
    (cexpr,) = [q for q in c["Metrics"] if "Expression" in q]
    assert cexpr["Expression"] == wake.MISSING_EXPRESSION


def test_at_zero_with_a_base_the_gpu_alarm_keeps_the_scale_to_zero_form() -> None:
    # The base's task goes On-Demand first: a task running means an On-Demand host.
    text = (
        SPOT.replace("min_tasks = 1", "min_tasks = 0", 1).replace(
            "min_instances = 1", "min_instances = 0", 1
        )
        + _ZERO
    )
    spec = parse_spec(text, "spot-zero.toml")
    assert not spot.on_demand_may_be_empty(spec) and wake.scales_to_zero(spec)
    a = _missing(synth_template(spec), _GPU_MISSING)
    (expr,) = [q for q in a["Metrics"] if "Expression" in q]
    assert expr["Expression"] == wake.MISSING_EXPRESSION
    assert {q["Id"] for q in a["Metrics"]} == {expr["Id"], wake.SERIES_ID, wake.RUNNING_ID}


def test_the_shortfall_alarm_pages_when_the_group_stays_short_of_spot_instances(
    t: dict[str, Any],
) -> None:
    names = Names("vllm-g5")
    a = _alarms(t)[names.spot_capacity_shortfall_alarm]
    qs = _queries(a)
    (expr,) = [q for q in qs.values() if "Expression" in q]
    assert expr["Expression"] == "FILL(d, 0) - FILL(n, 0)"
    group = [{"Name": "AutoScalingGroupName", "Value": names.spot_asg}]
    assert _stat(qs["d"]) == ("AWS/AutoScaling", "GroupDesiredCapacity", group, "Average", 60)
    assert _stat(qs["n"]) == ("AWS/AutoScaling", "GroupInServiceInstances", group, "Average", 60)
    assert (a["ComparisonOperator"], a["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1)
    assert a["TreatMissingData"] == "notBreaching"
    # The default 150-s boot: 2 x (150 + 120) s is 9 minutes, under the 10-minute floor.
    assert a["EvaluationPeriods"] == a["DatapointsToAlarm"] == 10
    assert "10 minutes" in a["AlarmDescription"] and "on_demand_base" in a["AlarmDescription"]


def test_the_shortfall_wait_grows_with_the_boot() -> None:
    text = SPOT.replace("\n[simulation]\n", "\n[simulation]\ninstance_boot_s = 600\n", 1)
    slow = parse_spec(text, "slow.toml")
    # 2 x (600 + 120) s = 24 minutes.
    assert observability.spot_shortfall_evaluation_periods(slow) == 24


def test_both_spot_alarms_are_on_the_status_panel(t: dict[str, Any]) -> None:
    (dash,) = resources(t, "AWS::CloudWatch::Dashboard").values()
    body = json.dumps(dash["Properties"]["DashboardBody"])
    by_name = {r["Properties"].get("AlarmName"): lid for lid, r in resources(t, ALARM).items()}
    names = Names("vllm-g5")
    for name in (names.spot_gpu_metric_missing_alarm, names.spot_capacity_shortfall_alarm):
        assert json.dumps({"Fn::GetAtt": [by_name[name], "Arn"]}) in body
    assert "Metrics arriving? Spot capacity?" in body


def test_no_spot_alarm_without_spot(templates: dict[str, Any]) -> None:
    for name, tpl in templates.items():
        assert not [n for n in _alarms(tpl) if "-spot-" in n], name


def test_the_spot_alarms_tell_the_alert_topic_and_may_publish_to_it(
    variant_reports: dict[str, Any],
) -> None:
    t = variant_reports["spot-alerts-email"].template
    (topic_id,) = resources(t, "AWS::SNS::Topic")
    names = Names("vllm-g5")
    alarms = _alarms(t)
    for name in (names.spot_gpu_metric_missing_alarm, names.spot_capacity_shortfall_alarm):
        assert alarms[name]["AlarmActions"] == [{"Ref": topic_id}], name
        assert alarms[name]["OKActions"] == [{"Ref": topic_id}], name
    (policy,) = resources(t, "AWS::SNS::TopicPolicy").values()
    (publish,) = [
        st
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
        if st.get("Sid") == "CloudWatchAlarmPublishes"
    ]
    sources = [render(a) for a in publish["Condition"]["ArnEquals"]["aws:SourceArn"]]
    assert [s.rsplit(":", 1)[1] for s in sources[-2:]] == [
        names.spot_gpu_metric_missing_alarm,
        names.spot_capacity_shortfall_alarm,
    ]
    assert variant_reports["spot-alerts-email"].findings == []


def test_with_a_topic_arn_the_spot_alarms_tell_it() -> None:
    topic = "arn:aws:sns:us-east-1:123456789012:oncall"
    t = synth_template(parse_spec(SPOT + f'\n[alerts]\nsns_topic_arn = "{topic}"\n', "arn.toml"))
    alarms = _alarms(t)
    names = Names("vllm-g5")
    for name in (names.spot_gpu_metric_missing_alarm, names.spot_capacity_shortfall_alarm):
        assert alarms[name]["AlarmActions"] == alarms[name]["OKActions"] == [topic], name
    # The same topic as the On-Demand group's GPU alarm.
    assert alarms[names.gpu_metric_missing_alarm]["AlarmActions"] == [topic]
