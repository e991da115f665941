"""The host layer: cloud-config user data, ecs.config, the setup script, the agent config.

Checked with the real tools a user's instance and CI would trust: Debian's
``cloud-init schema``, ``shellcheck``, the CloudWatch agent's own JSON schema,
and bash itself running the setup script against stand-in system commands.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from ecs_gpu import catalog, gpu_metric
from ecs_gpu.infra import host
from ecs_gpu.naming import Names
from ecs_gpu.spec import Spec, load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[1]

BUILT_SPEC = """
[service]
name = "llm-4gpu"
image = "example/llm:1"
gpus_per_task = 2
cpu_units = 8192
memory_mib = 65536

[capacity]
instance_type = "g6.12xlarge"
max_instances = 3

[scaling]
max_tasks = 6
gpu_target_percent = 55.5
cpu_target_percent = 80
"""


# The built spec with a warm pool and a private ECR image: the warm-pool unit,
# its script and the registry login are rendered and checked like the rest.
ECR_IMAGE = "123456789012.dkr.ecr.us-west-2.amazonaws.com/team/llm:1"
WARM_SPEC = (
    BUILT_SPEC.replace('image = "example/llm:1"', f'image = "{ECR_IMAGE}"')
    + "\n[capacity.warm_pool]\nmin_size = 1\n"
)

# Every example (the host contract holds on each) plus the specs built here.
EXAMPLES = sorted(p.name for p in (ROOT / "examples").glob("*.toml"))


@pytest.fixture(params=[*EXAMPLES, "built", "warm"])
def spec(request: pytest.FixtureRequest) -> Spec:
    if request.param == "built":
        return parse_spec(BUILT_SPEC, "built.toml")
    if request.param == "warm":
        return parse_spec(WARM_SPEC, "warm.toml")
    return load_spec(ROOT / "examples" / request.param)


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(
            f"{name} is not installed; scripts/test.sh installs it (apt-get install {name}). "
            "These checks run the real tool and are never skipped."
        )
    return path


def _write_files(user_data: str) -> dict[str, dict[str, Any]]:
    """path -> write_files entry, its content decoded as cloud-init writes it (gz+b64)."""
    doc = yaml.safe_load(user_data)
    return {f["path"]: {**f, "content": host.file_content(f)} for f in doc["write_files"]}


def _decoded_user_data(spec: Spec) -> str:
    """The user data with every file's decoded text appended: what the rule checks read."""
    user_data = host.cloud_config(spec)
    return "\n".join([user_data, *(f["content"] for f in _write_files(user_data).values())])


# --- cloud-init ------------------------------------------------------------------------


def _cloud_init_schema(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_tool("cloud-init"), "schema", "--config-file", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_user_data_is_cloud_config_accepted_by_cloud_init(spec: Spec, tmp_path: Path) -> None:
    user_data = host.cloud_config(spec)
    assert user_data.startswith("#cloud-config\n")
    path = tmp_path / "user-data.yaml"
    path.write_text(user_data)
    result = _cloud_init_schema(path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "error" not in output.lower(), output
    assert "Valid" in result.stdout, output


def test_cloud_init_schema_check_rejects_a_broken_config(tmp_path: Path) -> None:
    # Proves the check above can fail: a wrong type in write_files and runcmd.
    path = tmp_path / "broken.yaml"
    path.write_text(
        "#cloud-config\nwrite_files:\n  - path: /etc/x\n    content: x\n    permissions: 420\n"
        "runcmd: 3\n"
    )
    result = _cloud_init_schema(path)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "runcmd" in output and "permissions" in output


def test_user_data_fits_the_ec2_limit(spec: Spec) -> None:
    # EC2 refuses user data over 16 KB (before base64).
    assert len(host.cloud_config(spec).encode()) < 16 * 1024


def test_user_data_round_trips_to_the_rendered_files(spec: Spec) -> None:
    user_data = host.cloud_config(spec)
    files = _write_files(user_data)
    warm = spec.capacity.warm_pool is not None
    units = [host.SETUP_UNIT, *([host.WARM_UNIT] if warm else [])]
    assert set(files) == {
        host.ECS_CONFIG_PATH,
        gpu_metric.AGENT_CONFIG_PATH,
        host.SETUP_SCRIPT_PATH,
        *([host.WARM_SCRIPT_PATH] if warm else []),
        *(f"{host.SYSTEMD_DIR}/{u}" for u in units),
    }
    assert files[host.ECS_CONFIG_PATH]["content"] == host.ecs_config(spec)
    assert json.loads(files[gpu_metric.AGENT_CONFIG_PATH]["content"]) == host.agent_config(spec)
    assert files[host.SETUP_SCRIPT_PATH]["content"] == host.setup_script(spec)
    assert files[host.SETUP_SCRIPT_PATH]["permissions"] == "0755"
    if warm:
        assert files[host.WARM_SCRIPT_PATH]["content"] == host.warm_pool_script(spec)
        assert files[host.WARM_SCRIPT_PATH]["permissions"] == "0755"
    for u in units:
        assert files[f"{host.SYSTEMD_DIR}/{u}"]["content"] == host.units(spec)[u]
    # Everything else takes cloud-init's defaults: root:root, 0644.
    assert not any("owner" in f for f in files.values())
    assert {p for p, f in files.items() if "permissions" in f} == {
        host.SETUP_SCRIPT_PATH,
        *([host.WARM_SCRIPT_PATH] if warm else []),
    }
    # Exec form, so there is no other shell to lint; the units are only enqueued.
    assert yaml.safe_load(user_data)["runcmd"] == [
        ["systemctl", "daemon-reload"],
        ["systemctl", "enable", "--now", "--no-block", *units],
    ]


# --- shellcheck ------------------------------------------------------------------------


def _shellcheck(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.sh"
    path.write_text(script)
    return subprocess.run(
        [_tool("shellcheck"), "--severity=style", "--shell=bash", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_every_script_in_user_data_passes_shellcheck(spec: Spec, tmp_path: Path) -> None:
    scripts = [
        f for f in _write_files(host.cloud_config(spec)).values() if f.get("permissions") == "0755"
    ]
    assert len(scripts) == (2 if spec.capacity.warm_pool is not None else 1)
    for f in scripts:
        result = _shellcheck(f["content"], tmp_path)
        assert result.returncode == 0, f["path"] + "\n" + result.stdout + result.stderr


def test_every_runcmd_shell_string_passes_shellcheck(spec: Spec, tmp_path: Path) -> None:
    runcmd = yaml.safe_load(host.cloud_config(spec))["runcmd"]
    assert runcmd, "the setup script must be run"
    for entry in runcmd:
        if isinstance(entry, str):  # a string entry runs under sh -c
            result = _shellcheck("#!/bin/sh\n" + entry + "\n", tmp_path)
            assert result.returncode == 0, result.stdout
        else:
            assert all(isinstance(arg, str) for arg in entry)


def test_shellcheck_check_rejects_a_broken_script(tmp_path: Path) -> None:
    result = _shellcheck('#!/usr/bin/env bash\nd=$1\ncd $d\necho "$undefined_x"\n', tmp_path)
    assert result.returncode != 0
    assert "SC2086" in result.stdout


# --- the setup script, run by bash against stand-in system commands ----------------------


def _fake_bin(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text("#!/usr/bin/env bash\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _run_setup(
    spec: Spec,
    tmp_path: Path,
    *,
    nvidia_smi: bool,
    dnf_failures: int,
    states: list[str] | None = None,
    errors: Mapping[str, list[int]] | None = None,
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run the real script; dnf, timeout, sleep, systemctl and the agent ctl are stand-ins
    that record their arguments, so the script's own control flow is what is tested.
    ``states``: target lifecycle states IMDS answers (a warm-pool spec asks);
    ``errors``: see :func:`_imds_curl`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.log"
    if states is not None:
        _imds_curl(bin_dir, f'echo "$(basename "$0") $*" >> {calls}', tmp_path, states, errors)
    counter = tmp_path / "dnf-count"
    record = f'echo "$(basename "$0") $*" >> {calls}'
    _fake_bin(
        bin_dir,
        "dnf",
        f"{record}\nn=$(( $(cat {counter} 2>/dev/null || echo 0) + 1 ))\necho $n > {counter}\n"
        f"[ $n -gt {dnf_failures} ]",
    )
    _fake_bin(bin_dir, "timeout", f'{record}\nshift\nexec "$@"')
    _fake_bin(bin_dir, "sleep", record)
    _fake_bin(bin_dir, "systemctl", record)
    ctl = _fake_bin(bin_dir, "amazon-cloudwatch-agent-ctl", record)
    smi = _fake_bin(bin_dir, "nvidia-smi", "true") if nvidia_smi else bin_dir / "nvidia-smi"
    script = host.setup_script(spec)
    for line, new in (
        (f"readonly AGENT_CTL={host.AGENT_CTL}", f"readonly AGENT_CTL={ctl}"),
        (f"readonly NVIDIA_SMI={host.NVIDIA_SMI}", f"readonly NVIDIA_SMI={smi}"),
    ):
        assert line in script
        script = script.replace(line, new)
    path = tmp_path / "setup.sh"
    path.write_text(script)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    result = subprocess.run(
        ["bash", str(path)], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    lines = calls.read_text().splitlines() if calls.exists() else []
    return result, lines


def test_setup_script_installs_and_starts_only_the_agent(tmp_path: Path) -> None:
    spec = parse_spec(BUILT_SPEC, "built.toml")
    result, calls = _run_setup(spec, tmp_path, nvidia_smi=True, dnf_failures=2)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [c for c in calls if c.startswith("dnf")] == [
        "dnf install -y amazon-cloudwatch-agent"
    ] * 3
    assert [c for c in calls if c.startswith("sleep")] == ["sleep 5", "sleep 10"]
    assert (
        "amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s "
        f"-c file:{gpu_metric.AGENT_CONFIG_PATH}" in calls
    )
    systemctl = [c for c in calls if c.startswith("systemctl")]
    assert systemctl == ["systemctl is-active --quiet amazon-cloudwatch-agent"]


def test_setup_script_gives_up_after_bounded_retries(tmp_path: Path) -> None:
    spec = parse_spec(BUILT_SPEC, "built.toml")
    result, calls = _run_setup(spec, tmp_path, nvidia_smi=True, dnf_failures=99)
    assert result.returncode != 0
    assert len([c for c in calls if c.startswith("dnf")]) == host.SETUP_ATTEMPTS
    assert not any("fetch-config" in c for c in calls)
    assert f"giving up after {host.SETUP_ATTEMPTS} attempts" in result.stderr
    # log() writes to stderr, so $(retry ...) reads back the value alone.
    assert result.stdout == ""


def test_setup_script_refuses_a_host_without_nvidia_smi(tmp_path: Path) -> None:
    spec = parse_spec(BUILT_SPEC, "built.toml")
    result, calls = _run_setup(spec, tmp_path, nvidia_smi=False, dnf_failures=0)
    assert result.returncode == 1
    assert "not on the ECS GPU-optimized AMI" in result.stderr
    assert calls == []


# --- the agent config ------------------------------------------------------------------


def test_agent_config_validates_against_the_agent_schema(spec: Spec) -> None:
    assert host.validate_agent_config(host.agent_config(spec)) == []


def test_agent_schema_is_the_copied_upstream_file() -> None:
    schema = host.agent_schema()
    assert schema["$schema"].startswith("http://json-schema.org/draft-04")
    notice = ROOT / "src" / "ecs_gpu" / "data" / "cloudwatch-agent" / "NOTICE"
    text = notice.read_text()
    assert "aws/amazon-cloudwatch-agent" in text and "ab55b8daa" in text
    assert "MIT License" in text


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (lambda c: c["metrics"].__setitem__("namespace", 5), "$.metrics.namespace", "string"),
        (
            lambda c: c["logs"]["logs_collected"]["files"]["collect_list"][0].__setitem__(
                "file", "/var/log/x"
            ),
            "$.logs.logs_collected.files.collect_list[0]",
            "additional properties",
        ),
        (
            lambda c: c["metrics"]["metrics_collected"]["nvidia_gpu"].pop("measurement"),
            "$.metrics.metrics_collected.nvidia_gpu",
            "required",
        ),
        (
            lambda c: c["metrics"]["metrics_collected"]["nvidia_gpu"]["measurement"].append(
                "utilisation_gpu"
            ),
            "$.metrics.metrics_collected.nvidia_gpu.measurement[3]",
            "utilization_gpu",
        ),
    ],
    ids=["wrong-type", "unknown-key", "missing-required", "misspelt-measurement"],
)
def test_broken_agent_config_is_rejected(mutate: Any, path: str, words: str) -> None:
    cfg = host.agent_config(parse_spec(BUILT_SPEC, "built.toml"))
    mutate(cfg)
    problems = host.validate_agent_config(cfg, source="agent.json")
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"agent.json: {path}")
    assert words.lower() in problems[0].lower()
    assert "Fix:" in problems[0]


def test_agent_config_follows_the_metric_contract(spec: Spec) -> None:
    cfg = host.agent_config(spec)
    metrics = cfg["metrics"]
    assert metrics["namespace"] == gpu_metric.NAMESPACE
    assert metrics["append_dimensions"] == {gpu_metric.DIMENSION: gpu_metric.APPEND_DIMENSION_VALUE}
    assert metrics["aggregation_dimensions"] == [[gpu_metric.DIMENSION]]
    assert metrics["force_flush_interval"] == gpu_metric.FORCE_FLUSH_INTERVAL_S
    assert list(metrics["metrics_collected"]) == ["nvidia_gpu"]
    nvidia = metrics["metrics_collected"]["nvidia_gpu"]
    assert tuple(nvidia["measurement"]) == gpu_metric.MEASUREMENTS
    assert nvidia["metrics_collection_interval"] == gpu_metric.COLLECTION_INTERVAL_S
    emitted = tuple(gpu_metric.metric_name(m) for m in nvidia["measurement"])
    assert emitted == gpu_metric.METRIC_NAMES
    assert cfg["agent"]["run_as_user"] == "root"


def test_agent_ships_the_host_logs_to_the_host_log_group(spec: Spec) -> None:
    collect = host.agent_config(spec)["logs"]["logs_collected"]["files"]["collect_list"]
    paths = {c["file_path"] for c in collect}
    assert {
        "/var/log/ecs/ecs-agent.log*",
        "/var/log/ecs/ecs-init.log",
        "/var/log/cloud-init-output.log",
        host.AGENT_LOG,
    } <= paths
    assert {c["log_group_name"] for c in collect} == {Names(spec.service.name).host_log_group}
    streams = [c["log_stream_name"] for c in collect]
    assert len(set(streams)) == len(streams)
    assert all(s.startswith("{instance_id}/") for s in streams)
    # The stack owns the group and its retention: the agent needs no
    # CreateLogGroup or PutRetentionPolicy, only the calls GpuService grants.
    assert all("retention_in_days" not in c and "log_group_class" not in c for c in collect)
    assert "logs:CreateLogGroup" not in host.AGENT_LOG_ACTIONS


# --- ecs.config ------------------------------------------------------------------------


def test_ecs_config_registers_gpus_in_the_named_cluster(spec: Spec) -> None:
    text = host.ecs_config(spec)
    lines = text.splitlines()
    # A systemd EnvironmentFile: plain KEY=value lines only.
    assert all(re.fullmatch(r"ECS_[A-Z_]+=\S+", line) for line in lines), lines
    env = dict(line.split("=", 1) for line in lines)
    assert len(env) == len(lines)
    assert env["ECS_CLUSTER"] == Names(spec.service.name).cluster
    assert env["ECS_ENABLE_GPU_SUPPORT"] == "true"
    assert env["ECS_RESERVED_MEMORY"] == str(catalog.ECS_RESERVED_MEMORY_MIB)
    if spec.capacity.warm_pool is None:
        # Without a warm pool the flag only delays registration, and
        # prefer-cached would run a stale image for a moved tag.
        assert "ECS_WARM_POOLS_CHECK" not in env
        assert "ECS_IMAGE_PULL_BEHAVIOR" not in env
    else:
        # The ECS docs' requirement; and a warm start pulls nothing.
        assert env["ECS_WARM_POOLS_CHECK"] == "true"
        assert env["ECS_IMAGE_PULL_BEHAVIOR"] == "prefer-cached"


# --- the field reports' hard rules ------------------------------------------------------

_PARTOF_DOCKER = r"(docker|containerd|ecs)(\.service|\.socket)?"
_FORBIDDEN = {
    "restarts or stops docker, containerd or ecs (ecs.service is PartOf=docker.service)": (
        r"systemctl\s+(?:--\S+\s+)*(?:restart|stop|reload|try-restart|reload-or-restart|"
        r"try-reload-or-restart|kill|disable|mask)\s+(?:\S+\s+)*?" + _PARTOF_DOCKER + r"\b"
    ),
    "uses the SysV service wrapper on docker or ecs": r"\bservice\s+" + _PARTOF_DOCKER + r"\s",
    "edits docker's daemon.json": r"daemon\.json|/etc/docker/",
    "runs a container (a GPU needs an ECS GPU reservation)": (
        # One command line: the warm-pool script's `docker pull` is followed,
        # lines later, by prose about a warm "start".
        r"\b(?:docker|podman|nerdctl|ctr)[ \t]+(?:\S+[ \t]+)*?(?:run|create|start)\b"
    ),
    "writes into the directory fetch-config owns": re.escape(host.AGENT_OWNED_DIR),
    "appends a second agent config": r"append-config",
}


def _forbidden_host_actions(user_data: str) -> list[str]:
    return [why for why, pattern in _FORBIDDEN.items() if re.search(pattern, user_data)]


def test_user_data_breaks_none_of_the_field_report_rules(spec: Spec) -> None:
    assert _forbidden_host_actions(_decoded_user_data(spec)) == []


@pytest.mark.parametrize(
    "bad",
    [
        "systemctl restart docker",
        "systemctl --no-block try-restart docker.service",
        "service docker restart",
        "systemctl stop ecs",
        "cat > /etc/docker/daemon.json <<EOF",
        "docker run -d public.ecr.aws/cloudwatch-agent/cloudwatch-agent",
        "cp x /opt/aws/amazon-cloudwatch-agent/etc/amazon-cloudwatch-agent.json",
        "amazon-cloudwatch-agent-ctl -a append-config -c file:/etc/other.json",
    ],
)
def test_rule_check_catches_each_forbidden_action(spec: Spec, bad: str) -> None:
    # Proves the rule check above can fail.
    assert _forbidden_host_actions(_decoded_user_data(spec) + "\n" + bad + "\n") != []


def test_one_agent_config_outside_the_fetch_config_directory(spec: Spec) -> None:
    assert not gpu_metric.AGENT_CONFIG_PATH.startswith(host.AGENT_OWNED_DIR)
    files = _write_files(host.cloud_config(spec))
    agent_files = [
        path
        for path, f in files.items()
        if path.endswith(".json") and {"metrics", "logs"} & set(json.loads(f["content"]))
    ]
    assert agent_files == [gpu_metric.AGENT_CONFIG_PATH]
    assert not any(p.startswith("/opt/aws/") for p in files)
    script = host.setup_script(spec)
    assert f"readonly AGENT_CONFIG={gpu_metric.AGENT_CONFIG_PATH}\n" in script
    ctl_calls = [line for line in script.splitlines() if line.startswith('"$AGENT_CTL"')]
    assert ctl_calls == ['"$AGENT_CTL" -a fetch-config -m ec2 -s -c "file:$AGENT_CONFIG"']


def test_gpu_collection_runs_on_the_host_not_in_a_container(spec: Spec) -> None:
    script = host.setup_script(spec)
    assert "dnf install -y amazon-cloudwatch-agent" in script
    assert not re.search(r"\b(docker|podman|nerdctl|ctr)\b", script.split("set -euo", 1)[1])


# --- nothing in user data holds back ECS registration (issue 9 item 9) -------------------


def _unit_lines(text: str) -> dict[str, list[str]]:
    """key -> values of a unit file, every section together (keys do not repeat across ours)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            k, v = line.split("=", 1)
            out.setdefault(k, []).append(v)
    return out


def test_setup_runs_beside_the_ecs_agent_not_before_it(spec: Spec) -> None:
    doc = yaml.safe_load(host.cloud_config(spec))
    # cloud-final (which ecs.service is ordered after) only enqueues the units:
    # no runcmd entry runs a script or waits for a unit.
    for entry in doc["runcmd"]:
        assert entry[0] == "systemctl"
        assert not any(arg.startswith("/") for arg in entry)
        if "start" in entry or "--now" in entry:
            assert "--no-block" in entry
    for name, text in host.units(spec).items():
        keys = _unit_lines(text)
        # exec: the unit counts as started once the script runs, so no target
        # (nor what is ordered after one) waits for it to finish.
        assert keys["Type"] == ["exec"], name
        # Nothing is ordered after our units, ecs.service least of all.
        assert "Before" not in keys and "RequiredBy" not in keys, name
        assert not any(host.ECS_UNIT in v for vs in keys.values() for v in vs), name
        assert keys["WantedBy"] == ["multi-user.target"], name
    # ecs.config is a write_files entry: on disk before the ECS agent first starts.
    assert host.ECS_CONFIG_PATH in _write_files(host.cloud_config(spec))


def _systemd_verify(unit: str, tmp_path: Path) -> str:
    # ExecStart must exist for verify; point it at a stand-in script.
    stand_in = _fake_bin(tmp_path, "script", "true")
    text = re.sub(r"^ExecStart=.*$", f"ExecStart={stand_in}", unit, flags=re.M)
    path = tmp_path / "ecs-gpu-test.service"
    path.write_text(text)
    result = subprocess.run(
        [_tool("systemd-analyze"), "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return f"rc={result.returncode} " + result.stdout + result.stderr


def test_units_pass_systemd_analyze_verify(spec: Spec, tmp_path: Path) -> None:
    for name, text in host.units(spec).items():
        assert _systemd_verify(text, tmp_path).strip() == "rc=0", name


def test_systemd_verify_check_rejects_a_broken_unit(tmp_path: Path) -> None:
    unit = host.units(parse_spec(BUILT_SPEC, "built.toml"))[host.SETUP_UNIT]
    out = _systemd_verify(unit.replace("Type=exec", "Type=bogus"), tmp_path)
    assert "bogus" in out


def test_setup_script_skips_dnf_when_the_agent_is_installed(tmp_path: Path) -> None:
    # A warm-pool instance runs the unit again at each start.
    spec = parse_spec(BUILT_SPEC, "built.toml")
    bin_dir = tmp_path / "rpm-bin"
    bin_dir.mkdir()
    _fake_bin(bin_dir, "rpm", "true")
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{bin_dir}:{old}"
    try:
        result, calls = _run_setup(spec, tmp_path, nvidia_smi=True, dnf_failures=0)
    finally:
        os.environ["PATH"] = old
    assert result.returncode == 0, result.stdout + result.stderr
    assert not any(c.startswith("dnf") for c in calls)
    assert "already installed" in result.stderr
    assert any("fetch-config" in c for c in calls)


@pytest.mark.parametrize(
    ("state", "started"),
    [("Warmed:Stopped", False), ("Warmed:Running", False), ("InService", True)],
)
def test_warming_instance_installs_but_does_not_start_the_agent(
    tmp_path: Path, state: str, started: bool
) -> None:
    # A warming instance's idle GPUs would pull the group's GPU average down.
    spec = parse_spec(WARM_SPEC, "warm.toml")
    result, calls = _run_setup(spec, tmp_path, nvidia_smi=True, dnf_failures=0, states=[state])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "dnf install -y amazon-cloudwatch-agent" in calls
    assert any("target-lifecycle-state" in c for c in calls)
    assert any("fetch-config" in c for c in calls) is started


@pytest.mark.parametrize("errors", [[500], [404] * 6], ids=["one-failure", "not-set-yet"])
def test_warming_instance_holds_the_agent_back_after_a_failed_state_read(
    tmp_path: Path, errors: list[int]
) -> None:
    # A retry's log line must not end up in the state read back (it did on
    # stdout), and a 404 (state not set yet) is waited out, not fatal.
    spec = parse_spec(WARM_SPEC, "warm.toml")
    result, calls = _run_setup(
        spec,
        tmp_path,
        nvidia_smi=True,
        dnf_failures=0,
        states=["Warmed:Stopped"],
        errors={_STATE: errors},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert not any("fetch-config" in c for c in calls)
    assert "not started until the instance is in service" in result.stderr


def test_without_a_warm_pool_setup_never_asks_imds() -> None:
    assert "target-lifecycle-state" not in host.setup_script(parse_spec(BUILT_SPEC, "b.toml"))


# --- the warm-pool script, run by bash against stand-ins ------------------------------


_STATE = "autoscaling/target-lifecycle-state"


def _imds_curl(
    bin_dir: Path,
    record: str,
    tmp_path: Path,
    states: list[str],
    errors: Mapping[str, list[int]] | None = None,
) -> None:
    """A curl stand-in for IMDSv2: a token, then each metadata path's answers in
    turn (the last one repeats), recording each call. ``states``: the target
    lifecycle states; ``errors``: metadata path -> HTTP codes it answers first.
    With ``-w`` it prints the body then the code, as curl without ``-f`` does;
    otherwise a code other than 200 is ``curl -f``'s exit 22."""
    queues = tmp_path / "imds"
    queues.mkdir()
    answers = {
        "instance-id": ["i-0123456789abcdef0"],
        "placement/region": ["eu-west-1"],
        _STATE: states,
    }
    for key, values in answers.items():
        lines = [f"{code} -" for code in (errors or {}).get(key, [])]
        lines += [f"200 {v}" for v in values]
        (queues / key.replace("/", "_")).write_text("\n".join(lines) + "\n")
    body = r"""
url="${*: -1}"
case "$url" in
  *"/api/token")
    echo tok
    exit 0
    ;;
esac
key=${url#*/meta-data/}
queue=QUEUES/${key//\//_}
[ -f "$queue" ] || exit 22
line=$(head -n 1 "$queue")
if [ "$(wc -l < "$queue")" -gt 1 ]; then
  tail -n +2 "$queue" > "$queue.next"
  mv "$queue.next" "$queue"
fi
code=${line%% *}
value=${line#* }
case " $* " in
  *" -w "*) printf '%s\n%s' "$value" "$code" ;;
  *)
    if [ "$code" != 200 ]; then
      echo "curl: (22) The requested URL returned error: $code" >&2
      exit 22
    fi
    echo "$value"
    ;;
esac"""
    _fake_bin(bin_dir, "curl", record + body.replace("QUEUES", str(queues)))


# Only the few system tools the scripts and stand-ins use, so a real aws,
# docker, curl or systemctl on this machine can never answer instead of a stand-in.
_SYSTEM_TOOLS = ("bash", "env", "basename", "cat", "cp", "mkdir", "head", "tail", "wc", "mv")


def _sys_bin(tmp_path: Path) -> Path:
    sys_bin = tmp_path / "sys-bin"
    sys_bin.mkdir()
    for tool in _SYSTEM_TOOLS:
        (sys_bin / tool).symlink_to(_tool(tool))
    return sys_bin


def _run_warm(
    spec: Spec,
    tmp_path: Path,
    *,
    states: list[str],
    pull_ok: bool = True,
    have_aws: bool = True,
    complete_ok: bool = True,
    errors: Mapping[str, list[int]] | None = None,
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run the real warm-pool script; curl answers IMDS (``errors``: see
    :func:`_imds_curl`), aws/docker/dnf record their calls."""
    bin_dir = tmp_path / "warm-bin"
    bin_dir.mkdir()
    calls = tmp_path / "warm-calls.log"
    record = f'echo "$(basename "$0") $*" >> {calls}'
    _imds_curl(bin_dir, record, tmp_path, states, errors)
    _fake_bin(
        bin_dir,
        "aws",
        f'{record}\ncase "$1 $2" in\n'
        f'  "ssm get-parameter") echo "{spec.service.image}" ;;\n'
        '  "ecr get-login-password") echo secret ;;\n'
        f'  "autoscaling complete-lifecycle-action") {"true" if complete_ok else "exit 254"} ;;\n'
        "esac",
    )
    _fake_bin(
        bin_dir,
        "docker",
        f'{record}\nif [ "$1" = login ]; then cat > /dev/null; fi\n'
        f'if [ "$1" = pull ]; then {"true" if pull_ok else "exit 1"}; fi',
    )
    for name in ("dnf", "sleep", "systemctl"):
        _fake_bin(bin_dir, name, record)
    _fake_bin(bin_dir, "timeout", f'{record}\nshift\nexec "$@"')
    path_dirs = [str(bin_dir), str(_sys_bin(tmp_path))]
    if not have_aws:
        (bin_dir / "aws").unlink()
        # dnf "installs" it: the stand-in appears once dnf ran.
        _fake_bin(
            bin_dir,
            "dnf",
            f"{record}\nmkdir -p {tmp_path}/late && cp {tmp_path}/aws-later {tmp_path}/late/aws",
        )
        path_dirs.insert(1, f"{tmp_path}/late")
        (tmp_path / "aws-later").write_text(
            "#!/usr/bin/env bash\n" + record + "\n"
            f'[ "$1 $2" = "ssm get-parameter" ] && echo "{spec.service.image}"\ntrue\n'
        )
        (tmp_path / "aws-later").chmod(0o755)
    path = tmp_path / "warm.sh"
    path.write_text(host.warm_pool_script(spec))
    env = {**os.environ, "PATH": ":".join(path_dirs)}
    result = subprocess.run(
        ["bash", str(path)], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    lines = calls.read_text().splitlines() if calls.exists() else []
    return result, lines


def _complete_call(spec: Spec) -> str:
    return (
        "aws autoscaling complete-lifecycle-action --region eu-west-1 "
        f"--auto-scaling-group-name {Names(spec.service.name).asg} "
        f"--lifecycle-hook-name {host.warm_pool_hook_name(spec)} "
        "--instance-id i-0123456789abcdef0 --lifecycle-action-result CONTINUE"
    )


def test_warming_instance_logs_in_pulls_then_completes_the_hook(tmp_path: Path) -> None:
    spec = parse_spec(WARM_SPEC, "warm.toml")
    # Warming; then (after the stop, or for a Running pool in place) entering service.
    states = ["Warmed:Stopped", "Warmed:Stopped", "InService"]
    result, calls = _run_warm(spec, tmp_path, states=states)
    assert result.returncode == 0, result.stdout + result.stderr
    work = [c for c in calls if c.split()[0] in {"aws", "docker", "systemctl"}]
    assert work[0] == (
        "aws ssm get-parameter --region eu-west-1 --name "
        f"{host.image_parameter_name(spec)} --query Parameter.Value --output text"
    )
    # One pipeline, so the two record in either order. The registry's own
    # region, not the instance's.
    assert set(work[1:3]) == {
        "aws ecr get-login-password --region us-west-2",
        "docker login --username AWS --password-stdin 123456789012.dkr.ecr.us-west-2.amazonaws.com",
    }
    assert work[3:] == [
        f"docker pull {ECR_IMAGE}",
        _complete_call(spec),  # Warmed:Pending:Wait: the pull is done, stop me
        # In service: the host agent held back while warming starts now.
        f"systemctl start --no-block {host.SETUP_UNIT}",
        _complete_call(spec),  # Pending:Wait on the way into service
    ]
    assert [c for c in calls if c.startswith("sleep")] == [f"sleep {host.WARM_POLL_S}"]
    # Each attempt is bounded by the per-attempt budget the hook's heartbeat covers.
    assert f"timeout {host.pull_timeout_s(spec)} docker pull {ECR_IMAGE}" in calls
    # IMDSv2: every metadata read carries the token.
    reads = [c for c in calls if c.startswith("curl") and "/meta-data/" in c]
    assert reads and all("X-aws-ec2-metadata-token: tok" in c for c in reads)


def test_values_read_back_survive_a_failed_read(tmp_path: Path) -> None:
    # retry logs each failed attempt; on stdout that text was read back into
    # the state (so no pull) and the instance id (so a wrong hook call).
    spec = parse_spec(WARM_SPEC, "warm.toml")
    result, calls = _run_warm(
        spec,
        tmp_path,
        states=["Warmed:Stopped", "InService"],
        errors={_STATE: [500], "instance-id": [503]},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "docker pull " + ECR_IMAGE in calls
    assert calls.count(_complete_call(spec)) == 2
    assert "attempt 1 failed" in result.stderr
    assert result.stdout == ""


def test_a_state_not_set_yet_is_polled_until_it_is(tmp_path: Path) -> None:
    # IMDS answers 404 until EC2 Auto Scaling sets the state (the ECS agent
    # polls it the same way): no bounded retry gives up on it.
    spec = parse_spec(WARM_SPEC, "warm.toml")
    result, calls = _run_warm(
        spec, tmp_path, states=["Warmed:Stopped", "InService"], errors={_STATE: [404] * 6}
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "docker pull " + ECR_IMAGE in calls
    assert calls.index(_complete_call(spec)) > calls.index("docker pull " + ECR_IMAGE)
    assert [c for c in calls if c.startswith("sleep")] == [f"sleep {host.WARM_POLL_S}"] * 6
    # A 404 is not a failed attempt.
    assert "attempt" not in result.stderr
    # A fresh token for every read.
    tokens = [c for c in calls if c.startswith("curl") and "/api/token" in c]
    reads = [c for c in calls if c.startswith("curl") and _STATE in c]
    assert len(reads) == 8 and len(tokens) >= len(reads)


def test_a_state_never_set_is_polled_for_the_hook_timeout_only(tmp_path: Path) -> None:
    # The shortest heartbeat, so the stand-ins run few times.
    spec = parse_spec(
        BUILT_SPEC + "\n[capacity.warm_pool]\n\n[simulation]\nimage_pull_s = 0\n", "w.toml"
    )
    result, calls = _run_warm(spec, tmp_path, states=[], errors={_STATE: [404]})
    assert result.returncode != 0
    assert "no target lifecycle state" in result.stderr
    sleeps = [c for c in calls if c.startswith("sleep")]
    assert sleeps == [f"sleep {host.WARM_POLL_S}"] * (host.hook_timeout_s(spec) // host.WARM_POLL_S)
    assert not any(c.startswith(("docker", "aws")) for c in calls)


def test_public_image_is_pulled_without_a_registry_login(tmp_path: Path) -> None:
    spec = parse_spec(BUILT_SPEC + "\n[capacity.warm_pool]\n", "warm-public.toml")
    result, calls = _run_warm(spec, tmp_path, states=["Warmed:Running", "InService"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert not any("login" in c for c in calls)
    assert "docker pull example/llm:1" in calls


def test_instance_entering_service_completes_the_hook_without_pulling(tmp_path: Path) -> None:
    spec = parse_spec(WARM_SPEC, "warm.toml")
    result, calls = _run_warm(spec, tmp_path, states=["InService"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert not any(c.startswith(("docker", "systemctl")) for c in calls)
    assert [c for c in calls if c.startswith("aws")] == [_complete_call(spec)]


def test_a_failed_pull_still_completes_the_hook(tmp_path: Path) -> None:
    spec = parse_spec(WARM_SPEC, "warm.toml")
    result, calls = _run_warm(spec, tmp_path, states=["Warmed:Stopped", "InService"], pull_ok=False)
    assert result.returncode == 0, result.stdout + result.stderr
    pulls = [c for c in calls if c.startswith("docker pull")]
    assert len(pulls) == host.SETUP_ATTEMPTS
    # The delays the hook's heartbeat budgets for are the ones the script sleeps.
    delays = [int(c.split()[1]) for c in calls if c.startswith("sleep")]
    assert sum(delays[: host.SETUP_ATTEMPTS - 1]) == host.RETRY_DELAYS_S
    assert calls.index(_complete_call(spec)) > calls.index(pulls[-1])
    assert "will pull it at start" in result.stderr


def test_no_pending_lifecycle_action_is_not_a_failure(tmp_path: Path) -> None:
    # A reboot while in service: nothing to complete.
    spec = parse_spec(WARM_SPEC, "warm.toml")
    result, calls = _run_warm(spec, tmp_path, states=["InService"], complete_ok=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert calls.count(_complete_call(spec)) == host.SETUP_ATTEMPTS
    assert "no lifecycle action completed" in result.stderr


def test_missing_aws_cli_is_installed_first(tmp_path: Path) -> None:
    spec = parse_spec(WARM_SPEC, "warm.toml")
    result, calls = _run_warm(spec, tmp_path, states=["InService"], have_aws=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "dnf install -y awscli-2" in calls
    assert calls.index("dnf install -y awscli-2") < calls.index(_complete_call(spec))


# --- size: what travels compressed (docs/host.md "Size") ---------------------------------


def test_scripts_and_units_travel_gz_b64_and_decode_to_the_rendered_text(spec: Spec) -> None:
    doc = yaml.safe_load(host.cloud_config(spec))
    by_path = {f["path"]: f for f in doc["write_files"]}
    plain = {host.ECS_CONFIG_PATH, gpu_metric.AGENT_CONFIG_PATH}
    for path, f in by_path.items():
        if path in plain:
            assert "encoding" not in f, path
            continue
        assert f["encoding"] == host.GZ_B64, path
        raw = base64.b64decode(f["content"], validate=True)
        # gzip's MTIME field (bytes 4-8) is zero: the same spec gives the same
        # user data at every synth, so no launch template version for nothing.
        assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0", path
        assert gzip.decompress(raw).decode() == host.file_content(f), path
    assert host.file_content(by_path[host.SETUP_SCRIPT_PATH]) == host.setup_script(spec)


def test_file_content_rejects_what_cloud_init_would_not_write() -> None:
    with pytest.raises(ValueError, match="b64"):
        host.file_content({"path": "/x", "encoding": "b64", "content": "eA=="})
    with pytest.raises(ValueError, match="not gz\\+b64"):
        host.file_content({"path": "/x", "encoding": host.GZ_B64, "content": "eA=="})


def test_shipped_scripts_keep_the_header_and_drop_the_other_comments(spec: Spec) -> None:
    scripts = [host.setup_script(spec), host.warm_pool_script(spec)]
    for script in scripts:
        head, body = script.split("\nset -euo pipefail\n", 1)
        assert head.startswith("#!/usr/bin/env bash\n# ecs-gpu ")
        assert "Generated by ecs-gpu" in head and "(ecs_gpu.infra.host)" in head
        assert not [line for line in body.splitlines() if line.lstrip().startswith("#")]
    # The source comment is gone, the code under it is not.
    assert "# The nvidia_gpu collector needs this exact path" not in scripts[0]
    assert 'if [ ! -x "$NVIDIA_SMI" ]; then' in scripts[0]


# cloud-init's own write_files module, run by the interpreter cloud-init runs
# under: writes each entry below a root directory, as the instance would.
_CLOUD_INIT_WRITE = """
import json, os, pwd, grp, sys
from cloudinit.config.cc_write_files import write_files
root, entries = sys.argv[1], json.load(sys.stdin)
for e in entries:
    e["path"] = root + e["path"]
    os.makedirs(os.path.dirname(e["path"]), exist_ok=True)
owner = pwd.getpwuid(os.getuid()).pw_name + ":" + grp.getgrgid(os.getgid()).gr_name
write_files("write_files", entries, owner)
"""


def test_cloud_init_writes_the_rendered_files(spec: Spec, tmp_path: Path) -> None:
    # cloud-init itself decodes gz+b64 and applies the permissions, not our helper.
    shebang = Path(_tool("cloud-init")).read_text().splitlines()[0]
    python = shebang.removeprefix("#!").split()
    entries = yaml.safe_load(host.cloud_config(spec))["write_files"]
    root = tmp_path / "root"
    result = subprocess.run(
        [*python, "-c", _CLOUD_INIT_WRITE, str(root)],
        input=json.dumps(entries),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    expected = {
        host.ECS_CONFIG_PATH: (host.ecs_config(spec), 0o644),
        gpu_metric.AGENT_CONFIG_PATH: (host.agent_config_json(spec), 0o644),
        host.SETUP_SCRIPT_PATH: (host.setup_script(spec), 0o755),
        **{f"{host.SYSTEMD_DIR}/{u}": (text, 0o644) for u, text in host.units(spec).items()},
    }
    if spec.capacity.warm_pool is not None:
        expected[host.WARM_SCRIPT_PATH] = (host.warm_pool_script(spec), 0o755)
    assert {e["path"] for e in entries} == set(expected)
    for path, (text, mode) in expected.items():
        written = root / path.lstrip("/")
        assert written.read_text() == text, path
        assert stat.S_IMODE(written.stat().st_mode) == mode, path
