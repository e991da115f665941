"""aws/preflight.py's read of the instances the vCPU quotas count.

One DescribeInstances serves both quotas, split by InstanceLifecycle.
moto (5.2) runs an instance launched with ``InstanceMarketOptions`` as Spot
and answers ``InstanceLifecycle: "spot"``, but matches DescribeInstances'
filter values exactly (AWS takes ``*`` and ``?`` wildcards, so ``g*`` finds
no instance on moto) and lacks the ``instance-lifecycle`` filter. So the
split is tested over AWS-shaped DescribeInstances answers through botocore's
Stubber (which checks them against the output shape), the denied call on
moto with IAM enforced; Service Quotas is stubbed as in
tests/cli/test_preflight.py (moto knows no EC2 code).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from cli.test_failures import as_user, restricted_user
from ecs_gpu.aws import preflight as pf
from ecs_gpu.checks.preflight.account import Needs
from ecs_gpu.checks.preflight.needs import spot_quota_needs
from ecs_gpu.contracts import quotas
from ecs_gpu.spec import parse_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ACCOUNT = "123456789012"


@pytest.fixture(scope="module")
def spot_needs() -> Needs:
    """The g5 example (4 x g5.xlarge) with [capacity.spot] over g5.xlarge and g6.xlarge."""
    text = (EXAMPLES / "g5-vllm.toml").read_text(encoding="utf-8")
    table = '\n[capacity.spot]\ninstance_types = ["g5.xlarge", "g6.xlarge"]\n\n[scaling]\n'
    return Needs.from_spec(
        parse_spec(text.replace("\n[scaling]\n", table), "spot.toml"), "us-east-1"
    )


def _instance(iid: str, itype: str, cores: int, lifecycle: str | None = None) -> dict[str, Any]:
    i: dict[str, Any] = {
        "InstanceId": iid,
        "InstanceType": itype,
        "State": {"Code": 16, "Name": "running"},
        "CpuOptions": {"CoreCount": cores, "ThreadsPerCore": 2},
    }
    if lifecycle is not None:
        i["InstanceLifecycle"] = lifecycle
    return i


SPOT_G5 = [_instance(f"i-0spot{n}", "g5.xlarge", 2, "spot") for n in range(3)]
ON_DEMAND_G5 = _instance("i-0ondemand", "g5.2xlarge", 4)
SCHEDULED_G5 = _instance("i-0scheduled", "g5.xlarge", 2, "scheduled")
SPOT_P4D = _instance("i-0spotp4d", "p4d.24xlarge", 48, "spot")


def _quota(quota: quotas.VcpuQuota, value: float) -> dict[str, Any]:
    return {
        "Quota": {
            "ServiceCode": "ec2",
            "QuotaArn": f"arn:aws:servicequotas:us-east-1:{ACCOUNT}:ec2/{quota.code}",
            "QuotaCode": quota.code,
            "QuotaName": quota.name,
            "Value": value,
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
        }
    }


class _Ec2:
    """moto's EC2 client, but DescribeInstances' pages come from the Stubber."""

    def __init__(self, real: Any, stubbed: Any) -> None:
        self.real, self.stubbed = real, stubbed

    def get_paginator(self, name: str) -> Any:
        return (self.stubbed if name == "describe_instances" else self.real).get_paginator(name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.fixture
def stubs(aws: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Stubber, Stubber]:
    """(Service Quotas, DescribeInstances) answered AWS-shaped; the rest from moto."""
    sq = boto3.Session().client("service-quotas")
    ec2 = boto3.Session().client("ec2")
    sq_stub, ec2_stub = Stubber(sq), Stubber(ec2)
    sq_stub.activate()
    ec2_stub.activate()
    real = pf.Collector.client

    def client(self: pf.Collector, service: str, region: str | None = None) -> Any:
        if service == "service-quotas":
            return sq
        got = real(self, service, region)
        return _Ec2(got, ec2) if service == "ec2" else got

    monkeypatch.setattr(pf.Collector, "client", client)
    return sq_stub, ec2_stub


def _quotas(stub: Stubber, needs: Needs, on_demand: float, spot: float) -> None:
    """Both quotas applied, in preflight's order: On-Demand, then Spot."""
    (sq,) = needs.spot_quotas
    for q, value in ((needs.quota, on_demand), (sq.quota, spot)):
        stub.add_response(
            "get_service_quota", _quota(q, value), {"ServiceCode": "ec2", "QuotaCode": q.code}
        )


def _instances(stub: Stubber, patterns: list[str], instances: list[dict[str, Any]]) -> None:
    """One DescribeInstances page, expected with the quotas' families and live states only."""
    filters = [
        {"Name": "instance-type", "Values": patterns},
        {"Name": "instance-state-name", "Values": ["pending", "running"]},
    ]
    answer = {"Reservations": [{"ReservationId": "r-0123456789abcdef0", "Instances": instances}]}
    stub.add_response("describe_instances", answer, {"Filters": filters})


def test_one_describe_instances_splits_on_demand_from_spot_by_lifecycle(
    stubs: tuple[Stubber, Stubber], spot_needs: Needs
) -> None:
    _, ec2 = stubs
    # The Stubber holds one answer: a second DescribeInstances would fail the read.
    _instances(ec2, ["g*", "vt*"], [*SPOT_G5, ON_DEMAND_G5, SCHEDULED_G5])
    snapshot = pf.collect(boto3.Session(), spot_needs)
    ec2.assert_no_pending_responses()
    assert [i["InstanceId"] for i in snapshot["spot_vcpu_usage"]] == [
        i["InstanceId"] for i in SPOT_G5
    ]
    assert [i["InstanceId"] for i in snapshot["vcpu_usage"]] == ["i-0ondemand"]


def test_quotas_of_two_family_groups_share_the_call_and_split_by_type(
    stubs: tuple[Stubber, Stubber], spot_needs: Needs
) -> None:
    """An On-Demand G fleet beside a P Spot quota: one call over g*, vt* and p*."""
    _, ec2 = stubs
    needs = dataclasses.replace(spot_needs, spot_quotas=spot_quota_needs(("p4d.24xlarge",)))
    _instances(ec2, ["g*", "vt*", "p*"], [SPOT_G5[0], SPOT_P4D, ON_DEMAND_G5])
    snapshot = pf.collect(boto3.Session(), needs)
    ec2.assert_no_pending_responses()
    assert [i["InstanceId"] for i in snapshot["spot_vcpu_usage"]] == ["i-0spotp4d"]
    assert [i["InstanceId"] for i in snapshot["vcpu_usage"]] == ["i-0ondemand"]


def test_a_spec_without_spot_reads_the_on_demand_usage_only(
    stubs: tuple[Stubber, Stubber],
) -> None:
    _, ec2 = stubs
    _instances(ec2, ["g*", "vt*"], [SPOT_G5[0], ON_DEMAND_G5])
    g5 = (EXAMPLES / "g5-vllm.toml").read_text(encoding="utf-8")
    snapshot = pf.collect(boto3.Session(), Needs.from_spec(parse_spec(g5, "g5.toml"), "us-east-1"))
    ec2.assert_no_pending_responses()
    assert [i["InstanceId"] for i in snapshot["vcpu_usage"]] == ["i-0ondemand"]
    assert "spot_vcpu_usage" not in snapshot


def test_spot_instances_running_now_leave_the_spot_group_short(
    stubs: tuple[Stubber, Stubber], spot_needs: Needs
) -> None:
    """24 Spot vCPUs; 3 g5.xlarge Spot instances hold 12: 12 free, room for 3 of the 5
    (4 at max_instances and 1 beside them while an instance refresh rolls)."""
    sq, ec2 = stubs
    _quotas(sq, spot_needs, on_demand=64.0, spot=24.0)
    _instances(ec2, ["g*", "vt*"], [*SPOT_G5, ON_DEMAND_G5])
    result = pf.preflight(boto3.Session(), spot_needs)
    sq.assert_no_pending_responses()
    (f,) = [f for f in result.report.findings if f.id == "PRE012"]
    assert f.severity == "warning"
    assert "12 of its 24 vCPUs are held by 3 running or pending Spot instance(s)" in f.title
    assert "12 free, room for 3 Spot instance(s) of 4 vCPUs" in f.title
    assert "--quota-code L-3819A6DF --desired-value 32" in f.fix
    (od,) = [f for f in result.report.findings if f.id == "PRE001"]
    assert "8 in use now" in od.title  # the g5.2xlarge only: Spot is PRE012's


def test_a_denied_describe_instances_leaves_both_quota_checks_deciding_without_usage(
    aws: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    spot_needs: Needs,
) -> None:
    """moto with IAM enforced: every preflight permission but ec2:DescribeInstances."""
    env = restricted_user([p for p in pf.PERMISSIONS if p != "ec2:DescribeInstances"])
    sq = boto3.Session().client("service-quotas")
    stub = Stubber(sq)
    _quotas(stub, spot_needs, on_demand=64.0, spot=64.0)
    stub.activate()
    real = pf.Collector.client

    def client(self: pf.Collector, service: str, region: str | None = None) -> Any:
        return sq if service == "service-quotas" else real(self, service, region)

    monkeypatch.setattr(pf.Collector, "client", client)
    request.getfixturevalue("iam_enforced")
    as_user(monkeypatch, env)
    result = pf.preflight(boto3.Session(), spot_needs)
    stub.assert_no_pending_responses()
    (denied,) = result.report.missing_permissions
    assert denied["permission"] == "ec2:DescribeInstances"
    assert denied["kinds"] == ["vcpu_usage", "spot_vcpu_usage"]
    (f,) = [f for f in result.report.findings if f.id == "PRE012"]
    assert f.severity == "info" and "Spot usage not read" in f.title
    assert not {"PRE001", "PRE012"} & {r.check.id for r in result.report.unknown}


def test_spot_types_of_two_families_read_both_spot_quotas_and_their_instances(
    stubs: tuple[Stubber, Stubber], spot_needs: Needs
) -> None:
    """A Spot group over g5 and p3: each family's Spot quota, one DescribeInstances over both."""
    sq, ec2 = stubs
    needs = dataclasses.replace(
        spot_needs, spot_quotas=spot_quota_needs(("g5.xlarge", "p3.2xlarge"))
    )
    for q, value in ((needs.quota, 64.0), (quotas.SPOT["G"], 64.0), (quotas.SPOT["P"], 8.0)):
        sq.add_response(
            "get_service_quota", _quota(q, value), {"ServiceCode": "ec2", "QuotaCode": q.code}
        )
    _instances(ec2, ["g*", "vt*", "p*"], [SPOT_G5[0], SPOT_P4D, ON_DEMAND_G5])
    result = pf.preflight(boto3.Session(), needs)
    sq.assert_no_pending_responses()
    ec2.assert_no_pending_responses()
    g, p = [f for f in result.report.findings if f.id == "PRE012"]
    assert g.severity == "info" and "4 held by 1 running or pending Spot" in g.title
    assert p.severity == "error" and "(L-7212CCBC) is 8 vCPUs" in p.title
    assert "96 held by 1 running or pending Spot instance(s)" in p.title


def test_this_stacks_own_instances_are_not_counted_as_usage_beside_the_need(
    stubs: tuple[Stubber, Stubber], spot_needs: Needs
) -> None:
    """A redeploy: the stack's two groups run instances; only another group's are usage.

    EC2 Auto Scaling tags what it launches with ``aws:autoscaling:groupName``.
    """
    sq, ec2 = stubs
    assert spot_needs.own_groups == ("vllm-g5-gpu-asg", "vllm-g5-spot-asg")

    def tagged(i: dict[str, Any], group: str) -> dict[str, Any]:
        return {**i, "Tags": [{"Key": "aws:autoscaling:groupName", "Value": group}]}

    own_od = [tagged(_instance(f"i-0own{n}", "g5.xlarge", 2), "vllm-g5-gpu-asg") for n in range(4)]
    own_spot = tagged(SPOT_G5[0], "vllm-g5-spot-asg")
    other = tagged(ON_DEMAND_G5, "another-asg")
    # 20 On-Demand vCPUs: the fleet's 16 at max_instances and the other group's 8 do not
    # fit; the stack's own 16 are part of the need. 20 Spot vCPUs: the need's 20, the own
    # Spot one inside it.
    _quotas(sq, spot_needs, on_demand=20.0, spot=20.0)
    _instances(ec2, ["g*", "vt*"], [*own_od, own_spot, other])
    snapshot = pf.collect(boto3.Session(), spot_needs)
    groups = [i["AutoScalingGroup"] for i in snapshot["vcpu_usage"]]
    assert groups == ["vllm-g5-gpu-asg"] * 4 + ["another-asg"]
    result = pf.evaluate(snapshot, spot_needs)
    (od,) = [f for f in result.report.findings if f.id == "PRE001"]
    assert od.severity == "warning" and "8 of its 20 vCPUs are in use" in od.title
    assert "--desired-value 28" in od.fix and "vllm-g5-gpu-asg" in od.fix
    got = {(e.kind, e.field): e.value for e in od.evidence}
    assert got[("vcpu_usage", "running_vcpus")] == 8
    assert got[("vcpu_usage", "own_instances_left_out")] == 4
    (spot,) = [f for f in result.report.findings if f.id == "PRE012"]
    assert spot.severity == "info"
    assert "0 held by 0 running or pending Spot instance(s) (and this stack's own 1" in spot.title


def test_the_documented_policy_is_the_permissions_preflight_calls() -> None:
    """docs/operate.md's pasteable policy lists exactly preflight.PERMISSIONS."""
    import json
    import re

    from ecs_gpu.aws.preflight import PERMISSIONS

    doc = (EXAMPLES.parent / "docs" / "operate.md").read_text(encoding="utf-8")
    section = doc[doc.index("**The permissions preflight needs**") :]
    policy = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))  # type: ignore[union-attr]
    assert policy["Statement"][0]["Action"] == list(PERMISSIONS)
