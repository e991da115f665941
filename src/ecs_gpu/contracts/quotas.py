"""EC2's vCPU quotas per instance family: the Service Quotas codes preflight reads.

EC2 counts running On-Demand instances against one vCPU quota per family
group, and Spot requests against another (EC2 User Guide, "On-Demand
Instance quotas" and "Spot Instance quotas": "Running On-Demand G and VT
instances", "Running On-Demand P instances", "All G and VT Spot Instance
Requests", "All P Spot Instance Requests"; the quota codes are the Service
Quotas console's for service code ``ec2``, the same ones the EC2 docs'
examples pass to ``aws service-quotas get-service-quota``). Every family in
catalog.py is a G (g4dn, g5, g6, g6e, gr6) or a P (p3 ... p6) family. Pure
data; the lowest layer, beside the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ecs_gpu import catalog

SERVICE_CODE: Final = "ec2"


@dataclass(frozen=True)
class VcpuQuota:
    code: str
    name: str
    # Which instances use it, as DescribeInstances' instance-type filter (wildcards).
    type_patterns: tuple[str, ...]


ON_DEMAND: Final[dict[str, VcpuQuota]] = {
    "G": VcpuQuota("L-DB2E81BA", "Running On-Demand G and VT instances", ("g*", "vt*")),
    "P": VcpuQuota("L-417A185B", "Running On-Demand P instances", ("p*",)),
}
# [capacity.spot]'s group launches against these (preflight's Spot quota check).
SPOT: Final[dict[str, VcpuQuota]] = {
    "G": VcpuQuota("L-3819A6DF", "All G and VT Spot Instance Requests", ("g*", "vt*")),
    "P": VcpuQuota("L-7212CCBC", "All P Spot Instance Requests", ("p*",)),
}


def group(instance_type: str) -> str:
    """ "G" or "P": the quota group of a catalog type (by its family's first letter)."""
    family = catalog.lookup(instance_type).family
    letter = family[0].upper()
    if letter not in ON_DEMAND:  # pragma: no cover - the catalog holds only G and P families
        raise ValueError(f"{instance_type}: no vCPU quota group for family {family}")
    return letter


def on_demand(instance_type: str) -> VcpuQuota:
    """The On-Demand vCPU quota ``instance_type`` counts against."""
    return ON_DEMAND[group(instance_type)]


def spot(instance_type: str) -> VcpuQuota:
    """The Spot vCPU quota ``instance_type`` counts against."""
    return SPOT[group(instance_type)]


def increase_command(quota: VcpuQuota, value: int, region: str) -> str:
    """The AWS CLI command that asks for ``value`` vCPUs of ``quota`` in ``region``."""
    return (
        f"aws service-quotas request-service-quota-increase --service-code {SERVICE_CODE} "
        f"--quota-code {quota.code} --desired-value {value} --region {region}"
    )
