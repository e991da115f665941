"""Link checks of checks/doctor/task.py (the breakage of each check is in
tests/support/doctor_cases.py)."""

from __future__ import annotations

from collections.abc import Callable

from ecs_gpu.checks.doctor import run_checks
from ecs_gpu.checks.snapshot import COLLECTION_KEY
from support.doctor_cases import Snap
from support.snapshot_variants import as_concurrency
from support.snapshots import NAMES


def test_sidecar_publishing_another_series_is_td001(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    as_concurrency(s)
    env = s["task_definitions"][0]["containerDefinitions"][1]["environment"]
    for e in env:
        if e["name"] == "DIMENSIONS":
            e["value"] = "ClusterName=other,ServiceName=other"
    f = next(f for f in run_checks(s).findings if f.id == "TD001")
    assert f.title == "The demand-metric sidecar publishes another series"
    assert f.evidence[0].value == {"DIMENSIONS": "ClusterName=other,ServiceName=other"}
    assert f"ClusterName={NAMES.cluster},ServiceName={NAMES.service}" in f.fix


def test_a_service_on_another_revision_is_put_back_on_the_stacks(
    healthy: Callable[[], Snap],
) -> None:
    # The service pointed by hand at a revision without the sidecar: a redeploy of the
    # unchanged stack leaves it there, update-service to the stack's revision does not.
    from support.doctor_cases import sidecar_missing

    s = healthy()
    sidecar_missing(s)
    (f,) = [f for f in run_checks(s).findings if f.id == "TD001"]
    assert (
        f"aws cloudformation describe-stack-resources --stack-name {NAMES.stack} --query "
        "\"StackResources[?ResourceType=='AWS::ECS::TaskDefinition'].PhysicalResourceId\" "
        "--output text"
    ) in f.fix
    assert (
        f"aws ecs update-service --cluster {NAMES.cluster} --service {NAMES.service} "
        "--task-definition THAT_ARN."
    ) in f.fix
    assert "replaces every task once" in f.fix  # a new task definition is a deployment
    assert "[service.metrics]" in f.fix
    # Without a stack (--cluster/--service) the command still names the service.
    s[COLLECTION_KEY]["target"]["stack"] = None
    (f,) = [f for f in run_checks(s).findings if f.id == "TD001"]
    assert "describe-stack-resources" not in f.fix
    assert "--task-definition STACK_TASK_DEFINITION_ARN." in f.fix
