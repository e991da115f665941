"""[[scaling.schedule]]: the actions in force at the start and due each minute, applied."""

from __future__ import annotations

import numpy as np
from simhelp import STEP, context, fleet_with

from ecs_gpu.sim import params as P
from ecs_gpu.sim.controllers.schedule import ScheduleLayer
from ecs_gpu.sim.engine import simulate
from ecs_gpu.sim.params import from_spec
from ecs_gpu.spec import Spec, parse_spec
from example_specs import G5

ZERO = G5.replace("min_tasks = 1", "min_tasks = 0").replace(
    "min_instances = 1", "min_instances = 0"
)


def _spec(text: str) -> Spec:
    return parse_spec(text, "z.toml")


def test_the_schedule_in_force_at_the_start_is_the_latest_before_it() -> None:
    night = '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 0\n'
    day = '\n[[scaling.schedule]]\ncron = "0 8 ? * MON-FRI *"\nmin_tasks = 1\nmax_tasks = 4\n'
    p = from_spec(_spec(ZERO + night + day))
    layer = ScheduleLayer(p.schedule.actions, P.DEFAULT_START_UTC)
    assert layer.initial() == (0, 0)  # Sunday 20:00 was the last
    assert layer.due(8 * 3600.0) == (1, 4) and layer.due(8 * 3600.0 + 60) is None
    # Saturday 08:00 (day 5) runs nothing: MON-FRI.
    assert layer.due(5 * 86400.0 + 8 * 3600.0) is None
    # At the start (t = 0, Monday 00:00) the night's (0, 0) holds the service at zero.
    s = simulate(p, np.full(60, 5.0), step_s=STEP, seed=0).summary
    assert s["max_tasks"] == 0 and s["unserved_requests"] > 0


def test_an_action_due_at_the_start_itself_is_in_force() -> None:
    # t = 0 is Monday 00:00 UTC: a midnight wake must not leave the evening's zero on.
    night = '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 0\n'
    midnight = '\n[[scaling.schedule]]\ncron = "0 0 * * ? *"\nmin_tasks = 1\nmax_tasks = 4\n'
    p = from_spec(_spec(ZERO + night + midnight))
    assert ScheduleLayer(p.schedule.actions, P.DEFAULT_START_UTC).initial() == (1, 4)
    s = simulate(p, np.full(60, 1.0), step_s=STEP, seed=0).summary
    assert s["max_tasks"] >= 1 and s["unserved_requests"] == 0


def test_at_the_start_and_each_minute_an_action_sets_the_bounds_and_the_count() -> None:
    night = '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 0\n'
    day = '\n[[scaling.schedule]]\ncron = "0 8 ? * MON-FRI *"\nmin_tasks = 2\nmax_tasks = 4\n'
    p = from_spec(_spec(ZERO + night + day))
    fleet = fleet_with(1)
    ctx = context(p, fleet, 1)
    layer = ScheduleLayer(p.schedule.actions, P.DEFAULT_START_UTC)
    layer.on_start(ctx)  # Sunday 20:00's (0, 0) is in force
    assert ctx.service.desired == 0 == fleet.desired_total
    layer.on_minute(8 * 3600.0, ctx)  # Monday 08:00: at least 2
    scaler = ctx.service.scaler
    assert (scaler.min_tasks, scaler.max_tasks, ctx.service.desired) == (2, 4, 2)
    layer.on_minute(8 * 3600.0 + 60, ctx)  # nothing due: unchanged
    assert ctx.service.desired == 2
