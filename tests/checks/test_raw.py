"""Snapshots of raw AWS output (doctor/raw.py): no _collection, each kind its call's output.

The raw snapshot is the healthy one as the AWS CLI prints each call (every
output checked against botocore's output shape, as Stubber checks), so it is
what a support engineer gets by pasting `aws ... describe-...` output.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.aws.facts import COLLECTION_KEY
from ecs_gpu.checks import raw
from ecs_gpu.checks import snapshot as snapshots
from ecs_gpu.checks.doctor import run_checks
from ecs_gpu.cli import main
from ecs_gpu.errors import BadInputError
from support.snapshots import ACCOUNT, KIND_SHAPES, NAMES, REGION, validate_response

# Every finding rendered here quotes only commands the AWS CLI accepts (as in checks/doctor/).
pytestmark = pytest.mark.usefixtures("fixes_quote_runnable_commands")

Snap = dict[str, Any]
NOW = datetime(2026, 11, 29, 17, 5, tzinfo=UTC)


def as_cli_output(snap: Snap) -> Snap:
    """Each kind of ``snap`` as the output of its call (what `aws ...` prints), no _collection."""
    out: Snap = {}
    for kind, value in snap.items():
        if kind == COLLECTION_KEY:
            continue
        service, op, member = KIND_SHAPES[kind]
        if kind == "task_definitions":
            (td,) = value
            output: Any = {"taskDefinition": td, "tags": []}
        elif kind == "instances":
            output = {"Reservations": [{"ReservationId": "r-0a1b2c3d", "Instances": value}]}
        elif kind in ("host_probes", "warm_pools"):
            out[kind] = value  # already outputs, by instance or group
            continue
        else:
            assert member is not None
            output = {member: value}
            if service == "ecs" and op.startswith("Describe") and kind != "task_definitions":
                output["failures"] = []
        validate_response(service, op, output)
        out[kind] = output
    return out


def _write(tmp_path: Path, snap: Snap, name: str = "raw.json") -> str:
    p = tmp_path / name
    p.write_text(json.dumps(snap))
    return str(p)


def test_cli_command_names_the_call() -> None:
    assert raw.cli_command("services") == "aws ecs describe-services"
    assert raw.cli_command("metric_data") == "aws cloudwatch get-metric-data"
    assert (
        raw.cli_command("scalable_targets")
        == "aws application-autoscaling describe-scalable-targets"
    )


def test_raw_output_infers_the_target_and_checks_as_usual(
    healthy: Callable[[], Snap],
) -> None:
    loaded = snapshots.validate(as_cli_output(healthy()), "raw.json", now=NOW)
    meta = loaded[COLLECTION_KEY]
    assert meta["target"] == {
        "cluster": NAMES.cluster,
        "service": NAMES.service,
        "asg": NAMES.asg,
        "capacity_provider": NAMES.capacity_provider,
        "stack": NAMES.stack,
        "missing_metric_alarm": NAMES.gpu_metric_missing_alarm,
        "signal": None,
        "gpu_guard": None,
        "fast_path_threshold": None,
        "fast_path_cooldown_s": None,
        "fast_scale_in_threshold": None,
        "warm_pool": None,
        "spot": None,
        "schedule": None,
        "sleep_path": None,
        "sleep_minutes": None,
    }
    assert meta["region"] == REGION and meta["collected_at"] == NOW.isoformat()
    assert meta["probe_hosts"] is True
    assumed = "\n".join(meta["assumed"])
    assert f"cluster {NAMES.cluster}: from the service's clusterArn" in assumed
    assert f"service {NAMES.service}: the one service in services" in assumed
    assert f"capacity provider {NAMES.capacity_provider}: from the service's" in assumed
    assert "collected at 2026-11-29T17:05:00+00:00: now" in assumed
    # The items came out of the outputs: the same checks decide the same way.
    expect = healthy()
    for kind in expect:
        if kind != COLLECTION_KEY:
            assert loaded[kind] == expect[kind], kind
    report = run_checks(loaded)
    assert report.findings == [] and report.unknown == []
    # The synthesized _collection is a valid one: the snapshot round-trips.
    assert snapshots.parse(snapshots.dumps(loaded).encode(), "again") == loaded


def test_doctor_reads_raw_output_and_says_what_it_assumed(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, as_cli_output(healthy()))
    assert main(["doctor", "--from-snapshot", path, "--json", "-"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["findings"] == [] and data["unknown"] == []
    assert any(a.startswith(f"service {NAMES.service}") for a in data["assumed"])
    # stdout carries only the JSON; the assumptions still reach a person.
    assert "Assumed (the snapshot has no _collection)" in captured.err
    assert main(["doctor", "--from-snapshot", path]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Assumed (the snapshot has no _collection)" in out
    assert f"- cluster {NAMES.cluster}: from the service's clusterArn" in out


def test_a_broken_raw_snapshot_finds_what_is_broken(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = healthy()
    snap["capacity_providers"][0]["autoScalingGroupProvider"]["managedScaling"]["status"] = (
        "DISABLED"
    )
    path = _write(tmp_path, as_cli_output(snap))
    assert main(["doctor", "--from-snapshot", path, "--json", "-"]) == 1
    assert [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["ASG008"]


def test_only_services_is_enough_to_diagnose(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Just `aws ecs describe-services` output, pasted under "services"."""
    only = {"services": as_cli_output(healthy())["services"]}
    assert main(["doctor", "--from-snapshot", _write(tmp_path, only), "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"SVC000", "SVC001"} <= set(data["ok"])


def _two_services(healthy: Callable[[], Snap]) -> Snap:
    snap = healthy()
    other = copy.deepcopy(snap["services"][0])
    other["serviceName"] = "embed"
    other["serviceArn"] = other["serviceArn"].replace(f"/{NAMES.service}", "/embed")
    snap["services"].append(other)
    return as_cli_output(snap)


def test_several_services_exit_2_naming_them_and_how_to_choose(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, _two_services(healthy))
    assert main(["doctor", "--from-snapshot", path]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"holds 2 services ({NAMES.cluster}/{NAMES.service}, {NAMES.cluster}/embed)" in err
    assert "--cluster NAME --service NAME" in err
    # Choosing one diagnoses it alone.
    argv = ["doctor", "--from-snapshot", path, "--service", NAMES.service, "--json", "-"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert f"services: only {NAMES.service} kept of 2" in data["assumed"]
    assert main(["doctor", "--from-snapshot", path, "--service", "nope"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--service nope: no such service in the snapshot, which holds" in err


def test_several_clusters_without_a_cluster_arn_exit_2(healthy: Callable[[], Snap]) -> None:
    snap = as_cli_output(healthy())
    for svc in snap["services"]["services"]:
        del svc["clusterArn"]
        svc["serviceArn"] = f"arn:aws:ecs:{REGION}:{ACCOUNT}:service/{NAMES.service}"
    second = copy.deepcopy(snap["clusters"]["clusters"][0])
    second["clusterName"] = "staging"
    snap["clusters"]["clusters"].append(second)
    with pytest.raises(BadInputError, match=rf"2 clusters \({NAMES.cluster}, staging\)"):
        snapshots.validate(snap, "raw.json", now=NOW)
    chosen = snapshots.validate(snap, "raw.json", now=NOW, cluster="staging")
    assert [c["clusterName"] for c in chosen["clusters"]] == ["staging"]
    assert chosen[COLLECTION_KEY]["target"]["cluster"] == "staging"


def test_an_empty_services_output_with_service_named_is_svc000(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = healthy()
    snap["services"] = []
    path = _write(tmp_path, as_cli_output(snap))
    argv = ["doctor", "--from-snapshot", path, "--cluster", NAMES.cluster]
    assert main([*argv, "--service", NAMES.service, "--json", "-"]) == 1
    assert [f["id"] for f in json.loads(capsys.readouterr().out)["findings"]] == ["SVC000"]
    assert main(argv) == 2
    assert "services is empty" in capsys.readouterr().err


def test_an_object_that_is_not_the_calls_output_is_refused(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap = as_cli_output(healthy())
    snap["auto_scaling_groups"] = {"Groups": []}
    assert main(["doctor", "--from-snapshot", _write(tmp_path, snap)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "auto_scaling_groups is an object without AutoScalingGroups" in err
    assert "`aws autoscaling describe-auto-scaling-groups`" in err


def test_cluster_and_service_must_match_a_collected_snapshot(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, healthy(), "collected.json")
    assert main(["doctor", "--from-snapshot", path, "--service", NAMES.service]) == 0
    capsys.readouterr()
    assert main(["doctor", "--from-snapshot", path, "--service", "other"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"--service other, but the snapshot was collected for service {NAMES.service}" in err
    assert main(["doctor", "--from-snapshot", path, "--cluster", " "]) == 2
    assert "--cluster is empty" in capsys.readouterr().err


def test_save_snapshot_turns_raw_output_into_a_collected_snapshot(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "full.json"
    raw_path = _write(tmp_path, as_cli_output(healthy()))
    assert main(["doctor", "--from-snapshot", raw_path, "--save-snapshot", str(saved)]) == 0
    capsys.readouterr()
    full = json.loads(saved.read_text())
    assert full[COLLECTION_KEY]["tool"] == raw.TOOL and full[COLLECTION_KEY]["assumed"]
    assert main(["doctor", "--from-snapshot", str(saved)]) == 0
