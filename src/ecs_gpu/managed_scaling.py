"""The capacity provider's managed-scaling settings a spec deploys.

The template (infra/capacity.py) sets them and the simulator (sim/params.py)
runs them, so they are computed here once, without importing CDK.
"""

from __future__ import annotations

import math
from typing import Final

from ecs_gpu.spec import Spec

# ManagedScaling ranges: instanceWarmupPeriod 0-10000 s, step sizes 1-10000
# (aws-semantics.md §2; API_ManagedScaling).
MAX_WARMUP_S: Final = 10_000
MAX_STEP: Final = 10_000
# AWS recommends more than 60 s; below 300 s (the API default) a second step
# launches before the first GPU instance has even registered.
MIN_WARMUP_S: Final = 300
# The API default: a step adds at least one instance.
MIN_SCALING_STEP: Final = 1


def instance_warmup_s(spec: Spec) -> int:
    """Seconds a new GPU instance needs before it carries load: boot, image pull, model load.

    Rounded up to whole minutes and kept within what ECS accepts. The next
    scale-out step waits for it (aws-semantics.md §2 instanceWarmupPeriod).
    """
    sim = spec.simulation
    raw = sim.instance_boot_s + sim.image_pull_s + sim.model_load_s
    minutes = math.ceil(raw / 60) * 60
    return min(max(minutes, MIN_WARMUP_S), MAX_WARMUP_S)


def max_scaling_step(spec: Spec) -> int:
    """How many instances one managed-scaling step may add: up to max_instances.

    ECS sizes a step from the tasks waiting in PROVISIONING (aws-semantics.md
    §2 "Step-size estimation"), and the fleet can never pass max_instances, so
    a smaller cap saves nothing and only slows a burst: with a cap of 2 the
    simulator measured 16,500 s of overload on 14 days of ServeGen M-large
    against 9,250 s with this step (docs/benchmarks.md, compare_designs.py).
    The next step also waits for the warm-up, so one step per burst matters.
    """
    return max(MIN_SCALING_STEP, min(spec.capacity.max_instances, MAX_STEP))
