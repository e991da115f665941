"""ecs-gpu: GPU inference services on Amazon ECS that size themselves.

The public API is what these modules list in ``__all__``; every other
module, and every name not listed, is internal and may change in any
release:

- ``ecs_gpu``: ``GpuService``, ``strategy_nonce``
- ``ecs_gpu.spec``: ``load_spec``, ``parse_spec``, ``Spec``, ``ServiceSpec``,
  ``ServiceMetricsSpec``, ``CapacitySpec``, ``SpotSpec``, ``WarmPoolSpec``,
  ``NetworkSpec``, ``LoadBalancerSpec``, ``ScalingSpec``, ``ScheduleSpec``,
  ``AlertsSpec``, ``SimulationSpec``
- ``ecs_gpu.sim``: ``run``, ``simulate``, ``from_spec``, ``SimParams``,
  ``SimResult``, ``read_trace``, ``load_trace``, ``bundled_traces``,
  ``bundled_trace_path``, ``BundledTrace``, ``Trace``, ``TraceShape``,
  ``TraceError``, ``plan_rate_scale``, ``plan_scale_note``, ``BUNDLED_TRACE``,
  ``PLAN_PEAK_FRACTION``
- ``ecs_gpu.errors``: ``EcsGpuError``, ``BadInputError``, ``SpecError``,
  ``AwsError``, ``AwsRefused``, ``ProblemsFound``, ``StackInterrupted``,
  ``EXIT_OK``, ``EXIT_PROBLEMS``, ``EXIT_BAD_INPUT``, ``EXIT_AWS``,
  ``EXIT_INTERRUPTED``, ``EXIT_BROKEN_PIPE``

``GpuService`` is the CDK construct: one spec, one GPU service, the same
resources ``ecs-gpu synth`` writes. ``strategy_nonce(spec)`` is the
``force_new_deployment_nonce`` to pass it for the one deploy that changes
``[capacity.spot]`` on a running stack. The spec loaders raise
``SpecError``, a ``BadInputError``; every error ecs-gpu raises on purpose is
an ``EcsGpuError`` carrying its exit code. ``ecs_gpu.sim`` predicts a spec's
autoscaling on a request trace, with no CDK and no AWS.

Both names here are loaded on first access (PEP 562), so ``import ecs_gpu``
and the CLI's offline commands never start Node/jsii.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ecs_gpu.design.redeploy import strategy_nonce
    from ecs_gpu.infra.service import GpuService

__all__ = ["GpuService", "strategy_nonce"]


def __getattr__(name: str) -> Any:
    if name == "GpuService":
        from ecs_gpu.infra.service import GpuService

        return GpuService
    if name == "strategy_nonce":
        from ecs_gpu.design.redeploy import strategy_nonce

        return strategy_nonce
    raise AttributeError(f"module 'ecs_gpu' has no attribute {name!r}")
