"""Link checks of checks/doctor/placement.py (the breakage of each check is in
tests/support/doctor_cases.py)."""

from __future__ import annotations

from collections.abc import Callable

from ecs_gpu.checks.doctor import run_checks
from support.doctor_cases import Snap
from support.snapshots import validate_snapshot


def test_constraint_on_wrong_but_real_type(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["services"][0]["placementConstraints"][0]["expression"] = (
        "attribute:ecs.instance-type == g6.xlarge"
    )
    f = [f for f in run_checks(s).findings if f.id == "PLC001"]
    assert len(f) == 1 and "g5.xlarge" in f[0].fix


def test_task_definition_constraint_is_indexed_in_its_own_list(
    healthy: Callable[[], Snap],
) -> None:
    # The service keeps its valid constraint; the task definition's first one is wrong.
    s = healthy()
    s["task_definitions"][0]["placementConstraints"] = [
        {"type": "memberOf", "expression": "attribute:ecs.instance-type == g5.xlarg"}
    ]
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "PLC001"][:1]
    ev = f.evidence[0]
    assert (ev.kind, ev.field) == ("task_definitions", "placementConstraints[0].expression")
    assert "g5.xlarg" in str(ev.value)
