"""Preflight's checks: pure functions over what aws/preflight.py read (no AWS call here).

The answers form a snapshot like doctor's (``dict`` of kinds, each the raw
API items; a kind that could not be read is absent, and ``_collection``
records the denied and failed calls), so preflight reuses doctor's finding
shape, runner and report: a check whose kinds are absent is "unknown" with
the missing permission, never "ok". :class:`Needs` (needs.py) is what the
spec asks of the account; the placement and network checks are in
network.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Final

from ecs_gpu.checks.model import Check, Finding, Report, Severity, Unknown
from ecs_gpu.checks.preflight.needs import (
    CheckBody,
    EcrImage,
    Needs,
    SecretGrant,
    SpotQuotaNeed,
    pool_instances,
)
from ecs_gpu.checks.preflight.needs import ev as _ev
from ecs_gpu.checks.preflight.network import (
    az_offering,
    private_egress,
    reservation,
    subnets_exist,
)
from ecs_gpu.checks.runner import run_checks
from ecs_gpu.checks.snapshot import Snapshot
from ecs_gpu.contracts import quotas
from ecs_gpu.design import redeploy
from ecs_gpu.spec.sections.network import certificate_region

ECS_SERVICE_LINKED_ROLE: Final = "AWSServiceRoleForECS"
# Each usage item's Auto Scaling group (its aws:autoscaling:groupName tag; None: none).
GROUP_FIELD: Final = "AutoScalingGroup"

__all__ = [
    "ECS_SERVICE_LINKED_ROLE",
    "GROUP_FIELD",
    "EcrImage",
    "Needs",
    "Result",
    "SecretGrant",
    "evaluate",
    "pool_instances",
]


@dataclass(frozen=True)
class Definition:
    id: str
    severity: Severity
    title: str
    requires: tuple[str, ...]
    body: CheckBody
    # None: always applies; else why it does not apply to these needs (or None when it does).
    applies: Callable[[Needs], str | None] | None = None


def vcpu_quota(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    q = s["vcpu_quota"]
    value = int(float(q["Quota"]["Value"]))
    source = q["source"]
    need = n.vcpus_needed
    pool = _refresh_text(n) + (f" + {n.pool_instances} warm pool" if n.pool_instances else "")
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
    others, own = _split_own(s, "vcpu_usage", n, n.quota)
    used = None if others is None else _vcpus(others)
    if used is not None:
        ev.append(_ev("vcpu_usage", n.quota.code, "running_vcpus", used))
        if own:
            ev.append(_ev("vcpu_usage", n.quota.code, "own_instances_left_out", own))
    # What to ask for: the fleet plus what other instances hold now.
    desired = need + (used or 0)
    how = (
        f"raise it in the Service Quotas console (Amazon EC2, '{n.quota.name}') or run "
        f"`{quotas.increase_command(n.quota, desired, n.region)}`"
    )
    steady = n.vcpus_at_max
    if value < steady:
        fits = value // n.vcpus
        return [
            c.finding(
                ev,
                f"{how}; or lower [capacity] max_instances to {_max_instances_within(fits, n)} "
                f"(the quota holds {fits} {n.instance_type}).",
                title=f"'{n.quota.name}' ({n.quota.code}) is {value} vCPUs in {n.region}; the "
                f"fleet at max_instances needs {steady}: launches past {fits} instance(s) fail "
                "with VcpuLimitExceeded and tasks stay PROVISIONING",
            )
        ]
    # Others' vCPUs first: they keep the fleet itself below max_instances.
    if used is not None and used + steady > value:
        return [
            c.finding(
                ev,
                f"{how}, or free the vCPUs other instances of this quota hold ({_own_text(n)}).",
                title=f"'{n.quota.name}' has room for the fleet, but {used} of its {value} vCPUs "
                "are in use now: the fleet cannot reach max_instances until they are freed",
                severity="warning",
            )
        ]
    if value < need + (used or 0):
        return [_refresh_short(c, ev, how, n.quota.name, value - (used or 0), steady, need, n)]
    usage = "usage not read" if used is None else f"{used} in use now{_own_note(own)}"
    return [
        c.finding(
            ev,
            "nothing to do.",
            title=f"'{n.quota.name}' covers the fleet: {value} vCPUs ({source}) against {need} "
            f"needed, {usage}",
            severity="info",
        )
    ]


def spot_vcpu_quota(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    """PRE012: each family group's Spot quota holds the Spot group at max_instances.

    A Spot instance counts against its own family group's quota (G and VT, or
    P), so a group listing types of both is checked against each: at
    max_instances of the largest listed type of that family.
    """
    out: list[Finding] = []
    for sq in n.spot_quotas:
        q = s["spot_vcpu_quota"].get(sq.quota.code)
        if q is None:
            raise Unknown(f"{sq.quota.code} ({sq.quota.name}) was not read")
        out += _spot_quota_finding(s, c, n, sq, q)
    return out


def _spot_quota_finding(
    s: Snapshot, c: Check, n: Needs, sq: SpotQuotaNeed, q: dict[str, Any]
) -> list[Finding]:
    """One Spot quota against the Spot group at max_instances of its family's largest type.

    Like PRE001: the Spot instances of the quota's families that run or start
    now hold part of it (this stack's own included when it is deployed).
    """
    quota = sq.quota
    value = int(float(q["Quota"]["Value"]))
    source = q["source"]
    need = n.spot_quota_vcpus_needed(sq)
    size = sq.vcpus
    ev = [
        _ev("spot_vcpu_quota", quota.code, "Value", value),
        _ev("spot_vcpu_quota", quota.code, "source", source),
        _ev(
            "spec",
            "capacity.spot",
            "spot_vcpus_needed",
            f"{need} = ({n.max_instances} max_instances{_refresh_text(n)}) x {size} vCPUs "
            f"(the largest of {', '.join(sq.instance_types)})",
        ),
    ]
    spot_held, own = _split_own(s, "spot_vcpu_usage", n, quota)
    used = None if spot_held is None else _vcpus(spot_held)
    held = "Spot usage not read"
    if used is not None and spot_held is not None:
        running = len(spot_held)
        ev.append(_ev("spot_vcpu_usage", quota.code, "running_vcpus", used))
        ev.append(_ev("spot_vcpu_usage", quota.code, "instances", running))
        if own:
            ev.append(_ev("spot_vcpu_usage", quota.code, "own_instances_left_out", own))
        held = f"{used} held by {running} running or pending Spot instance(s){_own_note(own)}"
    # Free vCPUs, and how many Spot instances of the largest listed type they hold.
    free = max(value - (used or 0), 0)
    fits = free // size
    room = f"{free} free, room for {fits} Spot instance(s) of {size} vCPUs"
    # What to ask for: the Spot group plus what other Spot instances hold now.
    how = (
        f"raise it in the Service Quotas console (Amazon EC2, '{quota.name}') or run "
        f"`{quotas.increase_command(quota, need + (used or 0), n.region)}`"
    )
    steady = n.spot_quota_vcpus_at_max(sq)
    if value < steady:
        now = "" if used is None else f" ({held} now: {room})"
        return [
            c.finding(
                ev,
                f"{how}; until then the Spot group's launches fail and the strategy's Spot "
                "share waits (lower [capacity.spot] spot_percent, 0 for none, to run On-Demand "
                "meanwhile; a running stack drops the table only after spot_percent = 0).",
                title=f"'{quota.name}' ({quota.code}) is {value} vCPUs in {n.region}; the Spot "
                f"group at max_instances needs {steady}: launches past {fits} Spot "
                f"instance(s) fail{now}",
            )
        ]
    if used is not None and used + steady > value:
        return [
            c.finding(
                ev,
                f"{how}, or free the vCPUs other Spot instances of this quota hold "
                f"({_own_text(n)}).",
                title=f"'{quota.name}' has room for the Spot group, but {used} of its {value} "
                f"vCPUs are {held.split(' ', 1)[1]} now: {room}, short of the "
                f"{n.max_instances} at max_instances until they are freed",
                severity="warning",
            )
        ]
    if value < need + (used or 0):
        return [_refresh_short(c, ev, how, quota.name, value - (used or 0), steady, need, n)]
    usage = held if used is None else f"{held}, {room}"
    return [
        c.finding(
            ev,
            "nothing to do.",
            title=f"'{quota.name}' covers the Spot group: {value} vCPUs ({source}) against "
            f"{need} needed; {usage}",
            severity="info",
        )
    ]


def _refresh_short(
    c: Check,
    ev: list[Any],
    how: str,
    name: str,
    free: int,
    steady: int,
    need: int,
    n: Needs,
) -> Finding:
    """A quota that holds the fleet at max_instances but not an instance refresh there.

    A warning, not an error: the surge exists only while a refresh runs with
    the group at max_instances (a launch-template change: a new AMI, an
    upgrade of ecs-gpu), not on a stack's first create or any other update.
    """
    return c.finding(
        ev,
        f"{how}; or refresh the fleet only below max_instances.",
        title=f"'{name}' holds the fleet at max_instances ({free} vCPUs free against {steady}) "
        f"but not an instance refresh there ({need}): a refresh started at max_instances launches "
        f"{n.refresh_instances} more instance(s), whose launches fail with VcpuLimitExceeded, "
        "so the refresh waits",
        severity="warning",
    )


def _refresh_text(n: Needs) -> str:
    """The instance refresh's surge in a need's sum."""
    if not n.refresh_instances:
        return ""
    return (
        f" + {n.refresh_instances} launched beside them by an instance refresh, "
        f"MaxHealthyPercentage {redeploy.REFRESH_MAX_HEALTHY_PERCENT}"
    )


def _max_instances_within(fits: int, n: Needs) -> int:
    """The largest max_instances whose group, refresh surge and warm pool fit ``fits``."""
    best = 0
    for m in range(1, fits + 1):
        if m + redeploy.refresh_surge(m) + n.pool_instances <= fits:
            best = m
    return best


def _split_own(
    s: Snapshot, kind: str, n: Needs, quota: quotas.VcpuQuota
) -> tuple[list[Any] | None, int]:
    """The instances under ``kind`` that ``quota`` counts, less this stack's own, and
    how many of the stack's own were left out; (None, 0) if not read.

    The stack's own groups' instances (a redeploy's) are already part of the
    need at max_instances: counted as usage too, they would be counted twice.
    """
    if kind not in s:
        return None, 0
    counted = [
        i
        for i in s[kind]
        if any(fnmatchcase(i.get("InstanceType") or "", p) for p in quota.type_patterns)
    ]
    others = [i for i in counted if i.get(GROUP_FIELD) not in n.own_groups]
    return others, len(counted) - len(others)


def _own_note(own: int) -> str:
    return f" (and this stack's own {own}, part of the need)" if own else ""


def _own_text(n: Needs) -> str:
    groups = " and ".join(n.own_groups) or "its groups"
    return f"this stack's own instances, in {groups}, are part of the need and not counted here"


def _vcpus(instances: list[Any]) -> int:
    return _usage({"held": instances}, "held") or 0


def _needs_spot(n: Needs) -> str | None:
    if n.spot_quotas:
        return None
    if n.spot_instance_types:
        return "[capacity.spot] spot_percent = 0 launches no Spot instance"
    return "the spec has no [capacity.spot]"


def _usage(s: Snapshot, kind: str) -> int | None:
    """vCPUs of the running or pending instances under ``kind``; None if not read."""
    if kind not in s:
        return None
    from ecs_gpu import catalog

    total = 0
    for inst in s[kind]:
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


def gpu_ami(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    a = s["ami"]
    if n.ami_id is not None:
        state = a.get("State")
        if a.get("found") and state in (None, "available"):
            return []
        if a.get("found"):
            return [
                c.finding(
                    [_ev("ami", n.ami_id, "State", state)],
                    f"pin an available AMI in {n.region} ([capacity] ami_id), or drop ami_id to "
                    "take the recommended ECS GPU AMI.",
                    title=f"[capacity] ami_id {n.ami_id} is {state} in {n.region}, not "
                    "available: instances cannot launch from it",
                )
            ]
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


def certificate_in_region(s: Snapshot, c: Check, n: Needs) -> list[Finding]:
    # ACM certificates are regional, and a load balancer uses one from its own
    # Region (aws-semantics.md §13): the ARN names it, no call is needed.
    arn = n.certificate_arn
    where = None if arn is None else certificate_region(arn)
    if where is None or where == n.region:
        return []
    return [
        c.finding(
            [_ev("spec", "load_balancer", "certificate_arn", arn)],
            f"request or import a certificate for the same names in {n.region} (`aws acm "
            f"request-certificate --region {n.region} ...`; ACM cannot copy one between "
            f"Regions) and set [load_balancer] certificate_arn to its ARN, or deploy to "
            f"{where} (--region {where}).",
            title=f"[load_balancer] certificate_arn is an ACM certificate in {where}, and the "
            f"stack deploys to {n.region}: the HTTPS listener can use only a certificate in "
            "its own Region, so the deploy fails",
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


def _needs_network(n: Needs) -> str | None:
    return (
        None
        if n.vpc_id is not None
        else "the stack creates its own VPC with a NAT gateway (no [network] in the spec)"
    )


def _needs_certificate(n: Needs) -> str | None:
    return None if n.certificate_arn else "the spec has no [load_balancer] certificate_arn"


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
    Definition(
        "PRE012",
        "error",
        "each Spot vCPU quota of the listed types' families covers the Spot group at max_instances",
        ("spot_vcpu_quota",),
        spot_vcpu_quota,
        _needs_spot,
    ),
    Definition(
        "PRE013",
        "error",
        "the HTTPS listener's ACM certificate is in the stack's Region",
        (),
        certificate_in_region,
        _needs_certificate,
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
