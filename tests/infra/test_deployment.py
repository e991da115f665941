"""Deployments at full scale: the minimum healthy percent rule, on specs and templates."""

from __future__ import annotations

from typing import Any

import pytest

from ecs_gpu.infra.deployment import (
    FULL,
    MAX_PERCENT,
    free_slots_at_max,
    min_healthy_percent,
    tasks_kept,
)
from ecs_gpu.spec import Spec, parse_spec

from .conftest import G5
from .tpl import props


def _g5(max_instances: int, max_tasks: int) -> Spec:
    text = G5.replace("max_instances = 4", f"max_instances = {max_instances}").replace(
        "max_tasks = 4", f"max_tasks = {max_tasks}"
    )
    return parse_spec(text, "g5.toml")


@pytest.mark.parametrize("n", range(1, 101))
def test_at_max_tasks_without_room_ecs_may_stop_exactly_one_task(n: int) -> None:
    spec = _g5(max_instances=n, max_tasks=n)  # one task per g5.xlarge: no free GPU at max
    assert free_slots_at_max(spec) == 0
    p = min_healthy_percent(spec)
    assert p < FULL
    assert tasks_kept(n, p) == n - 1


@pytest.mark.parametrize("n", range(2, 11))
def test_below_max_tasks_new_tasks_still_start_first(n: int) -> None:
    p = min_healthy_percent(_g5(max_instances=n, max_tasks=n))
    for desired in range(1, n):
        assert tasks_kept(desired, p) == desired, (n, desired, p)


def test_room_for_one_more_task_keeps_100_percent() -> None:
    spec = _g5(max_instances=5, max_tasks=4)
    assert free_slots_at_max(spec) == 1
    assert min_healthy_percent(spec) == FULL


def test_one_task_fleet_without_room_deploys_with_a_gap() -> None:
    # The only alternative is a deployment that can never place its task.
    assert min_healthy_percent(_g5(max_instances=1, max_tasks=1)) == 0


def test_template_carries_the_rule(t: dict[str, Any], spec: Spec) -> None:
    cfg = props(t, "AWS::ECS::Service")["DeploymentConfiguration"]
    assert cfg["MinimumHealthyPercent"] == min_healthy_percent(spec)
    assert cfg["MaximumPercent"] == MAX_PERCENT
    # Every example is sized to its maximum, so each rolls one task at a time there.
    assert cfg["MinimumHealthyPercent"] < FULL
    assert tasks_kept(spec.scaling.max_tasks, cfg["MinimumHealthyPercent"]) == (
        spec.scaling.max_tasks - 1
    )


def test_template_with_headroom_starts_new_tasks_first(variant_reports: dict[str, Any]) -> None:
    cfg = props(variant_reports["deploy-headroom"].template, "AWS::ECS::Service")
    assert cfg["DeploymentConfiguration"]["MinimumHealthyPercent"] == FULL
