"""GPU instance types ECS can schedule GPU tasks on.

Per size: GPU count, GPU model, per-GPU memory, vCPUs, memory and the
on-demand Linux price in us-east-1 with the date it was taken. Sizes, GPU
counts, per-GPU memory (MiB, as EC2 DescribeInstanceTypes reports it), vCPUs
and memory follow aws/karpenter-provider-aws
``website/content/en/preview/reference/instance-types.md`` (commit 1d92708,
generated from DescribeInstanceTypes); p3 comes from the same repository's
``v1.12`` page, because the current page no longer lists it. Network
interface limits follow DescribeInstanceTypes ``NetworkInfo`` (see
``_NETWORK_INTERFACES``). docs/catalog.md gives the source of every column and
every price.
Families AWS does not support for ECS GPU tasks are refused with the reason.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from typing import Any, Final

# Date the on-demand prices reflect (us-east-1, Linux, shared tenancy): the
# AmazonEC2 us-east-1 offer file version 20260924211011, which is after the
# June 2025 P4/P5 price cuts. Entries whose price comes from elsewhere carry
# their own price_date and price_note (see docs/catalog.md).
PRICE_DATE: Final = "2026-09-24"
PRICE_REGION: Final = "us-east-1"

# gp3 volume prices in PRICE_REGION (docs/aws-semantics.md §4 "gp3 price"):
# storage per GB-month provisioned, and IOPS and throughput only above the
# free baseline of 3,000 IOPS and 125 MB/s that every gp3 volume includes.
# Billed per second; AWS's pricing example prorates by a 30-day month.
GP3_PRICE_DATE: Final = "2026-12-01"
GP3_USD_PER_GB_MONTH: Final = 0.08
GP3_USD_PER_IOPS_MONTH: Final = 0.005
GP3_USD_PER_MBPS_MONTH: Final = 0.04
GP3_FREE_IOPS: Final = 3000
GP3_FREE_MBPS: Final = 125
BILLING_MONTH_S: Final = 30 * 86_400


def gp3_usd_per_hour(gib: int, iops: int | None = None, mibps: int | None = None) -> float:
    """What one gp3 volume costs an hour: its size, plus IOPS and throughput above
    the free baseline (None: the baseline, as the template leaves it)."""
    month = (
        gib * GP3_USD_PER_GB_MONTH
        + max(0, (iops or GP3_FREE_IOPS) - GP3_FREE_IOPS) * GP3_USD_PER_IOPS_MONTH
        + max(0, (mibps or GP3_FREE_MBPS) - GP3_FREE_MBPS) * GP3_USD_PER_MBPS_MONTH
    )
    return month * 3600 / BILLING_MONTH_S


# Spot's discount off the On-Demand price, per family, where a dated source
# gives one (docs/aws-semantics.md §11 "Spot price"): the simulator prices a
# Spot instance-hour at price x (1 - percent / 100). Spot prices move with
# supply and demand and differ by AZ, so each is an estimate with its date;
# [simulation] spot_discount_percent replaces it, and a family without an
# entry needs that key before plan or simulate can price Spot.
@dataclass(frozen=True)
class SpotDiscount:
    percent: float
    date: str
    source: str


SPOT_DISCOUNTS: Final[dict[str, SpotDiscount]] = {
    # g5.xlarge at $0.30-0.50/h against $1.006 On-Demand (us-east-1, a 2026
    # snapshot): the middle, $0.40, is 60 % off.
    "g5": SpotDiscount(
        60.0,
        "2026",
        "cloudprice.app, 'Spot instance economics: when interruption is fine' "
        "(us-east-1 snapshot, g5.xlarge $0.30-0.50/h)",
    ),
    # g6.xlarge at $0.45-0.75/h against $0.8048 On-Demand (us-east-1, observed
    # July 2026): the middle, $0.60, is 25 % off. The same source saw
    # $0.33-0.35/h (about 58 % off) in us-east-2: Spot prices differ by Region.
    "g6": SpotDiscount(
        25.0,
        "2026-07",
        "koleslaw.ai, '4 hours and 37 minutes of serving nothing' (thunkaboutit/"
        "koleslaw-ui src/content/blog/running-a-30b-model-on-spot-gpus.md; us-east-1, "
        "g6.xlarge $0.45-0.75/h)",
    ),
}


def spot_discount(name: str) -> SpotDiscount | None:
    """The cited Spot discount of ``name``'s family, or None when none is cited."""
    return SPOT_DISCOUNTS.get(lookup(name).family)


# Memory ECS keeps back for the host: we set ECS_RESERVED_MEMORY in
# /etc/ecs/ecs.config (host/agent.py) so the host CloudWatch agent, the SSM
# agent and the ECS agent itself never compete with tasks for RAM.
ECS_RESERVED_MEMORY_MIB: Final = 512
# ECS registers the MemTotal the kernel reports, minus ECS_RESERVED_MEMORY, not
# the nominal size (ECS developer guide, "Reserving Amazon ECS Linux container
# instance memory": an m4.large's 8192 MiB registers as 7985, 2.5 % less;
# aws/amazon-ecs-agent#399: c4.2xlarge 15360 -> 15043, 2.1 %). AWS publishes no
# per-type figure. Measured on EKS GPU and CPU nodes the gap is 1.7-5.3 %
# (pytorch/ci-infra#910, g5.48xlarge included); Karpenter assumes 7.5 %
# (VM_MEMORY_OVERHEAD_PERCENT) to never over-estimate. 6 % sits above every
# measurement, so validate rejects a task that would not place rather than the
# reverse; it under-states large types by up to ~4 %.
OS_MEMORY_OVERHEAD_FRACTION: Final = 0.06

# Names of the resources one task placement consumes, in the order messages list them.
GPU: Final = "GPU"
CPU: Final = "CPU"
MEMORY: Final = "memory"
ENI: Final = "network interfaces"


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpus: int
    gpu_model: str
    gpu_memory_mib: int
    vcpus: int
    memory_gib: float
    price_usd_per_hour: float
    # EC2 NetworkInfo.MaximumNetworkInterfaces: all network cards together.
    max_network_interfaces: int
    # MaximumNetworkInterfaces of the card at DefaultNetworkCardIndex; equal to the
    # above on single-card types.
    default_card_network_interfaces: int
    # When the price was read, and why it is not a plain offer-file price.
    price_date: str = PRICE_DATE
    price_note: str = ""

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def cpu_units(self) -> int:
        """CPU units ECS registers: 1,024 per vCPU."""
        return self.vcpus * 1024

    @property
    def memory_mib(self) -> int:
        """Nominal memory in MiB, as DescribeInstanceTypes reports it."""
        return int(self.memory_gib * 1024)

    @property
    def registered_memory_mib(self) -> int:
        """Estimated MemTotal the ECS agent sees (nominal less hypervisor/kernel)."""
        return int(self.memory_mib * (1 - OS_MEMORY_OVERHEAD_FRACTION))

    @property
    def schedulable_memory_mib(self) -> int:
        """Memory ECS can hand to tasks after the OS and ECS_RESERVED_MEMORY."""
        return self.registered_memory_mib - ECS_RESERVED_MEMORY_MIB

    @property
    def awsvpc_task_slots(self) -> int:
        """awsvpc tasks the instance's network interfaces allow without ENI trunking.

        Every task gets its own ENI and the instance's primary ENI is not one of
        them (ECS developer guide, "Increasing Amazon ECS Linux container instance
        network interfaces"). Only the default network card counts: EC2 attaches an
        interface to card 0 unless told otherwise, and no ECS document says task ENIs
        go elsewhere, so the smaller, certain figure applies (docs/catalog.md).
        """
        return self.default_card_network_interfaces - 1

    def placement_limits(
        self, gpus_per_task: int, cpu_units: int, memory_mib: int
    ) -> dict[str, int]:
        """Copies of a task one instance holds by each resource alone (GPU, CPU, memory, ENI)."""
        if gpus_per_task <= 0 or cpu_units <= 0 or memory_mib <= 0:
            raise ValueError("a task needs at least one GPU, one CPU unit and 1 MiB")
        return {
            GPU: self.gpus // gpus_per_task,
            CPU: self.cpu_units // cpu_units,
            MEMORY: self.schedulable_memory_mib // memory_mib,
            ENI: self.awsvpc_task_slots,
        }

    def tasks_per_instance(self, gpus_per_task: int, cpu_units: int, memory_mib: int) -> int:
        """How many copies of a task fit on one instance (GPU, CPU, memory and ENIs)."""
        return min(self.placement_limits(gpus_per_task, cpu_units, memory_mib).values())

    def binding_limits(self, gpus_per_task: int, cpu_units: int, memory_mib: int) -> list[str]:
        """The resources that set tasks_per_instance (several when they tie)."""
        limits = self.placement_limits(gpus_per_task, cpu_units, memory_mib)
        fewest = min(limits.values())
        return [name for name, n in limits.items() if n == fewest]


def _family(
    family: str,
    gpu_model: str,
    gpu_memory_mib: int,
    sizes: list[tuple[str, int, int, float, float]],
    *,
    price_date: str = PRICE_DATE,
    price_note: str = "",
) -> list[InstanceType]:
    return [
        InstanceType(
            f"{family}.{size}",
            gpus,
            gpu_model,
            gpu_memory_mib,
            vcpus,
            mem,
            price,
            *_NETWORK_INTERFACES[f"{family}.{size}"],
            price_date=price_date,
            price_note=price_note,
        )
        for size, gpus, vcpus, mem, price in sizes
    ]


# name -> (NetworkInfo.MaximumNetworkInterfaces, MaximumNetworkInterfaces of the
# default network card), from EC2 DescribeInstanceTypes as mirrored by moto 5.2's
# ec2/resources/instance_types.json and aws/amazon-vpc-cni-k8s
# pkg/vpc/vpc_ip_resource_limit.go (commit 6152e01, 17 Regions queried); the two
# agree on every type both list. moto has no p3: its rows come from the CNI file.
_NETWORK_INTERFACES: Final[dict[str, tuple[int, int]]] = {
    "g4dn.xlarge": (3, 3),
    "g4dn.2xlarge": (3, 3),
    "g4dn.4xlarge": (3, 3),
    "g4dn.8xlarge": (4, 4),
    "g4dn.16xlarge": (4, 4),
    "g4dn.12xlarge": (8, 8),
    "g4dn.metal": (15, 15),
    "g5.xlarge": (4, 4),
    "g5.2xlarge": (4, 4),
    "g5.4xlarge": (8, 8),
    "g5.8xlarge": (8, 8),
    "g5.16xlarge": (8, 8),
    "g5.12xlarge": (15, 15),
    "g5.24xlarge": (15, 15),
    # 8 GPUs but 7 interfaces: at most six awsvpc tasks without trunking.
    "g5.48xlarge": (7, 7),
    "g6.xlarge": (4, 4),
    "g6.2xlarge": (4, 4),
    "g6.4xlarge": (8, 8),
    "g6.8xlarge": (8, 8),
    "g6.16xlarge": (15, 15),
    "g6.12xlarge": (8, 8),
    "g6.24xlarge": (15, 15),
    "g6.48xlarge": (15, 15),
    "g6e.xlarge": (4, 4),
    "g6e.2xlarge": (4, 4),
    "g6e.4xlarge": (8, 8),
    "g6e.8xlarge": (8, 8),
    "g6e.16xlarge": (15, 15),
    "g6e.12xlarge": (10, 10),
    "g6e.24xlarge": (20, 10),
    "g6e.48xlarge": (40, 10),
    "gr6.4xlarge": (8, 8),
    "gr6.8xlarge": (8, 8),
    "p3.2xlarge": (4, 4),
    "p3.8xlarge": (8, 8),
    "p3.16xlarge": (8, 8),
    "p3dn.24xlarge": (15, 15),
    "p4d.24xlarge": (60, 15),
    "p4de.24xlarge": (60, 15),
    "p5.4xlarge": (4, 4),
    # 32 cards of 2 interfaces each: one awsvpc task per instance on card 0.
    "p5.48xlarge": (64, 2),
    "p5e.48xlarge": (64, 2),
    "p5en.48xlarge": (64, 4),
    "p6-b200.48xlarge": (32, 4),
}

# (size, GPUs, vCPUs, memory GiB, USD/hour). Per-GPU memory is EC2's MiB figure
# (an A10G "24 GB" is 22888 MiB), which is what nvidia-smi memory_total shows
# give or take the driver's reserve.
_TYPES: Final[list[InstanceType]] = [
    *_family(
        "g4dn",
        "NVIDIA T4",
        16384,
        [
            ("xlarge", 1, 4, 16, 0.526),
            ("2xlarge", 1, 8, 32, 0.752),
            ("4xlarge", 1, 16, 64, 1.204),
            ("8xlarge", 1, 32, 128, 2.176),
            ("16xlarge", 1, 64, 256, 4.352),
            ("12xlarge", 4, 48, 192, 3.912),
            ("metal", 8, 96, 384, 7.824),
        ],
    ),
    *_family(
        "g5",
        "NVIDIA A10G",
        22888,
        [
            ("xlarge", 1, 4, 16, 1.006),
            ("2xlarge", 1, 8, 32, 1.212),
            ("4xlarge", 1, 16, 64, 1.624),
            ("8xlarge", 1, 32, 128, 2.448),
            ("16xlarge", 1, 64, 256, 4.096),
            ("12xlarge", 4, 48, 192, 5.672),
            ("24xlarge", 4, 96, 384, 8.144),
            ("48xlarge", 8, 192, 768, 16.288),
        ],
    ),
    *_family(
        "g6",
        "NVIDIA L4",
        22888,
        [
            ("xlarge", 1, 4, 16, 0.8048),
            ("2xlarge", 1, 8, 32, 0.9776),
            ("4xlarge", 1, 16, 64, 1.3232),
            ("8xlarge", 1, 32, 128, 2.0144),
            ("16xlarge", 1, 64, 256, 3.3968),
            ("12xlarge", 4, 48, 192, 4.6016),
            ("24xlarge", 4, 96, 384, 6.6752),
            ("48xlarge", 8, 192, 768, 13.3504),
        ],
    ),
    *_family(
        "g6e",
        "NVIDIA L40S",
        45776,
        [
            ("xlarge", 1, 4, 32, 1.861),
            ("2xlarge", 1, 8, 64, 2.24208),
            ("4xlarge", 1, 16, 128, 3.00424),
            ("8xlarge", 1, 32, 256, 4.52856),
            ("16xlarge", 1, 64, 512, 7.57719),
            ("12xlarge", 4, 48, 384, 10.49264),
            ("24xlarge", 4, 96, 768, 15.06559),
            ("48xlarge", 8, 192, 1536, 30.13118),
        ],
    ),
    *_family(
        "gr6",
        "NVIDIA L4",
        22888,
        [
            ("4xlarge", 1, 16, 128, 1.5392),
            ("8xlarge", 1, 32, 256, 2.4464),
        ],
        price_date="2026-11-29",
        price_note="from an undated third-party table (us-west-2), where every other "
        "G-family rate matches us-east-1",
    ),
    *_family(
        "p3",
        "NVIDIA V100",
        16384,
        [
            ("2xlarge", 1, 8, 61, 3.06),
            ("8xlarge", 4, 32, 244, 12.24),
            ("16xlarge", 8, 64, 488, 24.48),
        ],
    ),
    *_family(
        "p3dn",
        "NVIDIA V100",
        32768,
        [("24xlarge", 8, 96, 768, 31.212)],
        price_date="2026-04-01",
        price_note="not in the cross-checked offer-file table; a us-east-1 table of April 2026",
    ),
    *_family("p4d", "NVIDIA A100", 40960, [("24xlarge", 8, 96, 1152, 21.957642)]),
    *_family("p4de", "NVIDIA A100", 81920, [("24xlarge", 8, 96, 1152, 27.44705)]),
    *_family(
        "p5",
        "NVIDIA H100",
        81920,
        [("4xlarge", 1, 16, 256, 6.88)],
        price_date="2026-11-29",
        price_note="from an undated third-party table (us-west-2); equals p5.48xlarge / 8",
    ),
    *_family("p5", "NVIDIA H100", 81920, [("48xlarge", 8, 192, 2048, 55.04)]),
    *_family(
        "p5e",
        "NVIDIA H200",
        144384,
        [("48xlarge", 8, 192, 2048, 63.296)],
        price_note="no on-demand listing in us-east-1 (sold through Capacity Blocks); "
        "the p5en.48xlarge price, same 8 x H200, stands in as an estimate",
    ),
    *_family("p5en", "NVIDIA H200", 144384, [("48xlarge", 8, 192, 2048, 63.296)]),
    *_family(
        "p6-b200",
        "NVIDIA B200",
        183359,
        [("48xlarge", 8, 192, 2048, 113.9328)],
        price_date="2026-11-29",
        price_note="from us-east-2 (checked against a bill) and us-west-2 tables; "
        "us-east-1 not confirmed",
    ),
]

CATALOG: Final[dict[str, InstanceType]] = {t.name: t for t in _TYPES}

# Families that exist but must not be used for an ECS GPU service, with why.
REFUSED_FAMILIES: Final[dict[str, str]] = {
    "g2": "g2 GPU support on ECS is deprecated (ECS developer guide, 'Amazon ECS task "
    "definitions for GPU workloads')",
    "g3": "g3 is a previous-generation family (NVIDIA Tesla M60, Maxwell): no Tensor Cores, "
    "and NVIDIA's 580 driver branch on the current ECS GPU AMI is the last to support "
    "Maxwell, so ecs-gpu does not offer it for new services",
    "g3s": "g3s is a previous-generation family (NVIDIA Tesla M60); see g3",
    "p2": "p2 works only on ECS GPU-optimized AMIs older than 20230912, which are "
    "Amazon Linux 2 and end-of-life since 2026-06-30",
    "g6f": "g6f sells fractions of an L4 (1/8 to 1/2 GPU); ECS reports their GPU count as 0 "
    "and needs fractional resourceRequirements, which ecs-gpu does not model",
    "gr6f": "gr6f sells half an L4, which ecs-gpu does not model (see g6f)",
    "g4ad": "g4ad has AMD Radeon GPUs; ECS GPU scheduling supports NVIDIA GPUs only",
    "g5g": "g5g is arm64 (Graviton) with NVIDIA T4G GPUs; ecs-gpu builds on the x86_64 "
    "ECS GPU-optimized AMI",
    "inf1": "Inferentia is not a GPU: use the ECS Neuron AMI and Neuron devices, not GPU "
    "resourceRequirements",
    "inf2": "Inferentia is not a GPU: use the ECS Neuron AMI and Neuron devices",
    "trn1": "Trainium is not a GPU: use the ECS Neuron AMI and Neuron devices",
    "trn1n": "Trainium is not a GPU: use the ECS Neuron AMI and Neuron devices",
    "trn2": "Trainium is not a GPU: use the ECS Neuron AMI and Neuron devices",
    "dl1": "dl1 has Habana Gaudi accelerators, which ECS GPU scheduling does not support",
    "p6-b300": "p6-b300 is not in the ecs-gpu catalog yet (its ECS GPU AMI support and "
    "prices are unverified)",
    "g7": "g7 is not in the ecs-gpu catalog yet (its ECS GPU AMI support and prices are "
    "unverified)",
    "g7e": "g7e is not in the ecs-gpu catalog yet (its ECS GPU AMI support and prices are "
    "unverified)",
}


def catalog_document() -> dict[str, Any]:
    """The catalog as ``ecs-gpu catalog --json`` writes it: every type, every refusal."""
    return {
        "price_region": PRICE_REGION,
        "price_date": PRICE_DATE,
        "instance_types": [
            {
                **dataclasses.asdict(t),
                "family": t.family,
                "awsvpc_task_slots": t.awsvpc_task_slots,
            }
            for t in CATALOG.values()
        ],
        "refused_families": [{"family": f, "reason": why} for f, why in REFUSED_FAMILIES.items()],
    }


# Words that mark a platform, not an instance type, with why it cannot host GPUs.
_REFUSED_PLATFORMS: Final[dict[str, str]] = {
    "fargate": "Fargate has no GPU support (the GPU task parameter is not supported on "
    "Fargate); ecs-gpu runs GPU tasks on EC2 capacity providers",
    "windows": "GPUs are not supported for Windows containers on ECS (task definition "
    "parameters, 'resourceRequirements'); ecs-gpu runs Linux tasks on the ECS GPU AMI",
}


class UnknownInstanceType(ValueError):
    """Raised with a user-facing reason when a type is not in the catalog."""


def families() -> list[str]:
    """Supported families, in catalog order."""
    return list(dict.fromkeys(t.family for t in _TYPES))


def lookup(name: str) -> InstanceType:
    """Return the catalog entry for ``name`` or raise with the reason it is refused."""
    if name in CATALOG:
        return CATALOG[name]
    lowered = name.strip().lower()
    for word, why in _REFUSED_PLATFORMS.items():
        if word in lowered:
            raise UnknownInstanceType(f"{name!r} is refused: {why}")
    if lowered in CATALOG:
        raise UnknownInstanceType(
            f"{name!r} is not spelled as EC2 spells it; use {lowered!r} (lowercase, no spaces)"
        )
    family = lowered.split(".", 1)[0]
    if family in REFUSED_FAMILIES:
        raise UnknownInstanceType(f"{name!r} is refused: {REFUSED_FAMILIES[family]}")
    if family in families():
        sizes = ", ".join(t.name for t in _TYPES if t.family == family)
        raise UnknownInstanceType(f"{name!r} is not a {family} size; {family} sizes: {sizes}")
    close = difflib.get_close_matches(lowered, list(CATALOG), n=1, cutoff=0.8)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UnknownInstanceType(
        f"{name!r} is not an ECS-supported GPU instance type{hint}; supported families: "
        f"{', '.join(families())} (run `ecs-gpu catalog` for every size)"
    )
