"""ecs_gpu.design.spot: the strategy, its split of tasks, the interruption bands, the Spot price."""

from __future__ import annotations

import math

import pytest

from ecs_gpu import catalog
from ecs_gpu.design import spot
from ecs_gpu.spec import Spec, parse_spec

BASE = """
[service]
name = "spot-test"
image = "nginx"
cpu_units = 3072
memory_mib = 12288

[service.metrics]
preset = "vllm"

[capacity]
instance_type = "g5.xlarge"
max_instances = 4

[capacity.spot]
instance_types = {types}
{spot}

[scaling]
max_tasks = 4
target_concurrency_per_task = 11

[simulation]
{simulation}
"""


def _spec(types: str = '["g5.xlarge"]', spot_keys: str = "", simulation: str = "") -> Spec:
    return parse_spec(BASE.format(types=types, spot=spot_keys, simulation=simulation), "t.toml")


@pytest.mark.parametrize(
    ("tasks", "base", "pct", "want"),
    [
        (0, 1, 70, (0, 0)),
        (1, 1, 70, (1, 0)),
        # Above the base of 1: 9 tasks, 70 % of them (6.3) on Spot, rounded.
        (10, 1, 70, (4, 6)),
        # Half a task goes to Spot: 1 task above the base at 50 %.
        (2, 1, 50, (1, 1)),
        (4, 0, 100, (0, 4)),
        (3, 5, 70, (3, 0)),
    ],
)
def test_split_gives_the_base_first_then_the_weights(
    tasks: int, base: int, pct: int, want: tuple[int, int]
) -> None:
    assert spot.split(tasks, base, pct) == want
    assert sum(want) == tasks


def test_band_rates_reclaim_the_bands_share_in_a_month() -> None:
    for band, share in spot.BAND_MONTHLY_SHARE.items():
        r = spot.band_rate_per_hour(band)
        assert 1 - math.exp(-r * spot.HOURS_PER_MONTH) == pytest.approx(share)
    rates = [spot.band_rate_per_hour(b) for b in spot.BAND_MONTHLY_SHARE]
    assert rates == sorted(rates)


def test_strategy_puts_the_base_on_on_demand_and_splits_the_weights() -> None:
    spec = _spec(spot_keys="on_demand_base = 2\nspot_percent = 80")
    assert spot.strategy(spec) == spot.Strategy(2, 20, 80)


def test_spot_price_uses_the_cited_discount_or_the_key() -> None:
    g5 = catalog.lookup("g5.xlarge").price_usd_per_hour
    cited = catalog.spot_discount("g5.xlarge")
    assert cited is not None and cited.date and cited.source
    assert spot.price_usd_per_hour(_spec()) == pytest.approx(g5 * (1 - cited.percent / 100))
    # g6e has no cited figure: no price until the key gives one ...
    both = '["g5.xlarge", "g6e.xlarge"]'
    assert spot.price_usd_per_hour(_spec(both)) is None
    assert spot.missing_discounts(_spec(both)) == ["g6e.xlarge"]
    # ... and then the dearest type's Spot price (g6e's On-Demand price is the higher).
    g6e = catalog.lookup("g6e.xlarge").price_usd_per_hour
    assert g6e > g5
    keyed = _spec(both, simulation="spot_discount_percent = 50")
    assert spot.price_usd_per_hour(keyed) == pytest.approx(g6e * 0.5)


def test_g6_has_its_own_dated_discount_and_its_spot_hour_is_dearer_than_g5s() -> None:
    g5, g6 = (catalog.lookup(t).price_usd_per_hour for t in ("g5.xlarge", "g6.xlarge"))
    cited = catalog.spot_discount("g6.xlarge")
    assert cited is not None and cited.percent == 25.0 and cited.date == "2026-07"
    assert "us-east-1" in cited.source
    # price-capacity-optimized may launch either: the dearer Spot hour, g6's at 25 % off
    # ($0.60) over g5's at 60 % ($0.40), bills both.
    both = _spec('["g5.xlarge", "g6.xlarge"]')
    assert spot.missing_discounts(both) == []
    assert spot.price_usd_per_hour(both) == pytest.approx(max(g5 * 0.4, g6 * 0.75))
    assert spot.price_usd_per_hour(both) == pytest.approx(g6 * 0.75)


def test_interruption_rate_is_the_key_else_the_band() -> None:
    assert spot.interruption_rate_per_hour(_spec()) == spot.band_rate_per_hour("<5%")
    banded = _spec(simulation='spot_interruption_band = "15-20%"')
    assert spot.interruption_rate_per_hour(banded) == spot.band_rate_per_hour("15-20%")
    keyed = _spec(simulation="spot_interruptions_per_instance_hour = 0.01")
    assert spot.interruption_rate_per_hour(keyed) == 0.01


@pytest.mark.parametrize(
    ("spot_keys", "min_instances", "empty"),
    [
        # The default base of 1 keeps a task, so an instance, On-Demand.
        ("", 0, False),
        # No base: one task goes to Spot (split(1, 0, 70) == (0, 1)), the group may be empty.
        ("on_demand_base = 0", 0, True),
        # A floor of one instance: never empty.
        ("on_demand_base = 0", 1, False),
        # No weight for Spot: every task runs On-Demand, so no task-free empty group.
        ("on_demand_base = 0\nspot_percent = 0", 0, False),
    ],
)
def test_the_on_demand_group_may_be_empty_only_without_base_and_floor(
    spot_keys: str, min_instances: int, empty: bool
) -> None:
    spec = _spec(spot_keys=spot_keys)
    cap = spec.capacity.model_copy(update={"min_instances": min_instances})
    spec = spec.model_copy(update={"capacity": cap})
    assert spot.on_demand_may_be_empty(spec) is empty
    assert spot.split(1, 0, 70) == (0, 1)


@pytest.mark.parametrize(
    ("base", "od", "sp", "has_task", "groups", "hostless"),
    [
        # Each group with a host must publish, On-Demand first, whatever the base.
        (0, 1, 2, True, ("od", "sp"), ()),
        (1, 1, 2, True, ("od", "sp"), ()),
        # No base: every task may run on Spot, an empty On-Demand group is by design.
        (0, 0, 2, True, ("sp",), ()),
        # A base while a task runs: the On-Demand group must run a host, even with the
        # Spot group carrying tasks, and its having none is the problem.
        (1, 0, 2, True, ("od", "sp"), ("od",)),
        (2, 0, 0, True, ("od",), ("od",)),
        # A base but no task: the group may scale to zero.
        (1, 0, 0, False, (), ()),
        (1, 0, 2, False, ("sp",), ()),
        # The Spot group at zero is never a problem here (the shortfall alarm's).
        (1, 3, 0, True, ("od",), ()),
        # Neither has a host and none must: nothing can publish yet.
        (0, 0, 0, True, (), ()),
    ],
)
def test_publishers_are_the_groups_with_hosts_and_the_base_group_while_a_task_runs(
    base: int, od: int, sp: int, has_task: bool, groups: tuple[str, ...], hostless: tuple[str, ...]
) -> None:
    pub = spot.publishers("od", "sp", base, {"od": od, "sp": sp}, has_task=has_task)
    assert pub == spot.Publishers(groups, hostless)


def test_at_spot_percent_0_every_task_needs_an_on_demand_host() -> None:
    # No base, but no weight for Spot either: the empty On-Demand group is hostless.
    pub = spot.publishers("od", "sp", 0, {"od": 0, "sp": 1}, spot_percent=0)
    assert pub == spot.Publishers(("od", "sp"), ("od",))
    # ... while the service wants a task: at zero the group may be empty.
    assert spot.publishers("od", "sp", 0, {"od": 0}, has_task=False, spot_percent=0) == (
        spot.Publishers(())
    )
    assert spot.on_demand_claim(0, 0) == "[capacity.spot] spot_percent = 0 puts every task on it"
    assert spot.on_demand_claim(2, 30) is not None and "on_demand_base = 2" in str(
        spot.on_demand_claim(2, 30)
    )
    assert spot.on_demand_claim(0, 30) is None


def test_without_spot_the_one_group_must_always_publish() -> None:
    # Its having no host is for the missing series' causes to say, not this rule.
    for counts in ({}, {"od": 0}, {"od": 2}):
        assert spot.publishers("od", None, None, counts) == spot.Publishers(("od",))
    # A group left out of the counts has no instance in service.
    assert spot.publishers("od", "sp", 1, {}) == spot.Publishers(("od",), ("od",))
