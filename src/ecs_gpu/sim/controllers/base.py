"""What every controller shares: the hooks the engine calls, the run's context, the alarm rules.

A controller is one unit of the loop (a scaling policy, a metric series the
policies read, a recorder). The engine builds the ones a design has, in a
fixed order, and each step calls the hooks each one overrides, in that
order (engine.simulate lists the points of a step). Nothing here names a
feature: a new controller is a class with its hooks and a line where the
engine builds it.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.serving import RequestQueue


class ScalableTarget(Protocol):
    """The service's scalable target as controllers change it: its bounds, and target
    tracking's scale-in cooldown (target_tracking.ServiceScaler)."""

    min_tasks: int
    max_tasks: int
    scale_in_cooldown_s: float
    last_scale_in: float


class Service(Protocol):
    """The service's desired count, which every service-side controller sets
    (target_tracking.ServiceLayer owns it)."""

    desired: int

    @property
    def scaler(self) -> ScalableTarget: ...

    def set_desired(self, t: float, fleet: Fleet, want: int) -> None: ...


class Instances(Protocol):
    """The instance layer as controllers launch through it (managed_scaling.InstanceLayer)."""

    # The CapacityProviderReservation it last published, for the timeline.
    last_cpr: float

    def launch(self, t: float, fleet: Fleet, *, spot_ok: bool = True) -> None: ...


class Context:
    """One run's shared state: the fleet, the two layers, the step just served.

    The engine sets the step's figures (``i``, ``arrivals``, ``served``,
    ``rate``, ``billed``) before the ``on_served`` hooks; the controllers
    that publish or bill write theirs (``conc``, ``hold_in``, the pool's and
    Spot's instance time).
    """

    __slots__ = (
        "arrivals",
        "billed",
        "conc",
        "duration_s",
        "fleet",
        "hold_in",
        "i",
        "instances",
        "mean_request_s",
        "pool_running_s",
        "pool_stopped_s",
        "queue",
        "rate",
        "served",
        "service",
        "spot_s",
        "step_s",
    )

    def __init__(
        self,
        step_s: float,
        duration_s: float,
        fleet: Fleet,
        queue: RequestQueue,
        mean_request_s: float,
    ) -> None:
        self.step_s = step_s
        self.duration_s = duration_s
        self.fleet = fleet
        self.queue = queue
        # A request holds a slot this long (Little's law: requests in service).
        self.mean_request_s = mean_request_s
        # The service layer (its desired count and scalable target) and the
        # instance layer, set once the engine has built them.
        self.service: Service
        self.instances: Instances
        # The step just served: its index, requests arrived and served, offered
        # rate (req/s) and the instances billed.
        self.i = 0
        self.arrivals = self.served = self.rate = 0.0
        self.billed = 0
        # The per-task concurrency the sidecars published this step (NaN: none).
        self.conc = math.nan
        # A step policy in ALARM holds target tracking's scale-in this minute.
        self.hold_in = False
        # Instance time billed beside the fleet's: pool instances running
        # (warming, or a Running pool) and stopped, and Spot instances.
        self.pool_running_s = self.pool_stopped_s = self.spot_s = 0.0


class Controller:
    """One unit the engine runs: it overrides the hooks it needs; the rest are never called.

    ``on_start`` runs once before the first step. The points of a step, in
    order: ``on_step_start`` (before the fleet places tasks), ``on_minute``
    (each minute after the first, once the metric pipeline has published),
    ``on_step`` (every step: the 10-second alarms), then the ready tasks
    serve, ``billed`` (instances billed beside the fleet's own) and
    ``on_served``. ``summary`` adds the controller's keys to the run's
    summary.
    """

    __slots__ = ()

    def on_start(self, ctx: Context) -> None:
        """The state at t = 0, once every controller is built."""

    def on_step_start(self, t: float, ctx: Context) -> None:
        """Before the fleet places this step's tasks."""

    def on_minute(self, t: float, ctx: Context) -> None:
        """Close the minute that ended at ``t`` and decide."""

    def on_step(self, t: float, ctx: Context) -> None:
        """Evaluate this step, after the minute's decisions."""

    def billed(self, t: float, ctx: Context) -> int:
        """Instances billed this step beside the fleet's own."""
        return 0

    def on_served(self, t: float, ctx: Context) -> None:
        """Observe the step the ready tasks just served (``ctx.arrivals`` ...)."""

    def summary(self, ctx: Context) -> dict[str, Any]:
        """This controller's keys in the run's summary."""
        return {}


# The per-step hooks, in the order they run within a step.
HOOKS = ("on_step_start", "on_minute", "on_step", "billed", "on_served")


def hooks(controllers: Sequence[Controller], name: str) -> list[Callable[..., Any]]:
    """The bound ``name`` hooks of the controllers that override it, in their order.

    The engine keeps these lists so a step calls only what a design has.
    """
    base = getattr(Controller, name)
    return [getattr(c, name) for c in controllers if getattr(type(c), name) is not base]


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


def largest_capacity(fired: list[int]) -> int | None:
    """The capacity Application Auto Scaling sets when these policies fire at once.

    "Application Auto Scaling gives precedence to the policy that provides
    the largest capacity for both scale out and scale in" (aws-semantics §9
    "Policies that fire together", PutScalingPolicy): a step scale-in beside
    a target-tracking scale-out gives the scale-out; two scale-ins, the
    smaller cut. None when none fired.
    """
    return max(fired) if fired else None


def apply_desired(t: float, fleet: Fleet, desired: int) -> None:
    """ECS starts or stops tasks until the service has ``desired`` of them."""
    total = fleet.desired_total
    if desired > total:
        fleet.provisioning += desired - total
        fleet.place(t)
    elif desired < total:
        fleet.stop(total - desired)
