"""``ecs-gpu preflight``: can this account and Region run SPEC? Read-only; also deploy's gate.

Thin: parse, call :mod:`ecs_gpu.aws.preflight`, render in doctor's finding
shape. :func:`gate` is what ``deploy`` runs before its change set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from ecs_gpu import outputs
from ecs_gpu.aws import preflight as pf
from ecs_gpu.checks.preflight.account import Needs, Result
from ecs_gpu.cli import terminal
from ecs_gpu.cli.findings import SEVERITY_STYLE, findings_table, unknown_table
from ecs_gpu.cli.options import (
    Aws,
    ProfileOpt,
    RegionOpt,
    SpecArg,
    StackOpt,
    _aws,
    json_option,
    stack_of,
)
from ecs_gpu.cli.terminal import print_notes
from ecs_gpu.errors import EXIT_AWS, EXIT_OK, EXIT_PROBLEMS, ProblemsFound
from ecs_gpu.spec import Spec, load_spec

console = terminal.console()
err_console = terminal.console(stderr=True)


def exit_code(result: Result) -> int:
    """1 on an error finding; 3 when no check could decide (every call denied); else 0."""
    if result.has_error:
        return EXIT_PROBLEMS
    if result.checked_in_aws == 0:
        return EXIT_AWS
    return EXIT_OK


def render(result: Result, stack: str, region: str | None, out: Console) -> None:
    report = result.report
    findings = report.findings
    if findings:
        title = f"ecs-gpu preflight: stack {stack} in {region}"
        terminal.print_table(out, findings_table(title, findings))
    if report.unknown:
        terminal.print_table(out, unknown_table(report.unknown))
    for i, title, why in result.not_applicable:
        out.print(f"[dim]{i} not needed:[/] {escape(title)}: {escape(why)}.", soft_wrap=True)
    if report.missing_permissions:
        out.print("[yellow]Missing permissions[/] (grant them for a complete preflight):")
        for d in report.missing_permissions:
            out.print(f"  - {d['permission']} (call {d['call']}; leaves {', '.join(d['kinds'])})")
    out.print(summary(result))


def summary(result: Result) -> str:
    report = result.report
    ok = sum(1 for r in report.results if r.status == "ok")
    counts = {s: sum(1 for f in report.findings if f.severity == s) for s in SEVERITY_STYLE}
    line = (
        f"preflight: {len(report.results)} checks: {ok} ok, {counts['error']} errors, "
        f"{counts['warning']} warnings, {counts['info']} info, {len(report.unknown)} unknown."
    )
    # An error found without AWS (the certificate's Region) exits 1, not 3.
    if result.checked_in_aws == 0 and not result.has_error:
        line += (
            " Nothing could be checked (exit 3): grant the permissions docs/operate.md lists "
            "('Before your first deploy')."
        )
    return line


def run(spec: Spec, aws: Aws, stack: str | None = None) -> tuple[Needs, Result]:
    needs = Needs.from_spec(spec, str(aws.region), stack)
    return needs, pf.preflight(aws.session, needs)


SkipPreflightOpt = Annotated[
    bool,
    typer.Option(
        "--skip-preflight",
        help="Deploy without `ecs-gpu preflight`'s checks (quota, offerings, AMI, "
        "reservation, secrets, image, network, the certificate's Region), which otherwise "
        "refuse on an error.",
    ),
]


def gate(spec: Spec, aws: Aws, *, skip: bool, spec_path: Path, stack: str | None = None) -> None:
    """Deploy's preflight: refuse on an error finding; with ``skip`` say that nothing was checked.

    Printed on standard error, so ``deploy --json`` keeps standard output for the JSON.
    """
    if skip:
        err_console.print(
            "[yellow]--skip-preflight:[/] preflight did not run: the vCPU quota, instance "
            "offerings, AMI, reservation, secrets, image, network and the certificate's "
            "Region are unchecked.",
            soft_wrap=True,
        )
        return
    _, result = run(spec, aws, stack)
    errors = [f for f in result.report.findings if f.severity == "error"]
    if errors:
        lines = "\n".join(f"  - {f.id}: {f.title}. Fix: {f.fix}" for f in errors)
        raise ProblemsFound(
            f"preflight found {len(errors)} error(s); nothing was deployed:\n{lines}\n"
            f"See the whole report with `ecs-gpu preflight {spec_path}`; pass --skip-preflight "
            "to deploy anyway."
        )
    for f in result.report.findings:
        if f.severity == "warning":
            err_console.print(f"[yellow]preflight {f.id}:[/] {escape(f.title)}", soft_wrap=True)
    err_console.print(escape(summary(result)), soft_wrap=True)


def preflight_cmd(
    spec: SpecArg,
    stack: StackOpt = None,
    region: RegionOpt = None,
    profile: ProfileOpt = None,
    json_out: Annotated[Path | None, json_option("the findings")] = None,
) -> None:
    """Check, read-only, that this account and Region can run SPEC, before paying for it.

    The On-Demand vCPU quota of the instance family against the fleet at
    max_instances (plus an instance refresh's surge and the warm pool), the
    instance type's offering in the Region and each subnet's AZ, the GPU AMI,
    the capacity reservation, the container secrets, the ECR image tag, ECS's
    service-linked role and, with \\[network], the subnets' way out (NAT or
    VPC endpoints), and that the load balancer's certificate is in the deploy's
    Region. A denied call makes only its checks unknown and names the
    permission. deploy runs these first.

    Exit codes: 0 no error, 1 errors found, 2 bad input, 3 AWS unreachable or
    nothing could be checked.

    Examples:

        ecs-gpu preflight examples/g5-vllm.toml --region us-east-1

        ecs-gpu preflight examples/p5-8gpu.toml --json | jq '.findings[].title'
    """
    if json_out is not None:
        outputs.check_output(json_out, "--json", suffix=".json")
        outputs.check_distinct({"SPEC": spec}, {"--json": json_out})
    s = load_spec(spec)
    print_notes(s.warnings(str(spec)))
    name = stack_of(s, stack)
    aws = _aws(profile, region)
    needs, result = run(s, aws, stack)
    if json_out is not None:
        doc = {"stack": name, "region": aws.region, **result.as_dict(needs)}
        outputs.write_text(json_out, json.dumps(doc, indent=2, default=str) + "\n", "--json")
    if outputs.is_stdout(json_out):
        err_console.print(escape(summary(result)), soft_wrap=True)
    else:
        render(result, name, aws.region, console)
        if json_out is not None:
            console.print(f"findings JSON: {escape(str(json_out))}", soft_wrap=True)
    raise typer.Exit(exit_code(result))
