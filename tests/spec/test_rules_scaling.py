"""Scaling rules and notes (spec/rules/scaling.py): the signal and its companions."""

from __future__ import annotations

from typing import Any

import pytest

from ecs_gpu import fast_scale_in
from ecs_gpu.spec import (
    parse_spec,
)

from .specdata import (
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
