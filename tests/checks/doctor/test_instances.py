"""Link checks of checks/doctor/instances.py (the breakage of each check is in
tests/support/doctor_cases.py)."""

from __future__ import annotations

import copy
from collections.abc import Callable

from ecs_gpu.checks.doctor import run_checks
from support.doctor_cases import (
    Snap,
    agent_config_missing,
    agent_disconnected,
    no_gpu_registered,
    no_instances,
)
from support.snapshots import IID, validate_snapshot

# EC2 Auto Scaling's own replacement: terminate and launch, scale-in protection or not.
SET_UNHEALTHY = f"aws autoscaling set-instance-health --instance-id {IID} --health-status Unhealthy"


def test_an_instance_to_replace_is_marked_unhealthy_not_terminated(
    healthy: Callable[[], Snap],
) -> None:
    for breakage, check_id in (
        (agent_disconnected, "ECS002"),
        (no_gpu_registered, "ECS003"),
        (agent_config_missing, "HOST007"),
    ):
        s = healthy()
        breakage(s)
        (f,) = [f for f in run_checks(s).findings if f.id == check_id]
        assert SET_UNHEALTHY in f.fix, check_id
        assert "terminate-instance" not in f.fix and "terminate-instances" not in f.fix


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
    assert not [f for f in run_checks(s).findings if f.id == "ECS003"]
