"""Instances and tasks: launch, boot, whole-GPU placement, image pull, model load.

Pure state with no clock of its own: the engine passes the time in. A task
reserves ``gpus_per_task`` whole GPUs (aws-semantics §3: a GPU is pinned to one
container for the task's life), so an instance holds ``tasks_per_instance``
tasks, the minimum over GPUs, CPU units, memory and awsvpc network interfaces (catalog).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from ecs_gpu.design import managed_scaling


@dataclass(slots=True, eq=False)
class Task:
    placed_at: float
    # Container started: ECS counts the task as RUNNING from here (after the
    # image pull); this is the count target tracking scales from.
    running_at: float
    # Model loaded and serving: only now does it add capacity.
    ready_at: float
    instance: Instance
    is_running: bool = False


@dataclass(slots=True, eq=False)
class Instance:
    id: int
    launched_at: float
    registered_at: float
    warm_at: float
    slots: int
    tasks: list[Task] = field(default_factory=list)
    # When the task image is on the instance's disk (None: never pulled).
    image_ready_at: float | None = None
    # A Spot instance, and when EC2 sends its interruption notice (inf: never).
    spot: bool = False
    interrupt_at: float = math.inf

    def free(self) -> int:
        return self.slots - len(self.tasks)


class Fleet:
    """The ASG's instances and the service's tasks."""

    def __init__(
        self,
        tasks_per_instance: int,
        image_pull_s: float,
        model_load_s: float,
        placement: Literal["spread", "binpack"] = "spread",
    ) -> None:
        self.slots = tasks_per_instance
        self.image_pull_s = image_pull_s
        self.model_load_s = model_load_s
        self.placement = placement
        self.instances: list[Instance] = []
        self.registered: list[Instance] = []
        self._booting: list[Instance] = []
        self._starting: list[Task] = []
        self.provisioning = 0
        self.placed = 0
        self.running = 0
        self.ready = 0
        self._next_id = 0
        self.next_event = math.inf
        # Spot: instances in the fleet that are Spot, and the noticed ones
        # (out of the fleet, still billed and serving until reclaimed), each
        # with when it goes and how many ready tasks it still serves.
        self.spot_count = 0
        self.draining: list[tuple[float, int]] = []
        self.leaving_ready = 0

    # --- counts ------------------------------------------------------------------
    @property
    def desired_total(self) -> int:
        """Tasks the service has: provisioning plus placed."""
        return self.provisioning + self.placed

    def empty_registered(self) -> int:
        return sum(1 for i in self.registered if not i.tasks)

    def all_warm(self, t: float) -> bool:
        return all(i.warm_at <= t for i in self.instances)

    # --- instances ---------------------------------------------------------------
    def launch(
        self,
        t: float,
        boot_s: float,
        warmup_s: float,
        *,
        spot: bool = False,
        interrupt_at: float = math.inf,
    ) -> Instance:
        inst = Instance(
            self._next_id, t, t + boot_s, t + warmup_s, self.slots, spot=spot,
            interrupt_at=interrupt_at,
        )  # fmt: skip
        self._next_id += 1
        self.instances.append(inst)
        self.spot_count += spot
        if boot_s <= 0:
            self.registered.append(inst)
        else:
            self._booting.append(inst)
            self.next_event = min(self.next_event, inst.registered_at)
        return inst

    def terminate_empty(self, count: int) -> int:
        """Remove up to ``count`` instances that run no task; return how many.

        Managed termination protection (aws-semantics §2): ECS unprotects an
        instance only when it has no tasks, so busy instances are never removed.
        Booting instances go first (they serve nothing yet), then the newest,
        On-Demand or Spot alike (sim/markets.py says why).
        """
        removed = 0
        for inst in sorted(
            (i for i in self.instances if not i.tasks),
            key=lambda i: (i in self.registered, -i.id),
        ):
            if removed >= count:
                break
            self._remove(inst)
            removed += 1
        return removed

    def _remove(self, inst: Instance) -> None:
        self.instances.remove(inst)
        self.spot_count -= inst.spot
        if inst in self.registered:
            self.registered.remove(inst)
        else:
            self._booting.remove(inst)

    # --- Spot interruptions ---------------------------------------------------------
    def interrupt(self, inst: Instance, t: float, notice_s: float) -> int:
        """EC2's interruption notice for ``inst``: it drains now and is gone at ``t + notice_s``.

        With ECS_ENABLE_SPOT_INSTANCE_DRAINING the instance goes DRAINING: no
        task is placed on it, its PENDING tasks stop at once, and the service
        starts a replacement for each of its tasks elsewhere (aws-semantics
        §11). Its serving tasks go on serving until EC2 reclaims it, since a
        GPU replacement needs longer than the notice. It leaves the group's
        count now, so managed scaling sees the replacements waiting; it stays
        billed until it goes. Returns the tasks replaced.
        """
        self._remove(inst)
        replaced = len(inst.tasks)
        serving = 0
        for task in list(inst.tasks):
            if task in self._starting:
                self._starting.remove(task)
                if task.is_running:
                    self.running -= 1
            else:
                serving += 1
                self.running -= 1
                self.ready -= 1
            inst.tasks.remove(task)
            self.placed -= 1
            self.provisioning += 1
        self.draining.append((t + notice_s, serving))
        self.leaving_ready += serving
        return replaced

    def reap(self, t: float) -> None:
        """EC2 reclaims the noticed instances whose two minutes are over by ``t``."""
        keep = []
        for end, serving in self.draining:
            if end <= t:
                self.leaving_ready -= serving
            else:
                keep.append((end, serving))
        self.draining = keep

    # --- tasks -------------------------------------------------------------------
    def advance(self, t: float) -> None:
        """Apply every boot, pull and model load that has finished by ``t``."""
        if t < self.next_event:
            return
        nxt = math.inf
        if self._booting:
            still = []
            for inst in self._booting:
                if inst.registered_at <= t:
                    self.registered.append(inst)
                else:
                    still.append(inst)
                    nxt = min(nxt, inst.registered_at)
            self._booting = still
        if self._starting:
            keep = []
            for task in self._starting:
                if not task.is_running and task.running_at <= t:
                    task.is_running = True
                    self.running += 1
                if task.ready_at <= t:
                    self.ready += 1
                    continue
                keep.append(task)
                nxt = min(nxt, task.ready_at if task.is_running else task.running_at)
            self._starting = keep
        self.next_event = nxt

    def place(self, t: float) -> int:
        """Place provisioning tasks on registered instances with free GPUs."""
        placed = 0
        while self.provisioning > 0:
            cands = [i for i in self.registered if i.free() > 0]
            if not cands:
                break
            if self.placement == "spread":
                inst = max(cands, key=lambda i: (i.free(), -i.id))
            else:
                inst = min(cands, key=lambda i: (i.free(), i.id))
            if inst.image_ready_at is None:
                inst.image_ready_at = t + self.image_pull_s
            running_at = max(t, inst.image_ready_at)
            task = Task(t, running_at, running_at + self.model_load_s, inst)
            inst.tasks.append(task)
            self.provisioning -= 1
            self.placed += 1
            placed += 1
            self._starting.append(task)
            self.next_event = min(self.next_event, t)
        if placed:
            self.advance(t)
        return placed

    def add_ready_task(self, inst: Instance, t: float) -> None:
        """A task that is already serving (the warm start of a run)."""
        inst.image_ready_at = t
        inst.tasks.append(Task(t, t, t, inst, is_running=True))
        self.placed += 1
        self.running += 1
        self.ready += 1

    def stop(self, count: int) -> None:
        """Stop ``count`` tasks: provisioning first, then starting, then serving.

        ECS picks by Availability Zone balance and otherwise does not document
        the choice; stopping the least useful first and, among serving tasks,
        those on the emptiest instance lets instances drain (docs/simulator.md).
        """
        n = min(count, self.provisioning)
        self.provisioning -= n
        count -= n
        while count > 0 and self._starting:
            task = max(self._starting, key=lambda k: (k.placed_at, k.instance.id))
            self._starting.remove(task)
            if task.is_running:
                self.running -= 1
            self._detach(task)
            count -= 1
        while count > 0 and self.ready > 0:
            inst = min(
                (i for i in self.registered if i.tasks),
                key=lambda i: (len(i.tasks), -i.id),
            )
            task = inst.tasks[-1]
            self._detach(task)
            self.running -= 1
            self.ready -= 1
            count -= 1

    def _detach(self, task: Task) -> None:
        task.instance.tasks.remove(task)
        self.placed -= 1


class WarmPool:
    """An EC2 Auto Scaling warm pool: instances prepared ahead, taken before new launches.

    A pool instance boots, pre-pulls the service image (host/scripts.py's warm
    unit) and stops; that takes ``prepare_s`` (boot + pull) and is billed as
    running time. A scale-out takes a prepared instance first: it reaches
    ECS registration in ``register_s`` with the image on disk. The pool
    refills to max(min_size, max_prepared - in-service instances)
    (WarmPoolConfiguration, aws-semantics §4); with ECS an instance that
    scales in is terminated, not returned (ReuseOnScaleIn cannot be used,
    aws-semantics §9). ``reuse_on_scale_in`` is the what-if that it could:
    an instance that scales in goes back to the pool, prepared, in place of a
    refill's boot and pull (:meth:`give_back`).
    """

    __slots__ = ("_prepared", "billed_running", "max_prepared", "min_size", "prepare_s",
                 "register_s", "returned", "reuse_on_scale_in", "starts")  # fmt: skip

    def __init__(
        self,
        min_size: int,
        max_prepared: int,
        prepare_s: float,
        register_s: float,
        billed_running: bool,
        reuse_on_scale_in: bool = False,
    ) -> None:
        self.reuse_on_scale_in = reuse_on_scale_in
        self.returned = 0
        self.min_size = min_size
        self.max_prepared = max_prepared
        self.prepare_s = prepare_s
        self.register_s = register_s
        # A Running pool bills its instances all the time; Stopped and
        # Hibernated ones only while they warm.
        self.billed_running = billed_running
        # When each pool instance is (or will be) ready to be taken.
        self._prepared: list[float] = []
        self.starts = 0

    def size(self, in_service: int) -> int:
        return managed_scaling.pool_size(self.min_size, self.max_prepared, in_service)

    def fill(self, t: float, in_service: int, ready_at: float | None = None) -> None:
        """Launch instances into the pool up to its size; they are ready after preparing."""
        at = t + self.prepare_s if ready_at is None else ready_at
        while len(self._prepared) < self.size(in_service):
            self._prepared.append(at)

    def give_back(self, t: float, count: int, in_service: int) -> None:
        """What-if: ``count`` instances that scaled in return to the pool, up to its size.

        They still hold the image and stop at once (a simplification: AWS
        documents no stop time), so they are prepared from ``t``; the pool
        has no refill to launch for the places they take.
        """
        if not self.reuse_on_scale_in:
            return
        for _ in range(count):
            if len(self._prepared) >= self.size(in_service):
                break
            self._prepared.append(t)
            self.returned += 1

    def take(self, t: float) -> bool:
        """Take one prepared instance for a scale-out, if one is ready."""
        for j, ready in enumerate(self._prepared):
            if ready <= t:
                del self._prepared[j]
                self.starts += 1
                return True
        return False

    def billed(self, t: float) -> int:
        """Pool instances paid for as running at ``t``."""
        if self.billed_running:
            return len(self._prepared)
        return sum(1 for ready in self._prepared if ready > t)

    def stopped(self, t: float) -> int:
        """Pool instances prepared and stopped (or hibernated) at ``t``: only their volume bills."""
        if self.billed_running:
            return 0
        return sum(1 for ready in self._prepared if ready <= t)
