"""Read a request trace and turn it into offered load per simulation step.

Three shapes of CSV are understood (docs/simulator.md "Traces"):

* one row per request: a ``TIMESTAMP`` column (ISO date and time), optionally
  ``ContextTokens`` and ``GeneratedTokens`` (Azure LLM inference 2023);
* per-window counts: ``timestamp_s`` (window start, seconds) and ``requests``
  (ServeGen, Mooncake); other known statistics columns are accepted;
* per-window rates: ``timestamp_s`` with ``rate_rps`` or ``req_per_min_mid``
  (Azure 2024 digitized).

Anything else is refused with a :class:`TraceError` that names the file, the
line and the column, so a user can fix the file instead of reading a traceback.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt

from ecs_gpu.errors import BadInputError

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

    def rates(self, step_s: float, scale: float = 1.0) -> npt.NDArray[np.float64]:
        """Mean offered load (requests/s) in each step of ``step_s`` seconds."""
        if step_s <= 0:
            raise BadInputError(f"step = {step_s!r}: must be positive. Fix: use e.g. 10.")
        n = max(1, math.ceil(self.duration_s / step_s - 1e-9))
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
    except ValueError:
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
    try:
        # utf-8-sig: a spreadsheet's byte-order mark must not rename the first column.
        with open(path, newline="", encoding="utf-8-sig") as fh:
            return _parse(p, fh)
    except FileNotFoundError:
        raise BadInputError(f"{p}: no such trace file. Fix: check the path.") from None
    except IsADirectoryError:
        raise BadInputError(
            f"{p}: is a folder, not a trace file. Fix: give the CSV file inside it."
        ) from None
    except UnicodeDecodeError as e:
        raise BadInputError(
            f"{p}: byte {e.start} is not UTF-8. Fix: save the trace as UTF-8 CSV."
        ) from None
    except OSError as e:
        raise BadInputError(
            f"{p}: cannot read the trace: {e.strerror or e}. "
            "Fix: check the path and the file's permissions."
        ) from None


def _parse(p: str, fh: Iterable[str]) -> Trace:
    reader = csv.reader(fh)
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

    times: list[float] = []
    loads: list[float] = []
    # Rows of a window trace with a statistic left empty (see _bridge_gaps).
    has_empty: list[bool] = []
    load_col: str | None = None
    divisor_is_width = False
    factor = 1.0
    if kind == "window":
        for name, f in _LOAD_COLUMNS:
            if name in cols:
                load_col, factor, divisor_is_width = name, f, f == 0.0
                break
        if load_col is None:
            raise _fail(
                p,
                hline,
                None,
                "a window trace needs a load column",
                "add 'requests' (count per window), 'rate_rps' or 'req_per_min_mid'",
            )
    tcol = cols.index(PER_REQUEST_TIME if kind == "requests" else WINDOW_TIME)
    lcol = cols.index(load_col) if load_col else -1
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
        if lcol >= 0:
            loads.append(values[lcol])
            has_empty.append(empty)
    if not times:
        raise _fail(p, hline, None, "the file has a header but no data rows", "add data rows")

    t0 = times[0]
    if kind == "requests":
        arr = np.asarray(times, dtype=np.float64) - t0
        duration = max(float(arr[-1]), 1.0)
        return Trace(p, "requests", arr, None, None, duration)
    starts = np.asarray(times, dtype=np.float64) - t0
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
    rates = raw / widths if divisor_is_width else raw * factor
    gaps = (raw == 0) & np.asarray(has_empty, dtype=bool)
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
