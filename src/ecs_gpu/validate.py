"""``validate``: spec rules, host agent schema, CDK synth warnings, cfn-lint, cdk-nag,
and the limits deploy and ECS would refuse.

A clean spec produces a template with zero cfn-lint errors or warnings and
no cdk-nag AwsSolutions finding that lacks a written acknowledgement
(:mod:`ecs_gpu.infra.nag`). A cfn-lint rule that had to be ignored would be
ignored in the template's own ``Metadata.cfn-lint`` with its reason, never
here. It also fails where ``deploy`` would: a template over CloudFormation's
TemplateURL limit (1 MB), and ECS's documented limits on container names and image
references (RegisterTaskDefinition, botocore's ECS model), which cfn-lint's
schema does not check. CDK's own advice (run a cdk command, a feature flag,
a deprecated API in ecs-gpu's code) is not shown: a user of ecs-gpu runs no
cdk command and cannot act on it. Findings follow cfn-lint's shape: source,
id, severity, where, message. A template over the TemplateBody limit
(51,200 bytes) can still deploy through ``--template-bucket``: that is a
note (``ValidationReport.notes``), which does not fail validate.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from ecs_gpu.aws.deploy import minified, template_size_problem
from ecs_gpu.errors import SpecError
from ecs_gpu.infra import host
from ecs_gpu.node import ensure_node
from ecs_gpu.spec import Spec, cross_field_problems

if TYPE_CHECKING:
    from ecs_gpu.synth import StageFn

Source = Literal["cfn-lint", "cdk-nag", "agent-schema", "cdk", "deploy", "ecs"]
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
    # What the user must know to deploy, that is no defect (they do not fail validate).
    notes: list[Finding] = field(default_factory=list)

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


# CDK's advice about CDK itself, matched in a message's text: its CLI and config,
# feature flags, and deprecations in the construct code (jsii and Annotations
# word them "... is deprecated ... This API will be removed ...").
CDK_ADVICE: Final = re.compile(
    r"\bcdk (?:acknowledge|bootstrap|context|deploy|diff|doctor|notices|synth)\b"
    r"|cdk(?:\.context)?\.json|feature flag|is deprecated|API will be removed|\bjsii\b",
    re.IGNORECASE,
)
# The "[ack: id]" CDK appends to a warning: how to silence it in CDK code.
_ACK_SUFFIX: Final = re.compile(r"\s*\[ack: [^\]]*\]\s*$")


def is_cdk_advice(text: str) -> bool:
    """Whether a synth message is about CDK (its CLI, flags, API), not about the spec."""
    return bool(CDK_ADVICE.search(text))


def synth_findings(messages: list[Any]) -> list[Finding]:
    """Warnings and errors CDK attached during synth, less CDK's advice about itself.

    Errors are always kept: a synth error stops the template whatever it says.
    """
    out: list[Finding] = []
    for m in messages:
        level = str(m.level.name if hasattr(m.level, "name") else m.level).lower()
        if "info" in level:
            continue
        text = _ACK_SUFFIX.sub("", str(m.entry.data))
        if "error" not in level and is_cdk_advice(text):
            continue
        out.append(Finding("cdk", "synth", level, m.id, text))
    return out


def size_findings(template: dict[str, Any]) -> list[Finding]:
    """Deploy's TemplateURL limit (1 MB), on the same minified body deploy sends."""
    problem = template_size_problem(minified(template), bucket=True)
    return (
        []
        if problem is None
        else [Finding("deploy", "template-size", "error", "template", problem)]
    )


def size_notes(template: dict[str, Any]) -> list[Finding]:
    """Over TemplateBody's limit but within TemplateURL's: deploy needs --template-bucket."""
    body = minified(template)
    if template_size_problem(body, bucket=True) is not None:
        return []  # a finding already
    problem = template_size_problem(body)
    return (
        []
        if problem is None
        else [Finding("deploy", "template-size", "warning", "template", problem)]
    )


# RegisterTaskDefinition's documented limits (botocore ECS model, ContainerDefinition.name,
# ContainerDefinition.image, RegisterTaskDefinition.family). The model documents no limit
# on the number of environment variables or secrets, so none is checked here.
ECS_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,255}")
ECS_IMAGE_MAX: Final = 255
_IMAGE_TAG_CHARS: Final = re.compile(r"[A-Za-z0-9_:./#-]+")
_IMAGE_DIGEST: Final = re.compile(r"sha256:[A-Fa-f0-9]{64}")


def image_problem(image: str) -> str | None:
    """Why ECS would refuse ``image`` as a container image reference, or None."""
    if "@" in image:
        name, _, digest = image.partition("@")
        if len(name) > ECS_IMAGE_MAX:
            return (
                f"image {image[:60]}...: the part before '@' is {len(name)} characters; ECS "
                f"allows at most {ECS_IMAGE_MAX}. Fix: use a shorter repository path."
            )
        if not _IMAGE_DIGEST.fullmatch(digest):
            return (
                f"image {image!r}: the digest after '@' must be sha256: and 64 hex digits "
                "(ECS supports no other). Fix: copy the digest from `docker inspect` or ECR."
            )
        return None
    if len(image) > ECS_IMAGE_MAX:
        return (
            f"image {image[:60]}...: {len(image)} characters; ECS allows at most "
            f"{ECS_IMAGE_MAX} for repository-url/image:tag. Fix: use a shorter repository "
            "path or tag, or pin by digest (repository@sha256:...)."
        )
    if not _IMAGE_TAG_CHARS.fullmatch(image):
        return (
            f"image {image!r}: ECS allows only letters, digits, - _ : . / and # in an "
            "image reference. Fix: remove the other characters (spaces, quotes)."
        )
    return None


def spec_image_findings(spec: Spec) -> list[Finding]:
    """ECS's image limits on ``service.image`` as written.

    The template may carry an ECR image as an intrinsic (Fn::Join of account,
    Region and repository), which :func:`ecs_findings` cannot read; the
    spec's string is what ECS will be given.
    """
    problem = image_problem(spec.service.image)
    return [] if problem is None else [Finding("ecs", "image", "error", "service.image", problem)]


def ecs_findings(
    template: dict[str, Any], *, skip_images: frozenset[str] = frozenset()
) -> list[Finding]:
    """ECS limits on every task definition's family, container names and images.

    Images in ``skip_images`` were already reported from the spec.
    """
    out: list[Finding] = []
    for logical_id, res in template.get("Resources", {}).items():
        if res.get("Type") != "AWS::ECS::TaskDefinition":
            continue
        props = res.get("Properties", {})
        family = props.get("Family")
        if isinstance(family, str) and not ECS_NAME_RE.fullmatch(family):
            out.append(
                Finding(
                    "ecs",
                    "task-family",
                    "error",
                    f"{logical_id}/Family",
                    f"task family {family!r}: ECS allows 1 to 255 letters, digits, _ and -. "
                    "Fix: shorten or rename [service] name.",
                )
            )
        for i, c in enumerate(props.get("ContainerDefinitions", [])):
            name = c.get("Name")
            if isinstance(name, str) and not ECS_NAME_RE.fullmatch(name):
                out.append(
                    Finding(
                        "ecs",
                        "container-name",
                        "error",
                        f"{logical_id}/ContainerDefinitions/{i}/Name",
                        f"container name {name!r}: ECS allows 1 to 255 letters, digits, _ and "
                        "-. Fix: shorten or rename [service] name.",
                    )
                )
            image = c.get("Image")
            checkable = isinstance(image, str) and image not in skip_images
            problem = image_problem(image) if checkable else None
            if problem is not None:
                out.append(
                    Finding(
                        "ecs",
                        "image",
                        "error",
                        f"{logical_id}/ContainerDefinitions/{i}/Image",
                        problem,
                    )
                )
    return out


# The slow stages validate tells its ``stage`` callback about, in this order.
STAGES: Final = ("synth", "agent schema", "cfn-lint", "cdk-nag")


def validate(spec: Spec, *, path: str = "spec", stage: StageFn | None = None) -> ValidationReport:
    """Run every check on ``spec``; raise :class:`SpecError` (exit 2) if the spec breaks a rule.

    ``stage`` is told each of :data:`STAGES` as it starts.
    """
    problems = cross_field_problems(spec, path)
    if problems:
        raise SpecError(path, problems)
    from ecs_gpu.synth import build

    tell = stage if stage is not None else _quiet
    with tempfile.TemporaryDirectory(prefix="ecs-gpu-cdk-") as outdir:
        tell("synth")
        built = build(spec, outdir=outdir)
        assembly = built.app.synth()
        artifact = assembly.get_stack_by_name(built.stack.stack_name)
        template: dict[str, Any] = artifact.template
        tell("agent schema")
        agent = agent_findings(spec)
        tell("cfn-lint")
        lint = cfn_lint_findings(template)
        tell("cdk-nag")
        nag = nag_findings(built.stack)
        findings = [
            *agent,
            *synth_findings(list(artifact.messages)),
            *size_findings(template),
            *spec_image_findings(spec),
            *ecs_findings(template, skip_images=frozenset({spec.service.image})),
            *lint,
            *nag,
        ]
    return ValidationReport(template=template, findings=findings, notes=size_notes(template))


def _quiet(_: str) -> None:
    """No stage display (a library caller that passed none)."""
