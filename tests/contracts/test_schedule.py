"""schedule.py: Application Auto Scaling's cron, parsed and matched minute by minute."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ecs_gpu.contracts import schedule


def _at(day: int, hour: int, minute: int = 0) -> datetime:
    # January 2024: the 1st is a Monday.
    return datetime(2024, 1, day, hour, minute, tzinfo=UTC)


def test_weekday_mornings_match_only_on_weekdays() -> None:
    cron = schedule.parse("0 8 ? * MON-FRI *")
    assert cron.expression == "cron(0 8 ? * MON-FRI *)"
    assert [d for d in range(1, 8) if cron.matches(_at(d, 8))] == [1, 2, 3, 4, 5]
    assert not cron.matches(_at(1, 8, 1)) and not cron.matches(_at(1, 9))


def test_days_of_week_count_from_sunday_as_eventbridge_does() -> None:
    # 1 = Sunday (the 7th), 2 = Monday (the 1st).
    assert schedule.parse("0 0 ? * 1 *").matches(_at(7, 0))
    assert schedule.parse("0 0 ? * 2 *").matches(_at(1, 0))
    assert schedule.parse("0 0 ? * SUN *").matches(_at(7, 0))


def test_lists_ranges_and_steps() -> None:
    cron = schedule.parse("0/15 8-9,20 * * ? *")
    assert cron.minutes == frozenset({0, 15, 30, 45})
    assert cron.hours == frozenset({8, 9, 20})
    assert schedule.parse("*/20 * * * ? *").minutes == frozenset({0, 20, 40})
    assert schedule.parse("0 0 1 JAN,JUL ? 2024-2025").months == frozenset({1, 7})
    assert schedule.parse("cron(0 20 * * ? *)").text == "0 20 * * ? *"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("0 8 * * *", "has 5 fields"),
        ("0 8 ? * ? *", "exactly one of day-of-month and day-of-week"),
        ("0 8 * * MON *", "exactly one of day-of-month and day-of-week"),
        ("60 8 * * ? *", "minutes field: 60 is outside 0-59"),
        ("0 8 ? 13 MON *", "month field: 13 is outside 1-12"),
        ("0 9-8 * * ? *", "range '9-8' runs backwards"),
        ("0 8 ? * MON#2 *", "uses L, W or #"),
        ("0 8 LW * ? *", "uses L, W or #"),
        ("0/0 8 * * ? *", "step '0' is not a positive number"),
        ("? 8 * * ? *", "'?' is only for day-of-month or day-of-week"),
        ("0 8 ? * MON/2 *", "has a step, which this field does not take"),
        ("0 x * * ? *", "hours field: 'x' is not a number"),
    ],
)
def test_bad_expressions_say_which_field(text: str, says: str) -> None:
    with pytest.raises(schedule.CronError, match=None) as exc:
        schedule.parse(text)
    assert says in str(exc.value)


def test_a_deployed_schedule_is_compared_by_its_minutes() -> None:
    want = schedule.parse("0 8 ? * MON-FRI *").expression
    assert want == "cron(0 8 ? * MON-FRI *)"
    assert schedule.same_schedule("cron(0 8 ? * MON-FRI *)", want)
    assert schedule.same_schedule("cron(0  8 ? * 2-6 *)", want)  # the same days, spelled out
    assert not schedule.same_schedule("cron(0 9 ? * MON-FRI *)", want)
    # Not a cron: another kind of schedule, or nothing this reader takes.
    for other in ("rate(1 hour)", "at(2026-12-01T08:00:00)", "cron(0 8 L * ? *)", None, 7):
        assert not schedule.same_schedule(other, want)


def test_a_deployed_actions_differences_name_the_field() -> None:
    action = {"ScalableTargetAction": {"MinCapacity": 1, "MaxCapacity": 4}}
    assert schedule.action_differences(action, "cron(0 8 ? * MON-FRI *)", 1, 4) == []
    assert schedule.action_differences({**action, "Timezone": "UTC"}, "", 1, 4) == []
    diffs = schedule.action_differences(
        {"ScalableTargetAction": {"MaxCapacity": 2}, "Timezone": "Europe/Paris"}, "", 1, 4
    )
    assert diffs == [
        ("ScalableTargetAction.MinCapacity", None, "MinCapacity not set (want 1)"),
        ("ScalableTargetAction.MaxCapacity", 2, "MaxCapacity 2 (want 4)"),
        (
            "Timezone",
            "Europe/Paris",
            "time zone Europe/Paris (want UTC: the spec's cron is in UTC)",
        ),
    ]


def test_the_first_shared_minute_of_two_expressions() -> None:
    parse = schedule.parse
    weekdays, daily = parse("0 8 ? * MON-FRI *"), parse("0 8 * * ? *")
    # 1970-01-01 was a Thursday.
    assert schedule.first_shared_minute(weekdays, daily) == datetime(1970, 1, 1, 8, 0, tzinfo=UTC)
    # Saturday mornings and weekday mornings never meet; nor do other minutes.
    assert schedule.first_shared_minute(weekdays, parse("0 8 ? * SAT *")) is None
    assert schedule.first_shared_minute(weekdays, parse("30 8 ? * MON-FRI *")) is None
    # The 31st of February never comes.
    assert schedule.first_shared_minute(parse("0 8 31 2 ? *"), daily) is None
    # Years that do not meet.
    assert schedule.first_shared_minute(parse("0 8 * * ? 2027"), parse("0 8 * * ? 2028")) is None


def test_day_fields_of_one_kind_that_never_meet_are_decided_without_a_scan(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 200 Monday and Tuesday actions at one minute would each walk 230 years.
    def no_scan(*_: object) -> None:
        raise AssertionError("scanned")

    monkeypatch.setattr(schedule.calendar, "monthrange", no_scan)
    mon, tue = schedule.parse("0 8 ? * MON *"), schedule.parse("0 8 ? * TUE *")
    assert schedule.first_shared_minute(mon, tue) is None
    first, second = schedule.parse("0 8 1 * ? *"), schedule.parse("0 8 2 * ? *")
    assert schedule.first_shared_minute(first, second) is None
