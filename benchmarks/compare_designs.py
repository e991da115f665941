"""Design comparison: the reference module's settings against this project's GPU-signal defaults.

Three real traces, each scaled so its mean load needs 20 single-GPU tasks at
a 70 % GPU target (a fleet of tens of GPUs at its peaks):

* Azure LLM inference 2023, code (1 h, one row per request; very bursty)
* Azure LLM inference 2023, conversation (1 h, one row per request)
* ServeGen M-large (14 days, 10-minute windows)

Designs (all on g5.xlarge, 60-s GPU collection):

* reference: the ASG-average GPU metric, GPU target 60, CPU 60, cooldowns
  300/300, and its hard-coded managed scaling: warm-up 300 s, steps of 1 to
  10 instances (terraform-aws-ecs 8.3.0 main.tf; reference-module.md)
* GPU default: this project's spec defaults without [service.metrics]
  (task-gpus metric, GPU 70, CPU 70, scale-out 60, scale-in 300) with the
  managed scaling its template deploys (warm-up boot + pull + load = 480 s,
  steps of 1 to max_instances = 64)
* GPU default on asg-average: the defaults with the reference's metric, to
  separate the metric's effect from the targets'
* GPU 50 / 60 / 80 and a 600-s scale-in cooldown on the default metric, to
  see which way each setting moves things
* GPU default, scale-in on the latest datapoint: a simulator what-if without
  the AlarmLow-window reading of the scale-in guard (SimParams.scale_in_basis)
* GPU default, managed scaling steps up to 2: a what-if with
  maximumScalingStepSize 2 instead of max_instances
  (ecs_gpu.design.managed_scaling), to show what the step size is worth

Run:

    .venv/bin/python benchmarks/compare_designs.py

It prints a Markdown table (docs/benchmarks.md "The GPU signal against the
reference").
"""

from __future__ import annotations

import sys
from pathlib import Path

from ecs_gpu.sim import bundled_trace_path, read_trace, run
from ecs_gpu.sim.params import SimParams, from_spec
from ecs_gpu.sim.report import worst_latency
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
    "reference (asg-average, GPU 60, CPU 60, 300/300)": (
        'gpu_metric = "asg-average"\ngpu_target_percent = 60\ncpu_target_percent = 60\n'
        "scale_out_cooldown_s = 300\nscale_in_cooldown_s = 300"
    ),
    "GPU default (task-gpus, GPU 70, CPU 70, 60/300)": "",
    "GPU default on asg-average": 'gpu_metric = "asg-average"',
    "task-gpus, GPU 50": "gpu_target_percent = 50",
    "task-gpus, GPU 60": "gpu_target_percent = 60",
    "task-gpus, GPU 80": "gpu_target_percent = 80",
    "task-gpus, GPU 70, scale-in cooldown 600": "scale_in_cooldown_s = 600",
    "GPU default, scale-in on latest datapoint (what-if)": "",
    "GPU default, managed scaling steps up to 2 (what-if)": "",
}
# Designs that set a simulator parameter rather than a spec key: the
# reference module's managed scaling is not ours to deploy, and the what-if.
OVERRIDES: dict[str, dict[str, dict[str, object]]] = {
    "reference (asg-average, GPU 60, CPU 60, 300/300)": {
        "managed_scaling": {"instance_warmup_s": 300.0, "max_scaling_step": 10},
    },
    "GPU default, scale-in on latest datapoint (what-if)": {
        "tracking": {"scale_in_basis": "latest"}
    },
    "GPU default, managed scaling steps up to 2 (what-if)": {
        "managed_scaling": {"max_scaling_step": 2}
    },
}


def traces() -> list[Trace]:
    return [
        read_trace(HERE / "data" / "AzureLLMInferenceTrace_code.csv"),
        read_trace(HERE / "data" / "AzureLLMInferenceTrace_conv.csv"),
        read_trace(bundled_trace_path()),
    ]


def design(scaling: str) -> SimParams:
    return from_spec(parse_spec(SPEC.format(scaling=scaling), "design.toml"))


def mean_scale(p: SimParams, trace: Trace) -> float:
    """The rate factor that makes the trace's mean load MEAN_TASKS tasks at p's GPU target."""
    per_task = p.task_capacity_rps * p.tracking.gpu_target_percent / 100.0
    return MEAN_TASKS * per_task / float(trace.rates(STEP_S).mean())


def main() -> int:
    default = design("")
    print(
        "| trace | design | GPU-hours | oracle GPU-hours | ratio to oracle | overload s "
        "| unserved requests | worst scale-out latency | max tasks |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for tr in traces():
        scale = mean_scale(default, tr)
        for label, scaling in DESIGNS.items():
            params = design(scaling).with_(**OVERRIDES.get(label, {}))
            s = run(params, tr, rate_scale=scale, step_s=STEP_S, seed=SEED).summary
            print(
                f"| {tr.name} x{scale:.3g} | {label} | {s['gpu_hours']:.1f} "
                f"| {s['oracle_gpu_hours']:.1f} | {s['gpu_hours_ratio_to_oracle']:.2f} "
                f"| {s['overload_seconds']:.0f} | {s['unserved_requests']:.0f} "
                f"| {worst_latency(s)} | {s['max_tasks']} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
