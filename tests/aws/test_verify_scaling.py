"""aws/verify_scaling: the scaling test itself, against moto."""

from __future__ import annotations

import pytest

from cli.conftest import NAMES, Clients, Lockstep
from cli.test_verify import ASG, make_service
from ecs_gpu.aws import verify_scaling as vs
from ecs_gpu.errors import ProblemsFound


def test_verify_scaling_times_out_naming_what_did_not_happen(clients: Clients) -> None:
    make_service(clients, desired=1)
    now = [0.0]
    pace = Lockstep()
    pub = vs.Publisher(clients.cw, ASG, 0.0, interval_s=0.01, pace=pace)

    def tick(_: float) -> None:
        now[0] += 15.0
        pace.tick()

    with pytest.raises(ProblemsFound) as exc:
        vs.run_scaling_test(
            clients.cw,
            clients.ecs,
            cluster=NAMES.cluster,
            service=NAMES.service,
            asg=ASG,
            poll_s=15,
            scale_out_timeout_s=60,
            sleep=tick,
            clock=lambda: now[0],
            publisher=pub,
        )
    assert "never rose above 1 within 60 s" in exc.value.message
    assert "target-tracking policy" in exc.value.message
    assert not pub.running


def test_the_levels_follow_the_specs_signal() -> None:
    from cli.conftest import EXAMPLE_SPEC
    from ecs_gpu.design.paths import fast_path as fp
    from ecs_gpu.spec import load_spec

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
