"""[alerts]: a topic or addresses, not both and not neither."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from ecs_gpu.spec.messages import Problem

if TYPE_CHECKING:
    from ecs_gpu.spec.model import Spec


def _alerts(spec: Spec) -> Iterator[Problem]:
    al = spec.alerts
    if al is None:
        return
    if al.sns_topic_arn is not None and al.email is not None:
        yield Problem(
            "alerts.email",
            al.email,
            "set together with alerts.sns_topic_arn: the stack either publishes to your "
            "topic or creates its own for these addresses, not both",
            "subscribe the addresses to your topic yourself and remove email, or remove "
            "sns_topic_arn to have the stack create a topic",
        )
    if al.sns_topic_arn is None and al.email is None:
        yield Problem(
            "alerts",
            {},
            "is empty, so nobody would be told when the GPU metric stops",
            'add `sns_topic_arn = "arn:aws:sns:..."` or `email = ["you@example.com"]`, '
            "or remove the [alerts] section",
        )
