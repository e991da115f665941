"""Preflight's checks: pure functions over what aws/preflight.py read (no AWS call here).

The answers form a snapshot like doctor's (``dict`` of kinds, each the raw
API items; a kind that could not be read is absent, and ``_collection``
records the denied and failed calls), so preflight reuses doctor's finding
shape, runner and report: a check whose kinds are absent is "unknown" with
the missing permission, never "ok". :class:`Needs` is what the spec asks of
the account, as plain data.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from ecs_gpu import quotas
from ecs_gpu.doctor.checks.common import parse_time
from ecs_gpu.doctor.checks.model import Check, Evidence, Finding, Report, Severity, Unknown
from ecs_gpu.doctor.checks.runner import run_checks
from ecs_gpu.doctor.snapshot import Snapshot
from ecs_gpu.spec import Spec

# A reservation ending within this many days is warned about: a deploy today
# would lose its floor within the week (a choice, not an AWS figure).
RESERVATION_ENDS_SOON: Final = timedelta(days=7)
# The stack's own VPC spans this many AZs (infra/network.py MAX_AZS).
OWN_VPC_AZS: Final = 2
ECS_SERVICE_LINKED_ROLE: Final = "AWSServiceRoleForECS"
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


@dataclass(frozen=True)
class EcrImage:
    registry_id: str
    region: str
    repository: str
    tag: str | None
    digest: str | None


@dataclass(frozen=True)
class SecretGrant:
    """One container secret and what the template's execution role is granted on it."""

    arn: str
    action: str
    resources: tuple[str, ...]


@dataclass(frozen=True)
class Needs:
    """What the spec asks of the account, in plain data."""

    region: str
    instance_type: str
    vcpus: int
    quota: quotas.VcpuQuota
    max_instances: int
    pool_instances: int
    pool_state: str | None
    vpc_id: str | None
    subnet_ids: tuple[str, ...]
    reservation_id: str | None
    reserved_instances: int | None
    ami_id: str | None
    image: str
    ecr: EcrImage | None
    secrets: tuple[SecretGrant, ...] = field(default=())

    @property
    def instances(self) -> int:
        return self.max_instances + self.pool_instances

    @property
    def vcpus_needed(self) -> int:
        return self.instances * self.vcpus

    @classmethod
    def from_spec(cls, spec: Spec, region: str) -> Needs:
        # infra.task holds the image and secret rules the template uses; it
        # imports CDK, so it is read only here.
        from ecs_gpu.infra.task import ecr_repository, secret_resources

        cap = spec.capacity
        net = spec.network
        ecr = None
        found = ecr_repository(spec.service.image)
        if found is not None:
            arn, ref = found
            # arn:aws:ecr:REGION:ACCOUNT:repository/NAME
            parts = arn.split(":", 5)
            digest = ref if ref.startswith("sha256:") else None
            ecr = EcrImage(
                registry_id=parts[4],
                region=parts[3],
                repository=parts[5].split("/", 1)[1],
                tag=None if digest else ref,
                digest=digest,
            )
        grants = []
        for value_from in sorted(spec.service.secrets.values()):
            action, resources = secret_resources(value_from)
            grants.append(SecretGrant(value_from, action, tuple(resources)))
        wp = cap.warm_pool
        return cls(
            region=region,
            instance_type=cap.instance_type,
            vcpus=cap.instance.vcpus,
            quota=quotas.on_demand(cap.instance_type),
            max_instances=cap.max_instances,
            pool_instances=pool_instances(spec),
            pool_state=None if wp is None else wp.pool_state,
            vpc_id=None if net is None else net.vpc_id,
            subnet_ids=() if net is None else tuple(net.subnet_ids),
            reservation_id=cap.capacity_reservation_id,
            reserved_instances=cap.reserved_instances,
            ami_id=cap.ami_id,
            image=spec.service.image,
            ecr=ecr,
            secrets=tuple(grants),
        )

    def as_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["vcpus_needed"] = self.vcpus_needed
        return doc


def pool_instances(spec: Spec) -> int:
    """Warm-pool instances beside a group scaled to max_instances.

    The pool holds MaxGroupPreparedCapacity - desired (max - desired without
    it), never fewer than min_size (aws-semantics.md, warm pools): at full
    scale that is max(min_size, max_prepared - max_instances). They count
    against the running vCPU quota while they start and run their user data
    before they stop (all the time in a Running pool).
    """
    wp = spec.capacity.warm_pool
    if wp is None:
        return 0
    if wp.max_prepared is None:
        return wp.min_size
    return max(wp.min_size, wp.max_prepared - spec.capacity.max_instances)


# --- the checks -----------------------------------------------------------------

CheckBody = Callable[[Snapshot, Check, Needs], list[Finding]]


@dataclass(frozen=True)
class Definition:
    id: str
    severity: Severity
    title: str
    requires: tuple[str, ...]
    body: CheckBody
    # None: always applies; else why it does not apply to these needs (or None when it does).
    applies: Callable[[Needs], str | None] | None = None


def _ev(kind: str, id: str, fld: str, value: Any) -> Evidence:
    return Evidence(kind, id, fld, value)


def vcpu_quota(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    q = s["vcpu_quota"]
    value = int(float(q["Quota"]["Value"]))
    source = q["source"]
    need = n.vcpus_needed
    pool = f" + {n.pool_instances} warm pool" if n.pool_instances else ""
    ev = [
        _ev("vcpu_quota", n.quota.code, "Value", value),
        _ev("vcpu_quota", n.quota.code, "source", source),
        _ev(
            "spec",
            "capacity",
            "vcpus_needed",
            f"{need} = ({n.max_instances} max_instances{pool}) x {n.vcpus} vCPUs "
            f"({n.instance_type})",
        ),
    ]
    used = _usage(s, n)
    if used is not None:
        ev.append(_ev("vcpu_usage", n.quota.code, "running_vcpus", used))
    # What to ask for: the fleet plus what other instances hold now.
    desired = need + (used or 0)
    how = (
        f"raise it in the Service Quotas console (Amazon EC2, '{n.quota.name}') or run "
        f"`{quotas.increase_command(n.quota, desired, n.region)}`"
    )
    if value < need:
        fits = value // n.vcpus
        return [
            c.finding(
                ev,
                f"{how}; or lower [capacity] max_instances to {max(fits - n.pool_instances, 0)} "
                f"(the quota holds {fits} {n.instance_type}).",
                title=f"'{n.quota.name}' ({n.quota.code}) is {value} vCPUs in {n.region}; the "
                f"fleet at max_instances needs {need}: launches past {fits} instance(s) fail "
                "with VcpuLimitExceeded and tasks stay PROVISIONING",
            )
        ]
    if used is not None and used + need > value:
        return [
            c.finding(
                ev,
                f"{how}, or free the vCPUs other instances of this quota hold (this stack's own "
                "instances count too when it is deployed).",
                title=f"'{n.quota.name}' has room for the fleet, but {used} of its {value} vCPUs "
                "are in use now: the fleet cannot reach max_instances until they are freed",
                severity="warning",
            )
        ]
    usage = "usage not read" if used is None else f"{used} in use now"
    return [
        c.finding(
            ev,
            "nothing to do.",
            title=f"'{n.quota.name}' covers the fleet: {value} vCPUs ({source}) against {need} "
            f"needed, {usage}",
            severity="info",
        )
    ]


def _usage(s: Snapshot, n: Needs) -> int | None:
    """vCPUs of the running or pending On-Demand instances of this quota; None if not read."""
    if "vcpu_usage" not in s:
        return None
    from ecs_gpu import catalog

    total = 0
    for inst in s["vcpu_usage"]:
        cpu = inst.get("CpuOptions") or {}
        if cpu.get("CoreCount"):
            total += int(cpu["CoreCount"]) * int(cpu.get("ThreadsPerCore") or 1)
        elif inst.get("InstanceType") in catalog.CATALOG:
            total += catalog.CATALOG[inst["InstanceType"]].vcpus
    return total


def region_offering(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    if any(o.get("InstanceType") == n.instance_type for o in s["offerings_region"]):
        return []
    return [
        c.finding(
            [_ev("offerings_region", n.region, "InstanceType", None)],
            f"deploy to a Region that offers {n.instance_type} (`aws ec2 "
            "describe-instance-type-offerings --filters Name=instance-type,Values="
            f"{n.instance_type} --region REGION`), or pick another [capacity] instance_type.",
            title=f"{n.instance_type} is not offered in {n.region}",
        )
    ]


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


def gpu_ami(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    a = s["ami"]
    if n.ami_id is not None:
        if a.get("found"):
            return []
        return [
            c.finding(
                [_ev("ami", n.ami_id, "ImageId", None)],
                f"pin an AMI that exists in {n.region} ([capacity] ami_id; AMIs are per "
                "Region), or drop ami_id to take the recommended ECS GPU AMI.",
                title=f"[capacity] ami_id {n.ami_id} does not exist in {n.region} (or is not "
                "shared with this account)",
            )
        ]
    if a.get("value"):
        return []
    return [
        c.finding(
            [_ev("ami", a.get("parameter", "?"), "Value", None)],
            "deploy to a Region that publishes the ECS GPU AMI, or pin one with [capacity] ami_id.",
            title=f"the recommended ECS GPU AMI parameter does not resolve in {n.region}",
        )
    ]


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
    out: list[Finding] = []

    def bad(fld: str, title: str, fix: str, severity: Severity = "error") -> None:
        out.append(
            c.finding(
                [_ev("capacity_reservations", rid, fld, r.get(fld))],
                fix,
                title=title,
                severity=severity,
            )
        )

    if r.get("State") != "active":
        bad(
            "State",
            f"capacity reservation {rid} is {r.get('State')}, not active: it holds no capacity",
            "use an active reservation, or drop capacity_reservation_id and reserved_instances.",
        )
    if r.get("InstanceType") != n.instance_type:
        bad(
            "InstanceType",
            f"capacity reservation {rid} is for {r.get('InstanceType')}, the spec launches "
            f"{n.instance_type}: no instance uses it",
            "make [capacity] instance_type the reservation's type, or use a reservation for "
            f"{n.instance_type}.",
        )
    if r.get("InstancePlatform") != "Linux/UNIX":
        bad(
            "InstancePlatform",
            f"capacity reservation {rid} is for {r.get('InstancePlatform')}; the ECS GPU AMI "
            "launches Linux/UNIX instances",
            "use a Linux/UNIX reservation.",
        )
    if n.reserved_instances is not None and int(r.get("TotalInstanceCount", 0)) < (
        n.reserved_instances
    ):
        bad(
            "TotalInstanceCount",
            f"capacity reservation {rid} holds {r.get('TotalInstanceCount')} instances; "
            f"reserved_instances is {n.reserved_instances}",
            f"lower [capacity] reserved_instances to {r.get('TotalInstanceCount')}, or grow "
            "the reservation (`aws ec2 modify-capacity-reservation --instance-count N`).",
        )
    elif n.reserved_instances is not None and int(r.get("AvailableInstanceCount", 0)) < (
        n.reserved_instances
    ):
        bad(
            "AvailableInstanceCount",
            f"only {r.get('AvailableInstanceCount')} of capacity reservation {rid}'s "
            f"{r.get('TotalInstanceCount')} instances are free now; the rest launch On-Demand",
            "free the reservation's instances other workloads use, or accept On-Demand for "
            "the rest (the group falls back to it).",
            "warning",
        )
    az = r.get("AvailabilityZone")
    zones = _subnet_azs(s, n)
    if zones is not None and az not in zones:
        bad(
            "AvailabilityZone",
            f"capacity reservation {rid} is in {az}, but the group's subnets are in "
            f"{', '.join(sorted(zones)) or 'no AZ'}: no instance can use it",
            f"add a [network] subnet in {az}, or use a reservation in {', '.join(sorted(zones))}.",
        )
    elif zones is None and n.vpc_id is None:
        bad(
            "AvailabilityZone",
            f"capacity reservation {rid} is in {az}; the stack's own VPC picks its two AZs "
            "at deploy, so the reservation may sit outside them",
            f"give the spec a [network] with a subnet in {az}.",
            "warning",
        )
    if r.get("InstanceMatchCriteria") == "open":
        bad(
            "InstanceMatchCriteria",
            f"capacity reservation {rid} is open: any matching instance in the account uses "
            "it, so other workloads can take the floor (the group targets it by id either way)",
            "make it targeted (`aws ec2 modify-capacity-reservation "
            "--instance-match-criteria targeted`) if the floor is this service's alone.",
            "info",
        )
    end = parse_time(r.get("EndDate")) if r.get("EndDateType") == "limited" else None
    now = s.get("_collection", {}).get("now")
    when = parse_time(now) or datetime.now(UTC)
    if end is not None and end <= when + RESERVATION_ENDS_SOON:
        bad(
            "EndDate",
            f"capacity reservation {rid} ends {end.isoformat()}, within "
            f"{RESERVATION_ENDS_SOON.days} days: the floor then launches On-Demand",
            "extend it (`aws ec2 modify-capacity-reservation --end-date ...`), or plan for "
            "On-Demand capacity.",
            "warning",
        )
    return out


def _subnet_azs(s: Snapshot, n: Needs) -> set[str] | None:
    if n.vpc_id is None or "subnets" not in s:
        return None
    return {
        str(x.get("AvailabilityZone")) for x in s["subnets"] if x.get("SubnetId") in n.subnet_ids
    }


def _secret_grant_text(grants: list[SecretGrant]) -> str:
    return "; ".join(f"{g.action} on {', '.join(g.resources)}" for g in grants)


def secrets_exist(kind: str, service: str) -> CheckBody:
    def body(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
        grants = [g for g in n.secrets if f":{service}:" in g.arn]
        out: list[Finding] = []
        for g in grants:
            got = s[kind].get(g.arn)
            if got is None:
                raise Unknown(f"{g.arn} was not read")
            if not got.get("found"):
                out.append(
                    c.finding(
                        [_ev(kind, g.arn, "found", False)],
                        "create it (docs/spec.md, [service] secrets), or correct the ARN in "
                        "[service] secrets; a task whose secret is missing never starts.",
                        title=f"secret {g.arn} does not exist",
                    )
                )
            elif got.get("DeletedDate"):
                out.append(
                    c.finding(
                        [_ev(kind, g.arn, "DeletedDate", got["DeletedDate"])],
                        "restore it (`aws secretsmanager restore-secret`) or use another.",
                        title=f"secret {g.arn} is scheduled for deletion",
                    )
                )
            elif got.get("KmsKeyId"):
                out.append(
                    c.finding(
                        [_ev(kind, g.arn, "KmsKeyId", got["KmsKeyId"])],
                        "allow kms:Decrypt to the stack's task execution role in that key's "
                        "policy; the template grants only the secret read.",
                        title=f"secret {g.arn} is encrypted with a customer managed KMS key",
                        severity="warning",
                    )
                )
        if out:
            return out
        return [
            c.finding(
                [_ev(kind, g.arn, "found", True) for g in grants],
                "nothing to do: the template grants its task execution role "
                f"{_secret_grant_text(grants)}.",
                title=f"every {service} secret of [service] secrets exists",
                severity="info",
            )
        ]

    return body


def ecr_image(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    if n.ecr is None:
        return [
            c.finding(
                [_ev("spec", "service", "image", n.image)],
                "make sure the tag exists and the instances can reach that registry (a NAT "
                "gateway, or its own endpoint).",
                title=f"image {n.image} is not in ECR: its tag is not checked",
                severity="info",
            )
        ]
    got = s["ecr_image"]
    if got.get("found"):
        return []
    ref = n.ecr.tag or n.ecr.digest
    return [
        c.finding(
            [
                _ev("ecr_image", n.ecr.repository, "imageTag", ref),
                _ev("ecr_image", ref or "?", "error", got.get("error")),
            ],
            f"push it (`docker push {n.image}`), or correct [service] image.",
            title=f"image {n.image} is not in ECR ({got.get('error')}): tasks fail with "
            "CannotPullContainerError",
        )
    ]


def service_linked_role(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    if s["service_linked_role"].get("exists"):
        return []
    return [
        c.finding(
            [_ev("service_linked_role", ECS_SERVICE_LINKED_ROLE, "exists", False)],
            "nothing to do if you deploy with ecs-gpu: deploy creates it for a new stack "
            "(needs iam:CreateServiceLinkedRole); otherwise run `aws iam "
            "create-service-linked-role --aws-service-name ecs.amazonaws.com` once.",
            title=f"this account has no {ECS_SERVICE_LINKED_ROLE} yet",
            severity="info",
        )
    ]


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


def private_egress(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    out = []
    endpoints = [
        e for e in s["vpc_endpoints"] if e.get("State", "available").lower() == "available"
    ]
    prefix = f"com.amazonaws.{n.region}."
    wanted = [*INTERFACE_ENDPOINTS, *([WARM_POOL_ENDPOINT] if n.pool_instances else [])]
    for sid in n.subnet_ids:
        if sid not in {x.get("SubnetId") for x in s["subnets"]}:
            continue  # subnets_exist reports it
        rt = _route_table(s, sid)
        route = None if rt is None else _default_route(rt)
        if route is not None and any(route.get(k) for k in _EGRESS_TARGETS):
            continue
        if route is not None and str(route.get("GatewayId", "")).startswith("igw-"):
            continue  # a public subnet: reaches out through the internet gateway
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
        missing = [w for w in wanted if w not in have] + (
            [] if gateway else [f"{GATEWAY_ENDPOINT} (gateway)"]
        )
        rt_id = "?" if rt is None else rt.get("RouteTableId", "?")
        if missing:
            out.append(
                c.finding(
                    [
                        _ev("route_tables", rt_id, "Routes[0.0.0.0/0]", route),
                        _ev("vpc_endpoints", n.vpc_id or "?", "missing", missing),
                    ],
                    "add a route 0.0.0.0/0 to a NAT gateway in that route table, or create "
                    f"the VPC endpoints {', '.join(missing)} in {n.vpc_id}.",
                    title=f"subnet {sid} has no route out (no NAT gateway) and lacks endpoints "
                    "the instances need: they never register with ECS or pull the image",
                )
            )
        elif n.ecr is None:
            out.append(
                c.finding(
                    [_ev("route_tables", rt_id, "Routes[0.0.0.0/0]", route)],
                    "route 0.0.0.0/0 to a NAT gateway, or push the image to ECR.",
                    title=f"subnet {sid} has no route out, and image {n.image} is not in ECR: "
                    "no endpoint reaches its registry",
                )
            )
    return out


def _needs_network(n: Needs) -> str | None:
    return (
        None
        if n.vpc_id is not None
        else "the stack creates its own VPC with a NAT gateway (no [network] in the spec)"
    )


def _needs_reservation(n: Needs) -> str | None:
    return None if n.reservation_id else "the spec has no capacity_reservation_id"


def _needs_secrets(service: str) -> Callable[[Needs], str | None]:
    def applies(n: Needs) -> str | None:
        if any(f":{service}:" in g.arn for g in n.secrets):
            return None
        return f"the spec has no {service} secret"

    return applies


DEFINITIONS: Final[tuple[Definition, ...]] = (
    Definition(
        "PRE001",
        "error",
        "the On-Demand vCPU quota covers the fleet at max_instances",
        ("vcpu_quota",),
        vcpu_quota,
    ),
    Definition(
        "PRE002",
        "error",
        "the instance type is offered in the Region",
        ("offerings_region",),
        region_offering,
    ),
    Definition(
        "PRE003",
        "error",
        "the instance type is offered in each subnet's Availability Zone",
        ("offerings_az",),
        az_offering,
    ),
    Definition("PRE004", "error", "the GPU AMI exists in the Region", ("ami",), gpu_ami),
    Definition(
        "PRE005",
        "error",
        "the capacity reservation fits the spec",
        ("capacity_reservations",),
        reservation,
        _needs_reservation,
    ),
    Definition(
        "PRE006",
        "error",
        "every Secrets Manager secret exists",
        ("secretsmanager_secrets",),
        secrets_exist("secretsmanager_secrets", "secretsmanager"),
        _needs_secrets("secretsmanager"),
    ),
    Definition(
        "PRE007",
        "error",
        "every SSM parameter secret exists",
        ("ssm_secrets",),
        secrets_exist("ssm_secrets", "ssm"),
        _needs_secrets("ssm"),
    ),
    Definition("PRE008", "error", "the ECR image tag exists", (), ecr_image),
    Definition(
        "PRE009",
        "info",
        "ECS's service-linked role exists",
        ("service_linked_role",),
        service_linked_role,
    ),
    Definition(
        "PRE010",
        "error",
        "the [network] subnets exist in its VPC",
        ("subnets",),
        subnets_exist,
        _needs_network,
    ),
    Definition(
        "PRE011",
        "error",
        "private subnets reach ECS, ECR, CloudWatch and SSM (NAT or endpoints)",
        ("subnets", "route_tables", "vpc_endpoints"),
        private_egress,
        _needs_network,
    ),
)


@dataclass(frozen=True)
class Result:
    """The report, and the checks that do not apply to this spec (with why)."""

    report: Report
    not_applicable: tuple[tuple[str, str, str], ...]  # (id, title, why)

    @property
    def has_error(self) -> bool:
        return self.report.has_error

    @property
    def checked_in_aws(self) -> int:
        """Checks that decided from an AWS answer (a non-ECR image's note reads none)."""
        return sum(1 for r in self.report.results if r.status != "unknown" and r.check.requires)

    def as_dict(self, needs: Needs) -> dict[str, Any]:
        return {
            "needs": needs.as_dict(),
            **self.report.as_dict(),
            "not_applicable": [{"id": i, "title": t, "why": w} for i, t, w in self.not_applicable],
        }


def checks_for(needs: Needs) -> tuple[list[Check], list[tuple[str, str, str]]]:
    """The checks that apply to ``needs``, bound to them; and those that do not, with why."""
    run: list[Check] = []
    skipped: list[tuple[str, str, str]] = []
    for d in DEFINITIONS:
        why = None if d.applies is None else d.applies(needs)
        if why is not None:
            skipped.append((d.id, d.title, why))
            continue
        requires = d.requires + (("ecr_image",) if d.id == "PRE008" and needs.ecr else ())
        if d.id == "PRE003":
            requires += ("subnets",) if needs.vpc_id else ()
        run.append(
            Check(
                d.id,
                "preflight",
                d.severity,
                d.title,
                requires,
                functools.partial(_bound, d.body, needs),
            )
        )
    return run, skipped


def _bound(body: CheckBody, needs: Needs, s: Snapshot, c: Check) -> list[Finding]:
    return body(s, c, needs)


def evaluate(snapshot: Snapshot, needs: Needs) -> Result:
    """Every applicable check over what was read, in id order."""
    checks, skipped = checks_for(needs)
    return Result(run_checks(snapshot, checks), tuple(skipped))
