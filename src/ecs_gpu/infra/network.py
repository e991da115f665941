"""Where instances, tasks and the load balancer live: a VPC of our own, or the user's.

Synth must work offline, so a user's network is described from the spec's ids
alone (no ``Vpc.from_lookup``, no AWS call). Without ``[network]`` the stack
builds a small VPC: two AZs, public and private-with-egress subnets, ONE NAT
gateway (a GPU fleet's cost is its instances; a second NAT buys AZ resilience
for egress only), and flow logs to a log group with the spec's retention.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from aws_cdk import Annotations, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from ecs_gpu.spec import Spec

# Any private /16 serves; [network] is the way to use a VPC that must fit an
# existing address plan (peering, VPN).
VPC_CIDR: Final = "10.40.0.0/16"
MAX_AZS: Final = 2
NAT_GATEWAYS: Final = 1
# CDK warns when a subnet is imported without its route table id.
NO_ROUTE_TABLE_WARNING: Final = "@aws-cdk/aws-ec2:noSubnetRouteTableId"


@dataclass(frozen=True)
class Network:
    """The VPC and the subnet selections the other constructs use."""

    vpc: ec2.IVpc
    # Private subnets with egress: GPU instances and awsvpc tasks.
    private: ec2.SubnetSelection
    # Public subnets: an internet-facing load balancer only. None when the
    # user gave no public_subnet_ids.
    public: ec2.SubnetSelection | None
    # The VPC's CIDR when the stack owns the VPC; None for a user's VPC (we do
    # not look it up at synth time).
    cidr: str | None


# Days (the spec's Literal) -> the CDK enum member; jsii enums carry names, not days.
_RETENTION: Final = {
    1: "ONE_DAY",
    3: "THREE_DAYS",
    5: "FIVE_DAYS",
    7: "ONE_WEEK",
    14: "TWO_WEEKS",
    30: "ONE_MONTH",
    60: "TWO_MONTHS",
    90: "THREE_MONTHS",
    120: "FOUR_MONTHS",
    150: "FIVE_MONTHS",
    180: "SIX_MONTHS",
    365: "ONE_YEAR",
    400: "THIRTEEN_MONTHS",
    545: "EIGHTEEN_MONTHS",
    731: "TWO_YEARS",
}


def retention(days: int) -> logs.RetentionDays:
    """The CDK enum member for a retention the spec allows."""
    if days not in _RETENTION:
        raise ValueError(f"{days} is not a CloudWatch Logs retention period")
    return logs.RetentionDays[_RETENTION[days]]


def build_network(scope: Construct, spec: Spec) -> Network:
    """The VPC the service runs in (created, or described from the spec's ids)."""
    net = spec.network
    if net is None:
        flow_logs = logs.LogGroup(
            scope,
            "VpcFlowLogs",
            retention=retention(spec.service.log_retention_days),
            # The stack owns the group: destroy removes it, so a later deploy
            # of the same service name starts clean.
            removal_policy=RemovalPolicy.DESTROY,
        )
        vpc = ec2.Vpc(
            scope,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(VPC_CIDR),
            max_azs=MAX_AZS,
            nat_gateways=NAT_GATEWAYS,
            # Explicit: with the feature flag a `cdk init` app turns on, CDK
            # would add a Lambda-backed custom resource (an asset) to lock the
            # default security group, and a standalone template has no assets.
            restrict_default_security_group=False,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24
                ),
                ec2.SubnetConfiguration(
                    name="private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20
                ),
            ],
            flow_logs={
                "All": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
                    traffic_type=ec2.FlowLogTrafficType.ALL,
                )
            },
        )
        return Network(
            vpc=vpc,
            private=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            public=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC),
            cidr=VPC_CIDR,
        )

    # A user's VPC, from ids only. Every consumer selects subnets explicitly,
    # so the availability zones CDK asks for are never read.
    vpc_ref = ec2.Vpc.from_vpc_attributes(
        scope, "Vpc", vpc_id=net.vpc_id, availability_zones=["unused"]
    )

    def subnet(kind: str, i: int, sid: str) -> ec2.ISubnet:
        ref = ec2.Subnet.from_subnet_id(scope, f"{kind}{i}", sid)
        Annotations.of(ref).acknowledge_warning(
            NO_ROUTE_TABLE_WARNING,
            "nothing in GpuService reads a subnet's route table; a user's subnets are "
            "described by id only, with no lookup at synth",
        )
        return ref

    def select(kind: str, ids: list[str]) -> ec2.SubnetSelection:
        return ec2.SubnetSelection(subnets=[subnet(kind, i, sid) for i, sid in enumerate(ids)])

    return Network(
        vpc=vpc_ref,
        private=select("PrivateSubnet", net.subnet_ids),
        public=select("PublicSubnet", net.public_subnet_ids) if net.public_subnet_ids else None,
        cidr=None,
    )
