"""Issue 9, traces: extreme numbers, endless spans, bad bytes and fuzzed files end in
a BadInputError (exit 2) that names file, line and column and says how to fix it;
never a traceback, and never a series the engine cannot run."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from simhelp import spec_text

from ecs_gpu.cli import main
from ecs_gpu.errors import EXIT_BAD_INPUT, BadInputError
from ecs_gpu.sim.engine import MAX_OFFERED_RPS
from ecs_gpu.sim.workload import (
    MAX_SIM_STEPS,
    MAX_SPAN_S,
    PER_REQUEST_COLUMNS,
    WINDOW_COLUMNS,
    Trace,
    TraceError,
    read_trace,
)


def _write(tmp_path: Path, text: str | bytes, name: str = "t.csv") -> Path:
    p = tmp_path / name
    if isinstance(text, str):
        p.write_text(text, encoding="utf-8")
    else:
        p.write_bytes(text)
    return p


def _refused(f: Path) -> TraceError:
    with pytest.raises(TraceError) as ei:
        read_trace(f)
    e = ei.value
    assert e.exit_code == EXIT_BAD_INPUT
    assert e.message.startswith(f"{f}:{e.line}") and "Fix: " in e.message
    return e


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        # A count this large over 10 minutes is ~1.7e305 requests/s.
        ("timestamp_s,requests\n0,5\n600,1e308\n", 3, "requests", "beyond"),
        ("timestamp_s,rate_rps\n0,5\n600,1e308\n", 3, "rate_rps", "beyond"),
        ("timestamp_s,req_per_min_mid\n0,5\n60,6.1e10\n", 3, "req_per_min_mid", "beyond"),
        # A window 5e-324 s wide: 5 requests in it overflow to infinity.
        ("timestamp_s,requests\n0,5\n5e-324,5\n1,5\n", 2, "requests", "inf requests/s"),
        ("timestamp_s,requests\n0,5\n1e308,5\n", 3, "timestamp_s", "at most 2,000,000 steps"),
        ("timestamp_s,requests\n0,5\n1e12,5\n", 3, "timestamp_s", "ends 2e+12 s after"),
        ("timestamp_s,requests\n0,5\ninf,5\n", 3, "timestamp_s", "not finite"),
        ("timestamp_s,requests\n0,5\n600,-inf\n", 3, "requests", "not finite"),
        ("timestamp_s,requests\n0,5\n600,NaN\n", 3, "requests", "not finite"),
        ("timestamp_s,requests\n0,5\n600,1e400\n", 3, "requests", "not finite"),
        ("timestamp_s,requests\n0,5\n600,-5e-324\n", 3, "requests", "negative"),
        # Distinct times that round to one offset from the first row's time.
        (
            "timestamp_s,requests\n507.4838632767062,5\n2556.206633013243,5\n"
            "2556.2066330132434,5\n",
            4,
            "timestamp_s",
            "cannot be told",
        ),
        (
            "TIMESTAMP\n0001-01-01 00:00:00\n9999-12-31 23:59:59\n",
            3,
            "TIMESTAMP",
            "at most 2,000,000 steps",
        ),
        ("TIMESTAMP,ContextTokens\n2023-11-16 18:00:05,inf\n", 2, "ContextTokens", "finite"),
        ("timestamp_s,requests\n0,5\n600,\x00\n", 3, "requests", "not a number"),
        ('timestamp_s,requests\n0,5\n600,"' + "9" * 200_000 + '"\n', 3, None, "CSV"),
    ],
)
def test_extreme_values_are_refused_with_row_and_column(
    tmp_path: Path, text: str, line: int, column: str | None, words: str
) -> None:
    e = _refused(_write(tmp_path, text))
    assert (e.line, e.column) == (line, column)
    assert words in e.message


def test_harmless_extremes_load_as_their_value(tmp_path: Path) -> None:
    # -0 is zero; the smallest subnormal is a (tiny) load; 1e308 tokens are
    # statistics the simulator does not use.
    f = _write(
        tmp_path,
        "timestamp_s,requests,input_tokens\n-0,-0,1e308\n600,5e-324,0\n1200,600,0\n",
    )
    tr = read_trace(f)
    r = tr.rates(600.0)
    assert r.tolist() == [0.0, 0.0, 1.0]
    assert tr.duration_s == 1800.0


def test_a_span_is_bounded_by_steps_at_load_and_per_step(tmp_path: Path) -> None:
    # Just inside the load-time bound: readable, but only at coarse steps.
    edge = MAX_SPAN_S / 2
    tr = read_trace(_write(tmp_path, f"timestamp_s,requests\n0,5\n{edge:.0f},5\n"))
    assert tr.duration_s == MAX_SPAN_S
    assert len(tr.rates(60.0)) == MAX_SIM_STEPS
    with pytest.raises(BadInputError) as ei:
        tr.rates(10.0)
    msg = ei.value.message
    assert msg.startswith(f"{tr.path}: spans 1.2e+08 s")
    assert "at most 2,000,000 steps" in msg and "Fix: a longer --step (up to 60 s)" in msg
    # One second beyond, and no step could run it.
    over = _write(tmp_path, f"timestamp_s,requests\n0,5\n{edge + 1:.0f},5\n", "over.csv")
    assert _refused(over).line == 3


def test_non_utf8_empty_and_misordered_files(tmp_path: Path) -> None:
    cases: list[tuple[bytes, int, str]] = [
        (b"", 1, "empty"),
        (b"\xef\xbb\xbf", 1, "empty"),
        (b" , \n\n", 1, "empty"),
        (b"timestamp_s,requests\n0,5\n\xff\xfe600,5\n", 3, "byte 25 (0xff) is not UTF-8"),
        (b"\xef\xbb\xbftimestamp_s,requests\n\x80", 2, "byte 24 (0x80)"),
        (b"timestamp_s,requests\n0,5\n600,5\n600,5\n", 4, "before or at"),
        (b"timestamp_s,requests\n600,5\n0,5\n", 3, "before or at"),
        (b"timestamp_s,requests\r\n0,5\r\n\r\n600,5\r\n300,5\r\n", 5, "before"),
    ]
    for i, (data, line, words) in enumerate(cases):
        e = _refused(_write(tmp_path, data, f"c{i}.csv"))
        assert e.line == line, data
        assert words in e.message, (data, e.message)


def test_oversized_files_are_refused_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ecs_gpu.sim import workload

    monkeypatch.setattr(workload, "MAX_TRACE_BYTES", 64)
    f = _write(tmp_path, "timestamp_s,requests\n" + "".join(f"{i * 60},1\n" for i in range(20)))
    with pytest.raises(BadInputError, match=r"--trace .*: larger than 64 bytes.*Fix: aggregate"):
        read_trace(f)


def test_the_cli_exits_2_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _write(tmp_path, spec_text(), "spec.toml")
    bad = _write(tmp_path, "timestamp_s,requests\n0,5\n1e12,5\n", "far.csv")
    assert main(["simulate", str(spec), "--trace", str(bad)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{bad}:3" in err.replace("\n", "") and "Fix:" in err


# --- fuzzing -------------------------------------------------------------

_EXTREME = st.sampled_from(
    ["1e308", "-1e308", "5e-324", "-5e-324", "-0", "0", "inf", "-inf", "nan", "1e400", "1e12"]
)
_PLAIN = st.floats(min_value=0, max_value=1e7).map(repr)
_JUNK = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.just(""),
    st.text(max_size=6),
)
# Mostly plain numbers, so most files get past the first cell to the checks after.
_NUMBER = st.one_of(_PLAIN, _PLAIN, _PLAIN, _EXTREME, _JUNK)
_LOADS = ("requests", "rate_rps", "req_per_min_mid")


@st.composite
def _times(draw: st.DrawFn, n: int) -> list[str]:
    """Mostly increasing, plausible times (so the fuzz reaches the later checks)."""
    width = st.one_of(st.sampled_from([1.0, 433.0, 600.0]), st.floats(min_value=0, max_value=1e5))
    steps = draw(st.lists(width, min_size=n, max_size=n))
    t = draw(st.sampled_from([0.0, 0.0, 433.0, 1.7e9]))
    out = []
    for dt in steps:
        t += dt
        out.append(repr(t))
    # Now and then one extreme or junk time.
    if out and draw(st.integers(0, 3)) == 0:
        out[draw(st.integers(0, len(out) - 1))] = draw(
            st.one_of(_EXTREME, _JUNK, st.sampled_from(["1e12", "1e8", "5e-324"]))
        )
    return out


@st.composite
def _window_csv(draw: st.DrawFn) -> str:
    load = draw(st.sampled_from(_LOADS))
    others = sorted(WINDOW_COLUMNS - {"timestamp_s", load})
    extra = draw(st.lists(st.sampled_from(others), unique=True, max_size=3))
    header = ["timestamp_s", load, *extra]
    # Now and then a header the reader must refuse.
    header = draw(
        st.sampled_from([header, header, header, [*header, "colour"], [*header, load], header[1:]])
    )
    n = draw(st.integers(0, 6))
    times = draw(_times(n))
    rows = [
        [t, *draw(st.lists(_PLAIN, min_size=len(header) - 1, max_size=len(header) - 1))]
        for t in times
    ]
    # Most files carry one odd cell (extreme, junk or an empty gap statistic).
    if rows and len(header) > 1 and draw(st.booleans()):
        row = draw(st.integers(0, len(rows) - 1))
        col = draw(st.integers(1, len(header) - 1))
        rows[row][col] = draw(st.one_of(_EXTREME, _JUNK))
    if rows and draw(st.integers(0, 5)) == 0:
        rows[-1].append("1")  # one field too many
    lines = [",".join(header)] + [",".join(r) for r in rows]
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\r\n"]))


@st.composite
def _request_csv(draw: st.DrawFn) -> str:
    extra = draw(
        st.lists(st.sampled_from(sorted(PER_REQUEST_COLUMNS - {"TIMESTAMP"})), unique=True)
    )
    header = ["TIMESTAMP", *extra]
    stamps = draw(st.lists(st.datetimes(), max_size=5))
    if draw(st.booleans()):
        stamps.sort()
    texts = [d.isoformat(sep=" ") for d in stamps]
    if texts and draw(st.integers(0, 3)) == 0:
        texts[-1] = draw(st.one_of(st.text(max_size=12), _EXTREME))
    rows = [[t, *draw(st.lists(_NUMBER, min_size=len(extra), max_size=len(extra)))] for t in texts]
    return "\n".join([",".join(header)] + [",".join(r) for r in rows])


def _loads_or_refuses(f: Path) -> None:
    try:
        tr = read_trace(f)
    except BadInputError as e:
        assert "Fix:" in e.message and e.exit_code == EXIT_BAD_INPUT
        return
    _usable(tr)


def _usable(tr: Trace) -> None:
    """What the engine needs: a finite, bounded, non-negative rate per step."""
    assert 0 < tr.duration_s <= MAX_SPAN_S
    r = tr.rates(60.0)
    assert 1 <= len(r) <= MAX_SIM_STEPS
    assert np.isfinite(r).all() and (r >= 0).all()
    assert float(r.max()) <= MAX_OFFERED_RPS * (1 + 1e-9)
    assert math.isfinite(float(r.sum()))
    # Finer steps either run or are refused for their step count, with a fix.
    for step in (1.0, 10.0):
        try:
            fine = tr.rates(step)
        except BadInputError as e:
            assert "Fix: a longer --step" in e.message
            assert tr.duration_s / step > MAX_SIM_STEPS
        else:
            assert len(fine) <= MAX_SIM_STEPS and np.isfinite(fine).all()


_FUZZ = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_FUZZ
@given(text=st.one_of(_window_csv(), _request_csv()))
def test_fuzzed_csv_loads_or_is_refused(tmp_path: Path, text: str) -> None:
    _loads_or_refuses(_write(tmp_path, text, "fuzz.csv"))


@_FUZZ
@given(data=st.binary(max_size=200), prefix=st.sampled_from([b"", b"timestamp_s,requests\n0,5\n"]))
def test_fuzzed_bytes_load_or_are_refused(tmp_path: Path, data: bytes, prefix: bytes) -> None:
    _loads_or_refuses(_write(tmp_path, prefix + data, "fuzz.bin"))
