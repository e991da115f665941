"""Link 2, task: the service's task definition reserves GPUs (and carries the demand sidecar)."""

from __future__ import annotations

from typing import Any, Final

from ecs_gpu.checks.doctor.common import (
    collection_target,
    demand_names,
    gpus_per_task,
    scales_on_concurrency,
    service_items,
    short_name,
    task_definition,
)
from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.model import Check, Evidence, Finding, Unknown
from ecs_gpu.checks.snapshot import Snapshot
from ecs_gpu.contracts import demand_metric


@check(
    "TD002",
    link="task",
    severity="error",
    title="Task definition reserves no GPU",
    requires=("services", "task_definitions"),
    doc="No container of the service's task definition has a GPU resourceRequirement.",
)
def _td_reserves_gpu(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for svc in service_items(s):
        td = task_definition(s, svc.get("taskDefinition"))
        if td is None:
            raise Unknown(f"task definition {svc.get('taskDefinition')} was not collected")
        if gpus_per_task(td) > 0:
            continue
        out.append(
            c.finding(
                [
                    Evidence(
                        "task_definitions",
                        short_name(td["taskDefinitionArn"]),
                        "containerDefinitions[].resourceRequirements",
                        [
                            cd.get("resourceRequirements", [])
                            for cd in td.get("containerDefinitions", [])
                        ],
                    )
                ],
                "No container reserves a GPU, so ECS assigns none and the container runs under "
                'runc with no GPU. Add "resourceRequirements": [{"type": "GPU", "value": "1"}] '
                "to the container ([service] gpus_per_task in the spec) and redeploy.",
            )
        )
    return out


# What the sidecar's environment must say for its series to be the one tracked.
_SIDECAR_CONTRACT_KEYS = ("NAMESPACE", "METRIC_NAME", "DIMENSIONS")


def _back_to_the_stacks(s: Snapshot, svc: dict[str, Any], tid: str) -> str:
    """How to put the service back on the stack's task definition, where it runs another
    (``tid``) set by hand: a redeploy of the unchanged stack leaves the service as it is,
    since CloudFormation compares templates (aws-semantics.md §12)."""
    target = collection_target(s)
    stack, cluster = target.get("stack"), target.get("cluster") or "CLUSTER"
    service = svc.get("serviceName") or target.get("service") or "SERVICE"
    if not stack:
        return (
            f"If the service was pointed at {tid} by hand, put it back on its stack's task "
            f"definition: aws ecs update-service --cluster {cluster} --service {service} "
            f"--task-definition STACK_TASK_DEFINITION_ARN. {_RESTARTS}"
        )
    return (
        f"If the stack's task definition has the sidecar and the service was pointed at "
        f"{tid} by hand (a redeploy of the unchanged stack does not change it back), find the "
        f"stack's revision: aws cloudformation describe-stack-resources --stack-name {stack} "
        "--query \"StackResources[?ResourceType=='AWS::ECS::TaskDefinition'].PhysicalResourceId\" "
        f"--output text; then put the service on it: aws ecs update-service --cluster {cluster} "
        f"--service {service} --task-definition THAT_ARN. {_RESTARTS}"
    )


# UpdateService: a new task definition "triggers a new service deployment".
_RESTARTS: Final = (
    "That starts a new deployment, which replaces every task once (each new one loads its "
    "model before it serves)."
)


@check(
    "TD001",
    link="task",
    severity="error",
    title="Task definition lacks the demand-metric sidecar",
    requires=("services", "task_definitions"),
    doc="The service scales on concurrency but its task definition has no demand-metric "
    "sidecar, or the sidecar publishes another namespace, name or dimensions.",
)
def _demand_sidecar(s: Snapshot, c: Check) -> list[Finding]:
    if not scales_on_concurrency(s):
        return []
    want = {
        "NAMESPACE": demand_metric.NAMESPACE,
        "METRIC_NAME": demand_metric.METRIC_NAME,
        "DIMENSIONS": demand_metric.cli_dimensions(*demand_names(s)),
    }
    series = f"{demand_metric.NAMESPACE} {demand_metric.METRIC_NAME} ({want['DIMENSIONS']})"
    out = []
    for svc in service_items(s):
        td = task_definition(s, svc.get("taskDefinition"))
        if td is None:
            raise Unknown(f"task definition {svc.get('taskDefinition')} was not collected")
        tid = short_name(td["taskDefinitionArn"])
        containers = td.get("containerDefinitions", [])
        sidecar = next(
            (cd for cd in containers if cd.get("name") == demand_metric.SIDECAR_NAME), None
        )
        if sidecar is None:
            out.append(
                c.finding(
                    [
                        Evidence(
                            "task_definitions",
                            tid,
                            "containerDefinitions[].name",
                            [cd.get("name") for cd in containers],
                        )
                    ],
                    f"The service scales on concurrency, but no container "
                    f"{demand_metric.SIDECAR_NAME!r} publishes {series}: the policy and the "
                    "fast path track a series nobody writes. "
                    + _back_to_the_stacks(s, svc, tid)
                    + " Otherwise add [service.metrics] to the spec (it adds the sidecar) and "
                    "redeploy with `ecs-gpu deploy`.",
                )
            )
            continue
        env = {e.get("name"): e.get("value") for e in sidecar.get("environment", [])}
        wrong = {k: env.get(k) for k in _SIDECAR_CONTRACT_KEYS if env.get(k) != want[k]}
        if wrong:
            out.append(
                c.finding(
                    [
                        Evidence(
                            "task_definitions",
                            tid,
                            f"containerDefinitions[{demand_metric.SIDECAR_NAME}].environment",
                            wrong,
                        )
                    ],
                    f"The sidecar publishes {wrong}, but the policy tracks {series}: the two "
                    "never meet. "
                    + _back_to_the_stacks(s, svc, tid)
                    + " Otherwise redeploy the task definition from the spec (`ecs-gpu "
                    "deploy`).",
                    title="The demand-metric sidecar publishes another series",
                )
            )
    return out
