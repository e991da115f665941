"""``validate``: spec rules, host agent schema, CDK synth warnings, cfn-lint and cdk-nag.

A clean spec produces a template with zero cfn-lint errors or warnings and
no cdk-nag AwsSolutions finding that lacks a written acknowledgement
(:mod:`ecs_gpu.infra.nag`). A cfn-lint rule that had to be ignored would be
ignored in the template's own ``Metadata.cfn-lint`` with its reason, never
here. Findings follow cfn-lint's shape: source, id, severity, where, message.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ecs_gpu.errors import SpecError
from ecs_gpu.infra import host
from ecs_gpu.node import ensure_node
from ecs_gpu.spec import Spec, cross_field_problems

Source = Literal["cfn-lint", "cdk-nag", "agent-schema", "cdk"]
CFN_LINT_REGIONS: Final = ["us-east-1"]


@dataclass(frozen=True)
class Finding:
    source: Source
    id: str
    severity: str
    resource: str
    message: str


@dataclass(frozen=True)
class ValidationReport:
    template: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings


def agent_findings(spec: Spec) -> list[Finding]:
    """The host CloudWatch agent config against the agent's own JSON schema."""
    return [
        Finding("agent-schema", "agent-config", "error", "user data: agent config", problem)
        for problem in host.validate_agent_config(host.agent_config(spec), source="agent config")
    ]


def cfn_lint_findings(template: dict[str, Any]) -> list[Finding]:
    """Every cfn-lint match (errors and warnings) on the template."""
    from cfnlint.api import ManualArgs, lint

    matches = lint(json.dumps(template), config=ManualArgs(regions=CFN_LINT_REGIONS))
    return [
        Finding(
            "cfn-lint",
            m.rule.id,
            str(m.rule.severity),
            "/".join(str(p) for p in m.path) if m.path else m.filename or "template",
            m.message,
        )
        for m in matches
    ]


def nag_findings(scope: Any) -> list[Finding]:
    """AwsSolutions findings under ``scope`` that carry no acknowledgement."""
    ensure_node()
    from cdk_nag import AwsSolutionsChecks

    report = AwsSolutionsChecks().validate_scope(scope)
    out: list[Finding] = []
    for v in report.violations:
        for r in v.violating_resources:
            where = r.construct_path or r.resource_logical_id or "?"
            out.append(Finding("cdk-nag", v.rule_name, v.severity or "error", where, v.description))
    return out


def synth_findings(messages: list[Any]) -> list[Finding]:
    """Warnings and errors CDK itself attached during synth (unacknowledged ones only)."""
    out: list[Finding] = []
    for m in messages:
        level = str(m.level.name if hasattr(m.level, "name") else m.level).lower()
        if "info" in level:
            continue
        out.append(Finding("cdk", "synth", level, m.id, str(m.entry.data)))
    return out


def validate(spec: Spec, *, path: str = "spec") -> ValidationReport:
    """Run every check on ``spec``; raise :class:`SpecError` (exit 2) if the spec breaks a rule."""
    problems = cross_field_problems(spec, path)
    if problems:
        raise SpecError(path, problems)
    from ecs_gpu.synth import build

    with tempfile.TemporaryDirectory(prefix="ecs-gpu-cdk-") as outdir:
        built = build(spec, outdir=outdir)
        assembly = built.app.synth()
        artifact = assembly.get_stack_by_name(built.stack.stack_name)
        template: dict[str, Any] = artifact.template
        findings = [
            *agent_findings(spec),
            *synth_findings(list(artifact.messages)),
            *cfn_lint_findings(template),
            *nag_findings(built.stack),
        ]
    return ValidationReport(template=template, findings=findings)
