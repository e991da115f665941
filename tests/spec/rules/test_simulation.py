"""[simulation] rules and notes (spec/rules/simulation.py): CPU model ends, unused Spot keys."""

from __future__ import annotations

import pytest

from ecs_gpu.spec import parse_spec

from ..specdata import CONC, PATH, edited, one_problem, with_


def test_cpu_idle_above_full_load_names_both_keys() -> None:
    line = one_problem(
        with_("simulation", cpu_idle_percent=60.0, cpu_percent_at_full_load=40.0),
        "simulation.cpu_idle_percent",
        "60.0",
    )
    assert "above simulation.cpu_percent_at_full_load (40)" in line
    assert "Fix: lower it to 40 or less, or raise cpu_percent_at_full_load" in line


def test_idle_above_the_default_full_load_says_it_is_the_default() -> None:
    line = one_problem(
        with_("simulation", cpu_idle_percent=50.0), "simulation.cpu_idle_percent", "50.0"
    )
    assert "above simulation.cpu_percent_at_full_load (40, the default)" in line


def test_full_load_below_the_default_idle_is_reported_on_the_key_written() -> None:
    line = one_problem(
        with_("simulation", cpu_percent_at_full_load=3.0),
        "simulation.cpu_percent_at_full_load",
        "3.0",
    )
    assert "below simulation.cpu_idle_percent (5, the default)" in line
    assert "Fix: raise it to 5 or more, or set cpu_idle_percent below it" in line


def test_cpu_idle_equal_to_full_load_is_accepted() -> None:
    spec = parse_spec(
        with_("simulation", cpu_idle_percent=40.0, cpu_percent_at_full_load=40.0), PATH
    )
    assert spec.simulation.cpu_idle_percent == spec.simulation.cpu_percent_at_full_load


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("spot_discount_percent", 60.0),
        ("spot_interruption_band", "<5%"),  # written, though it is the default
        ("spot_interruptions_per_instance_hour", 0.01),
    ],
)
def test_spot_simulation_keys_without_spot_are_noted_unused(key: str, value: object) -> None:
    spec = parse_spec(with_("simulation", **{key: value}), PATH)
    (line,) = spec.warnings(PATH)
    assert line.startswith(f"{PATH}: simulation.{key} = {value!r}: is not used")
    assert "Fix: remove it, or add a [capacity.spot] table" in line


def test_spot_simulation_keys_are_silent_with_spot_or_unwritten() -> None:
    assert parse_spec(with_("simulation"), PATH).warnings(PATH) == []
    with_spot = edited(
        CONC,
        capacity={"spot": {"instance_types": ["g5.xlarge"]}},
        simulation={"spot_discount_percent": 60.0, "spot_interruption_band": "5-10%"},
    )
    assert parse_spec(with_spot, PATH).warnings(PATH) == []
