"""Tests of the research the benchmarks run (benchmarks/research, not in the wheel).

The benchmark scripts import it as ``research`` from their own folder, so the
tests put that folder on the path, and tests/sim for the simulator's test
helpers (simhelp) these tests share.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
for folder in (ROOT / "benchmarks", ROOT / "tests" / "sim"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
