"""The reference design, the GPU default and the in-flight concurrency designs on every trace.

Each bundled trace (docs/traces.md) is scaled so its mean load needs
MEAN_TASKS (20) single-GPU g5.xlarge tasks at a 70 % GPU target, as in
compare_designs.py. Designs:

* reference: terraform-aws-ecs 8.3.0 (asg-average GPU metric, GPU 60, CPU
  60, cooldowns 300/300, managed scaling warm-up 300 s, steps up to 10)
* GPU default (task-gpus): this project's default without [service.metrics]:
  GPU 70 on task-held GPUs, CPU 70, cooldowns 60/300
* in-flight concurrency: [service.metrics] with ``demand_estimate =
  "in-flight"`` (the requests in flight, the queue included): target tracking
  on per-task concurrency at 11.2 requests (70 % of the 16 a task holds at
  full load: 2 req/s x mean_request_s 8 s), uncapped, plus the fast path at a
  200 % panic threshold with three steps (0, 50, 100 % over) and a cooldown
  of the instance warm-up alone; pinned here by :func:`design`, since the
  shipped concurrency default differs in each of these
* in-flight concurrency + warm pool: the same with [capacity.warm_pool]
  min_size 2 and max_prepared 64 (prepared capacity up to max_instances,
  Stopped; what AWS keeps with the value unset); managed scaling's instance
  warm-up and the fast-path cooldown are the pooled start
  (ecs_gpu.design.managed_scaling: 60 s warm start + 60 s model load = 120 s)
* the default-size pool: min_size 2 without max_prepared, so 2 stopped
  instances (WarmPoolSpec.prepared_capacity) and the cold warm-up
* the covering pool with the cold warm-up (boot + pull + load, 480 s), to
  show what the pooled warm-up is worth
* what-if, not deployable: the pooled design whose fast-path alarm also
  invokes a step policy on the ASG (sim.controllers.AsgFastPath). The ECS
  developer guide says a capacity provider's group must not be scaled by
  any policy but ECS's, so ecs-gpu does not deploy it; the row measures
  what that rule costs in time to capacity.

The concurrency default (the arrival-rate estimate, target tracking capped at
the target, the fast path at 110 % with nine steps) and the fast scale-in
are defined here too, for stress.py, which measures them.

Run:

    .venv/bin/python benchmarks/compare_signals.py [--goals] [--steps] [--frontier] [--variants]
        [--pool-costs]

It prints a Markdown table (docs/benchmarks.md "The in-flight concurrency
designs on every trace"); --goals also prints four goals a concurrency design
is judged by, measured; --steps when each stage of a scale-out happens after
a load step; --frontier the smallest fixed fleet that meets the overload goal
on each trace; --variants the in-flight designs with a smaller fast-path step
table, none, another panic threshold or a capped tracked series;
--pool-costs what each warm pool costs (its stopped volumes at the gp3 price
and its warming instances) on every trace.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import numpy as np
from compare_designs import OVERRIDES, SPEC, STEP_S, mean_scale

from ecs_gpu.design import managed_scaling
from ecs_gpu.design.paths import fast_path
from ecs_gpu.sim import run
from ecs_gpu.sim.engine import simulate
from ecs_gpu.sim.params import SimParams, from_spec
from ecs_gpu.sim.workload import bundled_traces
from ecs_gpu.spec import Spec, parse_spec

SEED = 0
REFERENCE = "reference (asg-average, GPU 60, CPU 60, 300/300)"
METRICS = '[service.metrics]\npreset = "vllm"\n'
CONCURRENCY = "target_concurrency_per_task = 11.2"
# The in-flight concurrency designs: the in-flight series, the panic
# threshold at 200 %, three fast-path steps, target tracking uncapped.
IN_FLIGHT = '\ndemand_estimate = "in-flight"'
IN_FLIGHT_PANIC = "\npanic_threshold_percent = 200"
IN_FLIGHT_STEPS = (0.0, 0.5, 1.0)
# The concurrency default (docs/benchmarks.md "Pay for what you serve"): the
# arrival-rate estimate, target tracking capped at the target, the fast path
# at 110 % with nine steps; without and with the covering pool.
NEW_DEFAULT = "concurrency default (arrival-rate, capped tracking, fast path 110 %)"
NEW_DEFAULT_POOL = "concurrency default + warm pool"
# A pool that covers the fleet: max_prepared = max_instances (64), what AWS
# keeps prepared when MaxGroupPreparedCapacity is unset (max - desired).
POOL = "\n[capacity.warm_pool]\nmin_size = 2\nmax_prepared = 64\n"
# The pool a spec gets without max_prepared: min_size (2) instances, and the
# cold warm-up, since it does not cover the fleet (ecs_gpu.design.managed_scaling).
DEFAULT_POOL = "\n[capacity.warm_pool]\nmin_size = 2\n"
DEFAULT_SIZE = "in-flight concurrency + default-size pool (min_size 2)"
COLD_WARMUP = "in-flight concurrency + warm pool, cold warm-up 480 s"
WHAT_IF = "what-if: + instance step policy on the fast-path alarm (not deployable)"

# label -> ([service] extra, [scaling] keys, [capacity] extra, simulator overrides)
DESIGNS: dict[str, tuple[str, str, str, dict[str, dict[str, object]]]] = {
    "reference": (
        "",
        'signal = "asg-average"\ngpu_target_percent = 60\ncpu_target_percent = 60\n'
        "scale_out_cooldown_s = 300\nscale_in_cooldown_s = 300",
        "",
        OVERRIDES[REFERENCE],
    ),
    "GPU default (task-gpus)": ("", "", "", {}),
    "in-flight concurrency": (METRICS, CONCURRENCY, "", {}),
    "in-flight concurrency + warm pool": (METRICS, CONCURRENCY, POOL, {}),
    DEFAULT_SIZE: (METRICS, CONCURRENCY, DEFAULT_POOL, {}),
    # The same pool with the cold instance warm-up and fast-path cooldown
    # (boot + pull + load, 480 s) instead of the pooled start (120 s) that
    # ecs_gpu.design.managed_scaling deploys for a pool that covers the fleet.
    COLD_WARMUP: (METRICS, CONCURRENCY, POOL, {"managed_scaling": {"instance_warmup_s": 480.0}}),
    WHAT_IF: (METRICS, CONCURRENCY, POOL, {"managed_scaling": {"instance_fast_path": True}}),
}
# Only on the step load: the in-flight concurrency policy without the fast path.
TT_ONLY = "in-flight concurrency, target tracking only (`fast_scale_out = false`)"
# The fast scale-in (`fast_scale_in = true`; off by default), for
# benchmarks/stress.py.
FAST_SCALE_IN = "in-flight concurrency + fast scale-in"
FAST_SCALE_IN_POOL = "in-flight concurrency + fast scale-in + warm pool"
STEP_DESIGNS = {
    **DESIGNS,
    TT_ONLY: (METRICS, CONCURRENCY + "\nfast_scale_out = false", "", {}),
    FAST_SCALE_IN: (METRICS, CONCURRENCY + "\nfast_scale_in = true", "", {}),
    FAST_SCALE_IN_POOL: (METRICS, CONCURRENCY + "\nfast_scale_in = true", POOL, {}),
}
# The concurrency default with the fast scale-in, without and with the pool.
NEW_FSI = "concurrency default + fast scale-in"
NEW_FSI_POOL = "concurrency default + fast scale-in + warm pool"
STEP_DESIGNS[NEW_DEFAULT] = (METRICS, CONCURRENCY, "", {})
STEP_DESIGNS[NEW_DEFAULT_POOL] = (METRICS, CONCURRENCY, POOL, {})
STEP_DESIGNS[NEW_FSI] = (METRICS, CONCURRENCY + "\nfast_scale_in = true", "", {})
STEP_DESIGNS[NEW_FSI_POOL] = (METRICS, CONCURRENCY + "\nfast_scale_in = true", POOL, {})
NEW_DESIGNS = (NEW_DEFAULT, NEW_DEFAULT_POOL, NEW_FSI, NEW_FSI_POOL)
GOAL_DESIGNS = (
    "in-flight concurrency",
    "in-flight concurrency + warm pool",
)


def _in_flight(label: str) -> bool:
    """Whether ``label`` is an in-flight concurrency design (pinned by :func:`design`)."""
    return label not in NEW_DESIGNS and METRICS in STEP_DESIGNS[label][0]


def design_spec(label: str, extra_scaling: str = "") -> Spec:
    """The spec of a design (its keys; the simulator overrides are :func:`design`'s)."""
    service, scaling, capacity, _ = STEP_DESIGNS[label]
    if _in_flight(label):
        extra_scaling += IN_FLIGHT
        if (
            "panic_threshold_percent" not in extra_scaling + scaling
            and "fast_scale_out = false" not in scaling
        ):
            extra_scaling += IN_FLIGHT_PANIC
    text = SPEC.format(scaling=scaling + extra_scaling)
    text = text.replace("[capacity]", service + "[capacity]", 1)
    text = text.replace("[scaling]", capacity + "[scaling]", 1)
    return parse_spec(text, f"{label}.toml")


def design(label: str, extra_scaling: str = "") -> SimParams:
    overrides = STEP_DESIGNS[label][3]
    spec = design_spec(label, extra_scaling)
    p = from_spec(spec).with_(**overrides)
    in_flight = _in_flight(label)
    if in_flight and p.fast_path is not None:
        p = p.with_(
            fast_path=dataclasses.replace(
                p.fast_path,
                steps=fast_path.steps(spec, starts=IN_FLIGHT_STEPS),
                # The in-flight design's cooldown: the instance warm-up, without the
                # launch datapoint.
                cooldown_s=int(p.managed_scaling.instance_warmup_s),
            ),
            demand={"tracking_cap_ratio": overrides.get("demand", {}).get("tracking_cap_ratio")},
        )
    if "instance_warmup_s" in overrides.get("managed_scaling", {}) and p.fast_path is not None:
        # The fast path's cooldown follows the warm-up (paths/fast_path.py: + the launch datapoint).
        cooldown = int(p.managed_scaling.instance_warmup_s) + (
            0 if in_flight else managed_scaling.LAUNCH_DATAPOINT_S
        )
        p = p.with_(fast_path=dataclasses.replace(p.fast_path, cooldown_s=cooldown))
    return p


def results() -> dict[str, tuple[float, dict[str, dict[str, Any]]]]:
    """Trace name -> (rate scale, design label -> summary)."""
    base = design("GPU default (task-gpus)")
    out: dict[str, tuple[float, dict[str, dict[str, Any]]]] = {}
    for name, bundled in bundled_traces().items():
        trace = bundled.load()
        scale = mean_scale(base, trace)
        out[name] = (
            scale,
            {
                label: run(design(label), trace, rate_scale=scale, step_s=STEP_S, seed=SEED).summary
                for label in DESIGNS
            },
        )
    return out


def worst(s: dict[str, Any]) -> float:
    """The longest overload episode, open at the end included, in seconds."""
    return max(s["worst_scale_out_latency_s"] or 0.0, s["overloaded_at_end_s"] or 0.0)


def step_load(label: str) -> dict[str, float]:
    """A load step on a steady fleet: when each stage of the scale-out happens.

    Ten tasks at 65 % for 20 minutes, then three times the load, with exact
    arrivals and boot times. Seconds after the step: the first scale-out
    decision (desired count up), the first new instance, the first new task
    serving.
    """
    p = design(label).with_(poisson_arrivals=False, boot_jitter_fraction=0.0)
    onset, before = 1200.0, 10 * p.task_capacity_rps * 0.65
    rates = np.concatenate([np.full(120, before), np.full(360, 3 * before)])
    tl = simulate(p, rates, step_s=STEP_S).timeline

    def first(col: str) -> float:
        at = round(onset / STEP_S)
        base = tl[col][at - 1]
        return next(
            (t - onset for t, v in zip(tl["t_s"], tl[col], strict=True) if t >= onset and v > base),
            float("inf"),
        )

    return {
        "decision_s": first("desired_tasks"),
        "instance_s": first("instances"),
        "serving_s": first("ready_tasks"),
        "model_load_s": p.model_load_s,
    }


def steps() -> None:
    """The step load's stages for each design (docs/benchmarks.md, step-load table)."""
    print("| design | first scale-out decision | first new instance | first new task serving |")
    print("|---|---:|---:|---:|")
    order = ("reference", "GPU default (task-gpus)", TT_ONLY, *GOAL_DESIGNS, COLD_WARMUP)
    order += (WHAT_IF,)
    for label in order:
        m = step_load(label)
        print(f"| {label} | {m['decision_s']:.0f} | {m['instance_s']:.0f} | {m['serving_s']:.0f} |")


def goals(res: dict[str, tuple[float, dict[str, dict[str, Any]]]]) -> None:
    """Four goals for a concurrency design, measured on the step load and on every trace."""
    print("| goal | design | measured | met |")
    print("|---|---|---|---|")
    for label in ("GPU default (task-gpus)", "in-flight concurrency"):
        d = step_load(label)["decision_s"]
        goal = "decision latency after a load step <= 30 s"
        print(f"| {goal} | {label} | {d:.0f} s | {_yes(d <= 30)} |")
    for label in (*GOAL_DESIGNS[1:], WHAT_IF):
        m = step_load(label)
        budget = 120 + m["model_load_s"]
        launch_to_serving = m["serving_s"] - m["instance_s"]
        print(
            f"| time to capacity with a warm-pool instance <= 2 min + model load | {label} "
            f"| {m['serving_s']:.0f} s after the step ({m['instance_s']:.0f} s to the launch, "
            f"{launch_to_serving:.0f} s launch to serving); budget {budget:.0f} s "
            f"| {_yes(m['serving_s'] <= budget)} "
            f"(from the launch: {_yes(launch_to_serving <= budget)}) |"
        )
    rows = res["servegen-m-mid"][1]
    ref = rows["reference"]
    for label in GOAL_DESIGNS:
        s = rows[label]
        gh = s["gpu_hours"] / ref["gpu_hours"]
        ok = worst(s) <= 600 and gh <= 1.0
        print(
            f"| worst overload episode on ServeGen M-mid <= 10 min at <= 1.0x reference GPU-hours "
            f"| {label} | {worst(s) / 60:.1f} min at {gh:.2f}x | {_yes(ok)} |"
        )
    for label in GOAL_DESIGNS:
        misses = []
        for name, (_, rows) in res.items():
            s, ref = rows[label], rows["reference"]
            gh = s["gpu_hours"] / ref["gpu_hours"]
            if s["overload_seconds"] > 0.2 * ref["overload_seconds"] or gh > 1.0:
                over = f"{s['overload_seconds']:.0f} s vs {ref['overload_seconds']:.0f} s"
                misses.append(f"{name} ({over}, {gh:.2f}x)")
        print(
            f"| overload <= 0.2x reference on every trace at <= 1.0x its GPU-hours | {label} "
            f"| {len(res) - len(misses)} of {len(res)} traces; misses: {'; '.join(misses) or '-'} "
            f"| {_yes(not misses)} |"
        )


def fast_path_variants() -> None:
    """The concurrency design with a smaller step table, no fast path or a capped tracked series.

    Deployable variants: each step adds at most +100 % (Kubernetes HPA's
    default scale-up limit: double the pods per 60 s, or 4 pods if more;
    autoscaling/v2 HorizontalPodAutoscalerBehavior.scaleUp), or
    ``fast_scale_out = false``, or another ``panic_threshold_percent``; and
    one the template could deploy with
    metric math but does not: target tracking reading the one-minute
    datapoint capped at the panic threshold (SimParams.tracking_cap_ratio),
    so that above it only the fast path sizes the fleet.
    """
    base = design("GPU default (task-gpus)")
    print("| trace | design | variant | GPU-hours x reference | overload s "
          "| worst overload episode |")  # fmt: skip
    print("|---|---|---|---:|---:|---:|")
    for name in ("azure2023-code", "azure2023-conv", "servegen-m-large", "servegen-m-mid"):
        trace = bundled_traces()[name].load()
        scale = mean_scale(base, trace)
        ref = run(design("reference"), trace, rate_scale=scale, step_s=STEP_S, seed=SEED).summary
        for label in reversed(GOAL_DESIGNS):
            p = design(label)
            assert p.fast_path is not None
            capped = tuple(
                dataclasses.replace(st, percent=min(st.percent, 100)) for st in p.fast_path.steps
            )
            cap = p.fast_path.threshold / p.fast_path.target
            variants = {"as deployed": p}
            if label == GOAL_DESIGNS[1]:
                variants["steps at most +100 %"] = p.with_(
                    fast_path=dataclasses.replace(p.fast_path, steps=capped)
                )
                variants["no fast path"] = p.with_(fast_path=None)
                for percent in (150, 300):
                    variants[f"panic threshold {percent} %"] = design(
                        label, f"\npanic_threshold_percent = {percent}"
                    )
            variants["tracked datapoint capped at the panic threshold (not deployed)"] = p.with_(
                demand={"tracking_cap_ratio": cap}
            )
            for v_label, v in variants.items():
                s = run(v, trace, rate_scale=scale, step_s=STEP_S, seed=SEED).summary
                print(f"| {name} | {label} | {v_label} | {s['gpu_hours'] / ref['gpu_hours']:.2f} "
                      f"| {s['overload_seconds']:.0f} | {worst(s) / 60:.1f} min |")  # fmt: skip


def static_frontier(res: dict[str, tuple[float, dict[str, dict[str, Any]]]]) -> None:
    """The smallest fixed fleet with at most 0.2x the reference's overload, per trace.

    A fixed fleet of N single-GPU tasks (no start-up, no scaling) overloads
    in every step whose offered load passes N x task_capacity_rps; its
    GPU-hours are N x the trace's hours. No reactive design starts a task
    faster than the trace's 10-s bursts end, so where even this fleet needs
    more than the reference's GPU-hours, the goal cannot be met as written.
    """
    p = design("GPU default (task-gpus)")
    traces = bundled_traces()
    print("| trace | reference overload s | allowed (0.2x) | fixed fleet | its overload s "
          "| its GPU-hours x reference |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for name, (scale, rows) in res.items():
        ref = rows["reference"]
        rates = traces[name].load().rates(STEP_S) * scale
        hours = len(rates) * STEP_S / 3600.0
        allowed = 0.2 * ref["overload_seconds"]
        for n in range(p.max_tasks + 1):
            over = STEP_S * float(np.sum(rates > n * p.task_capacity_rps + 1e-9))
            if over <= allowed:
                gh = n * p.gpus_per_task * hours / ref["gpu_hours"]
                print(f"| {name} | {ref['overload_seconds']:.0f} | {allowed:.0f} | {n} tasks "
                      f"| {over:.0f} | {gh:.2f} |")  # fmt: skip
                break
        else:
            print(f"| {name} | {ref['overload_seconds']:.0f} | {allowed:.0f} "
                  f"| none up to {p.max_tasks} tasks | - | - |")  # fmt: skip


def pool_costs(res: dict[str, tuple[float, dict[str, dict[str, Any]]]]) -> None:
    """What each pool costs (stopped volumes at the gp3 price, warming instances)
    against the design without one, on every trace."""
    print(
        "| trace | design | cost USD | warm pool USD | stopped pool instance-hours "
        "| running pool instance-hours | overload s |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    labels = (GOAL_DESIGNS[0], GOAL_DESIGNS[1], DEFAULT_SIZE)
    for name, (scale, rows) in res.items():
        for label in labels:
            s = rows[label]
            print(
                f"| {name} x{scale:.3g} | {label} | {s['cost_usd']:,.2f} "
                f"| {s['warm_pool_cost_usd']:,.2f} | {s['warm_pool_stopped_instance_hours']:,.1f} "
                f"| {s['warm_pool_running_instance_hours']:,.1f} | {s['overload_seconds']:.0f} |"
            )


def _yes(ok: bool) -> str:
    return "yes" if ok else "no"


def main() -> int:
    res = results()
    print(
        "| trace | design | GPU-hours | x reference | overload s | x reference "
        "| worst overload episode | fast-path scale-outs | warm starts |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, (scale, rows) in res.items():
        ref = rows["reference"]
        for label, s in rows.items():
            gh = s["gpu_hours"] / ref["gpu_hours"]
            # "-": the reference never overloaded, so no ratio exists.
            ref_ov = ref["overload_seconds"]
            ov = f"{s['overload_seconds'] / ref_ov:.2f}" if ref_ov else "-"
            print(
                f"| {name} x{scale:.3g} | {label} | {s['gpu_hours']:.1f} | {gh:.2f} "
                f"| {s['overload_seconds']:.0f} | {ov} | {worst(s) / 60:.1f} min "
                f"| {s['fast_path_scale_outs']} | {s['warm_pool_starts']} |"
            )
    if "--goals" in sys.argv:
        print()
        goals(res)
    if "--steps" in sys.argv:
        print()
        steps()
    if "--variants" in sys.argv:
        print()
        fast_path_variants()
    if "--frontier" in sys.argv:
        print()
        static_frontier(res)
    if "--pool-costs" in sys.argv:
        print()
        pool_costs(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
