"""[network] and [load_balancer]: the security group quota, subnets, who may reach the listener."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ecs_gpu.spec.messages import Problem

if TYPE_CHECKING:
    from ecs_gpu.spec.model import Spec


# "Inbound or outbound rules per security group: 60" (Amazon VPC quotas,
# https://docs.aws.amazon.com/vpc/latest/userguide/amazon-vpc-limits.html,
# "Security groups"); the load balancer's group has one more rule for the
# clients security group (infra/loadbalancer.py).
SG_INBOUND_RULES_QUOTA = 60
LB_OTHER_INBOUND_RULES = 1


def _ingress_rules_quota(spec: Spec) -> Iterator[Problem]:
    lb = spec.load_balancer
    cidrs = (lb.ingress_cidrs or []) if lb is not None else []
    most = SG_INBOUND_RULES_QUOTA - LB_OTHER_INBOUND_RULES
    if len(cidrs) > most:
        yield Problem(
            "load_balancer.ingress_cidrs",
            f"{len(cidrs)} CIDRs",
            f"the load balancer's security group takes one inbound rule per CIDR and one "
            f"for the clients security group, and a security group holds at most "
            f"{SG_INBOUND_RULES_QUOTA} inbound rules by default (Amazon VPC quotas), so "
            "CloudFormation fails to create it",
            f"list at most {most}: merge neighbouring ranges into wider prefixes, or let "
            "clients in through the clients security group (stack output) instead",
        )


def _duplicate_subnets(spec: Spec) -> Iterator[Problem]:
    net = spec.network
    if net is None:
        return
    for key, ids in (("subnet_ids", net.subnet_ids), ("public_subnet_ids", net.public_subnet_ids)):
        twice = sorted({i for i in ids or [] if (ids or []).count(i) > 1})
        if twice:
            yield Problem(
                f"network.{key}",
                ids,
                f"lists {', '.join(twice)} more than once, which counts one subnet "
                "(and one Availability Zone) twice",
                "list each subnet once",
            )


def _load_balancer_subnets(spec: Spec) -> Iterator[Problem]:
    net, lb = spec.network, spec.load_balancer
    if lb is None or net is None:
        return
    if len(net.subnet_ids) < 2:
        yield Problem(
            "network.subnet_ids",
            net.subnet_ids,
            "a load balancer needs subnets in at least two Availability Zones",
            "list at least two subnets in different Availability Zones",
        )
    if lb.scheme == "internet-facing" and len(net.public_subnet_ids or []) < 2:
        yield Problem(
            "load_balancer.scheme",
            lb.scheme,
            "an internet-facing load balancer in your VPC needs public subnets in at "
            "least two Availability Zones",
            "add `public_subnet_ids = [...]` (two or more) under [network], or use "
            'scheme = "internal"',
        )


def _public_listener_needs_cidrs(spec: Spec) -> Iterator[Problem]:
    # A model endpoint has no authentication of its own: who may call it is
    # decided here, so a public one is never open by default.
    lb = spec.load_balancer
    if lb is not None and lb.scheme == "internet-facing" and lb.ingress_cidrs is None:
        yield Problem(
            "load_balancer.scheme",
            lb.scheme,
            "an internet-facing load balancer needs load_balancer.ingress_cidrs: the model "
            "server checks no credentials, so whoever reaches the listener can use your GPUs",
            'add `ingress_cidrs = ["203.0.113.0/24"]` with your clients\' public ranges '
            "under [load_balancer]; to open it to everyone on purpose, write "
            'ingress_cidrs = ["0.0.0.0/0"]',
        )


def _open_to_the_internet(spec: Spec) -> Iterator[Problem]:
    lb = spec.load_balancer
    if lb is None or lb.scheme != "internet-facing":
        return
    if any(ipaddress.IPv4Network(c).prefixlen == 0 for c in lb.ingress_cidrs or []):
        yield Problem(
            "load_balancer.ingress_cidrs",
            lb.ingress_cidrs,
            "the endpoint is unauthenticated: anyone on the internet can call the model "
            "and keep your GPU instances scaled out",
            "list only your clients' CIDRs, or put authentication in front (an API "
            "gateway, or an ALB authenticate-oidc/cognito action)",
        )


def _plain_http_on_the_internet(spec: Spec) -> Iterator[Problem]:
    lb = spec.load_balancer
    if lb is not None and lb.scheme == "internet-facing" and lb.certificate_arn is None:
        yield Problem(
            "load_balancer.scheme",
            lb.scheme,
            "without certificate_arn the listener is plain HTTP: prompts, completions and "
            "any API key cross the internet unencrypted",
            'add `certificate_arn = "arn:aws:acm:..."` (an ACM certificate in the stack\'s '
            "Region) under [load_balancer]",
        )
