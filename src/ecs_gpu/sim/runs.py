"""What a simulate, compare or plan run is made of: its checked inputs and its labels.

Pure: the CLI (:mod:`ecs_gpu.cli.predict`) parses the options, calls these
and renders; Python callers get the same checks and names.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ecs_gpu.contracts.signals import SERIES
from ecs_gpu.errors import BadInputError
from ecs_gpu.sim import report as rp
from ecs_gpu.sim.engine import SimResult
from ecs_gpu.sim.params import SimParams
from ecs_gpu.sim.signal_words import TARGET_WORDS
from ecs_gpu.sim.workload import bundled_traces


def target_text(p: SimParams) -> str:
    """What the design's policies hold: the concurrency target (and the guard's) or the GPU's."""
    targets = p.targets
    if not targets:
        return TARGET_WORDS[p.signal_plan.gpu_series](p.tracking.gpu_target_percent).short
    (signal, target), *others = targets
    text = TARGET_WORDS[signal](target).short
    for other, value in others:
        text += f" + {TARGET_WORDS[other](value).beside}"
    return text


def label(p: SimParams, spec_path: Path, *, full: bool = False) -> str:
    return f"{spec_path if full else spec_path.name} {target_text(p)}"


def check_rate_scale(rate_scale: float | None) -> None:
    if rate_scale is not None and not (rate_scale > 0 and math.isfinite(rate_scale)):
        raise BadInputError(
            f"--rate-scale = {rate_scale!r}: must be a positive finite number. Fix: e.g. 2.5."
        )


def parse_targets(text: str) -> list[float]:
    out: list[float] = []
    for part in text.split(","):
        try:
            v = float(part)
        except ValueError:
            raise BadInputError(
                f"--sweep-gpu-target = {text!r}: {part.strip()!r} is not a number. "
                "Fix: give percents separated by commas, e.g. 50,60,70,80."
            ) from None
        if not 0 < v <= 100:
            raise BadInputError(
                f"--sweep-gpu-target = {text!r}: {v:g} is not in (0, 100]. "
                "Fix: give percents between 1 and 100."
            )
        if v in out:
            # Two rows with one label: the JSON object would keep only one.
            raise BadInputError(
                f"--sweep-gpu-target = {text!r}: {v:g} appears twice. Fix: give each target once."
            )
        out.append(v)
    return out


def check_sweepable(p: SimParams, spec: Path, text: str) -> None:
    """A sweep changes gpu_target_percent: without a GPU policy every row would be one run."""
    if p.gpu_policy:
        return
    signal = p.tracking.signal
    key = SERIES[signal].target_key
    target = p.target(signal)
    shown = "" if target is None else f" ({key} = {target:g})"
    raise BadInputError(
        f"--sweep-gpu-target = {text!r}: {spec} scales on {signal}{shown} and runs no GPU "
        "policy, so every GPU target gives the same run. Fix: compare specs that differ in "
        f"{key} (`ecs-gpu compare a.toml b.toml --trace ...`), or set "
        "gpu_guard = true in [scaling] to sweep the guard's target."
    )


def cost_caption(loaded: list[SimParams]) -> str | None:
    """The USD column's caveat, when a design has a warm pool (its stopped volumes are priced)
    or Spot (its hours at the Spot price, beside its all-On-Demand row)."""
    parts = []
    if any(p.warm_pool.min_size is not None for p in loaded):
        parts.append(f"USD: {rp.cost_meaning(warm_pool=True)}")
    if any(p.spot.percent for p in loaded):
        parts.append(
            "Spot designs: Spot instance-hours at the Spot price ([simulation] "
            "spot_discount_percent, else the catalog's dated figure); the row after each is the "
            "same design all On-Demand"
        )
    return ". ".join(parts) or None


def trace_input(trace: str) -> Path | None:
    """The trace's file, when --trace names one (bundled names are not paths here)."""
    if trace in bundled_traces():
        return None
    return Path(trace)


def on_demand_twin(p: SimParams) -> SimParams | None:
    """The same design with every instance On-Demand: what Spot is measured against.

    None without [capacity.spot]. Its boots and arrivals are the Spot run's
    (the interruptions draw from a stream of their own, sim/markets.py), so
    the overload difference is the interruptions' alone.
    """
    return p.with_(spot=p.spot.with_(percent=0)) if p.spot.percent else None


def with_on_demand_twin(
    p: SimParams, result: SimResult, run_twin: Callable[[SimParams], SimResult]
) -> SimResult:
    """With [capacity.spot]: ``result`` with its On-Demand twin's run (``run_twin``) and
    what Spot saves and its interruptions add (:func:`spot_versus_on_demand`) in its
    summary, the twin's own summary under ``on_demand``. Without Spot: ``result``."""
    twin = on_demand_twin(p)
    if twin is None:
        return result
    od = run_twin(twin).summary
    summary = {**result.summary, **spot_versus_on_demand(result.summary, od), "on_demand": od}
    return replace(result, summary=summary)


def spot_versus_on_demand(spot: dict[str, Any], od: dict[str, Any]) -> dict[str, float | None]:
    """What Spot saves and what its interruptions add, from two runs' summaries."""
    base = od["cost_usd"]
    return {
        "on_demand_cost_usd": base,
        "on_demand_overload_seconds": od["overload_seconds"],
        "spot_saving_percent": (
            round(100.0 * (base - spot["cost_usd"]) / base, 1) if base else None
        ),
        "interruption_overload_seconds": spot["overload_seconds"] - od["overload_seconds"],
    }
