"""What moto's CloudFormation cannot do, and the one substitution tests make for it.

Shared by tests/operate and tests/e2e (both deploy the real synthesized
template into a moto server).
"""

from __future__ import annotations

from typing import Any


def moto_skips(rtype: str) -> bool:
    """Whether moto's CloudFormation skips this type ("No Moto CloudFormation support")."""
    from moto.cloudformation.parsing import NULL_MODELS, get_model_map

    return rtype not in get_model_map() and rtype not in NULL_MODELS


def for_moto(template: dict[str, Any]) -> dict[str, Any]:
    """The real template, with the one thing moto cannot do replaced.

    moto skips some resource types (see moto_skips) and then cannot
    resolve ``Fn::GetAtt`` on them; real CloudFormation can. Each such
    GetAtt (the dashboard's alarm ARN) becomes a literal ARN; nothing else
    changes.
    """
    skipped = {k for k, r in template["Resources"].items() if moto_skips(r["Type"])}

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            att = node.get("Fn::GetAtt")
            if len(node) == 1 and isinstance(att, list) and att[0] in skipped:
                return f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{att[0]}-{att[1]}"
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return {k: walk(v) for k, v in template.items()}
