"""Design comparison: the reference module's settings against this project's defaults.

Three real traces, each scaled so its mean load needs 20 single-GPU tasks at
a 70 % GPU target (a fleet of tens of GPUs at its peaks):

* Azure LLM inference 2023, code (1 h, one row per request; very bursty)
* Azure LLM inference 2023, conversation (1 h, one row per request)
* ServeGen M-large (14 days, 10-minute windows)

Designs (all on g5.xlarge, the ASG-average GPU metric, 60-s collection):

* reference: GPU target 60, CPU 60, cooldowns 300/300 (terraform-aws-ecs 8.3.0)
* default: this project's spec defaults (GPU 70, CPU 70, scale-out 60, scale-in 300)
* GPU 50 / GPU 80 with the default cooldowns, to see which way the target moves things

Run:

    .venv/bin/python benchmarks/compare_designs.py

It prints a Markdown table (docs/benchmarks.md "Simulator").
"""

from __future__ import annotations

import sys
from pathlib import Path

from ecs_gpu.sim import bundled_trace_path, read_trace, run
from ecs_gpu.sim.params import SimParams, from_spec
from ecs_gpu.sim.workload import Trace
from ecs_gpu.spec import parse_spec

HERE = Path(__file__).resolve().parent
STEP_S = 10.0
SEED = 0
MEAN_TASKS = 20

SPEC = """
[service]
name = "bench"
image = "vllm/vllm-openai:v0.11.0"
cpu_units = 3072
memory_mib = 12288
[capacity]
instance_type = "g5.xlarge"
min_instances = 1
max_instances = 64
[scaling]
min_tasks = 1
max_tasks = 64
{scaling}
"""

DESIGNS: dict[str, str] = {
    "reference (GPU 60, CPU 60, 300/300)": (
        "gpu_target_percent = 60\ncpu_target_percent = 60\n"
        "scale_out_cooldown_s = 300\nscale_in_cooldown_s = 300"
    ),
    "default (GPU 70, CPU 70, 60/300)": "",
    "GPU 50, default cooldowns": "gpu_target_percent = 50",
    "GPU 80, default cooldowns": "gpu_target_percent = 80",
    "default, metric over task GPUs only (what-if)": "",
}
# Designs that change a simulator parameter rather than a spec key.
WHAT_IF = {"default, metric over task GPUs only (what-if)": {"gpu_metric_scope": "tasks"}}


def traces() -> list[Trace]:
    return [
        read_trace(HERE / "data" / "AzureLLMInferenceTrace_code.csv"),
        read_trace(HERE / "data" / "AzureLLMInferenceTrace_conv.csv"),
        read_trace(bundled_trace_path()),
    ]


def design(scaling: str) -> SimParams:
    return from_spec(parse_spec(SPEC.format(scaling=scaling), "design.toml"))


def main() -> int:
    default = design("")
    per_task = default.task_capacity_rps * default.gpu_target_percent / 100.0
    print(
        "| trace | design | GPU-hours | oracle GPU-hours | ratio to oracle | overload s "
        "| unserved requests | worst scale-out latency | max tasks |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for tr in traces():
        scale = MEAN_TASKS * per_task / float(tr.rates(STEP_S).mean())
        for label, scaling in DESIGNS.items():
            params = design(scaling).with_(**WHAT_IF.get(label, {}))
            s = run(params, tr, rate_scale=scale, step_s=STEP_S, seed=SEED).summary
            worst = s["worst_scale_out_latency_s"]
            end = s["overloaded_at_end_s"]
            wtxt = "-" if worst is None else f"{worst / 60:.1f} min"
            if end is not None:
                wtxt += f" (+{end / 60:.0f} min open at end)"
            print(
                f"| {tr.name} x{scale:.3g} | {label} | {s['gpu_hours']:.1f} "
                f"| {s['oracle_gpu_hours']:.1f} | {s['gpu_hours_ratio_to_oracle']:.2f} "
                f"| {s['overload_seconds']:.0f} | {s['unserved_requests']:.0f} | {wtxt} "
                f"| {s['max_tasks']} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
