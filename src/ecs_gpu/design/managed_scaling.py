"""The capacity provider's managed-scaling settings a spec deploys.

The template (infra/capacity.py) sets them and the simulator (sim/params.py)
runs them, so they are computed here once, without importing CDK.
"""

from __future__ import annotations

import math
from typing import Final

from ecs_gpu.design import startup
from ecs_gpu.spec import Spec

# ManagedScaling ranges: instanceWarmupPeriod 0-10000 s, step sizes 1-10000
# (aws-semantics.md §2; API_ManagedScaling).
MAX_WARMUP_S: Final = 10_000
MAX_STEP: Final = 10_000
# AWS recommends more than 60 s; below 300 s (the API default) a second step
# launches before the first cold GPU instance has even registered.
MIN_WARMUP_S: Final = 300
# A pooled instance registers in about a minute, so the 300-s floor's reason
# does not hold; the smallest whole minute above AWS's 60-s advice.
MIN_POOLED_WARMUP_S: Final = 120
# A Running pool instance: the ECS agent polls the lifecycle state every
# 60 s (ECS_WARM_POOLS_CHECK, aws-semantics §4 "Agent behaviour").
WARM_RUNNING_REGISTER_S: Final = 60.0
# The API default: a step adds at least one instance. A larger minimum makes a
# rise's first step launch spare instances: less overload for more GPU-hours
# (docs/benchmarks.md "The scale-out frontier",
# ``benchmarks/stress.py --scale-out-frontier``).
MIN_SCALING_STEP: Final = 1
# Managed scaling launches on its CPR AlarmHigh: 1 of 1 one-minute datapoints
# (aws-semantics §2 "CPR AlarmHigh / AlarmLow"). A task added to the service
# waits up to this long before its instance is even asked for.
LAUNCH_DATAPOINT_S: Final = 60


def cold_start_s(spec: Spec) -> float:
    """A new instance to a serving task: boot, image pull, model (startup.model_ready_s)."""
    return spec.simulation.instance_boot_s + startup.task_ready_s(spec)


def warm_register_s(spec: Spec) -> float:
    """A warm-pool instance, taken by a scale-out, to ECS registration (image already pulled)."""
    wp = spec.capacity.warm_pool
    if wp is not None and wp.pool_state == "Running":
        return WARM_RUNNING_REGISTER_S
    return spec.simulation.warm_start_s


def pooled_start_s(spec: Spec) -> float:
    """A warm-pool instance to a serving task: warm start, then the model (no pull)."""
    return warm_register_s(spec) + startup.model_ready_s(spec)


def pool_size(min_size: int, prepared_capacity: int, in_service: int) -> int:
    """Instances the warm pool holds beside ``in_service`` ones (PutWarmPool, aws-semantics §4).

    max(MinSize, MaxGroupPreparedCapacity - desired capacity): the pool
    refills to it, and "the capacity of the warm pool is 0, unless you
    specify a value for MinSize" once the group holds more.
    """
    return max(min_size, prepared_capacity - in_service, 0)


def pool_covers_scale_out(spec: Spec) -> bool:
    """Whether every scale-out up to max_instances can be served from the pool.

    At each in-service count n from min_instances up, the pool (pool_size)
    must hold the max_instances - n the group may still add: a prepared
    capacity of max_instances, or a min_size as large as the whole range.
    The default (WarmPoolSpec.prepared_capacity, min_size) covers only that
    second case. Then only a launch while the pool is still refilling starts
    cold.
    """
    wp = spec.capacity.warm_pool
    if wp is None:
        return False
    cap = spec.capacity
    return all(
        pool_size(wp.min_size, wp.prepared_capacity, n) >= cap.max_instances - n
        for n in range(cap.min_instances, cap.max_instances)
    )


def instance_warmup_s(spec: Spec) -> int:
    """Seconds until a new GPU instance carries load: the capacity provider's instance warm-up.

    Rounded up to whole minutes and kept within what ECS accepts. The next
    scale-out step waits for it (aws-semantics.md §2 instanceWarmupPeriod).
    Without a warm pool: boot + image pull + model (cold_start_s). With a pool
    that covers every scale-out (pool_covers_scale_out): the pooled start, a
    warm start + model load, since that is when a pooled instance counts.
    A launch while the pool refills starts cold and the next step may come
    before it registers: it adds at most what CPR still sees waiting, once
    per warm-up, and the simulator runs exactly this (docs/simulator.md). A
    pool smaller than max_instances keeps the cold warm-up: launches past it
    are cold by design.
    """
    if pool_covers_scale_out(spec):
        raw, floor = pooled_start_s(spec), MIN_POOLED_WARMUP_S
    else:
        raw, floor = cold_start_s(spec), MIN_WARMUP_S
    minutes = math.ceil(raw / 60) * 60
    return min(max(minutes, floor), MAX_WARMUP_S)


def max_scaling_step(spec: Spec) -> int:
    """How many instances one managed-scaling step may add: up to max_instances.

    ECS sizes a step from the tasks waiting in PROVISIONING (aws-semantics.md
    §2 "Step-size estimation"), and the fleet can never pass max_instances, so
    a smaller cap saves nothing and only slows a burst (docs/benchmarks.md
    "The GPU signal against the reference", ``benchmarks/compare_designs.py``).
    The next step also waits for the warm-up, so one step per burst matters.
    """
    return max(MIN_SCALING_STEP, min(spec.capacity.max_instances, MAX_STEP))
