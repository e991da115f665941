#!/usr/bin/env bash
# ecs-gpu doctor host probe: READ-ONLY. Runs through SSM Run Command
# (AWS-RunShellScript) on a GPU container instance and prints sections that
# ecs_gpu/host/probe.py parses. It changes nothing: no restarts, no writes.
# Output stays well under SSM's 24,000-character StandardOutputContent limit:
# the nvidia-smi XML is gzip+base64 encoded, logs and lists are tailed.
set -u

# The host agent's config path comes from the caller (ecs_gpu.contracts.gpu_metric).
agent_config=${ECS_GPU_AGENT_CONFIG:-}
agent_log=/opt/aws/amazon-cloudwatch-agent/logs/amazon-cloudwatch-agent.log

begin() { echo "@@ecs-gpu-probe begin $1"; }
# The exit code goes in the end line after the output, so a failing command
# never hides the next section. The leading newline keeps the marker on its
# own line when the output lacks a final newline (the parser drops it).
end() { printf '\n@@ecs-gpu-probe end %s rc=%s\n' "$1" "$2"; }

nvidia_smi_xml() {
  if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "nvidia-smi: command not found"
    return 127
  fi
  if command -v gzip >/dev/null 2>&1 && command -v base64 >/dev/null 2>&1; then
    echo "encoding: gzip+base64"
    nvidia-smi -q -x | gzip -c | base64 -w 0
    local rc=${PIPESTATUS[0]}
    echo
    return "${rc}"
  fi
  echo "encoding: plain"
  nvidia-smi -q -x
}

docker_runtimes() {
  # Only the two lines that decide whether NVIDIA env vars do anything.
  docker info 2>&1 | grep -iE '^ *(Default Runtime|Runtimes):'
  return "${PIPESTATUS[0]}"
}

agent_config_file() {
  if [ -z "${agent_config}" ]; then
    echo "ECS_GPU_AGENT_CONFIG is not set"
    return 2
  fi
  cat -- "${agent_config}"
}

agent_log_tail() {
  tail -n 40 -- "${agent_log}"
}

container_statuses() {
  docker ps -a --format '{{.Status}} :: {{.Names}}' | head -n 60
  return "${PIPESTATUS[0]}"
}

ecs_config() {
  # Values of auth keys are registry credentials: print the key only.
  local f
  for f in /etc/ecs/ecs.config /var/lib/ecs/ecs.config; do
    if [ -r "${f}" ]; then
      echo "# ${f}"
      sed -E 's/^(ECS_ENGINE_AUTH_DATA|ECS_ENGINE_AUTH_TYPE)=.*/\1=<redacted>/' -- "${f}"
    else
      echo "# ${f} (absent)"
    fi
  done
}

begin nvidia_smi_path; command -v nvidia-smi 2>&1; end nvidia_smi_path $?
begin nvidia_smi; nvidia_smi_xml 2>&1; end nvidia_smi $?
begin docker_info; docker_runtimes; end docker_info $?
begin ecs_active; systemctl is-active ecs 2>&1; end ecs_active $?
begin agent_active; systemctl is-active amazon-cloudwatch-agent 2>&1; end agent_active $?
begin agent_config; agent_config_file 2>&1; end agent_config $?
begin agent_log; agent_log_tail 2>&1; end agent_log $?
begin containers; container_statuses 2>&1; end containers $?
begin ecs_config; ecs_config 2>&1; end ecs_config $?
exit 0
