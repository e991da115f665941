"""What-if, not deployed: the fast path's alarm also adding instances through an ASG policy."""

from __future__ import annotations

from simhelp import ISSUE8, METRICS, context, fleet_with, params

from ecs_gpu.sim.controllers.asg_fast_path import AsgFastPath
from ecs_gpu.sim.controllers.fast_path import FastPathLayer
from ecs_gpu.sim.controllers.managed_scaling import InstanceLayer
from ecs_gpu.sim.params import SimParams


def _p() -> SimParams:
    return params(max_instances=8, max_tasks=8, scaling=ISSUE8, service=METRICS)


def test_what_if_instance_step_policy_adds_only_a_larger_step_while_warming() -> None:
    fp = _p().fast_path
    assert fp is not None
    asg = AsgFastPath(fp, max_instances=20, warmup_s=120.0)
    low = fp.threshold * 1.05  # +100 %
    high = fp.threshold * 2.5  # +400 %
    assert asg.instances_to_add(0.0, low, 4) == 4
    # Warming: the same step adds nothing, a larger one its difference (400 % - 100 % of 4).
    assert asg.instances_to_add(60.0, low, 8) == 0
    assert asg.instances_to_add(90.0, high, 8) == 12
    # After the warm-up, from the group's size, clamped to max_instances.
    assert asg.instances_to_add(300.0, high, 18) == 2
    assert asg.actions == 3


def test_each_step_it_launches_on_the_fast_path_s_invocation_only() -> None:
    p = _p()
    fp = p.fast_path
    assert fp is not None
    fleet = fleet_with(1, slots=1)  # one instance, its one task serving
    ctx = context(p, fleet, 1)
    ctx.instances = InstanceLayer(p, lambda: 120.0)
    alarm = FastPathLayer(fp, p.max_tasks)
    asg = AsgFastPath(fp, p.max_instances, 120.0, alarm)
    asg.on_step(0.0, ctx)
    assert len(fleet.instances) == 1  # no invocation, no launch
    for t in (0.0, 10.0):
        alarm.series.publish(t, fp.threshold * 1.05)  # +100 %
    alarm.on_step(10.0, ctx)
    asg.on_step(10.0, ctx)
    assert len(fleet.instances) == 2 and asg.actions == 1  # +100 % of one instance
