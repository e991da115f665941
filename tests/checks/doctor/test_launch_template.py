"""Link checks of checks/doctor/launch_template.py (the breakage of each check is in
tests/support/doctor_cases.py)."""

from __future__ import annotations

from collections.abc import Callable

from ecs_gpu.checks.doctor import run_checks
from support.doctor_cases import CR_ID, Snap, lt_targets_reservation
from support.snapshots import NAMES, validate_snapshot


def _group_targets_reservation(s: Snap, preference: str) -> None:
    s["auto_scaling_groups"][0]["CapacityReservationSpecification"] = {
        "CapacityReservationPreference": preference,
        "CapacityReservationTarget": {"CapacityReservationIds": [CR_ID]},
    }


def test_reservation_targeted_by_the_group_first_is_healthy(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    _group_targets_reservation(s, "capacity-reservations-first")
    validate_snapshot(s)
    assert not [f for f in run_checks(s).findings if f.id == "LT002"]
    # The group's preference wins over a leftover launch-template target.
    lt_targets_reservation(s)
    assert not [f for f in run_checks(s).findings if f.id == "LT002"]


def test_reservation_only_group_cannot_grow(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    _group_targets_reservation(s, "capacity-reservations-only")
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "LT002"]
    assert f.evidence[0].value == "capacity-reservations-only"
    assert NAMES.asg in f.fix and "capacity-reservations-first" in f.fix


def test_a_deleted_launch_template_is_an_lt001_error(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["launch_template_versions"] = []
    f = next(f for f in run_checks(s).findings if f.id == "LT001")
    assert f.severity == "error" and f.title == "The group's launch template does not exist"
    assert f.evidence[0].value == "lt-0a1b2c3d4e5f67890"
    # Deleted by hand: the unchanged stack's redeploy does nothing, a drift-aware change set.
    assert "--deployment-mode REVERT_DRIFT;" in f.fix and "ecs-gpu deploy" not in f.fix
    assert f"aws cloudformation describe-change-set --stack-name {NAMES.stack}" in f.fix
    # A new template id for the group is its instance refresh: say so before it runs.
    assert "FLEET REFRESH" in f.fix and "replaces every GPU instance" in f.fix
