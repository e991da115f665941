"""Predict: simulate the two-layer autoscaling loop of a spec on a request trace.

The simulator needs no CDK and no AWS. Python use::

    from ecs_gpu.spec import load_spec
    from ecs_gpu.sim import run, read_trace

    result = run(load_spec("spec.toml"), read_trace("trace.csv"), rate_scale=2.0)
    result.summary["gpu_hours"]

``load_trace`` takes a bundled trace's name as well as a path;
``bundled_traces`` lists them.
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

from ecs_gpu.errors import BadInputError
from ecs_gpu.sim.engine import (
    MAX_OFFERED_RPS,
    TIMELINE_COLUMNS,
    ProgressFn,
    SimResult,
    Start,
    check_step,
    simulate,
)
from ecs_gpu.sim.params import SimParams, from_spec
from ecs_gpu.sim.transients import summary_keys
from ecs_gpu.sim.workload import (
    BundledTrace,
    Trace,
    TraceError,
    TraceShape,
    bundled_traces,
    load_trace,
    read_trace,
)
from ecs_gpu.spec import Spec

__all__ = [
    "BUNDLED_TRACE",
    "PLAN_PEAK_FRACTION",
    "BundledTrace",
    "SimParams",
    "SimResult",
    "Trace",
    "TraceError",
    "TraceShape",
    "bundled_trace_path",
    "bundled_traces",
    "from_spec",
    "load_trace",
    "plan_rate_scale",
    "plan_scale_note",
    "read_trace",
    "run",
    "simulate",
]

BUNDLED_TRACE = "servegen_m-large_600s.csv"
# `plan` sizes the bundled trace so its peak step needs this fraction of
# max_tasks at the design's target: busy enough to scale, with headroom left.
PLAN_PEAK_FRACTION = 0.8


def bundled_trace_path() -> Path:
    """The trace shipped in the package (ServeGen M-large, Apache-2.0)."""
    return Path(str(resources.files("ecs_gpu") / "data" / "traces" / BUNDLED_TRACE))


def plan_rate_scale(p: SimParams, trace: Trace, step_s: float) -> float:
    """Scale factor that puts the trace's peak at PLAN_PEAK_FRACTION x max_tasks at target."""
    peak = float(trace.rates(step_s).max())
    if peak <= 0:
        raise BadInputError(f"{trace.path}: the trace offers no load. Fix: use another trace.")
    at_target = p.rps_per_task_at_target
    return PLAN_PEAK_FRACTION * p.max_tasks * at_target / peak


def plan_scale_note(p: SimParams, trace: Trace, scale: float, step_s: float, origin: str) -> str:
    """The line that says how :func:`plan_rate_scale` sized ``trace``; ``origin`` says which part.

    Printed by plan, and by simulate and compare on a bundled trace, so the
    factor behind every figure is on screen.
    """
    from ecs_gpu.sim.report import target_text  # report imports this package's modules

    peak = float(trace.rates(step_s, scale).max())
    return (
        f"trace: {trace.name} ({origin}), rate x{scale:.4g}: peak {peak:.4g} req/s = "
        f"{PLAN_PEAK_FRACTION:.0%} of max_tasks ({p.max_tasks}) x "
        f"{p.rps_per_task_at_target:.4g} req/s at the {target_text(p)}"
    )


def run(
    spec: Spec | SimParams,
    trace: Trace,
    *,
    rate_scale: float = 1.0,
    step_s: float = 10.0,
    seed: int = 0,
    start: Start = "warm",
    progress: ProgressFn | None = None,
) -> SimResult:
    """Simulate ``spec`` on ``trace`` scaled by ``rate_scale``."""
    if not (rate_scale > 0 and math.isfinite(rate_scale)):
        raise BadInputError(
            f"--rate-scale = {rate_scale!r}: must be a positive finite number. Fix: e.g. 2.5."
        )
    p = spec if isinstance(spec, SimParams) else from_spec(spec)
    check_step(step_s, p)
    rates = trace.rates(step_s, rate_scale)
    peak = float(rates.max())
    if not peak <= MAX_OFFERED_RPS:
        raise BadInputError(
            f"--rate-scale = {rate_scale!r}: puts the peak of {trace.name} at {peak:.3g} req/s, "
            f"beyond the {MAX_OFFERED_RPS:g} req/s the simulator models. Fix: lower it; "
            f"max_tasks serve {p.max_tasks * p.task_capacity_rps:g} req/s."
        )
    result = simulate(
        p,
        rates,
        step_s=step_s,
        seed=seed,
        start=start,
        progress=progress,
        # Per-request rows and fine count bins hold real arrivals: no
        # synthetic noise on top (Trace.real_arrivals).
        noisy_arrivals=not trace.real_arrivals(step_s),
    )
    result.summary["trace"] = trace.name
    result.summary["trace_gap_windows"] = trace.gap_windows
    result.summary["rate_scale"] = rate_scale
    # Two columns read off the rows: building the whole timeline costs more.
    off, want = TIMELINE_COLUMNS.index("offered_rps"), TIMELINE_COLUMNS.index("desired_tasks")
    offered = [r[off] for r in result.rows]
    desired = [r[want] for r in result.rows]
    result.summary.update(summary_keys(p, offered, desired, step_s))
    return result
