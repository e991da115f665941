"""Issue 16's measures: every bundled trace and the made-up stress shapes, reference vs today.

Loads as in compare_signals.py: each bundled trace (docs/traces.md) and each
stress shape (ecs_gpu.sim.stress: flash-crowd, periodic-bursts,
plateau-drop) is scaled so its mean load needs MEAN_TASKS (20) single-GPU
g5.xlarge tasks at a 70 % GPU target; seed 0, 10-second steps, warm start.
A stress shape is a mean rate per step, so it gets Poisson arrivals inside
each step, as a window trace does. Designs, from compare_signals.DESIGNS:
the reference module's, today's default with [service.metrics]
(concurrency + fast path), without and with the covering warm pool (the
design issue 16 measured), and the same with the fast scale-in
(``fast_scale_in = true``, ecs_gpu.fast_scale_in), without and with the pool.

Per run: GPU-hours, x the reference's, x the oracle's (the run's own
target), overload seconds, the worst overload episode, the peak desired
count against the tasks the peak one-minute load needs at the design's
target, and the time from each load drop until the desired count is within
10 % of need (ecs_gpu.sim.transients: worst and median over the drops that
got there, and how many did not while the load stayed down).

Run:

    .venv/bin/python benchmarks/stress.py [--detail]

It prints a Markdown table (docs/benchmarks.md "Pay for what you serve:
the measures"); --detail also prints, on the flash crowd, how long the
peak desired count held, the per-task concurrency during the crowd, and
when tasks and instances came down after it.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from compare_designs import MEAN_TASKS, STEP_S, mean_scale
from compare_signals import FAST_SCALE_IN, FAST_SCALE_IN_POOL, SEED, design, worst

from ecs_gpu.sim import run
from ecs_gpu.sim.engine import SimResult, simulate
from ecs_gpu.sim.params import SimParams
from ecs_gpu.sim.stress import SHAPES, shape_rates
from ecs_gpu.sim.transients import drop_stats, drops_to_need, minute_means, peak_vs_need
from ecs_gpu.sim.workload import bundled_traces

LABELS = {
    "reference": "reference",
    "concurrency + fast path": "concurrency + fast path",
    "concurrency + fast path + warm pool": "concurrency + fast path + warm pool",
    FAST_SCALE_IN: "+ fast scale-in",
    FAST_SCALE_IN_POOL: "+ fast scale-in + warm pool",
}


def runs() -> dict[str, tuple[float, dict[str, SimResult]]]:
    """Load name -> (rate scale, design label -> result)."""
    base = design("task-gpus (default before)")
    out: dict[str, tuple[float, dict[str, SimResult]]] = {}
    for name, bundled in bundled_traces().items():
        trace = bundled.load()
        scale = mean_scale(base, trace)
        out[name] = (
            scale,
            {
                label: run(design(label), trace, rate_scale=scale, step_s=STEP_S, seed=SEED)
                for label in LABELS
            },
        )
    for name in SHAPES:
        unit = shape_rates(name, STEP_S)
        # mean_scale's rule on the shape: its mean needs MEAN_TASKS at the GPU target.
        scale = MEAN_TASKS * base.rps_per_task_at_target / float(unit.mean())
        out[name] = (
            scale,
            {
                label: simulate(design(label), unit * scale, step_s=STEP_S, seed=SEED)
                for label in LABELS
            },
        )
    return out


def _min(s: float | None) -> str:
    return "-" if s is None else f"{s / 60:.1f}"


def measures(p: SimParams, result: SimResult) -> dict[str, Any]:
    tl = result.timeline
    peak = peak_vs_need(p, tl["offered_rps"], tl["desired_tasks"], result.step_s)
    stats = drop_stats(drops_to_need(p, tl["offered_rps"], tl["desired_tasks"], result.step_s))
    return {"peak": peak, "drops": stats}


def table(res: dict[str, tuple[float, dict[str, SimResult]]]) -> None:
    print(
        "| load | design | GPU-hours | x reference | x oracle | overload s | worst episode "
        "| peak desired | needed at target for the peak | x need | load drops "
        "| drop to 10 % of need: worst min | median min | not within 10 % |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, (scale, rows) in res.items():
        ref = rows["reference"].summary
        for label, r in rows.items():
            s = r.summary
            m = measures(r.params, r)
            peak, drops = m["peak"], m["drops"]
            ratio = "-" if peak.ratio is None else f"{peak.ratio:.2f}"
            print(
                f"| {name} x{scale:.3g} | {LABELS[label]} | {s['gpu_hours']:.1f} "
                f"| {s['gpu_hours'] / ref['gpu_hours']:.2f} | {s['gpu_hours_ratio_to_oracle']:.2f} "
                f"| {s['overload_seconds']:.0f} | {worst(s) / 60:.1f} min | {peak.peak_desired} "
                f"| {peak.need_tasks} | {ratio} | {drops.drops} | {_min(drops.worst_s)} "
                f"| {_min(drops.median_s)} | {drops.unsettled} |"
            )


def detail(res: dict[str, tuple[float, dict[str, SimResult]]]) -> None:
    """The flash crowd, minute by minute: what the issue's measurement described."""
    print(
        "| design | minutes at the peak desired count | concurrency per task in the crowd "
        "(min-max of one-minute means) | desired within 10 % of need after the fall "
        "| instances within 10 % of need after the fall |"
    )
    print("|---|---:|---:|---:|---:|")
    for label, r in res["flash-crowd"][1].items():
        p, tl = r.params, r.timeline
        desired = np.asarray(tl["desired_tasks"])
        peak = int(desired.max())
        at_peak = float(np.sum(desired == peak)) * r.step_s / 60
        loads = minute_means(tl["offered_rps"], r.step_s)
        crowd = np.flatnonzero(loads >= 0.99 * loads.max())
        first, last = int(crowd[0]), int(crowd[-1]) + 1
        conc = "-"
        if p.target_concurrency is not None:
            c = minute_means(np.nan_to_num(tl["concurrency_per_task"]), r.step_s)[first:last]
            conc = f"{c.min():.0f}-{c.max():.0f} (target {p.target_concurrency:g})"
        # After the fall (the first minute after the crowd's plateau).
        fall = last * 60.0
        after = [i for i, t in enumerate(tl["t_s"]) if t >= fall]
        need = [p.tasks_for_rate(float(loads[min(int(tl["t_s"][i] // 60), len(loads) - 1)]))
                for i in after]  # fmt: skip
        inst_need = [p.instances_for_tasks(n) for n in need]

        print(
            f"| {LABELS[label]} | {at_peak:.1f} ({peak} tasks) | {conc} "
            f"| {_within(tl, 'desired_tasks', after, need, fall)} "
            f"| {_within(tl, 'instances', after, inst_need, fall)} |"
        )


def _within(
    tl: dict[str, list[float]], col: str, at: list[int], want: list[int], since: float
) -> str:
    """Minutes from ``since`` until ``col`` is first within 10 % of ``want`` at steps ``at``."""
    for i, w in zip(at, want, strict=True):
        if abs(tl[col][i] - w) <= 0.1 * w + 1e-9:
            return f"{(tl['t_s'][i] - since) / 60:.1f} min"
    return "never"


def main() -> int:
    res = runs()
    table(res)
    if "--detail" in sys.argv:
        print()
        detail(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
