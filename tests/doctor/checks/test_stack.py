"""Link checks of doctor/checks/stack.py (the breakage of each check is in cases.py)."""

from __future__ import annotations

from collections.abc import Callable

from ecs_gpu.doctor.checks import run_checks

from ..snapshots import (
    NAMES,
)
from .cases import Snap, delete_stuck


def test_scale_in_protection_alone_does_not_block_a_healthy_stack(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()  # instances are protected, the stack is CREATE_COMPLETE
    assert not [f for f in run_checks(s).findings if f.id == "STK001"]


def test_young_delete_is_a_warning(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    delete_stuck(s)
    s["stacks"][0]["DeletionTime"] = "2026-11-29T16:55:00+00:00"  # 5 min before collection
    f = next(f for f in run_checks(s).findings if f.id == "STK001")
    assert f.severity == "warning" and "waiting" in f.title


def test_no_stack_of_the_targets_name_is_an_stk001_warning(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["stacks"] = []
    f = next(f for f in run_checks(s).findings if f.id == "STK001")
    assert f.severity == "warning" and f.title == "The stack does not exist"
    assert NAMES.stack in f.fix and "--stack" in f.fix
