"""aws/verify_scaling: the scaling test itself, against moto."""

from __future__ import annotations

import pytest

from cli.conftest import NAMES, Clients, Lockstep
from cli.verify_helpers import ASG, make_service
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
