"""``verify wake``'s verdicts and words: does one request at zero tasks start a task.

What the proof needs from the design (:func:`require_wake_path`, the default waits),
the refusals before it sends anything (:func:`check_consent`, :func:`check_at_zero`,
:func:`check_url`), the deployed wake path as the config check reads it
(:func:`deployed_wake`), the load balancer's URL from the stack's outputs, the poll
on an injected clock, the first activity since the request (:func:`wake_decision`)
and the exits when the rise is not the wake path's. The reads and the request are
:mod:`ecs_gpu.aws.verify_wake`'s; the CLI renders.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Protocol

from ecs_gpu.checks.doctor.common import actions_enabled
from ecs_gpu.checks.verify.decision import policy_in_cause
from ecs_gpu.checks.verify.step_paths import (
    StepPolicy,
    disabled_alarms,
    enable_actions,
    explain_missing_wake,
    judge_alarms,
)
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import Design, Zero
from ecs_gpu.design.paths import wake
from ecs_gpu.errors import AwsError, BadInputError, ProblemsFound
from ecs_gpu.spec import Spec

# The stack output with the load balancer's DNS name: infra.service.OUTPUT_LB_DNS
# (not imported: that module loads the CDK; a test holds the two equal).
LB_DNS_OUTPUT: Final = "LoadBalancerDnsName"
# What the ALB answers while its target group has no registered target (§10).
AT_ZERO_STATUS: Final = 503
# Past the detection bound, the default wait adds three minutes: one for the
# alarm's re-invocation while in ALARM (aws-semantics §9, §1), two more because
# the ALB datapoint's lag inside the bound is an assumption (§10, a gap), so a
# working wake path that lags longer does not read as broken.
DESIRED_MARGIN_S: Final = 3 * wake.PERIOD_S
# Past the start (boot + pull + load), the default wait for a RUNNING task adds
# the wake cooldown's margin: the CPR datapoint and its alarm before an instance
# is asked for (§2, §10 "The floor at zero").
RUNNING_MARGIN_S: Final = wake.DETECTION_MARGIN_S


def require_wake_path(design: Design, path: Path) -> wake.WakePath:
    """The design's wake path; exit 2 naming the key when it has none (nothing to prove)."""
    wp = design.wake
    if wp is not None:
        return wp
    spec = design.spec
    whys, fixes = [], []
    if not design.scales_to_zero:
        whys.append(f"keeps at least one task ([scaling] min_tasks = {spec.scaling.min_tasks})")
        fixes.append(
            "set [scaling] min_tasks = 0 (or a [[scaling.schedule]] entry with min_tasks = 0)"
        )
    if spec.load_balancer is None:
        whys.append("has no [load_balancer]")
        fixes.append("add a [load_balancer] table")
    why, fix = " and ".join(whys), " and ".join(fixes)
    raise BadInputError(
        f"{path}: the spec {why}, so it has no wake path (a step policy invoked by the load "
        "balancer's requests at zero tasks) and verify wake has nothing to prove. Fix: "
        f"{fix} and deploy it, or run `ecs-gpu verify scaling {path} --yes` for a service "
        "that never sleeps."
    )


def check_consent(yes: bool, names: Names) -> None:
    """Refuse (exit 2) without --yes: the request starts a task, and maybe an instance."""
    if yes:
        return
    raise BadInputError(
        f"verify wake sends one request to {names.service}'s load balancer while the service "
        "is at zero tasks: the wake path starts a task for it (possibly launching a GPU "
        "instance you pay for), and the sleep path takes it away again once no request "
        "comes. Fix: rerun with --yes to go ahead."
    )


@dataclass(frozen=True)
class WakeConfig:
    """The deployed wake path, as the config check read it."""

    policies: tuple[str, ...]
    alarms: tuple[str, ...]
    # Wake alarms whose actions are disabled: they change state and invoke nothing.
    disabled: tuple[str, ...]


def deployed_wake(
    policies: Sequence[StepPolicy], alarms: Sequence[Mapping[str, Any]], names: Names
) -> WakeConfig:
    """verify scaling's wake check on the service's step policies and their alarms (exit 1
    with its fix when missing or stale), and the wake policies and alarms for the proof."""
    missing = explain_missing_wake(
        policies,
        alarms,
        resource_id=names.scalable_target_resource_id,
        cluster=names.cluster,
        service=names.service,
    )
    wakes = [p for p in policies if p.shape == "wake"]
    if missing is not None:
        off = disabled_alarms(
            judge_alarms(
                wakes, alarms, lambda a: wake.alarm_differences(a, names.cluster, names.service)
            )
        )
        raise ProblemsFound(
            f"{missing}. Fix: "
            + (
                f"{enable_actions(off)} (a redeploy of an unchanged alarm changes nothing)"
                if off
                else "redeploy the spec (`ecs-gpu diff SPEC` lists what changes, "
                "`ecs-gpu deploy SPEC` applies it; `ecs-gpu doctor SPEC` SCL008 checks the wake "
                "policy and its alarm)"
            )
            + ", then rerun verify wake."
        )
    alarm_names = {a for p in wakes for a in p.alarms}
    found = [a for a in alarms if a["AlarmName"] in alarm_names]
    return WakeConfig(
        policies=tuple(p.name for p in wakes),
        alarms=tuple(sorted(alarm_names)),
        disabled=tuple(a["AlarmName"] for a in found if not actions_enabled(a)),
    )


@dataclass(frozen=True)
class Counts:
    desired: int
    running: int


def when_it_sleeps(design: Design) -> str:
    """When the service goes to zero by itself (the sleep path, a schedule)."""
    zero = design.zero
    assert zero is not None  # require_wake_path refused a design that never sleeps
    spec = design.spec
    # The spec's window: at least the longest request's, longer than its model's load.
    minutes = zero.quiet_minutes
    what = (
        f"after {minutes} one-minute periods without a request or an open connection at "
        "its load balancer (the sleep path)"
    )
    if spec.scaling.min_tasks > 0:
        crons = [e.cron for e in spec.scaling.schedule if e.min_tasks == 0]
        what += (
            f", and only while its minimum is 0: [scaling] min_tasks = {spec.scaling.min_tasks}, "
            f"0 from the [[scaling.schedule]] entries at {', '.join(crons)} (UTC)"
        )
    return what


def check_at_zero(counts: Counts, design: Design, names: Names) -> None:
    """Exit 1 unless desiredCount and runningCount are 0: only then does the request
    have to start the task."""
    if counts.desired == 0 and counts.running == 0:
        return
    raise ProblemsFound(
        f"ECS service {names.service} in cluster {names.cluster} runs {counts.running} "
        f"task(s) (desiredCount {counts.desired}): the proof needs it at zero, so that the "
        f"request is what starts a task. It goes to zero by itself {when_it_sleeps(design)}; "
        "verify wake changes nothing to force it. Fix: rerun once the service is at zero "
        f"(`aws ecs describe-services --cluster {names.cluster} --services {names.service}` "
        "shows desiredCount and runningCount 0)."
    )


class StackOutputLike(Protocol):
    """One output of a deployed stack (aws.deploy.StackOutput has these)."""

    @property
    def key(self) -> str: ...

    @property
    def value(self) -> str: ...


def url_from_outputs(
    spec: Spec, outputs: Sequence[StackOutputLike], *, stack: str, status: str
) -> str:
    lb = spec.load_balancer
    assert lb is not None  # require_wake_path refused a spec without one
    dns = next((o.value for o in outputs if o.key == LB_DNS_OUTPUT and o.value), None)
    if dns is None:
        state = "does not exist" if status == "DELETE_COMPLETE" else f"is {status}"
        raise ProblemsFound(
            f"stack {stack} {state} and has no output {LB_DNS_OUTPUT}: verify wake reads the "
            "load balancer's address there. Fix: deploy the spec (`ecs-gpu deploy SPEC`), "
            "or give the load balancer's URL with --url."
        )
    scheme = "https" if lb.certificate_arn else "http"
    return f"{scheme}://{dns}{lb.health_check_path}"


def check_url(url: str) -> str:
    """--url as given, refused (exit 2) unless it is an http(s) URL with a host."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a port that is no number)
    except ValueError:  # "Invalid IPv6 URL", "Port could not be cast to integer value"
        parts = None
    # A space or control character in the host is no URL http.client sends:
    # refuse it here as bad input rather than report it unreachable.
    clean = parts is not None and not any(ch.isspace() or ord(ch) < 32 for ch in parts.netloc)
    # The host, not the netloc: "http://:80/" has a netloc and no host to send to.
    if parts is not None and parts.scheme in ("http", "https") and parts.hostname and clean:
        return url
    raise BadInputError(
        f"--url {url!r}: not an http or https URL with a host. Fix: give the load balancer's "
        "address with its scheme and path, e.g. --url http://internal-my-alb-123.us-east-1."
        "elb.amazonaws.com/health."
    )


def unreachable(url: str, reason: object, *, internal: bool) -> AwsError:
    """Exit 3: the request never reached the load balancer (``reason``: why it failed)."""
    where = (
        'the load balancer is internal ([load_balancer] scheme = "internal"): it '
        "answers only inside its VPC. Fix: run verify wake from a host in the VPC "
        "(in the stack's ClientsSecurityGroupId), or give a URL that reaches it "
        "with --url"
        if internal
        else "Fix: check that the host can reach the load balancer (its ingress_cidrs, "
        "a proxy), or give a URL that reaches it with --url"
    )
    return AwsError(
        f"{url}: unreachable ({reason}): the request never reached the load balancer, "
        f"so nothing was proved and nothing was started. {where}."
    )


def wait_for(
    read: Callable[[], Counts],
    done: Callable[[Counts], bool],
    *,
    start: float,
    timeout_s: float,
    poll_s: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[Counts, float, bool]:
    """Poll until ``done``: the last counts, seconds since ``start``, and whether done."""
    while True:
        counts = read()
        elapsed = clock() - start
        if done(counts):
            return counts, elapsed, True
        if elapsed >= timeout_s:
            return counts, elapsed, False
        sleep(poll_s)


@dataclass(frozen=True)
class WakeDecision:
    """The first scaling activity since the request, and whether the wake policy made it."""

    start: datetime
    cause: str
    description: str
    status: str
    policy: str | None  # the wake policy the Cause names, if it does
    wake_policies: tuple[str, ...]


def wake_decision(activity: Mapping[str, Any], wake_policies: Sequence[str]) -> WakeDecision:
    """The first scaling activity since the request; its Cause names the alarm and the
    policy that fired (aws-semantics §9 "What a scaling activity says")."""
    cause = activity.get("Cause", "")
    return WakeDecision(
        start=activity["StartTime"],
        cause=cause,
        description=activity.get("Description", ""),
        status=activity.get("StatusCode", ""),
        policy=policy_in_cause(wake_policies, cause),
        wake_policies=tuple(wake_policies),
    )


def default_timeout_s(wp: wake.WakePath) -> float:
    return float(wake.detection_s(wp) + DESIRED_MARGIN_S)


def default_running_timeout_s(zero: Zero) -> float:
    return zero.start_s + RUNNING_MARGIN_S


def never_rose(
    *, url: str, status: int, timeout_s: float, wp: wake.WakePath, config: WakeConfig
) -> ProblemsFound:
    """Exit 1: desiredCount stayed 0 after the request."""
    disabled = (
        f"the wake alarm {', '.join(config.disabled)} has its actions disabled (it changes "
        "state and invokes nothing: `aws cloudwatch enable-alarm-actions --alarm-names "
        f"{' '.join(config.disabled)}`); "
        if config.disabled
        else ""
    )
    return ProblemsFound(
        f"desiredCount stayed 0 for {timeout_s:.0f} s after the request to {url} (answered "
        f"{status}); the wake alarm ({', '.join(config.alarms)}) should have invoked "
        f"{', '.join(config.policies)} within {wake.detection_s(wp)} s. Likely causes: "
        f"{disabled}the load balancer published no {wake.REQUESTS_METRIC} or "
        f"{wake.REJECTED_METRIC} for it (--url reached another server, or the request was "
        "refused before the listener); the ALB datapoint's lag is longer than one period "
        "(undocumented, aws-semantics §10) or the metric math reads a CPU datapoint of a task "
        "that just stopped. Fix: `ecs-gpu doctor SPEC` (SCL008 checks the wake policy and its "
        "alarm), then rerun verify wake with a longer --timeout."
    )


def not_the_wake(d: WakeDecision, *, rise_s: float, resource_id: str) -> ProblemsFound:
    """Exit 1: desiredCount rose, but another policy or action raised it."""
    said = d.cause or d.description
    return ProblemsFound(
        f"desiredCount of {resource_id} rose {rise_s:.0f} s after the request, but the first "
        "scaling activity since was not the wake policy's "
        f"({', '.join(d.wake_policies) or 'none'}): {said}. Something else started the task "
        "(a scheduled action raising min_tasks, another policy), so the wake path is not "
        "proved. Fix: rerun at zero outside the schedule's hours; `ecs-gpu doctor SPEC` "
        "(SCL008) checks the wake policy and its alarm."
    )


def no_activity(*, rise_s: float, resource_id: str) -> ProblemsFound:
    """Exit 1: desiredCount rose, and no scaling activity says who raised it."""
    return ProblemsFound(
        f"desiredCount of {resource_id} rose {rise_s:.0f} s after the request, but no scaling "
        "activity since says so: Application Auto Scaling writes one for every policy it "
        "runs, so something outside it (an `aws ecs update-service`, a deploy) set the "
        "count, and the wake path is not proved. Fix: rerun at zero with nothing else "
        "changing the service."
    )
