"""How a run is reported: the summary as stable JSON, the timeline, the worst latency."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from simhelp import STEP, params

from ecs_gpu.sim import report
from ecs_gpu.sim.engine import TIMELINE_COLUMNS, simulate


def test_the_summary_json_is_sorted_and_the_timeline_has_one_row_per_step(
    tmp_path: Path,
) -> None:
    result = simulate(params(), np.full(12, 1.0), step_s=STEP, seed=0)
    text = report.summary_json(result)
    assert text == report.summary_json(result) and text.endswith("\n")
    assert list(json.loads(text)) == sorted(result.summary)
    out = tmp_path / "timeline.csv"
    report.write_timeline(result, out)
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0].split(",") == list(TIMELINE_COLUMNS) and len(lines) == 1 + 12


def test_the_worst_latency_says_when_overload_is_still_open() -> None:
    assert report.worst_latency({}) == "-"
    assert report.worst_latency({"worst_scale_out_latency_s": 90.0}) == "1.5 min"
    open_at_end = {"worst_scale_out_latency_s": 60.0, "overloaded_at_end_s": 300.0}
    assert report.worst_latency(open_at_end) == "1.0 min (+5 min open at end)"
