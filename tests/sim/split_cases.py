"""Runs whose summaries were recorded before the engine was split into controllers.

tests/sim/test_engine_split.py reruns each case and compares its summary, and
the sum of every timeline column, with tests/sim/data/before_split.json, which
``python tests/sim/split_cases.py`` wrote from the single-function engine
(commit 324e40a). The split must change no number of these designs.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from simhelp import params

from ecs_gpu.sim.engine import simulate
from ecs_gpu.sim.params import SimParams

RECORD = Path(__file__).resolve().parent / "data" / "before_split.json"


def rates(hours: float = 12.0, step_s: float = 10.0, seed: int = 7) -> npt.NDArray[np.float64]:
    """A day-like cycle with sudden bursts and quiet spells (req/s per step)."""
    n = round(hours * 3600.0 / step_s)
    t = np.arange(n) * step_s
    base = 4.0 + 3.5 * np.sin(2.0 * math.pi * t / (6.0 * 3600.0))
    rng = np.random.default_rng(seed)
    bursts = np.zeros(n)
    for start in rng.integers(0, n - 200, size=6):
        bursts[start : start + int(rng.integers(30, 200))] += float(rng.uniform(2.0, 6.0))
    quiet = (t % (4.0 * 3600.0)) < 1800.0
    return np.where(quiet, 0.2, np.clip(base + bursts, 0.0, None))


def _noisy(p: SimParams) -> SimParams:
    return p.with_(poisson_arrivals=True, boot_jitter_fraction=0.2)


def cases() -> dict[str, tuple[SimParams, dict[str, Any]]]:
    """Name -> (parameters, simulate keyword arguments)."""
    big = {"max_instances": 8, "max_tasks": 8}
    asg = 'gpu_metric = "asg-average"'
    return {
        "default warm": (params(**big), {}),
        "default noisy seed 0": (_noisy(params(**big)), {"seed": 0}),
        "default noisy seed 3": (_noisy(params(**big)), {"seed": 3}),
        "default cold": (_noisy(params(**big)), {"start": "cold"}),
        "asg-average": (_noisy(params(scaling=asg, **big)), {}),
        "host-cpu policy": (
            _noisy(params(**big)).with_(managed_scaling={"host_cpu_policy_target_percent": 12.0}),
            {},
        ),
        "scale-in latest": (params(**big).with_(tracking={"scale_in_basis": "latest"}), {}),
        "running-only reservation": (
            params(**big).with_(metrics={"reservation_includes_pending": False}),
            {},
        ),
        "reserved floor 2": (_noisy(params(**big)).with_(reserved_instances=2), {}),
        "g5.12xlarge binpack": (
            _noisy(params(instance="g5.12xlarge", max_instances=3, max_tasks=12)).with_(
                placement="binpack"
            ),
            {},
        ),
        "g5.12xlarge spread cold": (
            _noisy(params(instance="g5.12xlarge", max_instances=3, max_tasks=12)),
            {"start": "cold", "seed": 5},
        ),
        "steps up to 2": (_noisy(params(**big)).with_(managed_scaling={"max_scaling_step": 2}), {}),
        "step 5 s": (_noisy(params(**big)), {"step_s": 5.0}),
        "step 60 s": (_noisy(params(**big)), {"step_s": 60.0}),
    }


def outcome(p: SimParams, kw: dict[str, Any]) -> dict[str, Any]:
    step = float(kw.get("step_s", 10.0))
    res = simulate(p, rates(step_s=step), **kw)
    sums = {
        c: round(float(np.nansum(np.asarray(v, dtype=np.float64))), 6)
        for c, v in res.timeline.items()
    }
    return {"summary": res.summary, "timeline_sums": sums}


def main() -> int:
    data = {name: outcome(p, kw) for name, (p, kw) in cases().items()}
    RECORD.parent.mkdir(exist_ok=True)
    RECORD.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"recorded {len(data)} runs in {RECORD}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
