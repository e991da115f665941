"""``verify scaling``'s verdict after the test: who made the first scale-out decision.

The first Application Auto Scaling activity since the test began
(:class:`Decision`, read by :mod:`ecs_gpu.aws.verify_decision`), the policy its
Cause names (:func:`policy_in_cause`) and the verdict on it (:func:`judge`): the
fast path's step policy, or why not. ``verify wake`` and the fast scale-in's
verdict (:mod:`ecs_gpu.checks.verify.scale_in`) read the activities the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal


@dataclass(frozen=True)
class Decision:
    """One Application Auto Scaling activity: who changed desiredCount, and how."""

    start: datetime
    cause: str
    description: str
    status: str
    # The step-scaling (fast path) policy's name, when the cause names it.
    fast_path_policy: str | None
    # Every StepScaling policy of the fast path's shape (empty: no fast path deployed).
    step_policies: tuple[str, ...] = ()


def policy_in_cause(names: Sequence[str], cause: str) -> str | None:
    """The policy of ``names`` an activity's Cause says fired ("... triggered policy
    NAME ..."); the longest when several match, so a name inside another is not taken."""
    found = [n for n in names if f"policy {n}" in cause]
    return max(found, key=len) if found else None


@dataclass(frozen=True)
class Verdict:
    """Who made the first scale-out decision, and how long after the first datapoint.

    ``by``: ``fast_path`` (its step policy); ``lacking`` (the service lacks the
    fast path, as :func:`ecs_gpu.checks.verify.step_paths.explain_missing_fast_path`
    said); ``not_deployed`` (no StepScaling policy at all); ``too_slow`` (the fast
    path is there, target tracking was first).
    """

    decision: Decision
    after_s: float
    by: Literal["fast_path", "lacking", "not_deployed", "too_slow"]


def judge(d: Decision, *, since: datetime, missing: str | None = None) -> Verdict:
    """The verdict on the first decision ``d`` of a test that started at ``since``."""
    after = (d.start - since).total_seconds()
    if d.fast_path_policy is not None:
        return Verdict(d, after, "fast_path")
    if missing is not None:
        return Verdict(d, after, "lacking")
    if not d.step_policies:
        return Verdict(d, after, "not_deployed")
    return Verdict(d, after, "too_slow")
