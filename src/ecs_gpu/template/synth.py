"""Spec -> CDK app -> standalone CloudFormation template (no bootstrap, no assets).

The stack uses the :class:`BootstraplessSynthesizer`: no bootstrap version
rule or parameter, and any asset would be refused at synth, so the template
deploys into an account that never ran ``cdk bootstrap``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from ecs_gpu.contracts.naming import CONSTRUCT_ID, stack_name_of
from ecs_gpu.errors import BadInputError
from ecs_gpu.node import check_tmpdir, ensure_node
from ecs_gpu.outputs import check_distinct, is_stdout, write_text
from ecs_gpu.spec import Spec
from ecs_gpu.template.limits import MAX_TEMPLATE_BODY_BYTES, minified

if TYPE_CHECKING:
    from aws_cdk import App, Stack

    from ecs_gpu.infra.service import GpuService

# Told the name of each slow stage as it starts ("synth", "cfn-lint", ...), so
# a terminal can show where the seconds go; the library itself prints nothing.
StageFn = Callable[[str], None]

TEMPLATE_SUFFIX: Final = ".template.json"


@dataclass(frozen=True)
class Synthesized:
    app: App
    stack: Stack
    service: GpuService


def build(
    spec: Spec,
    *,
    outdir: str,
    stack_name: str | None = None,
    force_new_deployment_nonce: str | None = None,
) -> Synthesized:
    """The CDK app, the standalone stack and the GpuService in it (not yet synthesized).

    ``outdir`` is the cloud assembly's scratch directory; the caller owns and removes it.
    ``stack_name`` (``--stack``) replaces the spec-derived name, so one spec can
    be deployed as several stacks. ``force_new_deployment_nonce``: GpuService's
    keyword, which only deploy and diff pass (ecs_gpu.design.redeploy.decide); the
    offline commands never force a deployment.
    """
    check_tmpdir()
    ensure_node()
    from aws_cdk import App, BootstraplessSynthesizer, Stack

    from ecs_gpu.infra.service import GpuService

    name = stack_name_of(spec, stack_name)
    # CDK's built-in template validation would print its own report on every
    # synth (naming a file in the scratch folder, deleted at once, and CDK's
    # feature flags); validate runs cfn-lint itself and reports each finding
    # against the spec.
    app = App(outdir=outdir, analytics_reporting=False, builtin_cloud_formation_validation=False)
    stack = Stack(
        app,
        name,
        stack_name=name,
        description=f"ecs-gpu: GPU inference service {spec.service.name} on Amazon ECS",
        synthesizer=BootstraplessSynthesizer(),
        analytics_reporting=False,
    )
    service = GpuService(
        stack, CONSTRUCT_ID, spec=spec, force_new_deployment_nonce=force_new_deployment_nonce
    )
    return Synthesized(app=app, stack=stack, service=service)


def template_of(built: Synthesized) -> dict[str, Any]:
    """Synthesize ``built`` and return its stack's template."""
    assembly = built.app.synth()
    template: dict[str, Any] = assembly.get_stack_by_name(built.stack.stack_name).template
    return template


def synth_template(
    spec: Spec,
    *,
    stack_name: str | None = None,
    stage: StageFn | None = None,
    force_new_deployment_nonce: str | None = None,
) -> dict[str, Any]:
    """The CloudFormation template for ``spec``, as a dict; ``stage`` is told "synth"."""
    if stage is not None:
        stage("synth")
    with tempfile.TemporaryDirectory(prefix="ecs-gpu-cdk-") as outdir:
        built = build(
            spec,
            outdir=outdir,
            stack_name=stack_name,
            force_new_deployment_nonce=force_new_deployment_nonce,
        )
        return template_of(built)


def template_json(template: dict[str, Any]) -> str:
    """The template file's text: indented, or minified when only that fits inline.

    `aws cloudformation deploy --template-file` refuses a file over
    CloudFormation's 51,200-byte TemplateBody limit without an S3 bucket (it
    checks the file's size on disk, aws-cli customizations/cloudformation/
    deploy.py), so a template that fits only minified is written minified.
    """
    pretty = json.dumps(template, indent=1, sort_keys=False) + "\n"
    if len(pretty.encode()) <= MAX_TEMPLATE_BODY_BYTES:
        return pretty
    return minified(template)


def template_path(spec: Spec, out_dir: Path, *, stack_name: str | None = None) -> Path:
    """``<out_dir>/<stack name>.template.json``; ``-`` (standard output) stays ``-``."""
    if is_stdout(out_dir):
        return out_dir
    return out_dir / f"{stack_name_of(spec, stack_name)}{TEMPLATE_SUFFIX}"


def write_template(
    spec: Spec,
    out_dir: Path,
    *,
    stack_name: str | None = None,
    spec_path: Path | None = None,
    stage: StageFn | None = None,
) -> Path:
    """Write ``<out_dir>/<stack name>.template.json`` and return its path.

    ``out_dir`` ``-`` writes the template to standard output. The file is
    written to a temporary sibling and renamed, so Ctrl-C never leaves half
    a template that `aws cloudformation deploy` would then read.
    """
    path = template_path(spec, out_dir, stack_name=stack_name)
    if not is_stdout(out_dir):
        # The directory first: a bad -o should fail before seconds of synth, not after.
        _write(out_dir, lambda: out_dir.mkdir(parents=True, exist_ok=True))
        if path.is_dir():
            raise BadInputError(
                f"{path}: cannot write the template there (it is a folder). Fix: remove or "
                "rename that folder, or pass -o with another directory."
            )
        check_distinct({"SPEC": spec_path}, {"-o": path})
    text = template_json(synth_template(spec, stack_name=stack_name, stage=stage))
    write_text(path, text, "-o")
    return path


def _write(out_dir: Path, action: Callable[[], object]) -> None:
    try:
        action()
    except OSError as e:
        why = e.strerror
        if out_dir.is_symlink() and not out_dir.exists():
            why = f"a symbolic link to {out_dir.readlink()}, which does not exist"
        raise BadInputError(
            f"{out_dir}: cannot write the template there ({why}). Fix: pass -o with a "
            "writable directory."
        ) from None
