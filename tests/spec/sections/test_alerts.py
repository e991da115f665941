"""[alerts] (spec/sections/alerts.py): off by default, a topic ARN or email addresses."""

from __future__ import annotations

import pytest

from ecs_gpu.spec import (
    parse_spec,
)

from ..specdata import (
    FULL,
    MINIMAL,
    PATH,
    dumps,
    one_problem,
    with_,
)


def test_alerts_are_optional_and_off_by_default() -> None:
    assert parse_spec(MINIMAL, PATH).alerts is None


def test_alerts_topic_arn_is_kept() -> None:
    spec = parse_spec(dumps(FULL), PATH)
    assert spec.alerts is not None
    assert spec.alerts.sns_topic_arn == "arn:aws:sns:us-east-1:123456789012:gpu-alerts"
    assert spec.alerts.email is None


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sns:us-gov-west-1:123456789012:alerts",
        "arn:aws-cn:sns:cn-north-1:123456789012:my_alerts-2",
    ],
)
def test_alerts_topic_arn_in_other_partitions(arn: str) -> None:
    spec = parse_spec(with_("alerts", sns_topic_arn=arn), PATH)
    assert spec.alerts is not None and spec.alerts.sns_topic_arn == arn


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sns:us-east-1:12345678901:alerts",  # 11-digit account
        "arn:aws:sqs:us-east-1:123456789012:alerts",  # a queue, not a topic
        "arn:aws:sns:us-east-1:123456789012:alerts.fifo",  # alarms cannot publish to FIFO
        "arn:aws:sns:us-east-1:123456789012:alerts:0b1c2d3e",  # a subscription ARN
        "gpu-alerts",  # a bare name
    ],
)
def test_bad_alerts_topic_arn_names_an_example(arn: str) -> None:
    line = one_problem(with_("alerts", sns_topic_arn=arn), "alerts.sns_topic_arn", repr(arn))
    assert '"arn:aws:sns:us-east-1:123456789012:gpu-alerts"' in line
    assert "not FIFO" in line


def test_alerts_email_creates_a_topic_of_its_own() -> None:
    spec = parse_spec(
        with_("alerts", sns_topic_arn=..., email=["oncall@example.com", "ml@example.com"]), PATH
    )
    assert spec.alerts is not None
    assert spec.alerts.email == ["oncall@example.com", "ml@example.com"]
    assert spec.alerts.sns_topic_arn is None


def test_alerts_email_must_be_an_address() -> None:
    line = one_problem(
        with_("alerts", sns_topic_arn=..., email=["oncall@example.com", "oncall"]),
        "alerts.email[1]",
        "'oncall'",
    )
    assert '"oncall@example.com"' in line


def test_alerts_email_listed_twice() -> None:
    line = one_problem(
        with_("alerts", sns_topic_arn=..., email=["a@example.com", "A@example.com"]),
        "alerts.email",
    )
    assert "a@example.com more than once" in line and "Fix: list each address once" in line


def test_unknown_alerts_key_suggests_the_nearest() -> None:
    line = one_problem(with_("alerts", emails=["a@example.com"]), "alerts.emails")
    assert "did you mean 'email'?" in line
    assert "known keys here: sns_topic_arn, email" in line
