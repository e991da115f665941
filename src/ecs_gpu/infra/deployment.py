"""How the service rolls a new task definition out: pure arithmetic, no CDK.

A rolling ECS deployment with minimum healthy 100 % starts each new task
before it stops an old one. That needs a free GPU. When the fleet is at
``max_instances`` and every GPU holds a task (``max_tasks`` equals what
``max_instances`` instances hold), there is none: the new tasks wait, and
the deployment circuit breaker rolls the deployment back. A deploy made at
peak would never go through, so the minimum healthy percent depends on the
spec (:func:`min_healthy_percent`). The alternative, always leaving an
instance of headroom, is a spec choice (raise ``max_instances``), which this
rule then honours with 100 %.
"""

from __future__ import annotations

import math
from typing import Final

from ecs_gpu.spec import Spec

FULL: Final = 100
# Start new tasks first, up to twice the desired count, when room allows.
MAX_PERCENT: Final = 200


def free_slots_at_max(spec: Spec) -> int:
    """Task slots left when the fleet is at max_instances and runs max_tasks."""
    return spec.tasks_per_instance * spec.capacity.max_instances - spec.scaling.max_tasks


def min_healthy_percent(spec: Spec) -> int:
    """ECS ``minimumHealthyPercent`` for the service.

    * If the fleet at ``max_instances`` has room for at least one task more
      than ``max_tasks``, it stays 100 %: never fewer tasks than desired;
    * otherwise it is the largest whole percent that lets ECS stop ONE task
      first when the service runs ``max_tasks``. ECS keeps
      ``ceil(desired x percent / 100)`` tasks running, so below ``max_tasks``
      (where a new instance can still be launched) it still starts new tasks
      first, for up to ten tasks; above that, integer percents cannot keep the
      one-below-maximum count whole, and ECS may also stop one task first there.
    """
    if free_slots_at_max(spec) >= 1:
        return FULL
    n = spec.scaling.max_tasks
    # (n - 1) / n, floored to a whole percent: at n tasks ECS keeps n - 1 running.
    return (FULL * (n - 1)) // n


def tasks_kept(desired: int, percent: int) -> int:
    """Tasks ECS keeps running during a deployment (it rounds the minimum up)."""
    return math.ceil(desired * percent / FULL)
