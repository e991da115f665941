"""What ``ecs-gpu diff`` and ``ecs-gpu deploy`` do before their change set.

Both read the spec, check the session before the seconds of synth, choose
the AMI, synthesize the template and stage it where CloudFormation reads
it; both check ``--json`` before any AWS call and write it the same way.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import staging
from ecs_gpu.cli import ami as ami_cli
from ecs_gpu.cli.options import Aws, _aws, owned_by_caller, stack_of, template_bucket
from ecs_gpu.cli.render import console
from ecs_gpu.cli.terminal import err_console, print_notes, say
from ecs_gpu.design import Design, check_woken_task
from ecs_gpu.outputs import check_distinct, check_output, is_stdout, write_text
from ecs_gpu.spec import Spec, load_spec

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_s3 import S3Client


def synth_template(
    spec: Spec, stack: str | None = None, *, nonce: str | None = None
) -> dict[str, Any]:
    """The CloudFormation template for ``spec`` as stack ``stack`` (from the Define layer);
    with ``nonce`` the service forces its new deployment (ecs_gpu.design.redeploy)."""
    # Imported here: only the commands that need a template pay for CDK.
    from ecs_gpu.cli.stages import stage_status
    from ecs_gpu.template.synth import synth_template as synth

    with stage_status(err_console) as stage:
        return synth(spec, stack_name=stack, stage=stage, force_new_deployment_nonce=nonce)


@contextmanager
def staged(
    cfn: CloudFormationClient,
    template: Mapping[str, Any],
    stack: str,
    bucket: staging.TemplateBucket | None,
    s3: S3Client | None,
) -> Iterator[staging.TemplateSource]:
    """The template's source for CloudFormation: inline, or staged in ``bucket`` and
    deleted again however the block ends (Ctrl-C included)."""
    source = staging.TemplateSource(template, stack, bucket=bucket, s3=s3)
    try:
        source.stage(cfn.meta.region_name)
        yield source
    finally:
        # A failure to delete it is a warning, not the command's fate.
        warning = source.remove()
        if warning is not None:
            err_console.print(f"[yellow]warning:[/] {escape(warning)}")


@dataclass(frozen=True)
class Prelude:
    """What diff and deploy both need before their change set."""

    spec: Spec
    stack: str
    aws: Aws
    staging: staging.TemplateBucket | None
    parameters: Mapping[str, str]
    template: dict[str, Any]


def prepare(
    spec: Path,
    stack: str | None,
    profile: str | None,
    region: str | None,
    bucket: str | None,
    prefix: str | None,
    update_ami: bool,
    before_synth: Callable[[Spec, Aws], None] | None = None,
) -> Prelude:
    """The spec, its notes, the session (checked before the seconds of synth), the
    template bucket, whether the update forces the service's new deployment (the
    running stack's owner and state first, then its capacity-provider strategy:
    ecs_gpu.design.redeploy), the AMI to pass, ``before_synth`` (deploy's preflight: a
    refusal costs no synth), then the template."""
    staging = template_bucket(bucket, prefix)
    s = load_spec(spec)
    design = Design.of(s)
    check_woken_task(design, str(spec))
    print_notes(s.warnings(str(spec)))
    name = stack_of(s, stack)
    aws = _aws(profile, region)
    staging = owned_by_caller(aws, staging)
    forced = dp.forced_deployment(aws("cloudformation"), design, str(spec), name, aws.region)
    if forced.warning is not None:
        say("warning:", "yellow", forced.warning)
    image = ami_cli.choose(
        aws("cloudformation"),
        aws("ssm"),
        aws("ec2"),
        name,
        spec_ami=s.capacity.ami_id,
        update_ami=update_ami,
    )
    if before_synth is not None:
        before_synth(s, aws)
    template = synth_template(s, name, nonce=forced.nonce)
    print_notes([forced.note] if forced.note else [])
    return Prelude(s, name, aws, staging, image.parameters, template)


@contextmanager
def json_first(spec: Path, json_out: Path | None) -> Iterator[None]:
    """Check --json before any AWS call; with ``-`` the human output goes to stderr
    for the block (and only the block: the next command in this process prints as usual)."""
    if json_out is not None:
        check_output(json_out, "--json", suffix=".json")
        check_distinct({"SPEC": spec}, {"--json": json_out})
    before = console.stderr
    console.stderr = is_stdout(json_out)
    try:
        yield
    finally:
        console.stderr = before


def write_json(json_out: Path, doc: Mapping[str, Any], what: str) -> None:
    write_text(json_out, json.dumps(doc, indent=2, default=str) + "\n", "--json")
    if not is_stdout(json_out):
        console.print(f"{what}: {escape(str(json_out))}", soft_wrap=True)
