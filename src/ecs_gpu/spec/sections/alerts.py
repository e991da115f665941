"""[alerts]: who is told when the GPU metric stops arriving."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from ecs_gpu.spec.messages import RuleError
from ecs_gpu.spec.sections.base import _Section

# An SNS topic ARN: partition, Region, 12-digit account, topic name (1-256
# letters, digits, hyphens, underscores; ".fifo" for FIFO topics, which
# CloudWatch alarms cannot publish to, so a FIFO name is refused).
SNS_TOPIC_ARN_RE = r"^arn:aws[a-z-]*:sns:[a-z]{2}(-[a-z]+)+-\d:\d{12}:[A-Za-z0-9_-]{1,256}$"
# Deliberately loose: SNS itself sends the confirmation mail, which is the real check.
EMAIL_RE = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"


class AlertsSpec(_Section):
    """Who is told when the GPU metric stops arriving (and when it is back)."""

    # An existing topic; the stack only publishes to it.
    sns_topic_arn: Annotated[str, Field(pattern=SNS_TOPIC_ARN_RE)] | None = None
    # Without a topic ARN: the stack creates an encrypted topic with these
    # email subscriptions (each must confirm SNS's mail).
    email: Annotated[list[Annotated[str, Field(pattern=EMAIL_RE)]], Field(min_length=1)] | None = (
        None
    )

    @field_validator("email")
    @classmethod
    def _unique(cls, v: list[str] | None) -> list[str] | None:
        lowered = [e.lower() for e in v or []]
        twice = sorted({e for e in lowered if lowered.count(e) > 1})
        if twice:
            raise RuleError(f"lists {', '.join(twice)} more than once", "list each address once")
        return v
