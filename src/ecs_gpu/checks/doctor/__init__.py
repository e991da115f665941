"""Doctor checks: pure functions over a snapshot, one module per link of the chain.

Each check has an id, the link of the troubleshooting chain it examines, a
default severity, a title, the snapshot kinds it reads and a function
returning findings. A finding names its evidence (the object kind, its id,
the field and the value) and the fix. A check whose kinds are absent from
the snapshot reports "unknown", never "ok".

Importing this package imports every link module, whose ``@check``
decorators register the checks; :data:`CHECKS` holds them in
:data:`CHAIN` order, so the first broken link prints first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

# Each import registers that link's checks (registry.check).
from ecs_gpu.checks.doctor import (  # noqa: F401
    alarm,
    capacity,
    host,
    instances,
    launch_template,
    metric,
    placement,
    scaling,
    service,
    stack,
    task,
)
from ecs_gpu.checks.doctor.registry import CHAIN, check, registered
from ecs_gpu.checks.model import (
    SEVERITY_ORDER,
    Check,
    CheckResult,
    Evidence,
    Finding,
    Report,
    Severity,
    Status,
    Unknown,
)
from ecs_gpu.checks.runner import run_check
from ecs_gpu.checks.runner import run_checks as _run_checks
from ecs_gpu.checks.snapshot import Snapshot

CHECKS: Final[tuple[Check, ...]] = registered()
CHECKS_BY_ID: Final = {c.id: c for c in CHECKS}


def run_checks(snapshot: Snapshot, checks: Iterable[Check] = CHECKS) -> Report:
    """Every check over the snapshot, in chain order."""
    return _run_checks(snapshot, checks)


__all__ = [
    "CHAIN",
    "CHECKS",
    "CHECKS_BY_ID",
    "SEVERITY_ORDER",
    "Check",
    "CheckResult",
    "Evidence",
    "Finding",
    "Report",
    "Severity",
    "Status",
    "Unknown",
    "check",
    "run_check",
    "run_checks",
]
