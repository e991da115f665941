"""Trace readers: every supported shape, and clean errors naming file, line and column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ecs_gpu.errors import EXIT_BAD_INPUT
from ecs_gpu.sim import bundled_trace_path
from ecs_gpu.sim.workload import TraceError, read_trace


def _write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_per_request_rows_are_binned_per_step(tmp_path: Path) -> None:
    f = _write(
        tmp_path,
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:00:00.0000000,10,1\n"
        "2023-11-16 18:00:03.5000000,10,1\n"
        "2023-11-16 18:00:09.9990000,10,1\n"
        "2023-11-16 18:00:10.0000000,10,1\n"
        "2023-11-16 18:00:25.0000000,10,1\n",
    )
    tr = read_trace(f)
    assert tr.kind == "requests"
    assert tr.duration_s == pytest.approx(25.0)
    rates = tr.rates(10.0)
    # 3 requests in [0, 10), 1 in [10, 20), 1 in [20, 30): requests per second.
    assert rates.tolist() == pytest.approx([0.3, 0.1, 0.1])
    assert float(np.sum(tr.rates(5.0, scale=2.0)) * 5.0) == pytest.approx(10.0)


def test_window_counts_divide_by_width_and_integrate_exactly(tmp_path: Path) -> None:
    f = _write(tmp_path, "timestamp_s,requests,rate_rps\n0,600,1.0\n600,1200,2.0\n")
    tr = read_trace(f)
    assert tr.kind == "window_counts"
    assert tr.duration_s == 1200.0
    r = tr.rates(60.0)
    assert r[:10].tolist() == pytest.approx([1.0] * 10)
    assert r[10:].tolist() == pytest.approx([2.0] * 10)
    # A step straddling two windows gets the time-weighted mean.
    assert tr.rates(400.0).tolist() == pytest.approx([1.0, 1.5, 2.0])
    assert tr.head(600.0).rates(60.0).tolist() == pytest.approx([1.0] * 10)


def test_window_rates_per_minute(tmp_path: Path) -> None:
    f = _write(
        tmp_path,
        "timestamp_s,req_per_min_low,req_per_min_high,req_per_min_mid\n433,50,70,60\n866,100,140,120\n",
    )
    tr = read_trace(f)
    assert tr.kind == "window_rates"
    assert tr.rates(433.0).tolist() == pytest.approx([1.0, 2.0])


def test_bundled_trace_reads() -> None:
    tr = read_trace(bundled_trace_path())
    assert tr.duration_s == 14 * 86400
    r = tr.rates(600.0)
    assert len(r) == 2016
    assert r[0] == pytest.approx(127668.0 / 600.0)


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        ("", 1, None, "empty"),
        ("\n\n", 1, None, "empty"),
        ("timestamp_s,requests\n", 1, None, "no data rows"),
        ("timestamp_s,requests,colour\n0,1,2\n", 1, "colour", "unknown column"),
        ("when,requests\n0,1\n", 1, None, "no time column"),
        ("timestamp_s,requests\n0,5\n600,-3\n", 3, "requests", "negative"),
        ("timestamp_s,requests\n0,5\n600,lots\n", 3, "requests", "not a number"),
        ("timestamp_s,requests\n0,5\n600,nan\n", 3, "requests", "not finite"),
        ("timestamp_s,requests\n0,5\n1200,5\n600,5\n", 4, "timestamp_s", "before"),
        ("timestamp_s,requests\n0,5\n0,5\n", 3, "timestamp_s", "before or at"),
        ("timestamp_s,requests\n0,5\n600\n", 3, None, "fields"),
        ("timestamp_s,requests\n0,5\n", 2, "timestamp_s", "one window"),
        ("timestamp_s,input_tokens\n0,5\n600,5\n", 1, None, "load column"),
        (
            "TIMESTAMP,ContextTokens\n2023-11-16 18:00:05,1\n2023-11-16 18:00:01,1\n",
            3,
            "TIMESTAMP",
            "before",
        ),
        ("TIMESTAMP\nyesterday\n", 2, "TIMESTAMP", "not a date"),
        ("TIMESTAMP,ContextTokens\n2023-11-16 18:00:05,-1\n", 2, "ContextTokens", "negative"),
    ],
)
def test_bad_traces_name_file_line_and_column(
    tmp_path: Path, text: str, line: int, column: str | None, words: str
) -> None:
    f = _write(tmp_path, text, "bad.csv")
    with pytest.raises(TraceError) as ei:
        read_trace(f)
    e = ei.value
    assert e.exit_code == EXIT_BAD_INPUT
    assert (e.path, e.line, e.column) == (str(f), line, column)
    assert e.message.startswith(f"{f}:{line}")
    assert words in e.message
    assert "Fix:" in e.message


def test_missing_trace_is_bad_input(tmp_path: Path) -> None:
    from ecs_gpu.errors import BadInputError

    with pytest.raises(BadInputError, match="no such trace file"):
        read_trace(tmp_path / "nope.csv")


def test_unreadable_trace_paths_say_how_to_fix(tmp_path: Path) -> None:
    from ecs_gpu.errors import BadInputError

    with pytest.raises(BadInputError, match=r"is a folder, not a trace file\. Fix: ") as ei:
        read_trace(tmp_path)
    assert ei.value.message.startswith(f"--trace {tmp_path}")
    latin = tmp_path / "latin1.csv"
    latin.write_bytes("timestamp_s,requests\n0,5\n600,5 \xe9\n".encode("latin-1"))
    with pytest.raises(TraceError, match=r"byte 31 \(0xe9\) is not UTF-8\. Fix: ") as te:
        read_trace(latin)
    # The byte offset counts from the file's start and the line is the file's.
    assert (te.value.line, te.value.column) == (3, None)


def test_spreadsheet_bom_and_daylight_saving_do_not_change_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    # A byte-order mark before the header (a spreadsheet's UTF-8 export).
    f = tmp_path / "bom.csv"
    f.write_bytes(b"\xef\xbb\xbftimestamp_s,requests\n0,600\n600,1200\n")
    assert read_trace(f).rates(600.0).tolist() == pytest.approx([1.0, 2.0])
    # Zone-less times across the US spring-forward hour, read on a machine in
    # New York: one request a minute stays one a minute (no 1-hour gap).
    if not hasattr(time, "tzset"):
        pytest.skip("no time.tzset on this platform")
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        rows = [f"2023-03-12 {h:02d}:{m:02d}:00" for h in (1, 2, 3) for m in range(0, 60, 1)]
        g = _write(tmp_path, "TIMESTAMP\n" + "\n".join(rows) + "\n", "dst.csv")
        tr = read_trace(g)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert tr.duration_s == pytest.approx(3 * 3600.0 - 60.0)
    assert tr.rates(600.0).tolist() == pytest.approx([10 / 600.0] * 18)


def test_collection_gaps_are_bridged_not_read_as_zero_load(tmp_path: Path) -> None:
    # ServeGen M-mid/M-small: unmeasured windows read "0,...,," (zero requests,
    # statistics empty); their README says to mask them.
    f = _write(
        tmp_path,
        "timestamp_s,requests,active_clients,rate_weighted_iat_cv\n"
        "0,600,5,1.0\n600,0,0,\n1200,0,0,\n1800,1200,6,2.0\n2400,0,3,0.0\n3000,600,4,\n",
    )
    tr = read_trace(f)
    assert tr.gap_windows == 2
    # A straight line from 1 req/s to 2 req/s across the gap; a measured zero
    # (statistics present) stays zero; an empty statistic with load is kept.
    assert tr.rates(600.0).tolist() == pytest.approx([1.0, 4 / 3, 5 / 3, 2.0, 0.0, 1.0])
    # The load and time columns stay strict: an empty load is an error.
    bad = _write(tmp_path, "timestamp_s,requests,rate_weighted_iat_cv\n0,5,1\n600,,\n", "b.csv")
    with pytest.raises(TraceError) as ei:
        read_trace(bad)
    assert (ei.value.line, ei.value.column) == (3, "requests")
    only_gaps = _write(
        tmp_path, "timestamp_s,requests,rate_weighted_iat_cv\n0,0,\n600,0,\n", "g.csv"
    )
    with pytest.raises(TraceError, match="collection gap"):
        read_trace(only_gaps)


def test_real_arrivals_only_where_the_file_counts_them(tmp_path: Path) -> None:
    rows = _write(tmp_path, "TIMESTAMP\n2023-11-16 18:00:00\n2023-11-16 18:00:30\n", "r.csv")
    assert read_trace(rows).real_arrivals(10.0)
    # 1-s count bins (Mooncake) are counted arrivals at any step of 1 s or more.
    bins = _write(tmp_path, "timestamp_s,requests\n0,3\n1,0\n2,4\n", "b.csv")
    assert read_trace(bins).real_arrivals(1.0) and read_trace(bins).real_arrivals(10.0)
    # 10-minute windows are means at a 10-s step; so is any rate column.
    wide = _write(tmp_path, "timestamp_s,requests\n0,600\n600,1200\n", "w.csv")
    assert not read_trace(wide).real_arrivals(10.0)
    assert read_trace(wide).real_arrivals(600.0)
    rate = _write(tmp_path, "timestamp_s,rate_rps\n0,1\n1,2\n", "rr.csv")
    assert not read_trace(rate).real_arrivals(60.0)


def test_head_cuts_and_refuses_a_non_positive_length(tmp_path: Path) -> None:
    from ecs_gpu.errors import BadInputError

    tr = read_trace(_write(tmp_path, "timestamp_s,requests\n0,600\n600,1200\n1200,600\n"))
    assert tr.head(900.0).rates(300.0).tolist() == pytest.approx([1.0, 1.0, 2.0])
    assert tr.head(float("inf")) is tr
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(BadInputError, match=r"Fix: give a positive number of seconds"):
            tr.head(bad)
