"""Scheduled actions: Application Auto Scaling's cron syntax, checked and evaluated.

A ``[[scaling.schedule]]`` entry becomes a scheduled action on the service's
scalable target (infra/scaling.py) and the simulator applies it at the same
minutes, so the one reader of the cron fields is here, without importing CDK
or the spec; doctor's schedule check compares a deployed action with an entry
through :func:`action_differences`.
Application Auto Scaling's cron is EventBridge's six fields, in UTC unless the
action names a time zone (aws-semantics.md §10 "Scheduled actions"); ecs-gpu
sets no time zone. :func:`parse` says which subset this reader takes.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Any, Final

# (name, lowest, highest) of each field, in order.
FIELDS: Final = (
    ("minutes", 0, 59),
    ("hours", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    ("day-of-week", 1, 7),
    ("year", 1970, 2199),
)
MONTHS: Final = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
# EventBridge numbers the days 1-7 from Sunday.
DAYS: Final = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
EXAMPLE: Final = "0 8 ? * MON-FRI *"
# EventBridge's table allows "/" in every field but month and day-of-week.
NO_STEP: Final = frozenset({3, 4})
_WRAPPED = re.compile(r"^cron\((.*)\)$")
# A scheduled action without Timezone runs in UTC, as ecs-gpu's do
# (aws-semantics.md §10 "Scheduled actions").
UTC_NAMES: Final = frozenset({"UTC", "Etc/UTC"})


class CronError(ValueError):
    """A cron expression this reader refuses; the message says which field and why."""


def _value(text: str, field: int) -> int:
    name, lo, hi = FIELDS[field]
    names = MONTHS if name == "month" else DAYS if name == "day-of-week" else ()
    up = text.upper()
    if up in names:
        return names.index(up) + 1
    if not text.isdigit():
        raise CronError(f"{name} field: {text!r} is not a number" + (" or a name" if names else ""))
    v = int(text)
    if not lo <= v <= hi:
        raise CronError(f"{name} field: {v} is outside {lo}-{hi}")
    return v


def _field(text: str, field: int) -> frozenset[int]:
    name, lo, hi = FIELDS[field]
    # L, W and # outside the month and day names (JUL and WED have them).
    bare = re.sub(r"[A-Z]{3}", "", text.upper())
    if any(c in bare for c in "LW#"):
        raise CronError(f"{name} field: {text!r} uses L, W or #, which ecs-gpu does not read")
    out: set[int] = set()
    for part in text.split(","):
        base, _, step_text = part.partition("/")
        step = 1
        if "/" in part and field in NO_STEP:
            raise CronError(f"{name} field: {part!r} has a step, which this field does not take")
        if step_text:
            if not step_text.isdigit() or int(step_text) < 1:
                raise CronError(f"{name} field: step {step_text!r} is not a positive number")
            step = int(step_text)
        if base == "*":
            start, end = lo, hi
        elif "-" in base:
            a, _, b = base.partition("-")
            start, end = _value(a, field), _value(b, field)
            if start > end:
                raise CronError(f"{name} field: range {base!r} runs backwards")
        else:
            start = _value(base, field)
            end = hi if step_text else start
        out.update(range(start, end + 1, step))
    return frozenset(out)


@dataclass(frozen=True)
class Cron:
    """A parsed expression; ``None`` for a day field written ``?``."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days_of_month: frozenset[int] | None
    months: frozenset[int]
    days_of_week: frozenset[int] | None
    years: frozenset[int]

    @property
    def expression(self) -> str:
        """The ``Schedule`` string a scheduled action takes: ``cron(<fields>)``."""
        return f"cron({self.text})"

    def matches(self, at: datetime) -> bool:
        """Whether the action runs in the minute that ``at`` (UTC) falls in."""
        return (
            at.minute in self.minutes
            and at.hour in self.hours
            and at.month in self.months
            and at.year in self.years
            and _on_day(self, at.date())
        )


def _on_day(c: Cron, day: date) -> bool:
    dow = day.isoweekday() % 7 + 1  # Monday 1 -> 2, Sunday 7 -> 1
    return (c.days_of_month is None or day.day in c.days_of_month) and (
        c.days_of_week is None or dow in c.days_of_week
    )


def first_shared_minute(a: Cron, b: Cron) -> datetime | None:
    """The first minute (UTC) at which both expressions run, or None if they never do:
    day fields written differently ("* * ?" and "? * *", "MON-FRI" and "*") still share
    minutes. A day is scanned only when the minutes, hours, months and years meet, and
    the scan stops at the first shared day."""
    minutes, hours = a.minutes & b.minutes, a.hours & b.hours
    months, years = a.months & b.months, a.years & b.years
    if not (minutes and hours and months and years):
        return None
    # Day fields of one kind that never meet: no day can match both, and the scan
    # below would walk every shared year (up to 230) to find that out.
    for field in ("days_of_month", "days_of_week"):
        x, y = getattr(a, field), getattr(b, field)
        if x is not None and y is not None and not x & y:
            return None
    for year in sorted(years):
        for month in sorted(months):
            for d in range(1, calendar.monthrange(year, month)[1] + 1):
                day = date(year, month, d)
                if _on_day(a, day) and _on_day(b, day):
                    return datetime(year, month, d, min(hours), min(minutes), tzinfo=UTC)
    return None


def parse(text: str) -> Cron:
    """The six fields (``cron(...)`` around them is taken off), or :class:`CronError`.

    The fields are ``Minutes Hours Day-of-month Month Day-of-week Year``. This
    reader takes the subset a daily or weekday rhythm needs: numbers, ``*``,
    lists (``1,3``), ranges (``8-18``), steps (``0/15``, ``*/2``; not in month
    and day-of-week, as EventBridge's table), the names ``JAN``-``DEC`` and
    ``SUN``-``SAT`` (1 = Sunday), and ``?`` in one of day-of-month and
    day-of-week (EventBridge: one of the two must be ``?``). ``L``, ``W`` and
    ``#`` are refused with a message, not guessed.
    """
    m = _WRAPPED.match(text.strip())
    fields = (m.group(1) if m else text).split()
    if len(fields) != len(FIELDS):
        raise CronError(
            f"has {len(fields)} fields; Application Auto Scaling's cron has six: minutes "
            f"hours day-of-month month day-of-week year (e.g. {EXAMPLE!r})"
        )
    dom, dow = fields[2], fields[4]
    if (dom == "?") == (dow == "?"):
        raise CronError(
            "exactly one of day-of-month and day-of-week must be '?' (EventBridge's rule), "
            f"e.g. {EXAMPLE!r} or '0 20 * * ? *'"
        )
    for i in (0, 1, 3, 5):
        if fields[i] == "?":
            raise CronError(f"{FIELDS[i][0]} field: '?' is only for day-of-month or day-of-week")
    return Cron(
        text=" ".join(fields),
        minutes=_field(fields[0], 0),
        hours=_field(fields[1], 1),
        days_of_month=None if dom == "?" else _field(dom, 2),
        months=_field(fields[3], 3),
        days_of_week=None if dow == "?" else _field(dow, 4),
        years=_field(fields[5], 5),
    )


def same_schedule(found: Any, expression: str) -> bool:
    """Whether a deployed action's ``Schedule`` runs at the minutes of ``expression``
    (``cron(...)``); ``at(...)``, ``rate(...)`` or an unreadable cron never does."""
    if not isinstance(found, str) or not _WRAPPED.match(found.strip()):
        return False
    try:
        # The same minutes, however written: MON-FRI and 2-6 are one field.
        return replace(parse(found), text="") == replace(parse(expression), text="")
    except CronError:
        return False


def action_differences(
    action: Mapping[str, Any], expression: str, min_tasks: int, max_tasks: int
) -> list[tuple[str, Any, str]]:
    """(field, value found, phrase) for each way a deployed scheduled action with the
    entry's Schedule differs from it: ``ScalableTargetAction`` MinCapacity and
    MaxCapacity, and a time zone other than UTC (empty: it is the entry's action)."""
    out: list[tuple[str, Any, str]] = []
    bounds = action.get("ScalableTargetAction") or {}
    for key, want in (("MinCapacity", min_tasks), ("MaxCapacity", max_tasks)):
        found = bounds.get(key)
        if found != want:
            shown = "not set" if found is None else f"{found}"
            out.append((f"ScalableTargetAction.{key}", found, f"{key} {shown} (want {want})"))
    tz = action.get("Timezone")
    if tz not in (None, "", *UTC_NAMES):
        out.append(("Timezone", tz, f"time zone {tz} (want UTC: the spec's cron is in UTC)"))
    return out
