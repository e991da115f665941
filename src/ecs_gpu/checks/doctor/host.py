"""Link 10, host: what the read-only probe saw on each instance (--probe-hosts)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ecs_gpu.checks.doctor.common import (
    collection_target,
    probe_sections,
    replace_instance,
    short_name,
)
from ecs_gpu.checks.doctor.registry import check
from ecs_gpu.checks.model import Check, Evidence, Finding, Unknown
from ecs_gpu.checks.snapshot import Snapshot
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.host import probe
from ecs_gpu.host.agent import validate_agent_config


@check(
    "HOST000",
    link="host",
    severity="warning",
    title="Host probe did not run",
    requires=("host_probes",),
    doc="The SSM command did not succeed on an instance.",
)
def _probe_ran(s: Snapshot, c: Check) -> list[Finding]:
    if not s["host_probes"]:
        # No instance was probed: "the probe ran everywhere" would be about nothing.
        raise Unknown("host_probes is empty: no instance was probed (ECS001 says whether any runs)")
    return [
        c.finding(
            [
                Evidence(
                    "host_probes",
                    iid,
                    "Status",
                    inv.get("Status") if isinstance(inv, dict) else inv,
                )
            ],
            "The SSM probe did not run on this instance: the SSM agent must be running and the "
            "instance role needs AmazonSSMManagedInstanceCore; you need ssm:SendCommand and "
            "ssm:GetCommandInvocation.",
        )
        for iid, inv in sorted(s["host_probes"].items())
        if not isinstance(inv, dict) or inv.get("Status") != "Success"
    ]


@check(
    "HOST001",
    link="host",
    severity="error",
    title="nvidia-smi fails on the host",
    requires=("host_probes",),
    doc="nvidia-smi is missing, fails, or lists no GPU on the host.",
)
def _nvidia_smi_host(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in probe_sections(s, "nvidia_smi").items():
        problem = None
        if sec.rc != 0:
            problem = sec.text.strip().splitlines()[-1] if sec.text.strip() else f"rc={sec.rc}"
        else:
            try:
                smi = probe.parse_nvidia_smi_xml(probe.decode_nvidia_smi_section(sec.text))
            except probe.ProbeParseError as e:
                problem = str(e)
            else:
                if not smi.gpus:
                    problem = "nvidia-smi lists no GPU"
        if problem:
            out.append(
                c.finding(
                    [Evidence("host_probes", iid, "nvidia_smi", problem)],
                    "nvidia-smi does not work on the host, so neither ECS nor the agent can see "
                    "a GPU: use the ECS GPU-optimized AMI on a GPU instance type, and check "
                    "`journalctl -u nvidia-kmod-load` / dmesg for a driver that failed to load.",
                )
            )
    return out


@check(
    "HOST002",
    link="host",
    severity="error",
    title="CloudWatch agent cannot find nvidia-smi",
    requires=("host_probes",),
    doc='The agent log says "Cannot get file\'s stat /usr/bin/nvidia-smi".',
)
def _agent_nvidia_stat(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in probe_sections(s, "agent_log").items():
        lines = probe.log_lines_matching(sec.text, probe.NVIDIA_SMI_STAT_ERROR, "nvidia-smi")
        if lines:
            out.append(
                c.finding(
                    [Evidence("host_probes", iid, "agent_log", lines[-1])],
                    "The CloudWatch agent cannot find nvidia-smi, so it exits and no GPU metric "
                    "is written. A containerized agent never gets the GPU on AL2023 (runc is "
                    "the default runtime and GPU injection follows ECS's GPU assignment): run "
                    "the agent on the host as the systemd service amazon-cloudwatch-agent, "
                    f"configured from {gpu_metric.AGENT_CONFIG_PATH}.",
                )
            )
    return out


@check(
    "HOST003",
    link="host",
    severity="error",
    title="A container is restarting in a loop",
    requires=("host_probes",),
    doc="docker ps -a shows one container exited non-zero 3 or more times.",
)
def _restart_loop(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in probe_sections(s, "containers").items():
        for loop in probe.restart_loops(sec.text):
            out.append(
                c.finding(
                    [
                        Evidence(
                            "host_probes",
                            iid,
                            f"containers[{loop.name}]",
                            f"{loop.exits} exits, e.g. {loop.example}",
                        )
                    ],
                    f"Container {loop.name} keeps dying. Read its last log "
                    f"(docker logs $(docker ps -aq --filter name={loop.name} | head -1)); a "
                    "CloudWatch agent container that exits 1 usually cannot see nvidia-smi "
                    "(HOST002).",
                )
            )
    return out


# How the agent logs a denied call: the AWS error code or IAM's message.
_DENIALS: Final = ("AccessDenied", "not authorized")


@check(
    "HOST004",
    link="host",
    severity="error",
    title="Instance role denied cloudwatch:PutMetricData",
    requires=("host_probes",),
    doc="The agent log shows AccessDenied for cloudwatch:PutMetricData.",
)
def _putmetricdata_denied(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in probe_sections(s, "agent_log").items():
        # One line must carry both the denial and PutMetricData: a denial of
        # another call next to an unrelated PutMetricData line is not this.
        lines = [
            line
            for line in sec.text.splitlines()
            if "PutMetricData" in line and any(d in line for d in _DENIALS)
        ]
        if lines:
            out.append(
                c.finding(
                    [Evidence("host_probes", iid, "agent_log", lines[-1].strip())],
                    "The instance role may not call cloudwatch:PutMetricData, so the GPU metric "
                    "is read and then dropped. Add to the instance role: Allow "
                    "cloudwatch:PutMetricData on * with Condition StringEquals "
                    f'{{"cloudwatch:namespace": "{gpu_metric.NAMESPACE}"}}.',
                )
            )
    return out


def _service_active(
    section: str, unit: str, fix: str
) -> Callable[[Snapshot, Check], list[Finding]]:
    def run(s: Snapshot, c: Check) -> list[Finding]:
        out = []
        for iid, sec in probe_sections(s, section).items():
            state = probe.parse_is_active(sec.text)
            if state != "active":
                out.append(
                    c.finding(
                        [Evidence("host_probes", iid, f"systemctl is-active {unit}", state)], fix
                    )
                )
        return out

    return run


check(
    "HOST005",
    link="host",
    severity="error",
    title="ECS agent is not active",
    requires=("host_probes",),
    doc="systemctl is-active ecs is not active.",
)(
    _service_active(
        "ecs_active",
        "ecs",
        "The ECS agent is down, so the instance runs no task. Run "
        "`systemctl start ecs`; never restart docker on a live host "
        "(ecs.service is PartOf=docker.service).",
    )
)


check(
    "HOST006",
    link="host",
    severity="error",
    title="Host CloudWatch agent is not active",
    requires=("host_probes",),
    doc="systemctl is-active amazon-cloudwatch-agent is not active.",
)(
    _service_active(
        "agent_active",
        "amazon-cloudwatch-agent",
        "The host CloudWatch agent is not running, so no GPU metric is written. "
        "Start it: amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s -c "
        f"file:{gpu_metric.AGENT_CONFIG_PATH}, then read its log.",
    )
)


@check(
    "HOST007",
    link="host",
    severity="error",
    title="Host agent config does not collect the GPU metric",
    requires=("host_probes",),
    doc="The agent config file is missing or differs from the GPU metric contract.",
)
def _agent_config(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in probe_sections(s, "agent_config").items():
        problems: list[str] = []
        if sec.rc != 0:
            problems.append(sec.text.strip() or f"cannot read {gpu_metric.AGENT_CONFIG_PATH}")
        else:
            try:
                cfg = probe.parse_agent_config(sec.text)
            except probe.ProbeParseError as e:
                problems.append(str(e))
            else:
                metrics = cfg.get("metrics", {})
                gpu = metrics.get("metrics_collected", {}).get("nvidia_gpu")
                if not isinstance(gpu, dict):
                    problems.append("metrics.metrics_collected.nvidia_gpu is absent")
                else:
                    have = {
                        m.get("name") if isinstance(m, dict) else m
                        for m in gpu.get("measurement", [])
                    }
                    lacking = [m for m in gpu_metric.MEASUREMENTS if m not in have]
                    if lacking:
                        problems.append(f"nvidia_gpu.measurement lacks {', '.join(lacking)}")
                ns = metrics.get("namespace", gpu_metric.NAMESPACE)
                if ns != gpu_metric.NAMESPACE:
                    problems.append(f"metrics.namespace is {ns!r}, not {gpu_metric.NAMESPACE!r}")
                if gpu_metric.DIMENSION not in metrics.get("append_dimensions", {}):
                    problems.append(f"metrics.append_dimensions lacks {gpu_metric.DIMENSION}")
                if [gpu_metric.DIMENSION] not in metrics.get("aggregation_dimensions", []):
                    problems.append(
                        f"metrics.aggregation_dimensions lacks [{gpu_metric.DIMENSION!r}]"
                    )
                # The agent's own schema, as the generator validates it (host/agent.py).
                problems += validate_agent_config(cfg, source=gpu_metric.AGENT_CONFIG_PATH)
        for p in problems:
            out.append(
                c.finding(
                    [Evidence("host_probes", iid, gpu_metric.AGENT_CONFIG_PATH, p)],
                    "The host agent's config does not produce the series the scaling policy "
                    f"tracks. Write the config ecs-gpu generates to {gpu_metric.AGENT_CONFIG_PATH} "
                    "and run amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s -c "
                    f"file:{gpu_metric.AGENT_CONFIG_PATH}, or replace the instance, which "
                    "launches from the current launch template: " + replace_instance(iid) + ".",
                )
            )
    return out


@check(
    "HOST008",
    link="host",
    severity="error",
    title="Docker has no nvidia runtime",
    requires=("host_probes",),
    doc="docker info Runtimes lacks nvidia.",
)
def _nvidia_runtime(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in probe_sections(s, "docker_info").items():
        rt = probe.parse_docker_info(sec.text)
        if "nvidia" not in rt.runtimes:
            out.append(
                c.finding(
                    [
                        Evidence(
                            "host_probes",
                            iid,
                            "docker info Runtimes",
                            list(rt.runtimes) or sec.text.strip(),
                        )
                    ],
                    "Docker has no nvidia runtime, so ECS cannot start a GPU container here: "
                    "use the ECS GPU-optimized AMI (it ships nvidia-container-toolkit).",
                )
            )
    return out


_NVIDIA_ENV = ("NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES")


@check(
    "HOST009",
    link="host",
    severity="error",
    title="NVIDIA env vars do nothing under runc",
    requires=("host_probes", "task_definitions"),
    doc="Default runtime is not nvidia and a container sets NVIDIA_* env without reserving a GPU.",
)
def _nvidia_env_inert(s: Snapshot, c: Check) -> list[Finding]:
    # Containers that expect NVIDIA env vars to give them a GPU without reserving one.
    hopeful = []
    for td in s.get("task_definitions", []):
        for cd in td.get("containerDefinitions", []):
            env: set[str] = {e.get("name", "") for e in cd.get("environment", [])}
            gpu = any(r.get("type") == "GPU" for r in cd.get("resourceRequirements", []))
            if env & set(_NVIDIA_ENV) and not gpu:
                hopeful.append(
                    (
                        short_name(td["taskDefinitionArn"]),
                        cd.get("name", "?"),
                        sorted(env & set(_NVIDIA_ENV)),
                    )
                )
    if not hopeful:
        return []
    out = []
    for iid, sec in probe_sections(s, "docker_info").items():
        rt = probe.parse_docker_info(sec.text)
        if rt.default_runtime == "nvidia":
            continue
        for td, name, names in hopeful:
            out.append(
                c.finding(
                    [
                        Evidence(
                            "host_probes", iid, "docker info Default Runtime", rt.default_runtime
                        ),
                        Evidence(
                            "task_definitions",
                            td,
                            f"containerDefinitions[{name}].environment",
                            names,
                        ),
                    ],
                    f"Docker's default runtime is {rt.default_runtime}, so {', '.join(names)} on "
                    f"container {name} does nothing: only the nvidia runtime reads them, and ECS "
                    "uses it only for containers that reserve a GPU. Reserve a GPU "
                    '(resourceRequirements [{"type": "GPU", "value": "1"}]) or, for telemetry, '
                    "run the collector on the host.",
                )
            )
    return out


@check(
    "HOST010",
    link="host",
    severity="error",
    title="ECS GPU support is not enabled",
    requires=("host_probes",),
    doc="Neither /etc/ecs/ecs.config nor /var/lib/ecs/ecs.config has ECS_ENABLE_GPU_SUPPORT=true.",
)
def _ecs_config_gpu(s: Snapshot, c: Check) -> list[Finding]:
    out = []
    for iid, sec in probe_sections(s, "ecs_config").items():
        files = probe.parse_ecs_config(sec.text)
        values = {path: kv.get("ECS_ENABLE_GPU_SUPPORT") for path, kv in files.items()}
        if not any(v == "true" for v in values.values()):
            out.append(
                c.finding(
                    [
                        Evidence(
                            "host_probes",
                            iid,
                            "ecs.config ECS_ENABLE_GPU_SUPPORT",
                            values or "no ecs.config",
                        )
                    ],
                    "ECS_ENABLE_GPU_SUPPORT=true is missing, so the agent registers no GPU: add "
                    "it to /etc/ecs/ecs.config in the launch template's user data and replace "
                    "the instance.",
                )
            )
    return out


@check(
    "HOST011",
    link="host",
    severity="error",
    title="Instance joins the wrong cluster",
    requires=("host_probes",),
    doc="ECS_CLUSTER in /etc/ecs/ecs.config differs from the service's cluster.",
)
def _ecs_config_cluster(s: Snapshot, c: Check) -> list[Finding]:
    cluster = collection_target(s).get("cluster")
    if not cluster:
        raise Unknown("the snapshot does not name the cluster")
    out = []
    for iid, sec in probe_sections(s, "ecs_config").items():
        files = probe.parse_ecs_config(sec.text)
        got = files.get("/etc/ecs/ecs.config", {}).get("ECS_CLUSTER")
        if got != cluster:
            out.append(
                c.finding(
                    [Evidence("host_probes", iid, "/etc/ecs/ecs.config ECS_CLUSTER", got)],
                    f"The instance registers with {got or 'the default cluster'!s}, not {cluster}: "
                    f"set ECS_CLUSTER={cluster} in the launch template's user data.",
                )
            )
    return out
