"""[network] and [load_balancer]: the user's VPC and subnets; the listener, who may reach it."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import Field, field_validator

from ecs_gpu.spec.messages import RuleError
from ecs_gpu.spec.sections.base import TARGET_VALUE_MAX, _Section


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
    certificate_arn: (
        Annotated[str, Field(pattern=r"^arn:aws[a-z-]*:acm:[a-z0-9-]+:\d{12}:certificate/.+$")]
        | None
    ) = None
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
