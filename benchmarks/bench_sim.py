"""Simulator speed: 14 days of ServeGen M-large at 10-second steps.

The issue's bar: under 10 seconds on one core. Run:

    .venv/bin/python benchmarks/bench_sim.py

It pins itself to one CPU where the OS allows, runs the simulation a few
times and prints the best and median wall time and simulated days per second.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

# The design comparison's fleet and load (this folder is on sys.path when
# the script runs): g5.xlarge, up to 64 single-GPU tasks, [scaling] defaults
# (task-gpus GPU metric, scale-in guard on the AlarmLow window).
from compare_designs import STEP_S, design, mean_scale

from ecs_gpu.sim import bundled_trace_path, read_trace, run

REPEATS = 3
BAR_S = 10.0


def main() -> int:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    p = design("")
    trace = read_trace(bundled_trace_path())
    # Mean load = MEAN_TASKS (20) tasks at the GPU target, as in compare_designs.py.
    scale = mean_scale(p, trace)
    times = []
    steps = 0
    for seed in range(REPEATS):
        t0 = time.perf_counter()
        result = run(p, trace, rate_scale=scale, step_s=STEP_S, seed=seed)
        times.append(time.perf_counter() - t0)
        steps = len(result.timeline["t_s"])
    days = trace.duration_s / 86400.0
    best, med = min(times), statistics.median(times)
    print(f"trace: {trace.name}, {days:g} days, {steps} steps of {STEP_S:g} s, rate x{scale:.4g}")
    print(f"wall time: best {best:.2f} s, median {med:.2f} s over {REPEATS} runs (one core)")
    print(f"simulated days per second: {days / med:.1f} (median)")
    print(f"bar: < {BAR_S:g} s -> {'PASS' if med < BAR_S else 'FAIL'}")
    return 0 if med < BAR_S else 1


if __name__ == "__main__":
    sys.exit(main())
