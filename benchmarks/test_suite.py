"""The README's test command on a fresh clone: how long, and where the time goes.

Clones this checkout's HEAD into a temporary folder (as CI does), runs
``scripts/test.sh`` there (venv, installs, ruff, mypy, pytest) with
pytest's ``--durations``, and prints a Markdown summary: the whole command,
pytest's share, and the slowest tests. Run it on an otherwise idle machine:

    .venv/bin/python benchmarks/test_suite.py [--workers N] [--slowest 10]

docs/benchmarks.md "Test suite" has its output. Absolute times depend on the
machine and its load; the shares within one run do not.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# pytest's closing line: "=== 1908 passed, 4 skipped, 3 warnings in 301.22s (0:05:01) ==="
_SUMMARY = re.compile(r"^=* ?(?P<counts>\d+ (?:passed|failed).*?) in (?P<seconds>[\d.]+)s", re.M)
# A --durations row: "12.34s call     tests/x.py::test_y"
_DURATION = re.compile(r"^(?P<seconds>[\d.]+)s (?P<phase>setup|call|teardown)\s+(?P<test>\S.*)$")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="2", help="PYTEST_WORKERS for the run (default 2)")
    parser.add_argument("--slowest", type=int, default=10, help="how many slow tests to list")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ecs-gpu-suite-") as tmp:
        clone = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        env = {**os.environ, "PYTEST_WORKERS": args.workers}
        start = time.monotonic()
        run = subprocess.run(
            ["scripts/test.sh", "-p", "no:cacheprovider", f"--durations={args.slowest}"],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
        )
        total = time.monotonic() - start
    # pip writes its notices to stderr; pytest's summary and durations are on stdout.
    out = run.stdout
    summary = _SUMMARY.findall(out)
    if run.returncode != 0 or not summary:
        sys.stdout.write(out[-4000:] + run.stderr[-2000:])
        print(f"scripts/test.sh exited {run.returncode}")
        return 1
    counts, pytest_s = summary[-1][0], float(summary[-1][1])
    print(f"PYTEST_WORKERS={args.workers}, {os.cpu_count()} CPUs: {counts}\n")
    print("| part | seconds | share |")
    print("|---|---:|---:|")
    print(f"| whole command (installs, ruff, mypy, pytest) | {total:.0f} | 100% |")
    print(f"| venv, installs, ruff, mypy | {total - pytest_s:.0f} | {1 - pytest_s / total:.0%} |")
    print(f"| pytest | {pytest_s:.0f} | {pytest_s / total:.0%} |")
    print(f"\nThe {args.slowest} slowest tests (seconds of one worker):\n")
    print("| seconds | phase | test |")
    print("|---:|---|---|")
    for line in out.splitlines():
        m = _DURATION.match(line.strip())
        if m:
            print(f"| {float(m['seconds']):.1f} | {m['phase']} | `{m['test']}` |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
