"""What a check is and what it reports: evidence, findings, results, the report."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ecs_gpu.checks.snapshot import Snapshot

Severity = Literal["error", "warning", "info"]
Status = Literal["ok", "finding", "unknown"]
SEVERITY_ORDER: Final = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Evidence:
    kind: str  # snapshot key, e.g. "container_instances"
    id: str  # the object's id or name within that kind
    field: str  # the field path inside the object
    value: Any

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "id": self.id, "field": self.field, "value": self.value}


@dataclass(frozen=True)
class Finding:
    id: str
    severity: Severity
    title: str
    evidence: tuple[Evidence, ...]
    fix: str
    # The check's former ids (registry.FORMERLY), for consumers of the old ones.
    formerly: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "severity": self.severity,
            "title": self.title,
            "evidence": [e.as_dict() for e in self.evidence],
            "fix": self.fix,
        }
        if self.formerly:
            out["formerly"] = list(self.formerly)
        return out


class Unknown(Exception):
    """Raised by a check that cannot decide from what was collected."""


CheckFn = Callable[[Snapshot, "Check"], list[Finding]]


@dataclass(frozen=True)
class Check:
    id: str
    link: str  # the link of the troubleshooting chain it examines (registry.CHAIN)
    severity: Severity
    title: str
    requires: tuple[str, ...]
    fn: CheckFn
    doc: str = ""
    # Ids this check had before it moved to its module's prefix (registry.FORMERLY).
    formerly: tuple[str, ...] = ()

    def finding(
        self,
        evidence: Iterable[Evidence],
        fix: str,
        *,
        title: str | None = None,
        severity: Severity | None = None,
    ) -> Finding:
        return Finding(
            self.id,
            severity or self.severity,
            title or self.title,
            tuple(evidence),
            fix,
            self.formerly,
        )


@dataclass(frozen=True)
class CheckResult:
    check: Check
    status: Status
    findings: tuple[Finding, ...] = ()
    missing: tuple[str, ...] = ()
    reason: str = ""


@dataclass
class Report:
    results: list[CheckResult] = field(default_factory=list)
    missing_permissions: list[dict[str, Any]] = field(default_factory=list)
    collection_errors: list[dict[str, Any]] = field(default_factory=list)
    # What doctor assumed for a snapshot of raw AWS output (_collection.assumed).
    assumed: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return [f for r in self.results for f in r.findings]

    @property
    def unknown(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == "unknown"]

    @property
    def has_error(self) -> bool:
        return any(f.severity == "error" for f in self.findings)

    @property
    def checked(self) -> int:
        """How many checks could decide (ok or finding); 0 means nothing was checked."""
        return sum(1 for r in self.results if r.status != "unknown")

    def as_dict(self) -> dict[str, Any]:
        return {
            "findings": [f.as_dict() for f in self.findings],
            "unknown": [
                {
                    "id": r.check.id,
                    "title": r.check.title,
                    "missing": list(r.missing),
                    "reason": r.reason,
                    **({"formerly": list(r.check.formerly)} if r.check.formerly else {}),
                }
                for r in self.unknown
            ],
            "ok": [r.check.id for r in self.results if r.status == "ok"],
            "missing_permissions": self.missing_permissions,
            "collection_errors": self.collection_errors,
            "assumed": self.assumed,
        }
