"""AWS's answers as preflight's checks read them, each valid against botocore's output shape.

A made-up field fails ``validate_response`` (the validator botocore's Stubber uses).
DescribeCapacityReservations and the EC2 quota codes are answered here because moto
lacks them (moto 5.2: no DescribeCapacityReservations; Service Quotas knows only the
"vpc" service).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import botocore.session
from botocore.validate import ParamValidator

from ecs_gpu.checks.model import Finding
from ecs_gpu.checks.preflight.account import Result
from ecs_gpu.checks.snapshot import COLLECTION_KEY
from ecs_gpu.contracts import quotas

_BOTOCORE = botocore.session.get_session()


def validate_response(service: str, operation: str, response: dict[str, Any]) -> None:
    """Raise unless ``response`` is a valid output of the operation (Stubber's own check)."""
    shape = _BOTOCORE.get_service_model(service).operation_model(operation).output_shape
    report = ParamValidator().validate(response, shape)
    assert not report.has_errors(), f"{service} {operation}: {report.generate_report()}"


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
RID = "cr-0123456789abcdef0"


def quota(value: float) -> dict[str, Any]:
    q = {
        "ServiceCode": "ec2",
        "ServiceName": "Amazon Elastic Compute Cloud (Amazon EC2)",
        "QuotaArn": "arn:aws:servicequotas:us-east-1:123456789012:ec2/L-DB2E81BA",
        "QuotaCode": "L-DB2E81BA",
        "QuotaName": "Running On-Demand G and VT instances",
        "Value": value,
        "Unit": "None",
        "Adjustable": True,
        "GlobalQuota": False,
    }
    validate_response("service-quotas", "GetServiceQuota", {"Quota": q})
    return q


def instance(itype: str, cores: int, threads: int = 2) -> dict[str, Any]:
    i = {
        "InstanceId": "i-0123456789abcdef0",
        "InstanceType": itype,
        "CpuOptions": {"CoreCount": cores, "ThreadsPerCore": threads},
    }
    validate_response("ec2", "DescribeInstances", {"Reservations": [{"Instances": [i]}]})
    return i


def offerings(itype: str, location_type: str, locations: list[str]) -> list[dict[str, Any]]:
    items = [
        {"InstanceType": itype, "LocationType": location_type, "Location": loc} for loc in locations
    ]
    validate_response("ec2", "DescribeInstanceTypeOfferings", {"InstanceTypeOfferings": items})
    return items


def reservation(**over: Any) -> dict[str, Any]:
    r = {
        "CapacityReservationId": RID,
        "OwnerId": "123456789012",
        "InstanceType": "g6e.12xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-east-1a",
        "Tenancy": "default",
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "EbsOptimized": True,
        "EphemeralStorage": False,
        "State": "active",
        "EndDateType": "unlimited",
        "InstanceMatchCriteria": "targeted",
        "CreateDate": NOW - timedelta(days=30),
        **over,
    }
    validate_response("ec2", "DescribeCapacityReservations", {"CapacityReservations": [r]})
    return r


def subnets(vpc: str, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    items = [{"SubnetId": sid, "VpcId": vpc, "AvailabilityZone": az} for sid, az in pairs]
    validate_response("ec2", "DescribeSubnets", {"Subnets": items})
    return items


def snap(denied: list[dict[str, Any]] | None = None, **kinds: Any) -> dict[str, Any]:
    return {
        **kinds,
        COLLECTION_KEY: {"now": NOW.isoformat(), "denied": denied or [], "errors": []},
    }


def healthy_g5(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "vcpu_quota": {"Quota": quota(64.0), "source": "applied"},
        "vcpu_usage": [],
        "offerings_region": offerings("g5.xlarge", "region", ["us-east-1"]),
        "offerings_az": offerings(
            "g5.xlarge", "availability-zone", ["us-east-1a", "us-east-1b", "us-east-1c"]
        ),
        "availability_zones": [
            {"ZoneName": z, "State": "available", "ZoneType": "availability-zone"}
            for z in ("us-east-1a", "us-east-1b", "us-east-1c")
        ],
        "ami": {"parameter": "/aws/service/...", "value": "ami-0123456789abcdef0"},
        "service_linked_role": {"exists": True},
    }
    validate_response(
        "ec2", "DescribeAvailabilityZones", {"AvailabilityZones": base["availability_zones"]}
    )
    return snap(**{**base, **over})


def of(result: Result, check_id: str) -> list[Finding]:
    return [f for f in result.report.findings if f.id == check_id]


def status(result: Result, check_id: str) -> str:
    (r,) = [r for r in result.report.results if r.check.id == check_id]
    return r.status


def _spot_quota(value: float, group: str = "G", **more: float) -> dict[str, Any]:
    """The snapshot's Spot quotas by code: ``group``'s at ``value``, and any ``more`` groups."""
    out = {}
    for g, v in {group: value, **more}.items():
        q = quota(v)
        code = quotas.SPOT[g].code
        q.update(
            QuotaCode=code,
            QuotaName=quotas.SPOT[g].name,
            QuotaArn=f"arn:aws:servicequotas:us-east-1:123456789012:ec2/{code}",
        )
        out[code] = {"Quota": q, "source": "applied"}
    return out
