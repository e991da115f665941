"""Preflight's account checks (checks/preflight/account.py) over plain answers: no AWS, no
mocks. Quotas (On-Demand and Spot), the Region's offering, the AMI, secrets, the ECR image
and the certificate; every answer is AWS-shaped (tests/checks/preflight/answers.py).
"""

from __future__ import annotations

import dataclasses

import pytest

from ecs_gpu.checks.preflight.account import Needs, evaluate
from ecs_gpu.checks.preflight.needs import spot_quota_needs
from ecs_gpu.checks.snapshot import COLLECTION_KEY
from ecs_gpu.contracts import quotas
from ecs_gpu.spec import load_spec

from .answers import EXAMPLES, _spot_quota, healthy_g5, instance, of, quota, status


def test_a_healthy_account_has_no_error_and_says_why_the_network_checks_are_not_needed(
    g5: Needs,
) -> None:
    result = evaluate(healthy_g5(), g5)
    assert not result.has_error
    assert [f.severity for f in of(result, "PRE001")] == ["info"]
    assert "covers the fleet: 64 vCPUs (applied) against 20 needed, 0 in use now" in (
        of(result, "PRE001")[0].title
    )
    skipped = {i: why for i, _, why in result.not_applicable}
    assert "creates its own VPC" in skipped["PRE011"] and "PRE005" in skipped
    # The image is on Docker Hub: reported, not checked.
    (img,) = of(result, "PRE008")
    assert img.severity == "info" and "not checked" in img.title


def test_a_quota_below_the_fleet_is_an_error_naming_quota_value_need_and_how_to_raise_it(
    g5: Needs,
) -> None:
    # g5.xlarge has 4 vCPUs; max_instances 4 and the refresh's 1 beside them need 20.
    result = evaluate(healthy_g5(vcpu_quota={"Quota": quota(8.0), "source": "applied"}), g5)
    (f,) = of(result, "PRE001")
    assert f.severity == "error" and result.has_error
    assert "'Running On-Demand G and VT instances' (L-DB2E81BA) is 8 vCPUs in us-east-1" in f.title
    assert "the fleet at max_instances needs 16" in f.title and "VcpuLimitExceeded" in f.title
    assert "Service Quotas console" in f.fix
    assert (
        "aws service-quotas request-service-quota-increase --service-code ec2 --quota-code "
        "L-DB2E81BA --desired-value 20 --region us-east-1"
    ) in f.fix
    # 8 vCPUs hold 2 instances: max_instances 1 and its refresh's 1.
    assert "lower [capacity] max_instances to 1" in f.fix


@pytest.mark.parametrize("value", [16.0, 19.0])
def test_a_quota_short_only_of_an_instance_refresh_at_max_is_a_warning(
    g5: Needs, value: float
) -> None:
    """The refresh's surge exists only while a refresh runs with the group at max_instances:
    a first create, or any update that keeps the launch template, never needs it."""
    result = evaluate(healthy_g5(vcpu_quota={"Quota": quota(value), "source": "applied"}), g5)
    (f,) = of(result, "PRE001")
    assert f.severity == "warning" and not result.has_error
    assert f"holds the fleet at max_instances ({int(value)} vCPUs free against 16)" in f.title
    assert "not an instance refresh there (20)" in f.title and "1 more instance(s)" in f.title
    assert "--desired-value 20" in f.fix


def test_vcpus_others_hold_are_said_before_the_refresh_surge(g5: Needs) -> None:
    """16 vCPUs hold the fleet at max_instances only while nothing else runs: with 8 held
    by another group, the fleet itself cannot reach max_instances, which the finding says."""
    usage = [instance("g5.2xlarge", 4)]
    s = healthy_g5(vcpu_quota={"Quota": quota(16.0), "source": "applied"}, vcpu_usage=usage)
    (f,) = of(evaluate(s, g5), "PRE001")
    assert f.severity == "warning" and "8 of its 16 vCPUs are in use now" in f.title
    assert "cannot reach max_instances until they are freed" in f.title


def test_a_spot_quota_short_only_of_a_refresh_is_a_warning(g5_spot: Needs) -> None:
    result = evaluate(healthy_g5(spot_vcpu_quota=_spot_quota(16.0)), g5_spot)
    (f,) = of(result, "PRE012")
    assert f.severity == "warning" and "not an instance refresh there (20)" in f.title


def test_the_aws_default_is_named_as_the_source_when_no_value_is_applied(g5: Needs) -> None:
    result = evaluate(healthy_g5(vcpu_quota={"Quota": quota(0.0), "source": "AWS default"}), g5)
    (f,) = of(result, "PRE001")
    assert f.severity == "error"
    assert ("vcpu_quota", "L-DB2E81BA", "source", "AWS default") in [
        (e.kind, e.id, e.field, e.value) for e in f.evidence
    ]


def test_vcpus_other_instances_hold_make_a_warning(g5: Needs) -> None:
    # 24 vCPUs: room for the fleet's 20, but 16 are held by two g5.2xlarge now.
    usage = [instance("g5.2xlarge", 4), instance("g5.2xlarge", 4)]
    result = evaluate(
        healthy_g5(vcpu_quota={"Quota": quota(24.0), "source": "applied"}, vcpu_usage=usage), g5
    )
    (f,) = of(result, "PRE001")
    assert f.severity == "warning" and "16 of its 24 vCPUs are in use" in f.title
    assert "--desired-value 36" in f.fix


def test_the_warm_pool_counts_against_the_quota(g5: Needs) -> None:
    pooled = dataclasses.replace(g5, pool_instances=1)
    result = evaluate(healthy_g5(vcpu_quota={"Quota": quota(16.0), "source": "applied"}), pooled)
    (f,) = of(result, "PRE001")
    assert f.severity == "error" and "needs 20" in f.title  # 4 + 1 pooled, x 4 vCPUs
    assert (
        "24 = (4 max_instances + 1 launched beside them by an instance refresh, "
        "MaxHealthyPercentage 110 + 1 warm pool) x 4 vCPUs"
    ) in str([e.value for e in f.evidence])


def test_a_denied_quota_read_makes_only_the_quota_check_unknown(g5: Needs) -> None:
    s = healthy_g5()
    del s["vcpu_quota"]
    s[COLLECTION_KEY]["denied"] = [
        {
            "call": "service-quotas GetServiceQuota",
            "permission": "servicequotas:GetServiceQuota",
            "kinds": ["vcpu_quota"],
        }
    ]
    result = evaluate(s, g5)
    assert status(result, "PRE001") == "unknown"
    (unknown,) = result.report.unknown
    assert "servicequotas:GetServiceQuota" in unknown.reason
    assert all(status(result, i) != "unknown" for i in ("PRE002", "PRE003", "PRE004", "PRE009"))
    assert result.report.checked > 0


def test_a_type_not_offered_in_the_region_is_an_error(g5: Needs) -> None:
    result = evaluate(healthy_g5(offerings_region=[]), g5)
    (f,) = of(result, "PRE002")
    assert f.severity == "error" and f.title == "g5.xlarge is not offered in us-east-1"


def test_secrets_missing_scheduled_for_deletion_or_present(g5: Needs) -> None:
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hf-token-AbC123"
    with_secret = dataclasses.replace(
        g5,
        secrets=(*Needs.from_spec(load_spec(EXAMPLES / "p5-8gpu.toml"), "us-east-1").secrets,),
    )
    assert [g.arn for g in with_secret.secrets] == [arn]
    (missing,) = of(
        evaluate(healthy_g5(secretsmanager_secrets={arn: {"found": False}}), with_secret), "PRE006"
    )
    assert missing.severity == "error" and missing.title == f"secret {arn} does not exist"
    (ok,) = of(
        evaluate(healthy_g5(secretsmanager_secrets={arn: {"found": True}}), with_secret), "PRE006"
    )
    # The template's execution role reads it (infra/task.py secret_resources).
    assert ok.severity == "info" and "secretsmanager:GetSecretValue on " + arn in ok.fix
    (kms,) = of(
        evaluate(
            healthy_g5(secretsmanager_secrets={arn: {"found": True, "KmsKeyId": "alias/mine"}}),
            with_secret,
        ),
        "PRE006",
    )
    assert kms.severity == "warning" and "kms:Decrypt" in kms.fix


def test_a_missing_ecr_tag_is_an_error(g5: Needs) -> None:
    from ecs_gpu.checks.preflight.account import EcrImage

    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/llm:v2"
    n = dataclasses.replace(
        g5, image=image, ecr=EcrImage("123456789012", "us-east-1", "llm", "v2", None)
    )
    s = healthy_g5(ecr_image={"found": False, "error": "ImageNotFoundException"})
    (f,) = of(evaluate(s, n), "PRE008")
    assert f.severity == "error" and "ImageNotFoundException" in f.title and image in f.title
    assert of(evaluate(healthy_g5(ecr_image={"found": True}), n), "PRE008") == []


def test_the_spot_quota_is_checked_only_with_a_spot_group(g5: Needs, g5_spot: Needs) -> None:
    skipped = {i: why for i, _, why in evaluate(healthy_g5(), g5).not_applicable}
    assert "no [capacity.spot]" in skipped["PRE012"]
    (sq,) = g5_spot.spot_quotas
    assert sq.quota == quotas.SPOT["G"] and g5_spot.spot_vcpus_needed == 20
    ok = evaluate(healthy_g5(spot_vcpu_quota=_spot_quota(64.0)), g5_spot)
    (f,) = of(ok, "PRE012")
    assert f.severity == "info" and "covers the Spot group: 64 vCPUs" in f.title


def test_spot_percent_zero_needs_no_spot_quota(g5_spot: Needs) -> None:
    # The step before removing [capacity.spot] from a running stack (redeploy): its
    # weight-0 provider launches nothing, so an account without Spot quota may take it.
    from ecs_gpu.spec import parse_spec

    text = (
        (EXAMPLES / "g5-vllm.toml")
        .read_text(encoding="utf-8")
        .replace(
            "\n[scaling]\n",
            '\n[capacity.spot]\ninstance_types = ["g5.xlarge"]\nspot_percent = 0\n\n[scaling]\n',
        )
    )
    needs = Needs.from_spec(parse_spec(text, "spot0.toml"), "us-east-1")
    assert needs.spot_quotas == () and needs.spot_vcpus_needed == 0
    assert needs.spot_instance_types == ("g5.xlarge",) and g5_spot.spot_quotas
    result = evaluate(healthy_g5(spot_vcpu_quota=_spot_quota(0.0)), needs)
    skipped = {i: why for i, _, why in result.not_applicable}
    assert "spot_percent = 0 launches no Spot instance" in skipped["PRE012"]
    assert not of(result, "PRE012") and not result.has_error


def test_a_spot_quota_below_the_spot_group_is_an_error_with_the_increase(g5_spot: Needs) -> None:
    # New accounts often start with little Spot quota: 8 vCPUs hold two 4-vCPU instances;
    # the group needs (4 + the refresh's 1) x 4 = 20.
    result = evaluate(healthy_g5(spot_vcpu_quota=_spot_quota(8.0)), g5_spot)
    (f,) = of(result, "PRE012")
    assert f.severity == "error" and result.has_error
    assert "'All G and VT Spot Instance Requests' (L-3819A6DF) is 8 vCPUs" in f.title
    assert "needs 16" in f.title and "past 2 Spot instance(s)" in f.title
    assert "--quota-code L-3819A6DF --desired-value 20 --region us-east-1" in f.fix
    assert "g5.xlarge, g6.xlarge" in str([e.value for e in f.evidence])


def test_spot_instances_in_use_shrink_the_room_and_the_finding_says_what_fits(
    g5_spot: Needs,
) -> None:
    # 24 Spot vCPUs, the group needs 20; two 8-vCPU Spot instances hold 16 now.
    held = [instance("g5.2xlarge", 4), instance("g5.2xlarge", 4)]
    result = evaluate(healthy_g5(spot_vcpu_quota=_spot_quota(24.0), spot_vcpu_usage=held), g5_spot)
    (f,) = of(result, "PRE012")
    assert f.severity == "warning" and not result.has_error
    assert "16 of its 24 vCPUs are held by 2 running or pending Spot instance(s)" in f.title
    assert (
        "8 free, room for 2 Spot instance(s) of 4 vCPUs, short of the 4 at max_instances until "
        "they are freed"
    ) in f.title
    assert "--desired-value 36" in f.fix
    assert "this stack's own instances, in vllm-g5-gpu-asg and vllm-g5-spot-asg" in f.fix
    got = {(e.kind, e.field): e.value for e in f.evidence}
    assert got[("spot_vcpu_usage", "running_vcpus")] == 16
    assert got[("spot_vcpu_usage", "instances")] == 2


def test_spot_usage_that_leaves_exactly_the_group_is_fine(g5_spot: Needs) -> None:
    # 28 Spot vCPUs: 8 held, 20 free for the group's (4 + the refresh's 1) x 4.
    held = [instance("g5.2xlarge", 4)]
    result = evaluate(healthy_g5(spot_vcpu_quota=_spot_quota(28.0), spot_vcpu_usage=held), g5_spot)
    (f,) = of(result, "PRE012")
    assert f.severity == "info"
    assert "8 held by 1 running or pending Spot instance(s), 20 free, room for 5" in f.title


def test_a_spot_quota_below_the_group_counts_what_is_held_in_the_room_and_the_ask(
    g5_spot: Needs,
) -> None:
    # 8 vCPUs, one 4-vCPU Spot instance running: room for one more, not two.
    held = [instance("g5.xlarge", 2)]
    result = evaluate(healthy_g5(spot_vcpu_quota=_spot_quota(8.0), spot_vcpu_usage=held), g5_spot)
    (f,) = of(result, "PRE012")
    assert f.severity == "error"
    assert "past 1 Spot instance(s) fail (4 held by 1 running or pending" in f.title
    assert "4 free, room for 1 Spot instance(s) of 4 vCPUs" in f.title
    assert "--desired-value 24" in f.fix


def test_on_demand_instances_do_not_count_against_the_spot_quota(g5_spot: Needs) -> None:
    on_demand = [instance("g5.2xlarge", 4)] * 3  # 24 vCPUs, all PRE001's
    s = healthy_g5(spot_vcpu_quota=_spot_quota(20.0), spot_vcpu_usage=[], vcpu_usage=on_demand)
    (f,) = of(evaluate(s, g5_spot), "PRE012")
    assert f.severity == "info" and "0 held by 0" in f.title and "20 free, room for 5" in f.title


def test_a_denied_describe_instances_leaves_the_spot_check_deciding_without_usage(
    g5_spot: Needs,
) -> None:
    denied = [
        {
            "call": "ec2 DescribeInstances",
            "permission": "ec2:DescribeInstances",
            "kinds": ["vcpu_usage", "spot_vcpu_usage"],
        }
    ]
    s = healthy_g5(spot_vcpu_quota=_spot_quota(64.0))
    del s["vcpu_usage"]
    s[COLLECTION_KEY]["denied"] = denied
    result = evaluate(s, g5_spot)
    (f,) = of(result, "PRE012")
    assert f.severity == "info" and f.title.endswith("Spot usage not read")
    assert status(result, "PRE012") != "unknown" and status(result, "PRE001") != "unknown"
    assert [d["permission"] for d in result.report.missing_permissions] == ["ec2:DescribeInstances"]


def test_a_pinned_ami_found_but_no_longer_available_fails_pre004(g5: Needs) -> None:
    """A recently deregistered id comes back from DescribeImages with its State for a while."""
    pinned = dataclasses.replace(g5, ami_id="ami-0fedcba9876543210")
    answer = {"image_id": pinned.ami_id, "found": True, "State": "deregistered", "Name": "x"}
    (f,) = of(evaluate(healthy_g5(ami=answer), pinned), "PRE004")
    assert f.severity == "error"
    assert "[capacity] ami_id ami-0fedcba9876543210 is deregistered in us-east-1" in f.title
    available = {**answer, "State": "available"}
    assert of(evaluate(healthy_g5(ami=available), pinned), "PRE004") == []


def test_spot_types_of_two_family_groups_are_checked_against_each_groups_quota(
    g5_spot: Needs,
) -> None:
    """A Spot instance counts against its family's quota: g5 against G and VT, p3 against P."""
    mixed = dataclasses.replace(
        g5_spot, spot_quotas=spot_quota_needs(("g5.xlarge", "p3.2xlarge", "g6.xlarge"))
    )
    assert [(q.quota.code, q.instance_types, q.vcpus) for q in mixed.spot_quotas] == [
        ("L-3819A6DF", ("g5.xlarge", "g6.xlarge"), 4),
        ("L-7212CCBC", ("p3.2xlarge",), 8),
    ]
    # A g5 Spot instance running holds G's quota, not P's.
    held = [instance("g5.xlarge", 2)]
    s = healthy_g5(spot_vcpu_quota=_spot_quota(64.0, P=16.0), spot_vcpu_usage=held)
    # Each group at (4 max_instances + the refresh's 1) of its largest type.
    result = evaluate(s, mixed)
    g, p = of(result, "PRE012")
    assert g.severity == "info" and "'All G and VT Spot Instance Requests' covers" in g.title
    assert "20 needed; 4 held by 1" in g.title
    assert p.severity == "error" and "(L-7212CCBC) is 16 vCPUs" in p.title
    assert "needs 32" in p.title and "0 held by 0" in p.title
    assert "--quota-code L-7212CCBC --desired-value 40" in p.fix
    doc = mixed.as_dict()
    assert [(q["code"], q["vcpus_needed"]) for q in doc["spot_quotas"]] == [
        ("L-3819A6DF", 20),
        ("L-7212CCBC", 40),
    ]


def test_a_spot_quota_not_read_makes_pre012_unknown(g5_spot: Needs) -> None:
    mixed = dataclasses.replace(g5_spot, spot_quotas=spot_quota_needs(("g5.xlarge", "p3.2xlarge")))
    result = evaluate(healthy_g5(spot_vcpu_quota=_spot_quota(64.0)), mixed)
    assert status(result, "PRE012") == "unknown"


def test_a_certificate_in_another_region_than_the_stack_is_an_error(g5: Needs, g6e: Needs) -> None:
    # The ARN names its Region; no AWS call decides it (requires nothing).
    arn = str(g6e.certificate_arn)
    assert arn.startswith("arn:aws:acm:us-east-1:")
    assert not of(evaluate(healthy_g5(), g6e), "PRE013")
    away = dataclasses.replace(g6e, region="eu-west-1")
    (f,) = of(evaluate(healthy_g5(), away), "PRE013")
    assert f.severity == "error"
    assert "ACM certificate in us-east-1, and the stack deploys to eu-west-1" in f.title
    assert "request-certificate --region eu-west-1" in f.fix and "--region us-east-1" in f.fix
    skipped = {i: why for i, _, why in evaluate(healthy_g5(), g5).not_applicable}
    assert "no [load_balancer] certificate_arn" in skipped["PRE013"]
