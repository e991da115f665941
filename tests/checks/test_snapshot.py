"""The snapshot format (doctor/snapshot.py): what it accepts and how it refuses the rest."""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.checks import snapshot as snapshots
from ecs_gpu.errors import BadInputError
from support.doctor_cases import CASES

# Every finding rendered here quotes only commands the AWS CLI accepts (as in checks/doctor/).
pytestmark = pytest.mark.usefixtures("fixes_quote_runnable_commands")

Snap = dict[str, Any]


def test_every_kind_has_a_botocore_item_shape() -> None:
    assert set(snapshots.KIND_SOURCES) == set(snapshots.KINDS)
    for kind in snapshots.KINDS:
        assert snapshots.item_shape(kind).type_name == "structure", kind


def test_the_kind_table_is_the_one_source() -> None:
    # The validator's Literal, the shape table and the collector's permissions all
    # come from KIND_TABLE: each row's call is among its own IAM actions.
    assert typing.get_args(snapshots.DeniedCall.model_fields["kinds"].annotation) == (
        typing.Literal[snapshots.KINDS],
    )
    assert tuple(snapshots.KIND_TABLE) == snapshots.KINDS
    for kind, src in snapshots.KIND_TABLE.items():
        assert f"{src.service}:{src.collected_by}" in src.permissions, kind
        assert all(p.startswith(f"{src.service}:") for p in src.permissions), kind
        assert (src.items == ()) == (kind in snapshots.OBJECT_KINDS), kind
    assert snapshots.permissions("warm_pool") == (
        "autoscaling:DescribeWarmPool",
        "autoscaling:DescribeLifecycleHooks",
    )


def test_healthy_and_every_broken_snapshot_are_valid(healthy: Callable[[], Snap]) -> None:
    # Each breakage is a shape AWS returns, so the format must accept it.
    assert snapshots.validate(healthy(), "healthy") == healthy()
    for check_id, breakage, *_ in CASES:
        s = healthy()
        breakage(s)
        snapshots.validate(s, check_id)


def test_round_trip_through_dumps_and_load(healthy: Callable[[], Snap], tmp_path: Path) -> None:
    p = tmp_path / "s.json"
    p.write_text(snapshots.dumps(healthy()))
    assert snapshots.load(p) == healthy()


def test_absent_kinds_are_allowed_but_collection_is_not(healthy: Callable[[], Snap]) -> None:
    meta = healthy()[snapshots.COLLECTION_KEY]
    assert snapshots.validate({snapshots.COLLECTION_KEY: meta}, "s") == {
        snapshots.COLLECTION_KEY: meta
    }
    # Without it the snapshot is raw AWS output, whose target must be inferable.
    with pytest.raises(BadInputError, match="s: services is empty and there is no _collection"):
        snapshots.validate({"services": []}, "s")
    with pytest.raises(BadInputError, match="s: no _collection and no services"):
        snapshots.validate({"clusters": []}, "s")


def test_nesting_beyond_the_limit_names_its_path(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    deep: Any = "x"
    for _ in range(snapshots.MAX_DEPTH + 1):
        deep = [deep]
    s["services"][0]["tags"] = deep
    with pytest.raises(BadInputError) as e:
        snapshots.validate(s, "s.json")
    assert e.value.message.startswith("s.json: services[0].tags[0][0]")
    assert f"more than {snapshots.MAX_DEPTH} levels" in e.value.message


def test_many_problems_are_listed_up_to_the_limit(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["container_instances"] = [{"ec2InstanceId": n} for n in range(25)]
    with pytest.raises(BadInputError) as e:
        snapshots.validate(s, "s.json")
    msg = e.value.message
    assert "25 problems" in msg and "... and 15 more" in msg
    assert "container_instances[9].ec2InstanceId" in msg
    assert "container_instances[10].ec2InstanceId" not in msg


def test_host_probe_map_keys_are_quoted_when_not_identifiers(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["host_probes"] = {"i-0 weird": {"Status": 3}}
    with pytest.raises(BadInputError, match=r'host_probes\["i-0 weird"\]\.Status is a number 3'):
        snapshots.validate(s, "s.json")


def test_timestamps_must_be_iso_or_numbers(healthy: Callable[[], Snap]) -> None:
    s = healthy()
    s["services"][0]["createdAt"] = 1764435600.5
    snapshots.validate(s, "s.json")
    s["services"][0]["createdAt"] = "last tuesday"
    with pytest.raises(BadInputError, match=r"services\[0\]\.createdAt = \"last tuesday\""):
        snapshots.validate(s, "s.json")


def test_huge_file_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = tmp_path / "big.json"
    p.write_text(json.dumps({"_collection": {}}))
    monkeypatch.setattr(snapshots, "MAX_BYTES", 4)
    with pytest.raises(BadInputError, match=r"big.json: larger than 4 bytes, too large"):
        snapshots.load(p)


def test_fields_unknown_to_botocore_are_kept_and_known_ones_still_typed(
    healthy: Callable[[], Snap],
) -> None:
    # A newer botocore or AWS API adds response fields: the file must still load.
    s = healthy()
    extra = {"Mode": "fast", "Lanes": [1, 2.5, None, True], "At": "not-a-time"}
    s["instances"][0]["FutureNetworkMode"] = extra
    s["container_instances"][0]["attachmentsV2"] = [{"id": 1}]
    loaded = snapshots.validate(s, "s.json")
    assert loaded["instances"][0]["FutureNetworkMode"] == extra
    assert loaded["container_instances"][0]["attachmentsV2"] == [{"id": 1}]
    # Beside them, a known field keeps its type check.
    s["instances"][0]["InstanceType"] = 5
    with pytest.raises(
        BadInputError, match=r"(?s)1 problem.*instances\[0\]\.InstanceType is a number"
    ):
        snapshots.validate(s, "s.json")


def test_unknown_fields_still_refuse_what_json_cannot_hold(
    healthy: Callable[[], Snap], tmp_path: Path
) -> None:
    s = healthy()
    s["instances"][0]["FutureNetworkMode"] = {"Lanes": ["@@N@@"]}
    p = tmp_path / "s.json"
    p.write_text(json.dumps(s).replace('"@@N@@"', "NaN"))
    with pytest.raises(BadInputError) as e:
        snapshots.load(p)
    assert "instances[0].FutureNetworkMode.Lanes[0] = NaN is not a number JSON allows" in (
        e.value.message
    )
    # Nesting under an unknown field is bounded like anywhere else.
    deep: Any = "x"
    for _ in range(snapshots.MAX_DEPTH + 1):
        deep = {"a": deep}
    s["instances"][0]["FutureNetworkMode"] = deep
    with pytest.raises(BadInputError, match=r"instances\[0\]\.FutureNetworkMode\.a\.a"):
        snapshots.validate(s, "s.json")


def test_warm_pools_is_an_object_of_describe_warm_pool_outputs(
    healthy: Callable[[], Snap],
) -> None:
    from support.snapshot_variants import as_warm_pool

    s = healthy()
    as_warm_pool(s)
    assert snapshots.validate(s, "s.json") == s
    s["warm_pools"]["vllm-g5-gpu-asg"]["WarmPoolConfiguration"]["MinSize"] = "1"
    s["lifecycle_hooks"][0]["HeartbeatTimeout"] = 2015.5
    with pytest.raises(BadInputError) as e:
        snapshots.validate(s, "s.json")
    flat = " ".join(e.value.message.split())
    assert "warm_pools.vllm-g5-gpu-asg.WarmPoolConfiguration.MinSize is a string" in flat
    assert "lifecycle_hooks[0].HeartbeatTimeout is a number 2015.5" in flat
    s["warm_pools"] = [s["warm_pools"]["vllm-g5-gpu-asg"]]
    with pytest.raises(BadInputError, match="Auto Scaling group name -> DescribeWarmPool output"):
        snapshots.validate(s, "s.json")
    # The spec's pool in _collection.target is typed too.
    s = healthy()
    as_warm_pool(s)
    s["_collection"]["target"]["warm_pool"]["hook_timeout_s"] = "2015"
    with pytest.raises(BadInputError, match=r"_collection\.target\.warm_pool\.hook_timeout_s"):
        snapshots.validate(s, "s.json")


def test_a_key_given_twice_is_refused_with_its_json_path(healthy: Callable[[], Snap]) -> None:
    text = snapshots.dumps(healthy())
    # A second "services" (json.loads keeps the last) would hide the collected one.
    hidden = text.replace('"services": [', '"services": [], "services": [', 1)
    with pytest.raises(BadInputError) as e:
        snapshots.parse(hidden.encode(), "s.json")
    assert "s.json: 1 problem" in e.value.message
    assert "  - services appears twice in its object" in e.value.message
    # Inside an item the path names the item; every duplicate is listed.
    nested = text.replace('"serviceName": ', '"serviceName": "x", "serviceName": ', 1).replace(
        '"version": 1', '"version": 1, "version": 1', 1
    )
    with pytest.raises(BadInputError) as e:
        snapshots.parse(nested.encode(), "s.json")
    assert "2 problems" in e.value.message
    assert "_collection.version appears twice" in e.value.message
    assert "services[0].serviceName appears twice" in e.value.message
    # The same key in two different objects is no duplicate.
    assert snapshots.parse(text.encode(), "s.json") == healthy()


def test_cli_refuses_a_duplicated_key_with_exit_2(
    healthy: Callable[[], Snap], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ecs_gpu.cli import main

    p = tmp_path / "dup.json"
    text = snapshots.dumps(healthy())
    p.write_text(text.replace('"services": [', '"services": [], "services": [', 1))
    assert main(["doctor", "--from-snapshot", str(p)]) == 2
    err = capsys.readouterr().err
    assert "services appears twice" in err and "Traceback" not in err
