"""[network] and [load_balancer]: the user's VPC and subnets; the listener, who may reach it."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Final, Literal

from pydantic import Field, field_validator

from ecs_gpu.spec.messages import RuleError
from ecs_gpu.spec.sections.base import CDK_TOKEN_RE, TARGET_VALUE_MAX, _Section

# An ACM certificate's ARN: ACM's own Arn shape (botocore 1.44.8 acm model:
# `arn:[\w+=/,.@-]+:acm:[\w+=/,.@-]*:[0-9]+:[\w+=,.@-]+(/[\w+=,.@-]+)*`, at most
# 2048 characters) narrowed to a certificate: a partition, a Region, a 12-digit
# account, then `certificate/` and the id. Groups: partition, Region, account.
ACM_CERTIFICATE_ARN: Final = re.compile(
    r"arn:(aws[a-z-]*):acm:([a-z]{2,4}(?:-[a-z]+)+-\d):(\d{12}):certificate/[\w+=,.@-]+",
    re.ASCII,
)
ACM_ARN_MAX: Final = 2048
_CERT_EXAMPLE: Final = '"arn:aws:acm:us-east-1:123456789012:certificate/<id>"'


def certificate_region(arn: str) -> str:
    """The Region an ACM certificate ARN names (the spec has checked its form)."""
    m = ACM_CERTIFICATE_ARN.fullmatch(arn)
    if m is None:
        raise ValueError(f"{arn!r} is not an ACM certificate ARN")
    return m.group(2)


class NetworkSpec(_Section):
    vpc_id: Annotated[str, Field(pattern=r"^vpc-[0-9a-f]{8,17}$")]
    # Private subnets with a route to the internet (NAT) for instances and tasks.
    subnet_ids: Annotated[
        list[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")]], Field(min_length=1)
    ]
    # Public subnets, needed only for an internet-facing load balancer.
    public_subnet_ids: list[Annotated[str, Field(pattern=r"^subnet-[0-9a-f]{8,17}$")]] | None = None


class LoadBalancerSpec(_Section):
    scheme: Literal["internal", "internet-facing"] = "internal"
    health_check_path: Annotated[str, Field(pattern=r"^/[!-~]*$", max_length=1024)] = "/health"
    # An ACM certificate in the stack's Region (ACM certificates are regional;
    # preflight compares the Region, aws-semantics.md §13).
    certificate_arn: str | None = None
    # CIDRs allowed to reach the listener (besides the clients security group).
    # Default: anywhere when internet-facing; when internal, the stack's own
    # VPC range, or none in a user's VPC, whose range synth does not look up.
    ingress_cidrs: Annotated[list[str], Field(min_length=1)] | None = None
    # Optional third scaling signal: ALBRequestCountPerTarget target value.
    # Bounded by Application Auto Scaling's TargetValue (TARGET_VALUE_MAX).
    request_count_target: Annotated[int, Field(ge=1)] | None = None

    @field_validator("request_count_target")
    @classmethod
    def _target_value(cls, v: int | None) -> int | None:
        if v is not None and v > TARGET_VALUE_MAX:
            raise RuleError(
                "is above 2^360, the largest TargetValue Application Auto Scaling takes",
                "write the requests per minute one task should serve, e.g. 100",
            )
        return v

    @field_validator("certificate_arn")
    @classmethod
    def _certificate(cls, v: str | None) -> str | None:
        if v is None or (ACM_CERTIFICATE_ARN.fullmatch(v) and len(v) <= ACM_ARN_MAX):
            return v
        if CDK_TOKEN_RE.search(v):
            # GpuService passed cert.certificate_arn: a token, not the ARN's text.
            raise RuleError(
                "holds a CDK token marker (${Token[...]}), not the certificate's ARN: the "
                "spec is literal text and cannot take a reference",
                "pass the literal ARN string (e.g. from `aws acm list-certificates`), not "
                "cert.certificate_arn",
            )
        if any(c.isspace() for c in v):
            raise RuleError(
                "has whitespace, which no ARN contains (a space or line break copied with it?)",
                f"write the ARN without it, e.g. {_CERT_EXAMPLE}",
            )
        if ":iam::" in v and ":server-certificate/" in v:
            raise RuleError(
                "is an IAM server certificate; ecs-gpu's HTTPS listener takes an ACM certificate",
                "import the certificate into ACM in the stack's Region (`aws acm "
                "import-certificate`) and use the ARN it returns",
            )
        if len(v) > ACM_ARN_MAX:
            raise RuleError(
                f"is {len(v)} characters; an ACM ARN has at most {ACM_ARN_MAX}",
                f"use the certificate's ARN as ACM shows it, e.g. {_CERT_EXAMPLE}",
            )
        raise RuleError(
            "is not an ACM certificate ARN, arn:PARTITION:acm:REGION:ACCOUNT:certificate/ID "
            "(ACCOUNT 12 digits; ID letters, digits and + = , . @ _ -)",
            f"use the full ARN `aws acm list-certificates` shows in the stack's Region, e.g. "
            f"{_CERT_EXAMPLE}",
        )

    @field_validator("ingress_cidrs")
    @classmethod
    def _cidrs(cls, v: list[str] | None) -> list[str] | None:
        # IPv4 only: the load balancer is created with the default ipv4
        # address type, so an IPv6 rule would never match a client.
        for c in v or []:
            try:
                net = ipaddress.IPv4Network(c, strict=False)
            except ValueError:
                raise RuleError(
                    f"{c!r} is not an IPv4 CIDR", 'write it as address/prefix, e.g. "10.0.0.0/16"'
                ) from None
            if str(net) != c:
                raise RuleError(
                    f"{c!r} is not a network address (host bits set or prefix missing)",
                    f"write {str(net)!r}",
                )
        return v
