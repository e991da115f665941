"""Issue 9 for the predict commands: '-' is stdout, outputs never overwrite inputs or each
other, files are replaced atomically, intervals <= 0 are refused, and a hint names the
--rate-scale that fits when the load is beyond the fleet."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from matplotlib.figure import Figure
from simhelp import CONCURRENCY, METRICS, spec_text

from ecs_gpu.cli import main


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    p = tmp_path / "spec.toml"
    p.write_text(spec_text(max_instances=4, max_tasks=4), encoding="utf-8")
    return p


def _trace(tmp_path: Path, per_window: int, name: str = "load.csv") -> Path:
    """Two hours of 10-minute windows at ``per_window`` requests each."""
    p = tmp_path / name
    rows = [f"{i * 600},{per_window}" for i in range(12)]
    p.write_text("timestamp_s,requests\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return p


def test_json_dash_is_stdout_and_the_table_goes_to_stderr(
    tmp_path: Path, spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace(tmp_path, 1200)
    assert main(["simulate", str(spec), "--trace", str(trace), "--json", "-"]) == 0
    out, err = capsys.readouterr()
    s = json.loads(out)
    assert s["trace"] == "load.csv" and s["gpu_hours"] > 0
    assert "GPU-hours" in err
    assert not (tmp_path / "-").exists() and not Path("-").exists()
    # The next command in the same process prints its table to stdout again.
    assert main(["simulate", str(spec), "--trace", str(trace)]) == 0
    assert "GPU-hours" in capsys.readouterr().out


def test_compare_and_sweep_json_dash(
    tmp_path: Path, spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace(tmp_path, 1200)
    other = tmp_path / "other.toml"
    other.write_text(spec_text(max_instances=4, max_tasks=4, scaling="gpu_target_percent = 60"))
    assert main(["compare", str(spec), str(other), "--trace", str(trace), "--json", "-"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 2
    code = main(
        ["simulate", str(spec), "--trace", str(trace), "--sweep-gpu-target", "60,70", "--json", "-"]
    )
    assert code == 0
    assert set(json.loads(capsys.readouterr().out)) == {"GPU target 60 %", "GPU target 70 %"}


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--json", "{spec}"], "SPEC"),
        (["--json", "{trace}"], "--trace"),
        (["--timeline", "{trace}"], "--trace"),
        (["--json", "{tmp}/a.json", "--timeline", "{tmp}/a.json"], "--timeline"),
        (["--json", "-", "--timeline", "-"], "--timeline"),
        (["--plot", "-"], "--plot"),
    ],
)
def test_outputs_may_not_overwrite_inputs_or_each_other(
    tmp_path: Path,
    spec: Path,
    args: list[str],
    named: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    trace = _trace(tmp_path, 1200)
    before = {p: p.read_bytes() for p in (spec, trace)}
    subst = {"{spec}": str(spec), "{trace}": str(trace), "{tmp}": str(tmp_path)}
    argv = [re.sub(r"\{\w+\}", lambda m: subst[m.group(0)], a) for a in args]
    code = main(["simulate", str(spec), "--trace", str(trace), *argv])
    captured = capsys.readouterr()
    assert code == 2
    err = " ".join(captured.err.split())
    assert named in err and "Fix:" in err and "Traceback" not in err
    # Refused before the run, and the inputs are untouched.
    assert "GPU-hours" not in captured.out
    assert {p: p.read_bytes() for p in (spec, trace)} == before
    assert not (tmp_path / "a.json").exists()


def test_plan_output_and_json_may_not_be_one_file(
    tmp_path: Path, spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = tmp_path / "plan.png"
    code = main(["plan", str(spec), "-o", str(same), "--json", str(same)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "-o/--output" in err and "--json" in err and "Fix:" in err
    assert main(["plan", str(spec), "-o", str(spec)]) == 2
    assert "-o/--output" in capsys.readouterr().err


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, spec: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from matplotlib.figure import Figure

    trace = _trace(tmp_path, 1200)
    plot = tmp_path / "run.png"
    plot.write_bytes(b"the previous plot")

    def half_then_fail(self: Figure, fname: object, **kw: object) -> None:
        Path(str(fname)).write_bytes(b"\x89PNG half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", half_then_fail)
    code = main(["simulate", str(spec), "--trace", str(trace), "--plot", str(plot)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "--plot" in err and "No space left on device" in err
    assert plot.read_bytes() == b"the previous plot"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["load.csv", "run.png", "spec.toml"]


def test_files_are_replaced_whole(tmp_path: Path, spec: Path) -> None:
    trace = _trace(tmp_path, 1200)
    out = tmp_path / "s.json"
    out.write_text("old " * 10000)
    tl = tmp_path / "t.csv"
    assert main(["simulate", str(spec), "--trace", str(trace), "--json", str(out),
                 "--timeline", str(tl)]) == 0  # fmt: skip
    assert json.loads(out.read_text())["trace"] == "load.csv"
    assert tl.read_text().splitlines()[0].startswith("t_s,offered_rps")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "load.csv",
        "s.json",
        "spec.toml",
        "t.csv",
    ]


@pytest.mark.parametrize("step", ["0", "-1", "-0", "-10"])
@pytest.mark.parametrize("command", ["simulate", "compare"])
def test_step_at_or_below_zero_exits_2_naming_it(
    tmp_path: Path, spec: Path, step: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace(tmp_path, 1200)
    specs = [str(spec)]
    if command == "compare":
        other = tmp_path / "b.toml"
        other.write_text(spec_text(scaling="gpu_target_percent = 60"), encoding="utf-8")
        specs.append(str(other))
    code = main([command, *specs, "--trace", str(trace), f"--step={step}"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert f"--step = {float(step)!r} s" in err and "Fix:" in err


def test_hint_names_the_rate_scale_that_fits(
    tmp_path: Path, spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 4 tasks x 2 req/s = 8 req/s at full load; the trace offers 20 req/s.
    trace = _trace(tmp_path, 12000)
    assert main(["simulate", str(spec), "--trace", str(trace)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    m = re.search(r"warning: overloaded (\d+)% of the run.*--rate-scale ([0-9.e+-]+) fits it", out)
    assert m is not None, out
    assert int(m.group(1)) > 50
    fit = float(m.group(2))
    # 4 tasks at the 70 % target serve 5.6 req/s of the 20 offered.
    assert fit == pytest.approx(5.6 / 20.0, rel=0.01)
    # At that factor the load fits: no hint, and the run barely overloads.
    assert main(["simulate", str(spec), "--trace", str(trace), "--rate-scale", str(fit)]) == 0
    assert "warning:" not in capsys.readouterr().out


def test_hint_on_the_concurrency_signal_uses_the_concurrency_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A task holds 2 req/s x 8 s = 16 requests at full load; a target of 8 holds
    # it at half load, so 4 tasks serve 4 req/s at the target (not 5.6 at 70 %).
    spec = tmp_path / "conc.toml"
    spec.write_text(
        spec_text(
            service='[service.metrics]\npreset = "vllm"',
            scaling="target_concurrency_per_task = 8",
        ),
        encoding="utf-8",
    )
    assert main(["simulate", str(spec), "--trace", str(_trace(tmp_path, 12000))]) == 0
    out = " ".join(capsys.readouterr().out.split())
    m = re.search(r"--rate-scale ([0-9.e+-]+) fits it", out)
    assert m is not None, out
    assert "at the target concurrency 8" in out
    assert float(m.group(1)) == pytest.approx(4.0 / 20.0, rel=0.01)


def test_no_hint_when_the_load_fits(
    tmp_path: Path, spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", str(spec), "--trace", str(_trace(tmp_path, 1200))]) == 0
    assert "warning:" not in capsys.readouterr().out


def test_trace_by_bundled_name(spec: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(spec), "--trace", "azure2023-conv", "--json", "-"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["trace"] == "AzureLLMInferenceTrace_conv.csv"
    assert s["duration_s"] >= 3500


# --- What the outputs say about designs without a GPU policy, and about cost ---

CONC_SPEC = spec_text(service=METRICS, scaling=CONCURRENCY)
GUARD_SPEC = spec_text(service=METRICS, scaling=f"{CONCURRENCY}\ngpu_guard = true")
POOL_SPEC = spec_text(service=METRICS, scaling=CONCURRENCY, capacity="[capacity.warm_pool]")


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _wide_console(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """The commands' console, wide enough that no table cell wraps."""
    from rich.console import Console

    from ecs_gpu.cli import predict

    screen = io.StringIO()
    monkeypatch.setattr(predict, "console", Console(file=screen, width=400))
    return screen


@pytest.mark.parametrize(
    ("text", "meaning"),
    [
        (CONC_SPEC, "mean GPU metric (task-gpus, no GPU policy tracks it)"),
        (GUARD_SPEC, "mean policy metric (task-gpus)"),
        (spec_text(), "mean policy metric (task-gpus)"),
    ],
)
def test_summary_says_whether_a_policy_tracks_the_gpu_metric(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, meaning: str
) -> None:
    screen = _wide_console(monkeypatch)
    spec = _write(tmp_path, "spec.toml", text)
    assert main(["simulate", str(spec), "--trace", str(_trace(tmp_path, 1200))]) == 0
    out = screen.getvalue()
    assert meaning in out
    assert ("policy metric" in out) == ("policy metric" in meaning)


def _drawn_figures(monkeypatch: pytest.MonkeyPatch) -> list[Figure]:
    """Every figure write_plot saves, kept for inspection (still written as before)."""
    drawn: list[Figure] = []
    save = Figure.savefig

    def keep(self: Figure, *args: Any, **kw: Any) -> None:
        drawn.append(self)
        save(self, *args, **kw)

    monkeypatch.setattr(Figure, "savefig", keep)
    return drawn


def _gpu_panel_labels(fig: Figure) -> list[str]:
    (ax,) = [a for a in fig.axes if a.get_ylabel() == "GPU utilization %"]
    return [str(line.get_label()) for line in ax.get_lines()]


@pytest.mark.parametrize(
    ("text", "targets"), [(CONC_SPEC, False), (GUARD_SPEC, True), (spec_text(), True)]
)
def test_plot_draws_the_gpu_target_only_where_a_gpu_policy_tracks_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, targets: bool
) -> None:
    drawn = _drawn_figures(monkeypatch)
    spec = _write(tmp_path, "spec.toml", text)
    plot = tmp_path / "run.png"
    code = main(
        ["simulate", str(spec), "--trace", str(_trace(tmp_path, 1200)), "--plot", str(plot)]
    )
    assert code == 0
    (fig,) = drawn
    labels = _gpu_panel_labels(fig)
    assert ("target 70 %" in labels) == targets
    assert ("scale-in threshold (0.9 x target)" in labels) == targets
    # The series themselves are always there.
    assert "GPUs held by ready tasks (truth)" in labels and len(labels) == 2 + 2 * targets


def test_compare_labels_a_concurrency_design_by_its_targets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    guard = _write(tmp_path, "guard.toml", GUARD_SPEC)
    conc = _write(tmp_path, "conc.toml", CONC_SPEC)
    gpu = _write(tmp_path, "gpu.toml", spec_text())
    trace = _trace(tmp_path, 1200)
    assert main(["compare", str(guard), str(conc), str(gpu), "--trace", str(trace),
                 "--json", "-"]) == 0  # fmt: skip
    assert sorted(json.loads(capsys.readouterr().out)) == [
        "conc.toml concurrency 11.2/task",
        "gpu.toml GPU 70%",
        "guard.toml concurrency 11.2/task + GPU guard 70%",
    ]


def test_sweep_gpu_target_without_a_gpu_policy_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _write(tmp_path, "conc.toml", CONC_SPEC)
    trace = _trace(tmp_path, 1200)
    code = main(["simulate", str(spec), "--trace", str(trace), "--sweep-gpu-target", "50,90"])
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert code == 2
    assert "--sweep-gpu-target = '50,90'" in err and str(spec) in err
    assert "no GPU policy" in err and "Fix:" in err
    assert "target_concurrency_per_task" in err and "gpu_guard = true" in err
    assert "Traceback" not in err and "GPU-h" not in captured.out
    # With the guard the sweep moves the guard's target: it runs.
    guard = _write(tmp_path, "guard.toml", GUARD_SPEC)
    code = main(["simulate", str(guard), "--trace", str(trace), "--sweep-gpu-target", "50,90",
                 "--json", "-"])  # fmt: skip
    assert code == 0
    assert set(json.loads(capsys.readouterr().out)) == {"GPU target 50 %", "GPU target 90 %"}


def test_plan_help_names_the_target_the_trace_is_scaled_at(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "80 % of max_tasks at the design's target" in text
    assert "the concurrency target's share of a task's full load" in text
    assert "at the GPU target;" not in text


@pytest.mark.parametrize(("text", "pool"), [(POOL_SPEC, True), (CONC_SPEC, False)])
def test_cost_says_what_it_prices_and_the_pool_has_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, pool: bool
) -> None:
    screen = _wide_console(monkeypatch)
    drawn = _drawn_figures(monkeypatch)
    spec = _write(tmp_path, "spec.toml", text)
    other = _write(tmp_path, "other.toml", spec_text())
    trace = _trace(tmp_path, 1200)
    plot = tmp_path / "run.png"
    assert main(["simulate", str(spec), "--trace", str(trace), "--plot", str(plot)]) == 0
    out = screen.getvalue()
    (cost,) = [line for line in out.splitlines() if "cost USD" in line]
    # The summary's meaning column always says what the cost counts and leaves out.
    assert "on-demand instance-hours x price" in cost
    priced = "+ the pool's stopped volumes at the gp3 price (us-east-1, 2026-12-01)"
    assert (priced in cost) == pool
    assert ("in-service EBS volumes not priced" if pool else "EBS volumes not priced") in cost
    # With a pool its cost has its own line, and it adds up.
    pool_lines = [line for line in out.splitlines() if "warm pool USD" in line]
    assert len(pool_lines) == int(pool)
    if pool:
        assert "stopped instance-hours x $0.0222/h of volume" in pool_lines[0]
    # The plot's footer and compare's table say it only with a pool.
    footer = " ".join(t.get_text() for t in drawn[0].texts)
    assert (priced in footer) == pool
    screen.truncate(0)
    screen.seek(0)
    assert main(["compare", str(spec), str(other), "--trace", str(trace)]) == 0
    caption = "USD: on-demand instance-hours x price (the warm pool's running ones included)"
    assert (caption in " ".join(screen.getvalue().split())) == pool


def test_simulate_json_carries_the_pool_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _write(tmp_path, "spec.toml", POOL_SPEC)
    trace = _trace(tmp_path, 1200)
    assert main(["simulate", str(spec), "--trace", str(trace), "--json", "-"]) == 0
    s = json.loads(capsys.readouterr().out)
    keys = ("warm_pool_cost_usd", "warm_pool_running_instance_hours",
            "warm_pool_stopped_instance_hours")  # fmt: skip
    assert all(isinstance(s[k], float) for k in keys)
    # The default pool (1 instance) waited stopped the whole run: its volume
    # (200 GiB x $0.08 a 720-h month) is the pool's cost, inside the total.
    assert s["warm_pool_stopped_instance_hours"] == pytest.approx(s["duration_s"] / 3600)
    volume = s["warm_pool_stopped_instance_hours"] * 16 / 720
    assert s["warm_pool_cost_usd"] == pytest.approx(volume, abs=0.01)
    assert s["cost_usd"] == pytest.approx(s["instance_hours"] * 1.006 + volume, abs=0.01)


def test_comparison_table_never_cuts_a_figure_at_80_columns() -> None:
    import io

    from rich.console import Console

    from ecs_gpu.cli.terminal import print_table
    from ecs_gpu.sim.report import comparison_table

    summary = {
        "gpu_hours": 12345.6,
        "gpu_hours_ratio_to_oracle": 1.07,
        "overload_seconds": 123450.0,
        "unserved_requests": 98765.0,
        "worst_scale_out_latency_s": 600.0,
        "overloaded_at_end_s": None,
        "cost_usd": 12345.67,
    }
    label = "a-rather-long-design-name.toml concurrency 11/task + GPU guard 70%"
    out = io.StringIO()
    print_table(Console(file=out, width=80), comparison_table([(label, summary)], "t"))
    text = out.getvalue()
    assert "…" not in text
    for figure in (label, "12345.6", "1.07", "123450", "98765", "10.0 min", "12,345.67"):
        assert figure in text, text
