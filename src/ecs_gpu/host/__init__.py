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

The field reports behind the shape of this package (docs/host.md):

* The GPU metric is collected by a host-level ``amazon-cloudwatch-agent``
  (systemd). On the AL2023 GPU AMI a container sees a GPU only when ECS
  assigned it one through ``resourceRequirements``; an agent container
  without a reservation finds no ``nvidia-smi`` and crash-loops, so there is
  no containerized agent at all.
* Nothing here restarts docker or edits ``daemon.json``: ``ecs.service`` is
  ``PartOf=docker.service``, so a docker restart takes the ECS agent down.
* Exactly one agent config file, at :data:`gpu_metric.AGENT_CONFIG_PATH`,
  outside ``/opt/aws/amazon-cloudwatch-agent/etc/``, which ``fetch-config``
  owns and rewrites.
* Nothing here may delay ECS registration: ``ecs.service`` is ordered after
  cloud-final, so the setup runs as a systemd unit that cloud-init only
  enqueues (``--no-block``), never as a blocking ``runcmd``.
* With ``[capacity.warm_pool]``, a second unit pre-pulls the service image
  while the instance warms and completes the launch lifecycle hook on every
  boot (docs/host.md "Warm pool").
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
