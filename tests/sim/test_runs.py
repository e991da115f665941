"""What the predict commands share: sweep targets, the rate scale, the On-Demand twin."""

from __future__ import annotations

import pytest
from simhelp import params

from ecs_gpu.errors import BadInputError
from ecs_gpu.sim import runs


def test_sweep_targets_are_distinct_percents() -> None:
    assert runs.parse_targets("50,60.5,70") == [50.0, 60.5, 70.0]
    for bad in ("50,x", "0,50", "50,101", "60,60"):
        with pytest.raises(BadInputError, match="--sweep-gpu-target"):
            runs.parse_targets(bad)
    runs.check_rate_scale(None)
    runs.check_rate_scale(2.5)
    with pytest.raises(BadInputError, match="--rate-scale"):
        runs.check_rate_scale(float("inf"))


def test_the_on_demand_twin_is_the_design_without_its_spot_share() -> None:
    p = params()
    assert runs.on_demand_twin(p) is None  # no [capacity.spot]
    spot = p.with_(spot={"percent": 50, "price_usd_per_hour": 0.4})
    twin = runs.on_demand_twin(spot)
    assert twin is not None and twin.spot.percent == 0
    assert twin == spot.with_(spot={"percent": 0})
    saved = runs.spot_versus_on_demand(
        {"cost_usd": 60.0, "overload_seconds": 130.0},
        {"cost_usd": 100.0, "overload_seconds": 100.0},
    )
    assert saved["spot_saving_percent"] == 40.0
    assert saved["interruption_overload_seconds"] == 30.0
