"""What a spec deploys, worked out from it once: :class:`Design` (``Design.of(spec)``).

The rule modules here (startup, managed_scaling, spot, redeploy, paths/) derive
each value; :mod:`ecs_gpu.design.resolve` calls them once per spec, and every
consumer (the template, the simulator, validate, verify, doctor) reads the
resulting design.
"""

from ecs_gpu.design.resolve import (
    Design,
    ManagedScaling,
    Spot,
    Startup,
    Zero,
    check_woken_task,
)

__all__ = ["Design", "ManagedScaling", "Spot", "Startup", "Zero", "check_woken_task"]
