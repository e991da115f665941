"""What a spec asks of the account, as plain data: preflight's input (no AWS call here).

:class:`Needs` is built from the spec once; the checks in
:mod:`ecs_gpu.checks.preflight.account` and :mod:`ecs_gpu.checks.preflight.network`
read it with the answers :mod:`ecs_gpu.aws.preflight` collected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ecs_gpu import catalog
from ecs_gpu.checks.model import Check, Evidence, Finding
from ecs_gpu.checks.snapshot import Snapshot
from ecs_gpu.contracts import quotas
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import redeploy
from ecs_gpu.design.managed_scaling import pool_size
from ecs_gpu.spec import Spec


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
class SpotQuotaNeed:
    """One Spot vCPU quota the [capacity.spot] group may launch against (PRE012).

    EC2 counts a Spot instance against its own family group's quota ("All G
    and VT Spot Instance Requests", "All P Spot Instance Requests"), so each
    group of the listed types is checked alone: price-capacity-optimized may
    launch the whole group in either, each instance the group's largest type.
    """

    quota: quotas.VcpuQuota
    # The listed types of this family group, and the vCPUs of its largest.
    instance_types: tuple[str, ...]
    vcpus: int


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
    # [capacity.spot]: the Spot quota of each family group among its types (none
    # at spot_percent = 0), in the order the types are listed.
    spot_quotas: tuple[SpotQuotaNeed, ...] = ()
    spot_instance_types: tuple[str, ...] = ()
    # The stack's own Auto Scaling groups: their running instances are part of
    # the need, so a redeploy's usage leaves them out (not counted twice).
    own_groups: tuple[str, ...] = ()
    # [service.metrics]: the demand sidecar in each task publishes to CloudWatch
    # from the task's own network interface.
    task_publishes: bool = False
    # [load_balancer] certificate_arn: the HTTPS listener's ACM certificate (PRE013).
    certificate_arn: str | None = None

    @property
    def refresh_instances(self) -> int:
        """What an instance refresh launches beside a group at max_instances (redeploy)."""
        return redeploy.refresh_surge(self.max_instances)

    def spot_quota_vcpus_at_max(self, q: SpotQuotaNeed) -> int:
        """The Spot group at max_instances in ``q``'s family group, without a refresh's surge."""
        return self.max_instances * q.vcpus

    def spot_quota_vcpus_needed(self, q: SpotQuotaNeed) -> int:
        """The Spot group at max_instances (plus an instance refresh's surge) in ``q``'s
        family group, each instance its largest type."""
        return (self.max_instances + self.refresh_instances) * q.vcpus

    @property
    def spot_vcpus_needed(self) -> int:
        """The Spot group at max_instances, each instance its largest listed type."""
        return max((self.spot_quota_vcpus_needed(q) for q in self.spot_quotas), default=0)

    @property
    def instances(self) -> int:
        """The group at max_instances, an instance refresh's surge, and the warm pool."""
        return self.max_instances + self.refresh_instances + self.pool_instances

    @property
    def vcpus_needed(self) -> int:
        return self.instances * self.vcpus

    @property
    def vcpus_at_max(self) -> int:
        """The group at max_instances and the warm pool, without a refresh's surge: what
        the fleet holds whenever no instance refresh runs at max_instances."""
        return (self.max_instances + self.pool_instances) * self.vcpus

    @classmethod
    def from_spec(cls, spec: Spec, region: str, stack: str | None = None) -> Needs:
        """What ``spec`` deployed as ``stack`` (the spec's own name by default) asks."""
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
        sp = cap.spot
        names = Names.for_deployment(spec, stack)
        spot_types = () if sp is None else tuple(sp.instance_types)
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
            # spot_percent = 0 (the step before removing the table): the weight-0 Spot
            # provider launches nothing, so no Spot quota is needed.
            spot_quotas=(
                spot_quota_needs(spot_types) if sp is not None and sp.spot_percent > 0 else ()
            ),
            spot_instance_types=spot_types,
            own_groups=(names.asg,) + ((names.spot_asg,) if sp is not None else ()),
            task_publishes=spec.service.metrics is not None,
            certificate_arn=None
            if spec.load_balancer is None
            else spec.load_balancer.certificate_arn,
        )

    def as_dict(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["refresh_instances"] = self.refresh_instances
        doc["vcpus_needed"] = self.vcpus_needed
        doc["spot_vcpus_needed"] = self.spot_vcpus_needed
        # The Spot quotas PRE012 checks, each with what it must hold.
        doc["spot_quotas"] = [
            {
                **asdict(q.quota),
                "instance_types": list(q.instance_types),
                "vcpus": q.vcpus,
                "vcpus_needed": self.spot_quota_vcpus_needed(q),
            }
            for q in self.spot_quotas
        ]
        return doc


def spot_quota_needs(instance_types: tuple[str, ...]) -> tuple[SpotQuotaNeed, ...]:
    """The Spot quota of each family group among ``instance_types``, first listed first."""
    by_group: dict[str, list[str]] = {}
    for t in instance_types:
        by_group.setdefault(quotas.group(t), []).append(t)
    return tuple(
        SpotQuotaNeed(quotas.SPOT[g], tuple(types), max(catalog.lookup(t).vcpus for t in types))
        for g, types in by_group.items()
    )


def pool_instances(spec: Spec) -> int:
    """Warm-pool instances beside a group scaled to max_instances.

    PutWarmPool's rule (managed_scaling.pool_size) at a desired capacity of
    max_instances, with the prepared capacity the template deploys. They count
    against the running vCPU quota while they start and run their user data
    before they stop (all the time in a Running pool).
    """
    wp = spec.capacity.warm_pool
    if wp is None:
        return 0
    return pool_size(wp.min_size, wp.prepared_capacity, spec.capacity.max_instances)


CheckBody = Callable[[Snapshot, Check, Needs], list[Finding]]


def ev(kind: str, id: str, fld: str, value: Any) -> Evidence:
    return Evidence(kind, id, fld, value)
