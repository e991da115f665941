"""Preflight's placement and network checks: AZ offerings, the capacity reservation, the
[network] subnets and their way out. Pure functions over the collected answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Final, NamedTuple

from ecs_gpu.checks.doctor.common import parse_time
from ecs_gpu.checks.model import Check, Finding, Severity, Unknown
from ecs_gpu.checks.preflight.needs import Needs
from ecs_gpu.checks.preflight.needs import ev as _ev
from ecs_gpu.checks.snapshot import COLLECTION_KEY, Snapshot

# A reservation ending within this many days is warned about: a deploy today
# would lose its floor within the week (a choice, not an AWS figure).
RESERVATION_ENDS_SOON: Final = timedelta(days=7)
# The stack's own VPC spans this many AZs (infra/network.py MAX_AZS).
OWN_VPC_AZS: Final = 2
# Interface endpoints instances in a subnet without a NAT route need (ECS
# developer guide, "Amazon ECS interface VPC endpoints": ecs-agent,
# ecs-telemetry, ecs; ECR user guide, "Amazon ECR interface VPC endpoints":
# ecr.api, ecr.dkr and the S3 gateway endpoint for the layers; CloudWatch
# "monitoring" for the GPU metric, "logs" for awslogs; Systems Manager's
# ssm, ssmmessages, ec2messages for the agent doctor's probe runs through).
INTERFACE_ENDPOINTS: Final = (
    "ecr.api",
    "ecr.dkr",
    "ecs",
    "ecs-agent",
    "ecs-telemetry",
    "monitoring",
    "logs",
    "ssm",
    "ssmmessages",
    "ec2messages",
)
# The warm pool's launch hook completes through the Auto Scaling API.
WARM_POOL_ENDPOINT: Final = "autoscaling"
GATEWAY_ENDPOINT: Final = "s3"
# Default-route targets that give a private subnet a way out (NAT or another path).
_EGRESS_TARGETS: Final = (
    "NatGatewayId",
    "TransitGatewayId",
    "NetworkInterfaceId",
    "InstanceId",
    "VpcPeeringConnectionId",
)


def _offered_azs(s: Snapshot, n: Needs) -> set[str]:
    return {
        str(o.get("Location"))
        for o in s["offerings_az"]
        if o.get("InstanceType") == n.instance_type
    }


def az_offering(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    offered = _offered_azs(s, n)
    if n.vpc_id is None:
        return _own_vpc_azs(s, c, n, offered)
    out = []
    for sub in s["subnets"]:
        if sub.get("SubnetId") not in n.subnet_ids:
            continue
        az = sub.get("AvailabilityZone")
        if az not in offered:
            out.append(
                c.finding(
                    [_ev("subnets", sub["SubnetId"], "AvailabilityZone", az)],
                    f"use subnets in AZs that offer it ({', '.join(sorted(offered)) or 'none'}), "
                    "or another instance type.",
                    title=f"{n.instance_type} is not offered in {az}, the AZ of subnet "
                    f"{sub['SubnetId']}: the group cannot launch there",
                )
            )
    return out


def _own_vpc_azs(s: Snapshot, c: Check, n: Needs, offered: set[str]) -> list[Finding]:
    if "availability_zones" not in s:
        raise Unknown("the Region's Availability Zones were not read")
    zones = sorted(
        z["ZoneName"]
        for z in s["availability_zones"]
        if z.get("State", "available") == "available"
        and z.get("ZoneType", "availability-zone") == "availability-zone"
    )
    lacking = [z for z in zones if z not in offered]
    ev = [_ev("offerings_az", n.instance_type, "Location", sorted(offered))]
    if len([z for z in zones if z in offered]) < OWN_VPC_AZS:
        return [
            c.finding(
                ev,
                "give the spec a [network] with subnets in the AZs that offer it, or pick "
                "another instance type or Region.",
                title=f"{n.instance_type} is offered in fewer than the {OWN_VPC_AZS} AZs the "
                f"stack's VPC spans in {n.region}",
            )
        ]
    if lacking:
        return [
            c.finding(
                ev,
                "the stack's VPC takes two AZs from Fn::GetAZs, whose choice AWS does not "
                "guarantee; to be sure, give the spec a [network] with subnets in "
                f"{', '.join(sorted(offered))}.",
                title=f"{n.instance_type} is not offered in {', '.join(lacking)}: if the "
                "stack's VPC lands there, launches in that AZ fail",
                severity="warning",
            )
        ]
    return []


class _Bad(NamedTuple):
    """One way a capacity reservation fails the spec: its field, the title, the fix."""

    field: str
    title: str
    fix: str
    severity: Severity = "error"


def reservation(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    rid = str(n.reservation_id)
    found = [r for r in s["capacity_reservations"] if r.get("CapacityReservationId") == rid]
    if not found:
        return [
            c.finding(
                [_ev("capacity_reservations", rid, "CapacityReservationId", None)],
                f"check [capacity] capacity_reservation_id: `aws ec2 "
                f"describe-capacity-reservations --region {n.region}` lists this account's.",
                title=f"capacity reservation {rid} does not exist in {n.region}",
            )
        ]
    r = found[0]
    bad = [
        *_reservation_fit(n, r, rid),
        *_reservation_zone(s, n, r, rid),
        *_reservation_terms(s, r, rid),
    ]
    return [
        c.finding(
            [_ev("capacity_reservations", rid, b.field, r.get(b.field))],
            b.fix,
            title=b.title,
            severity=b.severity,
        )
        for b in bad
    ]


def _reservation_fit(n: Needs, r: dict[str, Any], rid: str) -> Iterator[_Bad]:
    """Whether the reservation holds capacity the group launches: state, type,
    platform, and enough instances for reserved_instances."""
    if r.get("State") != "active":
        yield _Bad(
            "State",
            f"capacity reservation {rid} is {r.get('State')}, not active: it holds no capacity",
            "use an active reservation, or drop capacity_reservation_id and reserved_instances.",
        )
    if r.get("InstanceType") != n.instance_type:
        yield _Bad(
            "InstanceType",
            f"capacity reservation {rid} is for {r.get('InstanceType')}, the spec launches "
            f"{n.instance_type}: no instance uses it",
            "make [capacity] instance_type the reservation's type, or use a reservation for "
            f"{n.instance_type}.",
        )
    if r.get("InstancePlatform") != "Linux/UNIX":
        yield _Bad(
            "InstancePlatform",
            f"capacity reservation {rid} is for {r.get('InstancePlatform')}; the ECS GPU AMI "
            "launches Linux/UNIX instances",
            "use a Linux/UNIX reservation.",
        )
    if n.reserved_instances is not None and int(r.get("TotalInstanceCount", 0)) < (
        n.reserved_instances
    ):
        yield _Bad(
            "TotalInstanceCount",
            f"capacity reservation {rid} holds {r.get('TotalInstanceCount')} instances; "
            f"reserved_instances is {n.reserved_instances}",
            f"lower [capacity] reserved_instances to {r.get('TotalInstanceCount')}, or grow "
            "the reservation (`aws ec2 modify-capacity-reservation --instance-count N`).",
        )
    elif n.reserved_instances is not None and int(r.get("AvailableInstanceCount", 0)) < (
        n.reserved_instances
    ):
        yield _Bad(
            "AvailableInstanceCount",
            f"only {r.get('AvailableInstanceCount')} of capacity reservation {rid}'s "
            f"{r.get('TotalInstanceCount')} instances are free now; the rest launch On-Demand",
            "free the reservation's instances other workloads use, or accept On-Demand for "
            "the rest (the group falls back to it).",
            "warning",
        )


def _reservation_zone(s: Snapshot, n: Needs, r: dict[str, Any], rid: str) -> Iterator[_Bad]:
    """Whether the reservation's AZ is one the group's subnets are in."""
    az = r.get("AvailabilityZone")
    zones = _subnet_azs(s, n)
    if zones is not None and az not in zones:
        yield _Bad(
            "AvailabilityZone",
            f"capacity reservation {rid} is in {az}, but the group's subnets are in "
            f"{', '.join(sorted(zones)) or 'no AZ'}: no instance can use it",
            f"add a [network] subnet in {az}, or use a reservation in {', '.join(sorted(zones))}.",
        )
    elif zones is None and n.vpc_id is None:
        yield _Bad(
            "AvailabilityZone",
            f"capacity reservation {rid} is in {az}; the stack's own VPC picks its two AZs "
            "at deploy, so the reservation may sit outside them",
            f"give the spec a [network] with a subnet in {az}.",
            "warning",
        )


def _reservation_terms(s: Snapshot, r: dict[str, Any], rid: str) -> Iterator[_Bad]:
    """Whether the floor stays this service's: open to other workloads, or ending soon."""
    if r.get("InstanceMatchCriteria") == "open":
        yield _Bad(
            "InstanceMatchCriteria",
            f"capacity reservation {rid} is open: any matching instance in the account uses "
            "it, so other workloads can take the floor (the group targets it by id either way)",
            "make it targeted (`aws ec2 modify-capacity-reservation "
            "--instance-match-criteria targeted`) if the floor is this service's alone.",
            "info",
        )
    end = parse_time(r.get("EndDate")) if r.get("EndDateType") == "limited" else None
    now = s.get(COLLECTION_KEY, {}).get("now")
    when = parse_time(now) or datetime.now(UTC)
    if end is not None and end <= when + RESERVATION_ENDS_SOON:
        yield _Bad(
            "EndDate",
            f"capacity reservation {rid} ends {end.isoformat()}, within "
            f"{RESERVATION_ENDS_SOON.days} days: the floor then launches On-Demand",
            "extend it (`aws ec2 modify-capacity-reservation --end-date ...`), or plan for "
            "On-Demand capacity.",
            "warning",
        )


def _subnet_azs(s: Snapshot, n: Needs) -> set[str] | None:
    if n.vpc_id is None or "subnets" not in s:
        return None
    return {
        str(x.get("AvailabilityZone")) for x in s["subnets"] if x.get("SubnetId") in n.subnet_ids
    }


def subnets_exist(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    by_id = {x.get("SubnetId"): x for x in s["subnets"]}
    out = []
    for sid in n.subnet_ids:
        sub = by_id.get(sid)
        if sub is None:
            out.append(
                c.finding(
                    [_ev("subnets", sid, "SubnetId", None)],
                    f"correct [network] subnet_ids (`aws ec2 describe-subnets --filters "
                    f"Name=vpc-id,Values={n.vpc_id} --region {n.region}`).",
                    title=f"subnet {sid} does not exist in {n.region}",
                )
            )
        elif sub.get("VpcId") != n.vpc_id:
            out.append(
                c.finding(
                    [_ev("subnets", sid, "VpcId", sub.get("VpcId"))],
                    "use subnets of [network] vpc_id, or correct vpc_id.",
                    title=f"subnet {sid} is in {sub.get('VpcId')}, not in {n.vpc_id}",
                )
            )
    return out


def _route_table(s: Snapshot, subnet_id: str) -> dict[str, Any] | None:
    """The subnet's route table: its explicit association, else the VPC's main table."""
    main = None
    for rt in s["route_tables"]:
        for assoc in rt.get("Associations", []):
            if assoc.get("SubnetId") == subnet_id:
                found: dict[str, Any] = rt
                return found
            if assoc.get("Main"):
                main = rt
    return main


def _default_route(rt: dict[str, Any]) -> dict[str, Any] | None:
    for r in rt.get("Routes", []):
        if r.get("DestinationCidrBlock") == "0.0.0.0/0" and r.get("State", "active") == "active":
            route: dict[str, Any] = r
            return route
    return None


def _tasks_without_a_way_out(
    c: Check,
    n: Needs,
    sid: str,
    rt: dict[str, Any] | None,
    route: dict[str, Any] | None,
    endpoints: list[dict[str, Any]],
    prefix: str,
) -> list[Finding]:
    """A subnet whose instances go out through an internet gateway: its tasks cannot.

    The tasks use awsvpc, and on EC2 ECS gives a task's network interface no
    public IP (AssignPublicIp ENABLED is for Fargate only; aws-semantics §8), so
    from a public subnet without a NAT route a task reaches only VPC endpoints:
    the demand sidecar's PutMetricData needs the monitoring endpoint (else the
    scaling metric never lands: an error), and a model server that downloads
    its weights at start cannot (a warning: the weights may be in the image).
    """
    has_monitoring = any(
        str(e.get("ServiceName", "")).removeprefix(prefix) == "monitoring"
        and e.get("VpcEndpointType") == "Interface"
        for e in endpoints
    )
    rt_id = "?" if rt is None else rt.get("RouteTableId", "?")
    evidence = [
        _ev("route_tables", rt_id, "Routes[0.0.0.0/0]", route),
        _ev("subnets", sid, "MapPublicIpOnLaunch", True),
    ]
    nat = f"route 0.0.0.0/0 in {rt_id} to a NAT gateway (in another, public subnet)"
    if n.task_publishes and not has_monitoring:
        return [
            c.finding(
                [*evidence, _ev("vpc_endpoints", n.vpc_id or "?", "missing", ["monitoring"])],
                f"{nat}, or create the VPC endpoint {prefix}monitoring in {n.vpc_id}; tasks "
                "that download their model need the NAT route.",
                title=f"subnet {sid} reaches the internet through an internet gateway, which "
                "gives the instances a way out but not the tasks (awsvpc on EC2: no public "
                "IP): the demand sidecar cannot publish, so the service never scales on it",
            )
        ]
    return [
        c.finding(
            evidence,
            f"{nat} if the model server downloads its weights (e.g. from the Hugging Face "
            "hub) when it starts; nothing to do if they are in the image.",
            title=f"subnet {sid} reaches the internet through an internet gateway, which "
            "gives the instances a way out but not the tasks (awsvpc on EC2: no public IP): "
            "a task cannot download from the internet",
            severity="warning",
        )
    ]


def private_egress(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    endpoints = [
        e for e in s["vpc_endpoints"] if e.get("State", "available").lower() == "available"
    ]
    by_id = {x.get("SubnetId"): x for x in s["subnets"]}
    out = []
    for sid in n.subnet_ids:
        if sid not in by_id:
            continue  # subnets_exist reports it
        out += _subnet_egress(s, c, n, sid, by_id[sid], endpoints)
    return out


def _subnet_egress(
    s: Snapshot,
    c: Check,
    n: Needs,
    sid: str,
    subnet: dict[str, Any],
    endpoints: list[dict[str, Any]],
) -> list[Finding]:
    """How one subnet's instances and tasks reach AWS: a default route to a NAT (or
    another way out), an internet gateway with public addresses, or VPC endpoints."""
    prefix = f"com.amazonaws.{n.region}."
    rt = _route_table(s, sid)
    route = None if rt is None else _default_route(rt)
    if route is not None and any(route.get(k) for k in _EGRESS_TARGETS):
        return []
    igw = route is not None and str(route.get("GatewayId", "")).startswith("igw-")
    # The launch template sets no network interface (so no
    # AssociatePublicIpAddress): an instance has a public IPv4 address only
    # where the subnet's MapPublicIpOnLaunch gives it one, and without one
    # the internet gateway route takes it nowhere.
    public_ip = bool(subnet.get("MapPublicIpOnLaunch"))
    if igw and public_ip:
        # A public subnet: the instances reach out through the internet gateway,
        # the tasks do not (awsvpc on EC2 gives a task's interface no public IP).
        return _tasks_without_a_way_out(c, n, sid, rt, route, endpoints, prefix)
    missing = _missing_endpoints(n, rt, endpoints, prefix)
    rt_id = "?" if rt is None else rt.get("RouteTableId", "?")
    no_way = "has no route out"
    public = ""
    evidence = [_ev("route_tables", rt_id, "Routes[0.0.0.0/0]", route)]
    if igw:
        no_way = (
            f"routes 0.0.0.0/0 to {route.get('GatewayId') if route else '?'}, but its "
            "MapPublicIpOnLaunch is false, so its instances get no public IP and have no "
            "way out"
        )
        public = (
            f"turn on the subnet's public IPv4 addresses (`aws ec2 modify-subnet-attribute "
            f"--subnet-id {sid} --map-public-ip-on-launch`), or "
        )
        evidence.append(_ev("subnets", sid, "MapPublicIpOnLaunch", public_ip))
    if missing:
        return [
            c.finding(
                [*evidence, _ev("vpc_endpoints", n.vpc_id or "?", "missing", missing)],
                f"{public}add a route 0.0.0.0/0 to a NAT gateway in that route table, or "
                f"create the VPC endpoints {', '.join(missing)} in {n.vpc_id}.",
                title=f"subnet {sid} {no_way} (no NAT gateway) and lacks endpoints "
                "the instances need: they never register with ECS or pull the image",
            )
        ]
    if n.ecr is None:
        return [
            c.finding(
                evidence,
                f"{public}route 0.0.0.0/0 to a NAT gateway, or push the image to ECR.",
                title=f"subnet {sid} {no_way}, and image {n.image} is not in ECR: "
                "no endpoint reaches its registry",
            )
        ]
    return []


def _missing_endpoints(
    n: Needs, rt: dict[str, Any] | None, endpoints: list[dict[str, Any]], prefix: str
) -> list[str]:
    """The VPC endpoints instances without a way out need and the VPC lacks: each
    interface endpoint, and the S3 gateway endpoint on the subnet's route table."""
    wanted = [*INTERFACE_ENDPOINTS, *([WARM_POOL_ENDPOINT] if n.pool_instances else [])]
    have = {
        str(e.get("ServiceName", "")).removeprefix(prefix)
        for e in endpoints
        if e.get("VpcEndpointType") == "Interface"
    }
    gateway = any(
        str(e.get("ServiceName", "")).removeprefix(prefix) == GATEWAY_ENDPOINT
        and e.get("VpcEndpointType") == "Gateway"
        and rt is not None
        and rt.get("RouteTableId") in e.get("RouteTableIds", [])
        for e in endpoints
    )
    return [w for w in wanted if w not in have] + (
        [] if gateway else [f"{GATEWAY_ENDPOINT} (gateway)"]
    )
