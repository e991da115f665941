"""checks/verify/scaling: what verify scaling publishes, from the spec."""

from __future__ import annotations

from ecs_gpu.checks.verify import scaling as vs


def test_the_levels_follow_the_specs_signal() -> None:
    from ecs_gpu.design.paths import fast_path as fp
    from ecs_gpu.spec import load_spec
    from example_specs import G5_PATH as EXAMPLE_SPEC

    fast = fp.fast_path(load_spec(EXAMPLE_SPEC))
    assert fast is not None
    first = fast.steps[0]
    upper = first.upper if first.upper is not None else fast.threshold
    # Inside the fast path's first step: the alarm breaches and the smallest step fires.
    assert vs.levels(fast, fast.target) == {"high": fast.threshold + upper / 2, "low": 0.0}
    assert fast.step_for(vs.levels(fast, fast.target)["high"]) == first
    # Target tracking alone: twice the target adds a task; a GPU signal keeps the defaults.
    assert vs.levels(None, 11.0) == {"high": 22.0, "low": 0.0}
    assert vs.levels(None, None) == {}
