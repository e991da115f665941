"""Where things live on a GPU instance: files, systemd units, the agents' paths.

The scripts, the agent config, the user data and doctor's checks read them
here, so each path is spelled once.
"""

from __future__ import annotations

from typing import Final

ECS_CONFIG_PATH: Final = "/etc/ecs/ecs.config"
SETUP_SCRIPT_PATH: Final = "/usr/local/sbin/ecs-gpu-host-setup"
SETUP_UNIT: Final = "ecs-gpu-host-setup.service"
WARM_SCRIPT_PATH: Final = "/usr/local/sbin/ecs-gpu-warm-pool"
WARM_UNIT: Final = "ecs-gpu-warm-pool.service"
SYSTEMD_DIR: Final = "/etc/systemd/system"
# The units' output: a file the host agent ships (HOST_LOG_FILES), since the
# units run outside cloud-init, whose cloud-init-output.log does not see them.
HOST_SETUP_LOG: Final = "/var/log/ecs-gpu-host-setup.log"
ECS_UNIT: Final = "ecs.service"
IMDS_URL: Final = "http://169.254.169.254/latest"
AGENT_PACKAGE: Final = "amazon-cloudwatch-agent"
AGENT_UNIT: Final = "amazon-cloudwatch-agent"
AGENT_CTL: Final = "/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl"
AGENT_LOG: Final = "/opt/aws/amazon-cloudwatch-agent/logs/amazon-cloudwatch-agent.log"
# The directory fetch-config owns: it translates our JSON into files here and
# replaced a second agent's config file in it with an empty directory in the
# reference module (docs/host.md "Lessons from the field reports"). No file of
# ours may live under it.
AGENT_OWNED_DIR: Final = "/opt/aws/amazon-cloudwatch-agent/etc/"
# The nvidia_gpu collector stats this exact path and the agent exits at start
# without it ("Cannot get file's stat /usr/bin/nvidia-smi", field report).
NVIDIA_SMI: Final = "/usr/bin/nvidia-smi"
