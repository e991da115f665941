"""What runs on each GPU instance: ecs.config, the host CloudWatch agent, the user data,
and doctor's read-only probe.

Pure Python (no CDK, outside ``infra``): ``GpuService`` embeds
:func:`cloud_config` as the launch template's user data, and ``validate``,
``aws.facts`` and ``doctor`` read the same facts without starting Node. One
module per concept: :mod:`~ecs_gpu.host.layout` (paths and units),
:mod:`~ecs_gpu.host.agent` (ecs.config, the CloudWatch agent's config and its
schema check), :mod:`~ecs_gpu.host.scripts` (the boot scripts and their
units), :mod:`~ecs_gpu.host.user_data` (the cloud-config) and
:mod:`~ecs_gpu.host.probe` (probe.sh and its parser). This package
re-exports the first four, so ``host.cloud_config(spec)`` reads as one API.
docs/host.md gives the field reports behind its shape: a host agent, not a
container; no docker restart; one agent config outside ``fetch-config``'s
directory; nothing that delays ECS registration; the warm pool's pre-pull.
"""

from __future__ import annotations

from ecs_gpu.host.agent import (
    AGENT_LOG_ACTIONS,
    AGENT_METRIC_ACTIONS,
    AGENT_TAG_ACTIONS,
    HOST_LOG_FILES,
    LINUX_NVIDIA_MEASUREMENTS,
    agent_config,
    agent_config_json,
    agent_schema,
    ecs_config,
    validate_agent_config,
)
from ecs_gpu.host.layout import (
    AGENT_CTL,
    AGENT_LOG,
    AGENT_OWNED_DIR,
    AGENT_PACKAGE,
    AGENT_UNIT,
    ECS_CONFIG_PATH,
    ECS_UNIT,
    HOST_SETUP_LOG,
    IMDS_URL,
    NVIDIA_SMI,
    SETUP_SCRIPT_PATH,
    SETUP_UNIT,
    SYSTEMD_DIR,
    WARM_SCRIPT_PATH,
    WARM_UNIT,
)
from ecs_gpu.host.scripts import (
    DNF_TIMEOUT_S,
    HOOK_MARGIN_S,
    HOOK_MAX_S,
    HOOK_MIN_S,
    PULL_FACTOR,
    PULL_MARGIN_S,
    RETRY_DELAYS_S,
    SETUP_ATTEMPTS,
    SETUP_FIRST_DELAY_S,
    SETUP_TYPICAL_S,
    WARM_POLL_S,
    ecr_registry,
    hook_timeout_s,
    image_parameter_name,
    pull_timeout_s,
    setup_script,
    systemd_unit,
    units,
    warm_pool_hook_name,
    warm_pool_script,
)
from ecs_gpu.host.user_data import (
    GZ_B64,
    cloud_config,
    cloud_config_document,
    file_content,
    gz_b64,
    written_files,
)

__all__ = [
    "AGENT_CTL",
    "AGENT_LOG",
    "AGENT_LOG_ACTIONS",
    "AGENT_METRIC_ACTIONS",
    "AGENT_OWNED_DIR",
    "AGENT_PACKAGE",
    "AGENT_TAG_ACTIONS",
    "AGENT_UNIT",
    "DNF_TIMEOUT_S",
    "ECS_CONFIG_PATH",
    "ECS_UNIT",
    "GZ_B64",
    "HOOK_MARGIN_S",
    "HOOK_MAX_S",
    "HOOK_MIN_S",
    "HOST_LOG_FILES",
    "HOST_SETUP_LOG",
    "IMDS_URL",
    "LINUX_NVIDIA_MEASUREMENTS",
    "NVIDIA_SMI",
    "PULL_FACTOR",
    "PULL_MARGIN_S",
    "RETRY_DELAYS_S",
    "SETUP_ATTEMPTS",
    "SETUP_FIRST_DELAY_S",
    "SETUP_SCRIPT_PATH",
    "SETUP_TYPICAL_S",
    "SETUP_UNIT",
    "SYSTEMD_DIR",
    "WARM_POLL_S",
    "WARM_SCRIPT_PATH",
    "WARM_UNIT",
    "agent_config",
    "agent_config_json",
    "agent_schema",
    "cloud_config",
    "cloud_config_document",
    "ecr_registry",
    "ecs_config",
    "file_content",
    "gz_b64",
    "hook_timeout_s",
    "image_parameter_name",
    "pull_timeout_s",
    "setup_script",
    "systemd_unit",
    "units",
    "validate_agent_config",
    "warm_pool_hook_name",
    "warm_pool_script",
    "written_files",
]
