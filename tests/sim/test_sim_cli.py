"""The predict commands through the real CLI entry point."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from simhelp import CONCURRENCY, METRICS, spec_text

from ecs_gpu.cli import main, predict
from ecs_gpu.sim import from_spec, plan_rate_scale
from ecs_gpu.sim.workload import load_trace
from ecs_gpu.spec import load_spec

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    p = tmp_path / "spec.toml"
    p.write_text(spec_text(max_instances=6, max_tasks=6), encoding="utf-8")
    return p


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """Six hours of 10-minute windows: a ramp up and back down."""
    p = tmp_path / "ramp.csv"
    counts = [300, 600, 1200, 2400, 3600, 4800] * 2
    counts += list(reversed(counts))
    rows = [f"{i * 600},{c}" for i, c in enumerate(counts)]
    p.write_text("timestamp_s,requests\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return p


def test_simulate_writes_json_csv_png(
    tmp_path: Path, spec: Path, trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_json, out_png, out_csv = tmp_path / "s.json", tmp_path / "s.png", tmp_path / "s.csv"
    code = main(
        [
            "simulate",
            str(spec),
            "--trace",
            str(trace),
            "--rate-scale",
            "1.5",
            "--json",
            str(out_json),
            "--plot",
            str(out_png),
            "--timeline",
            str(out_csv),
        ]
    )
    assert code == 0, capsys.readouterr()
    s = json.loads(out_json.read_text())
    for key in (
        "gpu_hours",
        "oracle_gpu_hours",
        "overload_seconds",
        "unserved_requests",
        "scale_out_latency_s",
        "max_tasks",
        "max_instances",
        "cost_usd",
    ):
        assert key in s
    assert s["rate_scale"] == 1.5
    assert s["trace"] == "ramp.csv"
    assert s["max_tasks"] > 1
    assert s["cost_usd"] == pytest.approx(s["instance_hours"] * 1.006, abs=0.01)
    with out_csv.open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 24 * 600 // 10
    assert {"t_s", "offered_rps", "ready_capacity_rps", "desired_tasks", "running_tasks",
            "instances", "gpu_metric"} <= set(rows[0])  # fmt: skip
    assert max(int(r["instances"]) for r in rows) == s["max_instances"]
    assert out_png.read_bytes()[:8] == PNG_MAGIC
    assert "GPU-hours" in capsys.readouterr().out


def test_same_seed_same_json_other_seed_differs(tmp_path: Path, spec: Path, trace: Path) -> None:
    outs = []
    for i, seed in enumerate(("7", "7", "8")):
        out = tmp_path / f"{i}.json"
        args = ["simulate", str(spec), "--trace", str(trace), "--seed", seed, "--json", str(out)]
        assert main(args) == 0
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    # Poisson arrivals and boot jitter depend on the seed.
    assert outs[0] != outs[2]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("", ":1"),
        ("timestamp_s,requests,flavour\n0,1,2\n", ":1: column 'flavour'"),
        ("timestamp_s,requests\n0,1\n600,-1\n", ":3: column 'requests'"),
        ("timestamp_s,requests\n0,1\n600,many\n", ":3: column 'requests'"),
        ("timestamp_s,requests\n600,1\n0,1\n", ":3: column 'timestamp_s'"),
    ],
)
def test_bad_trace_exits_2_naming_file_line_column(
    tmp_path: Path, spec: Path, text: str, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(text, encoding="utf-8")
    code = main(["simulate", str(spec), "--trace", str(bad)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"{bad}{where}" in " ".join(err.split())
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "extra",
    [
        ["--rate-scale", "0"],
        ["--rate-scale", "inf"],
        ["--rate-scale", "nan"],
        ["--rate-scale", "1e300"],
        ["--step", "7"],
        ["--step", "inf"],
        ["--step", "nan"],
        ["--step", "0.0001"],
        ["--sweep-gpu-target", "50,abc"],
        ["--sweep-gpu-target", "50,120"],
        ["--sweep-gpu-target", "50,60,50"],
        ["--host-cpu-policy", "0"],
        ["--json", "/no/such/dir/out.json"],
        ["--json", "{tmp}"],
        ["--timeline", "{tmp}"],
        ["--plot", "{tmp}"],
        ["--plot", "{tmp}/plot.jpg"],
    ],
)
def test_bad_options_exit_2(
    tmp_path: Path, spec: Path, trace: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.replace("{tmp}", str(tmp_path)) for a in extra]
    code = main(["simulate", str(spec), "--trace", str(trace), *args])
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert code == 2
    # The message names the option and the value, and says how to fix it.
    assert f"{args[0]} " in err
    assert args[1] in err or _float_repr(args[1]) in err
    assert "Fix" in err
    assert "Traceback" not in err
    # Output paths are checked before the run: nothing was simulated.
    assert "GPU-hours" not in captured.out


def _float_repr(text: str) -> str:
    """How an option's number reads in the message ("1e300" -> "1e+300")."""
    try:
        return repr(float(text))
    except ValueError:
        return text


def test_negative_seed_is_refused_by_the_parser(
    spec: Path, trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["simulate", str(spec), "--trace", str(trace), "--seed", "-1"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--seed" in err and "Traceback" not in err


def test_sweep_prints_one_row_per_target(
    tmp_path: Path, spec: Path, trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sweep.json"
    code = main(
        ["simulate", str(spec), "--trace", str(trace), "--sweep-gpu-target", "50,80",
         "--json", str(out)]
    )  # fmt: skip
    assert code == 0
    text = capsys.readouterr().out
    assert "GPU target 50 %" in text and "GPU target 80 %" in text
    data = json.loads(out.read_text())
    lo, hi = data["GPU target 50 %"], data["GPU target 80 %"]
    # A lower target runs more GPUs for the same load.
    assert lo["gpu_hours"] > hi["gpu_hours"]
    assert lo["oracle_gpu_hours"] > hi["oracle_gpu_hours"]


def test_compare_two_specs(
    tmp_path: Path, spec: Path, trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = tmp_path / "reference.toml"
    ref.write_text(
        spec_text(
            max_instances=6,
            max_tasks=6,
            scaling="gpu_target_percent = 60\ncpu_target_percent = 60\n"
            "scale_out_cooldown_s = 300\nscale_in_cooldown_s = 300",
        ),
        encoding="utf-8",
    )
    out = tmp_path / "cmp.json"
    code = main(["compare", str(ref), str(spec), "--trace", str(trace), "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "reference.toml" in text and "spec.toml" in text
    data = json.loads(out.read_text())
    assert sorted(data) == ["reference.toml GPU 60%", "spec.toml GPU 70%"]
    assert data["reference.toml GPU 60%"]["gpu_target_percent"] == 60
    assert data["spec.toml GPU 70%"]["gpu_target_percent"] == 70
    # The lower target runs more GPUs for the same trace.
    assert (
        data["reference.toml GPU 60%"]["oracle_gpu_hours"]
        > (data["spec.toml GPU 70%"]["oracle_gpu_hours"])
    )


def test_compare_refuses_a_step_the_concurrency_signal_cannot_use_before_any_run(
    tmp_path: Path,
    spec: Path,
    trace: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conc = tmp_path / "conc.toml"
    conc.write_text(
        spec_text(max_instances=6, max_tasks=6, scaling=CONCURRENCY, service=METRICS),
        encoding="utf-8",
    )
    ran: list[str] = []
    monkeypatch.setattr(predict, "_run", lambda *a, **k: ran.append("run"))
    # 15 s divides the minute (fine for the GPU spec) but splits the 10-s datapoints.
    code = main(["compare", str(spec), str(conc), "--trace", str(trace), "--step", "15"])
    assert code == 2
    assert "--step = 15 s: the concurrency signal publishes every 10 s" in capsys.readouterr().err
    assert ran == []  # refused before the first design ran


def test_compare_keeps_specs_with_the_same_name_apart(
    tmp_path: Path, spec: Path, trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other" / "spec.toml"
    other.parent.mkdir()
    other.write_text(spec_text(max_instances=6, max_tasks=3), encoding="utf-8")
    out = tmp_path / "cmp.json"
    code = main(["compare", str(spec), str(other), "--trace", str(trace), "--json", str(out)])
    assert code == 0, capsys.readouterr()
    data = json.loads(out.read_text())
    assert sorted(data) == sorted([f"{spec} GPU 70%", f"{other} GPU 70%"])
    assert data[f"{other} GPU 70%"]["max_tasks"] <= 3 < data[f"{spec} GPU 70%"]["max_tasks"]


@pytest.mark.parametrize("twice", [False, True])
def test_compare_needs_two_different_specs(
    spec: Path, trace: Path, twice: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = [str(spec), str(spec)] if twice else [str(spec)]
    code = main(["compare", *specs, "--trace", str(trace)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert str(spec) in err and "Fix:" in err
    assert ("given twice" if twice else "two or more specs") in err


def test_plan_runs_offline_and_writes_plot_beside_the_spec(
    tmp_path: Path, spec: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # the working directory gets nothing
    out = spec.parent / "sim-test-plan.png"
    js = tmp_path / "plan.json"
    code = main(["plan", str(spec), "--json", str(js), "--days", "1"])
    text = capsys.readouterr().out
    assert code == 0, text
    assert list(work.iterdir()) == []
    # It says where the plot goes before the run, and where it went.
    assert text.index(f"plot: {out} (written at the end)") < text.index("template:")
    assert f"plot: {out}\n" in text
    assert "template: synthesized" in text and "no findings" in text
    assert out.read_bytes()[:8] == PNG_MAGIC
    s = json.loads(js.read_text())
    assert s["trace"] == "servegen_m-large_600s.csv"
    assert s["duration_s"] == 86400
    # Peak sized to 80 % of max_tasks (6) at the GPU target: it scales, within limits.
    assert 2 <= s["max_tasks"] <= 6
    assert "rate x" in text


def test_plan_plot_goes_to_o_or_into_the_o_folder(tmp_path: Path) -> None:
    from ecs_gpu.sim.report import plan_plot_path

    spec = tmp_path / "specs" / "g5.toml"
    assert plan_plot_path(spec, "svc", None) == tmp_path / "specs" / "svc-plan.png"
    assert plan_plot_path(spec, "svc", tmp_path / "p.png") == tmp_path / "p.png"
    assert plan_plot_path(spec, "svc", tmp_path) == tmp_path / "svc-plan.png"


def test_plan_refuses_a_plot_name_that_is_not_png_before_synthesis(
    tmp_path: Path, spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["plan", str(spec), "-o", str(tmp_path / "plan.jpg")])
    captured = capsys.readouterr()
    assert code == 2
    assert "-o/--output" in captured.err and ".png" in captured.err
    # Refused before the (slow) synthesis and the run.
    assert "template:" not in captured.out


def test_plan_bad_spec_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(spec_text().replace("max_tasks = 4", "max_tasks = 0"), encoding="utf-8")
    assert main(["plan", str(bad), "-o", str(tmp_path / "p.png")]) == 2
    assert "max_tasks" in capsys.readouterr().err


def test_long_run_shows_progress_on_a_terminal_only(
    tmp_path: Path, spec: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from rich.console import Console

    from ecs_gpu.cli import predict

    # Three days of 10-minute windows: 25,920 steps, over the bar's threshold.
    long = tmp_path / "long.csv"
    rows = [f"{i * 600},{600 + 300 * (i % 7)}" for i in range(3 * 144)]
    long.write_text("timestamp_s,requests\n" + "\n".join(rows) + "\n", encoding="utf-8")
    screen = io.StringIO()
    monkeypatch.setattr(predict, "console", Console(file=screen, force_terminal=True, width=100))
    assert main(["simulate", str(spec), "--trace", str(long)]) == 0
    assert "simulating spec.toml" in screen.getvalue()
    # A short run on a terminal finishes before a bar would be readable.
    screen.truncate(0)
    short = tmp_path / "short.csv"
    short.write_text("timestamp_s,requests\n0,600\n600,900\n", encoding="utf-8")
    assert main(["simulate", str(spec), "--trace", str(short)]) == 0
    assert "simulating" not in screen.getvalue()
    assert "GPU-hours" in screen.getvalue()
    # Not a terminal (the default under pytest): no bar, just the summary.
    monkeypatch.undo()
    assert main(["simulate", str(spec), "--trace", str(long)]) == 0
    assert "simulating" not in capsys.readouterr().out


def test_plan_exits_1_when_validation_finds_problems(
    tmp_path: Path, spec: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The validator's own checks are tested with it; here only plan's handling
    # of a report with a finding: still simulate and plot, then exit 1.
    from ecs_gpu.template import validate as v

    finding = v.Finding("cfn-lint", "W1234", "warning", "Resources/X", "a made-up finding")

    def fake(spec: object, *, path: str = "spec", **_: object) -> v.ValidationReport:
        return v.ValidationReport(template={"Resources": {}}, findings=[finding])

    monkeypatch.setattr(v, "validate", fake)
    out = tmp_path / "plan.png"
    code = main(["plan", str(spec), "-o", str(out), "--days", "0.5"])
    text = capsys.readouterr().out
    assert code == 1
    assert "W1234" in text and "a made-up finding" in text
    assert out.read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize("command", ["simulate", "compare", "plan"])
def test_help_explains_with_an_example(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Example" in text
    assert f"ecs-gpu {command} spec.toml" in text or f"ecs-gpu {command} reference.toml" in text
    assert "Exit 2 on a bad spec" in text


def _bundled_scale(spec: Path, name: str) -> float:
    """The factor plan's sizing gives ``spec`` on the bundled trace ``name``."""
    return plan_rate_scale(from_spec(load_spec(spec)), load_trace(name), 10.0)


def test_simulate_sizes_a_bundled_trace_as_plan_does_and_says_so(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", str(spec), "--trace", "azure2023-conv", "--json", "-"]) == 0
    captured = capsys.readouterr()
    s = json.loads(captured.out)
    expect = _bundled_scale(spec, "azure2023-conv")
    assert s["rate_scale"] == expect
    err = " ".join(captured.err.split())
    assert f"rate x{expect:.4g}" in err and "--rate-scale sets the factor" in err
    assert "80% of max_tasks (6)" in err
    # Sized so the fleet can serve it: not the provider's raw rate, which overloads throughout.
    assert s["overload_seconds"] < 0.5 * s["duration_s"]


def test_simulate_uses_the_given_rate_scale_on_a_bundled_trace(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["simulate", str(spec), "--trace", "azure2023-conv", "--rate-scale", "0.5", "--json", "-"]
    )
    assert code == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["rate_scale"] == 0.5
    assert "sized to" not in captured.err


def test_simulate_never_rescales_a_trace_file_but_warns_when_it_is_beyond_the_fleet(
    spec: Path, trace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The ramp's peak (8 req/s) is within 6 tasks x 2 req/s: used as it is, quietly.
    assert main(["simulate", str(spec), "--trace", str(trace), "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["rate_scale"] == 1.0
    assert "sized to" not in captured.err and "warning:" not in captured.err
    # Ten times the load: still not rescaled, and a warning names the factor that fits.
    code = main(["simulate", str(spec), "--trace", str(trace), "--rate-scale", "10"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert "warning: overloaded" in out and "fits it, or raise max_tasks" in out


def test_compare_sizes_a_bundled_trace_to_the_first_spec(
    tmp_path: Path, spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "small.toml"
    other.write_text(spec_text(max_tasks=2), encoding="utf-8")
    code = main(["compare", str(spec), str(other), "--trace", "azure2023-conv", "--json", "-"])
    assert code == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    expect = _bundled_scale(spec, "azure2023-conv")
    assert expect != _bundled_scale(other, "azure2023-conv")
    assert {r["rate_scale"] for r in rows.values()} == {expect}
    assert "sized to the first spec, spec.toml" in " ".join(captured.err.split())


def test_sweep_sizes_a_bundled_trace_at_the_specs_own_target(
    spec: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["simulate", str(spec), "--trace", "azure2023-conv", "--sweep-gpu-target", "50,90",
         "--json", "-"]
    )  # fmt: skip
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["rate_scale"] for r in rows.values()} == {_bundled_scale(spec, "azure2023-conv")}


def test_the_g5_example_on_servegen_m_mid_is_sized_not_overloaded(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The first-hour case: unscaled, this run was 100 % overloaded with 2.2e9 unserved."""
    g5 = Path(__file__).resolve().parents[2] / "examples" / "g5-vllm.toml"
    assert main(["simulate", str(g5), "--trace", "servegen-m-mid", "--json", "-"]) == 0
    captured = capsys.readouterr()
    s = json.loads(captured.out)
    assert s["rate_scale"] == _bundled_scale(g5, "servegen-m-mid")
    assert s["overload_seconds"] < 0.1 * s["duration_s"]
    assert "warning:" not in captured.err


@pytest.mark.parametrize("value", ["0", "150", "nan"])
def test_a_host_cpu_policy_that_is_no_percent_is_refused_before_the_spec_is_read(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-spec.toml"
    code = main(["simulate", str(missing), "--trace", "azure2023-conv", "--host-cpu-policy", value])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert f"--host-cpu-policy = {float(value)!r}: not a percent" in err
    assert "no-such-spec" not in err
