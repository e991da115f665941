"""How doctor and preflight print findings: one table of findings, one of checks left unknown."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.markup import escape
from rich.table import Table

from ecs_gpu.checks.model import CheckResult, Finding

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _value(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, default=str)
    return text if len(text) <= 160 else text[:157] + "..."


def findings_table(title: str, findings: Sequence[Finding]) -> Table:
    """Three columns stay readable at 80 characters; the finding cell holds
    the title, the evidence lines and the fix."""
    table = Table(title=title, show_lines=True)
    table.add_column("id", no_wrap=True)
    table.add_column("severity", no_wrap=True)
    # Wraps between words only (terminal.print_table): an id or ARN stays whole.
    table.add_column("finding")
    for f in findings:
        # A bullet, not an indent: rich sizes a column by its longest word, and
        # leading spaces would push that word past the edge (cut with "…").
        ev = "\n".join(f"- {e.kind}[{e.id}].{e.field} = {_value(e.value)}" for e in f.evidence)
        cell = f"[bold]{escape(f.title)}[/]\n{escape(ev)}\n[green]Fix:[/] {escape(f.fix)}"
        table.add_row(f.id, f"[{SEVERITY_STYLE[f.severity]}]{f.severity}[/]", cell)
    return table


def unknown_table(unknown: Sequence[CheckResult]) -> Table:
    """The checks no answer decided, with why (a denied call, a missing kind)."""
    t = Table(title="Not checked (unknown)")
    t.add_column("id", no_wrap=True)
    for col in ("check", "why"):
        t.add_column(col)
    for r in unknown:
        t.add_row(r.check.id, escape(r.check.title), escape(r.reason or ", ".join(r.missing)))
    return t
