"""ecs-gpu: GPU inference services on Amazon ECS that size themselves.

Public API (README.md "From Python"): what these modules list in ``__all__``; the rest is internal.
- ``ecs_gpu``: ``GpuService``, ``strategy_nonce``
- ``ecs_gpu.spec``: ``load_spec``, ``parse_spec``, ``Spec``, ``ServiceSpec``,
  ``ServiceMetricsSpec``, ``CapacitySpec``, ``SpotSpec``, ``WarmPoolSpec``, ``NetworkSpec``,
  ``LoadBalancerSpec``, ``ScalingSpec``, ``ScheduleSpec``, ``AlertsSpec``, ``SimulationSpec``
- ``ecs_gpu.sim``: ``run``, ``simulate``, ``from_spec``, ``SimParams``, ``SimResult``,
  ``read_trace``, ``load_trace``, ``bundled_traces``, ``bundled_trace_path``, ``BundledTrace``,
  ``Trace``, ``TraceShape``, ``TraceError``, ``plan_rate_scale``, ``plan_scale_note``,
  ``BUNDLED_TRACE``, ``PLAN_PEAK_FRACTION``
- ``ecs_gpu.errors``: ``EcsGpuError``, ``BadInputError``, ``SpecError``, ``AwsError``,
  ``AwsRefused``, ``ProblemsFound``, ``StackInterrupted``, ``EXIT_OK``, ``EXIT_PROBLEMS``,
  ``EXIT_BAD_INPUT``, ``EXIT_AWS``, ``EXIT_INTERRUPTED``, ``EXIT_BROKEN_PIPE``
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ecs_gpu.design.redeploy import strategy_nonce
    from ecs_gpu.infra.service import GpuService

__all__ = ["GpuService", "strategy_nonce"]


# Both names load on first access (PEP 562), so ``import ecs_gpu`` and the
# CLI's offline commands never start Node/jsii.
def __getattr__(name: str) -> Any:
    if name == "GpuService":
        from ecs_gpu.infra.service import GpuService

        return GpuService
    if name == "strategy_nonce":
        from ecs_gpu.design.redeploy import strategy_nonce

        return strategy_nonce
    raise AttributeError(f"module 'ecs_gpu' has no attribute {name!r}")
