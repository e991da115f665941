"""Preflight: read what decides whether this account and Region can run a spec.

Read-only calls, before anything is paid for: the family's vCPU quota and
the vCPUs in use, the instance type's offerings, the subnets, route tables
and endpoints of ``[network]``, the GPU AMI, the capacity reservation, the
container secrets, the ECR image and ECS's service-linked role. The answers
form a snapshot of raw API items (as doctor's facts do); the checks are
pure functions in :mod:`ecs_gpu.checks.preflight.account`.

A call AWS denies (or fails) leaves its kinds absent and is recorded with
the IAM permission it needs, so only its checks are unknown; an endpoint
that cannot be reached, or no credentials, ends the run (exit 3) at once,
since every other call would wait out the same timeouts.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Any, Final

import boto3
from botocore import exceptions as bx
from botocore.config import Config
from botocore.parsers import ResponseParserError

from ecs_gpu.aws import ami as aws_ami
from ecs_gpu.aws.clients import client
from ecs_gpu.aws.errors import AccessDenied, Unreachable, error_code, translate
from ecs_gpu.checks.preflight.account import (
    ECS_SERVICE_LINKED_ROLE,
    GROUP_FIELD,
    Needs,
    Result,
    evaluate,
)
from ecs_gpu.checks.snapshot import COLLECTION_KEY, Snapshot, to_json_safe
from ecs_gpu.contracts import ami, quotas
from ecs_gpu.errors import EcsGpuError

# Every IAM action preflight may call (docs/operate.md "Before your first deploy").
PERMISSIONS: Final = (
    "servicequotas:GetServiceQuota",
    "servicequotas:GetAWSDefaultServiceQuota",
    "ec2:DescribeInstances",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeSubnets",
    "ec2:DescribeRouteTables",
    "ec2:DescribeVpcEndpoints",
    "ec2:DescribeImages",
    "ec2:DescribeCapacityReservations",
    "ssm:GetParameter",
    "secretsmanager:DescribeSecret",
    "ecr:DescribeImages",
    "iam:GetRole",
)
# EC2 Auto Scaling tags each instance it launches with its group's name.
GROUP_TAG: Final = "aws:autoscaling:groupName"
# Lifecycles the On-Demand quota does not count: Spot has its own quota.
_NOT_ON_DEMAND: Final = ("spot", "scheduled")
# The answers EC2, ECR, SSM and Secrets Manager give for a thing that is not there.
_NOT_FOUND: Final = frozenset(
    {
        "ResourceNotFoundException",
        "ParameterNotFound",
        "ImageNotFoundException",
        "RepositoryNotFoundException",
        "NoSuchEntity",
    }
)


@dataclass
class Collector:
    """One read of the account for ``needs``; :func:`collect` is the entry point."""

    session: boto3.Session
    needs: Needs
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    snapshot: Snapshot = field(default_factory=dict)
    denied: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)

    def client(self, service: str, region: str | None = None) -> Any:
        # A quota read is looked at once: a quota API that fails (moto lacks
        # GetAWSDefaultServiceQuota and answers 500) is reported unknown after
        # two tries, not waited on for eight.
        cfg = None if region in (None, self.needs.region) else Config(region_name=region)
        return client(self.session, service, config=cfg, fail_fast=service == "service-quotas")

    def read(
        self,
        kinds: tuple[str, ...],
        service: str,
        operation: str,
        fn: Callable[[], Any],
        *,
        split: bool = False,
    ) -> None:
        """Run ``fn`` and store its answer under ``kinds[0]``; a refusal is recorded instead.

        ``split``: one call answers every kind in ``kinds``, and ``fn`` returns
        each kind's part by name (a refusal leaves them all absent).
        """
        try:
            value = fn()
        except ResponseParserError as e:
            # A 5xx page botocore cannot parse (moto's answer to a call it lacks).
            message = " ".join(str(e).split())[:300]
            self.errors.append(
                {"call": f"{service} {operation}", "message": message, "kinds": list(kinds)}
            )
            return
        except (bx.ClientError, bx.BotoCoreError, EcsGpuError) as e:
            err = e if isinstance(e, EcsGpuError) else translate(e, service, operation)
            call = f"{service} {operation}"
            if isinstance(err, AccessDenied):
                # The call that was denied (GetAWSDefaultServiceQuota after GetServiceQuota).
                perm = err.permission
                self.denied.append({"call": call, "permission": perm, "kinds": list(kinds)})
                return
            if isinstance(err, Unreachable) or (
                isinstance(e, bx.NoCredentialsError | bx.PartialCredentialsError)
            ):
                raise err from None
            message = err.message if isinstance(err, EcsGpuError) else str(err)
            self.errors.append({"call": call, "message": message, "kinds": list(kinds)})
            return
        if split:
            self.snapshot.update({k: value[k] for k in kinds})
        else:
            self.snapshot[kinds[0]] = value

    def run(self) -> Snapshot:
        n = self.needs
        self._read_quotas()
        ec2 = self.client("ec2")
        self.read(
            ("offerings_region",),
            "ec2",
            "DescribeInstanceTypeOfferings",
            lambda: _offerings(ec2, "region", n.instance_type),
        )
        self.read(
            ("offerings_az",),
            "ec2",
            "DescribeInstanceTypeOfferings",
            lambda: _offerings(ec2, "availability-zone", n.instance_type),
        )
        self._read_network(ec2)
        self._read_ami(ec2)
        if n.reservation_id is not None:
            rid = n.reservation_id
            self.read(
                ("capacity_reservations",),
                "ec2",
                "DescribeCapacityReservations",
                lambda: _reservations(ec2, rid),
            )
        self._secrets()
        if n.ecr is not None:
            self.read(("ecr_image",), "ecr", "DescribeImages", self._ecr_image)
        self.read(("service_linked_role",), "iam", "GetRole", self._slr)
        self.snapshot[COLLECTION_KEY] = {
            "target": n.as_dict(),
            "now": self.now.isoformat(),
            "denied": self.denied,
            "errors": self.errors,
        }
        return to_json_safe(self.snapshot)  # type: ignore[no-any-return]

    def _read_quotas(self) -> None:
        """The On-Demand vCPU quota, each Spot family's, and the instances they count."""
        self.read(
            ("vcpu_quota",),
            "service-quotas",
            "GetServiceQuota",
            lambda: self._quota(self.needs.quota.code),
        )
        spot = self.needs.spot_quotas
        if spot:
            # Each family group's Spot quota, by code (preflight's Spot quota check
            # reads each).
            self.read(
                ("spot_vcpu_quota",),
                "service-quotas",
                "GetServiceQuota",
                lambda: {q.quota.code: self._quota(q.quota.code) for q in spot},
            )
        # One DescribeInstances for both quotas' instances in use.
        usage = ("vcpu_usage",) + (("spot_vcpu_usage",) if spot else ())
        self.read(usage, "ec2", "DescribeInstances", self._usage, split=True)

    def _read_network(self, ec2: Any) -> None:
        """Without [network] the Region's AZs (the stack's VPC takes two); with it the
        subnets, their route tables and the VPC's endpoints."""
        n = self.needs
        if n.vpc_id is None:
            self.read(
                ("availability_zones",),
                "ec2",
                "DescribeAvailabilityZones",
                lambda: ec2.describe_availability_zones()["AvailabilityZones"],
            )
            return
        vpc = [{"Name": "vpc-id", "Values": [n.vpc_id]}]
        self.read(
            ("subnets",),
            "ec2",
            "DescribeSubnets",
            # By filter: a missing id is left out instead of failing the call.
            lambda: _pages(
                ec2,
                "describe_subnets",
                "Subnets",
                Filters=[{"Name": "subnet-id", "Values": list(n.subnet_ids)}],
            ),
        )
        self.read(
            ("route_tables",),
            "ec2",
            "DescribeRouteTables",
            lambda: _pages(ec2, "describe_route_tables", "RouteTables", Filters=vpc),
        )
        self.read(
            ("vpc_endpoints",),
            "ec2",
            "DescribeVpcEndpoints",
            lambda: _pages(ec2, "describe_vpc_endpoints", "VpcEndpoints", Filters=vpc),
        )

    def _read_ami(self, ec2: Any) -> None:
        """The spec's pinned AMI, else the recommended ECS GPU AMI's id from SSM."""
        if self.needs.ami_id is not None:
            pinned = self.needs.ami_id
            self.read(("ami",), "ec2", "DescribeImages", lambda: _pinned_image(ec2, pinned))
            return
        ssm = self.client("ssm")
        self.read(
            ("ami",),
            "ssm",
            "GetParameter",
            lambda: {
                "parameter": ami.RECOMMENDED_SSM_PARAMETER,
                "value": aws_ami.recommended_id(ssm),
            },
        )

    def _quota(self, code: str) -> dict[str, Any]:
        sq = self.client("service-quotas")
        try:
            q = sq.get_service_quota(ServiceCode=quotas.SERVICE_CODE, QuotaCode=code)["Quota"]
            return {"Quota": q, "source": "applied"}
        except bx.ClientError as e:
            # No value applied to this account: the AWS default is what holds.
            if error_code(e) != "NoSuchResourceException":
                raise
        try:
            q = sq.get_aws_default_service_quota(ServiceCode=quotas.SERVICE_CODE, QuotaCode=code)
        except (bx.ClientError, bx.BotoCoreError) as e:
            raise translate(e, "service-quotas", "GetAWSDefaultServiceQuota") from None
        return {"Quota": q["Quota"], "source": "AWS default"}

    def _usage(self) -> dict[str, list[dict[str, Any]]]:
        """The running and pending instances each vCPU quota counts, by snapshot kind.

        On-Demand instances (no InstanceLifecycle) count against the On-Demand
        quota, Spot ones against the Spot quota (docs/aws-semantics.md section 8).
        One call over both quotas' families, split here by lifecycle and type:
        the two quotas may be different family groups.
        """
        n = self.needs
        counted: list[tuple[str, quotas.VcpuQuota, Callable[[dict[str, Any]], bool]]] = [
            ("vcpu_usage", n.quota, lambda i: i.get("InstanceLifecycle") not in _NOT_ON_DEMAND)
        ]
        # The Spot instances of every Spot quota's family group; the Spot quota check
        # splits them by type.
        for sq in n.spot_quotas:
            counted.append(
                ("spot_vcpu_usage", sq.quota, lambda i: i.get("InstanceLifecycle") == "spot")
            )
        patterns = list(dict.fromkeys(p for _, q, _ in counted for p in q.type_patterns))
        filters = [
            {"Name": "instance-type", "Values": patterns},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
        out: dict[str, list[dict[str, Any]]] = {kind: [] for kind, _, _ in counted}
        ec2 = self.client("ec2")
        for r in _pages(ec2, "describe_instances", "Reservations", Filters=filters):
            for i in r.get("Instances", []):
                itype = i.get("InstanceType") or ""
                seen: set[str] = set()
                for kind, quota, counts in counted:
                    if kind in seen:
                        continue
                    if counts(i) and any(fnmatchcase(itype, p) for p in quota.type_patterns):
                        seen.add(kind)
                        out[kind].append(
                            {
                                "InstanceId": i.get("InstanceId"),
                                "InstanceType": i.get("InstanceType"),
                                "CpuOptions": i.get("CpuOptions", {}),
                                # The group that launched it (EC2 Auto Scaling's tag):
                                # the checks leave this stack's own out of the usage.
                                GROUP_FIELD: _group_of(i),
                            }
                        )
        return out

    def _secrets(self) -> None:
        by_service: dict[str, dict[str, Any]] = {"secretsmanager": {}, "ssm": {}}
        done = {"secretsmanager": True, "ssm": True}
        for g in self.needs.secrets:
            parts = g.arn.split(":")
            service, region = parts[2], parts[3]
            c = self.client(service, region)
            kind = f"{service}_secrets"
            before = len(self.denied) + len(self.errors)
            if service == "secretsmanager":
                # The ARN without ECS's :json-key:version-stage:version-id tail.
                secret = ":".join(parts[:7])
                self.read(
                    (kind,),
                    service,
                    "DescribeSecret",
                    functools.partial(_describe_secret, c, secret),
                )
            else:
                self.read(
                    (kind,), service, "GetParameter", functools.partial(_get_parameter, c, g.arn)
                )
            if len(self.denied) + len(self.errors) > before:
                done[service] = False
                continue
            by_service[service][g.arn] = self.snapshot.pop(kind)
        for service, answers in by_service.items():
            if done[service] and answers:
                self.snapshot[f"{service}_secrets"] = answers

    def _ecr_image(self) -> dict[str, Any]:
        e = self.needs.ecr
        assert e is not None
        c = self.client("ecr", e.region)
        image_id = {"imageDigest": e.digest} if e.digest else {"imageTag": e.tag or "latest"}
        try:
            c.describe_images(
                registryId=e.registry_id, repositoryName=e.repository, imageIds=[image_id]
            )
        except bx.ClientError as err:
            if error_code(err) in _NOT_FOUND:
                return {"found": False, "error": error_code(err)}
            raise
        return {"found": True}

    def _slr(self) -> dict[str, Any]:
        try:
            self.client("iam").get_role(RoleName=ECS_SERVICE_LINKED_ROLE)
        except bx.ClientError as e:
            if error_code(e) in _NOT_FOUND:
                return {"exists": False}
            raise
        return {"exists": True}


def _group_of(instance: dict[str, Any]) -> str | None:
    for t in instance.get("Tags") or []:
        if t.get("Key") == GROUP_TAG:
            return str(t.get("Value"))
    return None


def _pages(c: Any, method: str, key: str, **kwargs: Any) -> list[Any]:
    out: list[Any] = []
    for page in c.get_paginator(method).paginate(**kwargs):
        out += page.get(key, [])
    return out


def _offerings(ec2: Any, location_type: str, instance_type: str) -> list[Any]:
    return _pages(
        ec2,
        "describe_instance_type_offerings",
        "InstanceTypeOfferings",
        LocationType=location_type,
        Filters=[{"Name": "instance-type", "Values": [instance_type]}],
    )


def _pinned_image(ec2: Any, image_id: str) -> dict[str, Any]:
    """Whether DescribeImages found the pinned id, and its State when it did."""
    image = aws_ami.describe(ec2, [image_id]).get(image_id)
    if image is None:
        return {"image_id": image_id, "found": False}
    return {"image_id": image_id, "found": True, "State": image.state, "Name": image.name}


def _reservations(ec2: Any, rid: str) -> list[Any]:
    try:
        return list(
            ec2.describe_capacity_reservations(CapacityReservationIds=[rid])["CapacityReservations"]
        )
    except bx.ClientError as e:
        if error_code(e) in (
            "InvalidCapacityReservationId.NotFound",
            "InvalidCapacityReservationId.Malformed",
        ):
            return []
        raise


def _describe_secret(c: Any, secret: str) -> dict[str, Any]:
    try:
        got = c.describe_secret(SecretId=secret)
    except bx.ClientError as e:
        if error_code(e) in _NOT_FOUND:
            return {"found": False}
        raise
    return {
        "found": True,
        "DeletedDate": got.get("DeletedDate"),
        "KmsKeyId": got.get("KmsKeyId"),
    }


def _get_parameter(c: Any, arn: str) -> dict[str, Any]:
    # By ARN (GetParameter's Name takes one): the ARN cannot say whether the
    # name began with "/". WithDecryption=False: the value is never read.
    try:
        c.get_parameter(Name=arn, WithDecryption=False)
    except bx.ClientError as e:
        if error_code(e) in _NOT_FOUND:
            return {"found": False}
        raise
    return {"found": True}


def collect(session: boto3.Session, needs: Needs, *, now: datetime | None = None) -> Snapshot:
    """The snapshot of every answer preflight's checks read."""
    collector = Collector(session, needs) if now is None else Collector(session, needs, now=now)
    return collector.run()


def preflight(session: boto3.Session, needs: Needs, *, now: datetime | None = None) -> Result:
    """Read the account, then run the checks."""
    return evaluate(collect(session, needs, now=now), needs)
