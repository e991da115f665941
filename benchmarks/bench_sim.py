"""Simulator speed: 14 days of ServeGen M-large at 10-second steps, against a reference engine.

The bar: under 10 seconds on one core, so that ``ecs-gpu simulate`` and
``plan`` answer on two weeks of a real trace while a user waits. The engine
is split into per-controller units, and that structure must cost no speed,
so this script times the current engine and the single-function engine of
commit BASELINE_COMMIT (extracted with ``git archive`` into a temporary
folder) in one run, alternating them in fresh processes on the same core
and the same load; ratios measured in one run are steadier than lone times
on a shared machine. Run:

    .venv/bin/python benchmarks/bench_sim.py

It prints each engine's best and median time, the ratio current / baseline,
simulated days per second, and whether both engines gave the same summary.
Pass --no-baseline to time the current engine alone (no git needed), or
--baseline COMMIT to time against another commit's engine (e.g. the commit
before a refactor, whose ratio must stay within 1.05).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

import numpy as np

# The design comparison's fleet and load (this folder is on sys.path when
# the script runs): g5.xlarge, up to 64 single-GPU tasks, [scaling] defaults
# (task-gpus GPU metric, scale-in guard on the AlarmLow window).
from compare_designs import SPEC, STEP_S, design, mean_scale

from ecs_gpu.sim import bundled_trace_path, read_trace

# The last commit whose engine is a single function: the reference for the ratio.
BASELINE_COMMIT = "324e40a"
ROUNDS = 3  # processes per engine, alternating
REPEATS = 3  # runs per process
BAR_S = 10.0
ROOT = Path(__file__).resolve().parent.parent

# Runs in a child process: time simulate() on the saved load, print JSON.
CHILD = """
import json, sys, time
import numpy as np
from ecs_gpu.sim.engine import simulate
from ecs_gpu.sim.params import from_spec
from ecs_gpu.spec import parse_spec
p = from_spec(parse_spec(sys.argv[2], "design.toml"))
rates = np.load(sys.argv[1])
times = []
for seed in range(int(sys.argv[3])):
    t0 = time.perf_counter()
    res = simulate(p, rates, step_s=float(sys.argv[4]), seed=seed)
    times.append(time.perf_counter() - t0)
s = res.summary
print(json.dumps({"times": times, "summary": [s["gpu_hours"], s["overload_seconds"],
                  s["unserved_requests"], s["scale_out_latency_s"]]}))
"""


def _baseline_commit() -> str:
    """``--baseline COMMIT`` when given, else BASELINE_COMMIT."""
    if "--baseline" in sys.argv:
        return sys.argv[sys.argv.index("--baseline") + 1]
    return BASELINE_COMMIT


def _extract_baseline(dest: Path, commit: str) -> Path:
    """The baseline commit's src/ folder, from git, without touching the working tree."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "src/ecs_gpu"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest / "src"


def _child(src: Path, rates: Path, spec: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    cpu = min(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    cmd = [sys.executable, "-c", CHILD, str(rates), spec, str(REPEATS), str(STEP_S)]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu), *cmd]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    result: dict[str, object] = json.loads(out)
    return result


def main() -> int:
    p = design("")
    trace = read_trace(bundled_trace_path())
    # Mean load = MEAN_TASKS (20) tasks at the GPU target, as in compare_designs.py.
    scale = mean_scale(p, trace)
    rates = trace.rates(STEP_S, scale)
    spec = SPEC.format(scaling="")
    days = trace.duration_s / 86400.0
    print(f"trace: {trace.name}, {days:g} days, {len(rates)} steps of {STEP_S:g} s, x{scale:.4g}")
    engines = {"current": ROOT / "src"}
    with tempfile.TemporaryDirectory() as tmp:
        np.save(Path(tmp) / "rates.npy", rates)
        if "--no-baseline" not in sys.argv:
            commit = _baseline_commit()
            engines[f"baseline {commit}"] = _extract_baseline(Path(tmp), commit)
        times: dict[str, list[float]] = {k: [] for k in engines}
        summaries: dict[str, object] = {}
        t0 = time.perf_counter()
        for _ in range(ROUNDS):
            for name, src in engines.items():
                r = _child(src, Path(tmp) / "rates.npy", spec)
                times[name] += r["times"]  # type: ignore[arg-type]
                summaries[name] = r["summary"]
    took = time.perf_counter() - t0
    print(f"{ROUNDS} processes x {REPEATS} runs per engine, alternating, one core, {took:.0f} s")
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, ts in times.items():
        print(
            f"{name}: best {min(ts):.2f} s, median {med[name]:.2f} s, {days / med[name]:.1f} days/s"
        )
    ok = med["current"] < BAR_S
    if len(engines) == 2:
        base = next(k for k in engines if k != "current")
        print(f"ratio current / baseline: median {med['current'] / med[base]:.2f}, "
              f"best {min(times['current']) / min(times[base]):.2f}")  # fmt: skip
        same = summaries["current"] == summaries[base]
        print(f"same summary as the baseline: {'yes' if same else 'NO'}")
        ok = ok and same
    print(f"bar: < {BAR_S:g} s -> {'PASS' if med['current'] < BAR_S else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
