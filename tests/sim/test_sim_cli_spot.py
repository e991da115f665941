"""plan, compare and simulate with [capacity.spot]: the On-Demand twin, interruption overload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simhelp import CONCURRENCY, METRICS, spec_text

from ecs_gpu.cli import main

SPOT = '[capacity.spot]\ninstance_types = ["g5.xlarge"]'


def _write(tmp_path: Path, name: str, capacity: str = SPOT, simulation: str = "") -> Path:
    p = tmp_path / name
    text = spec_text(
        min_instances=0,
        max_instances=8,
        max_tasks=8,
        service=METRICS,
        scaling=CONCURRENCY,
        capacity=capacity,
        simulation=simulation,
    )
    p.write_text(text, encoding="utf-8")
    return p


def test_compare_shows_each_spot_design_beside_its_on_demand_twin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spot = _write(tmp_path, "spot.toml", simulation="spot_interruptions_per_instance_hour = 0.05")
    od = _write(tmp_path, "od.toml", capacity="")
    out = tmp_path / "cmp.json"
    code = main(["compare", str(od), str(spot), "--trace", "azure2024-conv", "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "spot.toml concurrency 11.2/task, all On-Demand" in text
    assert "the row after each is the same design all On-Demand" in " ".join(text.split())
    rows = json.loads(out.read_text())
    s, twin, plain = (
        rows["spot.toml concurrency 11.2/task"],
        rows["spot.toml concurrency 11.2/task, all On-Demand"],
        rows["od.toml concurrency 11.2/task"],
    )
    # The twin is the On-Demand spec's run: same seed, same boots and arrivals.
    assert twin["cost_usd"] == plain["cost_usd"]
    assert twin["overload_seconds"] == plain["overload_seconds"]
    assert s["on_demand_cost_usd"] == plain["cost_usd"] > s["cost_usd"]
    assert s["interruption_overload_seconds"] == s["overload_seconds"] - plain["overload_seconds"]
    assert s["spot_interruptions"] > 0


def test_plan_reports_the_saving_and_the_interruption_overload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _write(tmp_path, "spot.toml")
    js = tmp_path / "plan.json"
    code = main(["plan", str(spec), "--json", str(js), "--days", "1", "-o", str(tmp_path)])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "no findings" in text
    for line in ("Spot instance-hours", "vs all On-Demand", "interruption overload s"):
        assert line in text, line
    s = json.loads(js.read_text())
    assert s["on_demand"]["cost_usd"] == s["on_demand_cost_usd"] > s["cost_usd"]
    saving = 100 * (s["on_demand_cost_usd"] - s["cost_usd"]) / s["on_demand_cost_usd"]
    assert s["spot_saving_percent"] == pytest.approx(saving, abs=0.05)
    assert f"{s['spot_saving_percent']:.0f} % less" in text


def test_simulate_refuses_spot_it_cannot_price(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _write(tmp_path, "g6e.toml", capacity='[capacity.spot]\ninstance_types = ["g6e.xlarge"]')
    assert main(["simulate", str(spec), "--trace", "azure2023-conv"]) == 2
    err = capsys.readouterr().err
    assert "g6e.xlarge" in err and "spot_discount_percent" in err and "Fix:" in err
