"""Network rules (spec/rules/network.py): subnets, the security group quota, who may reach an
internet-facing listener."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ecs_gpu.spec import (
    parse_spec,
)

from ..specdata import (
    FULL,
    PATH,
    dumps,
    one_problem,
    with_,
)


def test_load_balancer_needs_two_subnets() -> None:
    text = with_("network", subnet_ids=["subnet-0123456789abcdef0"])
    line = one_problem(text, "network.subnet_ids", "['subnet-0123456789abcdef0']")
    assert "at least two Availability Zones" in line


def test_one_subnet_is_fine_without_a_load_balancer() -> None:
    doc = copy.deepcopy(FULL)
    del doc["load_balancer"]
    doc["network"]["subnet_ids"] = ["subnet-0123456789abcdef0"]
    assert parse_spec(dumps(doc), PATH).load_balancer is None


@pytest.mark.parametrize("public", [..., ["subnet-0123456789abcdef2"]])
def test_internet_facing_needs_two_public_subnets(public: Any) -> None:
    doc = copy.deepcopy(FULL)
    doc["load_balancer"]["scheme"] = "internet-facing"
    if public is ...:
        del doc["network"]["public_subnet_ids"]
    else:
        doc["network"]["public_subnet_ids"] = public
    line = one_problem(dumps(doc), "load_balancer.scheme", "'internet-facing'")
    assert "public_subnet_ids" in line and 'scheme = "internal"' in line


def test_internet_facing_without_network_uses_the_stack_vpc() -> None:
    doc = copy.deepcopy(FULL)
    del doc["network"]
    doc["load_balancer"]["scheme"] = "internet-facing"
    assert parse_spec(dumps(doc), PATH).network is None


def test_duplicate_subnets() -> None:
    dup = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef0"]
    line = one_problem(with_("network", subnet_ids=dup), "network.subnet_ids")
    assert "subnet-0123456789abcdef0 more than once" in line


def test_internet_facing_needs_ingress_cidrs() -> None:
    text = with_("load_balancer", scheme="internet-facing", ingress_cidrs=...)
    line = one_problem(text, "load_balancer.scheme", "'internet-facing'")
    assert "needs load_balancer.ingress_cidrs" in line and "checks no credentials" in line
    assert 'ingress_cidrs = ["0.0.0.0/0"]' in line.split("Fix:")[1]


def test_internal_load_balancer_needs_no_cidrs() -> None:
    spec = parse_spec(with_("load_balancer", ingress_cidrs=...), PATH)
    assert spec.load_balancer is not None and spec.load_balancer.ingress_cidrs is None


def test_open_to_everyone_on_purpose_is_accepted_with_a_note() -> None:
    text = with_("load_balancer", scheme="internet-facing", ingress_cidrs=["0.0.0.0/0"])
    spec = parse_spec(text, PATH)
    (note,) = spec.warnings(PATH)
    assert note.startswith(f"{PATH}: load_balancer.ingress_cidrs = ['0.0.0.0/0']: ")
    assert "the endpoint is unauthenticated: anyone on the internet can call the model" in note
    # Internal: reachable only inside the VPC, so no note.
    internal = parse_spec(with_("load_balancer", ingress_cidrs=["0.0.0.0/0"]), PATH)
    assert internal.warnings(PATH) == []


def test_plain_http_on_the_internet_is_a_note() -> None:
    text = with_(
        "load_balancer", scheme="internet-facing", certificate_arn=..., ingress_cidrs=["0.0.0.0/0"]
    )
    notes = parse_spec(text, PATH).warnings(PATH)
    assert len(notes) == 2 and any("plain HTTP" in n for n in notes)


def test_ingress_cidrs_fit_the_security_group_quota() -> None:
    cidrs = [f"10.0.{i}.0/24" for i in range(60)]
    line = one_problem(with_("load_balancer", ingress_cidrs=cidrs), "load_balancer.ingress_cidrs")
    assert "'60 CIDRs'" in line and "at most 60 inbound rules" in line
    assert "list at most 59" in line
    ok = parse_spec(with_("load_balancer", ingress_cidrs=cidrs[:59]), PATH)
    assert ok.load_balancer is not None and len(ok.load_balancer.ingress_cidrs or []) == 59
