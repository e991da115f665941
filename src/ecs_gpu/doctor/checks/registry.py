"""The troubleshooting chain and the registry of checks along it.

Each check module registers its checks with :func:`check`, naming the link
of the chain it examines. :data:`CHAIN` is the order an expert works down
the chain when a GPU task never starts or the fleet never scales (seeds/001
"When the task never starts", seeds/000 Act II), so the report prints the
first broken link first. Within a link, checks keep the order in which
their module registers them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ecs_gpu.doctor.checks.model import Check, CheckFn, Severity

# link -> what it examines; the order is the chain's (docs/doctor.md).
CHAIN: Final[dict[str, str]] = {
    "instances": "container instances registered, connected, with GPUs",
    "task": "the task definition reserves GPUs and carries the demand sidecar",
    "placement": "a task fits on an instance: free GPUs, placement constraints",
    "capacity": "the capacity provider and ASG add instances",
    "service": "the service places tasks and they keep running",
    "metric": "the scaling signal arrives in CloudWatch",
    "alarm": "the scaling and missing-metric alarms have data",
    "scaling": "the service's and the ASG's scaling policies",
    "launch_template": "what new instances launch from",
    "host": "on the instances: driver, runtimes, agents, ecs.config",
    "stack": "the CloudFormation stack",
}

_REGISTERED: list[Check] = []


def check(
    id: str,
    *,
    link: str,
    severity: Severity,
    title: str,
    requires: tuple[str, ...],
    doc: str,
) -> Callable[[CheckFn], CheckFn]:
    """Register the decorated function as check ``id`` on ``link`` of the chain."""

    def register(fn: CheckFn) -> CheckFn:
        if link not in CHAIN:
            raise ValueError(f"check {id}: link {link!r} is not in CHAIN {list(CHAIN)}")
        if any(c.id == id for c in _REGISTERED):
            raise ValueError(f"check {id} is registered twice")
        _REGISTERED.append(Check(id, link, severity, title, tuple(requires), fn, doc))
        return fn

    return register


def registered() -> tuple[Check, ...]:
    """Every registered check, in chain order (stable within a link)."""
    rank = {link: i for i, link in enumerate(CHAIN)}
    return tuple(sorted(_REGISTERED, key=lambda c: rank[c.link]))
