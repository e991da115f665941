"""The whole spec: its sections together, and the defaults one section takes from another."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from ecs_gpu import catalog
from ecs_gpu.contracts.signals import CONCURRENCY, DEFAULT_GPU_SIGNAL
from ecs_gpu.spec.rules import spec_warnings
from ecs_gpu.spec.sections.alerts import AlertsSpec
from ecs_gpu.spec.sections.base import _Section
from ecs_gpu.spec.sections.capacity import CapacitySpec
from ecs_gpu.spec.sections.network import LoadBalancerSpec, NetworkSpec
from ecs_gpu.spec.sections.scaling import ScalingSpec
from ecs_gpu.spec.sections.service import ServiceSpec
from ecs_gpu.spec.sections.simulation import SimulationSpec


class Spec(_Section):
    service: ServiceSpec
    capacity: CapacitySpec
    scaling: ScalingSpec
    network: NetworkSpec | None = None
    load_balancer: LoadBalancerSpec | None = None
    alerts: AlertsSpec | None = None
    simulation: SimulationSpec = Field(default_factory=SimulationSpec)

    @model_validator(mode="before")
    @classmethod
    def _defaults_from_other_sections(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        svc, cap, sc = data.get("service"), data.get("capacity"), data.get("scaling")
        if isinstance(svc, dict) and isinstance(cap, dict):
            data["service"] = _default_task_size(svc, cap)
        if isinstance(sc, dict) and "signal" not in sc and "gpu_metric" not in sc:
            has_metrics = isinstance(svc, dict) and svc.get("metrics") is not None
            data["scaling"] = {**sc, "signal": CONCURRENCY if has_metrics else DEFAULT_GPU_SIGNAL}
        return data

    @property
    def instance(self) -> catalog.InstanceType:
        return self.capacity.instance

    @property
    def tasks_per_instance(self) -> int:
        s = self.service
        return self.instance.tasks_per_instance(s.gpus_per_task, s.cpu_units, s.memory_mib)

    def warnings(self, path: str = "spec") -> list[str]:
        """Non-fatal notes on this spec, one line each (see :func:`spec_warnings`)."""
        return spec_warnings(self, path)


def _default_task_size(svc: dict[str, Any], cap: dict[str, Any]) -> dict[str, Any]:
    """Fill cpu_units/memory_mib with the task's share of the instance (its GPUs' share).

    Left unset when the instance type or GPU count is itself wrong: those keys
    get their own errors, and a "missing cpu_units" beside them would mislead.
    """
    if "cpu_units" in svc and "memory_mib" in svc:
        return svc
    gpus = svc.get("gpus_per_task", 1)
    itype = cap.get("instance_type")
    if not isinstance(itype, str) or type(gpus) is not int or gpus < 1:
        return svc
    try:
        it = catalog.lookup(itype)
    except catalog.UnknownInstanceType:
        return svc
    share = min(gpus, it.gpus)
    out = dict(svc)
    out.setdefault("cpu_units", it.cpu_units * share // it.gpus)
    out.setdefault("memory_mib", it.schedulable_memory_mib * share // it.gpus)
    return out
