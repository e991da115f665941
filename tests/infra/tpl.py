"""Plain-dict helpers for reading a synthesized CloudFormation template."""

from __future__ import annotations

import json
from typing import Any

Template = dict[str, Any]


def resources(t: Template, rtype: str) -> dict[str, dict[str, Any]]:
    """Logical id -> resource, for every resource of ``rtype``."""
    return {k: r for k, r in t["Resources"].items() if r["Type"] == rtype}


def one(t: Template, rtype: str) -> tuple[str, dict[str, Any]]:
    """The single resource of ``rtype`` (fails when there is not exactly one)."""
    found = resources(t, rtype)
    assert len(found) == 1, f"expected one {rtype}, found {sorted(found)}"
    return next(iter(found.items()))


def props(t: Template, rtype: str) -> dict[str, Any]:
    properties: dict[str, Any] = one(t, rtype)[1]["Properties"]
    return properties


def render(value: Any) -> str:
    """A CFN string value with intrinsics flattened: Fn::Join joined, Ref -> ${Name}."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return str(sep).join(render(p) for p in parts)
    if isinstance(value, dict) and "Ref" in value:
        return "${" + str(value["Ref"]) + "}"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    return json.dumps(value)


def statements(t: Template) -> list[tuple[str, dict[str, Any]]]:
    """(policy logical id, statement) for every inline IAM policy statement in the template."""
    out = []
    for lid, r in resources(t, "AWS::IAM::Policy").items():
        for st in r["Properties"]["PolicyDocument"]["Statement"]:
            out.append((lid, st))
    return out


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else [v]
