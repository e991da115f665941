"""The fast path's numbers (fast_path.py): alarm timing, threshold, step table, sizing.

CDK-free: the template tests (tests/infra/test_scaling_steps.py) check
that the synthesized alarm and step policy carry exactly these numbers.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecs_gpu.design import managed_scaling
from ecs_gpu.design.paths import fast_path
from ecs_gpu.spec import Spec, parse_spec
from ecs_gpu.spec.sections.scaling import ScalingSpec

# A GPU-signal g5 spec, written here: the example may carry [service.metrics].
G5 = """
[service]
name = "vllm-g5"
image = "vllm/vllm-openai:v0.11.0"
gpus_per_task = 1
container_port = 8000

[capacity]
instance_type = "g5.xlarge"
min_instances = 1
max_instances = 4

[scaling]
min_tasks = 1
max_tasks = 4
gpu_target_percent = 70
cpu_target_percent = 70
"""


def concurrency_spec(target: float = 16, panic: float = 200.0, extra: str = "") -> Spec:
    text = G5.replace(
        "[scaling]\n",
        "[scaling]\n"
        'signal = "concurrency"\n'
        f"target_concurrency_per_task = {target}\n"
        f"panic_threshold_percent = {panic}\n" + extra,
    )
    return parse_spec(text + '\n[service.metrics]\npreset = "vllm"\n', "conc.toml")


def test_alarm_catches_a_step_within_30_seconds() -> None:
    # CloudWatch alarm periods: 10, 20, 30 or a multiple of 60 (PutMetricAlarm.Period).
    assert fast_path.ALARM_PERIOD_S in (10, 20, 30) or fast_path.ALARM_PERIOD_S % 60 == 0
    # Up to one period for the step to reach a published sample, then M breaching periods.
    detection = (fast_path.DATAPOINTS_TO_ALARM + 1) * fast_path.ALARM_PERIOD_S
    # 10-s periods, 2 datapoints: 30 s, the goal (a concrete value, not the formula).
    assert detection == 30
    assert fast_path.MAX_DETECTION_S == detection
    assert 1 <= fast_path.DATAPOINTS_TO_ALARM <= fast_path.EVALUATION_PERIODS
    # More than one datapoint: a single noisy window does not launch instances.
    assert fast_path.DATAPOINTS_TO_ALARM >= 2


def test_off_unless_enabled() -> None:
    assert fast_path.fast_path(parse_spec(G5, "g5.toml")) is None
    assert fast_path.fast_path(concurrency_spec(extra="fast_scale_out = false\n")) is None
    assert fast_path.fast_path(concurrency_spec()) is not None


@pytest.mark.parametrize(
    ("target", "panic", "threshold", "percents"),
    [
        # 2x the target needs 2x the tasks: +100 %; 3x: +200 %; 4x: +300 %.
        (16, 200.0, 32.0, (100, 120, 150, 200, 250, 300, 400, 500, 700)),
        (8, 150.0, 12.0, (50, 65, 87, 125, 162, 200, 275, 350, 500)),
        # The lowest panic threshold the spec allows (the default) still adds
        # at least 10 %.
        (10, 110.0, 11.0, (10, 21, 37, 65, 92, 120, 175, 230, 340)),
    ],
)
def test_threshold_and_step_table(
    target: float, panic: float, threshold: float, percents: tuple[int, ...]
) -> None:
    fp = fast_path.fast_path(concurrency_spec(target, panic))
    assert fp is not None
    assert fp.target == target
    assert fp.threshold == pytest.approx(threshold)
    assert tuple(s.percent for s in fp.steps) == percents
    # Steps measured from the threshold: 0-10 %, 10-25 %, ..., 300 % and more over it.
    starts = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
    assert fast_path.STEP_STARTS == starts
    assert [(s.lower, s.upper) for s in fp.steps] == [
        (pytest.approx(threshold * a), None if b is None else pytest.approx(threshold * b))
        for a, b in zip(starts, (*starts[1:], None), strict=True)
    ]


def test_default_threshold_is_110_percent_and_tracking_is_capped_at_the_target() -> None:
    assert ScalingSpec.model_fields["panic_threshold_percent"].default == 110
    spec = concurrency_spec(10, 110.0)
    fp = fast_path.fast_path(spec)
    assert fp is not None
    assert fp.threshold == pytest.approx(11.0)
    # The fast path does every scale-out: target tracking reads at most the target.
    assert fast_path.tracking_cap(spec) == 10
    off = concurrency_spec(10, 110.0, extra="fast_scale_out = false\n")
    assert fast_path.tracking_cap(off) is None


@given(
    target=st.floats(min_value=0.5, max_value=10_000, allow_nan=False),
    panic=st.floats(min_value=110, max_value=1000, allow_nan=False),
)
def test_steps_cover_every_excess_and_never_add_more_than_their_edge_needs(
    target: float, panic: float
) -> None:
    fp = fast_path.fast_path(concurrency_spec(target, panic))
    assert fp is not None
    # Contiguous from the threshold up, the last one open-ended: every
    # breaching value picks exactly one step.
    assert fp.steps[0].lower == 0
    assert fp.steps[-1].upper is None
    for a, b in zip(fp.steps, fp.steps[1:], strict=False):
        assert a.upper == b.lower
        assert a.percent < b.percent
    for s in fp.steps:
        needed = (fp.threshold + s.lower) / target * 100 - 100
        assert s.percent <= max(1, math.ceil(needed))
        assert s.percent > needed - 1


def test_step_for_picks_the_band_of_the_excess() -> None:
    fp = fast_path.fast_path(concurrency_spec(16, 200.0))
    assert fp is not None
    assert fp.step_for(31.9) is None
    assert fp.step_for(float("nan")) is None
    assert fp.step_for(32.0) is fp.steps[0]  # the lower bound is inclusive
    assert fp.step_for(35.1) is fp.steps[0]
    assert fp.step_for(35.2) is fp.steps[1]  # 10 % over the threshold
    assert fp.step_for(48.0) is fp.steps[3]  # 50 % over
    assert fp.step_for(64.0) is fp.steps[5]  # 100 % over
    assert fp.step_for(1e9) is fp.steps[-1]


@pytest.mark.parametrize(
    ("concurrency", "tasks", "added"),
    [
        (20.0, 4, 0),  # below the threshold: the fast path stays quiet
        (32.0, 1, 1),  # +100 % of one task
        (32.0, 4, 4),  # +100 %
        (40.0, 4, 6),  # 25 % over the threshold: +150 %
        (50.0, 4, 8),  # 56 % over: +200 %
        (70.0, 3, 9),  # 119 % over: +300 %
        (130.0, 2, 14),  # 306 % over: +700 %
    ],
)
def test_tasks_to_add(concurrency: float, tasks: int, added: int) -> None:
    fp = fast_path.fast_path(concurrency_spec(16, 200.0))
    assert fp is not None
    assert fp.tasks_to_add(concurrency, tasks) == added


def test_a_small_percentage_still_adds_one_task() -> None:
    fp = fast_path.fast_path(concurrency_spec(10, 110.0))
    assert fp is not None
    # 10 % of 3 tasks is 0.3: MinAdjustmentMagnitude makes it one task.
    assert fp.tasks_to_add(11.0, 3) == fast_path.MIN_ADJUSTMENT_MAGNITUDE == 1
    # 10 % of 25 tasks is 2.5, rounded down.
    assert fp.tasks_to_add(11.0, 25) == 2


def test_cooldown_is_a_new_instances_time_to_serve() -> None:
    spec = concurrency_spec()
    fp = fast_path.fast_path(spec)
    assert fp is not None
    # Managed scaling's launch datapoint (60 s), then the cold warm-up (480 s).
    assert fp.cooldown_s == managed_scaling.instance_warmup_s(spec) + 60 == 540
    sim = spec.simulation
    assert fp.cooldown_s >= 60 + sim.instance_boot_s + sim.image_pull_s + sim.model_load_s


def _with_pool(pool: str) -> Spec:
    return parse_spec(
        G5.replace("[scaling]\n", f"[capacity.warm_pool]\n{pool}\n\n[scaling]\n").replace(
            "[scaling]\n",
            '[scaling]\nsignal = "concurrency"\ntarget_concurrency_per_task = 16\n',
            1,
        )
        + '\n[service.metrics]\npreset = "vllm"\n',
        "pool.toml",
    )


def test_with_a_warm_pool_the_cooldown_is_a_pooled_instances_time_to_serve() -> None:
    # A pool that covers every scale-out (max_prepared = max_instances, 4); the
    # default pool (min_size instances) does not, and keeps the cold cooldown.
    pooled = _with_pool("min_size = 1\nmax_prepared = 4")
    fp = fast_path.fast_path(pooled)
    assert fp is not None
    sim = pooled.simulation
    # The launch datapoint (60 s), warm start (60 s) + model load (60 s): no boot, no pull.
    assert fp.cooldown_s == managed_scaling.instance_warmup_s(pooled) + 60 == 180
    assert fp.cooldown_s >= 60 + sim.warm_start_s + sim.model_load_s
    assert fp.cooldown_s < sim.instance_boot_s + sim.image_pull_s + sim.model_load_s


def test_needs_a_target() -> None:
    spec = concurrency_spec()
    no_target = spec.model_copy(
        update={"scaling": spec.scaling.model_copy(update={"target_concurrency_per_task": None})}
    )
    with pytest.raises(ValueError, match="target_concurrency_per_task"):
        fast_path.fast_path(no_target)


def _alarm_fires_at(step_at: float, phase: float, before: float, after: float, thr: float) -> float:
    """When a CloudWatch alarm like the fast path's goes to ALARM after a load step.

    Each task publishes its concurrency every publish interval, at ``phase``
    within it; a sample counts in the period it falls in, and the alarm
    evaluates each period when it closes, going to ALARM when the last
    ``DATAPOINTS_TO_ALARM`` of ``EVALUATION_PERIODS`` periods breached.
    """
    from ecs_gpu.contracts import demand_metric

    period = fast_path.ALARM_PERIOD_S
    interval = demand_metric.PUBLISH_INTERVAL_S
    breaching: list[bool] = []
    t_end = period
    while t_end < step_at + 10 * period:
        samples = []
        t = phase
        while t < t_end:
            if t >= t_end - period:
                samples.append(after if t >= step_at else before)
            t += interval
        value = sum(samples) / len(samples) if samples else None
        breaching.append(value is not None and value >= thr)
        window = breaching[-fast_path.EVALUATION_PERIODS :]
        if sum(window) >= fast_path.DATAPOINTS_TO_ALARM:
            return t_end
        t_end += period
    raise AssertionError("never fired")


@pytest.mark.parametrize("phase", [0.0, 0.1, 3.0, 5.0, 9.9])
@pytest.mark.parametrize("step_at", [600.0, 600.5, 605.0, 609.99])
def test_a_load_step_is_acted_on_within_30_seconds(phase: float, step_at: float) -> None:
    fp = fast_path.fast_path(concurrency_spec(16, 200.0))
    assert fp is not None
    fired = _alarm_fires_at(step_at, phase, before=10.0, after=3 * fp.threshold, thr=fp.threshold)
    assert 0 < fired - step_at <= fast_path.MAX_DETECTION_S <= 30


def test_load_below_the_threshold_never_fires() -> None:
    fp = fast_path.fast_path(concurrency_spec(16, 200.0))
    assert fp is not None
    with pytest.raises(AssertionError, match="never fired"):
        _alarm_fires_at(600.0, 1.0, before=10.0, after=fp.threshold * 0.99, thr=fp.threshold)


def test_the_default_pool_does_not_cover_scale_out_so_the_cooldown_stays_cold() -> None:
    # max_prepared unset: the pool holds min_size (1) instances, not every one
    # the group can add (managed_scaling.pool_covers_scale_out).
    fp = fast_path.fast_path(_with_pool("min_size = 1"))
    assert fp is not None
    cold = fast_path.fast_path(
        parse_spec(
            G5.replace(
                "[scaling]\n",
                '[scaling]\nsignal = "concurrency"\ntarget_concurrency_per_task = 16\n',
                1,
            )
            + '\n[service.metrics]\npreset = "vllm"\n',
            "cold.toml",
        )
    )
    assert cold is not None and fp.cooldown_s == cold.cooldown_s == 540
