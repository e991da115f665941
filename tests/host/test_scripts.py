"""host.scripts: the setup and warm-pool scripts (shellcheck, then bash against stand-in
system commands), their systemd units, and the warm-pool timing budget."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from ecs_gpu import host
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.spec import SimulationSpec, Spec, parse_spec
from example_specs import G5_GPU

from .conftest import (
    BUILT_SPEC,
    ECR_IMAGE,
    WARM_SPEC,
    _shellcheck,
    _tool,
    _write_files,
)

# The g5 example with a private ECR image, gp3 tuning and a warm pool (as in
# tests/infra/test_capacity_host.py): the warm-pool timing cases below.
WARM = (
    G5_GPU.replace(
        'image = "vllm/vllm-openai:v0.11.0"',
        'image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v1"',
    ).replace(
        "[capacity]\n",
        "[capacity]\nroot_volume_iops = 6000\nroot_volume_throughput_mibps = 500\n",
    )
    + "\n[capacity.warm_pool]\nmin_size = 2\nmax_prepared = 4\n"
)


# --- shellcheck ------------------------------------------------------------------------


def test_every_script_in_user_data_passes_shellcheck(spec: Spec, tmp_path: Path) -> None:
    scripts = [
        f for f in _write_files(host.cloud_config(spec)).values() if f.get("permissions") == "0755"
    ]
    assert len(scripts) == (2 if spec.capacity.warm_pool is not None else 1)
    for f in scripts:
        result = _shellcheck(f["content"], tmp_path)
        assert result.returncode == 0, f["path"] + "\n" + result.stdout + result.stderr


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

# --- the warm-pool timing budget ------------------------------------------------------


def _check_hook_covers_every_pull(spec: Spec) -> None:
    """Every pull attempt, the retry delays between them and a margin fit in the
    heartbeat, which EC2 Auto Scaling accepts (30-7200 s)."""
    pull, hook = host.pull_timeout_s(spec), host.hook_timeout_s(spec)
    delays = sum(host.SETUP_FIRST_DELAY_S * 2**i for i in range(host.SETUP_ATTEMPTS - 1))
    assert delays == host.RETRY_DELAYS_S == 5 + 10 + 20
    # The margin covers the boot the hook's wait also holds.
    assert host.HOOK_MARGIN_S >= SimulationSpec().instance_boot_s
    assert host.SETUP_ATTEMPTS * pull + delays + host.HOOK_MARGIN_S <= hook
    assert host.HOOK_MIN_S <= hook <= host.HOOK_MAX_S
    assert pull >= host.PULL_MARGIN_S


def test_hook_outlasts_every_pull_attempt_of_every_example(specs: dict[str, Spec]) -> None:
    for name, spec in specs.items():
        _check_hook_covers_every_pull(spec)
        # At the examples' own pull times one attempt covers the expected pull.
        assert host.pull_timeout_s(spec) >= 1.5 * spec.simulation.image_pull_s, name


@pytest.mark.parametrize("image_pull_s", [0, 1, 240, 1104, 1105, 3600, 86400])
def test_hook_outlasts_every_pull_attempt_at_extremes(image_pull_s: float) -> None:
    assert WARM.count("[simulation]\n") == 1
    text = WARM.replace("[simulation]\n", f"[simulation]\nimage_pull_s = {image_pull_s}\n")
    spec = parse_spec(text, "x.toml")
    assert spec.simulation.image_pull_s == image_pull_s
    _check_hook_covers_every_pull(spec)
    if image_pull_s > 1104:
        # Capped: the attempts shrink to fit the longest heartbeat.
        assert host.hook_timeout_s(spec) > host.HOOK_MAX_S - host.SETUP_ATTEMPTS


def test_default_pull_attempt_covers_the_default_pull() -> None:
    spec = parse_spec(WARM, "warm.toml")
    assert spec.simulation.image_pull_s == 240
    assert host.pull_timeout_s(spec) == 1.5 * 240 + 60
    assert host.hook_timeout_s(spec) == 4 * 420 + 35 + 300
