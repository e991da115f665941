"""Link 2, task: the service's task definition reserves GPUs."""

from __future__ import annotations

from ecs_gpu.doctor.checks.common import (
    gpus_per_task,
    service_items,
    short_name,
    task_definition,
)
from ecs_gpu.doctor.checks.model import Check, Evidence, Finding, Unknown
from ecs_gpu.doctor.checks.registry import check
from ecs_gpu.doctor.snapshot import Snapshot


@check(
    "GPU002",
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
