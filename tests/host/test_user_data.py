"""host.user_data: the cloud-config user data, accepted by cloud-init, within EC2's limit,
breaking none of the field reports' rules, and written back as rendered."""

from __future__ import annotations

import base64
import gzip
import json
import re
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from ecs_gpu import host
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.spec import Spec

from .conftest import (
    _decoded_user_data,
    _shellcheck,
    _tool,
    _write_files,
)

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


def test_every_runcmd_shell_string_passes_shellcheck(spec: Spec, tmp_path: Path) -> None:
    runcmd = yaml.safe_load(host.cloud_config(spec))["runcmd"]
    assert runcmd, "the setup script must be run"
    for entry in runcmd:
        if isinstance(entry, str):  # a string entry runs under sh -c
            result = _shellcheck("#!/bin/sh\n" + entry + "\n", tmp_path)
            assert result.returncode == 0, result.stdout
        else:
            assert all(isinstance(arg, str) for arg in entry)


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
