"""A crowd or a blip: the GPU-hours goal against the overload bound, for any controller.

The crowd: a base that needs BASE_TASKS g5.xlarge tasks at the 70 % GPU
target (stress.py's rate per task) for 20 minutes, then at once FACTOR x the
base for an hour, then the base for 10 minutes (``flash_crowd`` with no
rise or fall). In-flight concurrency, without and with the covering warm
pool, sets the overload bound on it (1.1x its overload: the per-load goal of
stress.py). For each bound, ``ecs_gpu.sim.blip`` gives the split (the blip
is the crowd until then, then the base for managed scaling's 15 minutes),
the fewest instances that serve a step of the crowd, and the GPU-hours any
fleet within the bound on the crowd pays on the blip; the reference design's
GPU-hours on the blip are simulated. Then every design of stress.py on the
crowd and on its bound's blip: its overload, its GPU-hours against the
reference's and the floor, and whether the two runs agree until the split.

Boot jitter is off (``boot_jitter_fraction = 0``), as in lull.py: the engine
draws it after the whole load's arrivals, so with it two loads with one
prefix boot their instances differently before they part. Seed 0, 10-second
steps, warm start.

Run:

    .venv/bin/python benchmarks/blip.py

It prints three Markdown tables (docs/benchmarks.md "A crowd or a blip"): the
bounds, every design, and the verdict with the split at the last step the bound
allows and with boot jitter on.
"""

from __future__ import annotations

import dataclasses
import math
import sys

import numpy as np
from compare_designs import STEP_S
from compare_signals import SEED, design
from lull import params, same_until
from research.blip import BlipFloor, blip, blip_floor
from research.stress import flash_crowd, rates
from stress import LABELS

from ecs_gpu.sim.engine import simulate

BASE_TASKS = 2
FACTOR = 30.0
CROWD_AT_S = 1200.0
BOUNDS = ("in-flight concurrency", "in-flight concurrency + warm pool")
# The goals' ratio to the reference's GPU-hours and to in-flight concurrency's overload.
GPU_RATIO = 1.5
OVERLOAD_RATIO = 1.1


def base_rps() -> float:
    return BASE_TASKS * design("GPU default (task-gpus)").rps_per_task_at_target


def crowd() -> tuple[tuple[float, float], ...]:
    return flash_crowd(
        base_rps=base_rps(),
        factor=FACTOR,
        before_s=CROWD_AT_S,
        rise_s=0.0,
        hold_s=3600.0,
        fall_s=0.0,
        after_s=600.0,
    )


def bound_of(label: str) -> str:
    """The in-flight design whose overload bounds ``label``'s: the one with its pool or not."""
    return BOUNDS[1] if params(label).warm_pool.min_size is not None else BOUNDS[0]


# The counts the split's own step must share too: its minute's instance count was
# decided before the split.
SAME = ("desired_tasks", "ready_tasks", "instances")


def main() -> int:
    knots = crowd()
    a = rates(knots, STEP_S)
    on_crowd = {label: simulate(params(label), a, step_s=STEP_S, seed=SEED) for label in LABELS}
    floors: dict[str, tuple[BlipFloor, float, np.ndarray]] = {}
    print(
        "| bound's design | its overload on the crowd s | the bound s "
        "| instances that serve a step of the crowd | split: min after the jump "
        "| any fleet within the bound: GPU-hours on the blip at least "
        "| reference's GPU-hours on the blip | x 1.5 | both goals on the two loads |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for label in BOUNDS:
        over = on_crowd[label].summary["overload_seconds"]
        budget = math.floor(OVERLOAD_RATIO * over / STEP_S + 1e-9)
        fl = blip_floor(params(label), a, STEP_S, CROWD_AT_S, budget)
        b = rates(blip(knots, fl, base_rps()), STEP_S)
        ref = simulate(params("reference"), b, step_s=STEP_S, seed=SEED).summary["gpu_hours"]
        floors[label] = (fl, ref, b)
        possible = "possible" if fl.gpu_hours <= GPU_RATIO * ref else "no fleet"
        print(
            f"| {LABELS[label]} | {over:.0f} | {budget * STEP_S:.0f} | {fl.instances} "
            f"| {(fl.split_s - CROWD_AT_S) / 60:.0f} | {fl.gpu_hours:.2f} | {ref:.2f} "
            f"| {GPU_RATIO * ref:.2f} | {possible} |"
        )
    print()
    print(
        "| design | bound | overload on the crowd s | within the bound "
        "| GPU-hours on the blip | x reference (<= 1.5) | at least the floor "
        "| the same as on the crowd until the split |"
    )
    print("|---|---|---:|---|---:|---:|---|---|")
    for label, name in LABELS.items():
        bound = bound_of(label)
        fl, ref, b = floors[bound]
        over = on_crowd[label].summary["overload_seconds"]
        within = over <= fl.budget_steps * STEP_S + 1e-9
        on_blip = simulate(params(label), b, step_s=STEP_S, seed=SEED)
        gpu = on_blip.summary["gpu_hours"]
        print(
            f"| {name} | {LABELS[bound]} | {over:.0f} | {'yes' if within else 'no'} "
            f"| {gpu:.2f} | {gpu / ref:.2f} | {'yes' if gpu >= fl.gpu_hours - 1e-9 else 'no'} "
            f"| {'yes' if same_until(on_crowd[label], on_blip, fl.split_s, SAME) else 'no'} |"
        )
    robustness(knots, a)
    return 0


def robustness(knots: tuple[tuple[float, float], ...], a: np.ndarray) -> None:
    """The verdict with the split at the last step the bound allows (whatever the phase
    of managed scaling's minute samples) and with boot jitter on."""
    print()
    print(
        "| bound's design | boot jitter | split at | split s "
        "| reference's GPU-hours on the blip x 1.5 | the floor | both goals on the two loads |"
    )
    print("|---|---|---|---:|---:|---:|---|")
    for label in BOUNDS:
        for jitter in (False, True):
            p = design(label) if jitter else params(label)
            ref_p = design("reference") if jitter else params("reference")
            over = simulate(p, a, step_s=STEP_S, seed=SEED).summary["overload_seconds"]
            budget = math.floor(OVERLOAD_RATIO * over / STEP_S + 1e-9)
            fl = blip_floor(p, a, STEP_S, CROWD_AT_S, budget)
            last = CROWD_AT_S + budget * STEP_S
            for where, split in (("the minute's start", fl.split_s), ("the last step", last)):
                b = rates(blip(knots, dataclasses.replace(fl, split_s=split), base_rps()), STEP_S)
                ref = simulate(ref_p, b, step_s=STEP_S, seed=SEED).summary["gpu_hours"]
                possible = "possible" if fl.gpu_hours <= GPU_RATIO * ref else "no fleet"
                print(
                    f"| {LABELS[label]} | {'on' if jitter else 'off'} | {where} | {split:.0f} "
                    f"| {GPU_RATIO * ref:.2f} | {fl.gpu_hours:.2f} | {possible} |"
                )


if __name__ == "__main__":
    sys.exit(main())
