"""Synth: a cold `ecs-gpu synth` (new process) against a warm in-process re-synth.

Cold: ``ecs-gpu synth SPEC -o DIR`` in a fresh Python process, so it pays
for importing CDK, starting Node/jsii and loading aws-cdk-lib, then one
synth. Warm: :func:`ecs_gpu.template.synth.synth_template` again in a process that has
already synthesized once (what ``plan``, ``deploy`` and the tests do). The
warm re-synth should stay under 2 s.

Run:

    .venv/bin/python benchmarks/bench_synth.py [SPEC ...]

It prints a markdown table for docs/benchmarks.md: medians of 3 runs each,
and the cold/warm ratio, which is steadier than the absolute times on a
shared machine.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SPECS = [
    ROOT / "examples" / "g5-vllm.toml",
    ROOT / "examples" / "g6e-alb-odcr.toml",
    ROOT / "examples" / "p5-8gpu.toml",
]
REPEATS = 3
WARM_BAR_S = 2.0


def cold_s(spec: Path) -> float:
    """Wall seconds of `ecs-gpu synth` in a new process."""
    exe = Path(sys.executable).parent / "ecs-gpu"
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        subprocess.run([str(exe), "synth", str(spec), "-o", out], check=True, capture_output=True)
        return time.perf_counter() - start


def warm_s(spec: Path) -> float:
    """Wall seconds of one more in-process synth, after a first one warmed jsii."""
    from ecs_gpu.spec import load_spec
    from ecs_gpu.template.synth import synth_template

    loaded = load_spec(spec)
    start = time.perf_counter()
    synth_template(loaded)
    return time.perf_counter() - start


def main(argv: list[str]) -> None:
    specs = [Path(a) for a in argv] or DEFAULT_SPECS
    from ecs_gpu.spec import load_spec
    from ecs_gpu.template.synth import synth_template

    synth_template(load_spec(specs[0]))  # warm Node/jsii and aws-cdk-lib once
    print("| spec | cold `ecs-gpu synth` | warm re-synth | cold / warm | warm < 2 s |")
    print("|---|---:|---:|---:|---|")
    for spec in specs:
        cold = statistics.median(cold_s(spec) for _ in range(REPEATS))
        warm = statistics.median(warm_s(spec) for _ in range(REPEATS))
        verdict = "pass" if warm < WARM_BAR_S else "FAIL"
        print(f"| {spec.name} | {cold:.2f} s | {warm:.2f} s | {cold / warm:.1f}x | {verdict} |")


if __name__ == "__main__":
    main(sys.argv[1:])
