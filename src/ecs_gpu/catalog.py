"""GPU instance types ECS can schedule GPU tasks on.

Per size: GPU count, GPU model, per-GPU memory, vCPUs, memory and the
on-demand Linux price in us-east-1 with the date it was taken. GPU counts and
per-GPU memory follow EC2 DescribeInstanceTypes as mirrored in
aws/karpenter-provider-aws ``website/content/en/docs/reference/instance-types.md``
(commit 1d92708); see docs/catalog.md for the sources of every column.
Families AWS does not support for ECS GPU tasks are refused with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# Date the on-demand prices below were read (us-east-1, Linux, on-demand).
PRICE_DATE: Final = "2026-11-01"
PRICE_REGION: Final = "us-east-1"

# Memory ECS keeps back for the host: we set ECS_RESERVED_MEMORY in
# /etc/ecs/ecs.config (infra/host.py) so the host CloudWatch agent, the SSM
# agent and the ECS agent itself never compete with tasks for RAM.
ECS_RESERVED_MEMORY_MIB: Final = 512
# The kernel and firmware take part of the nominal RAM before ECS registers
# it (ECS registers MemTotal, not the marketing size; ECS developer guide,
# "Container instance memory management"). AWS publishes no per-type figure;
# 6 % covers the registered values reported for GPU types. A named estimate.
OS_MEMORY_OVERHEAD_FRACTION: Final = 0.06


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpus: int
    gpu_model: str
    gpu_memory_mib: int
    vcpus: int
    memory_gib: float
    price_usd_per_hour: float

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def cpu_units(self) -> int:
        """CPU units ECS registers: 1,024 per vCPU."""
        return self.vcpus * 1024

    @property
    def schedulable_memory_mib(self) -> int:
        """Memory ECS can hand to tasks after the OS and ECS_RESERVED_MEMORY."""
        nominal = int(self.memory_gib * 1024)
        return int(nominal * (1 - OS_MEMORY_OVERHEAD_FRACTION)) - ECS_RESERVED_MEMORY_MIB

    def tasks_per_instance(self, gpus_per_task: int, cpu_units: int, memory_mib: int) -> int:
        """How many copies of a task fit on one instance (GPU, CPU and memory)."""
        if gpus_per_task <= 0 or cpu_units <= 0 or memory_mib <= 0:
            raise ValueError("a task needs at least one GPU, one CPU unit and 1 MiB")
        return min(
            self.gpus // gpus_per_task,
            self.cpu_units // cpu_units,
            self.schedulable_memory_mib // memory_mib,
        )


def _family(
    family: str,
    gpu_model: str,
    gpu_memory_mib: int,
    sizes: list[tuple[str, int, int, float, float]],
) -> list[InstanceType]:
    return [
        InstanceType(f"{family}.{size}", gpus, gpu_model, gpu_memory_mib, vcpus, mem, price)
        for size, gpus, vcpus, mem, price in sizes
    ]


# (size, GPUs, vCPUs, memory GiB, USD/hour)
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
    *_family("p3dn", "NVIDIA V100", 32768, [("24xlarge", 8, 96, 768, 31.212)]),
    *_family("p4d", "NVIDIA A100", 40960, [("24xlarge", 8, 96, 1152, 21.9576)]),
    *_family("p4de", "NVIDIA A100", 81920, [("24xlarge", 8, 96, 1152, 27.447)]),
    *_family(
        "p5",
        "NVIDIA H100",
        81920,
        [
            ("4xlarge", 1, 16, 256, 6.88),
            ("48xlarge", 8, 192, 2048, 55.04),
        ],
    ),
    *_family("p5e", "NVIDIA H200", 144384, [("48xlarge", 8, 192, 2048, 63.296)]),
    *_family("p5en", "NVIDIA H200", 144384, [("48xlarge", 8, 192, 2048, 63.296)]),
    *_family("p6-b200", "NVIDIA B200", 183359, [("48xlarge", 8, 192, 2048, 113.9328)]),
]

CATALOG: Final[dict[str, InstanceType]] = {t.name: t for t in _TYPES}

# Families that exist but must not be used for an ECS GPU service, with why.
REFUSED_FAMILIES: Final[dict[str, str]] = {
    "g2": "g2 GPU support on ECS is deprecated (ECS developer guide, 'Amazon ECS task "
    "definitions for GPU workloads')",
    "g3": "g3 is a retired previous-generation family (M60 GPUs) that the AL2023 ECS GPU "
    "AMI's NVIDIA driver does not support",
    "p2": "p2 works only on GPU-optimized AMIs older than 20230912, which are "
    "Amazon Linux 2 and end-of-life since 2026-06-30",
    "g6f": "g6f sells fractions of an L4 (1/8 to 1/2 GPU); ECS reports their GPU count as 0 "
    "and needs fractional resourceRequirements, which ecs-gpu does not model",
    "gr6f": "gr6f sells fractions of an L4, which ecs-gpu does not model (see g6f)",
    "g4ad": "g4ad has AMD Radeon GPUs; ECS GPU scheduling supports NVIDIA GPUs only",
    "inf1": "Inferentia is not a GPU: use the ECS Neuron AMI and Neuron devices, not GPU "
    "resourceRequirements",
    "inf2": "Inferentia is not a GPU: use the ECS Neuron AMI and Neuron devices",
    "trn1": "Trainium is not a GPU: use the ECS Neuron AMI and Neuron devices",
    "trn2": "Trainium is not a GPU: use the ECS Neuron AMI and Neuron devices",
    "dl1": "dl1 has Habana Gaudi accelerators, which ECS GPU scheduling does not support",
}


class UnknownInstanceType(ValueError):
    """Raised with a user-facing reason when a type is not in the catalog."""


def lookup(name: str) -> InstanceType:
    """Return the catalog entry for ``name`` or raise with the reason it is refused."""
    if name in CATALOG:
        return CATALOG[name]
    family = name.split(".", 1)[0]
    if family in REFUSED_FAMILIES:
        raise UnknownInstanceType(f"{name!r} is refused: {REFUSED_FAMILIES[family]}")
    lowered = name.lower()
    if "fargate" in lowered:
        raise UnknownInstanceType(
            "Fargate has no GPU support (the GPU task parameter is not supported on "
            "Fargate); ecs-gpu runs GPU tasks on EC2 capacity providers"
        )
    if "windows" in lowered:
        raise UnknownInstanceType("GPUs are not supported for Windows containers on ECS")
    families = sorted({t.family for t in _TYPES})
    raise UnknownInstanceType(
        f"{name!r} is not an ECS-supported GPU instance type; supported families: "
        f"{', '.join(families)} (run `ecs-gpu catalog` for every size)"
    )
