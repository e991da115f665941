"""startup.py: how long a RUNNING task may take before its load balancer target serves."""

from __future__ import annotations

import pytest

from ecs_gpu.design import startup
from ecs_gpu.infra import loadbalancer
from ecs_gpu.spec import parse_spec
from example_specs import G5, P5


def test_a_running_task_serves_after_its_model_as_slow_as_the_grace_allows() -> None:
    # One ALB health-check round after the model: the healthy threshold the target
    # group is written with, at its interval (infra/loadbalancer.py).
    assert startup.GRACE_MARGIN_S == loadbalancer.HEALTHY_THRESHOLD * (
        loadbalancer.HEALTH_CHECK_INTERVAL_S
    )
    for text, ready in ((G5, 150.0), (P5, 2397.84 * 1.5 + 60)):
        spec = parse_spec(text, "s.toml")
        assert startup.running_to_healthy_s(spec) == pytest.approx(ready)
        # The image pull is the task's PENDING time, not in it; the grace period has it.
        pull = spec.simulation.image_pull_s
        assert startup.health_timings(spec).grace_period_s >= ready + pull
