"""Scaling rules and notes (spec/rules/scaling.py): the signal and its companions."""

from __future__ import annotations

from typing import Any

import pytest

from ecs_gpu.design.paths import fast_scale_in
from ecs_gpu.spec import (
    parse_spec,
)

from ..specdata import (
    CONC,
    FULL,
    PATH,
    dumps,
    edited,
    one_problem,
    problems,
    with_,
)


def test_concurrency_without_metrics_says_to_add_the_table() -> None:
    line = one_problem(edited(CONC, service={"metrics": ...}), "scaling.signal", "'concurrency'")
    assert "[service.metrics]" in line and 'preset = "vllm"' in line.split("Fix:")[1]
    assert 'signal = "task-gpus"' in line


def test_concurrency_without_a_target_suggests_one() -> None:
    line = one_problem(
        edited(CONC, scaling={"target_concurrency_per_task": ..., "signal": ...}),
        "scaling.signal",
        "'concurrency'",
    )
    # Defaults: 2 req/s x 8 s per request = 16 at full load; 70 % of it keeps headroom.
    assert "target_concurrency_per_task = N" in line and "holds 16" in line
    assert "about 11.2" in line and "by default when [service.metrics] is present" in line


def test_explicit_concurrency_without_metrics_or_target_reports_both() -> None:
    found = problems(with_("scaling", signal="concurrency"))
    assert len(found) == 2
    assert all(line.startswith(f"{PATH}: scaling.signal = 'concurrency'") for line in found)


def test_fast_scale_out_needs_the_concurrency_signal() -> None:
    line = one_problem(with_("scaling", fast_scale_out=True), "scaling.fast_scale_out", "True")
    assert "'task-gpus'" in line and "10-second" in line
    assert parse_spec(with_("scaling", fast_scale_out=False), PATH).scaling.fast_scale_out is False
    spec = parse_spec(edited(CONC, scaling={"fast_scale_out": False}), PATH)
    assert not spec.scaling.fast_scale_out_enabled


def test_fast_scale_in_needs_the_concurrency_signal() -> None:
    line = one_problem(with_("scaling", fast_scale_in=True), "scaling.fast_scale_in", "True")
    assert "'task-gpus'" in line and "10-second" in line
    assert parse_spec(with_("scaling", fast_scale_in=False), PATH).scaling.fast_scale_in is False
    # Off unless asked for.
    assert not fast_scale_in.enabled(parse_spec(dumps(CONC), PATH))
    spec = parse_spec(edited(CONC, scaling={"fast_scale_in": False}), PATH)
    assert not fast_scale_in.enabled(spec)
    assert fast_scale_in.fast_scale_in(spec) is None
    on = parse_spec(edited(CONC, scaling={"fast_scale_in": True}), PATH)
    assert fast_scale_in.enabled(on) and fast_scale_in.fast_scale_in(on) is not None


@pytest.mark.parametrize("signal", ["task-gpus", "asg-average"])
def test_gpu_guard_needs_the_concurrency_signal(signal: str) -> None:
    line = one_problem(with_("scaling", gpu_guard=True, signal=signal), "scaling.gpu_guard")
    assert "already the signal" in line and "Fix: remove gpu_guard" in line
    spec = parse_spec(edited(CONC, scaling={"gpu_guard": True}), PATH)
    assert spec.scaling.gpu_guard and spec.scaling.gpu_metric == "task-gpus"


def test_an_unused_concurrency_target_is_a_note_not_an_error() -> None:
    spec = parse_spec(with_("scaling", target_concurrency_per_task=8.0), PATH)
    (note,) = spec.warnings(PATH)
    assert note.startswith(f"{PATH}: scaling.target_concurrency_per_task = 8.0: is not used")


def test_a_gpu_target_without_a_gpu_policy_is_a_note() -> None:
    spec = parse_spec(edited(CONC, scaling={"gpu_target_percent": 80}), PATH)
    (note,) = spec.warnings(PATH)
    assert note.startswith(f"{PATH}: scaling.gpu_target_percent = 80.0: is not used")
    assert "gpu_guard = true" in note.split("Fix:")[1]
    # With the guard, or on a GPU signal (FULL writes it too), it sets a policy's target.
    guarded = edited(CONC, scaling={"gpu_target_percent": 80, "gpu_guard": True})
    assert parse_spec(guarded, PATH).warnings(PATH) == []
    assert parse_spec(dumps(FULL), PATH).warnings(PATH) == []


@pytest.mark.parametrize(
    ("base", "scaling", "why"),
    [
        (FULL, {}, "signal = 'task-gpus' has no 10-second series"),
        (FULL, {"signal": "asg-average"}, "signal = 'asg-average'"),
        (CONC, {"fast_scale_out": False}, "fast_scale_out = false"),
    ],
)
def test_a_panic_threshold_with_the_fast_path_off_is_a_note(
    base: dict[str, Any], scaling: dict[str, Any], why: str
) -> None:
    spec = parse_spec(edited(base, scaling={**scaling, "panic_threshold_percent": 150}), PATH)
    (note,) = spec.warnings(PATH)
    assert note.startswith(f"{PATH}: scaling.panic_threshold_percent = 150.0: is not used")
    assert why in note
    # Left at its default it is no note, and with the fast path on it is used.
    assert parse_spec(edited(base, scaling=scaling), PATH).warnings(PATH) == []
    on = parse_spec(edited(CONC, scaling={"panic_threshold_percent": 150}), PATH)
    assert on.scaling.fast_scale_out_enabled and on.warnings(PATH) == []


# --- scale to zero: min_tasks = 0 and [[scaling.schedule]] --------------------------

NO_LB: dict[str, Any] = {k: v for k, v in FULL.items() if k != "load_balancer"}
NIGHT = {"cron": "0 20 * * ? *", "min_tasks": 0, "max_tasks": 0}
MORNING = {"cron": "cron(0 8 ? * MON-FRI *)", "min_tasks": 1, "max_tasks": 4}


def test_zero_with_a_load_balancer_is_valid() -> None:
    spec = parse_spec(with_("scaling", min_tasks=0), PATH)
    assert spec.scaling.min_tasks == 0 and spec.scaling.schedule == ()


def test_zero_without_a_wake_path_names_both_fixes() -> None:
    line = one_problem(
        dumps({**NO_LB, "scaling": {**FULL["scaling"], "min_tasks": 0}}), "scaling.min_tasks", "0"
    )
    assert "nothing would start one again" in line
    fix = line.split("Fix:")[1]
    assert "[load_balancer]" in fix and "[[scaling.schedule]]" in fix


def test_zero_without_a_load_balancer_is_valid_with_a_morning_schedule() -> None:
    doc = {**NO_LB, "scaling": {**FULL["scaling"], "min_tasks": 0, "schedule": [NIGHT, MORNING]}}
    spec = parse_spec(dumps(doc), PATH)
    # `cron(...)` around the fields is taken off; the fields are kept as written.
    assert [e.cron for e in spec.scaling.schedule] == ["0 20 * * ? *", "0 8 ? * MON-FRI *"]


def test_a_schedule_that_only_sleeps_does_not_wake_a_service_without_a_load_balancer() -> None:
    doc = {**NO_LB, "scaling": {**FULL["scaling"], "min_tasks": 0, "schedule": [NIGHT]}}
    one_problem(dumps(doc), "scaling.min_tasks", "0")


def test_schedule_above_max_tasks_names_the_entry() -> None:
    text = with_("scaling", schedule=[NIGHT, {**MORNING, "max_tasks": 9}])
    line = one_problem(text, "scaling.schedule[1].max_tasks", "9")
    assert "above scaling.max_tasks (4)" in line


@pytest.mark.parametrize(
    ("cron", "says"),
    [
        ("0 8 * *", "has 4 fields"),
        ("0 8 * * MON *", "exactly one of day-of-month and day-of-week"),
        ("0 25 * * ? *", "hours field: 25 is outside 0-23"),
        ("0 8 L * ? *", "uses L, W or #"),
        ("0 8 ? * FOO *", "day-of-week field: 'FOO' is not a number or a name"),
    ],
)
def test_bad_cron_names_the_field(cron: str, says: str) -> None:
    found = problems(with_("scaling", schedule=[{**NIGHT, "cron": cron}]))
    assert len(found) == 1 and says in found[0], found
    assert "scaling.schedule" in found[0] and "0 8 ? * MON-FRI *" in found[0].split("Fix:")[1]


def test_schedule_min_above_max_is_refused() -> None:
    found = problems(with_("scaling", schedule=[{**NIGHT, "min_tasks": 2, "max_tasks": 1}]))
    assert len(found) == 1 and "min_tasks 2 is above max_tasks 1" in found[0], found


def test_a_schedule_that_sleeps_a_kept_service_needs_a_wake_too() -> None:
    # min_tasks 1, but the night entry lets it reach zero and nothing wakes it.
    doc = {**NO_LB, "scaling": {**FULL["scaling"], "schedule": [NIGHT]}}
    line = one_problem(dumps(doc), "scaling.schedule[0].min_tasks", "0")
    assert "nothing would start one again" in line
    doc["scaling"]["schedule"] = [NIGHT, MORNING]
    assert parse_spec(dumps(doc), PATH).scaling.schedule[1].min_tasks == 1


def _schedule(*crons: str) -> str:
    return with_(
        "scaling",
        schedule=[{"cron": c, "min_tasks": 1, "max_tasks": 2 + i} for i, c in enumerate(crons)],
    )


def test_two_schedule_entries_at_the_same_minutes_name_both_indexes() -> None:
    # Written differently, run at the same minutes: MON-FRI is 2-6.
    line = one_problem(
        _schedule("0 8 ? * MON-FRI *", "0 20 * * ? *", "cron(0 8 ? * 2-6 *)"),
        "scaling.schedule[2].cron",
        "'0 8 ? * 2-6 *'",
    )
    assert "runs at minutes scaling.schedule[0].cron ('0 8 ? * MON-FRI *') runs at too" in line
    assert "does not say which one's min_tasks and max_tasks hold" in line
    assert "Fix: make the two schedules run at different minutes" in line


@pytest.mark.parametrize(
    ("crons", "first"),
    [
        # Every day at 08:00, the day fields the other way round.
        (("0 8 * * ? *", "0 8 ? * * *"), "1970-01-01 08:00"),
        # Every day and weekdays share the weekdays (1970-01-01 was a Thursday).
        (("0 8 ? * * *", "0 8 ? * MON-FRI *"), "1970-01-01 08:00"),
        # The 1st of the month and Sundays share the Sundays that are a 1st.
        (("0 8 1 * ? *", "0 8 ? * SUN *"), "1970-02-01 08:00"),
    ],
)
def test_schedule_entries_that_share_a_minute_however_written_are_refused(
    crons: tuple[str, str], first: str
) -> None:
    line = one_problem(_schedule(*crons), "scaling.schedule[1].cron", repr(crons[1]))
    assert f"(first {first} UTC)" in line


def test_schedule_entries_that_set_the_same_bounds_may_share_minutes() -> None:
    doc = with_(
        "scaling",
        schedule=[
            {"cron": "0 8 ? * * *", "min_tasks": 1, "max_tasks": 2},
            {"cron": "0 8 ? * MON-FRI *", "min_tasks": 1, "max_tasks": 2},
        ],
    )
    assert len(parse_spec(doc, PATH).scaling.schedule) == 2


def test_schedule_entries_at_different_minutes_are_accepted() -> None:
    spec = parse_spec(_schedule("0 8 ? * MON-FRI *", "0 8 ? * SAT *", "30 8 ? * MON-FRI *"), PATH)
    assert len(spec.scaling.schedule) == 3


def test_max_tasks_above_the_tasks_per_service_quota_is_a_note() -> None:
    at = parse_spec(
        edited(FULL, capacity={"max_instances": 5000}, scaling={"max_tasks": 5000}), PATH
    )
    assert at.warnings(PATH) == []
    above = edited(FULL, capacity={"max_instances": 5001}, scaling={"max_tasks": 5001})
    (line,) = parse_spec(above, PATH).warnings(PATH)
    assert line.startswith(f"{PATH}: scaling.max_tasks = 5001: is above ECS's default")
    assert "'Tasks per service' quota (5,000" in line
    assert "Fix: lower it to 5000 or less, or request an increase" in line
