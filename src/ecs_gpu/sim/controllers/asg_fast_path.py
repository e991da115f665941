"""What-if, not deployed: the fast path's alarm also invoking a step policy on the ASG."""

from __future__ import annotations

from ecs_gpu.design.paths.fast_path import FastPath
from ecs_gpu.sim.controllers.base import Context, Controller
from ecs_gpu.sim.controllers.fast_path import FastPathLayer, StepWindow


class AsgFastPath(Controller):
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
    ManagedScaling.instance_fast_path asks (benchmarks/compare_signals.py), to
    measure what that rule costs. Modelled on EC2 Auto Scaling step scaling:
    instances in warm-up count as capacity, and while they warm a new
    invocation adds only what a larger step adds beyond the previous one
    (as-scaling-simple-step.html "Instance warmup").
    """

    __slots__ = ("_alarm", "_max_instances", "warmup")

    def __init__(
        self,
        fp: FastPath,
        max_instances: int,
        warmup_s: float,
        alarm: FastPathLayer | None = None,
    ) -> None:
        self._max_instances = max_instances
        # The warming instances already answer the same step.
        self.warmup = StepWindow(fp, warmup_s)
        # The fast path whose alarm invokes this policy (evaluated before it each step).
        self._alarm = alarm

    @property
    def actions(self) -> int:
        return self.warmup.actions

    def on_step(self, t: float, ctx: Context) -> None:
        alarm = self._alarm
        if alarm is None or alarm.invoked is None:
            return
        fleet = ctx.fleet
        for _ in range(self.instances_to_add(t, alarm.invoked, len(fleet.instances))):
            ctx.instances.launch(t, fleet)

    def instances_to_add(self, t: float, value: float, instances: int) -> int:
        """Instances one invocation adds at alarm value ``value``, ``instances`` in the group."""
        add, _ = self.warmup.step(t, value, instances)
        add = min(add, self._max_instances - instances)
        if add <= 0:
            return 0
        self.warmup.took(t, add)
        return add
