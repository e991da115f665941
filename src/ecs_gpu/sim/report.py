"""Outputs of a run: summary JSON, timeline CSV, a plot, and the comparison table."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.table import Table

from ecs_gpu import catalog, outputs
from ecs_gpu.sim.engine import TIMELINE_COLUMNS, SimResult
from ecs_gpu.sim.params import SimParams
from ecs_gpu.sim.signal_words import TARGET_WORDS


def summary_json(result: SimResult) -> str:
    """The summary as stable JSON text (sorted keys: same run, same bytes)."""
    return json.dumps(result.summary, indent=2, sort_keys=True) + "\n"


def write_json(result: SimResult, path: Path, option: str = "--json") -> None:
    """The summary JSON to ``path`` (``-``: standard output), written atomically."""
    outputs.check_output(path, option)
    outputs.write_text(path, summary_json(result), option)


def _fmt(v: float) -> str:
    if math.isnan(v):
        return ""
    if v == int(v):
        return str(int(v))
    return f"{v:.3f}"


def write_timeline(result: SimResult, path: Path, option: str = "--timeline") -> None:
    """One row per simulated step; empty cells where a metric has no datapoint."""
    outputs.check_output(path, option)
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(TIMELINE_COLUMNS)
    for row in result.rows:
        w.writerow([_fmt(v) for v in row])
    outputs.write_text(path, buf.getvalue(), option)


# The plot is a PNG (--plot OUT.png); other names are refused.
PLOT_SUFFIX = ".png"


def plan_plot_path(spec_path: Path, service: str, output: Path | None) -> Path:
    """Where ``plan`` writes its plot: ``-o`` (a file, or a folder to put it in),
    else beside the spec, never silently into the working directory."""
    name = f"{service}-plan{PLOT_SUFFIX}"
    if output is None:
        return spec_path.parent / name
    return output / name if output.is_dir() else output


# More points than a plot is wide only blur it: long runs are averaged into bins.
PLOT_MAX_POINTS = 1500


def _bin_timeline(
    timeline: dict[str, list[float]], max_points: int
) -> tuple[dict[str, list[float]], int]:
    """Bin means of every column (NaN-aware) when there are more than ``max_points`` steps."""
    import numpy as np

    n = len(timeline["t_s"])
    if n <= max_points:
        return timeline, 0
    k = math.ceil(n / max_points)
    m = n // k
    out: dict[str, list[float]] = {}
    for name, col in timeline.items():
        arr = np.asarray(col[: m * k], dtype=np.float64).reshape(m, k)
        if name == "t_s":
            out[name] = arr[:, 0].tolist()
            continue
        ok = ~np.isnan(arr)
        cnt = ok.sum(axis=1)
        sums = np.where(ok, arr, 0.0).sum(axis=1)
        out[name] = np.where(cnt > 0, sums / np.maximum(cnt, 1), np.nan).tolist()
    return out, k


# What the policy's series is, in the legend: the two [scaling] gpu_metric designs.
PLOT_METRIC_LABEL: dict[str, str] = {
    "tasks": "policy metric: task-gpus\n(ASG average x 100 / GPUReservation)",
    "asg": "policy metric: asg-average\n(all GPUs, idle ones at 0 %)",
}


def write_plot(result: SimResult, path: Path, title: str, option: str = "--plot") -> None:
    """Load vs ready capacity, tasks, instances and the GPU metric on one time axis."""
    outputs.check_output(path, option, PLOT_SUFFIX)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    p = result.params
    raw = dict(result.timeline)
    raw["overloaded"] = [
        1.0 if o > c + 1e-9 else 0.0
        for o, c in zip(raw["offered_rps"], raw["ready_capacity_rps"], strict=True)
    ]
    tl, binned = _bin_timeline(raw, PLOT_MAX_POINTS)
    x, unit = _time_axis(tl["t_s"], result.summary["duration_s"], binned)
    # The concurrency signal gets its own panel: what its policies track.
    conc = p.tracking.target_concurrency is not None
    fig, axes = plt.subplots(
        4 if conc else 3,
        1,
        figsize=(14, 11 if conc else 9),
        sharex=True,
        gridspec_kw={"height_ratios": [3, 2, 2, 2] if conc else [3, 2, 2]},
    )
    _plot_load(axes[0], x, tl, title)
    _plot_fleet(axes[1], x, tl, p)
    _plot_gpu(axes[2], x, tl, p)
    if conc and p.tracking.target_concurrency is not None:
        _plot_concurrency(axes[3], x, tl, p, p.tracking.target_concurrency)
    axes[-1].set_xlabel(f"time ({unit})")
    for ax in axes:
        ax.grid(alpha=0.3)
    s = result.summary
    fig.text(
        0.01,
        0.005,
        f"GPU-hours {s['gpu_hours']:.1f} (oracle {s['oracle_gpu_hours']:.1f}), "
        f"overload {s['overload_seconds'] / 60:.0f} min, "
        f"unserved {s['unserved_requests']:.0f} requests, cost ${s['cost_usd']:.2f}"
        + ("" if p.warm_pool.min_size is None else f" ({cost_meaning(True)})"),
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0.02, 1, 1))
    # format= pins PNG: without it matplotlib picks the format from the name
    # (and the temporary file's name ends in .part).
    try:
        outputs.write_with(path, option, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    finally:
        plt.close(fig)


def _time_axis(t_s: list[float], duration_s: float, binned: int) -> tuple[list[float], str]:
    """The x values and their unit: days on multi-day runs, hours on long ones, minutes on
    short ones, so the axis reads naturally (a 14-day trace would otherwise run to 336 hours)."""
    if duration_s > 3 * 86400:
        scale, unit = 86400.0, "days"
    elif duration_s > 6 * 3600:
        scale, unit = 3600.0, "hours"
    else:
        scale, unit = 60.0, "minutes"
    if binned:
        unit += f"; each point is the mean of {binned} steps"
    return [t / scale for t in t_s], unit


def _plot_load(ax: Any, x: list[float], tl: dict[str, list[float]], title: str) -> None:
    """Offered load against ready capacity, overloaded steps shaded."""
    ax.plot(x, tl["offered_rps"], color="tab:gray", lw=0.8, label="offered load")
    ax.plot(x, tl["ready_capacity_rps"], color="tab:blue", lw=1.4, label="ready capacity")
    # A bin is shaded if any of its steps was overloaded.
    over = [v > 0 for v in tl["overloaded"]]
    top = max(max(tl["offered_rps"], default=1.0), max(tl["ready_capacity_rps"], default=1.0))
    ax.fill_between(x, 0, top, where=over, color="tab:red", alpha=0.15, step="post",
                    label="overload (load > ready capacity)")  # fmt: skip
    ax.set_ylabel("requests / s")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.set_title(title, fontsize=11)


def _plot_fleet(ax: Any, x: list[float], tl: dict[str, list[float]], p: SimParams) -> None:
    """Desired and running tasks, instances, and the max_tasks ceiling."""
    from matplotlib.ticker import MaxNLocator

    ax.step(x, tl["desired_tasks"], where="post", color="tab:orange", lw=1.2, label="desired")
    ax.step(x, tl["running_tasks"], where="post", color="tab:green", lw=1.2, label="running")
    ax.step(x, tl["instances"], where="post", color="tab:purple", lw=1.2, ls="--",
            label=f"instances ({p.instance_type})")  # fmt: skip
    # The ceiling: desired pinned here while load still rises means max_tasks binds.
    ax.axhline(p.max_tasks, color="black", ls=":", lw=1.0, label=f"max_tasks {p.max_tasks}")
    ax.set_ylim(0, max(p.max_tasks, p.max_instances, max(tl["instances"], default=0)) * 1.08)
    # Tasks and instances are whole numbers: no 2.5 on the axis.
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("tasks / instances")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)


def _plot_gpu(ax: Any, x: list[float], tl: dict[str, list[float]], p: SimParams) -> None:
    """The GPU metric the policy sees against the GPUs ready tasks hold, and its target."""
    metric_label = PLOT_METRIC_LABEL[p.metrics.gpu_metric_scope]
    if not p.gpu_policy:
        metric_label = metric_label.replace("policy metric", "GPU metric (no GPU policy)")
    # The truth goes underneath, wider, so it shows where the policy metric
    # matches it (task-gpus) instead of being hidden by it.
    ax.plot(x, tl["task_gpu_util"], color="tab:cyan", lw=2.2, alpha=0.5,
            label="GPUs held by ready tasks (truth)")  # fmt: skip
    ax.plot(x, tl["gpu_metric"], color="tab:red", lw=0.9, label=metric_label)
    if p.gpu_policy:
        # Without a GPU policy gpu_target_percent drives nothing: no line for it.
        target = p.tracking.gpu_target_percent
        ax.axhline(target, color="black", ls=":", lw=1.0, label=f"target {target:g} %")
        ax.axhline(target * 0.9, color="gray", ls=":", lw=0.8,
                   label="scale-in threshold (0.9 x target)")  # fmt: skip
    ax.set_ylim(0, 105)
    ax.set_ylabel("GPU utilization %")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)


def _plot_concurrency(
    ax: Any, x: list[float], tl: dict[str, list[float]], p: SimParams, target: float
) -> None:
    """The concurrency per task its policies track, the target and the fast path's threshold."""
    ax.plot(x, tl["concurrency_per_task"], color="tab:brown", lw=0.9,
            label="requests running + waiting per running task")  # fmt: skip
    ax.axhline(target, color="black", ls=":", lw=1.0, label=f"target {target:g}")
    if p.fast_path is not None:
        ax.axhline(p.fast_path.threshold, color="tab:red", ls="--", lw=0.8,
                   label=f"fast path at {p.fast_path.threshold:g}")  # fmt: skip
    ax.set_ylim(bottom=0)
    ax.set_ylabel("concurrency per task")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)


def worst_latency(summary: dict[str, Any]) -> str:
    w = summary.get("worst_scale_out_latency_s")
    end = summary.get("overloaded_at_end_s")
    text = "-" if w is None else f"{w / 60:.1f} min"
    if end is not None:
        text += f" (+{end / 60:.0f} min open at end)"
    return text


def cost_meaning(warm_pool: bool) -> str:
    """What cost_usd counts: instance-hours at the on-demand price and, with a
    pool, its stopped instances' volumes at the gp3 price; in-service
    instances' volumes are not priced."""
    if not warm_pool:
        return "on-demand instance-hours x price; EBS volumes not priced"
    return (
        "on-demand instance-hours x price (the warm pool's running ones included) + the "
        f"pool's stopped volumes at the gp3 price ({catalog.PRICE_REGION}, "
        f"{catalog.GP3_PRICE_DATE}); in-service EBS volumes not priced"
    )


def spot_cost_meaning(p: SimParams) -> str:
    """What cost_usd counts with [capacity.spot]: both markets' hours at their prices."""
    return (
        f"On-Demand instance-hours x ${p.price_usd_per_hour:g}/h + Spot instance-hours x "
        f"${p.spot.price_usd_per_hour:.4g}/h ([simulation] spot_discount_percent, else the "
        "catalog's dated discount); EBS volumes not priced"
    )


def spot_lines(s: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The summary table's Spot rows (none for a run without Spot)."""
    if "spot_instance_hours" not in s:
        return []
    rate = s["spot_interruptions_per_instance_hour"]
    lines = [
        (
            "Spot instance-hours",
            f"{s['spot_instance_hours']:.1f}",
            f"{s['spot_interruptions']} interruptions at {rate:.3g} per instance-hour, "
            f"{s['spot_replaced_tasks']} tasks replaced; base {s['on_demand_base']} "
            f"On-Demand, {s['spot_percent']} % of the rest on Spot",
        )
    ]
    if "on_demand_cost_usd" in s:
        saving = s["spot_saving_percent"]
        lines += [
            (
                "vs all On-Demand",
                "-" if saving is None else f"{saving:.0f} % less",
                f"the same design all On-Demand costs ${s['on_demand_cost_usd']:,.2f} with "
                f"{s['on_demand_overload_seconds']:.0f} s of overload (same trace and seed)",
            ),
            (
                "interruption overload s",
                f"{s['interruption_overload_seconds']:+.0f}",
                "overload seconds the Spot interruptions add",
            ),
        ]
    return lines


def pool_cost_meaning(summary: dict[str, Any], p: SimParams) -> str:
    """How warm_pool_cost_usd adds up, with the run's own figures."""
    stopped = summary.get("warm_pool_stopped_instance_hours", 0.0)
    running = summary.get("warm_pool_running_instance_hours", 0.0)
    why = "a Running pool" if p.warm_pool.state == "Running" else "warming"
    return (
        f"{stopped:,.1f} stopped instance-hours x ${p.warm_pool.volume_usd_per_hour:.4f}/h of "
        f"volume + {running:,.1f} running ({why}) instance-hours x "
        f"${p.price_usd_per_hour:g}/h; part of the cost above"
    )


def comparison_table(
    rows: Sequence[tuple[str, dict[str, Any]]], title: str, caption: str | None = None
) -> Table:
    """One row per design: GPU-hours, ratio to oracle, overload, worst latency, cost."""
    table = Table(title=title, caption=caption)
    # Nothing is cut: print it with terminal.print_table (a pipe or CI log gets 80 columns).
    table.add_column("design", no_wrap=True)
    for col in ("GPU-h", "x oracle", "overload s", "unserved", "worst wait", "USD"):
        table.add_column(col, justify="right", no_wrap=True)
    for label, s in rows:
        ratio = s.get("gpu_hours_ratio_to_oracle")
        table.add_row(
            label,
            f"{s['gpu_hours']:.1f}",
            "-" if ratio is None else f"{ratio:.2f}",
            f"{s['overload_seconds']:.0f}",
            f"{s['unserved_requests']:.0f}",
            worst_latency(s),
            f"{s['cost_usd']:,.2f}",
        )
    return table


def zero_lines(s: dict[str, Any]) -> list[tuple[str, str, str]]:
    """A design that may run no task: its idle GPU-hours and its first requests' waits."""
    if "idle_gpu_hours" not in s:
        return []
    waits = s["cold_start_waits_s"]
    worst = s["worst_cold_start_wait_s"]
    return [
        (
            "idle GPU-hours",
            f"{s['idle_gpu_hours']:.2f}",
            f"billed in the {s['idle_hours']:.1f} h with no load; "
            f"sleep alarm scale-ins {s.get('sleep_scale_ins', 0)}",
        ),
        (
            "wait after zero",
            "-" if worst is None else f"{worst / 60:.1f} min",
            f"longest of {len(waits)} first-request wait(s) after zero; "
            f"wake alarm scale-outs {s['wake_scale_outs']}",
        ),
    ]


def summary_table(result: SimResult, title: str) -> Table:
    """One run's summary, one line per figure, with what it means."""
    s, p = result.summary, result.params
    table = Table(title=title, show_header=False)
    table.add_column("figure", no_wrap=True)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("meaning")
    ratio = s.get("gpu_hours_ratio_to_oracle")
    gm, tg = s.get("gpu_metric_mean_percent"), s.get("task_gpu_util_mean_percent")
    lines = [
        ("GPU-hours", f"{s['gpu_hours']:.1f}", "GPUs paid for x hours"),
        (
            "oracle GPU-hours",
            f"{s['oracle_gpu_hours']:.1f}",
            "perfect foresight, no start-up delay, same target"
            + ("" if ratio is None else f" (ratio {ratio:.2f})"),
        ),
        (
            "cost USD",
            f"{s['cost_usd']:.2f}",
            cost_meaning(p.warm_pool.min_size is not None)
            if not p.spot.percent
            else spot_cost_meaning(p),
        ),
        *spot_lines(s),
        *(
            []
            if p.warm_pool.min_size is None
            else [("warm pool USD", f"{s['warm_pool_cost_usd']:.2f}", pool_cost_meaning(s, p))]
        ),
        ("overload s", f"{s['overload_seconds']:.0f}", "seconds with load > ready capacity"),
        ("unserved requests", f"{s['unserved_requests']:.0f}", "beyond the queue bound"),
        (
            "worst scale-out",
            worst_latency(s),
            f"of {len(s['scale_out_latency_s'])} overload episodes, until capacity covered load",
        ),
        ("max tasks / instances", f"{s['max_tasks']} / {s['max_instances']}", "running peak"),
        *zero_lines(s),
        (
            "signal",
            str(s.get("signal", "-")),
            f"fast-path scale-outs {s.get('fast_path_scale_outs', 0)}, "
            f"fast scale-ins {s.get('fast_scale_ins', 0)}, "
            f"warm-pool starts {s.get('warm_pool_starts', 0)}",
        ),
        (
            "GPU metric / task GPUs",
            "-" if gm is None or tg is None else f"{gm:.0f} % / {tg:.0f} %",
            (
                f"mean policy metric ({s.get('gpu_metric', '?')})"
                if p.gpu_policy
                else f"mean GPU metric ({s.get('gpu_metric', '?')}, no GPU policy tracks it)"
            )
            + " vs the GPUs ready tasks hold",
        ),
    ]
    for row in lines:
        table.add_row(*row)
    return table


def write_rows_json(
    rows: Sequence[tuple[str, dict[str, Any]]], path: Path, option: str = "--json"
) -> None:
    """Several labelled summaries (a sweep or a comparison) as one JSON object."""
    data = {label: summary for label, summary in rows}
    if len(data) != len(rows):
        # A label twice would silently drop a row from the object.
        raise ValueError("write_rows_json: row labels must be unique")
    outputs.check_output(path, option)
    outputs.write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n", option)


# A run overloaded for more than this share of its time reads as "everything
# overloads": the load, not the scaling, is the problem.
HINT_OVERLOAD_FRACTION = 0.5


def target_text(p: SimParams) -> str:
    """The design's target in words: what `plan` and the hint size the load against."""
    # The first tracked signal with a target is the design's own (SignalPlan.tracked).
    targets = p.targets
    if not targets:
        return TARGET_WORDS[p.signal_plan.gpu_series](p.tracking.gpu_target_percent).design
    signal, target = targets[0]
    return TARGET_WORDS[signal](target).design


def rate_scale_hint(p: SimParams, result: SimResult, rate_scale: float) -> str | None:
    """One line with the --rate-scale that fits, when the load is beyond the fleet.

    Shown when the peak load exceeds what ``max_tasks`` serve at full load, or
    the run was overloaded for most of its time, and a smaller factor would
    put the peak at ``max_tasks`` at the design's target (:func:`target_text`). None otherwise.
    """
    peak = max(result.timeline["offered_rps"], default=0.0)
    s = result.summary
    duration = s["duration_s"]
    full = p.max_tasks * p.task_capacity_rps
    at_target = p.max_tasks * p.rps_per_task_at_target
    what = target_text(p)
    share = s["overload_seconds"] / duration if duration else 0.0
    if peak <= 0 or not (peak > full or share > HINT_OVERLOAD_FRACTION):
        return None
    fit = rate_scale * at_target / peak
    if fit >= rate_scale:
        return None
    return (
        f"warning: overloaded {share:.0%} of the run; the peak load ({peak:.4g} req/s) is "
        f"{peak / at_target:.3g}x what max_tasks ({p.max_tasks}) serve at the {what} "
        f"({at_target:.4g} req/s). --rate-scale {fit:.3g} fits it, or raise max_tasks."
    )
