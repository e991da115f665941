"""The two controllers: pure rules over one-minute datapoints, and the layers that apply them.

* Service layer: Application Auto Scaling target tracking on the service's
  desired count, one policy per metric (GPU on the series [scaling]
  gpu_metric names, CPU on the service average), combined "out if any, in
  only if all", each scale-in held by the documented scale-in guard.
* The fast path and the fast scale-in: step policies on 10-second alarms
  over the concurrency series, beside target tracking; when policies fire
  together the largest capacity wins (:func:`largest_capacity`).
* Instance layer: ECS managed scaling, an EC2 Auto Scaling target-tracking
  policy on CapacityProviderReservation, optionally fought by a host-CPU
  target-tracking policy on the same ASG (the anti-pattern).

The rules are pure functions; :class:`ServiceLayer` and :class:`InstanceLayer`
hold each layer's state and apply its decision to the fleet once a minute.
Every constant comes from :mod:`ecs_gpu.sim.params`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from ecs_gpu.design.paths.fast_path import FastPath
from ecs_gpu.design.paths.fast_scale_in import FastScaleIn
from ecs_gpu.design.paths.sleep import NOT_RUNNING, SleepPath
from ecs_gpu.design.paths.wake import WakePath
from ecs_gpu.sim import params as P
from ecs_gpu.sim.fleet import Fleet, WarmPool
from ecs_gpu.sim.markets import Markets
from ecs_gpu.sim.metrics import MetricSeries
from ecs_gpu.sim.params import ScheduledAction, SimParams


def breaching_high(history: deque[float | None], n: int, threshold: float) -> bool:
    """True when the last ``n`` datapoints all exist and exceed ``threshold``."""
    if len(history) < n:
        return False
    for i in range(len(history) - n, len(history)):
        v = history[i]
        if v is None or v <= threshold:
            return False
    return True


def breaching_low(history: deque[float | None], n: int, threshold: float) -> bool:
    """True when the last ``n`` datapoints all exist and are below ``threshold``."""
    if len(history) < n:
        return False
    for i in range(len(history) - n, len(history)):
        v = history[i]
        if v is None or v >= threshold:
            return False
    return True


@dataclass(frozen=True, slots=True)
class Vote:
    """What one target-tracking policy asks for this minute."""

    high: bool
    low: bool
    # New capacity. Scale-out: ceil(base x latest / target), as fast as it can.
    # Scale-in: scale_in_capacity, the guarded, never-too-much removal.
    proposal: int


def scale_in_capacity(base: int, metric: float, target: float) -> int:
    """Capacity after a scale-in from ``base`` units at ``metric``: the scale-in guard.

    Target tracking does not scale in if removing capacity would likely push
    the metric above the target, and its rounding never removes too much
    (aws-semantics §1 "Scale-in guard", "Rounding";
    https://docs.aws.amazon.com/autoscaling/application/userguide/target-tracking-scaling-policy-overview.html,
    https://docs.aws.amazon.com/AmazonECS/latest/developerguide/service-autoscaling-targettracking.html).
    A unit comes off only while the same load on one unit fewer reads at or
    below the target: the fewest units c with base x metric / c <= target.
    Never more than ``base``; 0 only when the metric is 0.
    """
    return min(base, max(0, math.ceil(base * metric / target - 1e-9)))


def target_tracking_vote(
    history: deque[float | None],
    target: float,
    base: int,
    high_n: int = P.TT_HIGH_DATAPOINTS,
    low_n: int = P.TT_LOW_DATAPOINTS,
    low_fraction: float = P.TT_LOW_FRACTION,
    scale_in_basis: P.ScaleInBasis = "window-max",
) -> Vote:
    """One target-tracking policy: its two alarms and the capacity it computes.

    The capacity formula is not published (aws-semantics §1 [gap]); we use the
    standard proportional model ``ceil(base x metric / target)``. Scale-out
    reads the latest datapoint; scale-in reads ``scale_in_basis`` (see
    SimParams.scale_in_basis): the AlarmLow window's highest datapoint, or the
    latest.
    """
    high = breaching_high(history, high_n, target)
    low = not high and breaching_low(history, low_n, target * low_fraction)
    m = history[-1] if history else None
    if m is None or not (high or low):
        return Vote(high, low, base)
    if high:
        return Vote(high, low, math.ceil(base * m / target - 1e-9))
    if scale_in_basis == "window-max":
        # AlarmLow just checked these low_n datapoints: all exist.
        m = max(v for v in list(history)[-low_n:] if v is not None)
    return Vote(high, low, scale_in_capacity(base, m, target))


@dataclass(slots=True)
class ServiceScaler:
    """Application Auto Scaling on ecs:service:DesiredCount (aws-semantics §1).

    No scale-out cooldown field: its rule is "no further increase unless a
    larger scale-out is computed" (§1), and since every computation starts
    from the RUNNING count, a proposal adds capacity only when it exceeds the
    desired count already set, which :meth:`decide` applies to every proposal.
    So the scale-out cooldown cannot change a decision in this model
    (docs/simulator.md).
    """

    min_tasks: int
    max_tasks: int
    scale_in_cooldown_s: float
    last_scale_in: float = -math.inf

    def decide(self, t: float, votes: list[Vote], desired: int, hold_in: bool = False) -> int:
        """New desired count from this minute's policy votes.

        Called every minute: an alarm in ALARM re-invokes its policy every
        minute (AlarmThatSendsEmail.md, aws-semantics §1), so this is the same.
        """
        outs = [v.proposal for v in votes if v.high]
        if outs:
            want = min(max(max(outs), self.min_tasks), self.max_tasks)
            if want > desired:
                # A scale-out cancels the scale-in cooldown (§1).
                self.last_scale_in = -math.inf
                return want
            return desired
        # Scale in only if every policy (all have scale-in enabled) says so;
        # the largest resulting capacity wins (§1 "Multiple TT policies").
        if votes and all(v.low for v in votes) and not hold_in:
            if t < self.last_scale_in + self.scale_in_cooldown_s:
                return desired
            want = min(max(max(v.proposal for v in votes), self.min_tasks), self.max_tasks)
            if want < desired:
                self.last_scale_in = t
                return want
        return desired


def capacity_provider_reservation(
    instances: int, provisioning_tasks: int, empty_instances: int, tasks_per_instance: int
) -> float:
    """CPR = M / N x 100 (aws-semantics §2).

    M is the instances needed: the existing ones plus enough for the
    provisioning tasks, or, with nothing to place, the non-empty ones. With
    N = 0, CPR is 200 if tasks wait (two instances) and 100 if none do.
    """
    if instances == 0:
        return P.CPR_FROM_ZERO if provisioning_tasks > 0 else 100.0
    if provisioning_tasks > 0:
        m = instances + -(-provisioning_tasks // tasks_per_instance)
    else:
        m = instances - empty_instances
    return 100.0 * m / instances


@dataclass(slots=True)
class AsgScaler:
    """EC2 Auto Scaling on the capacity provider's ASG.

    Policies: ECS managed scaling (target tracking on CPR with target =
    targetCapacity, 1-of-1 high and 15-of-15 low alarms), plus, if enabled,
    a host-CPU target-tracking policy. EC2 Auto Scaling with several
    policies scales out if any asks and in only if all do, to the largest
    capacity (same rules as §1).
    """

    target_capacity_percent: float
    floor_instances: int
    max_instances: int
    min_step: int
    max_step: int
    host_cpu_target_percent: float | None
    # The CPR low alarm's datapoints: AWS's 15 (SimParams.cpr_low_datapoints).
    low_datapoints: int = P.CPR_LOW_DATAPOINTS

    def decide(
        self,
        instances: int,
        all_warm: bool,
        cpr: MetricSeries,
        host_cpu: MetricSeries | None,
    ) -> int:
        """Instances to add (> 0) or remove (< 0) this minute."""
        n = instances
        tc = self.target_capacity_percent
        outs: list[int] = []
        ins: list[int] = []
        lows = 0
        policies = 1
        c = cpr.latest
        if c is not None and breaching_high(cpr.history, P.CPR_HIGH_DATAPOINTS, tc):
            # From zero, CPR = 200 reads as two instances, not N x CPR / T = 0.
            needed = c / 100.0 * n if n > 0 else P.CPR_FROM_ZERO / 100.0
            outs.append(math.ceil(needed * 100.0 / tc - 1e-9))
        elif c is not None and breaching_low(cpr.history, self.low_datapoints, tc):
            lows += 1
            ins.append(math.ceil(c / 100.0 * n * 100.0 / tc - 1e-9))
        if self.host_cpu_target_percent is not None and host_cpu is not None:
            policies += 1
            # EC2 Auto Scaling: the guard row of aws-semantics §1 documents
            # Application Auto Scaling, so this policy keeps the latest datapoint.
            vote = target_tracking_vote(
                host_cpu.history, self.host_cpu_target_percent, n, scale_in_basis="latest"
            )
            if vote.high:
                outs.append(vote.proposal)
            elif vote.low:
                lows += 1
                ins.append(vote.proposal)
        if outs:
            want = min(max(outs), self.max_instances)
            # The next step waits until every new instance is past warm-up (§2).
            if want > n and all_warm:
                step = min(max(want - n, self.min_step), self.max_step)
                return min(step, self.max_instances - n)
            return 0
        if lows == policies and ins:
            want = max(max(ins), self.floor_instances)
            if want < n:
                # "More than one instance and less than 50 %" a minute (§2).
                cap = max(1, math.ceil(n * P.SCALE_IN_MAX_FRACTION) - 1)
                return -min(n - want, cap)
        return 0


class ServiceLayer:
    """The service's target-tracking policies, applied to the fleet once a minute.

    Policies: one per tracked signal, each a (series, target) pair the
    engine builds with the signal's pipeline (concurrency, then GPU: the
    template's order), and CPU, each on its own series. Nothing here names
    a signal, so a new one adds a pair, not a branch.
    """

    __slots__ = ("_basis", "_cpu_scale_in", "_policies", "desired", "scaler")

    def __init__(
        self,
        p: SimParams,
        desired: int,
        tracked: Sequence[tuple[MetricSeries, float]],
        cpu: MetricSeries,
    ) -> None:
        self.scaler = ServiceScaler(p.min_tasks, p.max_tasks, p.scale_in_cooldown_s)
        self.desired = desired
        self._basis = p.scale_in_basis
        self._policies = (*tracked, (cpu, p.cpu_target_percent))
        self._cpu_scale_in = p.cpu_scale_in

    def decide(self, t: float, fleet: Fleet, hold_in: bool = False) -> None:
        """Vote on this minute's datapoints, set the desired count, start or stop tasks.

        ``hold_in``: another policy (the fast path's step policy, its alarm in
        ALARM) holds the capacity it set, and when policies fire together the
        largest capacity wins (aws-semantics §1 "Multiple TT policies"), so
        no scale-in this minute.
        """
        base = fleet.running
        basis = self._basis
        votes = [
            target_tracking_vote(series.history, target, base, scale_in_basis=basis)
            for series, target in self._policies
        ]
        if not self._cpu_scale_in and not votes[-1].high:
            # DisableScaleIn: the CPU policy (last) leaves the scale-in vote
            # (aws-semantics §9), i.e. it never holds the others' scale-in.
            votes[-1] = Vote(False, True, 0)
        self.desired = desired = self.scaler.decide(t, votes, self.desired, hold_in)
        apply_desired(t, fleet, desired)


class StepWindow:
    """A step policy's rule for an invocation soon after its last action.

    Application Auto Scaling's cooldown and EC2 Auto Scaling's instance
    warm-up say the same (FastPathLayer and AsgFastPath cite them): until
    ``window_s`` after an action, the capacity it added counts, so an
    invocation adds only what its step, taken from the same base, adds
    beyond what was already added; after it, the step starts from the
    current capacity.
    """

    __slots__ = ("_fp", "_window_s", "actions", "added", "base", "until")

    def __init__(self, fp: FastPath, window_s: float) -> None:
        self._fp = fp
        self._window_s = window_s
        self.until = -math.inf
        self.base = 0  # the capacity the window's first action scaled from
        self.added = 0  # what the window's actions added, from that base
        self.actions = 0

    def step(self, t: float, value: float, current: int) -> tuple[int, bool]:
        """(what this invocation adds, whether it starts from ``current``: outside the window)."""
        if t < self.until:
            return self._fp.tasks_to_add(value, self.base) - self.added, False
        self.base, self.added = current, 0
        return self._fp.tasks_to_add(value, current), True

    def took(self, t: float, add: int) -> None:
        """An action added ``add``: the window (re)starts."""
        self.added += add
        self.until = t + self._window_s
        self.actions += 1


class FastPathLayer:
    """The fast path: a high-resolution alarm and a step-scaling policy that only adds.

    The alarm is in ALARM while ``datapoints_to_alarm`` of the last
    ``evaluation_periods`` 10-second datapoints are at or above the
    threshold (ecs_gpu.design.paths.fast_path). It invokes the policy when it enters
    ALARM, then once a minute while it stays (params.ALARM_REINVOKE_S). The
    policy reads the Maximum of those datapoints, adds the step's percentage
    of the running count (at least one task; ECS scales from the running
    count, aws-semantics §1 "Base for the computation") and starts its
    cooldown. During the cooldown a later invocation adds only what its step
    adds beyond what the previous one added from its own base ("the previous
    increase ... is considered part of the current capacity"; "won't increase
    the desired capacity again unless either a larger scale out is triggered
    or the cooldown period ends": the Application Auto Scaling API reference
    of StepScalingPolicyConfiguration.Cooldown before 2024, now the user
    guide's "Cooldown period"; aws-semantics §1 "Scale-out cooldown
    semantics"). Scale-in stays with target tracking.
    """

    __slots__ = ("_fp", "_max_tasks", "cooldown", "in_alarm", "invoked", "last_invoke")

    def __init__(self, fp: FastPath, max_tasks: int) -> None:
        self._fp = fp
        self._max_tasks = max_tasks
        self.in_alarm = False
        self.last_invoke = -math.inf
        self.cooldown = StepWindow(fp, fp.cooldown_s)
        # The alarm's value when it invoked its actions this step, else None:
        # the instance step policy (AsgFastPath) acts on the same invocation.
        self.invoked: float | None = None

    @property
    def actions(self) -> int:
        return self.cooldown.actions

    def alarm_value(self, history: deque[float | None]) -> float | None:
        """The evaluated datapoints, reduced by the policy's aggregation, when the alarm breaches.

        None when it does not. Maximum (the template's) is the largest
        breaching datapoint; Minimum and Average reduce every datapoint in
        the window.
        """
        fp = self._fp
        window = [v for v in list(history)[-fp.evaluation_periods :] if v is not None]
        if sum(v >= fp.threshold for v in window) < fp.datapoints_to_alarm:
            return None
        if fp.aggregation == "Minimum":
            return min(window)
        if fp.aggregation == "Average":
            return sum(window) / len(window)
        return max(window)

    def decide(self, t: float, fleet: Fleet, desired: int, history: deque[float | None]) -> int:
        """The desired count after this step's alarm evaluation (never lower)."""
        self.invoked = None
        value = self.alarm_value(history)
        if value is None:
            self.in_alarm = False
            return desired
        if self.in_alarm and t < self.last_invoke + P.ALARM_REINVOKE_S:
            return desired
        self.in_alarm = True
        self.last_invoke = t
        self.invoked = value
        running = fleet.running
        add, fresh = self.cooldown.step(t, value, running)
        # In the cooldown the earlier tasks are part of the capacity: only
        # what a larger step adds goes on top of the desired count.
        new = min((running if fresh else desired) + add, self._max_tasks)
        if new <= desired:
            return desired
        self.cooldown.took(t, add)
        return new


def largest_capacity(fired: list[int]) -> int | None:
    """The capacity Application Auto Scaling sets when these policies fire at once.

    "Application Auto Scaling gives precedence to the policy that provides
    the largest capacity for both scale out and scale in" (aws-semantics §9
    "Policies that fire together", PutScalingPolicy): a step scale-in beside
    a target-tracking scale-out gives the scale-out; two scale-ins, the
    smaller cut. None when none fired.
    """
    return max(fired) if fired else None


class FastScaleInLayer:
    """The fast scale-in: a 10-second low alarm and a step policy that removes a bounded part.

    The alarm is in ALARM while the last ``evaluation_periods`` datapoints of
    its expression (per-task concurrency with one task fewer, the
    DemandPipeline's ``scale_in`` series) all exist and are below the
    threshold (ecs_gpu.design.paths.fast_scale_in); a missing datapoint is not breaching.
    It invokes the policy when it enters ALARM, then once a minute while it
    stays (params.ALARM_REINVOKE_S). The policy reads the Maximum of the
    window, removes its step's percentage of the RUNNING count (at least one
    task, rounded toward zero; aws-semantics §1 "Base for the computation")
    and blocks later scale-ins for its cooldown; a scale-out by another
    policy is never blocked by it (§9 "Step policy cooldown, scale-in").
    Target tracking does not block it either (§9 "A step scale-in while
    target tracking is not ready"): the engine only lets a larger capacity
    fired at the same instant win (:func:`largest_capacity`).
    """

    __slots__ = ("_fsi", "_min_tasks", "actions", "in_alarm", "last_action", "last_invoke")

    def __init__(self, fsi: FastScaleIn, min_tasks: int) -> None:
        self._fsi = fsi
        self._min_tasks = min_tasks
        self.in_alarm = False
        self.last_invoke = -math.inf
        self.last_action = -math.inf
        self.actions = 0

    def alarm_value(self, history: deque[float | None]) -> float | None:
        """The Maximum of the evaluated datapoints when all breach, else None."""
        fsi = self._fsi
        n = fsi.evaluation_periods
        if len(history) < n:
            return None
        window = list(history)[-n:]
        low = [v for v in window if v is not None and v < fsi.threshold]
        if len(low) < fsi.datapoints_to_alarm:
            return None
        return max(low)

    def proposal(
        self, t: float, running: int, desired: int, history: deque[float | None]
    ) -> int | None:
        """The capacity this step's invocation sets, or None when it sets none.

        None: the alarm is not in ALARM, it already invoked within the minute,
        the cooldown holds it, or the cut would not lower ``desired``.
        """
        value = self.alarm_value(history)
        if value is None:
            self.in_alarm = False
            return None
        if self.in_alarm and t < self.last_invoke + P.ALARM_REINVOKE_S:
            return None
        self.in_alarm = True
        self.last_invoke = t
        if t < self.last_action + self._fsi.cooldown_s:
            return None
        new = max(running - self._fsi.tasks_to_remove(value, running), self._min_tasks)
        return new if new < desired else None

    def took(self, t: float) -> None:
        """The proposal was applied: the cooldown starts."""
        self.last_action = t
        self.actions += 1


class AsgFastPath:
    """What-if, not deployed: the fast-path alarm also invoking a step policy on the ASG.

    Managed scaling launches instances only after ECS has published a
    CapacityProviderReservation datapoint that counts the new PROVISIONING
    tasks and its 1-of-1 alarm has acted on it (params.cpr_delay_s): about
    90 s after the fast path decides. An EC2 Auto Scaling step policy on the
    same 10-second alarm, adding the same percentage of instances, would
    start them (from the warm pool) with the tasks. ecs-gpu does not deploy
    it: the ECS developer guide says the desired capacity of a capacity
    provider's group "shouldn't be changed or managed by any scaling
    policies other than the one Amazon ECS manages" (cluster-auto-scaling.md,
    "Cluster Auto Scaling considerations"). The simulator runs it only when
    SimParams.instance_fast_path asks (benchmarks/compare_signals.py), to
    measure what that rule costs. Modelled on EC2 Auto Scaling step scaling:
    instances in warm-up count as capacity, and while they warm a new
    invocation adds only what a larger step adds beyond the previous one
    (as-scaling-simple-step.html "Instance warmup").
    """

    __slots__ = ("_max_instances", "warmup")

    def __init__(self, fp: FastPath, max_instances: int, warmup_s: float) -> None:
        self._max_instances = max_instances
        # The warming instances already answer the same step.
        self.warmup = StepWindow(fp, warmup_s)

    @property
    def actions(self) -> int:
        return self.warmup.actions

    def instances_to_add(self, t: float, value: float, instances: int) -> int:
        """Instances one invocation adds at alarm value ``value``, ``instances`` in the group."""
        add, _ = self.warmup.step(t, value, instances)
        add = min(add, self._max_instances - instances)
        if add <= 0:
            return 0
        self.warmup.took(t, add)
        return add


class WakeLayer:
    """The wake path: a one-minute alarm on the load balancer's requests while no task runs.

    Each minute the ALB's datapoint is the requests that arrived (none
    published in a minute without one: aws-semantics §10), and the alarm's
    expression reads it only while ECS published no CPU datapoint for the
    service, i.e. no task was RUNNING in that minute (ecs_gpu.design.paths.wake). Both
    are visible ``delay_s`` after the minute. The alarm is 1 of 1 at the
    threshold and re-invokes its policy every minute while in ALARM
    (params.ALARM_REINVOKE_S); the step adds ``tasks`` to the RUNNING count
    (aws-semantics §1 "Base for the computation"), at most max_tasks, and
    the cooldown holds a further increase: the policy "won't increase the
    desired capacity again unless either a larger scale out is triggered or
    the cooldown period ends", and its one step is never larger. A scale-in
    (the sleep's 0) leaves the cooldown running: AWS says only that a
    scale-out ends a scale-in's cooldown (§10 "The wake's cooldown after a
    sleep", a gap). A held invocation is not kept: the alarm invokes again
    only in a later minute that reads requests.
    """

    __slots__ = ("_delay", "_ran", "_requests", "_wp", "actions", "last_action", "series")

    def __init__(self, wp: WakePath, delay_s: float) -> None:
        self._wp = wp
        self._delay = delay_s
        self.series = MetricSeries(window=wp.evaluation_periods)
        self._requests = 0.0
        self._ran = False
        self.last_action = -math.inf
        self.actions = 0

    def sample(self, arrivals: float, running: int) -> None:
        """One step's requests at the load balancer and whether a task was RUNNING."""
        self._requests += arrivals
        self._ran = self._ran or running > 0

    def close_minute(self, t: float) -> None:
        """Publish the minute that ended at ``t``: None without requests (the ALB sends none)."""
        value = None if self._requests <= 0 else (0.0 if self._ran else self._requests)
        self.series.publish(t + self._delay, value)
        self._requests, self._ran = 0.0, False

    def decide(self, t: float, running: int, desired: int, max_tasks: int) -> int:
        """The desired count after this minute's evaluation (never lower)."""
        self.series.visible(t)
        v = self.series.latest
        if v is None or v < self._wp.threshold:
            return desired
        if t < self.last_action + self._wp.cooldown_s:
            return desired
        new = min(running + self._wp.tasks, max_tasks)
        if new <= desired:
            return desired
        self.last_action = t
        self.actions += 1
        return new


class SleepLayer:
    """The sleep path: ExactCapacity 0 after ``minutes`` one-minute periods without a request.

    Each minute's datapoint is the requests that arrived at the load balancer
    plus its open connections, the most requests in flight in the minute (one
    connection each: a streaming response holds its own), visible
    ``delay_s`` after the minute (a count with no datapoint reads 0: FILL).
    It is read only in a minute with a RUNNING task (ECS's
    CPU datapoint, ecs_gpu.design.paths.sleep's gate); a minute without one reads 1, never
    quiet, so a task the wake started is not stopped while its instance boots
    and its image pulls. It is RUNNING, and its minutes may be quiet, while
    its model loads (fleet.Task: running_at before ready_at): ``minutes`` is
    the spec's ecs_gpu.design.paths.wake.quiet_minutes, which outlasts that load. The
    sidecars' in-flight series, which ``in_flight`` adds in the template, is
    never more than that. The alarm is ``minutes`` of
    ``minutes`` at or below 0 and re-invokes its policy every minute while in
    ALARM; the count it sets is never below the target's minimum (a schedule
    may have raised it; aws-semantics §10 "ExactCapacity and MinCapacity").
    """

    __slots__ = (
        "_delay",
        "_in_flight",
        "_ran",
        "_requests",
        "_sp",
        "actions",
        "last_invoke",
        "series",
    )

    def __init__(self, sp: SleepPath, delay_s: float) -> None:
        self._sp = sp
        self._delay = delay_s
        self.series = MetricSeries(window=sp.minutes)
        self._requests = self._in_flight = 0.0
        self._ran = False
        self.last_invoke = -math.inf
        self.actions = 0

    def sample(self, arrivals: float, in_flight: float, running: int) -> None:
        """One step's requests at the load balancer, the requests in flight and the
        RUNNING tasks."""
        self._requests += arrivals
        self._in_flight = max(self._in_flight, in_flight)
        self._ran = self._ran or running > 0

    def close_minute(self, t: float) -> None:
        """Publish the minute that ended at ``t``: its requests and connections while a task
        ran, else ecs_gpu.design.paths.sleep's NOT_RUNNING."""
        value = self._requests + self._in_flight if self._ran else float(NOT_RUNNING)
        self.series.publish(t + self._delay, value)
        self._requests = self._in_flight = 0.0
        self._ran = False

    def decide(self, t: float, desired: int, min_tasks: int) -> int:
        """The desired count after this minute's evaluation (never higher)."""
        self.series.visible(t)
        h = self.series.history
        quiet = len(h) == self._sp.minutes and all(
            v is not None and v <= self._sp.threshold for v in h
        )
        if not quiet or t < self.last_invoke + self._sp.cooldown_s:
            return desired
        self.last_invoke = t
        new = max(self._sp.tasks, min_tasks)
        if new >= desired:
            return desired
        self.actions += 1
        return new


class ScheduleLayer:
    """[[scaling.schedule]]: scheduled actions that set the scalable target's min and max.

    At each minute a cron matches (in UTC, from ``start_utc`` at t = 0), the
    target's minimum and maximum become the action's; a desired count below
    the new minimum scales out to it, one above the maximum in to it
    (ScalableTargetAction, aws-semantics §10). At t = 0 the action due then, or
    else the latest of the week before, is in force, as on a running service.
    """

    __slots__ = ("_actions", "_start")

    # How far back the state at t = 0 is looked for: a weekly schedule's cycle.
    LOOKBACK_MIN = 7 * 24 * 60

    def __init__(self, actions: Sequence[ScheduledAction], start_utc: datetime) -> None:
        self._actions = tuple(actions)
        self._start = start_utc

    def initial(self) -> tuple[int, int] | None:
        """The (min, max) in force at t = 0: an action due at t = 0 itself, else the latest
        before it; None when none ran. (The engine's minute ticks start after t = 0,
        so an action at t = 0, Monday 00:00 UTC by default, is applied here or never.)"""
        for back in range(0, self.LOOKBACK_MIN + 1):
            at = self._start - timedelta(minutes=back)
            for cron, mn, mx in reversed(self._actions):
                if cron.matches(at):
                    return mn, mx
        return None

    def due(self, t: float) -> tuple[int, int] | None:
        """The (min, max) an action sets at ``t`` (the last one listed wins), or None."""
        at = self._start + timedelta(seconds=t)
        out = None
        for cron, mn, mx in self._actions:
            if cron.matches(at):
                out = (mn, mx)
        return out


def apply_desired(t: float, fleet: Fleet, desired: int) -> None:
    """ECS starts or stops tasks until the service has ``desired`` of them."""
    total = fleet.desired_total
    if desired > total:
        fleet.provisioning += desired - total
        fleet.place(t)
    elif desired < total:
        fleet.stop(total - desired)


class InstanceLayer:
    """Managed scaling (and the optional host-CPU policy) on the ASG, once a minute."""

    __slots__ = (
        "_boot_time",
        "_cpr_delay",
        "_floor",
        "_tpi",
        "_warmup",
        "asg",
        "cpr",
        "last_cpr",
        "markets",
        "pool",
    )

    def __init__(
        self,
        p: SimParams,
        boot_time: Callable[[], float],
        pool: WarmPool | None = None,
        markets: Markets | None = None,
    ) -> None:
        self.pool = pool
        # [capacity.spot]: which group each launch and scale-in goes to.
        self.markets = markets
        self.asg = AsgScaler(
            p.target_capacity_percent,
            p.floor_instances,
            p.max_instances,
            p.min_scaling_step,
            p.max_scaling_step,
            p.host_cpu_policy_target_percent,
            p.cpr_low_datapoints,
        )
        self.cpr = MetricSeries(window=max(P.CPR_LOW_DATAPOINTS, p.cpr_low_datapoints))
        self.last_cpr = math.nan
        self._boot_time = boot_time
        self._floor = p.floor_instances
        self._warmup = p.instance_warmup_s
        self._tpi = p.tasks_per_instance
        self._cpr_delay = p.cpr_delay_s

    def decide(self, t: float, fleet: Fleet, host_cpu: MetricSeries | None) -> None:
        """Publish CPR, let the ASG's policies decide, launch or terminate instances."""
        self.last_cpr = capacity_provider_reservation(
            len(fleet.instances), fleet.provisioning, fleet.empty_registered(), self._tpi
        )
        self.cpr.publish(t + self._cpr_delay, self.last_cpr)
        self.cpr.visible(t)
        delta = self.asg.decide(len(fleet.instances), fleet.all_warm(t), self.cpr, host_cpu)
        if delta > 0:
            for _ in range(delta):
                self.launch(t, fleet)
        elif delta < 0:
            removed = fleet.terminate_empty(-delta)
            if self.pool is not None:
                self.pool.give_back(t, removed, len(fleet.instances))
        while len(fleet.instances) < self._floor:
            # The floor is the On-Demand group's min_instances (or its reservation).
            self.launch(t, fleet, spot_ok=False)
        if self.pool is not None:
            # The pool is the On-Demand group's: it sizes itself on that group alone.
            self.pool.fill(t, len(fleet.instances) - fleet.spot_count)

    def launch(self, t: float, fleet: Fleet, *, spot_ok: bool = True) -> None:
        """One instance: from the warm pool when one is prepared, else a new launch.

        With [capacity.spot], a launch the strategy gives the Spot group is a
        new Spot instance (that group has no pool).
        """
        markets = self.markets
        if spot_ok and markets is not None and markets.next_is_spot(fleet):
            inst = fleet.launch(
                t, self._boot_time(), self._warmup, spot=True, interrupt_at=markets.interrupt_at(t)
            )
            markets.watch(inst)
            return
        pool = self.pool
        if pool is not None and pool.take(t):
            inst = fleet.launch(t, pool.register_s, self._warmup)
            # The warm unit pulled the image while the instance warmed.
            inst.image_ready_at = inst.registered_at
            return
        fleet.launch(t, self._boot_time(), self._warmup)
