"""[load_balancer] (spec/sections/network.py): ingress CIDRs and the ACM certificate ARN."""

from __future__ import annotations

import pytest

from ecs_gpu.spec import (
    parse_spec,
)

from ..specdata import (
    PATH,
    one_problem,
    with_,
)


@pytest.mark.parametrize(
    ("cidr", "what"),
    [
        ("not-a-cidr", "is not an IPv4 CIDR"),
        ("10.0.0.0/33", "is not an IPv4 CIDR"),
        ("2001:db8::/32", "is not an IPv4 CIDR"),
        ("10.0.0.1/16", "host bits set"),
        ("10.0.0.0", "prefix missing"),
    ],
)
def test_bad_ingress_cidr(cidr: str, what: str) -> None:
    line = one_problem(with_("load_balancer", ingress_cidrs=[cidr]), "load_balancer.ingress_cidrs")
    assert repr(cidr) in line and what in line


def test_ingress_cidr_with_host_bits_suggests_the_network() -> None:
    line = one_problem(
        with_("load_balancer", ingress_cidrs=["10.0.0.1/16"]), "load_balancer.ingress_cidrs"
    )
    assert "Fix: write '10.0.0.0/16'" in line


_CERT = "arn:aws:acm:us-east-1:123456789012:certificate/"


@pytest.mark.parametrize(
    ("arn", "needle"),
    [
        (_CERT + "abc 123", "has whitespace"),
        (" " + _CERT + "abc-123", "has whitespace"),
        ("arn:aws:iam::123456789012:server-certificate/web", "IAM server certificate"),
        ("arn:aws:acm:us-east-1:12345:certificate/abc-123", "not an ACM certificate ARN"),
        ("arn:aws:acm:useast1:123456789012:certificate/abc-123", "not an ACM certificate ARN"),
        ("arn:aws:acm:us-east-1:123456789012:certificate/", "not an ACM certificate ARN"),
        ("arn:aws:elasticloadbalancing:us-east-1:123456789012:x/y", "not an ACM certificate"),
        # A CDK token marker (GpuService given cert.certificate_arn) is no ARN either:
        # refused before it could reach CDK, saying why.
        (_CERT + "${Token[TOKEN.1]}", "holds a CDK token marker"),
        (_CERT + "a" * 2100, "at most 2048"),
    ],
)
def test_a_certificate_arn_that_is_no_acm_certificate_is_refused(arn: str, needle: str) -> None:
    line = one_problem(with_("load_balancer", certificate_arn=arn), "load_balancer.certificate_arn")
    assert needle in line and "Fix: " in line


@pytest.mark.parametrize(
    "arn",
    [
        _CERT + "12345678-1234-1234-1234-123456789012",
        "arn:aws-cn:acm:cn-north-1:123456789012:certificate/abc-123",
        "arn:aws-us-gov:acm:us-gov-west-1:123456789012:certificate/abc-123",
        # The AWS European Sovereign Cloud: a four-letter Region prefix.
        "arn:aws-eusc:acm:eusc-de-east-1:123456789012:certificate/abc-123",
    ],
)
def test_acm_certificate_arns_are_accepted(arn: str) -> None:
    from ecs_gpu.spec.sections.network import certificate_region

    lb = parse_spec(with_("load_balancer", certificate_arn=arn), PATH).load_balancer
    assert lb is not None and lb.certificate_arn == arn
    assert certificate_region(arn) == arn.split(":")[3]
