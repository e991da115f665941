"""The optional Application Load Balancer in front of the tasks (target type ip: awsvpc)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from aws_cdk import Duration
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from constructs import Construct

from ecs_gpu.contracts.naming import Names
from ecs_gpu.errors import BadInputError
from ecs_gpu.infra.network import Network
from ecs_gpu.spec import LoadBalancerSpec, Spec

HTTP_PORT: Final = 80
HTTPS_PORT: Final = 443
# An LLM request can stream for minutes; the ALB default (60 s) cuts it.
IDLE_TIMEOUT_S: Final = 600
# In-flight generations get this long to finish when a task is drained.
DEREGISTRATION_DELAY_S: Final = 120
# The ALB default interval. Two passing checks (about a minute) put a freshly
# loaded model in service sooner than the default five; three failures let one
# slow, GPU-bound response pass without taking the task out.
HEALTH_CHECK_INTERVAL_S: Final = 30
HEALTHY_THRESHOLD: Final = 2
UNHEALTHY_THRESHOLD: Final = 3


@dataclass(frozen=True)
class LoadBalancer:
    alb: elbv2.ApplicationLoadBalancer
    listener: elbv2.ApplicationListener
    target_group: elbv2.ApplicationTargetGroup
    security_group: ec2.SecurityGroup
    port: int


def _subnets(lb: LoadBalancerSpec, network: Network) -> ec2.SubnetSelection:
    if lb.scheme == "internal":
        return network.private
    if network.public is None:  # a spec cross-field rule refuses this first
        raise BadInputError(
            "load_balancer.scheme = 'internet-facing' needs public subnets. Fix: add "
            "`public_subnet_ids = [...]` under [network]."
        )
    return network.public


def _ingress_peers(lb: LoadBalancerSpec, network: Network) -> list[ec2.IPeer] | None:
    """Who may reach the listener besides the clients group; None: nobody else.

    Never an implicit 0.0.0.0/0: an internet-facing listener is open to
    exactly ``ingress_cidrs``, which the spec requires for that scheme (an
    open listener is written out as ``["0.0.0.0/0"]``).
    """
    if lb.ingress_cidrs:
        return [ec2.Peer.ipv4(c) for c in lb.ingress_cidrs]
    if lb.scheme == "internet-facing":  # a spec cross-field rule refuses this first
        raise BadInputError(
            "load_balancer.ingress_cidrs is empty for an internet-facing load balancer. Fix: "
            'list the client networks, e.g. ingress_cidrs = ["203.0.113.0/24"], or write '
            '["0.0.0.0/0"] to open it to the internet on purpose.'
        )
    if network.cidr is not None:
        return [ec2.Peer.ipv4(network.cidr)]
    # An internal ALB in a user's VPC whose CIDR we do not look up at synth.
    return None


def build_load_balancer(
    scope: Construct,
    spec: Spec,
    network: Network,
    clients: ec2.ISecurityGroup,
) -> LoadBalancer | None:
    """ALB, listener and ip target group, or None without ``[load_balancer]``."""
    lb = spec.load_balancer
    if lb is None:
        return None
    names = Names(spec.service.name)
    sg = ec2.SecurityGroup(
        scope,
        "LoadBalancerSecurityGroup",
        vpc=network.vpc,
        description=f"ecs-gpu {names.service_name}: load balancer listener",
        allow_all_outbound=False,
    )
    port = HTTPS_PORT if lb.certificate_arn else HTTP_PORT
    sg.add_ingress_rule(clients, ec2.Port.tcp(port), "clients security group")
    for peer in _ingress_peers(lb, network) or []:
        sg.add_ingress_rule(peer, ec2.Port.tcp(port), f"load_balancer {lb.scheme} ingress")
    alb = elbv2.ApplicationLoadBalancer(
        scope,
        "LoadBalancer",
        vpc=network.vpc,
        vpc_subnets=_subnets(lb, network),
        internet_facing=lb.scheme == "internet-facing",
        security_group=sg,
        idle_timeout=Duration.seconds(IDLE_TIMEOUT_S),
        drop_invalid_header_fields=True,
    )
    target_group = elbv2.ApplicationTargetGroup(
        scope,
        "TargetGroup",
        vpc=network.vpc,
        port=spec.service.container_port,
        protocol=elbv2.ApplicationProtocol.HTTP,
        target_type=elbv2.TargetType.IP,
        deregistration_delay=Duration.seconds(DEREGISTRATION_DELAY_S),
        health_check=elbv2.HealthCheck(
            path=lb.health_check_path,
            interval=Duration.seconds(HEALTH_CHECK_INTERVAL_S),
            healthy_threshold_count=HEALTHY_THRESHOLD,
            unhealthy_threshold_count=UNHEALTHY_THRESHOLD,
        ),
    )
    if lb.certificate_arn:
        listener = alb.add_listener(
            "Https",
            port=HTTPS_PORT,
            protocol=elbv2.ApplicationProtocol.HTTPS,
            certificates=[elbv2.ListenerCertificate.from_arn(lb.certificate_arn)],
            ssl_policy=elbv2.SslPolicy.RECOMMENDED_TLS,
            default_target_groups=[target_group],
            open=False,
        )
    else:
        listener = alb.add_listener(
            "Http",
            port=HTTP_PORT,
            protocol=elbv2.ApplicationProtocol.HTTP,
            default_target_groups=[target_group],
            open=False,
        )
    return LoadBalancer(
        alb=alb, listener=listener, target_group=target_group, security_group=sg, port=port
    )
