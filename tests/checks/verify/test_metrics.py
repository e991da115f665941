"""checks/verify/metrics: which series verify metrics waits for, and where."""

from __future__ import annotations


def test_the_plan_waits_for_each_group_with_a_host_and_every_other_series_once() -> None:
    from ecs_gpu.checks.verify.metrics import metrics_plan
    from ecs_gpu.contracts.signals import DEFAULT_GPU_SIGNAL, SeriesAt, Signal
    from ecs_gpu.design.spot import Publishers, on_demand_claim

    names = SeriesAt(asg="od", cluster="c", service="s")
    signals: tuple[Signal, ...] = (DEFAULT_GPU_SIGNAL, "concurrency")
    # Without Spot: the one group, every signal.
    (only,) = metrics_plan(names, signals).waits
    assert only == (names, signals)
    # Both groups: the agent's series of each, the concurrency once, with the first.
    both = metrics_plan(names, signals, Publishers(("od", "spot")))
    assert [(at.asg, sig) for at, sig in both.waits] == [
        ("od", signals),
        ("spot", (DEFAULT_GPU_SIGNAL,)),
    ]
    # A group that must run a host and has none is named, not waited for: the
    # concurrency then goes with the Spot group.
    claim = on_demand_claim(1)
    hostless = metrics_plan(names, signals, Publishers(("od", "spot"), ("od",)), claim)
    assert [(at.asg, sig) for at, sig in hostless.waits] == [("spot", signals)]
    assert hostless.hostless == ("od",) and hostless.on_demand_claim == claim
