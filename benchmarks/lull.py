"""A lull or a fall: the five-minute scale-in against the overload bound, for any controller.

``plateau-drop`` (ecs_gpu.sim.stress, scaled as in stress.py: its mean needs
MEAN_TASKS g5.xlarge tasks at a 70 % GPU target; seed 0, 10-second steps,
warm start) and, for a step ``s``, its lull (``ecs_gpu.sim.lull``): the same
load until ``s`` that comes back to the plateau one step later and holds it
an hour. For each design of stress.py: the first step after the drop at
which its desired count is within 10 % of need (``s``), the least overload
any controller has on the lull of ``s`` (``lull.overload_floor``), what the
design has there, and in-flight concurrency (the overload bound's design) on
the same lull. Then every lull a scale-in meeting the five minutes could
face (``s`` from the drop's first step to 5 minutes after it): the floor's
smallest value, and in-flight concurrency's largest overload on them.

Boot jitter is off (``boot_jitter_fraction = 0``): the engine draws it after
the whole load's arrivals, so with it two loads with one prefix boot their
instances differently before they part (docs/simulator.md "Commands", `--seed`).

Run:

    .venv/bin/python benchmarks/lull.py

It prints three Markdown tables (docs/benchmarks.md "A lull or a fall").
"""

from __future__ import annotations

import sys

import numpy as np
from compare_designs import MEAN_TASKS, STEP_S
from compare_signals import NEW_DEFAULT, NEW_DEFAULT_POOL, SEED, design
from research.lull import lull, overload_floor
from research.stress import plateau_drop, rates
from stress import LABELS

from ecs_gpu.sim.engine import SimResult, simulate
from ecs_gpu.sim.params import SimParams
from ecs_gpu.sim.transients import NEED_WITHIN_S, drops_to_need, need_per_step

BOUND = ("in-flight concurrency", "in-flight concurrency + warm pool")
WHAT_IF = (NEW_DEFAULT, NEW_DEFAULT_POOL)
HOLD_S = 3600.0
# The fall at once: a ramp's minute has a need between the two levels, and
# tasks within 10 % of it still serve the plateau at full load.
FALL = plateau_drop(fall_s=0.0)
PEAK = max(r for _, r in FALL)


def params(label: str) -> SimParams:
    return design(label).with_(boot_jitter_fraction=0.0)


def scale() -> float:
    """stress.py's scale of plateau-drop (its fall within a minute), so the levels are its."""
    base = design("GPU default (task-gpus)")
    return MEAN_TASKS * base.rps_per_task_at_target / float(rates(plateau_drop(), STEP_S).mean())


def lull_rates(decided_at_s: float, k: float) -> np.ndarray:
    return rates(lull(FALL, decided_at_s + STEP_S, PEAK, HOLD_S), STEP_S) * k


def same_until(
    a: SimResult,
    b: SimResult,
    t_s: float,
    columns: tuple[str, ...] = ("desired_tasks", "ready_tasks"),
) -> bool:
    """Whether the two runs' ``columns`` agree at every step up to ``t_s``."""
    n = round(t_s / STEP_S) + 1
    return all(
        np.array_equal(np.asarray(a.timeline[c])[:n], np.asarray(b.timeline[c])[:n])
        for c in columns
    )


def main() -> int:
    k = scale()
    fall = rates(FALL, STEP_S) * k
    print(
        "| design | first within 10 % of need after the drop min (<= 5) | need then "
        "| at most tasks | its lull: least overload of any controller s "
        "| this design's overload s | the same up to then |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    drop_at: float | None = None
    kept: dict[str, tuple[float, float]] = {}  # label -> (its s, its overload on its lull)
    for label, name in LABELS.items():
        p = params(label)
        a = simulate(p, fall, step_s=STEP_S, seed=SEED)
        (drop,) = drops_to_need(p, a.timeline["offered_rps"], a.timeline["desired_tasks"], STEP_S)
        drop_at = drop.at_s  # the load's, the same for every design
        if drop.to_need_s is None:
            print(f"| {name} | never | - | - | - | - | - |")
            continue
        s = drop.at_s + drop.to_need_s
        need = int(need_per_step(p, fall, STEP_S)[round(s / STEP_S)])
        back = lull_rates(s, k)
        floor = overload_floor(p, back, STEP_S, s, need)
        b = simulate(p, back, step_s=STEP_S, seed=SEED)
        kept[label] = (s, b.summary["overload_seconds"])
        print(
            f"| {name} | {drop.to_need_s / 60:.1f} | {need} | {floor.most_tasks} "
            f"| {floor.overload_floor_s:.0f} | {b.summary['overload_seconds']:.0f} "
            f"| {'yes' if same_until(a, b, s) else 'no'} |"
        )
    assert drop_at is not None
    # Every lull a scale-in within the five minutes could meet.
    p = params(BOUND[0])
    needs = need_per_step(p, fall, STEP_S)
    steps = np.arange(drop_at, drop_at + NEED_WITHIN_S + STEP_S / 2, STEP_S)
    floors, worst = [], {d: 0.0 for d in BOUND}
    for s in steps:
        back = lull_rates(float(s), k)
        floors.append(
            overload_floor(
                p, back, STEP_S, float(s), int(needs[round(s / STEP_S)])
            ).overload_floor_s
        )
        for d in BOUND:
            over = simulate(params(d), back, step_s=STEP_S, seed=SEED).summary["overload_seconds"]
            worst[d] = max(worst[d], over)
    plateau = float(fall.max())
    print()
    print(
        "| lulls (back one step after s, s from the drop to 5 minutes after it) "
        "| the plateau req/s | its tasks at full load "
        "| least overload of any controller within 10 % of need at s, s "
        "| in-flight concurrency: most overload on them s | + warm pool s |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {len(steps)} | {plateau:.1f} | {plateau / p.task_capacity_rps:.1f} "
        f"| {min(floors):.0f} " + "".join(f"| {worst[d]:.0f} " for d in BOUND) + "|"
    )
    # The what-if: the fast path's scale-out ends target tracking's scale-in
    # cooldown (SimParams.fast_path_ends_scale_in_cooldown).
    print()
    print(
        "| design | its lull: overload s, the cooldown kept (the model) "
        "| the fast path's scale-out ends the scale-in cooldown (what-if) |"
    )
    print("|---|---:|---:|")
    for label in WHAT_IF:
        s, model = kept[label]
        what_if = params(label).with_(tracking={"fast_path_ends_scale_in_cooldown": True})
        ended = simulate(what_if, lull_rates(s, k), step_s=STEP_S, seed=SEED)
        print(f"| {LABELS[label]} | {model:.0f} | {ended.summary['overload_seconds']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
