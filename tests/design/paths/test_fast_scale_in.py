"""The fast scale-in's numbers (fast_scale_in.py): alarm timing, threshold, step table, sizing.

CDK-free: the template tests (tests/infra/test_scaling_steps.py) check
that the synthesized alarm and step policy carry exactly these numbers, and
the simulator's (tests/sim/test_sim_scale_in.py) that it runs them.
"""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from ecs_gpu.contracts import demand_metric
from ecs_gpu.design.paths import fast_path, fast_scale_in
from ecs_gpu.spec import parse_spec

from .test_fast_path import G5, concurrency_spec

ON = "fast_scale_in = true\n"


def test_alarm_waits_two_minutes_of_10_second_datapoints() -> None:
    assert fast_scale_in.ALARM_PERIOD_S == demand_metric.ALARM_PERIOD_S == 10
    assert fast_scale_in.EVALUATION_PERIODS == fast_scale_in.DATAPOINTS_TO_ALARM == 12
    # Two minutes low, against target tracking's 15 one-minute datapoints.
    assert fast_scale_in.ALARM_PERIOD_S * fast_scale_in.DATAPOINTS_TO_ALARM == 120
    assert fast_scale_in.COMPARISON == "LessThanThreshold"
    # One invocation a minute while in ALARM: the cooldown lets the next one through.
    assert fast_scale_in.COOLDOWN_S == 60


def test_threshold_is_the_target_on_one_task_fewer() -> None:
    fsi = fast_scale_in.fast_scale_in(concurrency_spec(target=16, extra=ON))
    assert fsi is not None
    assert fsi.threshold == fsi.target == 16
    assert fast_scale_in.expression(16) == "IF(n > 1, s / (n - 1), 16)"
    assert fast_scale_in.expression(16, 60) == "IF(n > 6, s / (n - 6), 16)"
    # The fast path fires on the plain per-task value at >= 110 % of the target:
    # the two alarms never hold together (one task fewer reads higher, not lower).
    fp = fast_path.fast_path(concurrency_spec(target=16, panic=110))
    assert fp is not None and fp.threshold > fsi.threshold


def test_step_table() -> None:
    fsi = fast_scale_in.fast_scale_in(concurrency_spec(target=10, extra=ON))
    assert fsi is not None
    assert [(s.lower, s.upper, s.percent) for s in fsi.steps] == [
        (-1.0, 0.0, 1),
        (-2.5, -1.0, 10),
        (None, -2.5, 25),
    ]
    assert fsi.step_for(10.0) is None and fsi.step_for(11.0) is None
    assert fsi.step_for(9.5) == fsi.steps[0]
    # Below the threshold AWS includes a band's upper bound, not its lower one
    # (StepAdjustment: "greater than 40 and less than or equal to 50").
    assert fsi.step_for(9.0) == fsi.steps[1]
    assert fsi.step_for(9.01) == fsi.steps[0]
    assert fsi.step_for(8.9) == fsi.steps[1]
    assert fsi.step_for(7.5) == fsi.steps[2]
    assert fsi.step_for(7.51) == fsi.steps[1]
    assert fsi.step_for(7.4) == fsi.steps[2]
    assert fsi.step_for(0.0) == fsi.steps[2]
    # Removes: one task just under the target, 10 %, then at most 25 %.
    assert fsi.tasks_to_remove(9.5, 40) == 1
    assert fsi.tasks_to_remove(8.9, 40) == 4
    assert fsi.tasks_to_remove(2.0, 40) == 10
    assert fsi.tasks_to_remove(2.0, 3) == 1  # 25 % of 3 rounds to 0: the minimum of one
    assert fsi.tasks_to_remove(0.0, 1) == 0  # never the last task


def test_a_smaller_step_cap_caps_only_the_bands_above_it() -> None:
    # benchmarks/stress.py --scale-in-frontier's "steps of at most 10 %".
    assert [s.percent for s in fast_scale_in.steps(10.0, max_percent=10)] == [1, 10, 10]
    assert fast_scale_in.steps(10.0) == fast_scale_in.steps(10.0, fast_scale_in.MAX_STEP_PERCENT)


@given(
    target=st.floats(0.5, 1000),
    tasks=st.integers(2, 199),
    share=st.floats(0.0, 0.9999),
)
def test_a_step_never_leaves_fewer_tasks_than_the_load_needs(
    target: float, tasks: int, share: float
) -> None:
    """At alarm value v (per-task load on one task fewer) the load needs v x (n - 1) / target."""
    text = G5.replace(
        "[scaling]\n",
        f'[scaling]\nsignal = "concurrency"\ntarget_concurrency_per_task = {target}\n' + ON,
    )
    spec = parse_spec(text + '\n[service.metrics]\npreset = "vllm"\n', "c.toml")
    fsi = fast_scale_in.fast_scale_in(spec)
    assert fsi is not None
    value = share * fsi.threshold
    need = math.ceil(value * (tasks - 1) / fsi.target - 1e-9)
    left = tasks - fsi.tasks_to_remove(value, tasks)
    assert left >= need
    assert tasks - left <= max(1, math.ceil(tasks * fast_scale_in.MAX_STEP_PERCENT / 100))


def test_off_with_the_switch_and_on_gpu_signals() -> None:
    assert fast_scale_in.fast_scale_in(concurrency_spec(extra="fast_scale_in = false\n")) is None
    assert fast_scale_in.fast_scale_in(concurrency_spec()) is None  # off by default
    assert fast_scale_in.fast_scale_in(parse_spec(G5, "g.toml")) is None
