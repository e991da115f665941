"""[scaling] (spec/sections/scaling.py): target bounds, the old gpu_metric key, the
schedule's quota."""

from __future__ import annotations

from typing import Any

import pytest

from ecs_gpu.spec import (
    parse_spec,
)

from ..specdata import (
    PATH,
    one_problem,
    problems,
    with_,
)


@pytest.mark.parametrize(
    ("section", "key", "bad", "fix"),
    [
        ("scaling", "gpu_target_percent", 0.0, "raise it"),
        ("scaling", "gpu_target_percent", 100.5, "lower it"),
        ("scaling", "cpu_target_percent", -1.0, "raise it"),
        ("scaling", "cpu_target_percent", 101.0, "lower it"),
        ("capacity", "target_capacity_percent", 0, "raise it"),
        ("capacity", "target_capacity_percent", 101, "lower it"),
    ],
)
def test_targets_in_zero_to_hundred(section: str, key: str, bad: Any, fix: str) -> None:
    line = one_problem(with_(section, **{key: bad}), f"{section}.{key}", repr(bad))
    assert f"Fix: {fix}" in line


@pytest.mark.parametrize("good", [100, 1])
def test_target_bounds_are_inclusive_at_100(good: int) -> None:
    spec = parse_spec(with_("capacity", target_capacity_percent=good), PATH)
    assert spec.capacity.target_capacity_percent == good
    assert parse_spec(with_("scaling", gpu_target_percent=100.0), PATH).scaling.gpu_target_percent


def test_old_gpu_metric_key_is_read_as_signal() -> None:
    spec = parse_spec(with_("scaling", gpu_metric="asg-average"), PATH)
    assert spec.scaling.signal == "asg-average"
    assert spec.scaling.gpu_metric == "asg-average"
    (line,) = problems(with_("scaling", gpu_metric="asg-average", signal="task-gpus"))
    assert "scaling" in line and "Fix: remove gpu_metric" in line


def test_more_scheduled_actions_than_the_quota_are_refused() -> None:
    # Each at its own minute: two at one minute are refused on their own.
    entries = [
        {"cron": f"{i % 60} {i // 60} ? * MON-FRI *", "min_tasks": 1, "max_tasks": 2}
        for i in range(201)
    ]
    line = one_problem(with_("scaling", schedule=entries), "scaling.schedule")
    assert "201 entries" in line and "at most 200" in line
    ok = parse_spec(with_("scaling", schedule=entries[:200]), PATH)
    assert len(ok.scaling.schedule) == 200
