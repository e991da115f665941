"""``ecs-gpu doctor``: collect facts (or load a snapshot), run the checks, render."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from ecs_gpu import outputs
from ecs_gpu.aws import facts
from ecs_gpu.checks import snapshot as snapshots
from ecs_gpu.checks.doctor import Report, run_checks
from ecs_gpu.cli import terminal
from ecs_gpu.cli.findings import findings_table, unknown_table
from ecs_gpu.cli.options import StackOpt, json_option, names_of, stack_of
from ecs_gpu.errors import EXIT_AWS, EXIT_OK, EXIT_PROBLEMS, BadInputError

console = terminal.console()
err_console = terminal.console(stderr=True)


def exit_code(report: Report) -> int:
    """1 on any error; else 3 when health is unproven (a call denied, nothing checked); else 0."""
    if report.has_error:
        return EXIT_PROBLEMS
    if report.missing_permissions or report.checked == 0:
        return EXIT_AWS
    return EXIT_OK


def nothing_checked(report: Report) -> str:
    """The statement printed when no check could decide (exit 3): health is not proven."""
    return (
        f"Nothing was checked: all {len(report.results)} checks are unknown (the 'Not "
        "checked' list and --json's 'unknown' say why), so this is no clean bill of health "
        "(exit 3). Fix: collect again with the permissions docs/doctor.md lists ('Permissions "
        "doctor needs'), or pass a complete snapshot."
    )


def assumptions(report: Report) -> str:
    """What doctor assumed for a snapshot of raw AWS output, one line each ('' if nothing)."""
    if not report.assumed:
        return ""
    lines = "\n".join(f"  - {a}" for a in report.assumed)
    return f"Assumed (the snapshot has no _collection):\n{lines}"


def render(report: Report, out: Console) -> None:
    findings = report.findings
    if report.assumed:
        out.print(f"[yellow]{escape(assumptions(report))}[/]", soft_wrap=True)
    if findings:
        title = "ecs-gpu doctor: findings, first broken link first"
        terminal.print_table(out, findings_table(title, findings))
    else:
        out.print("[green]No finding.[/]")
    if report.unknown:
        terminal.print_table(out, unknown_table(report.unknown))
    if report.missing_permissions:
        out.print("[yellow]Missing permissions[/] (grant them for a complete diagnosis):")
        for d in report.missing_permissions:
            out.print(f"  - {d['permission']} (call {d['call']}; leaves {', '.join(d['kinds'])})")
    ok = sum(1 for r in report.results if r.status == "ok")
    errors = sum(1 for f in findings if f.severity == "error")
    out.print(
        f"{len(report.results)} checks: {ok} ok, {errors} errors, "
        f"{len(findings) - errors} warnings/info, {len(report.unknown)} unknown."
    )
    if report.checked == 0:
        out.print(f"[bold red]{escape(nothing_checked(report))}[/]")


def doctor_cmd(
    spec: Annotated[
        Path | None,
        typer.Argument(help="Spec TOML that names the deployment (else use --cluster/--service)."),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            help="ECS cluster name (with --from-snapshot: chooses one in raw AWS output)."
        ),
    ] = None,
    service: Annotated[
        str | None,
        typer.Option(
            help="ECS service name (with --from-snapshot: chooses one in raw AWS output)."
        ),
    ] = None,
    region: Annotated[str | None, typer.Option(help="AWS region.")] = None,
    profile: Annotated[str | None, typer.Option(help="AWS profile.")] = None,
    stack: StackOpt = None,
    probe_hosts: Annotated[
        bool,
        typer.Option(help="Run the read-only host probe on the GPU instances via SSM."),
    ] = False,
    json_out: Annotated[Path | None, json_option("the report")] = None,
    save_snapshot: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Write the collected snapshot to FILE ('-': only the snapshot on stdout).",
        ),
    ] = None,
    from_snapshot: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="Run every check offline from a saved snapshot, or from raw AWS CLI output "
            "(no _collection: the target is inferred, docs/doctor.md).",
        ),
    ] = None,
) -> None:
    """Diagnose a GPU service: why tasks never start or the fleet never scales.

    Works down the chain an expert follows (instances, GPUs, placement, ASG,
    metric, alarms, policies, hosts, stack) and says what to fix.

    Exit codes: 0 no error, 1 errors found, 2 bad input, 3 AWS unreachable, a call
    denied (the report lists the permissions) or nothing could be checked.

    Examples:

        ecs-gpu doctor examples/g5-vllm.toml --probe-hosts

        ecs-gpu doctor examples/g5-vllm.toml --stack vllm-g5-staging

        ecs-gpu doctor --cluster prod --service llm --json - --save-snapshot snap.json

        ecs-gpu doctor --from-snapshot snap.json

        ecs-gpu doctor --from-snapshot aws-output.json --cluster prod --service llm
    """
    _check_inputs(spec, from_snapshot, json_out, save_snapshot, cluster, service)
    if from_snapshot is not None:
        if spec or stack or probe_hosts:
            raise BadInputError(
                "--from-snapshot runs offline: drop SPEC, --stack and --probe-hosts "
                "(--cluster/--service choose the target in a snapshot of raw AWS output)."
            )
        snapshot = snapshots.load(from_snapshot, cluster=cluster, service=service)
    else:
        snapshot = _collect(spec, cluster, service, stack, region, profile, probe_hosts)
    if save_snapshot is not None:
        outputs.write_text(save_snapshot, snapshots.dumps(snapshot), "--save-snapshot")
    report = run_checks(snapshot)
    _write_and_render(report, json_out, save_snapshot)
    raise typer.Exit(exit_code(report))


def _check_inputs(
    spec: Path | None,
    from_snapshot: Path | None,
    json_out: Path | None,
    save_snapshot: Path | None,
    cluster: str | None,
    service: str | None,
) -> None:
    """Output paths and names, checked before a collection is spent on them."""
    for option, path in (("--json", json_out), ("--save-snapshot", save_snapshot)):
        if path is not None:
            outputs.check_output(path, option)
    outputs.check_distinct(
        {"SPEC": spec, "--from-snapshot": from_snapshot},
        {"--json": json_out, "--save-snapshot": save_snapshot},
    )
    for flag, value in (("--cluster", cluster), ("--service", service)):
        # Checked before any AWS call: botocore would refuse '' only after the session.
        if value is not None and not value.strip():
            raise BadInputError(f"{flag} is empty. Fix: pass the ECS name, or leave it out.")


def _write_and_render(report: Report, json_out: Path | None, save_snapshot: Path | None) -> None:
    """Write --json, then render the report (on standard error what a person must still
    read when standard output carries a JSON)."""
    if json_out is not None:
        text = json.dumps(report.as_dict(), indent=2, default=str) + "\n"
        outputs.write_text(json_out, text, "--json")
    if outputs.is_stdout(json_out) or outputs.is_stdout(save_snapshot):
        # Standard output carries only that JSON; the statement still reaches a person.
        if report.assumed:
            err_console.print(f"[yellow]{escape(assumptions(report))}[/]", soft_wrap=True)
        if report.checked == 0:
            err_console.print(f"[bold red]{escape(nothing_checked(report))}[/]", soft_wrap=True)
    else:
        render(report, console)
        for option, path in (("report JSON", json_out), ("snapshot", save_snapshot)):
            if path is not None:
                # soft_wrap: a path broken over two lines cannot be copied.
                console.print(f"{option}: {escape(str(path))}", soft_wrap=True)


def _collect(
    spec: Path | None,
    cluster: str | None,
    service: str | None,
    stack: str | None,
    region: str | None,
    profile: str | None,
    probe_hosts: bool,
) -> facts.Snapshot:

    from ecs_gpu.aws.clients import check_ready, make_session
    from ecs_gpu.design import Design
    from ecs_gpu.spec import load_spec

    if spec is not None:
        if cluster or service:
            raise BadInputError("give either SPEC or --cluster/--service, not both.")
        loaded = load_spec(str(spec))
        # The names deploy gave SPEC as that stack (operate's derivation); the
        # stack itself keeps the name given, hashed base or not.
        names = names_of(loaded, stack)
        target = facts.Target.from_design(Design.of(loaded), names).model_copy(
            update={"stack": stack_of(loaded, stack)}
        )
    elif stack is not None:
        raise BadInputError(
            f"--stack {stack} finds the resources of SPEC deployed as that stack; with "
            "--cluster/--service it has nothing to do. Fix: give SPEC --stack NAME, or "
            "--cluster and --service alone."
        )
    elif cluster and service:
        target = facts.Target.from_cluster_service(cluster, service)
    else:
        raise BadInputError(
            "doctor needs a deployment: pass SPEC (the TOML you deployed), or both --cluster "
            "and --service, or --from-snapshot FILE."
        )
    session = make_session(profile, region)
    # The region and credentials resolved first, as every AWS command does: a failing
    # credential_process is then named, not met inside the first client.
    check_ready(session)
    return facts.collect(session, target, probe_hosts=probe_hosts)
