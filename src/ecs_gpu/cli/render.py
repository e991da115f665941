"""How the operate commands print: change tables, live stack events, outputs, series.

Every line goes through :data:`console`, one object, so ``--json -``
(:func:`ecs_gpu.cli.prelude.json_first`) can move it to standard error for a
command's duration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import destroy as ds
from ecs_gpu.aws import follow as fl
from ecs_gpu.checks.stack_events import ChangeSummary, Disruption, StackEvent
from ecs_gpu.checks.verify import decision as vdecision
from ecs_gpu.checks.verify import metrics as vmetrics
from ecs_gpu.cli import terminal
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.design import redeploy
from ecs_gpu.design.paths import fast_path as fp

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient

console = terminal.console()

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
    for kind, changes in summary.disruptions().items():
        label, impact = _DISRUPTION[kind]
        ids = ", ".join(f"{escape(c.logical_id)} ({c.resource_type})" for c in changes)
        console.print(f"[bold red]{label}:[/] {ids}: {impact}", soft_wrap=True)


# What each kind of change does to the running fleet (stack_events.DISRUPTIONS).
_DISRUPTION: dict[Disruption, tuple[str, str]] = {
    "fleet-replaced": (
        "REPLACEMENT",
        "replaced: a new GPU fleet launches and the old one is terminated: cold boots, image "
        "pulls, model loads, and a capacity gap meanwhile.",
    ),
    "fleet-refreshed": (
        "FLEET REFRESH",
        "a new launch template version, so the group's instance refresh replaces every GPU "
        f"instance (new ones launch before old ones go, {redeploy.REFRESH_HEALTHY_RANGE} "
        "healthy), and the tasks on each move: a cold boot, image pull and model load per "
        "instance.",
    ),
    "fleet-rebalanced": (
        "FLEET REFRESH",
        "the group's subnets, Availability Zones or placement group change: CloudFormation "
        "replaces old instances with new ones in the new subnets, at least every GPU instance "
        "in an Availability Zone the group no longer uses and possibly every GPU instance (AWS "
        "does not say whether the refresh's skip matching spares the others), new ones first, "
        "and their tasks move: a cold boot, image pull and model load per instance.",
    ),
    "service-replaced": (
        "REPLACEMENT",
        "replaced: the service is deleted and created anew: every task stops, and traffic "
        "fails until the new tasks are healthy.",
    ),
    "tasks-replaced": (
        "TASK RESTART",
        "a new task definition revision, or a service setting ECS applies by a new "
        "deployment (its network, load balancer or service registry), so the service's "
        "rolling deployment replaces every task (each new one loads its model before it "
        "serves).",
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
) -> fl.FollowResult:
    """Follow stack events live: one line per event, a spinner with the status."""
    with _progress() as progress:
        task = progress.add_task(f"{stack}: starting", total=None)

        def on_event(e: StackEvent) -> None:
            progress.console.print(f"[{_event_style(e)}]{escape(e.line())}[/]", soft_wrap=True)

        def on_status(status: str, elapsed: float) -> None:
            progress.update(task, description=f"{stack}: {status}")

        return fl.follow(
            cfn,
            stack_id,
            seen,
            on_event=on_event,
            on_status=on_status,
            waits=waits,
            stuck_after_s=stuck_after_s,
        )


def follow_to_end(
    cfn: CloudFormationClient,
    stack: str,
    stack_id: str,
    seen: set[str],
    waits: dp.Waits,
    *,
    region: str | None,
    what: str,
    stuck_after_s: float | None = None,
    forced_service: str | None = None,
) -> fl.FollowResult:
    """Follow a deploy or delete to its end; every way it can end becomes one message.

    Ctrl-C stops following (the stack is left alone), a delete stuck past
    ``stuck_after_s`` is explained, a failure names the first failing resource
    (and, for an update that forced ``forced_service``'s new deployment, the
    way out of a failed rollback).
    """
    try:
        result = follow_with_progress(
            cfn, stack, stack_id, seen, waits, stuck_after_s=stuck_after_s
        )
    except KeyboardInterrupt:
        raise fl.interrupted(stack, region, what) from None
    if result.stuck:
        raise fl.stuck_delete(result, stack, region, stuck_after_s or 0)
    if not result.ok:
        raise fl.report_failure(result, stack, region, forced_service=forced_service)
    console.print(f"[green]Stack {escape(stack)} is {result.status}.[/]")
    return result


def render_outputs(stack: str, outs: Sequence[dp.StackOutput]) -> None:
    """The stack's outputs after a deploy, as `cdk deploy` prints them."""
    if not outs:
        return
    console.print(f"Outputs of stack [bold]{escape(stack)}[/]:")
    for o in outs:
        # soft_wrap: a name or id broken over two lines cannot be copied.
        console.print(f"  {escape(o.key)} = {escape(o.value)}", soft_wrap=True)


def render_doomed(target: ds.Target) -> None:
    """What destroy deletes: the stack and every resource in it."""
    console.print(
        f"Stack [bold]{escape(target.stack)}[/] ({target.state.status}) and everything in it:"
    )
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for col in ("", "type", "logical id", "physical id"):
        table.add_column(col, no_wrap=True)
    for r in target.resources:
        table.add_row(
            "[red]-[/]", escape(r.resource_type), escape(r.logical_id), escape(r.physical_id)
        )
    terminal.print_table(console, table)


def render_destroy_step(step: ds.Step) -> None:
    """One step destroy took before DeleteStack (:func:`ecs_gpu.aws.destroy.start_delete`)."""
    d = step.deployed
    if step.kind == "held_scaling":
        console.print("Suspended the service's autoscaling and set its minimum to 0.")
    elif step.kind == "scaled_to_zero":
        console.print(
            f"Scaled service {escape(d.service_name or '')} to 0 tasks; waiting for them."
        )
    elif step.kind == "tasks_still_stopping":
        console.print(
            f"[yellow]{step.count} task(s) still stopping after {step.timeout_s:.0f} s; "
            "deleting anyway (CloudFormation waits for them).[/]"
        )
    else:
        console.print(
            f"Removed scale-in protection from {step.count} instance(s) of "
            f"{escape(step.group or d.asg or '')}, so CloudFormation can terminate them."
        )


@contextmanager
def attempts_progress(
    what: str, timeout_s: float
) -> Iterator[Callable[[int, list[vmetrics.Series]], None]]:
    """The status line while verify metrics waits for ``what``: its ``on_attempt``."""
    with _progress() as progress:
        task = progress.add_task(f"waiting for {what}", total=None)

        def on_attempt(n: int, series: list[vmetrics.Series]) -> None:
            have = sum(1 for s in series if s.present)
            progress.update(
                task,
                description=f"attempt {n}: {have}/{len(series)} series have datapoints "
                f"({what}; timeout {timeout_s:.0f} s)",
            )

        yield on_attempt


@contextmanager
def scaling_progress(initial: int) -> Iterator[Callable[[str, int, float, int], None]]:
    """The status line while verify scaling drives the service: its ``on_progress``."""
    with _progress() as progress:
        task = progress.add_task("starting", total=None)

        def on_progress(phase: str, desired: int, elapsed: float, published: int) -> None:
            progress.update(
                task,
                description=f"{phase}: desiredCount {desired} (started at {initial}), "
                f"{published} datapoint(s) published, {elapsed:.0f} s",
            )

        yield on_progress


def _series_table(title: str, count_label: str, series: Sequence[vmetrics.Series]) -> Table:
    table = Table(title=title, show_header=True, header_style="bold")
    for col in ("series", count_label, "latest"):
        table.add_column(col, justify="left" if col == "series" else "right", no_wrap=True)
    for s in series:
        latest = "-" if s.latest is None else f"{s.latest:g}"
        mark = "[green]present[/]" if s.present else "[red]MISSING[/]"
        table.add_row(f"{s.metric} {mark}", str(s.datapoints), latest)
    return table


def render_series(report: vmetrics.MetricsReport) -> None:
    for a in report.arrivals:
        v = a.verified
        table = _series_table(v.title(report.names), v.count_label, a.series)
        terminal.print_table(console, table)


def render_metrics_ok(report: vmetrics.MetricsReport) -> None:
    """Every series verify metrics waited for has datapoints."""
    for a in report.arrivals:
        line = a.verified.present(report.names, [(s.datapoints, s.latest) for s in a.series])
        console.print(f"[green]{escape(line)}[/]", soft_wrap=True)


def render_note(text: str) -> None:
    """A note: said, never the exit code."""
    console.print(f"[yellow]note:[/] {escape(text)}", soft_wrap=True)


def render_divisor(cluster: str, r: vmetrics.Series | None, error: str | None = None) -> None:
    """The task-gpus divisor: its datapoints, or why it has none (``error``: unread)."""
    where = (
        f"{gpu_metric.RESERVATION_NAMESPACE} {gpu_metric.RESERVATION_METRIC} "
        f"({gpu_metric.RESERVATION_DIMENSION}={cluster})"
    )
    if r is None:
        console.print(f"[yellow]note:[/] could not read {escape(where)}: {escape(error or '')}")
        return
    if r.present and r.latest is not None:
        console.print(
            f"{escape(where)}, the divisor the task-gpus policy tracks: {r.datapoints} "
            f"datapoint(s), latest {r.latest:g} %."
        )
        return
    console.print(f"[yellow]warning:[/] {escape(vmetrics.divisor_missing(where))}", soft_wrap=True)


def render_no_decision(resource_id: str, error: str | None = None) -> None:
    """No first decision to judge: the activities unread (``error``), or none since the test."""
    if error is not None:
        console.print(f"[yellow]note:[/] could not read the scaling activities: {error}")
        return
    console.print(
        f"[yellow]note:[/] no scaling activity on {escape(resource_id)} since the test "
        "started: something other than Application Auto Scaling changed desiredCount.",
        soft_wrap=True,
    )


def render_verdict(v: vdecision.Verdict, resource_id: str, fast: fp.FastPath) -> None:
    """Who made verify scaling's first scale-out decision (:func:`vdecision.judge`)."""
    d = v.decision
    said = escape(d.cause or d.description)
    if v.by == "fast_path":
        console.print(
            f"[green]First decision: the fast path[/] (step policy "
            f"{escape(d.fast_path_policy or '')}) {v.after_s:.0f} s after the first datapoint, "
            f"{d.status}: {said}",
            soft_wrap=True,
        )
    elif v.by in ("lacking", "not_deployed"):
        lacks = (
            "which the service lacks (the warning above)"
            if v.by == "lacking"
            else f"{escape(resource_id)} has no StepScaling policy: the spec's fast path is "
            "not deployed (Fix: `ecs-gpu deploy SPEC`)"
        )
        console.print(
            f"[yellow]First decision: not the fast path[/], {lacks}. {v.after_s:.0f} s after "
            f"the first datapoint, {d.status}: {said}",
            soft_wrap=True,
        )
    else:
        console.print(
            "[yellow]First decision: not the fast path[/] (its alarm needs "
            f"{fast.datapoints_to_alarm} x {fast.period_s}-s periods at or above "
            f"{fast.threshold:g}; it can take at most {fp.MAX_DETECTION_S} s). "
            f"{v.after_s:.0f} s after the first datapoint, {d.status}: {said}",
            soft_wrap=True,
        )


def warn_fast_path_missing(missing: str) -> None:
    """The fast path the spec has and the service lacks: the test goes on, exit 1 after."""
    console.print(
        f"[yellow]warning:[/] {escape(missing)}. The test goes on (without the fast "
        "path target tracking scales out, in about 3-4 minutes) and exits 1 at the end.",
        soft_wrap=True,
    )


def warn_wake_missing(missing: str) -> None:
    """The wake path the spec has and the service lacks: the test goes on, exit 1 after."""
    console.print(
        f"[yellow]warning:[/] {escape(missing)}. The test goes on (it does not take the "
        "service to zero) and exits 1 at the end.",
        soft_wrap=True,
    )


def note_fast_path_off(high: float) -> None:
    """Without the fast path verify scaling publishes ``high`` for target tracking."""
    off = escape("[scaling] fast_scale_out = false")
    console.print(
        f"[yellow]note:[/] the spec's fast path is off ({off}): "
        f"publishing {high:g}, twice the target, for target tracking, which scales "
        "out after three one-minute datapoints above it, about 3-4 minutes after the "
        "first (more if a GPU instance must launch).",
        soft_wrap=True,
    )
