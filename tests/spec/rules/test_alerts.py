"""The [alerts] rule (spec/rules/alerts.py): a topic or addresses, not both and not neither."""

from __future__ import annotations

from ..specdata import (
    one_problem,
    with_,
)


def test_alerts_topic_and_email_together_are_refused() -> None:
    line = one_problem(with_("alerts", email=["a@example.com"]), "alerts.email")
    assert "sns_topic_arn" in line and "not both" in line


def test_empty_alerts_section_is_refused() -> None:
    line = one_problem(with_("alerts", sns_topic_arn=...), "alerts")
    assert "nobody would be told" in line
    assert "sns_topic_arn" in line and "email" in line
