"""``ecs-gpu diff`` and ``ecs-gpu deploy``: one prelude (:mod:`ecs_gpu.cli.prelude`), then
the change set.

Thin: parse, call :mod:`ecs_gpu.aws.deploy`, render. The ``run_*``
functions take clients, so tests drive them against moto (or a Stubber)
without going through argv.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import follow as fl
from ecs_gpu.aws import staging
from ecs_gpu.cli.ami import UpdateAmiOpt
from ecs_gpu.cli.options import (
    PollOpt,
    ProfileOpt,
    RegionOpt,
    SpecArg,
    StackOpt,
    TemplateBucketOpt,
    TemplatePrefixOpt,
    YesOpt,
    confirm,
    json_option,
)
from ecs_gpu.cli.preflight import SkipPreflightOpt, gate
from ecs_gpu.cli.prelude import json_first, prepare, staged, write_json
from ecs_gpu.cli.render import console, follow_to_end, render_outputs, render_summary
from ecs_gpu.design import redeploy
from ecs_gpu.errors import ProblemsFound

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_s3 import S3Client


def run_diff(
    cfn: CloudFormationClient,
    stack: str,
    template: Mapping[str, Any],
    *,
    service_name: str,
    waits: dp.Waits,
    region: str | None = None,
    bucket: staging.TemplateBucket | None = None,
    s3: S3Client | None = None,
    parameters: Mapping[str, str] | None = None,
) -> dp.Plan:
    """Preview; with ``bucket`` the template is staged there and deleted again."""
    with staged(cfn, template, stack, bucket, s3) as source:
        p = dp.diff(
            cfn,
            stack,
            template,
            waits=waits,
            region=region,
            service_name=service_name,
            source=source,
            parameters=parameters,
        )
    render_summary(stack, p.summary, new_stack=p.new_stack)
    return p


def run_deploy(
    cfn: CloudFormationClient,
    stack: str,
    template: Mapping[str, Any],
    *,
    service_name: str,
    yes: bool,
    waits: dp.Waits,
    region: str | None = None,
    ask: Callable[..., bool] = confirm,
    iam: IAMClient | None = None,
    bucket: staging.TemplateBucket | None = None,
    s3: S3Client | None = None,
    report: Callable[[dict[str, Any]], None] | None = None,
    parameters: Mapping[str, str] | None = None,
) -> fl.FollowResult | None:
    """Show the diff, confirm, execute, follow. None when nothing was done.

    ``service_name`` tags the stack as made from that spec (and refuses a
    stack made from another); with ``iam`` a new stack first gets ECS's
    service-linked role, which a fresh account lacks. With ``bucket`` the
    template is staged there (``s3``) and the object is deleted once the
    change set has been executed or deleted, whichever way this ends
    (Ctrl-C included: CloudFormation keeps its own copy of the template).
    ``report`` gets :func:`ecs_gpu.aws.deploy.deploy_document` once the deploy ends,
    failed included.
    """
    with staged(cfn, template, stack, bucket, s3) as source:
        return _deploy(
            cfn,
            stack,
            template,
            source,
            service_name=service_name,
            yes=yes,
            waits=waits,
            region=region,
            ask=ask,
            iam=iam,
            report=report,
            parameters=parameters,
        )


def _deploy(
    cfn: CloudFormationClient,
    stack: str,
    template: Mapping[str, Any],
    source: staging.TemplateSource,
    *,
    service_name: str,
    yes: bool,
    waits: dp.Waits,
    region: str | None,
    ask: Callable[..., bool],
    iam: IAMClient | None,
    report: Callable[[dict[str, Any]], None] | None,
    parameters: Mapping[str, str] | None = None,
) -> fl.FollowResult | None:
    p = dp.plan(
        cfn,
        stack,
        template,
        waits=waits,
        region=region,
        service_name=service_name,
        source=source,
        parameters=parameters,
    )
    render_summary(stack, p.summary, new_stack=p.new_stack)
    if p.summary.empty:
        console.print("Nothing to deploy.")
        # Unchanged: the outputs are still what a script came for.
        status, outs = (None, []) if p.stack_id is None else dp.stack_outputs(cfn, p.stack_id)
        render_outputs(stack, outs)
        if report is not None:
            report(dp.deploy_document(p, status, outs))
        return None
    try:
        go = ask(f"Deploy these changes to {stack}?", yes=yes, action="deploy")
    except BaseException:
        dp.discard(cfn, p)
        raise
    if not go:
        dp.discard(cfn, p)
        console.print("Cancelled: nothing was changed.")
        if report is not None:
            report(dp.deploy_document(p, None, []))
        return None
    if p.new_stack and iam is not None:
        ensure_service_linked_role(iam)
    stack_id, seen = dp.execute(cfn, p, template, waits=waits, source=source, region=region)
    try:
        result = follow_to_end(
            cfn, stack, stack_id, seen, waits, region=region, what="The deployment",
            forced_service=redeploy.forced_service(template),
        )  # fmt: skip
    except ProblemsFound:
        if report is not None:
            # A failed deploy still says how it ended (ROLLBACK_COMPLETE, ...).
            report(dp.deploy_document(p, dp.stack_status(cfn, stack_id), []))
        raise
    _, result.outputs = dp.stack_outputs(cfn, stack_id)
    render_outputs(stack, result.outputs)
    if report is not None:
        report(dp.deploy_document(p, result.status, result.outputs))
    return result


def ensure_service_linked_role(iam: IAMClient) -> None:
    """Create AWSServiceRoleForECS if missing; a denial says who can do it instead."""
    if dp.ensure_service_linked_role(iam):
        console.print(
            "Created the ECS service-linked role (AWSServiceRoleForECS): this account had "
            "none, and ECS needs it to create the cluster."
        )


def diff_cmd(
    spec: SpecArg,
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
    poll_interval: PollOpt = 5.0,
    bucket: TemplateBucketOpt = None,
    prefix: TemplatePrefixOpt = None,
    update_ami: UpdateAmiOpt = False,
    json_out: Annotated[Path | None, json_option("the change list")] = None,
) -> None:
    """Show what deploying SPEC would add, modify and replace. Changes nothing.

    For an existing stack this creates a CloudFormation change set, shows it
    and deletes it; replacing the ASG, launch template or service is called
    out loudly. For a new stack it lists the template's resources.

    Examples:

        ecs-gpu diff examples/g5-vllm.toml --region us-east-1

        ecs-gpu diff examples/g5-vllm.toml --json | jq '.changes[] | select(.replaces)'
    """
    with json_first(spec, json_out):
        pre = prepare(spec, stack, profile, region, bucket, prefix, update_ami)
        p = run_diff(
            pre.aws("cloudformation"),
            pre.stack,
            pre.template,
            waits=dp.Waits(poll_s=poll_interval),
            region=pre.aws.region,
            service_name=pre.spec.service.name,
            bucket=pre.staging,
            s3=pre.aws("s3") if pre.staging else None,
            parameters=pre.parameters,
        )
        if json_out is not None:
            write_json(json_out, p.as_dict(), "change list JSON")


def deploy_cmd(
    spec: SpecArg,
    yes: YesOpt = False,
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
    poll_interval: PollOpt = 5.0,
    bucket: TemplateBucketOpt = None,
    prefix: TemplatePrefixOpt = None,
    update_ami: UpdateAmiOpt = False,
    json_out: Annotated[
        Path | None, json_option("the change list, the final status and the stack outputs")
    ] = None,
    skip_preflight: SkipPreflightOpt = False,
) -> None:
    """Deploy SPEC: show the diff, ask, execute the change set, follow it live.

    On failure it prints the first failing resource's reason, leaves the
    stack as CloudFormation rolled it back, and exits 1; it never deletes a
    stack. Ctrl-C stops following, not the deployment. On success it prints
    the stack's outputs (cluster, service, ASG, load balancer DNS name).
    Region and credentials come from the standard AWS sources;
    AWS_ENDPOINT_URL is honoured.

    Examples:

        ecs-gpu deploy examples/g5-vllm.toml --yes

        ecs-gpu deploy examples/g5-vllm.toml --yes --json | jq -r .outputs.ServiceName

    A template over 51,200 bytes travels through a bucket you name:

        ecs-gpu deploy big.toml --template-bucket my-cfn-templates

    An existing stack keeps its GPU AMI; move the fleet to the recommended one
    (an instance refresh, one instance at a time):

        ecs-gpu deploy examples/g5-vllm.toml --update-ami
    """

    def report(doc: dict[str, Any]) -> None:
        if json_out is not None:
            write_json(json_out, doc, "deploy JSON")

    with json_first(spec, json_out):
        pre = prepare(
            spec, stack, profile, region, bucket, prefix, update_ami,
            lambda s, aws: gate(s, aws, skip=skip_preflight, spec_path=spec, stack=stack),
        )  # fmt: skip
        run_deploy(
            pre.aws("cloudformation"),
            pre.stack,
            pre.template,
            yes=yes,
            waits=dp.Waits(poll_s=poll_interval),
            region=pre.aws.region,
            service_name=pre.spec.service.name,
            iam=pre.aws("iam"),
            bucket=pre.staging,
            s3=pre.aws("s3") if pre.staging else None,
            report=report,
            parameters=pre.parameters,
        )
