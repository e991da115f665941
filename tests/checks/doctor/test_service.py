"""Link checks of checks/doctor/service.py (the breakage of each check is in
tests/support/doctor_cases.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ecs_gpu.checks.doctor import run_checks
from support.doctor_cases import Snap, _status, unable_to_place
from support.snapshots import NAMES, validate_snapshot


def test_placement_failure_before_steady_state_is_history(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    unable_to_place(s)
    s["services"][0]["events"][0]["createdAt"] = "2026-11-29T15:00:00+00:00"  # older than steady
    assert not [f for f in run_checks(s).findings if f.id == "SVC001"]


def test_an_event_without_a_timestamp_sorts_last_not_unknown(healthy: Callable[[], Snap]) -> None:
    # A hand-trimmed snapshot: one old event lost its createdAt. Mixing it
    # with parsed (aware) times must not turn the check into "unknown".
    s = healthy()
    unable_to_place(s)
    s["services"][0]["events"].append({"id": "old", "message": "(service x) started 1 tasks"})
    result = {r.check.id: r for r in run_checks(s).results}["SVC001"]
    assert result.status == "finding", result.reason


def test_no_service_is_an_error_and_the_checks_that_read_it_are_unknown(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    s["services"] = []
    validate_snapshot(s)
    report = run_checks(s)
    assert [f.id for f in report.findings] == ["SVC000"]
    assert report.has_error
    status = _status(s)
    for check_id in ("TD002", "PLC001", "SVC001", "ASG002"):
        assert status[check_id].status == "unknown", check_id
        assert "SVC000" in status[check_id].reason


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (lambda svc: svc.update(status="INACTIVE"), "it was deleted"),
        (lambda svc: svc.update(status="DRAINING"), "it is being deleted"),
        (lambda svc: svc.update(serviceName="other"), "only other services"),
    ],
    ids=["inactive", "draining", "another-service"],
)
def test_a_deleted_or_other_service_is_no_service(
    healthy: Callable[[], Snap], change: Callable[[Snap], None], why: str
) -> None:
    s = healthy()
    change(s["services"][0])
    f = next(f for f in run_checks(s).findings if f.id == "SVC000")
    assert why in f.fix and NAMES.service in f.fix


def test_a_missing_cluster_is_svc000(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["clusters"] = []
    f = next(f for f in run_checks(s).findings if f.id == "SVC000")
    assert f.title == "The cluster does not exist"
    assert f.evidence[0].kind == "clusters" and f.evidence[0].value == "none"


SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:vllm-g5/hf-token-AbCdEf"
EXEC_ROLE = "arn:aws:iam::123456789012:role/vllm-g5-TaskExecutionRole-1A2B3C"


def _secrets_fail(s: Snap, reason: str) -> None:
    """The service's tasks stop at start: ECS cannot read the server's HF_TOKEN secret."""
    from support.doctor_cases import tasks_crash_loop

    tasks_crash_loop(s)
    td = s["task_definitions"][0]
    td["executionRoleArn"] = EXEC_ROLE
    td["containerDefinitions"][0]["secrets"] = [
        {"name": "HF_TOKEN", "valueFrom": f"{SECRET}:token::"},
        {"name": "OTHER", "valueFrom": "/vllm-g5/other"},
    ]
    for t in s["tasks"]:
        if t["lastStatus"] == "STOPPED":
            t["stopCode"] = "TaskFailedToStart"
            t["stoppedReason"] = reason
            for ct in t["containers"]:
                ct.pop("exitCode", None)
                ct.pop("reason", None)


def test_a_task_that_cannot_read_its_secret_names_the_secret_and_permission(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    _secrets_fail(
        s,
        "ResourceInitializationError: unable to pull secrets or registry auth: execution "
        "resource retrieval failed: unable to retrieve secret from asm: service call has been "
        f"retried 1 time(s): failed to fetch secret {SECRET} from secrets manager: "
        f"AccessDeniedException: User: {EXEC_ROLE} is not authorized to perform: "
        "secretsmanager:GetSecretValue on resource: " + SECRET,
    )
    validate_snapshot(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "SVC002"]
    assert f"container {NAMES.service}'s secret HF_TOKEN (valueFrom {SECRET}:token::)" in f.fix
    assert "OTHER" not in f.fix  # the one that failed, not every secret
    assert f"execution role {EXEC_ROLE}, which needs secretsmanager:GetSecretValue on {SECRET}" in (
        f.fix
    )
    assert (
        f"aws iam simulate-principal-policy --policy-source-arn {EXEC_ROLE} --action-names "
        f"secretsmanager:GetSecretValue --resource-arns {SECRET}"
    ) in f.fix
    assert "--probe-hosts" not in f.fix


def test_a_parameter_named_without_its_arn_and_a_missing_secret(
    healthy: Callable[[], Snap],
) -> None:
    s = healthy()
    _secrets_fail(
        s,
        "ResourceInitializationError: unable to pull secrets or registry auth: execution "
        "resource retrieval failed: unable to retrieve secrets from ssm: service call has been "
        "retried 1 time(s): AccessDeniedException: User is not authorized to perform: "
        "ssm:GetParameters on resource: /vllm-g5/other",
    )
    (f,) = [f for f in run_checks(s).findings if f.id == "SVC002"]
    # A name is a parameter of the task definition's Region and account.
    assert (
        "ssm:GetParameters on arn:aws:ssm:us-east-1:123456789012:parameter/vllm-g5/other"
    ) in f.fix
    _secrets_fail(
        s,
        "ResourceInitializationError: unable to pull secrets or registry auth: execution "
        "resource retrieval failed: unable to retrieve secret from asm: service call has been "
        f"retried 1 time(s): failed to fetch secret {SECRET} from secrets manager: "
        "ResourceNotFoundException: Secrets Manager can't find the specified secret.",
    )
    (f,) = [f for f in run_checks(s).findings if f.id == "SVC002"]
    assert "HF_TOKEN" in f.fix and "does not exist where valueFrom points" in f.fix
    # A customer-managed key the role may not use: the key's policy, not the role's.
    _secrets_fail(
        s,
        "ResourceInitializationError: unable to pull secrets or registry auth: execution "
        "resource retrieval failed: unable to retrieve secret from asm: service call has been "
        f"retried 1 time(s): failed to fetch secret {SECRET} from secrets manager: "
        "AccessDeniedException: Access to KMS is not allowed",
    )
    (f,) = [f for f in run_checks(s).findings if f.id == "SVC002"]
    assert "kms:Decrypt (add it to the key's policy" in f.fix
