"""Define commands: catalog, synth, validate."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from ecs_gpu import catalog as cat
from ecs_gpu.cli import terminal
from ecs_gpu.cli.options import json_option
from ecs_gpu.cli.stages import stage_status
from ecs_gpu.cli.terminal import err_console, print_notes
from ecs_gpu.errors import EXIT_PROBLEMS
from ecs_gpu.spec import load_spec

SpecArg = Annotated[
    Path,
    typer.Argument(
        help="The service spec (TOML), e.g. examples/g5-vllm.toml.",
        show_default=False,
        metavar="SPEC",
    ),
]

console = terminal.console()


def catalog_cmd(
    json_out: Annotated[
        Path | None, json_option("the instance types and refused families", also=False)
    ] = None,
) -> None:
    """List the GPU instance types ecs-gpu supports, with GPUs, memory, ENIs and price.

    "ENIs" is EC2's network interface limit (all network cards) and, in
    brackets, how many awsvpc tasks its default card leaves room for without ENI
    trunking: one interface per task after the instance's own.

    Examples:

        ecs-gpu catalog

        ecs-gpu catalog --json | jq -r '.instance_types[] | select(.gpus == 8) | .name'
    """
    from ecs_gpu.outputs import check_output, write_text

    if json_out is not None:
        check_output(json_out, "--json", suffix=".json")
        write_text(json_out, json.dumps(cat.catalog_document(), indent=2) + "\n", "--json")
        return
    # Light rules and the bare GPU model: eight columns fit an 80-column terminal uncut.
    table = Table(
        title=f"ECS GPU instance types (NVIDIA; on-demand {cat.PRICE_REGION}, "
        f"prices of {cat.PRICE_DATE})",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for col in ("type", "GPUs", "GPU", "GPU MiB", "vCPU", "GiB", "ENIs", "USD/h"):
        # Type and numbers are what users copy: never cut or wrap them.
        table.add_column(col, justify="left" if col in ("type", "GPU") else "right", no_wrap=True)
    notes: list[str] = []
    for t in cat.CATALOG.values():
        price = f"{t.price_usd_per_hour:g}"
        # A price with its own date or caveat gets a numbered note under the table.
        if t.price_note or t.price_date != cat.PRICE_DATE:
            notes.append(f"[{len(notes) + 1}] {t.name}: price of {t.price_date}. {t.price_note}")
            price += f" [{len(notes)}]"
        table.add_row(
            t.name,
            str(t.gpus),
            t.gpu_model.removeprefix("NVIDIA "),
            str(t.gpu_memory_mib),
            str(t.vcpus),
            f"{t.memory_gib:g}",
            f"{t.max_network_interfaces} ({t.awsvpc_task_slots})",
            price,
        )
    terminal.print_table(console, table)
    for note in notes:
        console.print(note.rstrip(), soft_wrap=True, markup=False)
    console.print(
        "Refused families: "
        + "; ".join(f"{fam}: {why}" for fam, why in cat.REFUSED_FAMILIES.items()),
        soft_wrap=True,
    )


def synth_cmd(
    spec: SpecArg,
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            metavar="DIR",
            help="Directory to write <stack name>.template.json into; - writes the template "
            "to standard output.",
        ),
    ] = Path("out"),
    stack: Annotated[
        str | None,
        typer.Option(
            "--stack",
            help="Stack name the template is made for (default: the spec's service.name); "
            "the same name you give deploy --stack.",
        ),
    ] = None,
) -> None:
    """Write the standalone CloudFormation template for SPEC and print its path.

    The template needs no `cdk bootstrap` and has no assets: deploy it with
    `ecs-gpu deploy`, the console or `aws cloudformation deploy`. Synth is
    offline: the AMI is the template's GpuAmiId parameter, which ecs-gpu deploy
    fills in (else pass the recommended ECS GPU AMI, docs/template.md).
    The file is written whole or not at all (temporary file, then rename).

    Example:

        ecs-gpu synth examples/g5-vllm.toml -o out
    """
    from ecs_gpu.contracts.naming import check_stack_name
    from ecs_gpu.design import Design, check_woken_task
    from ecs_gpu.outputs import is_stdout
    from ecs_gpu.template.synth import write_template

    if stack is not None:
        check_stack_name(stack)
    loaded = load_spec(spec)
    check_woken_task(Design.of(loaded), str(spec))
    print_notes(loaded.warnings(str(spec)))
    with stage_status(err_console) as stage:
        path = write_template(loaded, out, stack_name=stack, spec_path=spec, stage=stage)
    if not is_stdout(path):
        console.print(str(path), soft_wrap=True, markup=False)


def validate_cmd(
    spec: SpecArg,
    json_out: Annotated[Path | None, json_option("the findings")] = None,
) -> None:
    """Check SPEC and the template it makes; exit 0 clean, 1 findings, 2 bad spec.

    Runs the spec rules, checks the host CloudWatch agent config against the
    agent's schema, synthesizes the template, then runs cfn-lint (zero errors
    and zero warnings allowed) and cdk-nag AwsSolutions (every accepted
    finding carries a written reason in the construct). It also fails where
    deploy or ECS would: a template over CloudFormation's 1 MB TemplateURL
    limit, an image reference, container name or task family over ECS's
    limits. Over the 51,200-byte TemplateBody limit it prints a note that
    deploy needs --template-bucket, and still passes. CDK's advice about CDK
    itself is not shown. Offline: no AWS call.

    Example:

        ecs-gpu validate examples/g6e-alb-odcr.toml --json findings.json
    """
    from ecs_gpu.outputs import check_distinct, check_output, is_stdout, write_text
    from ecs_gpu.template.validate import validate

    if json_out is not None:
        # Before the seconds of synth: a typo in the path costs nothing.
        check_output(json_out, "--json", suffix=".json")
        check_distinct({"SPEC": spec}, {"--json": json_out})
    loaded = load_spec(spec)
    with stage_status(err_console) as stage:
        report = validate(loaded, path=str(spec), stage=stage)
    if json_out is not None:
        doc = {
            "spec": str(spec),
            "ok": report.ok,
            "findings": [dataclasses.asdict(f) for f in report.findings],
            "notes": [dataclasses.asdict(f) for f in report.notes],
        }
        write_text(json_out, json.dumps(doc, indent=2) + "\n", "--json")
        if is_stdout(json_out):
            # Standard output carries the JSON alone; the exit code says the rest.
            if not report.ok:
                raise typer.Exit(EXIT_PROBLEMS)
            return
    for n in report.notes:
        console.print(f"[yellow]note:[/] {escape(n.message)}", soft_wrap=True)
    if report.ok:
        console.print(
            f"[green]clean:[/] {escape(str(spec))}: spec rules, agent schema, template size, ECS "
            "limits, cfn-lint and cdk-nag AwsSolutions found nothing.",
            soft_wrap=True,
        )
        return
    table = Table(title=f"{escape(str(spec))}: {len(report.findings)} finding(s)")
    # Ids stay whole so they can be copied into an acknowledgement or a search.
    for col in ("source", "id", "severity"):
        table.add_column(col, no_wrap=True)
    for col in ("resource", "message"):
        # Wraps between words only (terminal.print_table): a resource path stays whole.
        table.add_column(col)
    for f in report.findings:
        # cfn-lint and cdk-nag text may hold "[...]"; cells are markup otherwise.
        table.add_row(*(escape(c) for c in (f.source, f.id, f.severity, f.resource, f.message)))
    terminal.print_table(console, table)
    raise typer.Exit(EXIT_PROBLEMS)
