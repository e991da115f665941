"""Scale to zero on the engine: a fleet at zero that no request reaches.

The wake, sleep and schedule controllers have their own tests in controllers/;
runs over whole nights are tests/benchmarks/test_scale_to_zero.py (the
night-at-zero shape is research the benchmarks run).
"""

from __future__ import annotations

import numpy as np

from ecs_gpu.sim.engine import simulate
from ecs_gpu.sim.params import from_spec
from ecs_gpu.spec import Spec, parse_spec
from example_specs import G5

STEP = 10.0
LB = '\n[load_balancer]\nscheme = "internal"\n'
ZERO = G5.replace("min_tasks = 1", "min_tasks = 0").replace(
    "min_instances = 1", "min_instances = 0"
)


def _spec(text: str) -> Spec:
    return parse_spec(text, "z.toml")


def test_without_requests_a_fleet_at_zero_pays_nothing() -> None:
    p = from_spec(_spec(ZERO + LB))
    s = simulate(p, np.zeros(360), step_s=STEP, seed=0).summary
    assert s["gpu_hours"] == 0 and s["max_instances"] == 0 and s["wake_scale_outs"] == 0
    assert s["cold_start_waits_s"] == [] and s["idle_gpu_hours"] == 0
