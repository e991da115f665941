"""The snapshot format's vocabulary (checks/kinds.py): each kind's call, and the target model."""

from __future__ import annotations

import botocore.session
import pytest
from pydantic import ValidationError

from ecs_gpu.checks.kinds import (
    KIND_SOURCES,
    KIND_TABLE,
    KINDS,
    OBJECT_KINDS,
    TargetNames,
    WarmPoolTarget,
    permissions,
)

_BOTOCORE = botocore.session.get_session()


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_an_operation_whose_output_leads_to_one_item(kind: str) -> None:
    src = KIND_TABLE[kind]
    shape = _BOTOCORE.get_service_model(src.service).operation_model(src.operation).output_shape
    for member in src.items:
        shape = shape.members[member]
        while shape.type_name == "list":
            shape = shape.member
    assert shape.type_name == "structure", (kind, shape.name)
    # An object kind maps a key to the whole output; every other kind names its items.
    assert (src.items == ()) == (src.object_of is not None)


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_needs_the_iam_action_of_the_call_a_failure_names(kind: str) -> None:
    src = KIND_TABLE[kind]
    assert f"{src.service}:{src.collected_by}" in src.permissions
    assert all(p.split(":")[0] == src.service for p in src.permissions)


def test_the_derived_tables_follow_the_one_table() -> None:
    assert KINDS == tuple(KIND_TABLE)
    assert set(KIND_SOURCES) == set(KINDS)
    assert KIND_SOURCES["instances"] == ("ec2", "DescribeInstances", ("Reservations", "Instances"))
    assert OBJECT_KINDS == {
        "warm_pools": "Auto Scaling group name -> DescribeWarmPool output",
        "host_probes": "instance id -> invocation",
    }


def test_permissions_are_those_of_the_needs_asked_for_once_each_in_table_order() -> None:
    assert permissions("core") == ("ecs:DescribeClusters", "ecs:DescribeServices")
    assert permissions("probe") == ("ssm:SendCommand", "ssm:GetCommandInvocation")
    every = permissions("core", "always", "warm_pool", "probe")
    assert len(every) == len(set(every))
    assert every == tuple(p for src in KIND_TABLE.values() for p in src.permissions)
    assert permissions() == ()


def test_the_target_is_strict_and_closed() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        TargetNames(cluster="c", service="s", bogus=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="valid string"):
        TargetNames(cluster="c", service=3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="valid integer"):
        WarmPoolTarget(
            min_size="1",  # type: ignore[arg-type]
            pool_state="Stopped",
            hook_name="h",
            hook_timeout_s=600,
        )


def test_the_target_as_the_snapshot_holds_it_has_every_key() -> None:
    t = TargetNames(cluster="c", service="s")
    held = t.as_dict()
    assert held["cluster"] == "c" and held["service"] == "s"
    assert set(held) == set(TargetNames.model_fields)
    assert all(v is None for k, v in held.items() if k not in ("cluster", "service"))
    assert TargetNames.model_validate(held) == t
