"""Preflight's network checks (checks/preflight/network.py) over plain answers: the zones
that offer the type, the capacity reservation, private subnets' way out."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from ecs_gpu.checks.model import Finding
from ecs_gpu.checks.preflight.account import Needs, evaluate

from .answers import NOW, RID, of, offerings, reservation, snap, subnets, validate_response


def test_a_type_not_offered_in_a_subnets_az_is_an_error(g6e: Needs) -> None:
    vpc = str(g6e.vpc_id)
    a, b = g6e.subnet_ids
    s = snap(
        offerings_az=offerings("g6e.12xlarge", "availability-zone", ["us-east-1a"]),
        subnets=subnets(vpc, [(a, "us-east-1a"), (b, "us-east-1e")]),
    )
    (f,) = of(evaluate(s, g6e), "PRE003")
    assert f.severity == "error"
    assert f.title == (
        f"g6e.12xlarge is not offered in us-east-1e, the AZ of subnet {b}: the group cannot "
        "launch there"
    )


def _odcr(g6e: Needs, r: dict[str, Any] | None) -> list[Finding]:
    vpc = str(g6e.vpc_id)
    a, b = g6e.subnet_ids
    s = snap(
        capacity_reservations=[] if r is None else [r],
        subnets=subnets(vpc, [(a, "us-east-1a"), (b, "us-east-1b")]),
    )
    return of(evaluate(s, g6e), "PRE005")


def test_a_fitting_reservation_passes(g6e: Needs) -> None:
    assert _odcr(g6e, reservation()) == []


@pytest.mark.parametrize(
    ("over", "field", "words"),
    [
        ({"InstanceType": "g6e.2xlarge"}, "InstanceType", "is for g6e.2xlarge"),
        ({"AvailabilityZone": "us-east-1d"}, "AvailabilityZone", "no instance can use it"),
        ({"TotalInstanceCount": 1, "AvailableInstanceCount": 1}, "TotalInstanceCount", "holds 1"),
        ({"State": "expired"}, "State", "is expired, not active"),
        ({"InstancePlatform": "Windows"}, "InstancePlatform", "Linux/UNIX"),
    ],
)
def test_a_reservation_that_does_not_fit_is_an_error(
    g6e: Needs, over: dict[str, Any], field: str, words: str
) -> None:
    found = _odcr(g6e, reservation(**over))
    errors = [f for f in found if f.severity == "error"]
    assert [f.evidence[0].field for f in errors] == [field]
    assert words in errors[0].title


def test_a_missing_reservation_is_an_error(g6e: Needs) -> None:
    (f,) = _odcr(g6e, None)
    assert (
        f.severity == "error"
        and f.title == f"capacity reservation {RID} does not exist in us-east-1"
    )


def test_a_reservation_ending_soon_or_open_or_partly_used_is_a_warning_or_note(
    g6e: Needs,
) -> None:
    found = _odcr(
        g6e,
        reservation(
            EndDateType="limited",
            EndDate=NOW + timedelta(days=2),
            InstanceMatchCriteria="open",
            AvailableInstanceCount=1,
        ),
    )
    assert {(f.evidence[0].field, f.severity) for f in found} == {
        ("EndDate", "warning"),
        ("InstanceMatchCriteria", "info"),
        ("AvailableInstanceCount", "warning"),
    }


def test_private_subnets_without_nat_need_the_endpoints(g6e: Needs) -> None:
    vpc = str(g6e.vpc_id)
    a, b = g6e.subnet_ids
    tables = [
        {
            "RouteTableId": "rtb-0123456789abcdef0",
            "VpcId": vpc,
            "Associations": [{"Main": True, "RouteTableId": "rtb-0123456789abcdef0"}],
            "Routes": [{"DestinationCidrBlock": "10.0.0.0/16", "GatewayId": "local"}],
        },
        {
            "RouteTableId": "rtb-0123456789abcdef1",
            "VpcId": vpc,
            "Associations": [{"SubnetId": b, "RouteTableId": "rtb-0123456789abcdef1"}],
            "Routes": [
                {"DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": "nat-0123456789abcdef0"}
            ],
        },
    ]
    validate_response("ec2", "DescribeRouteTables", {"RouteTables": tables})
    s = snap(
        subnets=subnets(vpc, [(a, "us-east-1a"), (b, "us-east-1b")]),
        route_tables=tables,
        vpc_endpoints=[],
    )
    (f,) = of(evaluate(s, g6e), "PRE011")
    assert f.severity == "error" and f"subnet {a} has no route out" in f.title
    missing = next(e.value for e in f.evidence if e.field == "missing")
    assert {"ecr.api", "ecr.dkr", "ecs", "ecs-agent", "ecs-telemetry", "logs", "ssm"} <= set(
        missing
    )
    assert "s3 (gateway)" in missing
