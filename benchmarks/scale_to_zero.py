"""Scale to zero: what a fleet pays while idle, and what its first request waits.

Loads: every bundled trace (docs/traces.md) and the made-up ``night-at-zero``
shape (ecs_gpu.sim.stress: two days, no load from 20:00 to 08:00 UTC, a
30-minute ramp at each end), each scaled so its mean load (the shape: its
daytime base) needs MEAN_TASKS (2) single-GPU g5.xlarge tasks at the
concurrency target, a staging-sized fleet; seed 0, 10-second steps, warm
start. Designs, on compare_designs.SPEC with the concurrency default
([service.metrics]: the arrival-rate estimate, target tracking and the fast
path, compare_signals):

* min_tasks = 1: a fleet that always keeps one task (min_instances 1,
  min_tasks 1);
* zero + wake: min_instances 0, min_tasks 0 and an internal load balancer,
  whose request count wakes the service (ecs_gpu.design.paths.wake);
* zero + wake + warm pool: the same with [capacity.warm_pool] min_size 1, so
  the first instance after zero is a pooled start;
* zero by schedule (night-at-zero only: the schedule reads the clock, and
  the bundled traces' clock is their own): no load balancer, a 20:00 UTC
  action to min 0 / max 0 and a 07:45 UTC weekday action back to min 1.

Per run: GPU-hours and x the min_tasks = 1 design's, the idle hours (steps
with no offered load) and the GPU-hours billed in them, overload seconds,
unserved requests, the wake alarm's scale-outs, the first-request waits
after zero (each from the first request with no task ready to the first
ready task: median and worst, in minutes) and the design's start after zero
(boot + pull + load, or the pooled start: ecs_gpu.design.paths.wake.start_s).

Run:

    .venv/bin/python benchmarks/scale_to_zero.py [--floor]

It prints a Markdown table (docs/benchmarks.md "Scale to zero"). With
``--floor``, the night-at-zero shape's decomposition instead: the first
request's wait in its parts (the ALB minute and its lag before the wake
alarm, the CapacityProviderReservation datapoint and its lag before an
instance is asked for, boot + pull + load or the pooled start) against the
simulated waits, and the GPU-hours billed while idle in theirs (the last
task's tail, the instance's after it, the rest), with the sleep path
(ecs_gpu.design.paths.sleep) and without it (target tracking's 15 low datapoints), and
which parts AWS fixes, with the docs/aws-semantics.md row that says so.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys

from compare_designs import SPEC, STEP_S
from compare_signals import CONCURRENCY, METRICS, SEED
from research.stress import shape_rates

from ecs_gpu.design.paths import wake
from ecs_gpu.sim import run
from ecs_gpu.sim.engine import SimResult, simulate
from ecs_gpu.sim.params import SimParams, from_spec
from ecs_gpu.sim.workload import bundled_traces
from ecs_gpu.spec import Spec, parse_spec

MEAN_TASKS = 2
KEEP_ONE = "min_tasks = 1"
WAKE = "zero + wake (ALB)"
WAKE_POOL = "zero + wake + warm pool"
SCHEDULE = "zero by schedule (no ALB)"
ALB = '\n[load_balancer]\nscheme = "internal"\n'
POOL = "\n[capacity.warm_pool]\nmin_size = 1\n"
NIGHT = (
    '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 0\n'
    '\n[[scaling.schedule]]\ncron = "45 7 ? * MON-FRI *"\nmin_tasks = 1\nmax_tasks = 64\n'
)
SHAPE = "night-at-zero"


def spec(label: str) -> Spec:
    text = SPEC.format(scaling=CONCURRENCY).replace("[capacity]", METRICS + "[capacity]", 1)
    if label != KEEP_ONE:
        text = text.replace("min_instances = 1", "min_instances = 0")
        text = text.replace("min_tasks = 1", "min_tasks = 0")
    extra = {KEEP_ONE: "", WAKE: ALB, WAKE_POOL: ALB + POOL, SCHEDULE: NIGHT}[label]
    # [[scaling.schedule]] belongs to [scaling]: it goes right after the table.
    return parse_spec(text + extra, f"{label}.toml")


def _min(s: float | None) -> str:
    return "-" if s is None else f"{s / 60:.1f}"


def row(load: str, label: str, s: Spec, r: SimResult, kept_gpu_hours: float) -> str:
    m = r.summary
    waits = m.get("cold_start_waits_s", [])
    median = statistics.median(waits) if waits else None
    worst = max(waits) if waits else None
    return (
        f"| {load} | {label} | {m['gpu_hours']:.1f} | {m['gpu_hours'] / kept_gpu_hours:.2f} "
        f"| {m.get('idle_hours', 0.0):.1f} | {m.get('idle_gpu_hours', 0.0):.2f} "
        f"| {m['overload_seconds']:.0f} | {m['unserved_requests']:.0f} "
        f"| {m.get('wake_scale_outs', 0)} | {len(waits)} | {_min(median)} | {_min(worst)} "
        f"| {_min(wake.start_s(s)) if wake.scales_to_zero(s) else '-'} |"
    )


def idle_hours(r: SimResult) -> float:
    """The run's steps with no offered load, in hours (for a design that keeps a task)."""
    return sum(1 for v in r.timeline["offered_rps"] if v <= 0) * r.step_s / 3600.0


def _tails(r: SimResult) -> tuple[tuple[float, float], tuple[float, float]]:
    """(GPU-hours, minutes a night) billed while idle with a task RUNNING (the task's tail)
    and with none but an instance up (the instance's tail). A night starts where the load
    falls to zero."""
    tl = r.timeline
    gph = r.step_s / 3600.0 * r.params.gpus_per_instance
    gpu_h = [0.0, 0.0]
    steps = [0, 0]
    nights = 0
    was_busy = False
    for rate, running, n in zip(
        tl["offered_rps"], tl["running_tasks"], tl["instances"], strict=True
    ):
        if rate > 0:
            was_busy = True
            continue
        nights += was_busy
        was_busy = False
        if n > 0:
            j = 0 if running > 0 else 1
            gpu_h[j] += n * gph
            steps[j] += 1
    per_night = [k * r.step_s / 60.0 / max(1, nights) for k in steps]
    return (gpu_h[0], per_night[0]), (gpu_h[1], per_night[1])


# (part, AWS-fixed?, the aws-semantics row): the first request's wait, in order.
WAIT_PARTS = (
    (
        "the request's ALB minute closes (mean)",
        "AWS: 60-s datapoints",
        "§10 ALB metrics at no request",
    ),
    (
        "the ALB datapoint's lag to the wake alarm",
        "AWS, undocumented: one period assumed",
        "§10 same row [gap]",
    ),
    (
        "wake -> an instance is asked for (the CPR datapoint's lag, 1 of 1)",
        "AWS: only managed scaling may scale the group",
        "§2 CPR AlarmHigh; §10 Other scaling policies on a managed group",
    ),
    (
        "instance -> task ready (boot + pull + load, or the pooled start)",
        "EC2 boot; image and model are the spec's",
        "§4",
    ),
)


def floor() -> int:
    """The night-at-zero shape's first-request wait and idle GPU-hours, in their parts."""
    labels = (WAKE, WAKE_POOL)
    specs = {label: spec(label) for label in labels}
    params = {k: from_spec(v) for k, v in specs.items()}
    per_task = from_spec(spec(KEEP_ONE)).rps_per_task_at_target
    night = shape_rates(SHAPE, STEP_S, base_rps=MEAN_TASKS * per_task)
    runs = {k: simulate(p, night, step_s=STEP_S, seed=SEED) for k, p in params.items()}
    no_sleep = {
        k: simulate(dataclasses.replace(p, sleep=None), night, step_s=STEP_S, seed=SEED)
        for k, p in params.items()
    }
    sp = params[WAKE].sleep
    quiet = "-" if sp is None else str(sp.minutes)
    print(
        f"| {SHAPE} (base {MEAN_TASKS} tasks) | "
        + " | ".join(labels)
        + " | fixed by | aws-semantics |"
    )
    print("|---|---:|---:|---|---|")
    minute = 60.0
    parts = {
        k: (
            0.5 * wake.PERIOD_S / minute,
            p.metrics.alb_metric_delay_s / minute,
            p.managed_scaling.cpr_delay_s / minute,
            wake.start_s(specs[k]) / minute,
        )
        for k, p in params.items()
    }
    for j, (what, fixed, where) in enumerate(WAIT_PARTS):
        cells = " | ".join(f"{parts[k][j]:.1f}" for k in labels)
        print(f"| wait, min: {what} | {cells} | {fixed} | {where} |")
    total = " | ".join(f"{sum(parts[k]):.1f}" for k in labels)
    print(f"| wait, min: the parts' sum | {total} | | |")
    waits = {k: runs[k].summary.get("cold_start_waits_s", []) for k in labels}
    measured = " | ".join(
        f"{_min(statistics.median(w) if w else None)} ({_min(max(w) if w else None)})"
        for w in waits.values()
    )
    print(f"| wait, min: simulated median (worst) | {measured} | | |")
    beyond = " | ".join(
        f"{_min(statistics.median(waits[k]) - wake.start_s(specs[k]) if waits[k] else None)}"
        for k in labels
    )
    print(
        f"| wait, min: simulated median beyond the start | {beyond} "
        "| AWS: detection and the instance request | §10, §2 |"
    )
    for name, results in (("with the sleep path", runs), ("without it", no_sleep)):
        tails = {k: _tails(r) for k, r in results.items()}
        tail_fixed, tail_where = (
            (
                f"ours: {quiet} quiet min (the ALB idle timeout)",
                "§10 How long the sleep alarm waits",
            )
            if results is runs
            else ("AWS: target tracking's 15 low datapoints", "§9 Target tracking's low alarm")
        )
        for j, (what, fixed, where) in enumerate(
            (
                ("the last task's tail", tail_fixed, tail_where),
                (
                    "the instance's tail after it",
                    "AWS: CPR AlarmLow 15 of 15",
                    "§2 CPR AlarmHigh / AlarmLow; §10 Other scaling policies on a managed group",
                ),
            )
        ):
            cells = " | ".join(
                f"{tails[k][j][0]:.2f} ({tails[k][j][1]:.0f} min a night)" for k in labels
            )
            print(f"| idle GPU-h {name}: {what} | {cells} | {fixed} | {where} |")
        # Rounding leaves -0.00 where nothing else is billed.
        left = {
            k: results[k].summary["idle_gpu_hours"] - tails[k][0][0] - tails[k][1][0]
            for k in labels
        }
        rest = " | ".join(f"{max(0.0, left[k]):.2f}" for k in labels)
        print(f"| idle GPU-h {name}: the rest (a running pool instance) | {rest} | | §4 |")
        total = " | ".join(f"{results[k].summary['idle_gpu_hours']:.2f}" for k in labels)
        print(f"| idle GPU-h {name}: total | {total} | | |")
    return 0


def main() -> int:
    if "--floor" in sys.argv[1:]:
        return floor()
    specs = {label: spec(label) for label in (KEEP_ONE, WAKE, WAKE_POOL, SCHEDULE)}
    params: dict[str, SimParams] = {k: from_spec(v) for k, v in specs.items()}
    per_task = params[KEEP_ONE].rps_per_task_at_target
    print(
        "| load | design | GPU-hours | x min_tasks = 1 | idle hours | GPU-hours while idle "
        "| overload s | unserved | wakes | waits | median wait min | worst wait min "
        "| start after zero min |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    loads: list[tuple[str, dict[str, SimResult]]] = []
    for name, bundled in bundled_traces().items():
        trace = bundled.load()
        scale = MEAN_TASKS * per_task / float(trace.rates(STEP_S).mean())
        results = {
            label: run(params[label], trace, rate_scale=scale, step_s=STEP_S, seed=SEED)
            for label in (KEEP_ONE, WAKE, WAKE_POOL)
        }
        loads.append((f"{name} x{scale:.3g}", results))
    night = shape_rates(SHAPE, STEP_S, base_rps=MEAN_TASKS * per_task)
    loads.append(
        (
            f"{SHAPE} (base {MEAN_TASKS} tasks)",
            {label: simulate(p, night, step_s=STEP_S, seed=SEED) for label, p in params.items()},
        )
    )
    for load, results in loads:
        kept = results[KEEP_ONE]
        for label, r in results.items():
            line = row(load, label, specs[label], r, kept.summary["gpu_hours"])
            if label == KEEP_ONE:
                # The summary has no idle figures for a fleet that never runs no task.
                idle = idle_hours(r)
                billed = sum(
                    n
                    for n, v in zip(r.timeline["instances"], r.timeline["offered_rps"], strict=True)
                    if v <= 0
                )
                gpu_idle = billed * r.step_s / 3600.0 * r.params.gpus_per_instance
                cells = line.split(" | ")
                cells[4], cells[5] = f"{idle:.1f}", f"{gpu_idle:.2f}"
                line = " | ".join(cells)
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
