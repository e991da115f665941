"""Doctor on a [capacity.spot] deployment: ASG009, SVC003, LT003 (breakages in cases.py)."""

from __future__ import annotations

import base64
from collections.abc import Callable

from ecs_gpu.doctor.checks import run_checks
from ecs_gpu.spot import DRAIN_FLAG

from ..snapshots import NAMES, as_spot, validate_snapshot
from .cases import Snap, _found, spot_interrupted

SPOT_CHECKS = ("ASG009", "SVC003", "LT003")


def _spot(healthy: Callable[[], Snap]) -> Snap:
    s = healthy()
    as_spot(s)
    validate_snapshot(s)
    return s


def test_a_spot_deployment_as_the_template_makes_it_gives_no_finding(
    healthy: Callable[[], Snap],
) -> None:
    report = run_checks(_spot(healthy))
    assert [f.as_dict() for f in report.findings] == []
    assert report.unknown == []
    assert set(SPOT_CHECKS) <= set(report.as_dict()["ok"])


def test_other_weights_are_a_warning_naming_both_strategies(healthy: Callable[[], Snap]) -> None:
    s = _spot(healthy)
    s["services"][0]["capacityProviderStrategy"][1]["weight"] = 50
    (f,) = _found(s, "SVC003")
    assert f.severity == "warning"
    assert "base 0, weight 50" in str(f.evidence[0].value) and "weight 70" in f.fix


def test_without_a_spot_spec_the_strategy_is_not_checked(healthy: Callable[[], Snap]) -> None:
    s = _spot(healthy)
    s["_collection"]["target"]["spot"] = None
    s["services"][0]["capacityProviderStrategy"] = s["services"][0]["capacityProviderStrategy"][:1]
    assert _found(s, "SVC003") == []


def test_an_on_demand_group_replacing_a_stopped_instance_is_no_spot_interruption(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    spot_interrupted(s)
    s["scaling_activities"][-1]["AutoScalingGroupName"] = NAMES.asg
    assert _found(s, "ASG009") == []


def test_draining_set_by_a_script_is_found(healthy: Callable[[], Snap]) -> None:
    # The ECS guide's way: a shell script that appends the line to ecs.config.
    s = _spot(healthy)
    script = f"#!/bin/bash\necho '{DRAIN_FLAG}=true' >> /etc/ecs/ecs.config\n"
    data = s["launch_template_versions"][-1]["LaunchTemplateData"]
    data["UserData"] = base64.b64encode(script.encode()).decode()
    assert _found(s, "LT003") == []
    del data["UserData"]
    (f,) = _found(s, "LT003")
    assert f.evidence[0].value == "no user data"
