"""Which of ecs-gpu's step paths a deployed StepScaling policy is, told by its steps.

A service may carry four step policies (infra/scaling.py): the fast path's
adds a percentage (:mod:`ecs_gpu.design.paths.fast_path`), the fast scale-in's removes one
(:mod:`ecs_gpu.design.paths.fast_scale_in`), the wake path's adds tasks
(``ChangeInCapacity``, :mod:`ecs_gpu.design.paths.wake`) and the sleep path's sets 0
(``ExactCapacity``, :mod:`ecs_gpu.design.paths.sleep`). Their alarms share series (the
wake's and the sleep's both read the load balancer's RequestCount as ``r``),
so ``doctor`` and ``verify scaling`` judge an alarm only as the path of the
policy it invokes: :func:`shape_of`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ecs_gpu.design.paths import fast_scale_in, sleep, wake

StepShape = Literal["fast_path", "fast_scale_in", "wake", "sleep"]


def shape_of(policy: Mapping[str, Any]) -> StepShape:
    """The step path a StepScaling policy (as DescribeScalingPolicies lists it) has the
    shape of; one that is none of the other three counts as the fast path's."""
    if fast_scale_in.is_scale_in_policy(policy):
        return "fast_scale_in"
    if wake.is_wake_policy(policy):
        return "wake"
    if sleep.is_sleep_policy(policy):
        return "sleep"
    return "fast_path"
