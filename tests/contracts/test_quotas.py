"""The EC2 vCPU quotas a GPU fleet runs under (contracts/quotas.py): each family's group,
the Service Quotas codes, and the command that asks for more."""

from __future__ import annotations

import fnmatch

import pytest

from ecs_gpu import catalog
from ecs_gpu.contracts import quotas
from support.aws_cli_model import problems


def test_quota_codes_follow_the_family() -> None:
    assert quotas.on_demand("g6e.12xlarge").code == "L-DB2E81BA"
    assert quotas.on_demand("p5.48xlarge").code == "L-417A185B"
    assert quotas.SPOT["G"].code == "L-3819A6DF" and quotas.SPOT["P"].code == "L-7212CCBC"


def test_every_catalog_type_has_an_on_demand_and_a_spot_quota_of_its_letter() -> None:
    for name, it in catalog.CATALOG.items():
        letter = it.family[0].upper()
        assert quotas.group(name) == letter
        assert quotas.on_demand(name) is quotas.ON_DEMAND[letter]
        assert quotas.spot(name) is quotas.SPOT[letter]


def test_each_quota_counts_the_instances_of_its_families() -> None:
    # The type patterns are DescribeInstances' instance-type filter: each catalog type
    # matches its own group's patterns and not the other group's.
    for name in catalog.CATALOG:
        own = quotas.on_demand(name).type_patterns
        other = next(q for q in quotas.ON_DEMAND.values() if q.type_patterns != own)
        assert any(fnmatch.fnmatch(name, p) for p in own), name
        assert not any(fnmatch.fnmatch(name, p) for p in other.type_patterns), name
    assert quotas.SPOT["G"].type_patterns == quotas.ON_DEMAND["G"].type_patterns


def test_an_unknown_type_is_refused_as_the_catalog_refuses_it() -> None:
    with pytest.raises(catalog.UnknownInstanceType):
        quotas.group("m5.large")


def test_the_increase_command_asks_service_quotas_for_the_value_in_the_region() -> None:
    cmd = quotas.increase_command(quotas.SPOT["P"], 192, "eu-west-1")
    assert cmd == (
        "aws service-quotas request-service-quota-increase --service-code ec2 "
        "--quota-code L-7212CCBC --desired-value 192 --region eu-west-1"
    )
    assert problems(cmd) == []  # botocore's model takes every option as given
