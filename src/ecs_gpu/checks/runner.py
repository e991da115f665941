"""Run the checks over a snapshot: unknown when a kind is absent, never a crash."""

from __future__ import annotations

from collections.abc import Iterable

from ecs_gpu.checks.model import Check, CheckResult, Report, Unknown
from ecs_gpu.checks.snapshot import COLLECTION_KEY, Snapshot


def why_missing(s: Snapshot, kinds: tuple[str, ...]) -> str:
    """Why ``kinds`` are absent: the denied or failed calls, else "not collected"."""
    meta = s.get(COLLECTION_KEY) or {}
    reasons = []
    for d in meta.get("denied", []):
        if set(d.get("kinds", [])) & set(kinds):
            reasons.append(f"{d.get('call')} denied (needs {d.get('permission')})")
    for e in meta.get("errors", []):
        if set(e.get("kinds", [])) & set(kinds):
            reasons.append(f"{e.get('call')} failed: {e.get('message')}")
    if "host_probes" in kinds and not meta.get("probe_hosts"):
        reasons.append("run with --probe-hosts to probe the instances")
    return "; ".join(reasons) or "not collected"


def run_check(check: Check, snapshot: Snapshot) -> CheckResult:
    missing = tuple(k for k in check.requires if k not in snapshot)
    if missing:
        return CheckResult(check, "unknown", missing=missing, reason=why_missing(snapshot, missing))
    try:
        findings = check.fn(snapshot, check)
    except Unknown as e:
        return CheckResult(check, "unknown", reason=str(e))
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        # A hand-edited or truncated snapshot: say what is wrong, never crash.
        return CheckResult(
            check,
            "unknown",
            reason=f"the snapshot lacks or mistypes a field this check reads ({e!r})",
        )
    return CheckResult(check, "finding" if findings else "ok", tuple(findings))


def run_checks(snapshot: Snapshot, checks: Iterable[Check]) -> Report:
    """Every check over the snapshot, in the order given (the chain's)."""
    meta = snapshot.get(COLLECTION_KEY) or {}
    return Report(
        results=[run_check(c, snapshot) for c in checks],
        missing_permissions=list(meta.get("denied", [])),
        collection_errors=list(meta.get("errors", [])),
        assumed=list(meta.get("assumed", [])),
    )
