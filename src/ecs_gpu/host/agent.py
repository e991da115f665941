"""The host agents' configuration: ecs.config for the ECS agent, and the host
CloudWatch agent's JSON (the GPU series and the host logs), its IAM actions and
its validation against the agent's own schema.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib import resources
from typing import Any, Final

from ecs_gpu import catalog
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design.spot import DRAIN_FLAG
from ecs_gpu.host.layout import AGENT_LOG, HOST_SETUP_LOG
from ecs_gpu.spec import Spec

# Host files the agent ships to Names.host_log_group, as (path, stream suffix).
# Stream names start with the instance id so each instance's boot can be read
# on its own.
HOST_LOG_FILES: Final[tuple[tuple[str, str], ...]] = (
    # The agent rotates ecs-agent.log hourly into ecs-agent.log.<date>; with a
    # glob the CloudWatch agent follows the most recently written file.
    ("/var/log/ecs/ecs-agent.log*", "ecs-agent"),
    ("/var/log/ecs/ecs-init.log", "ecs-init"),
    # The AL2023 GPU AMI logs GPU injection here (debug level, one burst per
    # container start): where "the container cannot see its GPU" shows.
    ("/var/log/ecs/nvidia-container-runtime.log", "nvidia-container-runtime"),
    # Any failed cloud-init module: a failed boot is visible without SSH.
    ("/var/log/cloud-init-output.log", "cloud-init-output"),
    # Our units' output (host setup, warm-pool pre-pull and lifecycle hook).
    (HOST_SETUP_LOG, "ecs-gpu-host-setup"),
    # The agent's own errors (nvidia-smi missing, PutMetricData AccessDenied):
    # the two failures the field report found only on a live instance.
    (AGENT_LOG, "amazon-cloudwatch-agent"),
)

# What the host agent calls with the instance role; GpuService grants exactly these.
# PutMetricData: condition cloudwatch:namespace = gpu_metric.NAMESPACE (the
# reference module's agent had nowhere to write without it, field report).
AGENT_METRIC_ACTIONS: Final = ("cloudwatch:PutMetricData",)
# append_dimensions AutoScalingGroupName is read from the instance's
# aws:autoscaling:groupName tag through ec2:DescribeTags, and the agent drops
# every metric until that lookup succeeds (aws/amazon-cloudwatch-agent
# plugins/processors/ec2tagger/ec2tagger.go). DescribeTags takes no
# resource-level permissions, so its resource is "*".
AGENT_TAG_ACTIONS: Final = ("ec2:DescribeTags",)
# On Names.host_log_group only. The stack creates the group and owns its
# retention, so no CreateLogGroup or PutRetentionPolicy.
AGENT_LOG_ACTIONS: Final = (
    "logs:CreateLogStream",
    "logs:PutLogEvents",
    "logs:DescribeLogStreams",
)

# nvidia_gpu measurements the agent accepts on Linux (aws-semantics.md §5,
# aws/amazon-cloudwatch-agent@ab55b8d registered_metrics.go). The JSON schema
# does not check these names, and a misspelt one is a metric nobody writes.
LINUX_NVIDIA_MEASUREMENTS: Final = frozenset(
    {
        "utilization_gpu",
        "temperature_gpu",
        "power_draw",
        "utilization_memory",
        "fan_speed",
        "memory_total",
        "memory_used",
        "memory_free",
        "pcie_link_gen_current",
        "pcie_link_width_current",
        "encoder_stats_session_count",
        "encoder_stats_average_fps",
        "encoder_stats_average_latency",
        "clocks_current_graphics",
        "clocks_current_sm",
        "clocks_current_memory",
        "clocks_current_video",
    }
)


def agent_config(spec: Spec) -> dict[str, Any]:
    """CloudWatch agent JSON for the host agent: the GPU series plus the host logs."""
    names = Names(spec.service.name)
    return {
        # root: nvidia-smi and /var/log/ecs are root-only on the ECS AMI.
        "agent": {"run_as_user": "root"},
        "metrics": {
            "namespace": gpu_metric.NAMESPACE,
            "append_dimensions": {gpu_metric.DIMENSION: gpu_metric.APPEND_DIMENSION_VALUE},
            # One series per ASG across every GPU of every instance: the one
            # series target tracking and the alarm can name.
            "aggregation_dimensions": [[gpu_metric.DIMENSION]],
            "force_flush_interval": gpu_metric.FORCE_FLUSH_INTERVAL_S,
            "metrics_collected": {
                "nvidia_gpu": {
                    "measurement": list(gpu_metric.MEASUREMENTS),
                    "metrics_collection_interval": gpu_metric.COLLECTION_INTERVAL_S,
                }
            },
        },
        "logs": {
            "logs_collected": {
                "files": {
                    "collect_list": [
                        {
                            "file_path": path,
                            "log_group_name": names.host_log_group,
                            "log_stream_name": "{instance_id}/" + stream,
                            "timezone": "UTC",
                        }
                        for path, stream in HOST_LOG_FILES
                    ]
                }
            }
        },
    }


def agent_config_json(spec: Spec) -> str:
    """The agent config file as written on the instance: compact JSON, one line."""
    return json.dumps(agent_config(spec), separators=(",", ":")) + "\n"


def ecs_config(spec: Spec, *, spot: bool = False) -> str:
    """Contents of /etc/ecs/ecs.config (a systemd EnvironmentFile, so no comments in it).

    Deliberately absent:
    * ECS_WARM_POOLS_CHECK without a warm pool: the flag makes the agent poll
      instance metadata before registering, for nothing.
    * ECS_ENABLE_CONTAINER_METADATA: the task metadata endpoint v4 is always
      there; the extra metadata file helps no GPU workload.
    * ECS_AVAILABLE_LOGGING_DRIVERS: ecs-init already enables awslogs, which
      the task uses (aws/amazon-ecs-agent ecs-init/docker/docker.go); setting
      it here would replace that list.
    * ECS_IMAGE_PULL_BEHAVIOR=prefer-cached without a warm pool: it would keep
      running a stale image for a moved tag; cached layers already make
      re-pulls cheap.
    """
    lines = [
        f"ECS_CLUSTER={Names(spec.service.name).cluster}",
        # The GPU AMI also writes this to /var/lib/ecs/ecs.config; stating it
        # here keeps GPU registration from depending on the AMI build.
        "ECS_ENABLE_GPU_SUPPORT=true",
        # The spec's memory rule (catalog.schedulable_memory_mib) assumes this
        # much is kept back for the host agent, SSM agent and ECS agent.
        f"ECS_RESERVED_MEMORY={catalog.ECS_RESERVED_MEMORY_MIB}",
    ]
    if spec.capacity.warm_pool is not None:
        lines += [
            # The ECS docs' requirement for warm pools: the agent does not
            # register while the instance's target state is Warmed:*.
            "ECS_WARM_POOLS_CHECK=true",
            # The image the warm-pool unit pulled is used as it is: a warm
            # start then pulls nothing (pin image tags; docs/host.md).
            "ECS_IMAGE_PULL_BEHAVIOR=prefer-cached",
        ]
    if spot:
        # The Spot group's instances: on EC2's two-minute notice the agent
        # sets the instance DRAINING, so its tasks are replaced elsewhere
        # (off by default; aws-semantics §11).
        lines.append(f"{DRAIN_FLAG}=true")
    return "\n".join(lines) + "\n"


@functools.cache
def agent_schema() -> dict[str, Any]:
    """The CloudWatch agent's JSON schema, copied from the agent (data/cloudwatch-agent/NOTICE)."""
    ref = resources.files("ecs_gpu") / "data" / "cloudwatch-agent" / "schema.json"
    loaded: dict[str, Any] = json.loads(ref.read_text(encoding="utf-8"))
    return loaded


def validate_agent_config(cfg: Mapping[str, Any], *, source: str = "agent config") -> list[str]:
    """Problems with a CloudWatch agent config, one line each, naming the JSON path.

    Checks the agent's own JSON schema, then what the schema leaves open:
    every ``nvidia_gpu`` measurement must be one the agent knows on Linux.
    An empty list means the config is valid.
    """
    from jsonschema.validators import validator_for

    schema = agent_schema()
    validator = validator_for(schema)(schema)
    problems = [
        f"{source}: {e.json_path}: {e.message}. Fix: correct it to match the CloudWatch "
        "agent configuration schema (src/ecs_gpu/data/cloudwatch-agent/schema.json)."
        for e in sorted(validator.iter_errors(cfg), key=lambda e: [str(p) for p in e.path])
    ]
    collected = cfg.get("metrics", {}).get("metrics_collected", {})
    nvidia = collected.get("nvidia_gpu") if isinstance(collected, Mapping) else None
    measurements = nvidia.get("measurement", []) if isinstance(nvidia, Mapping) else []
    for i, m in enumerate(measurements if isinstance(measurements, list) else []):
        name = m.get("name") if isinstance(m, Mapping) else m
        if isinstance(name, str) and name not in LINUX_NVIDIA_MEASUREMENTS:
            problems.append(
                f"{source}: $.metrics.metrics_collected.nvidia_gpu.measurement[{i}] = "
                f"{name!r}: not an nvidia_gpu measurement the agent collects on Linux, so "
                "its metric would never be published. Fix: use one of "
                f"{', '.join(sorted(LINUX_NVIDIA_MEASUREMENTS))}."
            )
    return problems
