"""ecs-gpu: GPU inference services on Amazon ECS that size themselves.

``from ecs_gpu import GpuService`` gives the CDK construct. It is loaded on
first access (PEP 562), so ``import ecs_gpu`` and the CLI's offline commands
never start Node/jsii.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ecs_gpu.infra.service import GpuService

__all__ = ["GpuService"]


def __getattr__(name: str) -> Any:
    if name == "GpuService":
        from ecs_gpu.infra.service import GpuService

        return GpuService
    raise AttributeError(f"module 'ecs_gpu' has no attribute {name!r}")
