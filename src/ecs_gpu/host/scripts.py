"""The bash the user data installs and the systemd units that run it at boot:
the host setup (install and start the host CloudWatch agent) and, with a warm
pool, the pre-pull and launch lifecycle hook; their retries and timeouts.
"""

from __future__ import annotations

import math
import re
import shlex
from typing import Final

from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.host.layout import (
    AGENT_CTL,
    AGENT_LOG,
    AGENT_PACKAGE,
    AGENT_UNIT,
    HOST_SETUP_LOG,
    IMDS_URL,
    NVIDIA_SMI,
    SETUP_SCRIPT_PATH,
    SETUP_UNIT,
    WARM_SCRIPT_PATH,
    WARM_UNIT,
)
from ecs_gpu.spec import Spec

# The scripts' headers name ecs_gpu.infra.host, whatever module renders them:
# the text ships in the user data, and a changed user data is a new launch
# template version, so an instance refresh of every fleet.

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
