"""The TOML spec: pydantic models, cross-field rules, and errors that say how to fix them.

Key names here are public interface (docs/spec.md). A spec is loaded with
:func:`load_spec` (a file) or :func:`parse_spec` (text); both raise
:class:`~ecs_gpu.errors.SpecError` whose every line names the file, the key,
the value, what is wrong and how to fix it.

The package, by concept: ``sections/`` (one pydantic model per TOML section),
``model`` (``Spec``, the sections together), ``rules/`` (cross-field rules and
notes, by concept, in ``RULES``/``NOTES`` order), ``messages`` (the one-line
form), ``field_errors`` (pydantic's errors in that form) and ``load`` (TOML in,
``Spec`` out). This module exports what a user reads a spec with: the two
loaders, ``Spec`` and its sections; the rules, limits and patterns are
internal, imported from the module that defines them.
"""

from __future__ import annotations

from ecs_gpu.spec.load import load_spec, parse_spec
from ecs_gpu.spec.model import Spec
from ecs_gpu.spec.sections.alerts import AlertsSpec
from ecs_gpu.spec.sections.capacity import CapacitySpec, SpotSpec, WarmPoolSpec
from ecs_gpu.spec.sections.network import LoadBalancerSpec, NetworkSpec
from ecs_gpu.spec.sections.scaling import ScalingSpec, ScheduleSpec
from ecs_gpu.spec.sections.service import ServiceMetricsSpec, ServiceSpec
from ecs_gpu.spec.sections.simulation import SimulationSpec

__all__ = [
    "AlertsSpec",
    "CapacitySpec",
    "LoadBalancerSpec",
    "NetworkSpec",
    "ScalingSpec",
    "ScheduleSpec",
    "ServiceMetricsSpec",
    "ServiceSpec",
    "SimulationSpec",
    "Spec",
    "SpotSpec",
    "WarmPoolSpec",
    "load_spec",
    "parse_spec",
]
