"""What scale to zero costs and saves: idle instance time and the first request's wait."""

from __future__ import annotations

from simhelp import STEP, context, fleet_with, params

from ecs_gpu.design.paths import wake
from ecs_gpu.sim.controllers.wake import WakeLayer
from ecs_gpu.sim.controllers.zero import ZeroRecorder


def test_it_counts_idle_billed_time_and_each_wait_for_a_ready_task() -> None:
    p = params()
    fleet = fleet_with(0)
    ctx = context(p, fleet, 0)
    woken = WakeLayer(wake.WakePath(cooldown_s=300), delay_s=0.0)
    woken.actions = 1
    rec = ZeroRecorder(STEP, gpus_per_instance=4, wake=woken)
    ctx.rate, ctx.billed = 0.0, 1  # no load, one instance billed
    rec.on_served(0.0, ctx)
    ctx.rate, ctx.arrivals = 1.0, 10.0  # a request at zero: it waits
    rec.on_served(10.0, ctx)
    rec.on_served(20.0, ctx)
    fleet.ready = 1
    rec.on_served(70.0, ctx)  # a task is ready 60 s later
    s = rec.summary(ctx)
    assert s["idle_hours"] == round(STEP / 3600, 4)
    assert s["idle_gpu_hours"] == round(4 * STEP / 3600, 4)
    assert s["cold_start_waits_s"] == [60.0] and s["worst_cold_start_wait_s"] == 60.0
    assert (s["wake_scale_outs"], s["sleep_scale_ins"], s["waiting_at_end_s"]) == (1, 0, None)
