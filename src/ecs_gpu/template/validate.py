"""``validate``: spec rules, host agent schema, CDK synth warnings, cfn-lint, cdk-nag,
and the limits deploy and ECS would refuse.

A clean spec gives a template with no cfn-lint error or warning and no
cdk-nag AwsSolutions finding without a written acknowledgement
(:mod:`ecs_gpu.infra.nag`); a cfn-lint rule that must be ignored is ignored
in the template's ``Metadata.cfn-lint`` with its reason, never here. It also
fails where ``deploy`` would: a template over CloudFormation's TemplateURL
limit (1 MB), and ECS's limits on container names and image references
(botocore's RegisterTaskDefinition), which cfn-lint does not check. CDK's
own advice (run a cdk command, a feature flag, a deprecated API in ecs-gpu's
code) is not shown: a user cannot act on it. Findings follow cfn-lint's
shape: source, id, severity, where, message. A template over the
TemplateBody limit (it deploys through ``--template-bucket``) and the spec's
own notes (``spec.NOTES``) are ``ValidationReport.notes``: they do not fail.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from ecs_gpu import host
from ecs_gpu.design import Design, check_woken_task
from ecs_gpu.design.paths import sleep
from ecs_gpu.errors import SpecError
from ecs_gpu.node import ensure_node
from ecs_gpu.spec import Spec
from ecs_gpu.spec.rules import NOTES, cross_field_problems
from ecs_gpu.spec.sections.service import image_problem as spec_image_problem
from ecs_gpu.template.limits import minified, template_size_problem

if TYPE_CHECKING:
    from ecs_gpu.template.synth import StageFn

Source = Literal["cfn-lint", "cdk-nag", "agent-schema", "cdk", "deploy", "ecs", "spec", "startup"]
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


def spec_notes(spec: Spec, path: str = "spec") -> list[Finding]:
    """The spec's notes (spec.NOTES): valid, deployable, but worth knowing.

    The id is the note's name (``open-to-the-internet``), the resource its key;
    the message is the spec's one-line form, naming the file.
    """
    return [
        Finding(
            "spec", note.__name__.strip("_").replace("_", "-"), "warning", p.key, p.format(path)
        )
        for note in NOTES
        for p in note(spec)
    ]


def startup_notes(design: Design, path: str = "spec") -> list[Finding]:
    """The model's start estimate with its inputs; a warning when nothing sizes it.

    Without model_size_gib the grace period rests on a guess (the p5 example's
    1,860 s against a ~3,100-s download), so that case is a warning.
    """
    start = design.startup.model
    if start.size_gib is None:
        return [
            Finding(
                "startup",
                "model-size-unset",
                "warning",
                "service.model_size_gib",
                start.describe(path),
            )
        ]
    return [
        Finding("startup", "model-start", "info", "service.model_size_gib", start.describe(path))
    ]


def zero_notes(design: Design, path: str = "spec") -> list[Finding]:
    """What the first request after zero waits, when the service may run no task (wake.py).

    A warning: valid and deployable, but the wait is the price of paying
    nothing while idle, and an ALB answers 503 until a task is healthy.
    """
    zero = design.zero
    if zero is None:
        return []
    spec = design.spec
    sc, cap = spec.scaling, spec.capacity
    start = zero.start_s
    if zero.wakes_on_spot:
        what = (
            "a Spot instance's boot, the image pull and the model load ([capacity.spot] "
            "on_demand_base = 0 puts the one task on Spot, whose group has no warm pool or "
            "floor; a Spot shortage leaves it PROVISIONING: on_demand_base = 1 wakes on "
            "On-Demand)"
        )
    elif max(cap.min_instances, cap.reserved_instances or 0) >= 1:
        what = "the image pull and model load on the instance min_instances keeps"
    elif zero.pooled_wake:
        what = "the warm pool's start and the model load"
    else:
        what = "an instance's boot, the image pull and the model load"
    if spec.load_balancer is not None:
        how = (
            "the wake alarm (the load balancer's next one-minute datapoint) and managed "
            f"scaling, then about {start / 60:.0f} min for {what}; until that task passes "
            "its health checks the load balancer answers 503 (no registered target)"
        )
    else:
        how = (
            "the next scheduled action that raises min_tasks (without a load balancer no "
            f"request wakes it), then about {start / 60:.0f} min for {what}"
        )
    sp = zero.sleep
    # Longer than the longest request's: a woken task is RUNNING while its model loads.
    longer = (
        ""
        if sp is None or sp.minutes <= sleep.MIN_QUIET_MINUTES
        else f" ({sp.minutes}, not {sleep.MIN_QUIET_MINUTES}: a woken task counts as running "
        f"while its model loads, about {design.startup.model_ready_s / 60:.0f} min, and must "
        "serve before the alarm can stop it)"
    )
    sleeps = (
        ""
        if sp is None
        else f" After {sp.minutes} min without a request or an open connection the sleep "
        f"alarm sets zero tasks{longer}; "
        "the instance leaves after managed scaling's 15 low minutes."
    )
    key = "scaling.min_tasks" if sc.min_tasks == 0 else "scaling.schedule"
    value = "0" if sc.min_tasks == 0 else "an entry with min_tasks = 0"
    message = (
        f"{path}: {key} = {value}: the service scales to zero tasks, and the first request "
        f"after zero waits for {how}.{sleeps} Fix: keep min_tasks >= 1 where that wait is too "
        "long; a [capacity.warm_pool] shortens it."
    )
    return [Finding("spec", "scale-to-zero", "warning", key, message)]


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
# RegisterTaskDefinition.family). The model documents no limit on the number of
# environment variables or secrets, so none is checked here. The image rule is
# the spec's (spec.image_problem): the spec's own image is refused there, before
# any template is built; here it checks every image the template carries.
ECS_NAME_RE: Final = re.compile(r"[A-Za-z0-9_-]{1,255}")


def image_problem(image: str) -> str | None:
    """Why ECS would refuse ``image`` as a container image reference, or None."""
    problem = spec_image_problem(image)
    if problem is None:
        return None
    shown = repr(image) if len(image) <= 80 else f"{image[:60]}..."
    return f"image {shown}: {problem[0]}. Fix: {problem[1]}."


def ecs_findings(template: dict[str, Any]) -> list[Finding]:
    """ECS limits on every task definition's family, container names and images."""
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
            # An ECR image is an intrinsic (Fn::Join) here; the spec checked its string.
            problem = image_problem(image) if isinstance(image, str) else None
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
    # Resolved once the spec's own rules have passed; the notes read the design.
    design = Design.of(spec)
    check_woken_task(design, path)
    from ecs_gpu.template.synth import build

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
            *ecs_findings(template),
            *lint,
            *nag,
        ]
    notes = [
        *spec_notes(spec, path),
        *startup_notes(design, path),
        *zero_notes(design, path),
        *size_notes(template),
    ]
    return ValidationReport(template=template, findings=findings, notes=notes)


def _quiet(_: str) -> None:
    """No stage display (a library caller that passed none)."""
