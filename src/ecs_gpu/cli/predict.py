"""Predict commands: traces, simulate, compare, plan."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

from ecs_gpu.cli import terminal
from ecs_gpu.cli.options import (
    ColdOpt,
    HostCpuOpt,
    RateOpt,
    SeedOpt,
    StepOpt,
    TraceOpt,
    json_option,
)
from ecs_gpu.cli.predict_render import progress, traces_table, validate_and_render
from ecs_gpu.design import Design, check_woken_task
from ecs_gpu.errors import EXIT_PROBLEMS, BadInputError
from ecs_gpu.outputs import check_distinct, check_output, is_stdout
from ecs_gpu.sim import (
    SimParams,
    SimResult,
    bundled_trace_path,
    plan_rate_scale,
    plan_scale_note,
    run,
    runs,
)
from ecs_gpu.sim import report as rp
from ecs_gpu.sim.engine import Start, check_step
from ecs_gpu.sim.params import from_design
from ecs_gpu.sim.workload import Trace, bundled_traces, load_trace
from ecs_gpu.spec import load_spec

console = terminal.console()

# Three days show the daily cycle of the bundled trace in a readable plot.
PLAN_DAYS = 3.0

SpecArg = Annotated[Path, typer.Argument(help="The TOML spec.", show_default=False)]


def _params(spec_path: Path, host_cpu: float | None) -> SimParams:
    loaded = load_spec(spec_path)
    # What synth, validate, plan and deploy refuse, simulate and compare refuse too:
    # a cost row for a design that cannot deploy would mislead.
    design = Design.of(loaded)
    check_woken_task(design, str(spec_path))
    # On standard error, so `--json -` keeps standard output for the JSON.
    terminal.print_notes(loaded.warnings(str(spec_path)))
    p = from_design(design)
    if host_cpu is not None:
        p = p.with_(
            managed_scaling=p.managed_scaling.with_(host_cpu_policy_target_percent=host_cpu)
        )
    return p


def _run(
    p: SimParams, trace: Trace, label: str, rate: float, step: float, seed: int, start: Start
) -> SimResult:
    steps = math.ceil(trace.duration_s / step) if step > 0 else 0
    with progress(console, f"simulating {label}", steps) as prog:
        return run(p, trace, rate_scale=rate, step_s=step, seed=seed, start=start, progress=prog)


def _check_outputs(
    inputs: dict[str, Path | None],
    json_out: Path | None,
    plot: Path | None,
    timeline: Path | None,
    plot_option: str = "--plot",
) -> None:
    """Refuse unwritable output paths, and outputs over inputs or each other, before the run.

    Checked here, before simulating, so a typo in a path costs no simulation.
    """
    if json_out is not None:
        check_output(json_out, "--json")
    if timeline is not None:
        check_output(timeline, "--timeline")
    if plot is not None:
        check_output(plot, plot_option, rp.PLOT_SUFFIX)
    check_distinct(inputs, {"--json": json_out, "--timeline": timeline, plot_option: plot})


def _rate_scale(
    given: float | None, trace: str, p: SimParams, tr: Trace, step: float, sized_to: str
) -> float:
    """The factor a run uses: the one given, plan's sizing for a bundled trace, else 1.

    A bundled trace's rates are a provider's (thousands of req/s): unscaled, any
    spec is overloaded throughout. A file is the user's own data: used as is, and
    the overload hint says when it is beyond the fleet.
    """
    if given is not None:
        return given
    if runs.trace_input(trace) is not None:
        return 1.0
    scale = plan_rate_scale(p, tr, step)
    origin = f"bundled, sized to {sized_to}; --rate-scale sets the factor"
    console.print(plan_scale_note(p, tr, scale, step, origin), soft_wrap=True)
    return scale


def _use_stderr_if_stdout(*outs: Path | None) -> None:
    """Keep standard output for the JSON: with ``-`` tables and notes go to standard error.

    Set at the start of every command, so one command's choice never leaks
    into the next in the same process.
    """
    console.stderr = any(is_stdout(o) for o in outs)


def _saved(what: str, path: Path) -> None:
    if not is_stdout(path):
        # soft_wrap and no markup: the path is copied whole, brackets included.
        console.print(f"{what}: {path}", soft_wrap=True, markup=False)


def _hint(p: SimParams, result: SimResult, rate_scale: float) -> None:
    """One line when the run overloads throughout: the --rate-scale that would fit."""
    hint = rp.rate_scale_hint(p, result, rate_scale)
    if hint is not None:
        # Loud (a warning, in colour on a terminal): a trace file is never rescaled for the user.
        console.print(hint, style="yellow", soft_wrap=True)


def _write_outputs(
    result: SimResult,
    title: str,
    json_out: Path | None,
    plot: Path | None,
    timeline: Path | None,
    plot_option: str = "--plot",
) -> None:
    if json_out is not None:
        rp.write_json(result, json_out)
        _saved("summary JSON", json_out)
    if timeline is not None:
        rp.write_timeline(result, timeline)
        _saved("timeline CSV", timeline)
    if plot is not None:
        rp.write_plot(result, plot, title, plot_option)
        _saved("plot", plot)


def traces_cmd(
    json_out: Annotated[
        Path | None, json_option("every bundled trace with its shape", also=False)
    ] = None,
) -> None:
    """List the bundled request traces: span, shape, mean and peak rate, license.

    Each name works wherever --trace takes a file (simulate, compare). Rates
    are the providers' own (scale them with --rate-scale); the peak is the
    highest one-minute mean. docs/traces.md says where each comes from.

    Examples:

        ecs-gpu traces

        ecs-gpu simulate spec.toml --trace servegen-m-mid --rate-scale 0.01
    """
    from ecs_gpu.outputs import write_text

    _use_stderr_if_stdout(json_out)
    bundled = bundled_traces()
    if json_out is not None:
        check_output(json_out, "--json", suffix=".json")
        docs = [t.as_dict() for t in bundled.values()]
        write_text(json_out, json.dumps(docs, indent=2) + "\n", "--json")
        return
    terminal.print_table(console, traces_table(bundled))


def simulate_cmd(
    spec: SpecArg,
    trace: TraceOpt,
    rate_scale: RateOpt = None,
    json_out: Annotated[Path | None, json_option("the summary")] = None,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="Write a PNG plot here (name ends in .png).")
    ] = None,
    timeline: Annotated[
        Path | None,
        typer.Option("--timeline", help="Write one CSV row per step here ('-': standard output)."),
    ] = None,
    sweep_gpu_target: Annotated[
        str | None,
        typer.Option(
            "--sweep-gpu-target",
            help="Compare GPU targets, e.g. 50,60,70,80: one table row each. Needs a GPU "
            "policy (a GPU signal, or gpu_guard with the concurrency signal).",
            show_default=False,
        ),
    ] = None,
    step: StepOpt = 10.0,
    seed: SeedOpt = 0,
    cold_start: ColdOpt = False,
    host_cpu_policy: HostCpuOpt = None,
) -> None:
    """Simulate the spec's autoscaling on a request trace; print what it costs and how it waits.

    Prints GPU-hours against a perfect-foresight oracle, cost, seconds of
    overload, unserved requests and the worst scale-out latency
    (docs/simulator.md explains the model and every figure). Same inputs and
    seed give the same JSON. Exit 2 on a bad spec, trace or option.

    Examples:

        ecs-gpu simulate spec.toml --trace requests.csv --rate-scale 3 --plot run.png

        ecs-gpu simulate spec.toml --trace requests.csv --sweep-gpu-target 50,60,70,80
    """
    check_step(step)
    runs.check_rate_scale(rate_scale)
    inputs = {"SPEC": spec, "--trace": runs.trace_input(trace)}
    _use_stderr_if_stdout(json_out, timeline)
    start: Start = "cold" if cold_start else "warm"
    if sweep_gpu_target is not None:
        if plot is not None or timeline is not None:
            raise BadInputError(
                "--sweep-gpu-target writes one table, not one plot per run. "
                "Fix: drop --plot/--timeline, or run once per target."
            )
        targets = runs.parse_targets(sweep_gpu_target)
        _check_outputs(inputs, json_out, None, None)
        p = _params(spec, host_cpu_policy)
        check_step(step, p)
        runs.check_sweepable(p, spec, sweep_gpu_target)
        tr = load_trace(trace)
        # One load for every row: sized at the spec's own target, not each row's.
        scale = _rate_scale(rate_scale, trace, p, tr, step, f"{spec.name} {runs.target_text(p)}")
        rows: list[tuple[str, dict[str, Any]]] = []
        results: list[tuple[SimParams, SimResult]] = []
        for target in targets:
            q = p.with_(tracking=p.tracking.with_(gpu_target_percent=target))
            r = _run(q, tr, f"GPU target {target:g} %", scale, step, seed, start)
            rows.append((f"GPU target {target:g} %", r.summary))
            results.append((q, r))
        title = f"{spec.name} on {tr.name} x{scale:.4g}"
        terminal.print_table(console, rp.comparison_table(rows, title, runs.cost_caption([p])))
        # The largest fleet of the sweep (lowest target) decides whether the load fits.
        _hint(*min(results, key=lambda qr: qr[0].tracking.gpu_target_percent), scale)
        if json_out is not None:
            rp.write_rows_json(rows, json_out)
            _saved("summary JSON", json_out)
        return
    _check_outputs(inputs, json_out, plot, timeline)
    p = _params(spec, host_cpu_policy)
    check_step(step, p)
    tr = load_trace(trace)
    scale = _rate_scale(rate_scale, trace, p, tr, step, runs.label(p, spec))
    result = _run(p, tr, spec.name, scale, step, seed, start)
    console.print(rp.summary_table(result, f"{runs.label(p, spec)} on {tr.name} x{scale:.4g}"))
    _hint(p, result, scale)
    title = f"{spec.name}: {p.instance_type}, {runs.target_text(p)} — {tr.name}"
    _write_outputs(result, title, json_out, plot, timeline)


def compare_cmd(
    specs: Annotated[
        list[Path],
        typer.Argument(help="Two or more TOML specs.", show_default=False, metavar="SPEC"),
    ],
    trace: TraceOpt,
    rate_scale: RateOpt = None,
    json_out: Annotated[Path | None, json_option("every summary")] = None,
    step: StepOpt = 10.0,
    seed: SeedOpt = 0,
    cold_start: ColdOpt = False,
) -> None:
    """Compare designs side by side on one trace: one table row per spec.

    Every spec runs on the same trace, rate scale, step and seed; the table
    shows GPU-hours, the ratio to the oracle, overload seconds, unserved
    requests, the worst scale-out latency and cost. Exit 2 on a bad spec,
    trace or option.

    Example:

        ecs-gpu compare reference.toml mine.toml --trace requests.csv --rate-scale 3
    """
    if len(specs) < 2:
        raise BadInputError(
            f"compare got one spec ({specs[0]}): it puts designs side by side. "
            "Fix: give two or more specs, or use `ecs-gpu simulate` "
            "(with --sweep-gpu-target to compare targets)."
        )
    if len(set(specs)) != len(specs):
        dup = next(s for s in specs if specs.count(s) > 1)
        raise BadInputError(f"compare: {dup} is given twice. Fix: give each spec once.")
    check_step(step)
    runs.check_rate_scale(rate_scale)
    _use_stderr_if_stdout(json_out)
    inputs: dict[str, Path | None] = {f"SPEC {path}": path for path in specs}
    inputs["--trace"] = runs.trace_input(trace)
    _check_outputs(inputs, json_out, None, None)
    loaded = [_params(path, None) for path in specs]
    for p in loaded:
        check_step(step, p)  # before any design runs
    tr = load_trace(trace)
    labels = [runs.label(p, path) for p, path in zip(loaded, specs, strict=True)]
    if len(set(labels)) != len(labels):
        # Same file name and target in two folders: the path tells them apart.
        labels = [runs.label(p, path, full=True) for p, path in zip(loaded, specs, strict=True)]
    start: Start = "cold" if cold_start else "warm"
    # Every design sees the same load, sized to the first spec (the reference).
    scale = _rate_scale(rate_scale, trace, loaded[0], tr, step, f"the first spec, {labels[0]}")
    rows: list[tuple[str, dict[str, Any]]] = []
    results: list[tuple[SimParams, SimResult]] = []
    for p, path, label in zip(loaded, specs, labels, strict=True):
        name = path.name
        # The twin runs inside this call, in this iteration (hence B023's noqa).
        r = runs.with_on_demand_twin(
            p, _run(p, tr, name, scale, step, seed, start),
            lambda od: _run(od, tr, f"{name}, all On-Demand", scale, step, seed, start),  # noqa: B023
        )  # fmt: skip
        rows.append((label, r.summary))
        if "on_demand_cost_usd" in r.summary:
            rows.append((f"{label}, all On-Demand", r.summary["on_demand"]))
        results.append((p, r))
    terminal.print_table(
        console, rp.comparison_table(rows, f"{tr.name} x{scale:.4g}", runs.cost_caption(loaded))
    )
    # The design with the most capacity decides whether the load fits at all.
    _hint(*max(results, key=lambda pr: pr[0].max_tasks * pr[0].task_capacity_rps), scale)
    if json_out is not None:
        rp.write_rows_json(rows, json_out)
        _saved("summary JSON", json_out)


def plan_cmd(
    spec: SpecArg,
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            metavar="PNG|DIR",
            help="The plot's path (ends in .png), or a folder to write <service>-plan.png "
            "into (default: beside SPEC).",
        ),
    ] = None,
    json_out: Annotated[Path | None, json_option("the summary")] = None,
    days: Annotated[
        float,
        typer.Option("--days", help="Simulate the first DAYS days of the 14-day trace.", min=0.1),
    ] = PLAN_DAYS,
    seed: SeedOpt = 0,
) -> None:
    """Validate and synthesize the spec, then predict it on a bundled real trace.

    Runs offline. The bundled trace (ServeGen M-large, 14 days; the first 3 by
    default) is scaled so its peak needs 80 % of max_tasks at the design's
    target: the GPU target, or on the concurrency signal the concurrency
    target's share of a task's full load (target_concurrency_per_task over
    task_capacity_rps x mean_request_s). The table and the plot show
    GPU-hours, the oracle, overload and scale-out latency. Exit 2 on a bad
    spec or option; exit 1 when validation finds problems (the plot is
    still written).

    The plot goes to -o, or beside SPEC as <service>-plan.png; its path is
    printed before the run and once written.

    Example:

        ecs-gpu plan spec.toml -o plan.png
    """
    _use_stderr_if_stdout(json_out)
    loaded = load_spec(spec)
    out = rp.plan_plot_path(spec, loaded.service.name, output)
    _check_outputs({"SPEC": spec}, json_out, out, None, plot_option="-o/--output")
    # Said before the minutes of work, and again once written.
    console.print(f"plot: {out} (written at the end)", soft_wrap=True, markup=False)
    problems = validate_and_render(console, terminal.err_console, loaded, spec)
    p = from_design(Design.of(loaded))
    tr = load_trace(bundled_trace_path()).head(days * 86400.0)
    step = 10.0
    scale = plan_rate_scale(p, tr, step)
    origin = f"bundled, first {tr.duration_s / 86400:g} days"
    console.print(plan_scale_note(p, tr, scale, step, origin), soft_wrap=True)
    twin = f"{spec.name}, all On-Demand"
    result = runs.with_on_demand_twin(
        p, _run(p, tr, spec.name, scale, step, seed, "warm"),
        lambda od: _run(od, tr, twin, scale, step, seed, "warm"),
    )  # fmt: skip
    console.print(rp.summary_table(result, f"plan: {runs.label(p, spec)}"))
    _hint(p, result, scale)
    title = f"{loaded.service.name}: {p.instance_type}, {runs.target_text(p)} — {tr.name}"
    _write_outputs(result, title, json_out, out, None, plot_option="-o/--output")
    if problems:
        raise typer.Exit(EXIT_PROBLEMS)
