"""The TOML spec: pydantic models, cross-field rules, and errors that say how to fix them.

Key names here are public interface (docs/spec.md). A spec is loaded with
:func:`load_spec` (a file) or :func:`parse_spec` (text); both raise
:class:`~ecs_gpu.errors.SpecError` whose every line names the file, the key,
the value, what is wrong and how to fix it.

The package, by concept: ``sections/`` (one pydantic model per TOML section),
``model`` (``Spec``, the sections together), ``rules/`` (cross-field rules and
notes, by concept, in ``RULES``/``NOTES`` order), ``messages`` (the one-line
form), ``field_errors`` (pydantic's errors in that form) and ``load`` (TOML in,
``Spec`` out). This module re-exports the public names.
"""

from __future__ import annotations

from ecs_gpu.spec.load import (
    MAX_SPEC_BYTES,
    load_spec,
    parse_spec,
)
from ecs_gpu.spec.messages import (
    Problem,
    RuleError,
)
from ecs_gpu.spec.model import (
    Spec,
)
from ecs_gpu.spec.rules import (
    NOTES,
    RULES,
    Rule,
    cross_field_problems,
    spec_warnings,
)
from ecs_gpu.spec.rules.capacity import (
    ROOT_IMAGE_GIB,
    ROOT_OS_GIB,
    root_volume_needed_gib,
)
from ecs_gpu.spec.rules.network import (
    LB_OTHER_INBOUND_RULES,
    SG_INBOUND_RULES_QUOTA,
)
from ecs_gpu.spec.rules.service import (
    GPU_OVERHEAD_PER_GPU_MIB,
    MIN_SERVER_CPU_UNITS,
    MIN_SERVER_MEMORY_MIB,
    SHM_PROCESS_MIN_MIB,
    TASK_DEFINITION_MAX_BYTES,
    TASK_DEFINITION_OTHER_BYTES,
    TRITON_METRICS_PORT,
    server_share,
    shm_limit_mib,
    shm_memory_needed_mib,
    task_definition_bytes,
)
from ecs_gpu.spec.rules.strings import CFN_DYNAMIC_REF_RE
from ecs_gpu.spec.sections.alerts import (
    EMAIL_RE,
    SNS_TOPIC_ARN_RE,
    AlertsSpec,
)
from ecs_gpu.spec.sections.base import (
    CDK_TOKEN_RE,
    INT32_MAX,
    NOT_INT32_KEYS,
    TARGET_VALUE_MAX,
)
from ecs_gpu.spec.sections.capacity import (
    GP3_BASELINE_IOPS,
    GP3_BASELINE_MIBPS,
    GP3_IOPS_PER_MIBPS,
    GP3_MAX_GIB,
    GP3_MAX_IOPS_PER_GIB,
    CapacitySpec,
    SpotSpec,
    WarmPoolSpec,
)
from ecs_gpu.spec.sections.network import (
    LoadBalancerSpec,
    NetworkSpec,
)
from ecs_gpu.spec.sections.scaling import (
    ScalingSpec,
    ScheduleSpec,
)
from ecs_gpu.spec.sections.service import (
    AUTO_SHM_MAX_MIB,
    DRIVER_CAPABILITIES,
    ECS_IMAGE_MAX,
    ENV_NAME_RE,
    MAX_MODEL_GIB,
    METRICS_PRESETS,
    MIN_MODEL_GIB,
    NAME_RE,
    PROM_NAME_RE,
    RESERVED_ENV,
    SECRET_ARN_RE,
    ServiceMetricsSpec,
    ServiceSpec,
    image_problem,
)
from ecs_gpu.spec.sections.simulation import (
    MAX_SIM_SECONDS,
    SimulationSpec,
)

__all__ = [
    "AUTO_SHM_MAX_MIB",
    "CDK_TOKEN_RE",
    "CFN_DYNAMIC_REF_RE",
    "DRIVER_CAPABILITIES",
    "ECS_IMAGE_MAX",
    "EMAIL_RE",
    "ENV_NAME_RE",
    "GP3_BASELINE_IOPS",
    "GP3_BASELINE_MIBPS",
    "GP3_IOPS_PER_MIBPS",
    "GP3_MAX_GIB",
    "GP3_MAX_IOPS_PER_GIB",
    "GPU_OVERHEAD_PER_GPU_MIB",
    "INT32_MAX",
    "LB_OTHER_INBOUND_RULES",
    "MAX_MODEL_GIB",
    "MAX_SIM_SECONDS",
    "MAX_SPEC_BYTES",
    "METRICS_PRESETS",
    "MIN_MODEL_GIB",
    "MIN_SERVER_CPU_UNITS",
    "MIN_SERVER_MEMORY_MIB",
    "NAME_RE",
    "NOTES",
    "NOT_INT32_KEYS",
    "PROM_NAME_RE",
    "RESERVED_ENV",
    "ROOT_IMAGE_GIB",
    "ROOT_OS_GIB",
    "RULES",
    "SECRET_ARN_RE",
    "SG_INBOUND_RULES_QUOTA",
    "SHM_PROCESS_MIN_MIB",
    "SNS_TOPIC_ARN_RE",
    "TARGET_VALUE_MAX",
    "TASK_DEFINITION_MAX_BYTES",
    "TASK_DEFINITION_OTHER_BYTES",
    "TRITON_METRICS_PORT",
    "AlertsSpec",
    "CapacitySpec",
    "LoadBalancerSpec",
    "NetworkSpec",
    "Problem",
    "Rule",
    "RuleError",
    "ScalingSpec",
    "ScheduleSpec",
    "ServiceMetricsSpec",
    "ServiceSpec",
    "SimulationSpec",
    "Spec",
    "SpotSpec",
    "WarmPoolSpec",
    "cross_field_problems",
    "image_problem",
    "load_spec",
    "parse_spec",
    "root_volume_needed_gib",
    "server_share",
    "shm_limit_mib",
    "shm_memory_needed_mib",
    "spec_warnings",
    "task_definition_bytes",
]
