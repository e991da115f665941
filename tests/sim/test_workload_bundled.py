"""Every bundled trace: unchanged bytes, licensed, loads with its known span, step and rows."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import numpy as np
import pytest

from ecs_gpu.errors import BadInputError
from ecs_gpu.sim import bundled_trace_path
from ecs_gpu.sim.workload import BundledTrace, bundled_traces, load_trace, read_trace

TRACES = bundled_traces()
FOLDER = bundled_trace_path().parent
REPO = Path(__file__).resolve().parents[2]

# name: (kind, data rows, span s, window widths s, gap windows), counted from the files.
EXPECTED: dict[str, tuple[str, int, float, set[float] | None, int]] = {
    "azure2023-code": ("requests", 8819, 3435.948, None, 0),
    "azure2023-conv": ("requests", 19366, 3501.722, None, 0),
    "azure2024-code": ("window_rates", 1396, 604367.0, {432.0, 433.0}, 0),
    "azure2024-conv": ("window_rates", 1396, 604367.0, {432.0, 433.0}, 0),
    "mooncake-conversation": ("window_counts", 3537, 3537.0, {1.0}, 0),
    "servegen-deepseek-r1": ("window_counts", 144, 86400.0, {600.0}, 0),
    "servegen-m-large": ("window_counts", 2016, 14 * 86400.0, {600.0}, 0),
    "servegen-m-mid": ("window_counts", 2016, 14 * 86400.0, {600.0}, 84),
    "servegen-m-small": ("window_counts", 2016, 14 * 86400.0, {600.0}, 37),
}


def _rows(b: BundledTrace) -> list[dict[str, str]]:
    with b.path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_registry_is_exactly_the_shipped_files() -> None:
    assert set(TRACES) == set(EXPECTED)
    shipped = {p.name for p in FOLDER.glob("*.csv")}
    assert shipped == {b.file for b in TRACES.values()}
    # `plan`'s trace is one of them.
    assert bundled_trace_path().name in shipped


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_file_is_unchanged_and_attributed(name: str) -> None:
    b = TRACES[name]
    assert hashlib.sha256(b.path.read_bytes()).hexdigest() == b.sha256
    notice = (FOLDER / "README.md").read_text(encoding="utf-8")
    row = next(line for line in notice.splitlines() if line.startswith(f"| {b.file} |"))
    spdx = b.license.split(",")[0]
    assert spdx in ("CC-BY-4.0", "Apache-2.0")
    assert spdx in row
    if spdx == "Apache-2.0":
        assert "Apache License" in (FOLDER / "LICENSE-Apache-2.0.txt").read_text("utf-8")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bundled_trace_loads_with_known_shape(name: str) -> None:
    kind, rows, span, widths, gaps = EXPECTED[name]
    tr = TRACES[name].load()
    assert tr.kind == kind
    assert tr.duration_s == pytest.approx(span, abs=1e-3)
    assert tr.gap_windows == gaps
    if tr.arrivals is not None:
        assert len(tr.arrivals) == rows
        assert widths is None
    else:
        assert tr.window_starts is not None and tr.window_rates is not None
        assert len(tr.window_starts) == rows
        assert set(np.diff(tr.window_starts).tolist()) == widths
    # The engine takes a mean rate per step: finite, >= 0, and the whole span.
    r = tr.rates(10.0)
    assert len(r) == int(np.ceil(tr.duration_s / 10.0 - 1e-9))
    assert np.isfinite(r).all() and (r >= 0).all() and r.max() > 0
    # Every request of the file is in the series (counts and per-request rows).
    if kind == "requests":
        assert float(r.sum() * 10.0) == pytest.approx(rows)
    elif kind == "window_counts" and gaps == 0:
        total = sum(float(x["requests"]) for x in _rows(TRACES[name]))
        assert float(r.sum() * 10.0) == pytest.approx(total, rel=1e-9)


@pytest.mark.parametrize("name", ["servegen-m-mid", "servegen-m-small"])
def test_servegen_collection_gaps_are_masked(name: str) -> None:
    rows = _rows(TRACES[name])
    gap = np.array([float(x["requests"]) == 0 and x["rate_weighted_iat_cv"] == "" for x in rows])
    assert int(gap.sum()) == EXPECTED[name][4]
    tr = TRACES[name].load()
    r = tr.rates(600.0)
    assert len(r) == len(rows)
    # Read as zero load they would be zero; bridged they lie between the
    # measured windows around each run, on a straight line.
    assert (r[gap] > 0).all()
    raw = np.array([float(x["requests"]) / 600.0 for x in rows])
    for i in np.flatnonzero(gap):
        # No gap run starts or ends either file: both neighbours are measured.
        lo = next(j for j in range(i - 1, -1, -1) if not gap[j])
        hi = next(j for j in range(i + 1, len(rows)) if not gap[j])
        expect = raw[lo] + (raw[hi] - raw[lo]) * (i - lo) / (hi - lo)
        assert r[i] == pytest.approx(expect, rel=1e-9)
    # Measured windows are untouched.
    assert r[~gap] == pytest.approx(raw[~gap], rel=1e-12)


def test_unmasked_traces_keep_their_real_zeros() -> None:
    # Mooncake's empty 1-s bins are measured (statistics 0, not empty): kept.
    tr = TRACES["mooncake-conversation"].load()
    r = tr.rates(1.0)
    assert tr.gap_windows == 0
    assert int((r == 0).sum()) == sum(
        x["requests"] == "0" for x in _rows(TRACES["mooncake-conversation"])
    )
    assert int((r == 0).sum()) > 0


def test_load_trace_takes_a_name_or_a_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    by_name = load_trace("servegen-deepseek-r1")
    by_path = read_trace(TRACES["servegen-deepseek-r1"].path)
    assert by_name.rates(600.0).tolist() == by_path.rates(600.0).tolist()
    assert load_trace(TRACES["servegen-deepseek-r1"].path).duration_s == 86400.0
    # A file that shares a bundled name is read as ./NAME.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "servegen-m-large").write_text("timestamp_s,requests\n0,60\n60,120\n", "utf-8")
    assert load_trace("servegen-m-large").duration_s == 14 * 86400.0
    assert load_trace("./servegen-m-large").rates(60.0).tolist() == [1.0, 2.0]


def test_unknown_trace_name_lists_the_bundled_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInputError) as ei:
        load_trace("servegen-m-huge")
    msg = ei.value.message
    assert "'servegen-m-huge'" in msg and "Fix:" in msg
    assert all(n in msg for n in TRACES)
    # A path keeps the reader's own message.
    with pytest.raises(BadInputError, match=r"no such trace file\. Fix: check the path"):
        load_trace("nope.csv")


def test_code_and_tests_never_read_the_shared_folder() -> None:
    shared = "/work/" + "shared"
    for root in ("src", "tests", "benchmarks"):
        for f in (REPO / root).rglob("*.py"):
            assert shared not in f.read_text(encoding="utf-8"), f


def test_which_bundled_traces_carry_real_arrivals_at_10_s() -> None:
    real = {n for n, b in TRACES.items() if b.load().real_arrivals(10.0)}
    assert real == {"azure2023-code", "azure2023-conv", "mooncake-conversation"}


def test_docs_list_every_bundled_trace_as_it_is() -> None:
    doc = (REPO / "docs" / "traces.md").read_text(encoding="utf-8")
    for name, (_, rows, _, _, gaps) in EXPECTED.items():
        row = next(line for line in doc.splitlines() if line.startswith(f"| `{name}` |"))
        assert TRACES[name].file in row and f"{rows:,}" in row
        assert (f"{gaps} collection-gap" in row) == (gaps > 0)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_registry_shape_is_what_the_file_holds(name: str) -> None:
    kind, rows, span, widths, gaps = EXPECTED[name]
    shape = TRACES[name].shape()
    assert (shape.kind, shape.rows, shape.gap_windows) == (kind, rows, gaps)
    assert shape.span_s == pytest.approx(span, abs=1e-3)
    if widths is None:
        assert shape.step_min_s is None and shape.step_max_s is None
    else:
        assert (shape.step_min_s, shape.step_max_s) == (min(widths), max(widths))
    tr = TRACES[name].load()
    # The mean is every request over the span; the peak the busiest minute's mean.
    assert shape.mean_rps == pytest.approx(float(tr.rates(10.0).sum() * 10.0) / span, rel=1e-6)
    assert shape.peak_rps == pytest.approx(float(tr.rates(60.0).max()))
    assert shape.mean_rps <= shape.peak_rps


def test_traces_command_lists_every_bundled_trace(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    from ecs_gpu.cli import main, predict

    screen = io.StringIO()
    monkeypatch.setattr(predict, "console", Console(file=screen, width=80))  # a pipe
    assert main(["traces"]) == 0
    lines = screen.getvalue().splitlines()
    assert "…" not in screen.getvalue()
    for name, b in TRACES.items():
        row = next(line for line in lines if line.split() and line.split()[0] == name)
        assert b.spdx in row and TRACES[name].shape().shape in row


def test_traces_json_is_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from ecs_gpu.cli import main

    assert main(["traces", "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert [d["name"] for d in docs] == list(TRACES)
    for d in docs:
        b = TRACES[d["name"]]
        assert (d["file"], d["license"], d["sha256"]) == (b.file, b.license, b.sha256)
        assert d["rows"] == EXPECTED[d["name"]][1]
        assert d["span_s"] == pytest.approx(EXPECTED[d["name"]][2], abs=1e-3)
