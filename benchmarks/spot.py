"""Spot capacity: cost and interruption overload per Advisor band, on every bundled trace.

The design: the g5 example's service (one A10G per task, the concurrency
default at 11 per task) with max_tasks 64, min_instances 0 and
[capacity.spot] spot_percent 70 above an On-Demand base of 1, on g5.xlarge
and on g6.xlarge, each at the catalog's dated Spot discount for its family
(catalog.SPOT_DISCOUNTS: g5 60 %, g6 25 %, both us-east-1). Each bundled
trace (docs/traces.md) is scaled as `plan` does (its peak needs 80 % of
max_tasks at the target); seed 0, 10-second steps,
warm start. Per trace and type: the same design all On-Demand (the twin,
runs.on_demand_twin), then Spot at each Spot Instance Advisor band
(spot.BAND_MONTHLY_SHARE as a rate per instance-hour): cost, its saving on
the twin, overload seconds and what the interruptions add to the twin's.

Run:

    .venv/bin/python benchmarks/spot.py

It prints a Markdown table (docs/benchmarks.md "Spot capacity").
"""

from __future__ import annotations

import sys

from ecs_gpu.design import spot
from ecs_gpu.sim import plan_rate_scale, run, runs
from ecs_gpu.sim.params import SimParams, from_spec
from ecs_gpu.sim.workload import bundled_traces, load_trace
from ecs_gpu.spec import parse_spec

STEP_S = 10.0
SEED = 0

SPEC = """
[service]
name = "bench-spot"
image = "vllm/vllm-openai:v0.11.0"
cpu_units = 3072
memory_mib = 12288
[service.metrics]
preset = "vllm"
[capacity]
instance_type = "{itype}"
min_instances = 0
max_instances = 64
[capacity.spot]
instance_types = ["{itype}"]
on_demand_base = 1
spot_percent = 70
[scaling]
min_tasks = 1
max_tasks = 64
target_concurrency_per_task = 11
[simulation]
{simulation}
"""

# Each at its family's dated discount (catalog.SPOT_DISCOUNTS): no key.
TYPES = {
    "g5.xlarge": "",
    "g6.xlarge": "",
}


def design(itype: str) -> SimParams:
    text = SPEC.format(itype=itype, simulation=TYPES[itype])
    return from_spec(parse_spec(text, f"spot-{itype}.toml"))


def main() -> int:
    print(
        "| trace | type | run | cost USD | saving vs On-Demand | overload s "
        "| interruption overload s | interruptions | Spot instance-hours |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for name in bundled_traces():
        tr = load_trace(name)
        for itype in TYPES:
            p = design(itype)
            scale = plan_rate_scale(p, tr, STEP_S)
            twin = runs.on_demand_twin(p)
            assert twin is not None
            od = run(twin, tr, rate_scale=scale, step_s=STEP_S, seed=SEED).summary
            print(
                f"| {name} x{scale:.3g} | {itype} | all On-Demand | {od['cost_usd']:,.2f} | - "
                f"| {od['overload_seconds']:.0f} | - | - | 0 |"
            )
            for band in spot.BAND_MONTHLY_SHARE:
                q = p.with_(spot={"interruptions_per_hour": spot.band_rate_per_hour(band)})
                s = run(q, tr, rate_scale=scale, step_s=STEP_S, seed=SEED).summary
                vs = runs.spot_versus_on_demand(s, od)
                print(
                    f"| {name} | {itype} | Spot 70 %, band {band} | {s['cost_usd']:,.2f} "
                    f"| {vs['spot_saving_percent']:.1f} % | {s['overload_seconds']:.0f} "
                    f"| {vs['interruption_overload_seconds']:+.0f} | {s['spot_interruptions']} "
                    f"| {s['spot_instance_hours']:,.1f} |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
