"""What the controllers share: the hooks the engine picks, the desired count applied, precedence."""

from __future__ import annotations

from typing import Any

from simhelp import fleet_with

from ecs_gpu.sim.controllers.base import (
    HOOKS,
    Context,
    Controller,
    apply_desired,
    hooks,
    largest_capacity,
)


class _Minute(Controller):
    def on_minute(self, t: float, ctx: Context) -> None:
        pass


class _Billing(Controller):
    def billed(self, t: float, ctx: Context) -> int:
        return 2

    def summary(self, ctx: Context) -> dict[str, Any]:
        return {"billed": 2}


def test_the_engine_calls_only_the_hooks_a_controller_overrides_in_its_order() -> None:
    a, b, c = _Minute(), _Billing(), _Minute()
    assert hooks([a, b, c], "on_minute") == [a.on_minute, c.on_minute]
    assert hooks([a, b, c], "billed") == [b.billed]
    assert hooks([a, b, c], "on_step") == []
    assert set(HOOKS) <= {n for n in dir(Controller) if n.startswith(("on_", "billed"))}


def test_applying_a_desired_count_starts_or_stops_tasks() -> None:
    fleet = fleet_with(2)
    apply_desired(0.0, fleet, 5)  # three more: placed on the instance's free GPUs
    assert fleet.desired_total == 5 and fleet.provisioning == 0
    apply_desired(0.0, fleet, 1)
    assert fleet.desired_total == 1


def test_largest_capacity_wins() -> None:
    # PutScalingPolicy: precedence to the largest capacity, for scale out and scale in.
    assert largest_capacity([6, 9]) == 9  # a scale-out beside the step: the scale-out
    assert largest_capacity([6, 4]) == 6  # two scale-ins: the smaller cut
    assert largest_capacity([]) is None
