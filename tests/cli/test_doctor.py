"""``ecs-gpu doctor`` end to end: offline from snapshots, live against moto, exit codes 0/1/2/3."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from rich.console import Console

from conftest import JUNK, FakeEndpoint, http_200
from ecs_gpu.aws import clients
from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.cli import doctor as doctor_cli
from ecs_gpu.cli import main
from ecs_gpu.contracts.naming import Names
from ecs_gpu.errors import EXIT_BROKEN_PIPE, BadInputError
from support import world

# Every finding rendered here quotes only commands the AWS CLI accepts (as in checks/doctor/).
pytestmark = pytest.mark.usefixtures("fixes_quote_runnable_commands")

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
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, healthy()), "--json", "-")
    assert code == 0
    data = json.loads(out)
    assert data["findings"] == [] and data["unknown"] == [] and data["missing_permissions"] == []
    assert "ECS003" in data["ok"]


def test_bare_json_prints_only_the_report_on_stdout(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, healthy()), "--json")
    assert code == 0
    assert "ECS003" in json.loads(out)["ok"]


def test_broken_snapshot_exits_1_with_findings(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = healthy()
    for r in snap["metric_data"]:
        r["Timestamps"], r["Values"] = [], []
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, snap), "--json", "-")
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


def test_table_at_80_columns_cuts_no_id_and_wraps_no_word(
    healthy: Callable[[], Snap],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A pipe or CI log is 80 columns: ids and evidence stay whole (they were folded)."""
    snap = healthy()
    snap["container_instances"][0]["agentConnected"] = False
    del snap["stacks"]
    monkeypatch.setattr(doctor_cli, "console", Console(width=80, file=sys.stdout))
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, snap))
    assert code == 1
    assert "…" not in out
    lines = out.splitlines()
    assert any("container_instances[i-0ad34247c1f0e9b21].agentConnected" in x for x in lines)
    assert any("ECS002" in x for x in lines) and any("STK001" in x for x in lines)


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
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, snap), "--json", "-")
    assert code == 3
    data = json.loads(out)
    assert data["missing_permissions"][0]["permission"] == "cloudwatch:DescribeAlarms"
    assert {u["id"] for u in data["unknown"]} == {"ALM001", "ALM002", "ALM003"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such snapshot file"),
        ("{not json", "not a JSON snapshot"),
        ("[1, 2]", "a snapshot is a JSON object keyed by kind, got a list ([1, 2])"),
        ("1e999", "got a number (1e999)"),  # not the parser's internal name for it
        ('{"servces": []}', "unknown snapshot keys servces"),
        ('{"_collection": {"version": 99}}', "_collection.version is 99"),
        ("{}", "no _collection and no services"),
        ('{"_collection": []}', "_collection is a list, not an object"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"_collection": {"version": 1e999}}', "_collection.version is 1e999"),
    ],
    ids=[
        "missing",
        "not-json",
        "list",
        "huge-number",
        "typo-kind",
        "version",
        "empty-object",
        "collection-list",
        "deep",
        "huge-version",
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
    assert "Traceback" not in err


def test_non_utf8_snapshot_names_the_byte(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "bad.json"
    p.write_bytes(json.dumps(healthy()).encode()[:40] + b"\xff" + b"\n}")
    code, _, err = _run(capsys, "--from-snapshot", str(p))
    assert code == 2
    assert "bad.json: not UTF-8 text: byte 40 (line 1) is 0xff" in " ".join(err.split())


def _nested(snap: Snap, path: tuple[str | int, ...], value: Any) -> None:
    obj: Any = snap
    for part in path[:-1]:
        obj = obj[part]
    obj[path[-1]] = value


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        # A wrong type deep inside an AWS item: named by its JSON path and botocore's type.
        (
            ("container_instances", 0, "ec2InstanceId"),
            42,
            "container_instances[0].ec2InstanceId is a number 42; the field holds a string",
        ),
        (
            ("instances", 0, "InstanceId"),
            ["i-1"],
            'instances[0].InstanceId is a list ["i-1"]; the field holds a string',
        ),
        (("services", 0), [], "services[0] is a list []; the field holds an object"),
        (("tasks",), {}, "tasks is an object; it holds a list of items"),
        # A known field deep in an item is still typed (unknown fields are kept: see below).
        (
            ("instances", 0, "State", "Code"),
            "16",
            'instances[0].State.Code is a string "16"; the field holds a whole number',
        ),
        # Numbers no AWS field holds.
        (
            ("services", 0, "desiredCount"),
            2**40,
            "services[0].desiredCount = 1099511627776 is outside the integer range",
        ),
        (
            ("_collection", "target", "cluster"),
            1,
            "_collection.target.cluster: input should be a valid string (got 1)",
        ),
        (
            ("_collection", "denied"),
            [{"call": "x", "permission": "y", "code": "z", "kinds": ["servces"]}],
            "_collection.denied[0].kinds[0]: input should be",
        ),
        (("_collection", "target", "service"), None, "_collection.target.service: input should"),
        (("_collection", "probe_hosts"), "yes", "_collection.probe_hosts: input should be a"),
        (("_collection", "collected_at"), "yesterday", "not an ISO-8601 time"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else None,
)
def test_mistyped_snapshot_exits_2_naming_the_json_path(
    healthy: Callable[[], Snap],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    path: tuple[str | int, ...],
    value: Any,
    message: str,
) -> None:
    snap = healthy()
    _nested(snap, path, value)
    code, out, err = _run(capsys, "--from-snapshot", _write(tmp_path, snap))
    assert code == 2, out
    flat = " ".join(err.split())
    assert "snap.json: 1 problem in the snapshot" in flat
    assert message in flat
    assert "Fix:" in flat


def test_fields_unknown_to_botocore_are_accepted_and_checks_run(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # AWS adds response fields; a snapshot from a newer botocore (or API) carries them.
    snap = healthy()
    snap["instances"][0]["FutureNetworkMode"] = {"Mode": "fast", "Lanes": [1, 2]}
    snap["container_instances"][0]["agentConected"] = False
    snap["services"][0]["deployments"][0]["newKnob"] = "x"
    code, out, err = _run(capsys, "--from-snapshot", _write(tmp_path, snap), "--json", "-")
    assert (code, err) == (0, "")
    data = json.loads(out)
    _, reference, _ = _run(capsys, "--from-snapshot", _write(tmp_path, healthy()), "--json", "-")
    assert data == json.loads(reference)
    assert "ECS003" in data["ok"] and data["unknown"] == []
    # The same snapshot with one of them broken still runs the checks on the rest: a
    # known field beside unknown ones keeps its type check.
    snap["instances"][0]["InstanceId"] = 7
    code, _, err = _run(capsys, "--from-snapshot", _write(tmp_path, snap))
    assert code == 2
    assert "instances[0].InstanceId is a number 7; the field holds a string" in " ".join(
        err.split()
    )


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("1" + "0" * 5000, "services[0].desiredCount = 100000000000...(5001 characters) has"),
        ("1e400", "services[0].desiredCount = 1e400 is too large for a floating-point"),
        ("NaN", "services[0].desiredCount = NaN is not a number JSON allows"),
    ],
    ids=["5000-digits", "1e400", "NaN"],
)
def test_huge_number_exits_2_naming_the_json_path(
    healthy: Callable[[], Snap],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    literal: str,
    message: str,
) -> None:
    snap = healthy()
    snap["services"][0]["desiredCount"] = "@@N@@"
    p = tmp_path / "snap.json"
    p.write_text(json.dumps(snap).replace('"@@N@@"', literal))
    code, _, err = _run(capsys, "--from-snapshot", str(p))
    assert code == 2
    assert message in " ".join(err.split())


def test_nothing_checked_is_never_exit_0(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A valid snapshot that holds no kind: every check unknown, no call recorded as denied.
    snap = {COLLECTION_KEY: healthy()[COLLECTION_KEY]}
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, snap))
    assert code == 3
    assert "Nothing was checked" in " ".join(out.split())
    code, out, err = _run(capsys, "--from-snapshot", _write(tmp_path, snap), "--json", "-")
    assert code == 3
    assert json.loads(out)["ok"] == [] and "Nothing was checked" in " ".join(err.split())


def test_one_check_that_ran_is_something_checked(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = {k: v for k, v in healthy().items() if k in (COLLECTION_KEY, "services")}
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, snap), "--json", "-")
    assert code == 0
    # SVC003 too: without [capacity.spot] in the target it has nothing to compare.
    assert json.loads(out)["ok"] == ["SVC000", "SVC001", "SVC003"]


def test_json_file_keeps_the_terminal_report(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    code, out, _ = _run(
        capsys, "--from-snapshot", _write(tmp_path, healthy()), "--json", str(report)
    )
    assert code == 0
    assert "No finding." in out and f"report JSON: {report}\n" in out
    assert json.loads(report.read_text())["findings"] == []


def test_save_snapshot_to_stdout_prints_only_the_snapshot(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = healthy()
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, snap), "--save-snapshot", "-")
    assert code == 0
    assert json.loads(out) == snap


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--save-snapshot", "{snap}"], "--save-snapshot {snap}: is the input --from-snapshot"),
        (["--json", "{snap}"], "--json {snap}: is the input --from-snapshot"),
        (
            ["--json", "{tmp}/out.json", "--save-snapshot", "{tmp}/out.json"],
            "--json and --save-snapshot: both write",
        ),
        (["--json", "-", "--save-snapshot", "-"], "--json and --save-snapshot: both write -"),
    ],
    ids=["save-over-input", "json-over-input", "same-file", "both-stdout"],
)
def test_outputs_may_not_overwrite_the_input_or_each_other(
    healthy: Callable[[], Snap],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    snap_path = _write(tmp_path, healthy())
    before = Path(snap_path).read_bytes()

    def fill(text: str) -> str:
        return text.replace("{snap}", snap_path).replace("{tmp}", str(tmp_path))

    code, _, err = _run(capsys, "--from-snapshot", snap_path, *map(fill, argv))
    assert code == 2
    assert fill(message) in " ".join(err.split())
    assert Path(snap_path).read_bytes() == before
    assert not (tmp_path / "out.json").exists()


def test_save_snapshot_is_atomic(
    healthy: Callable[[], Snap],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    target = tmp_path / "saved.json"
    target.write_text("previous")

    def interrupted_rename(src: Any, dst: Any) -> None:
        assert Path(src).read_text().startswith("{")  # the whole snapshot was written...
        raise KeyboardInterrupt  # ...and Ctrl-C came before the rename

    monkeypatch.setattr(doctor_cli.outputs.os, "replace", interrupted_rename)
    code, _, _ = _run(
        capsys, "--from-snapshot", _write(tmp_path, healthy()), "--save-snapshot", str(target)
    )
    assert code == 130
    # Interrupted before the rename: the old file is whole, no temporary file is left.
    assert target.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["saved.json", "snap.json"]


def test_no_target_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys)
    assert code == 2
    assert "--cluster" in err and "--from-snapshot" in err


@pytest.fixture
def hooked_sessions(aws: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's sessions get the hooks for what moto lacks (tests/support/world.py)."""
    real = clients.make_session

    def make(profile: str | None = None, region: str | None = None) -> boto3.Session:
        s = real(profile, region)
        world.install_moto_gaps(s)
        return s

    monkeypatch.setattr(clients, "make_session", make)


def _spec(tmp_path: Path) -> str:
    """The spec the moto world is (task-gpus on g5.xlarge; see world.SPEC_TOML)."""
    p = tmp_path / "vllm-g5.toml"
    p.write_text(world.SPEC_TOML)
    return str(p)


def test_live_doctor_from_spec_against_moto(
    hooked_sessions: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = clients.make_session(None, "us-east-1")
    world.build_world(session, instances=2, tasks=1)
    saved = tmp_path / "live.json"
    code, out, err = _run(capsys, _spec(tmp_path), "--json", "-", "--save-snapshot", str(saved))
    assert code == 0, (out, err)
    data = json.loads(out)
    assert not [f for f in data["findings"] if f["severity"] == "error"]
    assert all(u["id"].startswith("HOST") for u in data["unknown"])
    # The saved snapshot replays offline to the same report.
    code2, out2, _ = _run(capsys, "--from-snapshot", str(saved), "--json", "-")
    assert (code2, json.loads(out2)) == (code, data)


def test_warm_pool_spec_against_moto_replays_from_its_snapshot(
    hooked_sessions: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from support.snapshot_variants import WARM_POOL_TOML, warm_pool_spec

    session = clients.make_session(None, "us-east-1")
    world.build_world(session, instances=2, tasks=1)
    # The hook as an older deploy left it: shorter than the spec's heartbeat.
    world.add_warm_pool(session, warm_pool_spec())
    session.client("autoscaling").put_lifecycle_hook(
        AutoScalingGroupName=world.NAMES.asg,
        LifecycleHookName=f"{world.NAMES.asg}-launch",
        LifecycleTransition="autoscaling:EC2_INSTANCE_LAUNCHING",
        HeartbeatTimeout=600,
        DefaultResult="CONTINUE",
    )
    spec = tmp_path / "vllm-g5.toml"
    spec.write_text(world.SPEC_TOML + WARM_POOL_TOML)
    saved = tmp_path / "warm.json"
    code, out, err = _run(capsys, str(spec), "--json", "-", "--save-snapshot", str(saved))
    assert code == 0, (out, err)  # a warning only
    data = json.loads(out)
    # The world builds the resources without CloudFormation: no stack of the spec's name.
    assert [(f["id"], f["severity"]) for f in data["findings"]] == [
        ("ASG006", "warning"),
        ("STK001", "warning"),
    ]
    assert {"ASG005", "ASG007"} <= set(data["ok"])
    snap = json.loads(saved.read_text())
    assert set(snap["warm_pools"]) == {world.NAMES.asg}
    assert snap[COLLECTION_KEY]["target"]["warm_pool"]["hook_timeout_s"] == 2015
    # The new kinds replay offline to the same report.
    code2, out2, _ = _run(capsys, "--from-snapshot", str(saved), "--json", "-")
    assert (code2, json.loads(out2)) == (code, data)


def test_stack_finds_the_spec_deployed_as_that_stack(
    hooked_sessions: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One spec deployed twice: the default stack and --stack vllm-g5-staging, whose
    # cluster, service and ASG are named after the stack (options.names_of).
    session = clients.make_session(None, "us-east-1")
    world.build_world(session, instances=3, tasks=1)
    staging = Names("vllm-g5-staging")
    world.build_world(session, instances=2, tasks=1, names=staging)
    saved = tmp_path / "staging.json"
    code, out, err = _run(
        capsys, _spec(tmp_path), "--stack", "vllm-g5-staging", "--json", "-",
        "--save-snapshot", str(saved),
    )  # fmt: skip
    assert code == 0, (out, err)
    target = json.loads(saved.read_text())[COLLECTION_KEY]["target"]
    assert target == {
        "cluster": "vllm-g5-staging",
        "service": "vllm-g5-staging",
        "asg": "vllm-g5-staging-gpu-asg",
        "capacity_provider": "cp-vllm-g5-staging-gpu",
        "stack": "vllm-g5-staging",
        "missing_metric_alarm": "vllm-g5-staging-gpu-metric-missing",
        "signal": "task-gpus",
        "gpu_guard": False,
        "fast_path_threshold": None,
        "fast_path_cooldown_s": None,
        "fast_scale_in_threshold": None,
        "warm_pool": None,
        "spot": None,
        "schedule": [],  # the spec has no [[scaling.schedule]]
        "sleep_path": False,  # min_tasks 1 and no schedule: nothing sleeps
        "sleep_minutes": None,
    }
    snap = json.loads(saved.read_text())
    # It read that deployment's objects, not the default stack's (three instances there).
    assert [c["clusterName"] for c in snap["clusters"]] == ["vllm-g5-staging"]
    assert len(snap["container_instances"]) == 2
    assert [g["AutoScalingGroupName"] for g in snap["auto_scaling_groups"]] == [staging.asg]


def test_stack_name_outside_the_name_pattern_keeps_its_own_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A stack name that is not a valid service name: the resources take the hashed
    # base the construct gives them; the stack is still looked up by the name given.
    from ecs_gpu.contracts.naming import CONSTRUCT_ID, deployment_base

    got: list[Any] = []

    def collect(_: Any, target: Any, **__: Any) -> Snap:
        got.append(target)
        raise BadInputError("stop after the target")

    monkeypatch.setattr(doctor_cli.facts, "collect", collect)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    # doctor resolves credentials before collecting, as every AWS command does.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    code, _, _ = _run(capsys, _spec(tmp_path), "--stack", "VllmStaging")
    assert code == 2 and len(got) == 1
    base = deployment_base("vllm-g5", "VllmStaging", CONSTRUCT_ID, standalone_id=CONSTRUCT_ID)
    assert base.startswith("vllm-g5-") and base != "vllm-g5"
    assert (got[0].stack, got[0].cluster, got[0].asg) == ("VllmStaging", base, f"{base}-gpu-asg")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--stack", "x", "--cluster", "c", "--service", "s"), "--stack x finds the resources"),
        (
            ("--stack", "x", "--from-snapshot", "snap.json"),
            "drop SPEC, --stack and --probe-hosts",
        ),
        (("SPEC", "--stack", "1-bad"), "--stack '1-bad': not a CloudFormation stack name"),
    ],
)
def test_stack_misuse_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str
) -> None:
    args = [_spec(tmp_path) if a == "SPEC" else a for a in argv]
    code, _, err = _run(capsys, *args)
    assert code == 2
    assert message in " ".join(err.split())


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
    ("where", "why"), [("missing/snap.json", "does not exist"), (".", "is a folder")]
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


def test_a_healthy_doctor_report_into_a_closed_pipe_exits_141(
    healthy: Callable[[], Snap], tmp_path: Path
) -> None:
    """The real process, its stdout a pipe whose reader closed before it wrote."""
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(healthy()))
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head -0`: the reader is gone
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "ecs_gpu", "doctor", "--from-snapshot", str(snap)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            env={**os.environ, "PYTHONPATH": str(Path(doctor_cli.__file__).parents[2])},
        )
    finally:
        os.close(write_end)
    assert proc.returncode == EXIT_BROKEN_PIPE, proc.stderr
    # No "errors found", no "Exception ignored ... BrokenPipeError" at exit.
    assert proc.stderr == ""


def test_a_snapshot_with_no_service_exits_1_naming_svc000(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = healthy()
    snap["services"] = []
    code, out, _ = _run(capsys, "--from-snapshot", _write(tmp_path, snap), "--json", "-")
    assert code == 1
    data = json.loads(out)
    assert [f["id"] for f in data["findings"]] == ["SVC000"]
    assert "TD002" in {u["id"] for u in data["unknown"]}


def test_an_endpoint_answering_junk_exits_3_naming_it(
    fake_endpoint: Callable[..., FakeEndpoint], capsys: pytest.CaptureFixture[str]
) -> None:
    server = fake_endpoint(http_200(JUNK, "application/x-amz-json-1.1"))
    code, _, err = _run(capsys, "--cluster", "prod", "--service", "llm")
    err = " ".join(err.split())
    assert code == 3, err
    assert f"cannot reach AWS for ecs DescribeClusters: {server.url} answered" in err
    assert "internal error" not in err and "UnicodeDecodeError" not in err


def test_an_empty_cluster_or_service_is_refused_before_any_call(
    fake_endpoint: Callable[..., FakeEndpoint], capsys: pytest.CaptureFixture[str]
) -> None:
    server = fake_endpoint(http_200(JUNK, "application/x-amz-json-1.1"))
    code, _, err = _run(capsys, "--cluster", "", "--service", "llm")
    assert code == 2 and "--cluster is empty" in err
    server.close()
    assert server.requests == 0


@pytest.mark.parametrize("process", ["/nonexistent/creds", "/bin/echo notjson"])
def test_a_failing_credential_process_is_named_before_any_collection(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    process: str,
) -> None:
    """doctor resolved credentials only inside its first client, where a process that
    prints no JSON read as a bad AWS_ENDPOINT_URL and a missing one as an internal error."""
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    config = tmp_path / "config"
    config.write_text(f"[profile p]\nregion = us-east-1\ncredential_process = {process}\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    code, _, err = _run(capsys, str(EXAMPLE), "--profile", "p")
    err = " ".join(err.split())
    assert code == 2, err
    assert f"AWS profile 'p' (credential_process runs {process.split()[0]})" in err
    assert "AWS_ENDPOINT_URL" not in err and "internal error" not in err
