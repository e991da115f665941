"""The stress shapes (research/stress.py): exact, deterministic, and refused when ill-formed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from research import stress

from ecs_gpu.errors import BadInputError


def test_flash_crowd_holds_four_times_the_base_for_forty_minutes() -> None:
    r = stress.shape_rates("flash-crowd", 60.0, base_rps=2.0)
    # 30 min base, 2 min rise, 40 min at x4, 2 min fall, 46 min base: 2 hours.
    assert len(r) == 120
    assert np.all(r[:30] == 2.0)
    # The rise's two minutes are the means of a straight line from 2 to 8.
    assert r[30:32].tolist() == pytest.approx([3.5, 6.5])
    assert np.all(r[32:72] == 8.0)
    assert r[72:74].tolist() == pytest.approx([6.5, 3.5])
    assert np.all(r[74:] == 2.0)


def test_periodic_bursts_are_ten_minutes_of_three_times_every_hour() -> None:
    r = stress.shape_rates("periodic-bursts", 10.0)
    assert len(r) == 24 * 360
    hour = r[:360]
    assert np.all(hour[180:240] == 3.0)
    assert np.all(hour[:180] == 1.0) and np.all(hour[240:] == 1.0)
    # Every hour the same, and the mean is exact: (50 x 1 + 10 x 3) / 60.
    assert np.array_equal(r.reshape(24, 360), np.tile(hour, (24, 1)))
    assert float(r.mean()) == pytest.approx(80 / 60)


def test_plateau_drop_falls_to_the_base_within_a_minute() -> None:
    r = stress.shape_rates("plateau-drop", 30.0)
    assert len(r) == (10800 + 60 + 3600) // 30
    assert np.all(r[:360] == 3.0)
    # The minute's fall from 3 to 1, in two 30-s steps: means 2.5 and 1.5.
    assert r[360:362].tolist() == pytest.approx([2.5, 1.5])
    assert np.all(r[362:] == 1.0)


def test_a_step_straddling_a_knot_gets_the_exact_mean() -> None:
    knots = ((0.0, 0.0), (15.0, 0.0), (15.0, 4.0), (40.0, 4.0))
    # 0-20 s: 5 s at 4 of 20; 20-40 s: all at 4.
    assert stress.rates(knots, 20.0).tolist() == [1.0, 4.0]


def test_the_same_parameters_give_the_same_array() -> None:
    a = stress.rates(stress.flash_crowd(factor=3.0, hold_s=600.0), 10.0)
    b = stress.rates(stress.flash_crowd(factor=3.0, hold_s=600.0), 10.0)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, stress.rates(stress.flash_crowd(), 10.0)[: len(a)])


@pytest.mark.parametrize(
    ("make", "kw", "words"),
    [
        (stress.flash_crowd, {"factor": 0.5}, "factor = 0.5"),
        (stress.flash_crowd, {"factor": float("nan")}, "factor = nan"),
        (stress.flash_crowd, {"base_rps": 0.0}, "base_rps = 0.0"),
        (stress.flash_crowd, {"hold_s": -1.0}, "hold_s = -1.0"),
        (stress.flash_crowd, {"rise_s": float("inf")}, "rise_s = inf"),
        (stress.periodic_bursts, {"burst_s": 0.0}, "burst_s = 0.0"),
        (stress.periodic_bursts, {"offset_s": 3100.0}, "must end within its period"),
        (stress.periodic_bursts, {"periods": 0}, "periods = 0"),
        (stress.plateau_drop, {"after_s": 0.0}, "after_s = 0.0"),
    ],
)
def test_bad_parameters_are_refused_by_name(make: object, kw: dict[str, float], words: str) -> None:
    with pytest.raises(BadInputError, match="Fix:") as e:
        make(**kw)  # type: ignore[operator]
    assert words in str(e.value)


@pytest.mark.parametrize(
    ("knots", "step", "words"),
    [
        (((0.0, 1.0), (5.0, 1.0)), 10.0, "less than one step"),
        (((0.0, 1.0),), 10.0, "at least two knots"),
        (((1.0, 1.0), (20.0, 1.0)), 10.0, "start at 0"),
        (((0.0, 1.0), (20.0, 1.0), (10.0, 1.0)), 10.0, "never decrease"),
        (((0.0, -1.0), (20.0, 1.0)), 10.0, "at least 0"),
        (((0.0, 1.0), (20.0, 1.0)), 0.0, "step_s = 0.0"),
    ],
)
def test_bad_knots_and_steps_are_refused(
    knots: tuple[tuple[float, float], ...], step: float, words: str
) -> None:
    with pytest.raises(BadInputError, match=words):
        stress.rates(knots, step)


def test_an_unknown_shape_names_the_known_ones() -> None:
    with pytest.raises(
        BadInputError, match="flash-crowd, night-at-zero, periodic-bursts, plateau-drop"
    ):
        stress.shape_rates("flash", 10.0)


@settings(max_examples=50, deadline=None)
@given(
    factor=st.floats(1.0, 10.0),
    rise=st.integers(0, 600),
    hold=st.integers(1, 3600),
    step=st.sampled_from([1.0, 5.0, 10.0, 30.0, 60.0]),
)
def test_the_steps_carry_the_curves_area(factor: float, rise: int, hold: int, step: float) -> None:
    knots = stress.flash_crowd(factor=factor, rise_s=rise, hold_s=hold, fall_s=rise)
    r = stress.rates(knots, step)
    # The curve's exact area: base before and after, the peak held, each ramp
    # a trapezoid; less the base over a last partial step, which is dropped.
    total = 1800 + 2 * rise + hold + 2760
    area = 1.0 * (1800 + 2760) + factor * hold + (1.0 + factor) / 2 * (2 * rise)
    area -= 1.0 * (total - len(r) * step)
    assert float(r.sum() * step) == pytest.approx(area, rel=1e-9)
    # Within float error of [base, peak]: a step's mean over a ramp is a
    # difference of cumulative areas, whose rounding grows with the peak
    # (hypothesis found 1e-12 outside at peaks of 2 and 8).
    tol = 1e-9 * factor
    assert r.min() >= 1.0 - tol and r.max() <= factor + tol


def test_night_at_zero_is_twelve_idle_hours_a_day() -> None:
    r = stress.shape_rates("night-at-zero", 60.0, base_rps=2.0)
    assert len(r) == 2 * 24 * 60
    for day in (r[:1440], r[1440:]):
        idle = day == 0.0
        assert int(idle.sum()) == 12 * 60  # 00:00-08:00 and 20:00-24:00
        assert idle[: 8 * 60].all() and idle[20 * 60 :].all()
        assert (day[8 * 60 + 30 : 19 * 60 + 30] == 2.0).all()


def test_night_at_zero_refuses_a_day_that_does_not_fit() -> None:
    with pytest.raises(BadInputError, match="the day must fit both ramps"):
        stress.night_at_zero(day_start_s=70000.0, day_end_s=72000.0)
    with pytest.raises(BadInputError, match="days = 0"):
        stress.night_at_zero(days=0)
