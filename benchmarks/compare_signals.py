"""Issue 8: the reference design, today's default and the concurrency design on every shared trace.

Each bundled trace (docs/traces.md) is scaled so its mean load needs
MEAN_TASKS (20) single-GPU g5.xlarge tasks at a 70 % GPU target, as in
compare_designs.py. Designs:

* reference: terraform-aws-ecs 8.3.0 (asg-average GPU metric, GPU 60, CPU
  60, cooldowns 300/300, managed scaling warm-up 300 s, steps up to 10)
* task-gpus: this project's default before issue 8 (no [service.metrics]):
  GPU 70 on task-held GPUs, CPU 70, cooldowns 60/300
* concurrency: the default with [service.metrics]: target tracking on
  per-task concurrency at 11.2 requests (70 % of the 16 a task holds at full
  load: 2 req/s x mean_request_s 8 s) plus the fast path (panic threshold
  200 %) from ecs_gpu.fast_path
* concurrency + warm pool: the same with [capacity.warm_pool] min_size 2
  (prepared capacity up to max_instances, Stopped)

Run:

    .venv/bin/python benchmarks/compare_signals.py [--goals]

It prints a Markdown table (docs/benchmarks.md "Issue 8 designs on every
trace"); --goals also prints the issue's goals, measured.
"""

from __future__ import annotations

import sys
from typing import Any

from compare_designs import MEAN_TASKS, OVERRIDES, SPEC, STEP_S

from ecs_gpu.sim import run
from ecs_gpu.sim.params import SimParams, from_spec
from ecs_gpu.sim.workload import Trace, bundled_traces
from ecs_gpu.spec import parse_spec

SEED = 0
REFERENCE = "reference (asg-average, GPU 60, CPU 60, 300/300)"
METRICS = '[service.metrics]\npreset = "vllm"\n'
CONCURRENCY = "target_concurrency_per_task = 11.2"
POOL = "\n[capacity.warm_pool]\nmin_size = 2\n"

# label -> ([service] extra, [scaling] keys, [capacity] extra, simulator overrides)
DESIGNS: dict[str, tuple[str, str, str, dict[str, object]]] = {
    "reference": (
        "",
        'signal = "asg-average"\ngpu_target_percent = 60\ncpu_target_percent = 60\n'
        "scale_out_cooldown_s = 300\nscale_in_cooldown_s = 300",
        "",
        OVERRIDES[REFERENCE],
    ),
    "task-gpus (default before)": ("", "", "", {}),
    "concurrency + fast path": (METRICS, CONCURRENCY, "", {}),
    "concurrency + fast path + warm pool": (METRICS, CONCURRENCY, POOL, {}),
    "what-if: loading tasks publish 0": (
        METRICS,
        CONCURRENCY,
        "",
        {"demand_zero_while_loading": True},
    ),
}


def design(label: str) -> SimParams:
    service, scaling, capacity, overrides = DESIGNS[label]
    text = SPEC.format(scaling=scaling)
    text = text.replace("[capacity]", service + "[capacity]", 1)
    text = text.replace("[scaling]", capacity + "[scaling]", 1)
    return from_spec(parse_spec(text, f"{label}.toml")).with_(**overrides)


def scale_for(trace: Trace, p: SimParams) -> float:
    per_task = p.task_capacity_rps * p.gpu_target_percent / 100.0
    return MEAN_TASKS * per_task / float(trace.rates(STEP_S).mean())


def results() -> dict[str, tuple[float, dict[str, dict[str, Any]]]]:
    """Trace name -> (rate scale, design label -> summary)."""
    base = design("task-gpus (default before)")
    out: dict[str, tuple[float, dict[str, dict[str, Any]]]] = {}
    for name, bundled in bundled_traces().items():
        trace = bundled.load()
        scale = scale_for(trace, base)
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
            ov = s["overload_seconds"] / ref["overload_seconds"] if ref["overload_seconds"] else 0
            print(
                f"| {name} x{scale:.3g} | {label} | {s['gpu_hours']:.1f} | {gh:.2f} "
                f"| {s['overload_seconds']:.0f} | {ov:.2f} | {worst(s) / 60:.1f} min "
                f"| {s['fast_path_scale_outs']} | {s['warm_pool_starts']} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
