"""The engine split into per-controller units gives the numbers it gave before.

tests/sim/data/before_split.json holds each case's summary and timeline-column
sums as the single-function engine computed them (split_cases.py says how).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from split_cases import RECORD, cases, outcome

RECORDED: dict[str, Any] = json.loads(RECORD.read_text(encoding="utf-8"))
# What issue 8 added after the recording: the signal, the fast path's and the
# warm pool's counts (0 for these designs), and the concurrency column (NaN);
# issue 15: the warm pool's cost and instance-hours (0 without a pool); issue 16:
# the fast scale-in's count (0: these designs have none).
NEW_SUMMARY = {
    "signal": "task-gpus",
    "fast_path_scale_outs": 0,
    "fast_scale_ins": 0,
    "warm_pool_starts": 0,
    "warm_pool_returned": 0,
    "warm_pool_cost_usd": 0.0,
    "warm_pool_running_instance_hours": 0.0,
    "warm_pool_stopped_instance_hours": 0.0,
}
NEW_COLUMNS = {"concurrency_per_task": 0.0}


def test_every_case_was_recorded() -> None:
    assert set(RECORDED) == set(cases())


@pytest.mark.parametrize("name", sorted(cases()))
def test_summary_and_timeline_equal_the_recording(name: str) -> None:
    p, kw = cases()[name]
    # Through JSON, as recorded: tuples become lists, keys strings.
    got = json.loads(json.dumps(outcome(p, kw)))
    want = RECORDED[name]
    signal = "asg-average" if name == "asg-average" else "task-gpus"
    assert got["summary"] == {**want["summary"], **NEW_SUMMARY, "signal": signal}
    assert got["timeline_sums"] == {**want["timeline_sums"], **NEW_COLUMNS}
    # Not a run that does nothing: it scaled, and it overloaded at times.
    assert want["summary"]["max_tasks"] > 1
    assert want["summary"]["overload_seconds"] > 0
