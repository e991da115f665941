"""The troubleshooting chain and the registry of checks along it.

Each check module registers its checks with :func:`check`, naming the link
of the chain it examines. :data:`CHAIN` is the order an expert works down
the chain when a GPU task never starts or the fleet never scales, so the
report prints the first broken link first. Within a link, checks keep the
order in which their module registers them.

A check's id names its module: each link is one module, ``checks/doctor/<link>.py``,
and its ids start with that link's :data:`PREFIXES` entry. Ids moved to the
right prefix keep their old spelling in :data:`FORMERLY`, so a ``--json``
consumer or a docs link that knows the old id still finds the check.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from ecs_gpu.checks.model import Check, CheckFn, Severity

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

# link (= module under doctor/checks/) -> the id prefix of its checks.
PREFIXES: Final[dict[str, str]] = {
    "instances": "ECS",
    "task": "TD",
    "placement": "PLC",
    "capacity": "ASG",
    "service": "SVC",
    "metric": "MET",
    "alarm": "ALM",
    "scaling": "SCL",
    "launch_template": "LT",
    "host": "HOST",
    "stack": "STK",
}
# old id -> its id now: checks renamed to their module's prefix. Findings
# carry the new id and list the old one under "formerly" (docs/doctor.md
# keeps an anchor for each old id).
FORMERLY: Final[dict[str, str]] = {
    "GPU001": "ECS003",
    "GPU002": "TD002",
    "GPU003": "PLC002",
    "CAP001": "ASG008",
    "TSK001": "SVC002",
    "MET002": "ALM001",
    "MET003": "ALM002",
    "ASG003": "SCL006",
    "ASG004": "LT002",
}

_REGISTERED: list[Check] = []


def resolve(check_id: str) -> str:
    """The id a check has now, given its id or a former one."""
    return FORMERLY.get(check_id, check_id)


def former_ids(check_id: str) -> tuple[str, ...]:
    """The ids ``check_id`` had before (empty for a check never renamed)."""
    return tuple(old for old, new in FORMERLY.items() if new == check_id)


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
        module = fn.__module__.rsplit(".", 1)[-1]
        if module != link or not re.fullmatch(rf"{PREFIXES[link]}\d{{3}}", id):
            raise ValueError(
                f"check {id} in {module}.py on link {link!r}: a link's checks live in "
                f"checks/<link>.py with ids {PREFIXES[link]}NNN (registry.PREFIXES)"
            )
        _REGISTERED.append(
            Check(id, link, severity, title, tuple(requires), fn, doc, former_ids(id))
        )
        return fn

    return register


def registered() -> tuple[Check, ...]:
    """Every registered check, in chain order (stable within a link)."""
    rank = {link: i for i, link in enumerate(CHAIN)}
    return tuple(sorted(_REGISTERED, key=lambda c: rank[c.link]))
