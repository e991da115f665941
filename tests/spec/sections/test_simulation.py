"""[simulation] (spec/sections/simulation.py): the workload's speeds, each bounded, and defaults."""

from __future__ import annotations

from typing import Any

import pytest

from ecs_gpu.spec import parse_spec
from ecs_gpu.spec.sections.simulation import MAX_SIM_SECONDS, SimulationSpec

from ..specdata import MINIMAL, PATH, one_problem, with_

SECONDS_KEYS = [
    "instance_boot_s",
    "image_pull_s",
    "model_load_s",
    "max_queue_s",
    "mean_request_s",
    "warm_start_s",
]


def test_a_spec_without_the_section_gets_every_default() -> None:
    sim = parse_spec(MINIMAL, PATH).simulation
    assert sim == SimulationSpec()
    assert (sim.task_capacity_rps, sim.mean_request_s) == (2.0, 8.0)
    assert (sim.instance_boot_s, sim.image_pull_s, sim.model_load_s) == (150.0, 240.0, 60.0)
    assert sim.host_cpu_policy_target_percent is None
    assert sim.spot_interruption_band == "<5%"


@pytest.mark.parametrize("key", SECONDS_KEYS)
def test_every_duration_is_at_most_a_day(key: str) -> None:
    assert MAX_SIM_SECONDS == 86400.0
    ok = parse_spec(with_("simulation", **{key: MAX_SIM_SECONDS}), PATH)
    assert getattr(ok.simulation, key) == MAX_SIM_SECONDS
    line = one_problem(with_("simulation", **{key: MAX_SIM_SECONDS + 0.5}), f"simulation.{key}")
    assert "less than or equal to 86400" in line and "Fix: lower it" in line


@pytest.mark.parametrize(
    ("key", "bad", "fix"),
    [
        ("task_capacity_rps", 0, "raise it"),
        ("task_capacity_rps", 2e6, "lower it"),
        ("mean_request_s", 0.001, "raise it"),
        ("cpu_idle_percent", 101.0, "lower it"),
        ("host_cpu_policy_target_percent", 0.5, "raise it"),
        ("spot_interruptions_per_instance_hour", 1.5, "lower it"),
        ("spot_discount_percent", 96.0, "lower it"),
    ],
)
def test_out_of_range_speeds_are_refused_with_the_way_back(key: str, bad: Any, fix: str) -> None:
    line = one_problem(with_("simulation", **{key: bad}), f"simulation.{key}", repr(bad))
    assert f"Fix: {fix}" in line


def test_the_spot_band_is_one_of_the_advisors_bands() -> None:
    for band in ("<5%", "5-10%", "10-15%", "15-20%", ">20%"):
        spec = parse_spec(with_("simulation", spot_interruption_band=band), PATH)
        assert spec.simulation.spot_interruption_band == band
    line = one_problem(
        with_("simulation", spot_interruption_band="25%"), "simulation.spot_interruption_band"
    )
    assert "'<5%', '5-10%', '10-15%', '15-20%' or '>20%'" in line
