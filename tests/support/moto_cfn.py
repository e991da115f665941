"""What moto's CloudFormation cannot do, and the one substitution tests make for it.

Shared by tests/cli and tests/e2e (both deploy the real synthesized
template into a moto server).
"""

from __future__ import annotations

from typing import Any


def moto_skips(rtype: str) -> bool:
    """Whether moto's CloudFormation skips this type ("No Moto CloudFormation support")."""
    from moto.cloudformation.parsing import NULL_MODELS, get_model_map

    # moto runs Custom:: resources (custom_model.py); see for_moto.
    if rtype.startswith("Custom::"):
        return False
    return rtype not in get_model_map() and rtype not in NULL_MODELS


def for_moto(template: dict[str, Any]) -> dict[str, Any]:
    """The real template, with the one thing moto cannot do replaced.

    moto skips some resource types (see moto_skips) and then cannot
    resolve ``Fn::GetAtt`` on them; real CloudFormation can. Each such
    GetAtt (the dashboard's alarm ARN) becomes a literal ARN; nothing else
    changes.
    """
    skipped = {k for k, r in template["Resources"].items() if moto_skips(r["Type"])}
    # moto answers a Custom:: resource only by running its Lambda function in
    # Docker, and keeps the stack CREATE_IN_PROGRESS until it answers; there
    # is no Docker here. The one custom resource (the delete-safety release,
    # infra/cleanup.py, tested in tests/infra/test_capacity_host.py) acts only
    # on Delete, so the stack moto builds is the same without it.
    custom = {k for k, r in template["Resources"].items() if r["Type"].startswith("Custom::")}

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            att = node.get("Fn::GetAtt")
            if len(node) == 1 and isinstance(att, list) and att[0] in skipped:
                return f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{att[0]}-{att[1]}"
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out = {k: walk(v) for k, v in template.items()}
    out["Resources"] = {k: r for k, r in out["Resources"].items() if k not in custom}
    for r in out["Resources"].values():
        if "DependsOn" in r:
            deps = [d for d in as_list(r["DependsOn"]) if d not in custom]
            if deps:
                r["DependsOn"] = deps
            else:
                del r["DependsOn"]
    return out


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else [v]


# The real template's AMI parameter (ecs_gpu.contracts.ami.PARAMETER) has no default:
# `ecs-gpu deploy` passes one (ecs_gpu.contracts.ami.choose). Tests that call run_deploy
# or run_diff directly pass this image, one moto's EC2 knows.
MOTO_AMI = "ami-12c6146b"


def ami_parameters(template: dict[str, Any], image_id: str = MOTO_AMI) -> dict[str, str]:
    """The AMI parameter for ``template``, or none for a stand-in that has no parameter."""
    from ecs_gpu.contracts.ami import PARAMETER

    return {PARAMETER: image_id} if PARAMETER in template.get("Parameters", {}) else {}
