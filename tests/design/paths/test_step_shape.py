"""step_shape: each of the four step paths' policies is told from the others by its steps."""

from __future__ import annotations

import pytest

from ecs_gpu.design.paths import sleep, wake
from ecs_gpu.design.paths.step_shape import StepShape, shape_of


def _policy(kind: str, *adjustments: int) -> dict[str, object]:
    steps = [{"ScalingAdjustment": a} for a in adjustments]
    return {"StepScalingPolicyConfiguration": {"AdjustmentType": kind, "StepAdjustments": steps}}


@pytest.mark.parametrize(
    ("policy", "shape"),
    [
        (_policy("PercentChangeInCapacity", 100, 200), "fast_path"),
        (_policy("PercentChangeInCapacity", -10, -25), "fast_scale_in"),
        (_policy(wake.ADJUSTMENT_TYPE, wake.TASKS_ADDED), "wake"),
        (_policy(sleep.ADJUSTMENT_TYPE, sleep.TASKS), "sleep"),
        # Someone else's ExactCapacity floor is none of the zero paths: the fast path's check.
        (_policy(sleep.ADJUSTMENT_TYPE, 2), "fast_path"),
    ],
    ids=["fast-path", "fast-scale-in", "wake", "sleep", "other"],
)
def test_a_step_policy_is_judged_as_the_path_its_steps_make_it(
    policy: dict[str, object], shape: StepShape
) -> None:
    assert shape_of(policy) == shape
