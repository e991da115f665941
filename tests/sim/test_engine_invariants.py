"""Invariants of the engine on random loads (hypothesis), and seed determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simhelp import STEP, params

from ecs_gpu.sim.engine import simulate

segments = st.lists(
    st.tuples(st.integers(1, 40), st.floats(0.0, 20.0, allow_nan=False)), min_size=1, max_size=8
)


@settings(max_examples=25, deadline=None)
@given(
    segs=segments,
    seed=st.integers(0, 2**16),
    cold=st.booleans(),
    instance=st.sampled_from(["g5.xlarge", "g5.12xlarge"]),
)
def test_engine_invariants(
    segs: list[tuple[int, float]], seed: int, cold: bool, instance: str
) -> None:
    p = params(
        instance=instance, min_instances=0 if cold else 1, max_instances=6, max_tasks=6
    ).with_(poisson_arrivals=True, boot_jitter_fraction=0.2)  # fmt: skip
    rates = np.concatenate([np.full(n * 6, r) for n, r in segs])  # n minutes each
    res = simulate(p, rates, step_s=STEP, seed=seed, start="cold" if cold else "warm")
    tl, s = res.timeline, res.summary
    for i in range(len(tl["t_s"])):
        assert p.min_tasks <= tl["desired_tasks"][i] <= p.max_tasks
        assert tl["ready_tasks"][i] <= tl["running_tasks"][i] <= tl["desired_tasks"][i]
        assert tl["registered_instances"][i] <= tl["instances"][i] <= p.max_instances
        # Whole-GPU placement: tasks never exceed what registered instances hold.
        assert tl["running_tasks"][i] <= tl["registered_instances"][i] * p.tasks_per_instance
        assert tl["ready_capacity_rps"][i] == tl["ready_tasks"][i] * p.task_capacity_rps
        g = tl["gpu_metric"][i]
        assert math.isnan(g) or 0.0 <= g <= 100.0
    served, unserved = s["served_requests"], s["unserved_requests"]
    assert served + unserved <= s["offered_requests"] + 1e-6
    assert s["overload_seconds"] <= s["duration_s"]
    assert s["gpu_hours"] >= 0 and s["oracle_gpu_hours"] > 0
    # Never below the floor (min_instances, the ODCR), billed per instance.
    assert min(tl["instances"]) >= p.floor_instances
    assert s["gpu_hours"] == pytest.approx(
        s["instance_hours"] * p.gpus_per_instance, rel=1e-3, abs=1e-3
    )
    assert s["cost_usd"] == pytest.approx(s["instance_hours"] * p.price_usd_per_hour, abs=0.01)
    # Overload episodes are disjoint stretches of overloaded time.
    assert sum(s["scale_out_latency_s"]) + (s["overloaded_at_end_s"] or 0.0) == pytest.approx(
        s["overload_seconds"]
    )
    # Same seed, same result.
    again = simulate(p, rates, step_s=STEP, seed=seed, start="cold" if cold else "warm")
    assert again.summary == s
