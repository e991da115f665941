"""What the commands share: options, the AWS session, names, the question.

Every command that writes JSON takes the same ``--json [PATH]``
(:func:`json_option`); diff, deploy, destroy, verify and doctor take the
same SPEC, --stack, --region, --profile and --poll-interval; their seconds
are checked by :func:`seconds`, and :func:`_aws` resolves the session before
any synth or AWS call.
"""

from __future__ import annotations

import dataclasses
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from ecs_gpu.aws.clients import check_ready, client, make_session
from ecs_gpu.aws.errors import mapped
from ecs_gpu.aws.staging import DEFAULT_TEMPLATE_PREFIX, TemplateBucket
from ecs_gpu.cli.render import console
from ecs_gpu.contracts.naming import Names, stack_name_of
from ecs_gpu.errors import EXIT_INTERRUPTED, BadInputError, EcsGpuError
from ecs_gpu.outputs import STDOUT
from ecs_gpu.spec import Spec

SpecArg = Annotated[Path, typer.Argument(help="The spec TOML file.", show_default=False)]
RegionOpt = Annotated[
    str | None,
    typer.Option("--region", help="AWS region (default: AWS_REGION or the profile's region)."),
]
ProfileOpt = Annotated[
    str | None, typer.Option("--profile", help="AWS profile (default: AWS_PROFILE).")
]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]

# Options whose value may be left out, and what a bare one means: `--json` alone
# prints the JSON on standard output, as gh, kubectl and terraform users expect.
OPTIONAL_VALUES = {"--json": STDOUT}


def json_option(what: str, *, also: bool = True) -> Any:
    """The ``--json [PATH]`` option every command shares, writing ``what``.

    With a PATH the usual output still prints (``also``); bare ``--json`` or
    ``--json -`` puts only the JSON on standard output.
    """
    lead = "Also write" if also else "Write"
    return typer.Option(
        "--json",
        metavar="[PATH]",
        help=f"{lead} {what} as JSON to PATH; bare --json (or --json -) prints only the JSON "
        "on standard output.",
        show_default=False,
    )


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
    str | None,
    typer.Option(
        "--template-prefix",
        help=f"Key prefix for the staged template object, with --template-bucket "
        f"(default: {DEFAULT_TEMPLATE_PREFIX}).",
        show_default=False,
    ),
]
# S3's bucket naming rules (general purpose buckets): 3-63 lowercase letters,
# digits, dots and hyphens, starting and ending with a letter or digit.
_BUCKET_NAME_RE = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
# EC2 Auto Scaling: AutoScalingGroupName is 1 to 255 characters (API reference).
ASG_NAME_MAX = 255


def template_bucket(bucket: str | None, prefix: str | None) -> TemplateBucket | None:
    """The --template-bucket/--template-prefix pair, checked before any call (exit 2)."""
    if bucket is None:
        if prefix is not None:
            raise BadInputError(
                f"--template-prefix {prefix!r}: names where in --template-bucket the template "
                "is staged, and no --template-bucket was given, so it would do nothing. Fix: "
                "add --template-bucket BUCKET, or drop --template-prefix."
            )
        return None
    prefix = DEFAULT_TEMPLATE_PREFIX if prefix is None else prefix
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
    return TemplateBucket(bucket, prefix)


def owned_by_caller(aws: Aws, staging: TemplateBucket | None) -> TemplateBucket | None:
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
            exit_code=EXIT_INTERRUPTED,
        ) from None


def check_spec_or_asg(spec: Path | None, asg: str | None, stack: str | None) -> None:
    """verify metrics' SPEC or --asg: exactly one, --stack only with SPEC (exit 2)."""
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


# --- simulate, compare, plan ------------------------------------------------------

TraceOpt = Annotated[
    str,
    typer.Option(
        "--trace",
        help="A bundled trace's name (`ecs-gpu traces`, e.g. servegen-m-mid) or a request "
        "trace CSV: one row per request (TIMESTAMP) or per window (timestamp_s with "
        "requests, rate_rps or req_per_min_mid).",
        show_default=False,
    ),
]
RateOpt = Annotated[
    float | None,
    typer.Option(
        "--rate-scale",
        help="Multiply the trace's request rate by this. Default: a bundled trace is sized "
        "as plan sizes it (peak at 80 % of max_tasks at the design's target; the factor is "
        "printed); a trace file is used as it is.",
        show_default=False,
    ),
]
StepOpt = Annotated[
    float,
    typer.Option("--step", help="Simulation step in seconds (at least 1; must divide 60)."),
]
SeedOpt = Annotated[
    int, typer.Option("--seed", min=0, help="Seed for arrivals and boot times (0 or more).")
]
ColdOpt = Annotated[
    bool,
    typer.Option(
        "--cold-start",
        help="Start with only the ASG floor booting and min_tasks waiting, "
        "instead of a fleet already sized for the first minute's load.",
    ),
]


def _host_cpu_percent(value: float | None) -> float | None:
    """--host-cpu-policy is a percent: refused before the spec is read (exit 2)."""
    if value is not None and not 0 < value <= 100:
        raise BadInputError(f"--host-cpu-policy = {value!r}: not a percent. Fix: give 1 to 100.")
    return value


HostCpuOpt = Annotated[
    float | None,
    typer.Option(
        "--host-cpu-policy",
        callback=_host_cpu_percent,
        help="Add the anti-pattern: an ASG target-tracking policy on host CPU at this "
        "percent (overrides \\[simulation] host_cpu_policy_target_percent).",
        show_default=False,
    ),
]
