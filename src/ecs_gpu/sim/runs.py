"""What a simulate, compare or plan run is made of: its checked inputs and its labels.

Pure: the CLI (:mod:`ecs_gpu.cli.predict`) parses the options, calls these
and renders; Python callers get the same checks and names.
"""

from __future__ import annotations

import math
from pathlib import Path

from ecs_gpu.errors import BadInputError
from ecs_gpu.signals import SERIES
from ecs_gpu.sim import report as rp
from ecs_gpu.sim.params import SimParams
from ecs_gpu.sim.workload import bundled_traces


def target_text(p: SimParams) -> str:
    """What the design's policies hold: the concurrency target (and the guard's) or the GPU's."""
    targets = p.targets
    if not targets:
        return SERIES[p.signal_plan.gpu_series].sim_target_words(p.gpu_target_percent)[1]
    (signal, target), *others = targets
    text = SERIES[signal].sim_target_words(target)[1]
    for other, value in others:
        text += f" + {SERIES[other].sim_target_words(value)[2]}"
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
    key = SERIES[p.signal].target_key
    target = p.target(p.signal)
    shown = "" if target is None else f" ({key} = {target:g})"
    raise BadInputError(
        f"--sweep-gpu-target = {text!r}: {spec} scales on {p.signal}{shown} and runs no GPU "
        "policy, so every GPU target gives the same run. Fix: compare specs that differ in "
        f"{key} (`ecs-gpu compare a.toml b.toml --trace ...`), or set "
        "gpu_guard = true in [scaling] to sweep the guard's target."
    )


def cost_caption(loaded: list[SimParams]) -> str | None:
    """The USD column's caveat, when a design has a warm pool (its stopped volumes are priced)."""
    if all(p.warm_pool_min_size is None for p in loaded):
        return None
    return f"USD: {rp.cost_meaning(warm_pool=True)}"


def trace_input(trace: str) -> Path | None:
    """The trace's file, when --trace names one (bundled names are not paths here)."""
    if trace in bundled_traces():
        return None
    return Path(trace)
