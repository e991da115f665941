"""What runs on each GPU instance: ecs.config, the host CloudWatch agent, the user data.

Pure Python (no CDK): ``GpuService`` embeds :func:`cloud_config` as the launch
template's user data, and ``validate``/``doctor`` can call
:func:`validate_agent_config` without starting Node.

The field reports behind the shape of this module (docs/host.md):

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

import base64
import binascii
import functools
import gzip
import json
import math
import re
import shlex
from collections.abc import Mapping
from importlib import resources
from typing import Any, Final

import yaml

from ecs_gpu import catalog, gpu_metric
from ecs_gpu.deflate import gzip_bytes
from ecs_gpu.naming import Names
from ecs_gpu.spec import Spec

ECS_CONFIG_PATH: Final = "/etc/ecs/ecs.config"
# cloud-init's write_files encoding for gzip then base64 (its schema's
# "gz+b64"): the scripts and units travel compressed, which keeps the launch
# template, and so the whole template, under CloudFormation's TemplateBody
# limit (docs/host.md "Size").
GZ_B64: Final = "gz+b64"
SETUP_SCRIPT_PATH: Final = "/usr/local/sbin/ecs-gpu-host-setup"
SETUP_UNIT: Final = "ecs-gpu-host-setup.service"
WARM_SCRIPT_PATH: Final = "/usr/local/sbin/ecs-gpu-warm-pool"
WARM_UNIT: Final = "ecs-gpu-warm-pool.service"
SYSTEMD_DIR: Final = "/etc/systemd/system"
# The units' output: a file the host agent ships (HOST_LOG_FILES), since
# cloud-init-output.log no longer sees it.
HOST_SETUP_LOG: Final = "/var/log/ecs-gpu-host-setup.log"
ECS_UNIT: Final = "ecs.service"
IMDS_URL: Final = "http://169.254.169.254/latest"
AGENT_PACKAGE: Final = "amazon-cloudwatch-agent"
AGENT_UNIT: Final = "amazon-cloudwatch-agent"
AGENT_CTL: Final = "/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl"
AGENT_LOG: Final = "/opt/aws/amazon-cloudwatch-agent/logs/amazon-cloudwatch-agent.log"
# The directory fetch-config owns: it translates our JSON into files here and
# replaced a second agent's config file in it with an empty directory in the
# reference module (commit 74c62f0). No file of ours may live under it.
AGENT_OWNED_DIR: Final = "/opt/aws/amazon-cloudwatch-agent/etc/"
# The nvidia_gpu collector stats this exact path and the agent exits at start
# without it ("Cannot get file's stat /usr/bin/nvidia-smi", field report).
NVIDIA_SMI: Final = "/usr/bin/nvidia-smi"

# dnf retries: boot-time networking and mirrors can flake. Bounded, so a
# broken mirror ends in a logged failure rather than a script that never ends
# (the unit runs beside ECS registration, not before it).
SETUP_ATTEMPTS: Final = 4
SETUP_FIRST_DELAY_S: Final = 5
DNF_TIMEOUT_S: Final = 180
# What retry sleeps between SETUP_ATTEMPTS attempts, doubling: 5 + 10 + 20 s.
RETRY_DELAYS_S: Final[int] = sum(SETUP_FIRST_DELAY_S * 2**i for i in range(SETUP_ATTEMPTS - 1))
# One warm-pool pull attempt: 1.5 x [simulation] image_pull_s + 60 s, so the
# expected pull fits in one attempt with room for a slow registry.
PULL_FACTOR: Final = 1.5
PULL_MARGIN_S: Final = 60
# The launch hook's heartbeat must outlast every pull attempt: EC2 Auto
# Scaling does not wait for user data, and the script sends no heartbeat. This
# margin covers the rest of the hook's wait: boot, IMDS, SSM and the ECR login.
HOOK_MARGIN_S: Final = 300
# The heartbeat timeouts EC2 Auto Scaling accepts.
HOOK_MIN_S: Final = 30
HOOK_MAX_S: Final = 7200
# How often the warm-pool scripts read the target lifecycle state again: while
# IMDS has none yet (404), and while a Running pool's instance waits for service.
WARM_POLL_S: Final = 5
# What the setup script takes when nothing fails: dnf metadata plus the agent
# package on a fresh instance, then fetch-config. An estimate the
# missing-metric alarm budgets for (observability.py), not a measurement.
SETUP_TYPICAL_S: Final = 90

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


def warm_pool_hook_name(spec: Spec) -> str:
    """The ASG's launch lifecycle hook, which the warm-pool unit completes on every boot."""
    return f"{Names(spec.service.name).asg}-launch"


def pull_timeout_s(spec: Spec) -> int:
    """Seconds one warm-pool ``docker pull`` attempt may take before it is retried.

    1.5 x ``image_pull_s`` + 60 s, shrunk when need be so that every attempt
    and the retry delays fit in the longest heartbeat (:func:`hook_timeout_s`).
    """
    wanted = math.ceil(PULL_FACTOR * spec.simulation.image_pull_s) + PULL_MARGIN_S
    fits = (HOOK_MAX_S - RETRY_DELAYS_S - HOOK_MARGIN_S) // SETUP_ATTEMPTS
    return min(wanted, fits)


def hook_timeout_s(spec: Spec) -> int:
    """Heartbeat timeout of the launch lifecycle hook (warm pool only).

    Every pull attempt, the retry delays between them and HOOK_MARGIN_S: the
    hook never cuts off an attempt the script would still make. At most
    HOOK_MAX_S by :func:`pull_timeout_s`'s cap.
    """
    return SETUP_ATTEMPTS * pull_timeout_s(spec) + RETRY_DELAYS_S + HOOK_MARGIN_S


def image_parameter_name(spec: Spec) -> str:
    """SSM parameter holding the service image for the warm-pool pre-pull.

    Read at boot instead of written into user data: an image in user data
    would make every image bump a new launch-template version, and so an
    instance refresh of the whole GPU fleet.
    """
    return f"/ecs-gpu/{spec.service.name}/image"


# <account>.dkr.ecr.<region>.amazonaws.com[.cn]/...: a private ECR image,
# which needs a registry login before docker can pull it on the host.
_ECR_REGISTRY_RE: Final = re.compile(
    r"^(?P<registry>\d{12}\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(?:\.cn)?)/"
)


def ecr_registry(image: str) -> tuple[str, str] | None:
    """(registry host, region) of a private ECR image; None for any other registry."""
    m = _ECR_REGISTRY_RE.match(image)
    return (m["registry"], m["region"]) if m else None


def ecs_config(spec: Spec) -> str:
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
    return "\n".join(lines) + "\n"


# Boot-time networking can flake: both host scripts retry with doubling delays,
# boundedly (MAX_ATTEMPTS, FIRST_DELAY_S and log() are each script's own).
# log() writes to stderr: retry runs inside $(...) for values the scripts read
# back, which must hold the value alone.
_BASH_RETRY = """retry() {
  local attempt=1
  local delay=$FIRST_DELAY_S
  until "$@"; do
    if [ "$attempt" -ge "$MAX_ATTEMPTS" ]; then
      log "giving up after $attempt attempts: $*"
      return 1
    fi
    log "attempt $attempt failed: $*; retrying in ${delay}s"
    sleep "$delay"
    attempt=$((attempt + 1))
    delay=$((delay * 2))
  done
}
"""

# The target lifecycle state, read as the ECS agent reads it: IMDS answers 404
# until EC2 Auto Scaling sets it, so a 404 is polled every POLL_S, STATE_POLLS
# times at most (the hook's heartbeat, after which it has gone on without us);
# any other failure goes to the bounded retry (aws/amazon-ecs-agent
# agent/app/agent.go pollUntilTargetLifecyclePresent). IMDSv2 only, a fresh
# token per read: a Running pool's instance may wait for days. Needs IMDS,
# POLL_S, STATE_POLLS, log and retry.
_BASH_TARGET_STATE = """imds_token() {
  curl -sSf -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 60" "$IMDS/api/token"
}
read_target_state() {
  local token out
  token=$(imds_token) || return 1
  out=$(curl -sS -w '\\n%{http_code}' -H "X-aws-ec2-metadata-token: $token" \\
    "$IMDS/meta-data/autoscaling/target-lifecycle-state") || return 1
  case "${out##*$'\\n'}" in
    200) printf '%s\\n' "${out%$'\\n'*}" ;;
    404) ;;
    *)
      log "target-lifecycle-state: HTTP ${out##*$'\\n'}"
      return 1
      ;;
  esac
}
target_state() {
  local state
  local polls=0
  while state=$(retry read_target_state); do
    if [ -n "$state" ]; then
      printf '%s\\n' "$state"
      return 0
    fi
    if [ "$polls" -ge "$STATE_POLLS" ]; then
      log "no target lifecycle state after $polls polls"
      return 1
    fi
    polls=$((polls + 1))
    sleep "$POLL_S"
  done
  return 1
}
"""


def _without_comments(script: str) -> str:
    """``script`` less its full-line comments after the header, which is what ships.

    The comments stay in this module's source, where they are read; on the
    instance they would only cost template bytes. The shebang and the header
    (every line before ``set -euo pipefail``) stay, so a script read on an
    instance still says what it is and where it comes from. Safe for our
    scripts: none has a heredoc or a quoted line that starts with ``#``, and
    shellcheck runs on the stripped text.
    """
    head, sep, body = script.partition("\nset -euo pipefail\n")
    kept = [line for line in body.splitlines() if not line.lstrip().startswith("#")]
    return head + sep + "\n".join(kept) + "\n"


def setup_script(spec: Spec) -> str:
    """Bash run by :data:`SETUP_UNIT` at boot: install and start the host CloudWatch agent.

    With a warm pool, a warming instance installs the agent but does not start
    it: its idle GPUs would report ~0 % into the group's GPU series and pull the
    scaling signal down. The warm-pool script starts this unit again once the
    instance enters service.
    """
    q = shlex.quote
    warm_guard = (
        ""
        if spec.capacity.warm_pool is None
        else f"""
# A warming instance (target state Warmed:*) must not publish: its idle GPUs
# would lower the group's GPU average. {WARM_UNIT} starts this unit again
# when the instance enters service.
readonly IMDS={q(IMDS_URL)}
readonly POLL_S={WARM_POLL_S}
readonly STATE_POLLS={hook_timeout_s(spec) // WARM_POLL_S}
{_BASH_TARGET_STATE}
state=$(target_state)
case "$state" in
  Warmed:*)
    log "target state $state: agent installed, not started until the instance is in service"
    exit 0
    ;;
esac
"""
    )
    return _without_comments(f"""#!/usr/bin/env bash
# ecs-gpu host setup for service {spec.service.name}: install and start the host
# CloudWatch agent that publishes the GPU metric and ships the host logs.
# Generated by ecs-gpu (ecs_gpu.infra.host); the systemd unit {SETUP_UNIT} runs it
# at every boot, beside the ECS agent, never before it.
# It never restarts docker, containerd or ecs: ecs.service is PartOf=docker.service.
set -euo pipefail

readonly AGENT_CONFIG={q(gpu_metric.AGENT_CONFIG_PATH)}
readonly AGENT_CTL={q(AGENT_CTL)}
readonly AGENT_UNIT={q(AGENT_UNIT)}
readonly AGENT_LOG={q(AGENT_LOG)}
readonly NVIDIA_SMI={q(NVIDIA_SMI)}
readonly MAX_ATTEMPTS={SETUP_ATTEMPTS}
readonly FIRST_DELAY_S={SETUP_FIRST_DELAY_S}
readonly DNF_TIMEOUT_S={DNF_TIMEOUT_S}

log() {{
  printf 'ecs-gpu-host-setup: %s\\n' "$*" >&2
}}

# Boot-time networking can flake: retry with doubling delays, but boundedly.
{_BASH_RETRY}
# The nvidia_gpu collector needs this exact path; without it the agent exits.
if [ ! -x "$NVIDIA_SMI" ]; then
  log "$NVIDIA_SMI not found: this instance is not on the ECS GPU-optimized AMI," \\
    "so no GPU metric can be collected"
  exit 1
fi

# A warm-pool instance runs this unit again at each start: install once.
if rpm -q --quiet {q(AGENT_PACKAGE)}; then
  log "{AGENT_PACKAGE} is already installed"
else
  retry timeout "$DNF_TIMEOUT_S" dnf install -y {q(AGENT_PACKAGE)}
fi
{warm_guard}
# fetch-config translates our one config file into the agent's own directory
# and (-s) enables and restarts only the agent's unit.
"$AGENT_CTL" -a fetch-config -m ec2 -s -c "file:$AGENT_CONFIG"

if ! systemctl is-active --quiet "$AGENT_UNIT"; then
  log "$AGENT_UNIT is not running after fetch-config; see $AGENT_LOG"
  exit 1
fi
log "$AGENT_UNIT is running with $AGENT_CONFIG"
""")


def warm_pool_script(spec: Spec) -> str:
    """Bash run by :data:`WARM_UNIT` at every boot of a warm-pool group's instance.

    While the instance warms (target state ``Warmed:*``) it pulls the service
    image, so a warm start pulls nothing; then, on every boot, it completes
    the launch lifecycle hook, without which EC2 Auto Scaling would stop the
    instance mid-pull (it does not wait for user data) and would hold a warm
    start in ``Pending:Wait`` until the hook times out.
    """
    q = shlex.quote
    registry = ecr_registry(spec.service.image)
    ecr_host, ecr_region = registry if registry else ("", "")
    return _without_comments(f"""#!/usr/bin/env bash
# ecs-gpu warm-pool hook for service {spec.service.name}: pre-pull the service image while
# the instance warms, then complete the launch lifecycle hook. Generated by ecs-gpu
# (ecs_gpu.infra.host); the systemd unit {WARM_UNIT} runs it at every boot.
# It never restarts docker, containerd or ecs, and runs no container.
set -euo pipefail

readonly ASG_NAME={q(Names(spec.service.name).asg)}
readonly HOOK_NAME={q(warm_pool_hook_name(spec))}
readonly IMAGE_PARAMETER={q(image_parameter_name(spec))}
readonly ECR_REGISTRY={q(ecr_host)}
readonly ECR_REGION={q(ecr_region)}
readonly IMDS={q(IMDS_URL)}
readonly MAX_ATTEMPTS={SETUP_ATTEMPTS}
readonly FIRST_DELAY_S={SETUP_FIRST_DELAY_S}
readonly DNF_TIMEOUT_S={DNF_TIMEOUT_S}
readonly PULL_TIMEOUT_S={pull_timeout_s(spec)}
readonly POLL_S={WARM_POLL_S}
readonly STATE_POLLS={hook_timeout_s(spec) // WARM_POLL_S}

log() {{
  printf 'ecs-gpu-warm-pool: %s\\n' "$*" >&2
}}

{_BASH_RETRY}
# IMDSv2 only (the launch template requires it); a fresh token per read,
# since a Running pool's instance may wait here for days.
{_BASH_TARGET_STATE}
metadata() {{
  local token
  token=$(imds_token) && curl -sSf -H "X-aws-ec2-metadata-token: $token" "$IMDS/meta-data/$1"
}}

complete_hook() {{
  # No pending action (a reboot while in service) is not an error.
  if retry aws autoscaling complete-lifecycle-action --region "$region" \\
    --auto-scaling-group-name "$ASG_NAME" --lifecycle-hook-name "$HOOK_NAME" \\
    --instance-id "$instance_id" --lifecycle-action-result CONTINUE; then
    log "completed lifecycle hook $HOOK_NAME ($1)"
  else
    log "no lifecycle action completed for $HOOK_NAME ($1)"
  fi
}}

if ! command -v aws >/dev/null 2>&1; then
  retry timeout "$DNF_TIMEOUT_S" dnf install -y awscli-2
fi

instance_id=$(retry metadata instance-id)
region=$(retry metadata placement/region)
# Warmed:Stopped (or :Running, :Hibernated) while warming; InService when the
# instance is leaving the pool or was launched straight into the group.
# A 404 (not set yet) is waited out, as the ECS agent does.
state=$(target_state)
log "instance $instance_id, target lifecycle state $state"

ecr_login() {{
  aws ecr get-login-password --region "$ECR_REGION" |
    docker login --username AWS --password-stdin "$ECR_REGISTRY"
}}

case "$state" in
  Warmed:*)
    image=$(retry aws ssm get-parameter --region "$region" --name "$IMAGE_PARAMETER" \\
      --query Parameter.Value --output text)
    if [ -n "$ECR_REGISTRY" ]; then
      retry ecr_login
    fi
    # A failed pull is not fatal: the task then pulls the image when it starts.
    if retry timeout "$PULL_TIMEOUT_S" docker pull "$image"; then
      log "pulled $image; a warm start will not pull it again"
    else
      log "could not pull $image; a task on this instance will pull it at start"
    fi
    complete_hook "$state"
    # Stopped pool: the instance stops here and this unit runs again at the
    # warm start. Running pool: it enters service without a reboot, so wait.
    until [ "$(metadata autoscaling/target-lifecycle-state || true)" = InService ]; do
      sleep "$POLL_S"
    done
    log "entering service"
    # The host agent was held back while warming (see {SETUP_UNIT}).
    systemctl start --no-block {q(SETUP_UNIT)}
    ;;
esac

complete_hook InService
""")


def systemd_unit(description: str, script: str, *, after: tuple[str, ...] = ()) -> str:
    """A unit that runs ``script`` at boot without holding anything back.

    ``Type=exec``: systemd counts the unit started as soon as the script runs,
    so multi-user.target (and whatever cloud-final or ecs.service is ordered
    after) never waits for dnf, a registry or a lifecycle hook. No
    ``Before=``: nothing is ordered after it.
    """
    order = " ".join(("network-online.target", *after))
    return f"""[Unit]
Description={description}
Wants={order}
After={order}

[Service]
Type=exec
ExecStart={script}
StandardOutput=append:{HOST_SETUP_LOG}
StandardError=append:{HOST_SETUP_LOG}

[Install]
WantedBy=multi-user.target
"""


def units(spec: Spec) -> dict[str, str]:
    """Unit name -> unit file, every unit the user data installs and enables."""
    out = {
        SETUP_UNIT: systemd_unit(
            "ecs-gpu host setup: the host CloudWatch agent", SETUP_SCRIPT_PATH
        ),
    }
    if spec.capacity.warm_pool is not None:
        # docker.service: the pre-pull needs the daemon, which ecs.service
        # starts anyway; Wants starts it, never restarts it.
        out[WARM_UNIT] = systemd_unit(
            "ecs-gpu warm pool: pre-pull the service image, complete the launch hook",
            WARM_SCRIPT_PATH,
            after=("docker.service",),
        )
    return out


def cloud_config_document(spec: Spec) -> dict[str, Any]:
    """The cloud-config as data (what :func:`cloud_config` serializes)."""

    def file(
        path: str, content: str, permissions: str | None = None, *, packed: bool = True
    ) -> dict[str, str]:
        # cloud-init's defaults (its schema): owner root:root, permissions
        # 0644. Left out rather than repeated: every byte counts toward the
        # template's size limit.
        entry = (
            {"path": path} if permissions is None else {"path": path, "permissions": permissions}
        )
        if packed:
            return {**entry, "encoding": GZ_B64, "content": gz_b64(content)}
        return {**entry, "content": content}

    files = [
        # write_files runs in cloud-init's init stage, long before ecs.service:
        # on the ECS AMIs that unit is ordered After=cloud-final.service
        # (aws/amazon-ecs-agent@dd4d139 packaging/amazon-linux-ami-integrated/
        # ecs.service), so the agent reads ECS_CLUSTER from this file at its
        # first start. The same ordering means nothing here may wait.
        # Plain: a few lines that name the cluster, readable in the console's
        # user data view, and compression saves nothing on them.
        file(ECS_CONFIG_PATH, ecs_config(spec), packed=False),
        # Plain but compact: the GPU-metric contract test reads it from the
        # template (tests/infra/test_single_source.py).
        file(gpu_metric.AGENT_CONFIG_PATH, agent_config_json(spec), packed=False),
        file(SETUP_SCRIPT_PATH, setup_script(spec), "0755"),
    ]
    if spec.capacity.warm_pool is not None:
        files.append(file(WARM_SCRIPT_PATH, warm_pool_script(spec), "0755"))
    unit_files = units(spec)
    files += [file(f"{SYSTEMD_DIR}/{name}", text) for name, text in unit_files.items()]
    return {
        "write_files": files,
        # Exec form, no shell: the scripts are the only shell and are linted.
        # enable: the units run at every boot (a warm start is a second boot,
        # and cloud-init's runcmd runs once). --now --no-block: start them on
        # this first boot but only enqueue the job, so cloud-final, and the
        # ecs.service ordered after it, go on at once.
        "runcmd": [
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", "--now", "--no-block", *unit_files],
        ],
    }


def agent_config_json(spec: Spec) -> str:
    """The agent config file as written on the instance: compact JSON, one line."""
    return json.dumps(agent_config(spec), separators=(",", ":")) + "\n"


def gz_b64(text: str) -> str:
    """``text`` as cloud-init's ``gz+b64`` write_files content.

    Compressed by :mod:`ecs_gpu.deflate`, not :mod:`gzip`: the same files give
    the same bytes at every synth on every machine, since a changed user
    data is a new launch template version, and so an instance refresh.
    """
    return base64.b64encode(gzip_bytes(text.encode())).decode()


def file_content(entry: Mapping[str, Any]) -> str:
    """The text cloud-init writes for one ``write_files`` entry, decoded per its encoding.

    Raises ValueError for an encoding this module never writes or content
    that does not decode.
    """
    content = str(entry.get("content", ""))
    encoding = entry.get("encoding", "text/plain")
    if encoding == "text/plain":
        return content
    if encoding != GZ_B64:
        raise ValueError(f"write_files encoding {encoding!r} is not one ecs-gpu writes")
    try:
        return gzip.decompress(base64.b64decode(content, validate=True)).decode()
    except (binascii.Error, OSError, EOFError, UnicodeDecodeError) as e:
        raise ValueError(f"write_files content is not {GZ_B64}: {e}") from None


def written_files(user_data: str) -> dict[str, str]:
    """Path -> decoded text of every file a ``#cloud-config`` user data writes."""
    doc = yaml.safe_load(user_data)
    return {str(f["path"]): file_content(f) for f in doc.get("write_files", [])}


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings as literal blocks so the user data reads like the files."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def cloud_config(spec: Spec) -> str:
    """The full user data: ``#cloud-config`` followed by YAML."""
    body = yaml.dump(cloud_config_document(spec), Dumper=_Dumper, sort_keys=False, width=10_000)
    return "#cloud-config\n" + body


# --- validation ----------------------------------------------------------------------


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
