"""Link checks of checks/doctor/stack.py (the breakage of each check is in
tests/support/doctor_cases.py)."""

from __future__ import annotations

from collections.abc import Callable

from ecs_gpu.checks.doctor import run_checks
from support.doctor_cases import Snap, delete_stuck
from support.snapshots import NAMES, validate_snapshot


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


def _delete_failed(s: Snap, reason: str) -> None:
    st = s["stacks"][0]
    st.update(StackStatus="DELETE_FAILED", StackStatusReason=reason)
    st["DeletionTime"] = "2026-11-29T16:10:00+00:00"


def test_delete_failed_names_the_resource_and_how_to_retain_or_retry(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    _delete_failed(
        s,
        "The following resource(s) failed to delete: [GpuSecurityGroup1A2B, HostLogGroupCC3B]. ",
    )
    for g in s["auto_scaling_groups"]:
        for i in g.get("Instances", []):
            i["ProtectedFromScaleIn"] = False
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "STK001"]
    assert f.severity == "error" and f.title == "The stack's delete failed"
    assert ("stacks", NAMES.stack, "StackStatusReason") in [
        (e.kind, e.id, e.field) for e in f.evidence
    ]
    assert (
        f"aws cloudformation describe-stack-events --stack-name {NAMES.stack} --query "
        "\"StackEvents[?ResourceStatus=='DELETE_FAILED']"
    ) in f.fix
    assert (
        f"aws cloudformation delete-stack --stack-name {NAMES.stack} --retain-resources "
        "GpuSecurityGroup1A2B HostLogGroupCC3B"
    ) in f.fix
    assert "`ecs-gpu destroy`" in f.fix
    # A reason that names no resource: the command says where the id goes.
    _delete_failed(s, "Internal failure.")
    (f,) = [f for f in run_checks(s).findings if f.id == "STK001"]
    assert "--retain-resources LOGICAL_ID" in f.fix


def test_delete_failed_on_protected_instances_says_to_delete_again(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    _delete_failed(s, "The following resource(s) failed to delete: [GpuAsg1A2B]. ")
    (f,) = [f for f in run_checks(s).findings if f.id == "STK001"]
    assert f.title == "Stack delete is stuck on protected instances"
    assert "--no-protected-from-scale-in; then delete again" in f.fix
    assert f"aws cloudformation delete-stack --stack-name {NAMES.stack}" in f.fix
