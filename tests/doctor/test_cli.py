"""``ecs-gpu doctor`` end to end: offline from snapshots, live against moto, exit codes 0/1/2/3."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from rich.console import Console

from ecs_gpu.aws import clients
from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.cli import doctor as doctor_cli
from ecs_gpu.cli import main

from . import world

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "g5-vllm.toml"
Snap = dict[str, Any]


def _write(tmp_path: Path, snap: Snap) -> str:
    p = tmp_path / "snap.json"
    p.write_text(json.dumps(snap))
    return str(p)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["doctor", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_healthy_snapshot_offline_exits_0(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, healthy()), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["findings"] == [] and data["unknown"] == [] and data["missing_permissions"] == []
    assert "GPU001" in data["ok"]


def test_broken_snapshot_exits_1_with_findings(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = healthy()
    for r in snap["metric_data"]:
        r["Timestamps"], r["Values"] = [], []
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, snap), "--json")
    assert code == 1
    finding = next(f for f in json.loads(out)["findings"] if f["id"] == "MET001")
    assert set(finding) == {"id", "severity", "title", "evidence", "fix"}
    assert finding["severity"] == "error"
    assert finding["evidence"][0] == {
        "kind": "metric_data",
        "id": "nvidia_smi_utilization_gpu",
        "field": "Values",
        "value": [],
    }


def test_table_output_names_check_evidence_and_fix(
    healthy: Callable[[], Snap],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    snap = healthy()
    snap["container_instances"][0]["agentConnected"] = False
    del snap["stacks"]
    monkeypatch.setattr(doctor_cli, "console", Console(width=200, file=sys.stdout))
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, snap))
    assert code == 1
    assert "ECS002" in out and "container_instances[i-0ad34247c1f0e9b21].agentConnected" in out
    assert "Fix: The ECS agent" in out
    assert "Not checked" in out and "STK001" in out


def test_denied_permission_without_error_exits_3(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = healthy()
    del snap["alarms"]
    snap[COLLECTION_KEY]["denied"] = [
        {
            "call": "cloudwatch DescribeAlarms",
            "permission": "cloudwatch:DescribeAlarms",
            "code": "AccessDenied",
            "kinds": ["alarms"],
        }
    ]
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, snap), "--json")
    assert code == 3
    data = json.loads(out)
    assert data["missing_permissions"][0]["permission"] == "cloudwatch:DescribeAlarms"
    assert {u["id"] for u in data["unknown"]} == {"MET002", "MET003"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read the snapshot"),
        ("{not json", "not a JSON snapshot"),
        ("[1, 2]", "a snapshot is a JSON object"),
        ('{"servces": []}', "unknown snapshot keys servces"),
        ('{"_collection": {"version": 99}}', "_collection.version is 99"),
    ],
)
def test_bad_snapshot_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    p = tmp_path / "bad.json"
    if content is not None:
        p.write_text(content)
    code, _, err = _run(capsys, "--from-snapshot", str(p))
    assert code == 2
    assert message in err and "bad.json" in err


def test_no_target_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys)
    assert code == 2
    assert "--cluster" in err and "--from-snapshot" in err


@pytest.fixture
def hooked_sessions(aws: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's sessions get the hooks for what moto lacks (tests/doctor/world.py)."""
    real = clients.make_session

    def make(profile: str | None = None, region: str | None = None) -> boto3.Session:
        s = real(profile, region)
        world.install_moto_gaps(s)
        return s

    monkeypatch.setattr(clients, "make_session", make)


def test_live_doctor_from_spec_against_moto(
    hooked_sessions: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = clients.make_session(None, "us-east-1")
    world.build_world(session, instances=2, tasks=1)
    saved = tmp_path / "live.json"
    code, out, err = _run(capsys, str(EXAMPLE), "--json", "--save-snapshot", str(saved))
    assert code == 0, (out, err)
    data = json.loads(out)
    assert not [f for f in data["findings"] if f["severity"] == "error"]
    assert all(u["id"].startswith("HOST") for u in data["unknown"])
    # The saved snapshot replays offline to the same report.
    code2, out2, _ = _run(capsys, "--from-snapshot", str(saved), "--json")
    assert (code2, json.loads(out2)) == (code, data)


def test_unknown_service_exits_2(hooked_sessions: None, capsys: pytest.CaptureFixture[str]) -> None:
    world.build_world(clients.make_session(None, "us-east-1"))
    code, _, err = _run(capsys, "--cluster", world.NAMES.cluster, "--service", "nope")
    assert code == 2
    assert "service 'nope' not found" in err


def test_unreachable_aws_exits_3(
    aws: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the with-block ends
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    # One attempt: the test is about the exit code, not botocore's backoff.
    monkeypatch.setattr(
        clients, "RETRY_CONFIG", Config(retries={"mode": "standard", "max_attempts": 1})
    )
    code, _, err = _run(capsys, "--cluster", "c", "--service", "s")
    assert code == 3
    assert "DescribeClusters" in err and "AWS_ENDPOINT_URL" in err


def test_unknown_profile_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config"
    config.write_text("[profile real]\nregion = us-east-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    code, _, err = _run(capsys, "--cluster", "c", "--service", "s", "--profile", "nope")
    assert code == 2
    assert "--profile nope: no such AWS profile" in err and "list-profiles" in err


@pytest.mark.parametrize(
    ("where", "why"), [("missing/snap.json", "does not exist"), (".", "is a directory")]
)
def test_unwritable_save_path_exits_2_before_any_aws_call(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
    why: str,
) -> None:
    def no_collection(*_: Any, **__: Any) -> Snap:
        raise AssertionError("collected although the snapshot could not be saved")

    monkeypatch.setattr(doctor_cli.facts, "collect", no_collection)
    path = str(tmp_path / where)
    code, _, err = _run(capsys, "--cluster", "c", "--service", "s", "--save-snapshot", path)
    assert code == 2
    assert f"--save-snapshot {path}" in err and why in err
