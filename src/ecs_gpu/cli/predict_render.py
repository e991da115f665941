"""How the predict commands print: the bundled-trace table and a long run's progress bar.

Each takes or returns what :mod:`ecs_gpu.cli.predict` prints on its own
console, so ``--json -`` (standard error for the tables) holds for all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from ecs_gpu.sim.workload import BundledTrace, TraceShape
from ecs_gpu.spec import Spec

if TYPE_CHECKING:
    from ecs_gpu.template.validate import ValidationReport

# Runs shorter than this many steps finish before a bar would be readable.
_PROGRESS_MIN_STEPS = 20_000


@contextmanager
def progress(
    console: Console, label: str, steps: int
) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on a terminal for long runs; nothing otherwise."""
    if not console.is_terminal or steps < _PROGRESS_MIN_STEPS:
        yield None
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=steps)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


def _span(seconds: float) -> str:
    if seconds < 86400:
        return f"{seconds / 60:.0f} min"
    days = f"{seconds / 86400:.1f}".removesuffix(".0")
    return f"{days} day" + ("" if days == "1" else "s")


def _step(shape: TraceShape) -> str:
    if shape.step_min_s is None or shape.step_max_s is None:
        return "-"
    lo, hi = f"{shape.step_min_s:g}", f"{shape.step_max_s:g}"
    return f"{lo} s" if lo == hi else f"{lo}-{hi} s"


def traces_table(bundled: Mapping[str, BundledTrace]) -> Table:
    """``ecs-gpu traces``: one row per bundled trace with its measured shape."""
    table = Table(
        title="Bundled traces (--trace NAME)",
        caption="requests/s; peak: the highest 1-minute mean. Sources: docs/traces.md",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    for col in ("name", "shape", "span", "step", "mean", "peak", "license"):
        numeric = col in ("mean", "peak")
        table.add_column(col, justify="right" if numeric else "left", no_wrap=True)
    for t in bundled.values():
        shape = t.shape()
        table.add_row(
            t.name,
            shape.shape,
            _span(shape.span_s),
            _step(shape),
            f"{shape.mean_rps:.4g}",
            f"{shape.peak_rps:.4g}",
            t.spdx,
        )
    return table


def render_validation(console: Console, report: ValidationReport) -> int:
    """plan's validation: its notes, then "no findings" or each finding; how many."""
    for n in report.notes:
        console.print(f"[yellow]note:[/] {escape(n.message)}", soft_wrap=True)
    if report.ok:
        resources = len(report.template.get("Resources", {}))
        console.print(f"template: synthesized, {resources} resources, no findings")
        return 0
    console.print(f"[red]template: {len(report.findings)} finding(s)[/]")
    for f in report.findings:
        console.print(
            f"  {f.source} {f.id} ({f.severity}) {f.resource}: {f.message}", soft_wrap=True
        )
    return len(report.findings)


def validate_and_render(console: Console, err_console: Console, spec: Spec, path: Path) -> int:
    """Synthesize and validate the template; print findings; return how many."""
    # CDK loads only here, so simulate and compare never pay for it.
    from ecs_gpu.cli.stages import stage_status
    from ecs_gpu.template.validate import validate

    with stage_status(err_console) as stage:
        report = validate(spec, path=str(path), stage=stage)
    return render_validation(console, report)
