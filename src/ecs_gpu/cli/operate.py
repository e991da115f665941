"""Operate commands: diff, deploy, destroy, verify metrics, verify scaling.

Thin: parse, call :mod:`ecs_gpu.aws.deploy` / :mod:`ecs_gpu.aws.verify`,
render. The ``run_*`` functions take clients, so tests drive them against
moto (or a Stubber) without going through argv.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from ecs_gpu import demand_metric, gpu_metric, terminal
from ecs_gpu import fast_path as fp
from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import verify as vf
from ecs_gpu.aws.clients import check_ready, client, make_session
from ecs_gpu.aws.errors import AccessDenied, mapped
from ecs_gpu.aws.stack_events import ChangeSummary, StackEvent, is_in_progress
from ecs_gpu.cli import ami as ami_cli
from ecs_gpu.cli import app, err_console, json_option, print_notes
from ecs_gpu.cli.ami import UpdateAmiOpt
from ecs_gpu.errors import BadInputError, EcsGpuError, ProblemsFound
from ecs_gpu.naming import Names, scalable_target_id, stack_name_of
from ecs_gpu.outputs import check_distinct, check_output, is_stdout, write_text
from ecs_gpu.signals import SignalPlan
from ecs_gpu.spec import Spec, load_spec

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_ecs import ECSClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_s3 import S3Client

console = terminal.console()

verify_app = typer.Typer(
    name="verify",
    help=(
        "Prove a deployed service works: the GPU metric (and, for a spec that scales on "
        "concurrency, the sidecars' concurrency metric) lands (verify metrics) and the "
        "scaling loop moves (verify scaling).\n\n"
        "Examples:\n\n"
        "    ecs-gpu verify metrics examples/g5-vllm.toml --timeout 900\n\n"
        "    ecs-gpu verify scaling examples/g5-vllm.toml --yes"
    ),
    no_args_is_help=True,
    rich_markup_mode="rich",
)
app.add_typer(verify_app, name="verify")

SpecArg = Annotated[Path, typer.Argument(help="The spec TOML file.", show_default=False)]
RegionOpt = Annotated[
    str | None,
    typer.Option("--region", help="AWS region (default: AWS_REGION or the profile's region)."),
]
ProfileOpt = Annotated[
    str | None, typer.Option("--profile", help="AWS profile (default: AWS_PROFILE).")
]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


def seconds(minimum: float, *, inclusive: bool = False) -> Callable[..., float]:
    """A click callback: a finite number of seconds above ``minimum`` (or at it, if inclusive).

    An interval of 0 polls AWS in a tight loop (and gets throttled), and
    "nan" passes click's own range check; both are refused naming the option.
    """

    def check(ctx: typer.Context, param: typer.CallbackParam, value: float) -> float:
        ok = math.isfinite(value) and (value >= minimum if inclusive else value > minimum)
        if not ok:
            bound = f"at least {minimum:g}" if inclusive else f"more than {minimum:g}"
            raise typer.BadParameter(
                f"{value:g} is not a number of seconds {bound}. Fix: e.g. "
                f"{param.opts[0]} {param.default:g}.",
                ctx=ctx,
                param=cast(Any, param),  # typer types it as its own subclass
            )
        return value

    return check


def optional_seconds(minimum: float, *, example: float) -> Callable[..., float | None]:
    """:func:`seconds` (inclusive) for an option whose default, None, means "pick for me"."""

    def check(ctx: typer.Context, param: typer.CallbackParam, value: float | None) -> float | None:
        if value is None:
            return None
        if not (math.isfinite(value) and value >= minimum):
            raise typer.BadParameter(
                f"{value:g} is not a number of seconds at least {minimum:g}. Fix: e.g. "
                f"{param.opts[0]} {example:g}.",
                ctx=ctx,
                param=cast(Any, param),
            )
        return value

    return check


PollOpt = Annotated[
    float,
    typer.Option(
        "--poll-interval", callback=seconds(0), help="Seconds between status polls (> 0)."
    ),
]
StackOpt = Annotated[
    str | None,
    typer.Option(
        "--stack",
        help="Stack name (default: the spec's service.name). Deploy one spec as several "
        "stacks, e.g. --stack vllm-g5-staging.",
        show_default=False,
    ),
]

TemplateBucketOpt = Annotated[
    str | None,
    typer.Option(
        "--template-bucket",
        help="An S3 bucket of yours, in the stack's Region, to stage the template in "
        "(needed over CloudFormation's 51,200-byte inline limit). ecs-gpu uploads one "
        "object and deletes it afterwards; it never creates a bucket.",
        show_default=False,
    ),
]
TemplatePrefixOpt = Annotated[
    str,
    typer.Option("--template-prefix", help="Key prefix for the staged template object."),
]
# S3's bucket naming rules (general purpose buckets): 3-63 lowercase letters,
# digits, dots and hyphens, starting and ending with a letter or digit.
_BUCKET_NAME_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
# EC2 Auto Scaling: AutoScalingGroupName is 1 to 255 characters (API reference).
ASG_NAME_MAX = 255


def template_bucket(bucket: str | None, prefix: str) -> dp.TemplateBucket | None:
    """The --template-bucket/--template-prefix pair, checked before any call (exit 2)."""
    if bucket is None:
        return None
    if not _BUCKET_NAME_RE.fullmatch(bucket):
        raise BadInputError(
            f"--template-bucket {bucket!r}: not an S3 bucket name (3-63 lowercase letters, "
            "digits, dots and hyphens). Fix: pass the bare name, e.g. --template-bucket "
            "my-cfn-templates, not an s3:// or https:// URL."
        )
    if prefix.startswith("/") or any(not c.isprintable() for c in prefix):
        raise BadInputError(
            f"--template-prefix {prefix!r}: an S3 key prefix must not start with '/' or "
            "contain control characters. Fix: e.g. --template-prefix ecs-gpu/."
        )
    return dp.TemplateBucket(bucket, prefix)


def owned_by_caller(aws: Aws, staging: dp.TemplateBucket | None) -> dp.TemplateBucket | None:
    """The bucket, to be owned by the caller's account (GetCallerIdentity needs no permission)."""
    if staging is None:
        return None
    with mapped("sts", "GetCallerIdentity"):
        account = str(aws("sts").get_caller_identity()["Account"])
    return dataclasses.replace(staging, owner=account)


def stack_of(spec: Spec, stack: str | None) -> str:
    """``--stack`` (checked against CloudFormation's name rule), else the spec's stack name."""
    return stack_name_of(spec, stack)


def names_of(spec: Spec, stack: str | None) -> Names:
    """The physical names of ``spec`` deployed as stack ``stack`` (the spec's own by default)."""
    return Names.for_deployment(spec, stack)


@dataclass
class Aws:
    """The clients a command needs, made once from the standard AWS sources."""

    region: str | None
    session: Any

    def __call__(self, service: str, *, fail_fast: bool = False) -> Any:
        return client(self.session, service, fail_fast=fail_fast)


def _aws(profile: str | None, region: str | None) -> Aws:
    """The session, its region and credentials resolved: before any synth or AWS call."""
    session = make_session(profile, region)
    check_ready(session)
    return Aws(region=session.region_name, session=session)


def synth_template(spec: Spec, stack: str | None = None) -> dict[str, Any]:
    """The CloudFormation template for ``spec`` as stack ``stack`` (from the Define layer)."""
    # Imported here: only the commands that need a template pay for CDK.
    from ecs_gpu.cli.stages import stage_status
    from ecs_gpu.synth import synth_template as synth

    with stage_status(err_console) as stage:
        return synth(spec, stack_name=stack, stage=stage)


def confirm(question: str, *, yes: bool, action: str) -> bool:
    """Ask, unless --yes. With no terminal to ask on, refuse rather than hang."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise BadInputError(
            f"refusing to {action} without --yes: stdin is not a terminal, so there is no one "
            "to confirm. Fix: read the summary above and rerun with --yes."
        )
    try:
        # The question goes where the summary went (stderr when stdout carries JSON).
        return typer.confirm(question, default=False, err=console.stderr)
    except typer.Abort:
        # Ctrl-C / Ctrl-D at the question: click would print "Aborted!" and
        # exit 1 ("problems found"); it is an interruption, and nothing changed.
        raise EcsGpuError(
            f"{action} cancelled at the question: nothing was changed.",
            exit_code=dp.EXIT_INTERRUPTED,
        ) from None


# --- rendering --------------------------------------------------------------------

_ACTION_STYLE = {"Add": ("+", "green"), "Modify": ("~", "yellow"), "Remove": ("-", "red")}


def render_summary(stack: str, summary: ChangeSummary, *, new_stack: bool) -> None:
    if summary.empty:
        console.print(f"Stack [bold]{escape(stack)}[/]: no changes.")
        return
    counts = summary.counts()
    parts = [f"{counts.get(a, 0)} to {a.lower()}" for a in ("Add", "Modify", "Remove")]
    what = "new stack" if new_stack else "existing stack"
    console.print(f"Stack [bold]{escape(stack)}[/] ({what}): " + ", ".join(parts))
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for col in ("", "type", "logical id", "replacement"):
        # Types and ids are what users copy and search for: never cut or wrapped.
        table.add_column(col, no_wrap=True)
    for c in summary.changes:
        sign, style = _ACTION_STYLE.get(c.action, ("?", "white"))
        repl = ""
        if c.replacement and c.action == "Modify":
            repl = f"[bold red]{c.replacement}[/]" if c.replaces else c.replacement
        table.add_row(f"[{style}]{sign}[/]", escape(c.resource_type), escape(c.logical_id), repl)
    terminal.print_table(console, table)
    for c in summary.loud_replacements:
        console.print(
            f"[bold red]REPLACEMENT:[/] {escape(c.logical_id)} ({c.resource_type}) will be "
            f"replaced (Replacement={c.replacement}): "
            + _REPLACEMENT_IMPACT.get(c.resource_type, "it is deleted and created anew."),
            soft_wrap=True,
        )


_REPLACEMENT_IMPACT = {
    "AWS::AutoScaling::AutoScalingGroup": (
        "a new GPU fleet launches and the old one is terminated: cold boots, image pulls, "
        "model loads, and a capacity gap meanwhile."
    ),
    "AWS::EC2::LaunchTemplate": (
        "instances launched from now on use the new template; running ones are not replaced "
        "until they are recycled."
    ),
    "AWS::ECS::Service": (
        "the service is deleted and created anew: every task stops, and traffic fails until "
        "the new tasks are healthy."
    ),
}


def _progress() -> Progress:
    """The live status line every long wait shows (transient: it leaves no trace)."""
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


def _event_style(e: StackEvent) -> str:
    if e.failed:
        return "red"
    if e.status.endswith("_COMPLETE") and "ROLLBACK" not in e.status:
        return "green"
    if "ROLLBACK" in e.status:
        return "yellow"
    return "white"


def follow_with_progress(
    cfn: CloudFormationClient,
    stack: str,
    stack_id: str,
    seen: set[str],
    waits: dp.Waits,
    *,
    stuck_after_s: float | None = None,
) -> dp.FollowResult:
    """Follow stack events live: one line per event, a spinner with the status."""
    with _progress() as progress:
        task = progress.add_task(f"{stack}: starting", total=None)

        def on_event(e: StackEvent) -> None:
            progress.console.print(f"[{_event_style(e)}]{escape(e.line())}[/]", soft_wrap=True)

        def on_status(status: str, elapsed: float) -> None:
            progress.update(task, description=f"{stack}: {status}")

        return dp.follow(
            cfn,
            stack_id,
            seen,
            on_event=on_event,
            on_status=on_status,
            waits=waits,
            stuck_after_s=stuck_after_s,
        )


def _interrupted(stack: str, region: str | None, what: str) -> dp.StackInterrupted:
    return dp.StackInterrupted(
        f"stopped following stack {stack} (Ctrl-C). {what} carries on in CloudFormation, and "
        "ecs-gpu leaves the stack as CloudFormation has it (nothing is cancelled or deleted). "
        + dp.follow_hint(stack, region).capitalize()
        + ", or run ecs-gpu again once it has finished."
    )


def _report_failure(result: dp.FollowResult, stack: str, region: str | None) -> ProblemsFound:
    f = result.failure
    cause = (
        f"first failure: {f.logical_id} ({f.resource_type}) {f.status}: "
        f"{f.reason or 'no reason given'}"
        if f
        else "CloudFormation reported no failing resource"
    )
    return ProblemsFound(
        f"stack {stack} ended {result.status}; {cause}. The stack is left as CloudFormation "
        f"left it; ecs-gpu does not delete it. See every event: "
        + dp.follow_hint(stack, region)
        + "."
    )


def _follow_to_end(
    cfn: CloudFormationClient,
    stack: str,
    stack_id: str,
    seen: set[str],
    waits: dp.Waits,
    *,
    region: str | None,
    what: str,
    stuck_after_s: float | None = None,
) -> dp.FollowResult:
    """Follow a deploy or delete to its end; every way it can end becomes one message.

    Ctrl-C stops following (the stack is left alone), a delete stuck past
    ``stuck_after_s`` is explained, a failure names the first failing resource.
    """
    try:
        result = follow_with_progress(
            cfn, stack, stack_id, seen, waits, stuck_after_s=stuck_after_s
        )
    except KeyboardInterrupt:
        raise _interrupted(stack, region, what) from None
    if result.stuck:
        raise ProblemsFound(
            f"stack {stack} is still DELETE_IN_PROGRESS after {stuck_after_s or 0:.0f} s; "
            "ecs-gpu stops waiting here (CloudFormation carries on):\n  - "
            + "\n  - ".join(result.stuck)
            + "\n"
            + dp.follow_hint(stack, region).capitalize()
            + "."
        )
    if not result.ok:
        raise _report_failure(result, stack, region)
    console.print(f"[green]Stack {escape(stack)} is {result.status}.[/]")
    return result


# --- diff / deploy ----------------------------------------------------------------


def run_diff(
    cfn: CloudFormationClient,
    stack: str,
    template: Mapping[str, Any],
    *,
    service_name: str,
    waits: dp.Waits,
    region: str | None = None,
    bucket: dp.TemplateBucket | None = None,
    s3: S3Client | None = None,
    parameters: Mapping[str, str] | None = None,
) -> dp.Plan:
    """Preview; with ``bucket`` the template is staged there and deleted again."""
    with _staged(cfn, template, stack, bucket, s3) as source:
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


@contextmanager
def _staged(
    cfn: CloudFormationClient,
    template: Mapping[str, Any],
    stack: str,
    bucket: dp.TemplateBucket | None,
    s3: S3Client | None,
) -> Iterator[dp.TemplateSource]:
    """The template's source for CloudFormation: inline, or staged in ``bucket`` and
    deleted again however the block ends (Ctrl-C included)."""
    source = dp.TemplateSource(template, stack, bucket=bucket, s3=s3)
    try:
        source.stage(cfn.meta.region_name)
        yield source
    finally:
        # A failure to delete it is a warning, not the command's fate.
        warning = source.remove()
        if warning is not None:
            terminal.console(stderr=True).print(f"[yellow]warning:[/] {escape(warning)}")


def render_outputs(stack: str, outs: Sequence[dp.StackOutput]) -> None:
    """The stack's outputs after a deploy, as `cdk deploy` prints them."""
    if not outs:
        return
    console.print(f"Outputs of stack [bold]{escape(stack)}[/]:")
    for o in outs:
        # soft_wrap: a name or id broken over two lines cannot be copied.
        console.print(f"  {escape(o.key)} = {escape(o.value)}", soft_wrap=True)


def deploy_document(
    p: dp.Plan, status: str | None, outs: Sequence[dp.StackOutput]
) -> dict[str, Any]:
    """What ``deploy --json`` writes: the change list, the final status and the outputs.

    ``status`` is None when nothing was executed (cancelled at the question).
    """
    return {**p.as_dict(), "status": status, "outputs": {o.key: o.value for o in outs}}


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
    bucket: dp.TemplateBucket | None = None,
    s3: S3Client | None = None,
    report: Callable[[dict[str, Any]], None] | None = None,
    parameters: Mapping[str, str] | None = None,
) -> dp.FollowResult | None:
    """Show the diff, confirm, execute, follow. None when nothing was done.

    ``service_name`` tags the stack as made from that spec (and refuses a
    stack made from another); with ``iam`` a new stack first gets ECS's
    service-linked role, which a fresh account lacks. With ``bucket`` the
    template is staged there (``s3``) and the object is deleted once the
    change set has been executed or deleted, whichever way this ends
    (Ctrl-C included: CloudFormation keeps its own copy of the template).
    ``report`` gets :func:`deploy_document` once the deploy ends, failed included.
    """
    with _staged(cfn, template, stack, bucket, s3) as source:
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
    source: dp.TemplateSource,
    *,
    service_name: str,
    yes: bool,
    waits: dp.Waits,
    region: str | None,
    ask: Callable[..., bool],
    iam: IAMClient | None,
    report: Callable[[dict[str, Any]], None] | None,
    parameters: Mapping[str, str] | None = None,
) -> dp.FollowResult | None:
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
            report(deploy_document(p, status, outs))
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
            report(deploy_document(p, None, []))
        return None
    if p.new_stack and iam is not None:
        ensure_service_linked_role(iam)
    stack_id, seen = dp.execute(cfn, p, template, waits=waits, source=source)
    try:
        result = _follow_to_end(
            cfn, stack, stack_id, seen, waits, region=region, what="The deployment"
        )
    except ProblemsFound:
        if report is not None:
            # A failed deploy still says how it ended (ROLLBACK_COMPLETE, ...).
            report(deploy_document(p, dp.stack_status(cfn, stack_id), []))
        raise
    _, result.outputs = dp.stack_outputs(cfn, stack_id)
    render_outputs(stack, result.outputs)
    if report is not None:
        report(deploy_document(p, result.status, result.outputs))
    return result


def ensure_service_linked_role(iam: IAMClient) -> None:
    """Create AWSServiceRoleForECS if missing; a denial says who can do it instead."""
    try:
        created = dp.ensure_ecs_service_linked_role(iam)
    except AccessDenied as e:
        e.message += (
            " Or have an administrator create the role once for the account: `aws iam "
            f"create-service-linked-role --aws-service-name {dp.ECS_SERVICE_PRINCIPAL}`. "
            "Nothing was deployed."
        )
        e.args = (e.message,)
        raise
    if created:
        console.print(
            "Created the ECS service-linked role (AWSServiceRoleForECS): this account had "
            "none, and ECS needs it to create the cluster."
        )


@app.command("diff")
def diff_cmd(
    spec: SpecArg,
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
    poll_interval: PollOpt = 5.0,
    bucket: TemplateBucketOpt = None,
    prefix: TemplatePrefixOpt = dp.DEFAULT_TEMPLATE_PREFIX,
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
    with _json_first(spec, json_out):
        pre = _prelude(spec, stack, profile, region, bucket, prefix, update_ami)
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
            _write_json(json_out, p.as_dict(), "change list JSON")


@dataclass(frozen=True)
class _Prelude:
    """What diff and deploy both need before their change set."""

    spec: Spec
    stack: str
    aws: Aws
    staging: dp.TemplateBucket | None
    parameters: Mapping[str, str]
    template: dict[str, Any]


def _prelude(
    spec: Path,
    stack: str | None,
    profile: str | None,
    region: str | None,
    bucket: str | None,
    prefix: str,
    update_ami: bool,
) -> _Prelude:
    """The spec, its notes, the session (checked before the seconds of synth), the
    template bucket, the AMI to pass, then the template."""
    staging = template_bucket(bucket, prefix)
    s = load_spec(spec)
    print_notes(s.warnings(str(spec)))
    name = stack_of(s, stack)
    aws = _aws(profile, region)
    staging = owned_by_caller(aws, staging)
    image = ami_cli.choose(
        aws("cloudformation"),
        aws("ssm"),
        aws("ec2"),
        name,
        spec_ami=s.capacity.ami_id,
        update_ami=update_ami,
    )
    return _Prelude(s, name, aws, staging, image.parameters, synth_template(s, name))


@contextmanager
def _json_first(spec: Path, json_out: Path | None) -> Iterator[None]:
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


def _write_json(json_out: Path, doc: Mapping[str, Any], what: str) -> None:
    write_text(json_out, json.dumps(doc, indent=2, default=str) + "\n", "--json")
    if not is_stdout(json_out):
        console.print(f"{what}: {escape(str(json_out))}", soft_wrap=True)


@app.command("deploy")
def deploy_cmd(
    spec: SpecArg,
    yes: YesOpt = False,
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
    poll_interval: PollOpt = 5.0,
    bucket: TemplateBucketOpt = None,
    prefix: TemplatePrefixOpt = dp.DEFAULT_TEMPLATE_PREFIX,
    update_ami: UpdateAmiOpt = False,
    json_out: Annotated[
        Path | None, json_option("the change list, the final status and the stack outputs")
    ] = None,
    skip_preflight: Annotated[
        bool,
        typer.Option(
            "--skip-preflight",
            help="Deploy without `ecs-gpu preflight`'s checks (quota, offerings, AMI, "
            "reservation, secrets, image, network), which otherwise refuse on an error.",
        ),
    ] = False,
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
            _write_json(json_out, doc, "deploy JSON")

    with _json_first(spec, json_out):
        pre = _prelude(spec, stack, profile, region, bucket, prefix, update_ami)
        from ecs_gpu.cli.preflight import gate  # imports this module: imported here

        gate(pre.spec, pre.aws, skip=skip_preflight, spec_path=spec)
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


# --- destroy ----------------------------------------------------------------------


@dataclass(frozen=True)
class Deployed:
    """The physical names of a deployed stack's cluster, service and ASG."""

    cluster: str
    service: str
    asg: str

    @property
    def service_name(self) -> str:
        # A service's physical id is its ARN (.../service/CLUSTER/NAME).
        return self.service.rsplit("/", 1)[-1]

    @property
    def scalable_target_resource_id(self) -> str:
        return scalable_target_id(self.cluster, self.service_name)

    @classmethod
    def of(cls, resources: list[dp.StackResource], names: Names) -> Deployed:
        """From the stack's own resources (right for any --stack); the spec's names if absent."""
        return cls(
            cluster=dp.physical_of(resources, "AWS::ECS::Cluster") or names.cluster,
            service=dp.physical_of(resources, "AWS::ECS::Service") or names.service,
            asg=dp.physical_of(resources, "AWS::AutoScaling::AutoScalingGroup") or names.asg,
        )


def _half_done(names: Deployed) -> str:
    """What a destroy that stopped before DeleteStack leaves behind, and the two ways on."""
    rid = names.scalable_target_resource_id
    return (
        " The stack is still there, but destroy may already have set the service's desired "
        "count to 0, suspended its autoscaling (minimum 0) and unprotected its instances. "
        "Finish with `ecs-gpu destroy SPEC`, or keep the service: `aws application-autoscaling "
        f"register-scalable-target --service-namespace ecs --resource-id {rid} "
        "--scalable-dimension ecs:service:DesiredCount --min-capacity MIN_TASKS "
        "--suspended-state DynamicScalingInSuspended=false,DynamicScalingOutSuspended=false,"
        f"ScheduledScalingSuspended=false` and `aws ecs update-service --cluster {names.cluster} "
        f"--service {names.service_name} --desired-count MIN_TASKS` (MIN_TASKS: [scaling] "
        "min_tasks)."
    )


def _prepare_delete(
    ecs: ECSClient,
    autoscaling: AutoScalingClient,
    appscaling: ApplicationAutoScalingClient,
    cfn: CloudFormationClient,
    deployed: Deployed,
    state: dp.StackState,
    *,
    task_timeout_s: float,
    waits: dp.Waits,
) -> set[str]:
    """Steps 1-4 of destroy: hold scaling at 0, stop the tasks, unprotect, DeleteStack."""
    cluster, service, asg = deployed.cluster, deployed.service, deployed.asg
    if dp.hold_scaling_at_zero(appscaling, deployed.scalable_target_resource_id):
        console.print("Suspended the service's autoscaling and set its minimum to 0.")
    if dp.scale_service_to_zero(ecs, cluster, service):
        console.print(
            f"Scaled service {escape(deployed.service_name)} to 0 tasks; waiting for them."
        )
        alive = dp.wait_tasks_stopped(ecs, cluster, service, timeout_s=task_timeout_s, waits=waits)
        if alive:
            console.print(
                f"[yellow]{len(alive)} task(s) still stopping after {task_timeout_s:.0f} s; "
                "deleting anyway (CloudFormation waits for them).[/]"
            )
    unprotected = dp.unprotect_instances(autoscaling, asg)
    if unprotected:
        console.print(
            f"Removed scale-in protection from {len(unprotected)} instance(s) of "
            f"{escape(asg)}, so CloudFormation can terminate them."
        )
    return dp.delete_stack(cfn, state.stack_id)


def run_destroy(
    cfn: CloudFormationClient,
    ecs: ECSClient,
    autoscaling: AutoScalingClient,
    appscaling: ApplicationAutoScalingClient,
    names: Names,
    *,
    yes: bool,
    waits: dp.Waits,
    task_timeout_s: float,
    stuck_after_s: float,
    region: str | None = None,
    ask: Callable[..., bool] = confirm,
    stack: str | None = None,
    service_name: str | None = None,
) -> dp.FollowResult | None:
    """Scale to zero, unprotect the fleet, delete the stack, follow it.

    ``stack`` (``--stack``) defaults to the spec's stack name. A stack that
    ecs-gpu did not deploy, or deployed from a spec other than the one named
    ``service_name`` (default: ``names.service_name``), is refused (exit 2)
    before anything is shown or changed.
    """
    stack = stack if stack is not None else names.stack
    state = dp.stack_state(cfn, stack)
    if state is None:
        console.print(f"Stack {escape(stack)} does not exist: nothing to delete.")
        return None
    owner = service_name if service_name is not None else names.service_name
    dp.check_owned(state, owner, action="delete")
    resources = [r for r in dp.stack_resources(cfn, stack) if r.logical_id]
    deployed = Deployed.of(resources, names)
    console.print(f"Stack [bold]{escape(stack)}[/] ({state.status}) and everything in it:")
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for col in ("", "type", "logical id", "physical id"):
        table.add_column(col, no_wrap=True)
    for r in resources:
        table.add_row(
            "[red]-[/]", escape(r.resource_type), escape(r.logical_id), escape(r.physical_id)
        )
    terminal.print_table(console, table)
    if state.status != "DELETE_IN_PROGRESS":
        if is_in_progress(state.status):
            raise ProblemsFound(
                f"stack {stack} is {state.status}: wait for that operation to end; "
                + dp.follow_hint(stack, region)
                + "."
            )
        console.print(
            "This stops every task, terminates the GPU instances and deletes the service's "
            "logs and dashboard."
        )
        if not ask(f"Delete stack {stack}?", yes=yes, action="destroy"):
            console.print("Cancelled: nothing was changed.")
            return None
        try:
            seen = _prepare_delete(
                ecs,
                autoscaling,
                appscaling,
                cfn,
                deployed,
                state,
                task_timeout_s=task_timeout_s,
                waits=waits,
            )
        except KeyboardInterrupt:
            raise EcsGpuError(
                "interrupted before the stack delete started." + _half_done(deployed),
                exit_code=dp.EXIT_INTERRUPTED,
            ) from None
        except EcsGpuError as e:
            # Same error and exit code (a denial stays exit 3), plus what is left.
            e.message += _half_done(deployed)
            e.args = (e.message,)
            raise
    else:
        console.print("A delete is already in progress; following it.")
        seen = set()
    return _follow_to_end(
        cfn,
        stack,
        state.stack_id,
        seen,
        waits,
        region=region,
        what="The delete",
        stuck_after_s=stuck_after_s,
    )


@app.command("destroy")
def destroy_cmd(
    spec: SpecArg,
    yes: YesOpt = False,
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
    poll_interval: PollOpt = 5.0,
    task_timeout: Annotated[
        float,
        typer.Option(
            "--task-timeout",
            callback=seconds(0, inclusive=True),
            help="Seconds to wait for tasks to stop (0: do not wait).",
        ),
    ] = 600.0,
    stuck_after: Annotated[
        float,
        typer.Option(
            "--stuck-after",
            callback=seconds(0),
            help="Seconds of DELETE_IN_PROGRESS after which the hang is explained, not waited on.",
        ),
    ] = 1800.0,
) -> None:
    """Delete the stack of SPEC without the known hang.

    Shows what will be deleted and asks; scales the service to 0 (and
    suspends its autoscaling), waits for its tasks to stop, removes scale-in
    protection from the ASG's instances, then deletes the stack and follows
    it. A delete stuck longer than --stuck-after is explained, not waited on.
    Only a stack ecs-gpu deployed from this spec is deleted (its ecs-gpu:spec
    tag); any other is refused with exit 2.

    Example:

        ecs-gpu destroy examples/g5-vllm.toml
    """
    s = load_spec(spec)
    name = stack_of(s, stack)
    aws = _aws(profile, region)
    run_destroy(
        aws("cloudformation"),
        aws("ecs"),
        aws("autoscaling"),
        aws("application-autoscaling"),
        names_of(s, stack),
        yes=yes,
        waits=dp.Waits(poll_s=poll_interval),
        task_timeout_s=task_timeout,
        stuck_after_s=stuck_after,
        region=aws.region,
        stack=name,
        service_name=s.service.name,
    )


# --- verify -----------------------------------------------------------------------


def _series_table(title: str, count_label: str, series: Sequence[vf.Series]) -> Table:
    table = Table(title=title, show_header=True, header_style="bold")
    for col in ("series", count_label, "latest"):
        table.add_column(col, justify="left" if col == "series" else "right", no_wrap=True)
    for s in series:
        latest = "-" if s.latest is None else f"{s.latest:g}"
        mark = "[green]present[/]" if s.present else "[red]MISSING[/]"
        table.add_row(f"{s.metric} {mark}", str(s.datapoints), latest)
    return table


def render_series(report: vf.MetricsReport) -> None:
    title = f"{gpu_metric.NAMESPACE} by {gpu_metric.DIMENSION}={report.asg}"
    terminal.print_table(console, _series_table(title, "datapoints", report.series))
    if report.source is not None:
        title = f"{report.source.where}, {demand_metric.ALARM_PERIOD_S}-s periods"
        terminal.print_table(console, _series_table(title, "periods", report.concurrency))


def concurrency_source(spec: Spec, names: Names) -> vf.ConcurrencySource | None:
    """What the sidecars of ``spec`` read and publish; None when it scales on a GPU signal."""
    m = spec.service.metrics
    if not SignalPlan.of(spec.scaling).tracks_concurrency or m is None:
        return None
    return vf.ConcurrencySource(
        cluster=names.cluster,
        service=names.service,
        prometheus_series=m.names,
        port=m.port or spec.service.container_port,
        path=m.path,
    )


def run_verify_metrics(
    cw: CloudWatchClient,
    asg: str,
    *,
    timeout_s: float,
    interval_s: float,
    window_s: float,
    sleep: Callable[[float], None] = time.sleep,
    concurrency: vf.ConcurrencySource | None = None,
) -> vf.MetricsReport:
    total = len(gpu_metric.METRIC_NAMES)
    what = f"{total} GPU series of {asg}"
    if concurrency is not None:
        what += f" and {demand_metric.METRIC_NAME} of {concurrency.service}"
    with _progress() as progress:
        task = progress.add_task(f"waiting for {what}", total=None)

        def on_attempt(n: int, series: list[vf.Series]) -> None:
            have = sum(1 for s in series if s.present)
            progress.update(
                task,
                description=f"attempt {n}: {have}/{len(series)} series have datapoints "
                f"({what}; timeout {timeout_s:.0f} s)",
            )

        report = vf.verify_metrics(
            cw,
            asg,
            timeout_s=timeout_s,
            interval_s=interval_s,
            window_s=window_s,
            on_attempt=on_attempt,
            sleep=sleep,
            concurrency=concurrency,
        )
    render_series(report)
    if not report.ok:
        heads, lines = [], []
        if report.gpu_missing:
            heads.append(
                f"{len(report.gpu_missing)} of {total} GPU series missing for ASG {asg} after "
                f"{timeout_s:.0f} s: {', '.join(report.gpu_missing)}."
            )
        if report.concurrency_missing and concurrency is not None:
            heads.append(
                f"The concurrency series {concurrency.where} has no datapoint after "
                f"{timeout_s:.0f} s."
            )
        for metric in report.missing:
            for cause in report.causes.get(metric, []):
                lines.append(f"  - {metric}: {cause}")
        raise ProblemsFound(" ".join(heads) + "\n" + "\n".join(lines))
    console.print(f"[green]All {total} GPU series of {escape(asg)} have datapoints.[/]")
    if concurrency is not None:
        mean = report.concurrency[0]
        console.print(
            f"[green]The concurrency series {escape(concurrency.where)} has datapoints:[/] "
            f"{mean.datapoints} {demand_metric.ALARM_PERIOD_S}-s period(s), latest mean per "
            f"task {mean.latest:g}.",
            soft_wrap=True,
        )
    return report


@verify_app.command("metrics")
def verify_metrics_cmd(
    spec: Annotated[
        Path | None, typer.Argument(help="The spec TOML file (or give --asg).", show_default=False)
    ] = None,
    asg: Annotated[
        str | None, typer.Option("--asg", help="The Auto Scaling group name, instead of a spec.")
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            callback=seconds(0, inclusive=True),
            help="Seconds to wait for every series (0: check once).",
        ),
    ] = 600.0,
    interval: Annotated[
        float,
        typer.Option("--interval", callback=seconds(0), help="Seconds between checks (> 0)."),
    ] = 30.0,
    window: Annotated[
        float,
        typer.Option(
            "--window",
            callback=seconds(60, inclusive=True),
            help="How recent a datapoint must be, seconds (at least 60).",
        ),
    ] = float(vf.DEFAULT_WINDOW_S),
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
) -> None:
    """Wait until every GPU series of the metric contract has recent datapoints.

    Checks nvidia_smi_utilization_gpu, nvidia_smi_memory_used and
    nvidia_smi_memory_total in CWAgent by AutoScalingGroupName. With a SPEC
    that scales on concurrency, also the sidecars' EcsGpu/Serving
    ConcurrentRequestsPerTask by ClusterName and ServiceName. Exit 0 when
    all are present; 1 naming each missing series with its likely cause
    (agent or sidecar not publishing, PutMetricData denied, wrong
    dimension). With a task-gpus SPEC it also reports AWS/ECS GPUReservation
    of the cluster, the policy's divisor (a warning when it has no data; not
    the exit code).

    Example:

        ecs-gpu verify metrics examples/g5-vllm.toml --timeout 900
    """
    if (spec is None) == (asg is None):
        raise BadInputError(
            "give exactly one of SPEC or --asg NAME. Fix: e.g. `ecs-gpu verify metrics "
            "examples/g5-vllm.toml` or `ecs-gpu verify metrics --asg vllm-g5-gpu-asg`."
        )
    if asg is not None and stack is not None:
        raise BadInputError(
            "--stack finds the ASG of SPEC deployed as that stack; with --asg it has nothing "
            "to do. Fix: give SPEC --stack NAME, or --asg NAME alone."
        )
    if asg is not None and not 1 <= len(asg) <= ASG_NAME_MAX:
        # Checked here, not by botocore after the session is made: a flag's fault.
        raise BadInputError(
            f"--asg {asg!r}: an Auto Scaling group name has 1 to {ASG_NAME_MAX} characters, "
            f"this one {len(asg)}. Fix: pass the group's name (`aws autoscaling "
            "describe-auto-scaling-groups --query 'AutoScalingGroups[].AutoScalingGroupName'`), "
            "or the spec instead."
        )
    loaded = None if spec is None else load_spec(spec)
    names = None if loaded is None else names_of(loaded, stack)
    group = asg if names is None else names.asg
    assert group is not None  # exactly one of the two was given
    aws = _aws(profile, region)
    # --timeout 0 checks once: an endpoint that never answers must not hold it for minutes.
    cw = aws("cloudwatch", fail_fast=timeout == 0)
    # With signal "concurrency" no policy divides by GPUReservation (unless
    # the GPU guard does).
    divisor = loaded is not None and SignalPlan.of(loaded.scaling).divides_by_reservation
    source = None if loaded is None or names is None else concurrency_source(loaded, names)
    try:
        run_verify_metrics(
            cw,
            group,
            timeout_s=timeout,
            interval_s=interval,
            window_s=window,
            concurrency=source,
        )
    except ProblemsFound:
        # The series were read (only an AWS error ends the wait otherwise).
        if names is not None and divisor:
            report_divisor(cw, names.cluster, window_s=window)
        raise
    if names is not None and divisor:
        report_divisor(cw, names.cluster, window_s=window)


def report_divisor(cw: CloudWatchClient, cluster: str, *, window_s: float) -> None:
    """Say whether the task-gpus divisor has data; informational, never the exit code.

    The contract's three series are what the agent owes; GPUReservation is
    ECS's, and ECS writes it only while a task runs, so its absence is a
    state of the service to report, not a broken agent.
    """
    where = (
        f"{gpu_metric.RESERVATION_NAMESPACE} {gpu_metric.RESERVATION_METRIC} "
        f"({gpu_metric.RESERVATION_DIMENSION}={cluster})"
    )
    try:
        r = vf.fetch_reservation(cw, cluster, window_s=window_s)
    except EcsGpuError as e:
        console.print(f"[yellow]note:[/] could not read {escape(where)}: {escape(e.message)}")
        return
    if r.present and r.latest is not None:
        console.print(
            f"{escape(where)}, the divisor the task-gpus policy tracks: {r.datapoints} "
            f"datapoint(s), latest {r.latest:g} %."
        )
        return
    console.print(
        f"[yellow]warning:[/] {escape(where)} has no datapoint in the window. The task-gpus "
        "policy divides the GPU utilization by it, so target tracking has no data: ECS writes "
        "it only while the cluster runs a task. Check the service's running tasks "
        "(`ecs-gpu doctor SPEC`, MET004).",
        soft_wrap=True,
    )


def run_verify_scaling(
    cw: CloudWatchClient,
    ecs: ECSClient,
    appscaling: ApplicationAutoScalingClient,
    names: Names,
    *,
    yes: bool,
    publish_interval_s: float,
    poll_s: float,
    scale_out_timeout_s: float,
    scale_in_timeout_s: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    publisher: vf.Publisher | None = None,
    fast: fp.FastPath | None = None,
    concurrency_target: float | None = None,
    wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    pace: vf.Pace | None = None,
) -> vf.ScalingResult:
    """With ``fast`` or ``concurrency_target`` (a spec on the concurrency signal), drive
    the sidecars' series.

    With ``fast`` high is inside the fast path's first step (above its
    threshold); it first checks that the service has the fast path (missing:
    a warning, and exit 1 after the test), and after the scale-out the first
    scaling activity says whether the fast path decided it. With
    ``concurrency_target`` alone (the fast path off) high is twice the
    target, for target tracking. Low is 0 (below the target).
    """
    target = fast.target if fast is not None else concurrency_target
    concurrency = target is not None
    signal = (
        f"{demand_metric.METRIC_NAME} for service {names.service}"
        if concurrency
        else f"{gpu_metric.UTILIZATION} for {names.asg}"
    )
    if not yes:
        raise BadInputError(
            "verify scaling changes the live service's task count: it publishes a high "
            f"synthetic {signal} until the service scales out "
            "by one task (possibly launching a GPU instance you pay for), then a low one until "
            "it scales back in. Fix: rerun with --yes to go ahead."
        )
    initial = vf.desired_count(ecs, names.cluster, names.service)
    vf.check_can_scale(
        vf.scaling_bounds(appscaling, names.scalable_target_resource_id),
        names.scalable_target_resource_id,
        initial,
    )
    missing = None
    if fast is not None:
        missing = vf.check_fast_path(
            appscaling,
            cw,
            fast,
            resource_id=names.scalable_target_resource_id,
            cluster=names.cluster,
            service=names.service,
        )
        if missing is not None:
            console.print(
                f"[yellow]warning:[/] {escape(missing)}. The test goes on (without the fast "
                "path target tracking scales out, in about 3-4 minutes) and exits 1 at the end.",
                soft_wrap=True,
            )
    elif target is not None:
        off = escape("[scaling] fast_scale_out = false")
        console.print(
            f"[yellow]note:[/] the spec's fast path is off ({off}): "
            f"publishing {2 * target:g}, twice the target, for target tracking, which scales "
            "out after three one-minute datapoints above it, about 3-4 minutes after the "
            "first (more if a GPU instance must launch).",
            soft_wrap=True,
        )
    with _progress() as progress:
        task = progress.add_task("starting", total=None)

        def on_progress(phase: str, desired: int, elapsed: float, published: int) -> None:
            progress.update(
                task,
                description=f"{phase}: desiredCount {desired} (started at {initial}), "
                f"{published} datapoint(s) published, {elapsed:.0f} s",
            )

        levels: dict[str, float] = {}
        if fast is not None:
            # The middle of the first step: the alarm breaches and the smallest step fires.
            first = fast.steps[0]
            upper = first.upper if first.upper is not None else fast.threshold
            levels = {"high": fast.threshold + upper / 2, "low": 0.0}
        elif target is not None:
            # Without the fast path target tracking decides: it adds
            # ceil(tasks x value / target) - tasks, so twice the target adds a task.
            levels = {"high": 2 * target, "low": 0.0}
        since = wall_clock()
        try:
            result = vf.run_scaling_test(
                cw,
                ecs,
                cluster=names.cluster,
                service=names.service,
                asg=names.asg,
                concurrency=concurrency,
                fast_path=fast is not None,
                **levels,
                publish_interval_s=publish_interval_s,
                poll_s=poll_s,
                scale_out_timeout_s=scale_out_timeout_s,
                scale_in_timeout_s=scale_in_timeout_s,
                on_progress=on_progress,
                sleep=sleep,
                clock=clock,
                publisher=publisher,
                pace=pace,
            )
        except KeyboardInterrupt:
            raise EcsGpuError(
                "interrupted: stopped publishing the synthetic "
                + ("concurrency" if concurrency else "GPU")
                + " metric. If the service scaled out, its own autoscaling returns it after "
                "the scale-in cooldown.",
                exit_code=dp.EXIT_INTERRUPTED,
            ) from None
    if fast is not None:
        report_first_decision(
            appscaling,
            names.scalable_target_resource_id,
            since=since,
            fast=fast,
            missing=missing,
        )
    console.print(
        f"[green]Scaling loop works:[/] desiredCount {result.initial} -> {result.peak} in "
        f"{result.scale_out_s:.0f} s (scale-out), back to {result.final} in "
        f"{result.scale_in_s:.0f} s (scale-in); {result.published} datapoint(s) published, "
        "publishing stopped."
    )
    if missing is not None:
        # Like a missing series in verify metrics: the deployment lacks what the spec asks.
        raise ProblemsFound(
            f"{missing}. Fix: redeploy the spec (`ecs-gpu diff SPEC` lists what changes, "
            "`ecs-gpu deploy SPEC` applies it; `ecs-gpu doctor SPEC` reports the scaling "
            "policies), then rerun verify scaling."
        )
    return result


def report_first_decision(
    appscaling: ApplicationAutoScalingClient,
    resource_id: str,
    *,
    since: datetime,
    fast: fp.FastPath,
    missing: str | None = None,
) -> vf.Decision | None:
    """Say which policy made the first scale-out decision, and how fast; never the exit code.

    The scale-out happened (desiredCount rose); whether the fast path or
    target tracking moved it first is what a concurrency deployment wants to
    know (docs/operate.md). ``missing``: what of the fast path the service
    lacks (:func:`ecs_gpu.aws.verify.check_fast_path`), the reason it did not.
    """
    try:
        d = vf.first_decision(appscaling, resource_id, since=since)
    except EcsGpuError as e:
        console.print(f"[yellow]note:[/] could not read the scaling activities: {e.message}")
        return None
    if d is None:
        console.print(
            f"[yellow]note:[/] no scaling activity on {escape(resource_id)} since the test "
            "started: something other than Application Auto Scaling changed desiredCount.",
            soft_wrap=True,
        )
        return d
    after = (d.start - since).total_seconds()
    said = escape(d.cause or d.description)
    if d.fast_path_policy is not None:
        console.print(
            f"[green]First decision: the fast path[/] (step policy "
            f"{escape(d.fast_path_policy)}) {after:.0f} s after the first datapoint, "
            f"{d.status}: {said}",
            soft_wrap=True,
        )
    elif missing is not None or not d.step_policies:
        lacks = (
            "which the service lacks (the warning above)"
            if missing is not None
            else f"{escape(resource_id)} has no StepScaling policy: the spec's fast path is "
            "not deployed (Fix: `ecs-gpu deploy SPEC`)"
        )
        console.print(
            f"[yellow]First decision: not the fast path[/], {lacks}. {after:.0f} s after the "
            f"first datapoint, {d.status}: {said}",
            soft_wrap=True,
        )
    else:
        console.print(
            "[yellow]First decision: not the fast path[/] (its alarm needs "
            f"{fast.datapoints_to_alarm} x {fast.period_s}-s periods at or above "
            f"{fast.threshold:g}; it can take at most {fp.MAX_DETECTION_S} s). {after:.0f} s "
            f"after the first datapoint, {d.status}: {said}",
            soft_wrap=True,
        )
    return d


@verify_app.command("scaling")
def verify_scaling_cmd(
    spec: SpecArg,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Required: this changes the live service's task count."),
    ] = False,
    scale_out_timeout: Annotated[
        float,
        typer.Option(
            "--scale-out-timeout", callback=seconds(0), help="Seconds to wait for scale-out."
        ),
    ] = 1200.0,
    scale_in_timeout: Annotated[
        float,
        typer.Option(
            "--scale-in-timeout", callback=seconds(0), help="Seconds to wait for scale-in."
        ),
    ] = 1800.0,
    publish_interval: Annotated[
        float | None,
        typer.Option(
            "--publish-interval",
            callback=optional_seconds(1, example=10),
            help="Seconds between datapoints, at least 1 (default: 30 for a GPU signal, "
            f"{demand_metric.PUBLISH_INTERVAL_S} for concurrency, as the sidecars publish).",
            show_default=False,
        ),
    ] = None,
    poll_interval: PollOpt = 15.0,
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
) -> None:
    """Prove the scaling loop moves: force the scaling signal high, then low, and time it.

    Publishes high nvidia_smi_utilization_gpu for the stack's ASG (with a
    SPEC on the concurrency signal: high-resolution ConcurrentRequestsPerTask
    above the fast path's threshold, or twice the target with the fast path
    off) until the service's desiredCount rises by one, then low until it
    returns. With the fast path it first checks the service has it (exit 1
    after the test when not), and reports the first scaling decision: the
    fast path's step policy, or not. Refuses without --yes. Always stops
    publishing on exit, Ctrl-C included, and reports the measured scale-out
    and scale-in times.

    Example:

        ecs-gpu verify scaling examples/g5-vllm.toml --yes
    """
    s = load_spec(spec)
    # The signal picks the series; fast_path() is None when [scaling] turns it off.
    by_concurrency = SignalPlan.of(s.scaling).tracks_concurrency
    target = s.scaling.target_concurrency_per_task if by_concurrency else None
    fast = fp.fast_path(s) if target is not None else None
    if publish_interval is None:
        publish_interval = 30.0 if target is None else float(demand_metric.PUBLISH_INTERVAL_S)
    aws = _aws(profile, region)
    run_verify_scaling(
        aws("cloudwatch"),
        aws("ecs"),
        aws("application-autoscaling"),
        names_of(s, stack),
        yes=yes,
        fast=fast,
        concurrency_target=target,
        publish_interval_s=publish_interval,
        poll_s=poll_interval,
        scale_out_timeout_s=scale_out_timeout,
        scale_in_timeout_s=scale_in_timeout,
    )
