"""``verify scaling`` on the fast scale-in: is it deployed, and did it remove the first task.

With ``[scaling] fast_scale_in = true`` the low phase of the test is what the
fast scale-in acts on: the synthetic datapoints carry 1,000 counts each, so
its alarm's ``s / (n - k)`` reads the published low value. Before the test
:func:`explain_missing_fast_scale_in` says what of it the service lacks (the fast
path's check, :func:`ecs_gpu.checks.verify.step_paths.explain_missing_step_path`,
on the policies that only remove); after the fall :func:`first_lowering` picks the
first activity that lowered desiredCount (:mod:`ecs_gpu.aws.verify_scale_in` reads
them), and :func:`judge_scale_in` says whether the fast scale-in's policy made it,
within its step, or the sleep path's ExactCapacity 0 did (a scale-to-zero spec, no
verdict on the fast scale-in).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from ecs_gpu.checks.verify.decision import policy_in_cause
from ecs_gpu.checks.verify.step_paths import StepPolicy, explain_missing_step_path
from ecs_gpu.contracts import demand_metric
from ecs_gpu.design.paths import fast_scale_in as fsi
from ecs_gpu.errors import ProblemsFound

# The count an activity set: its Description ("Setting desired count to 1.",
# aws-semantics.md §9 "What a scaling activity says"), or a Cause
# that says "from 2 to 1".
_DESCRIPTION_COUNT = re.compile(r"desired count to (\d+)")
_CAUSE_COUNT = re.compile(r"from \d+ to (\d+)")


def explain_missing_fast_scale_in(
    policies: Sequence[StepPolicy],
    alarms: Sequence[Mapping[str, Any]],
    fast_in: fsi.FastScaleIn,
    *,
    resource_id: str,
    cluster: str,
    service: str,
) -> str | None:
    """What of the spec's fast scale-in the service lacks; None when it is deployed.

    Deployed means a StepScaling policy whose steps only remove tasks, invoked
    by an alarm on the metric math over the sidecars' series below the
    spec's threshold over 10-s periods (fast_scale_in.alarm_differences, as
    doctor's fast scale-in check reads it).
    """
    wanted = (
        "a StepScaling policy that removes tasks, invoked by an alarm on "
        f"{fsi.expression(fast_in.threshold, fast_in.period_s)} over {demand_metric.NAMESPACE} "
        f"{demand_metric.METRIC_NAME} ({demand_metric.cli_dimensions(cluster, service)}) "
        f"below {fast_in.threshold:g} over {fast_in.period_s}-s periods"
    )
    return explain_missing_step_path(
        [p for p in policies if p.shape == "fast_scale_in"],
        alarms,
        lambda a: fsi.alarm_differences(a, cluster, service, fast_in.threshold),
        head=f"the spec has a fast scale-in ({wanted}), but {resource_id} ",
        kind="StepScaling policy that removes tasks",
    )


@dataclass(frozen=True)
class ScaleIn:
    """The first Application Auto Scaling activity that lowered desiredCount."""

    start: datetime
    cause: str
    description: str
    status: str
    before: int  # desiredCount before it: the peak verify saw, or a later scale-out's
    after: int | None  # the count it set; None when neither Description nor Cause says
    # The fast scale-in's step policy, when the cause names it.
    policy: str | None
    # Every StepScaling policy of the service that only removes tasks.
    removers: tuple[str, ...] = ()
    # The sleep path's ExactCapacity 0 policy (step_shape "sleep"), when the cause names it.
    sleeper: str | None = None

    @property
    def removed(self) -> int | None:
        return None if self.after is None else self.before - self.after


def count_set(activity: Mapping[str, Any]) -> int | None:
    """The desiredCount a scaling activity set, when its Description or Cause says."""
    for text, pattern in (
        (activity.get("Description", ""), _DESCRIPTION_COUNT),
        (activity.get("Cause", ""), _CAUSE_COUNT),
    ):
        m = pattern.search(text or "")
        if m:
            return int(m.group(1))
    return None


def first_lowering(
    activities: Iterable[Mapping[str, Any]], policies: Sequence[StepPolicy], *, before: int
) -> ScaleIn | None:
    """The first of ``activities`` (oldest first) that lowered desiredCount.

    ``before``: desiredCount when they began; a later activity that set a higher
    count (the fast path still adding after verify saw the rise) raises it. An
    activity lowers it when its cause names a step policy of ``policies`` that only
    removes (the fast scale-in's) or the sleep path's, or the count it set is below
    the current one; its cause names the alarm and the policy that fired, as for the
    scale-out.
    """
    removers = [p.name for p in policies if p.shape == "fast_scale_in"]
    sleepers = [p.name for p in policies if p.shape == "sleep"]
    current = before
    for a in activities:
        cause = a.get("Cause", "")
        after = count_set(a)
        policy = policy_in_cause(removers, cause)
        sleeper = policy_in_cause(sleepers, cause)
        if policy is None and sleeper is None and (after is None or after >= current):
            current = current if after is None else after
            continue
        return ScaleIn(
            start=a["StartTime"],
            cause=cause,
            description=a.get("Description", ""),
            status=a.get("StatusCode", ""),
            before=current,
            after=after,
            policy=policy,
            removers=tuple(removers),
            sleeper=sleeper if policy is None else None,
        )
    return None


@dataclass(frozen=True)
class ScaleInVerdict:
    """Who made the first scale-in decision, and how long after the low datapoints began.

    ``by``: ``fast_scale_in`` (its step policy, within its step); ``too_many``
    (its step policy removed more than the step allows); ``lacking`` (the
    service lacks the fast scale-in, as :func:`explain_missing_fast_scale_in` said);
    ``not_fast`` (it is deployed, and another policy, target tracking's
    15-minute low alarm, removed the first task); ``sleep`` (the sleep path's
    ExactCapacity 0 policy set 0 after its quiet minutes: not the fast
    scale-in's verdict, a problem only where the fast scale-in's step could
    have removed a task before it, :func:`scale_in_problem`).
    """

    decision: ScaleIn
    after_s: float
    by: Literal["fast_scale_in", "too_many", "lacking", "not_fast", "sleep"]
    # The most tasks one invocation may remove at the published low value.
    allowed: int


def judge_scale_in(
    d: ScaleIn,
    fast_in: fsi.FastScaleIn,
    *,
    since: datetime,
    low: float,
    missing: str | None = None,
) -> ScaleInVerdict:
    """The verdict on the first scale-in ``d`` of a low phase that began at ``since``.

    ``low``: the value verify published, which the alarm read; the step at it
    allows :meth:`~ecs_gpu.design.paths.fast_scale_in.FastScaleIn.tasks_to_remove` tasks.
    """
    after = (d.start - since).total_seconds()
    allowed = fast_in.tasks_to_remove(low, d.before)
    if d.policy is not None:
        too_many = d.removed is not None and d.removed > allowed
        return ScaleInVerdict(d, after, "too_many" if too_many else "fast_scale_in", allowed)
    if d.sleeper is not None:
        return ScaleInVerdict(d, after, "sleep", allowed)
    if missing is not None:
        return ScaleInVerdict(d, after, "lacking", allowed)
    return ScaleInVerdict(d, after, "not_fast", allowed)


def scale_in_problem(
    v: ScaleInVerdict, fast_in: fsi.FastScaleIn, *, resource_id: str
) -> ProblemsFound | None:
    """Exit 1 for a deployed fast scale-in that did not remove the first task, or removed
    more than its step allows; None otherwise (``lacking`` is the missing check's). The
    sleep path setting 0 first is the design where the fast scale-in's step allowed
    nothing (it never removes the last task: a peak of 1); with a task it could remove,
    the fast scale-in let the quiet minutes pass."""
    d = v.decision
    said = d.cause or d.description
    if v.by == "sleep" and v.allowed >= 1:
        return ProblemsFound(
            f"the first scale-in on {resource_id}, {v.after_s:.0f} s after the low datapoints "
            f"began, was the sleep path's policy {d.sleeper} (ExactCapacity 0 after "
            "its quiet minutes at the load balancer), not the fast "
            f"scale-in's step policy ({', '.join(d.removers) or 'none'}), whose step allowed "
            f"{v.allowed} of {d.before} at the value verify published: {said}. Its alarm "
            f"never breached in those minutes (it needs {fast_in.datapoints_to_alarm} x "
            f"{fast_in.period_s}-s datapoints below {fast_in.threshold:g} in a row), its "
            "actions are disabled, or it reads another series. Fix: `ecs-gpu doctor SPEC` "
            "(SCL007 checks the step policy and its alarm), redeploy with `ecs-gpu deploy "
            "SPEC`, then rerun verify scaling with the default --publish-interval."
        )
    if v.by == "not_fast":
        removers = ", ".join(d.removers) or "none"
        return ProblemsFound(
            f"the first scale-in on {resource_id}, {v.after_s:.0f} s after the low datapoints "
            f"began, was not the fast scale-in's step policy ({removers}): {said}. Target "
            "tracking's own low alarm (15 one-minute datapoints below about 0.9 x the target) "
            "removed the task, so after a load drop the service holds its tasks 15 minutes "
            "or more. Likely causes: the fast scale-in's alarm never breached (it needs "
            f"{fast_in.datapoints_to_alarm} x {fast_in.period_s}-s datapoints below "
            f"{fast_in.threshold:g} in a row, and a --publish-interval above "
            f"{fast_in.period_s} s leaves periods with no datapoint, which it treats as not "
            "breaching), its actions are disabled, or it reads another series. Fix: "
            "`ecs-gpu doctor SPEC` (SCL007 checks the step policy and its alarm), redeploy "
            "with `ecs-gpu deploy SPEC`, then rerun verify scaling with the default "
            "--publish-interval."
        )
    if v.by == "too_many":
        return ProblemsFound(
            f"the fast scale-in's step policy {d.policy} on {resource_id} removed "
            f"{d.removed} task(s) at once ({d.before} -> {d.after}): {said}. At the value "
            f"verify published its step allows at most {v.allowed} of {d.before} (at most "
            f"{fsi.MAX_STEP_PERCENT} % a step, at least {fast_in.min_adjustment}, never the "
            "last task), so the deployed step adjustments are not the spec's and may remove "
            "tasks the load needs. Fix: redeploy the spec (`ecs-gpu diff SPEC` lists what "
            "changes, `ecs-gpu deploy SPEC` applies it; `ecs-gpu doctor SPEC` reports the "
            "scaling policies), then rerun verify scaling."
        )
    return None
