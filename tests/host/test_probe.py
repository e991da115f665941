"""The host probe: shellcheck-clean, read-only, and its parser on real output shapes.

nvidia-smi XML is real (tests/data/nvidia-smi, MIT, from the CloudWatch
agent's test data); docker info, systemctl, docker ps and agent log lines
are quoted from the field reports (seeds/000).
"""

from __future__ import annotations

import base64
import gzip
import os
import re
import shutil
import subprocess
import tracemalloc
import zlib
from pathlib import Path

import pytest

from ecs_gpu.contracts import gpu_metric
from ecs_gpu.host import probe as host
from ecs_gpu.host.probe import PROBE_CONFIG_ENV, probe_commands, probe_script
from support.snapshots import DATA, nvidia_smi_section, probe_output

PROBE = Path(host.__file__).with_name("probe.sh")


def test_probe_passes_shellcheck() -> None:
    exe = shutil.which("shellcheck")
    assert exe, "shellcheck is required (scripts/test.sh installs it)"
    proc = subprocess.run([exe, "-S", "style", str(PROBE)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


def test_probe_is_read_only() -> None:
    text = probe_script()
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    forbidden = ["systemctl restart", "systemctl stop", "systemctl start", "rm ", "docker rm"]
    forbidden += ["docker restart", "docker stop", "tee ", "> /", ">/etc", "mv ", "kill "]
    for verb in forbidden:
        assert verb not in code, verb


def test_probe_commands_feed_bash_and_name_the_config_from_the_contract() -> None:
    cmds = probe_commands()
    assert cmds[0] == f"export {PROBE_CONFIG_ENV}={gpu_metric.AGENT_CONFIG_PATH}"
    assert cmds[1].startswith("bash -s <<'") and cmds[-1] in cmds[1]
    assert "\n".join(cmds[2:-1]) == probe_script().rstrip("\n")


def test_probe_runs_here_and_every_section_parses(tmp_path: Path) -> None:
    """Run the real script on this (GPU-less, maybe systemd-less) machine."""
    cfg = tmp_path / "agent.json"
    cfg.write_text('{"metrics": {}}')
    env = {**os.environ, PROBE_CONFIG_ENV: str(cfg)}
    proc = subprocess.run(["bash", str(PROBE)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0
    sections = host.split_sections(proc.stdout)
    assert list(sections) == [
        "nvidia_smi_path", "nvidia_smi", "docker_info", "ecs_active", "agent_active",
        "agent_config", "agent_log", "containers", "ecs_config",
    ]  # fmt: skip
    assert all(s.rc is not None for s in sections.values())
    assert sections["agent_config"].rc == 0
    assert host.parse_agent_config(sections["agent_config"].text) == {"metrics": {}}
    if shutil.which("nvidia-smi") is None:
        assert sections["nvidia_smi"].rc == 127


@pytest.mark.parametrize(
    ("xml", "name", "uuid", "total", "util"),
    [
        ("a10g.xml", "NVIDIA A10G", "GPU-9a9a6c50-2a47-2f51-a902-b82c3b127e94", 23028, 0),
        ("tesla-t4.xml", "Tesla T4", None, 15360, None),
        ("a100-sxm4-v12.xml", "NVIDIA A100-SXM4-80GB", "GPU-513536b6", 81920, None),
    ],
)
def test_nvidia_smi_xml_samples(
    xml: str, name: str, uuid: str | None, total: int, util: int | None
) -> None:
    raw = (DATA / "nvidia-smi" / xml).read_text()
    smi = host.parse_nvidia_smi_xml(raw)
    assert smi.gpus, xml
    g = smi.gpus[0]
    assert g.product_name == name
    assert g.uuid.startswith("GPU-")
    if uuid:
        assert g.uuid.startswith(uuid)
    # The GPU's own framebuffer, not a MIG slice's (a100 nests 19968 MiB slices).
    assert g.memory_total_mib == total
    if util is not None:
        assert g.utilization_gpu_percent == util
    assert smi.driver_version and re.match(r"^\d+\.\d+", smi.driver_version)


def test_nvidia_smi_section_round_trips_gzip_base64() -> None:
    xml = host.decode_nvidia_smi_section(nvidia_smi_section("tesla-t4.xml"))
    assert xml == (DATA / "nvidia-smi" / "tesla-t4.xml").read_text()
    assert host.decode_nvidia_smi_section("encoding: plain\n<nvidia_smi_log/>") == (
        "<nvidia_smi_log/>"
    )


def test_nvidia_smi_bad_input_is_refused() -> None:
    with pytest.raises(host.ProbeParseError, match="not XML"):
        host.parse_nvidia_smi_xml("nvidia-smi: command not found")
    with pytest.raises(host.ProbeParseError, match="entity"):
        host.parse_nvidia_smi_xml('<!DOCTYPE x [<!ENTITY a "b">]><nvidia_smi_log/>')
    with pytest.raises(host.ProbeParseError, match="root"):
        host.parse_nvidia_smi_xml("<other/>")
    bad = "encoding: gzip+base64\n" + base64.b64encode(b"not gzip").decode()
    with pytest.raises(host.ProbeParseError, match="decode"):
        host.decode_nvidia_smi_section(bad)
    ok = "encoding: gzip+base64\n" + base64.b64encode(gzip.compress(b"<a/>")).decode()
    assert host.decode_nvidia_smi_section(ok) == "<a/>"


def _gzip_of_zeros(mib: int) -> bytes:
    """A gzip bomb: ``mib`` MiB of zeros, built without holding them."""
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(2**20)
    return b"".join(c.compress(block) for _ in range(mib)) + c.flush()


def _section(data: bytes) -> str:
    return "encoding: gzip+base64\n" + base64.b64encode(data).decode()


def test_a_gzip_bomb_is_refused_without_being_held() -> None:
    bomb = _gzip_of_zeros(64)  # 64 MiB from about 64 KiB
    tracemalloc.start()
    try:
        with pytest.raises(host.ProbeParseError, match="more than 1 MiB"):
            host.gunzip_bounded(bomb, 2**20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # What is held stays near the limit, not near what the data expands to.
    assert peak < 8 * 2**20
    # The probe's section has its own bound, far above any nvidia-smi output.
    big = _gzip_of_zeros(host.MAX_NVIDIA_SMI_XML // 2**20 + 1)
    with pytest.raises(host.ProbeParseError, match="decompresses to more than 16 MiB"):
        host.decode_nvidia_smi_section(_section(big))


def test_gunzip_bounded_reads_every_member_and_refuses_a_cut_stream() -> None:
    two = gzip.compress(b"<nvidia_smi_log>") + gzip.compress(b"</nvidia_smi_log>")
    assert host.gunzip_bounded(two, 100) == b"<nvidia_smi_log></nvidia_smi_log>"
    assert host.gunzip_bounded(gzip.compress(b"x" * 100), 100) == b"x" * 100
    with pytest.raises(host.ProbeParseError, match="more than"):
        host.gunzip_bounded(gzip.compress(b"x" * 101), 100)
    with pytest.raises(host.ProbeParseError, match="cut short"):
        host.gunzip_bounded(gzip.compress(b"<a/>" * 50)[:-12], 10_000)


def test_docker_info_lines_from_the_field_report() -> None:
    lines = " Runtimes: io.containerd.runc.v2 nvidia runc\n Default Runtime: runc"
    rt = host.parse_docker_info(lines)
    assert rt.runtimes == ("io.containerd.runc.v2", "nvidia", "runc")
    assert rt.default_runtime == "runc"
    assert host.parse_docker_info("").default_runtime is None


def test_systemctl_is_active_states() -> None:
    assert host.parse_is_active("active\n") == "active"
    assert host.parse_is_active("inactive") == "inactive"
    assert host.parse_is_active("") == "unknown"


def test_restart_loops_group_ecs_container_runs() -> None:
    text = (
        "Exited (1) 29 seconds ago     :: ecs-x-cw-agent-daemon-9-cloudwatch-agent-d4a6909b8fdd\n"
        "Exited (1) 40 seconds ago     :: ecs-x-cw-agent-daemon-9-cloudwatch-agent-8ec2b4b8cfa6\n"
        "Exited (1) 51 seconds ago     :: ecs-x-cw-agent-daemon-9-cloudwatch-agent-90ff96dec88e\n"
        "Exited (0) 2 hours ago :: ecs-x-init-1-setup-aaaaaaaaaaaa\n"
        "Exited (0) 2 hours ago :: ecs-x-init-1-setup-bbbbbbbbbbbb\n"
        "Exited (0) 2 hours ago :: ecs-x-init-1-setup-cccccccccccc\n"
        "Restarting (1) 3 seconds ago :: sidecar\n"
        "Up 18 minutes :: ecs-agent\n"
    )
    loops = host.restart_loops(text)
    assert [(lp.name, lp.exits) for lp in loops] == [
        ("ecs-x-cw-agent-daemon-9-cloudwatch-agent", 3)
    ]
    assert host.restart_loops(text, minimum=1)[-1].name == "sidecar"


def test_ecs_config_per_file_and_redaction_kept() -> None:
    text = (
        "# /etc/ecs/ecs.config\nECS_CLUSTER=vllm-g5\nECS_ENABLE_GPU_SUPPORT=true\n"
        "ECS_ENGINE_AUTH_DATA=<redacted>\n# /var/lib/ecs/ecs.config (absent)\n"
    )
    cfg = host.parse_ecs_config(text)
    assert cfg == {
        "/etc/ecs/ecs.config": {
            "ECS_CLUSTER": "vllm-g5",
            "ECS_ENABLE_GPU_SUPPORT": "true",
            "ECS_ENGINE_AUTH_DATA": "<redacted>",
        }
    }


def test_probe_redacts_registry_credentials(tmp_path: Path) -> None:
    # The sed in probe.sh, run on a real file: auth data never leaves the host.
    f = tmp_path / "ecs.config"
    f.write_text('ECS_CLUSTER=c\nECS_ENGINE_AUTH_DATA={"secret":1}\n')
    m = re.search(r"sed -E '([^']+)'", probe_script())
    assert m
    out = subprocess.run(["sed", "-E", m.group(1), str(f)], capture_output=True, text=True)
    assert "secret" not in out.stdout and "ECS_ENGINE_AUTH_DATA=<redacted>" in out.stdout


def test_truncated_probe_marks_the_open_section() -> None:
    text = probe_output()
    cut = text[: text.index("@@ecs-gpu-probe end agent_log")]
    sections = host.split_sections(cut)
    assert sections["agent_log"].rc is None
    assert "containers" not in sections


def test_probe_output_stays_under_ssm_limit() -> None:
    # SSM GetCommandInvocation returns at most 24,000 characters of stdout.
    assert len(probe_output()) < 24_000
    assert len(nvidia_smi_section("a100-sxm4-v12.xml")) < 8_000
