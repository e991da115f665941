"""The GPU-hours goal against the floor: the least any fleet AWS allows can pay.

On every load of benchmarks/stress.py (same scale, seed and steps), the
floor of ``ecs_gpu.sim.floor`` with the per-load overload bound of the goals
(1.1 x the overload of in-flight concurrency with the covering pool): no
fleet whose instances leave only after managed scaling's 15 low CPR minutes
pays less for that overload, even one that knows the load in advance and
starts its tasks at once. Beside it, a fleet those rules allow within the
bound (the dual's schedule), the least constant fleet within the bound, the
reference's GPU-hours, and the concurrency default's designs with the pool
against the floor: what is AWS's (the floor over the oracle) and what is not
knowing the future (a design over the floor).

Run:

    .venv/bin/python benchmarks/floor.py

It prints a Markdown table (docs/benchmarks.md "The GPU-hours floor").
"""

from __future__ import annotations

import math
import sys

from compare_signals import NEW_DEFAULT_POOL, NEW_FSI_POOL, design
from research.floor import constant_fleet, fleet_floor
from research.stress import SHAPES
from stress import LABELS, load

from ecs_gpu.sim.workload import bundled_traces

BOUND = "in-flight concurrency + warm pool"
DESIGNS = (NEW_DEFAULT_POOL, NEW_FSI_POOL)
STEP_S = 10.0


def main() -> int:
    traces = bundled_traces()
    base = design("GPU default (task-gpus)")
    print(
        "| load | overload bound s (1.1 x in-flight concurrency's) "
        "| floor GPU-hours (no fleet pays less) "
        "| a fleet within the bound: GPU-hours | its overload s | floor x reference "
        "| reference GPU-hours | 1.5 x reference reachable "
        "| a constant fleet within the bound: instances | its GPU-hours | x reference "
        + "".join(f"| {LABELS[d]} GPU-hours | x floor " for d in DESIGNS)
        + "|"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|" + "---:|---:|" * len(DESIGNS))
    for name in (*traces, *SHAPES):
        go = load(name, traces, base)[1]
        ref = go(design("reference")).summary["gpu_hours"]
        bound_s = 1.1 * go(design(BOUND)).summary["overload_seconds"]
        runs = {d: go(design(d)) for d in DESIGNS}
        first = runs[DESIGNS[0]]
        f = fleet_floor(
            first.params, first.timeline["offered_rps"], STEP_S, math.floor(bound_s / STEP_S + 1e-9)
        )
        fleet = "-" if math.isinf(f.fleet_gpu_hours) else f"{f.fleet_gpu_hours:.1f}"
        reach = "yes" if f.lower_gpu_hours <= 1.5 * ref else "no"
        held = constant_fleet(
            first.params, first.timeline["offered_rps"], STEP_S, math.floor(bound_s / STEP_S + 1e-9)
        )
        const = (
            "| - | - | - "
            if held is None
            else f"| {held.instances} | {held.gpu_hours:.1f} | {held.gpu_hours / ref:.2f} "
        )
        cells = "".join(
            f"| {r.summary['gpu_hours']:.1f} | {r.summary['gpu_hours'] / f.lower_gpu_hours:.2f} "
            for r in runs.values()
        )
        print(
            f"| {name} | {bound_s:.0f} | {f.lower_gpu_hours:.1f} | {fleet} "
            f"| {f.fleet_overload_steps * STEP_S:.0f} | {f.lower_gpu_hours / ref:.2f} "
            f"| {ref:.1f} | {reach} {const}{cells}|"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
