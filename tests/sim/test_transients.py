"""The transient measures (sim/transients.py) on small hand-made series, exact values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from simhelp import CONCURRENCY, METRICS, params

from ecs_gpu.sim import read_trace, run
from ecs_gpu.sim.transients import (
    LoadDrop,
    drop_stats,
    drops_to_need,
    find_drops,
    minute_means,
    peak_vs_need,
    tasks_needed,
)

# 2 req/s a task at full load, held at 70 %: 1.4 req/s a task at the target.
P = params(max_tasks=64, max_instances=64)


def test_need_is_load_over_what_a_task_serves_at_the_target() -> None:
    assert P.rps_per_task_at_target == pytest.approx(1.4)
    assert tasks_needed(P, 14.0) == 10
    assert tasks_needed(P, 14.1) == 11
    assert tasks_needed(P, 0.0) == 0
    # Not clipped: the peak may need more than max_tasks.
    assert tasks_needed(P, 140.0) == 100


def test_need_on_the_concurrency_signal_is_the_target_over_the_request_time() -> None:
    # 11.2 requests at 8 s each: a task at the target serves 1.4 req/s (Little's law).
    c = params(service=METRICS, scaling=CONCURRENCY, max_tasks=64, max_instances=64)
    assert c.rps_per_task_at_target == pytest.approx(11.2 / 8.0)
    assert tasks_needed(c, 14.0) == 10


def test_minute_means_drop_a_partial_minute() -> None:
    assert minute_means([1, 2, 3, 4, 5, 6, 7], 20.0).tolist() == [2.0, 5.0]
    with pytest.raises(ValueError, match="divide"):
        minute_means([1.0], 7.0)


def test_the_peak_is_the_highest_one_minute_mean() -> None:
    # A 10-s spike of 8.4 req/s in the second minute: that minute's mean is
    # (8.4 + 5 x 1.4) / 6, which needs 2 tasks, not the spike's 6.
    offered = [1.4] * 6 + [8.4] + [1.4] * 5
    desired = [1] * 6 + [3] * 6
    got = peak_vs_need(P, offered, desired, 10.0)
    assert got.peak_rps == pytest.approx(15.4 / 6)
    assert (got.need_tasks, got.peak_desired, got.ratio) == (2, 3, 1.5)


def test_a_drop_is_thirty_percent_within_five_minutes_held_ten() -> None:
    loads = np.array([10.0] * 6 + [6.0] * 12 + [3.0] * 12)
    # One drop at minute 6: the load stays below 7 (70 % of 10) to the end,
    # the fall to 3 included.
    assert find_drops(loads) == [(6, 30, 10.0)]
    # Back up to 10 between the stages: two drops.
    loads = np.array([10.0] * 6 + [6.0] * 12 + [10.0] * 5 + [3.0] * 12)
    assert find_drops(loads) == [(6, 18, 10.0), (23, 35, 10.0)]


def test_a_dip_the_load_climbs_back_from_within_ten_minutes_is_no_drop() -> None:
    assert find_drops(np.array([10.0] * 6 + [6.0] * 9 + [10.0] * 6)) == []
    # A fall to exactly 70 % counts; to 71 % does not.
    assert find_drops(np.array([10.0] * 6 + [7.0] * 10)) == [(6, 16, 10.0)]
    assert find_drops(np.array([10.0] * 6 + [7.1] * 10)) == []


def test_a_slow_decline_is_no_drop() -> None:
    # 5 % a minute: 23 % over any 5 minutes.
    assert find_drops(10.0 * 0.95 ** np.arange(60.0)) == []


def test_a_two_minute_ramp_drops_at_its_first_minute_below_seventy_percent() -> None:
    # 8 -> 2 over two minutes: minute means 6.5 (above 5.6) then 3.5.
    loads = np.array([8.0] * 5 + [6.5, 3.5] + [2.0] * 10)
    assert find_drops(loads) == [(6, 17, 8.0)]


def test_time_to_need_counts_from_the_drop_to_the_first_step_within_ten_percent() -> None:
    # 14 req/s (10 tasks) for 6 min, then 7 req/s (5 tasks): within 10 % of 5
    # is exactly 5. Desired reaches it 5 minutes after the drop.
    offered = [14.0] * 6 + [7.0] * 12
    desired = [10] * 9 + [8] * 2 + [5] * 7
    (d,) = drops_to_need(P, offered, desired, 60.0)
    assert d == LoadDrop(at_s=360.0, before_rps=14.0, down_s=720.0, to_need_s=300.0)


def test_time_to_need_on_ten_second_steps() -> None:
    # 28 req/s (20 tasks), then 14 (10 tasks, band 9-11): desired 11 from the
    # 5th step of the drop's 3rd minute.
    offered = [28.0] * 36 + [14.0] * 72
    desired = [20] * 36 + [20] * 16 + [11] * 56
    (d,) = drops_to_need(P, offered, desired, 10.0)
    assert (d.at_s, d.to_need_s) == (360.0, 160.0)


def test_a_drop_desired_never_meets_is_unsettled() -> None:
    offered = [14.0] * 6 + [7.0] * 12 + [14.0] * 6
    desired = [10] * 6 + [6] * 12 + [10] * 6
    (d,) = drops_to_need(P, offered, desired, 60.0)
    # Back at 10 once the load returns: that is not settling after the drop.
    assert (d.down_s, d.to_need_s) == (720.0, None)


def test_need_is_clipped_to_min_tasks() -> None:
    # 0.5 req/s needs 1 task (min_tasks), not 0.
    offered = [14.0] * 6 + [0.5] * 12
    desired = [10] * 6 + [1] * 12
    (d,) = drops_to_need(P, offered, desired, 60.0)
    assert d.to_need_s == 0.0


def test_drop_stats_take_worst_and_median_of_the_settled() -> None:
    drops = [LoadDrop(0.0, 1.0, 600.0, s) for s in (300.0, None, 60.0, 120.0)]
    s = drop_stats(drops)
    assert (s.drops, s.unsettled, s.worst_s, s.median_s) == (4, 1, 300.0, 120.0)
    none = drop_stats([])
    assert (none.drops, none.unsettled, none.worst_s, none.median_s) == (0, 0, None, None)


def test_run_adds_the_measures_to_the_summary(tmp_path: Path) -> None:
    # 20 minutes at 14 req/s (10 tasks at the target), then 20 at 4.2 (3 tasks).
    trace = tmp_path / "drop.csv"
    trace.write_text("timestamp_s,rate_rps\n0,14\n1200,4.2\n2400,4.2\n", encoding="utf-8")
    result = run(P, read_trace(trace), step_s=10.0)
    s, tl = result.summary, result.timeline
    (d,) = drops_to_need(P, tl["offered_rps"], tl["desired_tasks"], 10.0)
    assert d.at_s == 1200.0
    assert s["peak_offered_rps_1min"] == 14.0
    assert s["peak_need_tasks"] == 10
    assert s["peak_desired_to_need"] == s["max_desired_tasks"] / 10
    assert (s["load_drops"], s["load_drops_not_within_need"]) == (1, 0 if d.to_need_s else 1)
    assert s["drop_to_need_worst_s"] == s["drop_to_need_median_s"] == d.to_need_s
    # Target tracking's 15 low datapoints: not within 10 % of need for 15 minutes.
    assert d.to_need_s is not None and d.to_need_s > 900
