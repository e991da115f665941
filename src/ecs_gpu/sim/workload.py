"""Read a request trace and turn it into offered load per simulation step.

Three shapes of CSV are understood (docs/traces.md "Shapes"): one row per
request (a ``TIMESTAMP`` column, Azure LLM inference 2023), per-window counts
(``timestamp_s`` and ``requests``: ServeGen, Mooncake) and per-window rates
(``timestamp_s`` with ``rate_rps`` or ``req_per_min_mid``: Azure 2024
digitized). Anything else, or a trace the simulator cannot run (a span longer
than :data:`MAX_SIM_STEPS` steps, a rate beyond the simulator's ceiling), is
refused with a :class:`TraceError` naming the file, the line and the column.
:func:`bundled_traces` names the real traces shipped with the package;
:func:`load_trace` takes such a name or a path.
"""

from __future__ import annotations

import codecs
import csv
import dataclasses
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Final, Literal, Protocol

import numpy as np
import numpy.typing as npt

from ecs_gpu.errors import BadInputError
from ecs_gpu.inputs import read_bytes
from ecs_gpu.sim.engine import MAX_OFFERED_RPS
from ecs_gpu.sim.params import ALARM_PERIOD_S

PER_REQUEST_TIME = "TIMESTAMP"
WINDOW_TIME = "timestamp_s"
# Columns per format; a header with any other column is refused (a typo in a
# column name would otherwise silently change the load).
PER_REQUEST_COLUMNS = frozenset({PER_REQUEST_TIME, "ContextTokens", "GeneratedTokens"})
WINDOW_COLUMNS = frozenset(
    {
        WINDOW_TIME,
        "requests",
        "rate_rps",
        "req_per_min_low",
        "req_per_min_high",
        "req_per_min_mid",
        "input_tokens",
        "output_tokens",
        "input_tokens_est",
        "output_tokens_est",
        "active_clients",
        "rate_weighted_iat_cv",
        "token_coverage",
    }
)
# The load column per window format, in order of preference.
_LOAD_COLUMNS: tuple[tuple[str, float], ...] = (
    ("requests", 0.0),  # a count: divided by the window width
    ("rate_rps", 1.0),
    ("req_per_min_mid", 1.0 / 60.0),
)

Kind = Literal["requests", "window_counts", "window_rates"]

# The engine keeps every step's timeline in memory (17 Python floats a step)
# at about 200,000 steps a second (docs/benchmarks.md): two million steps are
# ~10 s and ~1 GB, 23 days at 1-second steps, 231 days at 10-second steps.
MAX_SIM_STEPS: Final = 2_000_000
# The longest step divides the one-minute alarm period (engine.check_step),
# so no step size can simulate a longer span than this (~3.8 years).
MAX_SPAN_S: Final = MAX_SIM_STEPS * float(ALARM_PERIOD_S)
# A trace is read into memory whole; the largest real one here is 0.7 MB.
# Far beyond this is not a trace (e.g. /dev/zero) or wants aggregating first.
MAX_TRACE_BYTES: Final = 512 * 1024 * 1024


class TraceError(BadInputError):
    """A trace file that cannot be used; the message names file, line and column."""

    def __init__(self, path: str, line: int, column: str | None, what: str, fix: str) -> None:
        self.path, self.line, self.column = path, line, column
        where = f"{path}:{line}" + (f": column {column!r}" if column else "")
        super().__init__(f"{where}: {what}. Fix: {fix}.")


@dataclass(frozen=True)
class Trace:
    """A workload: either request arrival times or windows with a rate each.

    Times are seconds from the trace's first timestamp.
    """

    path: str
    kind: Kind
    # Per-request traces: sorted arrival times.
    arrivals: npt.NDArray[np.float64] | None
    # Window traces: start of each window and its mean rate (requests/s).
    window_starts: npt.NDArray[np.float64] | None
    window_rates: npt.NDArray[np.float64] | None
    duration_s: float
    # Windows read as collection gaps and bridged (see _bridge_gaps).
    gap_windows: int = 0

    @property
    def name(self) -> str:
        return Path(self.path).name

    def head(self, seconds: float) -> Trace:
        """The first ``seconds`` of the trace (all of it if shorter)."""
        if not seconds > 0:
            raise BadInputError(
                f"{self.path}: cannot keep the first {seconds!r} s of the trace. "
                "Fix: give a positive number of seconds."
            )
        if seconds >= self.duration_s:
            return self
        if self.arrivals is not None:
            cut = self.arrivals[self.arrivals < seconds]
            return Trace(self.path, self.kind, cut, None, None, seconds)
        assert self.window_starts is not None and self.window_rates is not None
        keep = self.window_starts < seconds
        return Trace(
            self.path,
            self.kind,
            None,
            self.window_starts[keep],
            self.window_rates[keep],
            seconds,
            self.gap_windows,
        )

    def real_arrivals(self, step_s: float) -> bool:
        """Whether the load per step of ``step_s`` is counted arrivals, not a mean rate.

        True for one row per request, and for count windows no wider than the
        step (Mooncake's 1-s bins): their burstiness is in the data, and
        Poisson noise on top would count it twice. Wider windows and rate
        windows are means that need arrivals drawn inside them.
        """
        if self.arrivals is not None:
            return True
        assert self.window_starts is not None
        if self.kind != "window_counts":
            return False
        widths = np.diff(np.append(self.window_starts, self.duration_s))
        return float(widths.max()) <= step_s

    def rates(self, step_s: float, scale: float = 1.0) -> npt.NDArray[np.float64]:
        """Mean offered load (requests/s) in each step of ``step_s`` seconds."""
        if not (step_s > 0 and math.isfinite(step_s)):
            raise BadInputError(f"step = {step_s!r}: must be positive. Fix: use e.g. 10.")
        if not (scale > 0 and math.isfinite(scale)):
            raise BadInputError(
                f"rate scale = {scale!r}: must be a positive finite number. Fix: e.g. 2.5."
            )
        steps = self.duration_s / step_s
        if not steps <= MAX_SIM_STEPS:
            longest = MAX_SIM_STEPS * step_s
            raise BadInputError(
                f"{self.path}: spans {self.duration_s:.6g} s, {steps:.3g} steps of "
                f"{step_s:g} s; the simulator runs at most {MAX_SIM_STEPS:,} steps. Fix: a "
                f"longer --step (up to {ALARM_PERIOD_S:g} s), or cut the trace to at most "
                f"{longest:.6g} s ({longest / 86400:.4g} days)."
            )
        n = max(1, math.ceil(steps - 1e-9))
        edges = np.arange(n + 1, dtype=np.float64) * step_s
        if self.arrivals is not None:
            counts = np.diff(np.searchsorted(self.arrivals, edges, side="left")).astype(np.float64)
            # The last arrival sits exactly on the duration edge: count it.
            counts[-1] += float(np.sum(self.arrivals >= edges[-1]))
        else:
            assert self.window_starts is not None and self.window_rates is not None
            # Integrate the piecewise-constant rate: cumulative requests at each
            # window boundary, interpolated linearly at the step edges.
            bounds = np.append(self.window_starts, self.duration_s)
            cum = np.concatenate(([0.0], np.cumsum(self.window_rates * np.diff(bounds))))
            counts = np.diff(np.interp(edges, bounds, cum))
        return counts / step_s * scale


class _Reader(Protocol):
    """What _parse needs of a csv.reader: rows, and the line it has read to."""

    line_num: int

    def __iter__(self) -> Iterator[list[str]]: ...
    def __next__(self) -> list[str]: ...


def _fail(path: str, line: int, column: str | None, what: str, fix: str) -> TraceError:
    return TraceError(path, line, column, what, fix)


def _number(path: str, line: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _fail(
            path, line, column, f"{text!r} is not a number", "write a plain number, e.g. 12.5"
        ) from None
    if not math.isfinite(value):
        raise _fail(path, line, column, f"{text!r} is not finite", "write a finite number")
    if value < 0:
        raise _fail(path, line, column, f"{text!r} is negative", "counts, rates and times are >= 0")
    return value


def _timestamp(path: str, line: int, text: str) -> float:
    try:
        when = datetime.fromisoformat(text.strip())
        # A time without a zone is UTC (as in the Azure traces): read as local
        # time it would shift by an hour across a daylight-saving change.
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp()
    except (ValueError, OverflowError):
        raise _fail(
            path,
            line,
            PER_REQUEST_TIME,
            f"{text!r} is not a date and time",
            "use ISO format, e.g. 2023-11-16 18:17:03.979",
        ) from None


def read_trace(path: str | Path) -> Trace:
    """Read and check a trace file; raise :class:`TraceError` naming line and column."""
    p = str(path)
    data = read_bytes(
        path,
        option="--trace",
        kind="trace",
        limit=MAX_TRACE_BYTES,
        fix="aggregate it into windows (timestamp_s,requests; docs/traces.md) or cut it",
    )
    # A spreadsheet's byte-order mark must not rename the first column.
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[skip:].decode("utf-8")
    except UnicodeDecodeError as e:
        at = skip + e.start
        line = data.count(b"\n", 0, at) + 1
        raise _fail(
            p,
            line,
            None,
            f"byte {at} (0x{data[at]:02x}) is not UTF-8",
            "save the trace as UTF-8 CSV",
        ) from None
    # newline="": the csv module handles \r\n and quoted line breaks itself.
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        return _parse(p, reader)
    except csv.Error as e:
        raise _fail(
            p, reader.line_num, None, f"not a readable CSV row ({e})", "write plain CSV rows"
        ) from None


def _parse(p: str, reader: _Reader) -> Trace:
    cols, hline, kind = _header(p, reader)
    load_col: str | None = None
    divisor_is_width = False
    factor = 1.0
    if kind == "window":
        load_col, factor, divisor_is_width = _load_column(p, cols, hline)
    tcol = cols.index(PER_REQUEST_TIME if kind == "requests" else WINDOW_TIME)
    lcol = cols.index(load_col) if load_col else -1
    rows = _rows(p, reader, cols, kind, tcol, lcol)
    if not rows.times:
        raise _fail(p, hline, None, "the file has a header but no data rows", "add data rows")

    t0 = rows.times[0]
    offsets = np.asarray(rows.times, dtype=np.float64) - t0
    _check_span(p, rows.lines, cols[tcol], offsets, kind == "window")
    if kind == "requests":
        duration = max(float(offsets[-1]), 1.0)
        return Trace(p, "requests", offsets, None, None, duration)
    return _window_trace(p, hline, offsets, rows, load_col, factor, divisor_is_width)


def _header(p: str, reader: _Reader) -> tuple[list[str], int, Literal["requests", "window"]]:
    """The header's columns, its line, and the trace's kind (by its time column)."""
    header: list[str] | None = next(reader, None)
    while header is not None and not any(c.strip() for c in header):
        header = next(reader, None)
    if header is None:
        raise _fail(
            p,
            1,
            None,
            "the file is empty",
            "give a header row and at least one data row (see docs/simulator.md)",
        )
    cols = [c.strip() for c in header]
    hline = reader.line_num
    kind: Literal["requests", "window"]
    if PER_REQUEST_TIME in cols:
        known, kind = PER_REQUEST_COLUMNS, "requests"
    elif WINDOW_TIME in cols:
        known, kind = WINDOW_COLUMNS, "window"
    else:
        raise _fail(
            p,
            hline,
            None,
            f"no time column in header {cols}",
            f"name it {PER_REQUEST_TIME!r} (one row per request) or {WINDOW_TIME!r} "
            "(one row per window)",
        )
    for c in cols:
        if c not in known:
            raise _fail(
                p,
                hline,
                c,
                "unknown column",
                f"use only {', '.join(sorted(known))}, or remove the column",
            )
    if len(set(cols)) != len(cols):
        dup = next(c for c in cols if cols.count(c) > 1)
        raise _fail(p, hline, dup, "column appears twice", "keep one")
    return cols, hline, kind


def _load_column(p: str, cols: list[str], hline: int) -> tuple[str, float, bool]:
    """A window trace's load column, its factor to requests/s, and whether it is a count."""
    for name, f in _LOAD_COLUMNS:
        if name in cols:
            return name, f, f == 0.0
    raise _fail(
        p,
        hline,
        None,
        "a window trace needs a load column",
        "add 'requests' (count per window), 'rate_rps' or 'req_per_min_mid'",
    )


@dataclass(slots=True)
class _Rows:
    """The data rows as read: times, file lines, and (window traces) loads."""

    times: list[float] = dataclasses.field(default_factory=list)
    # The file line of each data row, for errors found after reading.
    lines: list[int] = dataclasses.field(default_factory=list)
    loads: list[float] = dataclasses.field(default_factory=list)
    # Rows of a window trace with a statistic left empty (see _bridge_gaps).
    has_empty: list[bool] = dataclasses.field(default_factory=list)


def _rows(
    p: str,
    reader: _Reader,
    cols: list[str],
    kind: Literal["requests", "window"],
    tcol: int,
    lcol: int,
) -> _Rows:
    """Read the data rows: one value per column, times in order."""
    out = _Rows()
    times, lines, loads, has_empty = out.times, out.lines, out.loads, out.has_empty
    for row in reader:
        line = reader.line_num
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(cols):
            raise _fail(
                p,
                line,
                None,
                f"{len(row)} fields where the header has {len(cols)}",
                "give every row one value per header column",
            )
        values: list[float] = []
        empty = False
        for i, (c, text) in enumerate(zip(cols, row, strict=True)):
            if i == tcol and kind == "requests":
                values.append(_timestamp(p, line, text))
            elif kind == "window" and i not in (tcol, lcol) and not text.strip():
                # A statistic the simulator does not use, not measured here.
                empty = True
                values.append(math.nan)
            else:
                values.append(_number(p, line, c, text.strip()))
        t = values[tcol]
        if times and (t < times[-1] or (kind == "window" and t == times[-1])):
            raise _fail(
                p,
                line,
                cols[tcol],
                f"timestamp {row[tcol].strip()!r} comes before or at the previous row's",
                "sort the rows by time (windows strictly increasing)",
            )
        times.append(t)
        lines.append(line)
        if lcol >= 0:
            loads.append(values[lcol])
            has_empty.append(empty)
    return out


def _window_trace(
    p: str,
    hline: int,
    starts: npt.NDArray[np.float64],
    rows: _Rows,
    load_col: str | None,
    factor: float,
    divisor_is_width: bool,
) -> Trace:
    """A window trace from its starts (seconds from the first) and loads: rates, gaps bridged."""
    lines, loads = rows.lines, rows.loads
    if len(starts) == 1:
        raise _fail(
            p,
            hline + 1,
            WINDOW_TIME,
            "one window gives no window width",
            "give at least two rows, evenly spaced",
        )
    widths = np.diff(starts)
    # The last window is as wide as the one before it.
    widths = np.append(widths, widths[-1])
    raw = np.asarray(loads, dtype=np.float64)
    # A count over a tiny window overflows to inf: refused just below.
    with np.errstate(over="ignore"):
        rates = raw / widths if divisor_is_width else raw * factor
    too_high = ~(rates <= MAX_OFFERED_RPS)
    if too_high.any():
        i = int(np.argmax(too_high))
        unit = f" in a {widths[i]:.6g}-s window" if divisor_is_width else ""
        raise _fail(
            p,
            lines[i],
            load_col,
            f"{loads[i]:.6g}{unit} is {rates[i]:.3g} requests/s, beyond the "
            f"{MAX_OFFERED_RPS:.3g} requests/s the simulator models",
            f"check that {WINDOW_TIME} is in seconds and {load_col!r} in its unit "
            "(docs/traces.md); scale a trace with --rate-scale, not in the file",
        )
    gaps = (raw == 0) & np.asarray(rows.has_empty, dtype=bool)
    if gaps.all():
        raise _fail(
            p,
            hline + 1,
            None,
            "every window is a collection gap (zero load with empty statistics)",
            "use a trace with measured windows",
        )
    rates = _bridge_gaps(starts, rates, gaps)
    wkind: Kind = "window_counts" if divisor_is_width else "window_rates"
    end = float(starts[-1] + widths[-1])
    return Trace(p, wkind, None, starts, rates, end, int(gaps.sum()))


def _check_span(
    p: str, lines: list[int], col: str, offsets: npt.NDArray[np.float64], windows: bool
) -> None:
    """Refuse times no simulation step can cover, or too large for their spacing.

    ``offsets`` are seconds from the first row. A window also needs its end
    (as wide as the window before the last) inside the span.
    """
    ends = offsets.copy()
    if windows and len(offsets) > 1:
        # Overflow to inf is refused just below.
        with np.errstate(over="ignore", invalid="ignore"):
            ends[-1] += offsets[-1] - offsets[-2]
    beyond = ~(ends <= MAX_SPAN_S)
    if beyond.any():
        i = int(np.argmax(beyond))
        raise _fail(
            p,
            lines[i],
            col,
            f"this row ends {ends[i]:.4g} s after the first row's time; the simulator "
            f"runs at most {MAX_SIM_STEPS:,} steps of at most {ALARM_PERIOD_S:g} s "
            f"({MAX_SPAN_S:.4g} s, {MAX_SPAN_S / 86400:.0f} days)",
            f"cut the trace before this row, or check that {col} is in seconds",
        )
    if windows:
        # Distinct times can round to the same offset from the first row's.
        flat = np.diff(offsets) <= 0
        if flat.any():
            i = int(np.argmax(flat)) + 1
            raise _fail(
                p,
                lines[i],
                col,
                "this window's start cannot be told from the previous one's once the first "
                "row's time is subtracted (double precision)",
                "space windows at least a millisecond apart (windows are seconds to minutes)",
            )


def _bridge_gaps(
    starts: npt.NDArray[np.float64],
    rates: npt.NDArray[np.float64],
    gaps: npt.NDArray[np.bool_],
) -> npt.NDArray[np.float64]:
    """Replace collection-gap windows by a straight line between their neighbours.

    A window with zero load whose statistics are empty was not measured: the
    ServeGen M-mid and M-small traces have runs of them (up to 23 windows),
    and their README says to mask them as collection gaps, not real troughs.
    Read as zero they would scale the fleet in and back out for nothing.
    """
    if not gaps.any():
        return rates
    ok = ~gaps
    bridged = rates.copy()
    bridged[gaps] = np.interp(starts[gaps], starts[ok], rates[ok])
    return bridged


# --- Bundled traces -------------------------------------------------------

_CC_BY = "CC-BY-4.0, (c) Microsoft Azure"
_APACHE_SERVEGEN = "Apache-2.0, (c) Alibaba Group"
_APACHE_MOONCAKE = "Apache-2.0, (c) KVCache.AI (Mooncake repository)"


# How docs/traces.md names each kind of trace file.
SHAPES: Final[dict[str, str]] = {
    "requests": "one row per request",
    "window_counts": "count windows",
    "window_rates": "rate windows",
}
# The resolution peaks are read at: one scaling-relevant minute.
PEAK_STEP_S: Final = 60.0


@dataclass(frozen=True)
class TraceShape:
    """What a trace holds, measured from its data: ``ecs-gpu traces`` and docs/traces.md."""

    kind: str
    shape: str
    rows: int
    span_s: float
    # Window widths (seconds): smallest and largest; None for one row per request.
    step_min_s: float | None
    step_max_s: float | None
    mean_rps: float
    peak_rps: float  # highest mean rate over PEAK_STEP_S
    gap_windows: int

    @classmethod
    def of(cls, trace: Trace) -> TraceShape:
        if trace.arrivals is not None:
            rows, lo, hi = len(trace.arrivals), None, None
            total = float(rows)
        else:
            assert trace.window_starts is not None and trace.window_rates is not None
            rows = len(trace.window_starts)
            widths = np.diff(np.append(trace.window_starts, trace.duration_s))
            lo, hi = float(widths.min()), float(widths.max())
            total = float((trace.window_rates * widths).sum())
        return cls(
            kind=trace.kind,
            shape=SHAPES.get(trace.kind, trace.kind),
            rows=rows,
            span_s=trace.duration_s,
            step_min_s=lo,
            step_max_s=hi,
            mean_rps=total / trace.duration_s,
            peak_rps=float(trace.rates(PEAK_STEP_S).max()),
            gap_windows=trace.gap_windows,
        )


@dataclass(frozen=True)
class BundledTrace:
    """A real trace shipped in the package (src/ecs_gpu/data/traces/README.md)."""

    name: str
    file: str
    description: str
    license: str
    # Of the file as copied; tests prove the shipped bytes are unchanged.
    sha256: str

    @property
    def path(self) -> Path:
        return Path(str(resources.files("ecs_gpu") / "data" / "traces" / self.file))

    def load(self) -> Trace:
        return read_trace(self.path)

    @property
    def spdx(self) -> str:
        """The license's SPDX id (``license`` adds the copyright holder)."""
        return self.license.split(",", 1)[0]

    def shape(self) -> TraceShape:
        """Span, step, mean and peak rate, read from the file (a second or less each)."""
        return TraceShape.of(self.load())

    def as_dict(self) -> dict[str, object]:
        """What ``ecs-gpu traces --json`` writes for this trace."""
        return {
            "name": self.name,
            "file": self.file,
            "description": self.description,
            "license": self.license,
            "spdx": self.spdx,
            "sha256": self.sha256,
            **dataclasses.asdict(self.shape()),
        }


_BUNDLED: Final = (
    BundledTrace(
        "azure2023-code",
        "AzureLLMInferenceTrace_code.csv",
        "Azure LLM inference 2023, code: 1 h, one row per request; very bursty",
        _CC_BY,
        "54e9a6d2a4bd06ba1e060304b900abbc74cbea53de96506e60fe5bb4f2277fb6",
    ),
    BundledTrace(
        "azure2023-conv",
        "AzureLLMInferenceTrace_conv.csv",
        "Azure LLM inference 2023, conversation: 1 h, one row per request",
        _CC_BY,
        "2f1e5b666d4e3055fdbba98598ce2ec307767b9064e03e2fa46676dbcc7d0bf8",
    ),
    BundledTrace(
        "azure2024-code",
        "azure2024_code_digitized.csv",
        "Azure 2024 code, read off a plot: 7 days, ~433-s steps, weekly shape only",
        _CC_BY,
        "fe4bda76f220eb968a6c0828f311b69c6b43d2d6c2a1dcec716957df2da4e9ee",
    ),
    BundledTrace(
        "azure2024-conv",
        "azure2024_conv_digitized.csv",
        "Azure 2024 conversation, read off a plot: 7 days, ~433-s steps, weekly shape only",
        _CC_BY,
        "87ecf1c611f3e6ac7364adef5f5f08c744584898afa6fb33649d1b8f36154e4f",
    ),
    BundledTrace(
        "mooncake-conversation",
        "mooncake_conversation_1s.csv",
        "Mooncake FAST'25 conversation: 1 h in 1-s bins (source times in ~3-s steps)",
        _APACHE_MOONCAKE,
        "969cbdaaa90feabdfcc600c88d0fbaf11272e8dfb07276de12d825f4463abc96",
    ),
    BundledTrace(
        "servegen-deepseek-r1",
        "servegen_deepseek-r1_600s.csv",
        "ServeGen DeepSeek-R1: 1 day, 10-min windows",
        _APACHE_SERVEGEN,
        "0a47bf200e3b33672d488c97dacd07bbea294e86b00152a2d557e8b82bc2fd50",
    ),
    BundledTrace(
        "servegen-m-large",
        "servegen_m-large_600s.csv",
        "ServeGen M-large: 14 days, 10-min windows (the `plan` trace)",
        _APACHE_SERVEGEN,
        "50496f262025005c891eb17f1cc1944cc37cc4ecac465becd2d91b7a53622c91",
    ),
    BundledTrace(
        "servegen-m-mid",
        "servegen_m-mid_600s.csv",
        "ServeGen M-mid: 14 days, 10-min windows; 84 collection-gap windows bridged",
        _APACHE_SERVEGEN,
        "365d030da1949ac8852026ed2c96b9ac8b3c61d2e05b743acf94d7cee5da518c",
    ),
    BundledTrace(
        "servegen-m-small",
        "servegen_m-small_600s.csv",
        "ServeGen M-small: 14 days, 10-min windows; 37 collection-gap windows bridged",
        _APACHE_SERVEGEN,
        "3e8982570f0367f829649412d1862bef33098e49ce55152b6330131ce5719b18",
    ),
)


def bundled_traces() -> dict[str, BundledTrace]:
    """The traces shipped in the package, by name (docs/traces.md)."""
    return {t.name: t for t in _BUNDLED}


def load_trace(name_or_path: str | Path) -> Trace:
    """Read a bundled trace by name, or a trace file by path.

    A bundled name (a ``str``) wins over a file of the same name in the
    working folder (names carry no ``.csv``); write ``./NAME`` for such a
    file. A :class:`~pathlib.Path` is always read as a path.
    """
    if isinstance(name_or_path, str):
        bundled = bundled_traces().get(name_or_path)
        if bundled is not None:
            return bundled.load()
    path = Path(name_or_path)
    if not path.exists() and path.suffix == "" and len(path.parts) == 1:
        # A word, not a path: most likely a mistyped bundled name.
        raise BadInputError(
            f"--trace {str(name_or_path)!r}: no such trace file and no bundled trace of "
            f"that name. Fix: give a CSV path or one of {', '.join(bundled_traces())}."
        )
    return read_trace(path)
