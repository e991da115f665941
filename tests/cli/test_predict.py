"""The predict commands' own work (cli/predict.py): what they refuse before any simulation,
where the JSON goes, and what they say they saved. The simulator's figures are tested in
tests/sim/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecs_gpu.cli import main
from ecs_gpu.errors import EXIT_BAD_INPUT
from example_specs import G5_PATH

# A request trace of a quiet minute: one request every 10 s.
TRACE = "timestamp_s,requests\n" + "".join(f"{t},1\n" for t in range(0, 60, 10))


def _said(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    c = capsys.readouterr()
    return " ".join(c.out.split()), " ".join(c.err.split())


def test_the_traces_json_lists_every_bundled_trace_with_its_shape(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["traces", "--json", "-"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed and len({t["name"] for t in listed}) == len(listed)
    for t in listed:
        assert {"name", "license", "sha256", "shape", "span_s", "mean_rps", "peak_rps"} <= set(t)
        assert 0 < t["mean_rps"] <= t["peak_rps"]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--host-cpu-policy", "0"], "--host-cpu-policy = 0.0: not a percent. Fix: give 1 to 100."),
        (["--plot", "run.txt"], "--plot run.txt: writes a PNG file. Fix: end the name with .png"),
        (["--sweep-gpu-target", "50,60", "--plot", "run.png"], "--sweep-gpu-target writes one"),
    ],
    ids=["host-cpu", "plot-suffix", "sweep-and-plot"],
)
def test_a_bad_option_is_refused_before_any_simulation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], says: str
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE, encoding="utf-8")
    argv = ["simulate", str(G5_PATH), "--trace", str(trace), *extra]
    with pytest.MonkeyPatch.context() as m:
        m.chdir(tmp_path)
        assert main(argv) == EXIT_BAD_INPUT
    _, err = _said(capsys)
    assert says in err
    assert not (tmp_path / "run.png").exists()


def test_json_over_the_trace_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE, encoding="utf-8")
    argv = ["simulate", str(G5_PATH), "--trace", str(trace), "--json", str(trace)]
    assert main(argv) == EXIT_BAD_INPUT
    assert f"--json {trace}: is the input --trace" in _said(capsys)[1]
    assert trace.read_text(encoding="utf-8") == TRACE


def test_a_run_writes_its_json_and_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace, out = tmp_path / "t.csv", tmp_path / "run.json"
    trace.write_text(TRACE, encoding="utf-8")
    assert main(["simulate", str(G5_PATH), "--trace", str(trace), "--json", str(out)]) == 0
    printed, _ = _said(capsys)
    assert f"summary JSON: {out}" in printed
    assert isinstance(json.loads(out.read_text(encoding="utf-8")), dict)


def test_json_to_stdout_keeps_the_tables_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text(TRACE, encoding="utf-8")
    assert main(["simulate", str(G5_PATH), "--trace", str(trace), "--json", "-"]) == 0
    c = capsys.readouterr()
    assert isinstance(json.loads(c.out), dict)
    assert "summary JSON" not in c.out + c.err
    assert c.err.strip()  # the summary table
