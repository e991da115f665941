"""The GPU instance catalog: coverage of the issue's families, sourced facts, refusals, fit math."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu import catalog
from ecs_gpu.catalog import (
    CATALOG,
    ECS_RESERVED_MEMORY_MIB,
    OS_MEMORY_OVERHEAD_FRACTION,
    PRICE_DATE,
    REFUSED_FAMILIES,
    UnknownInstanceType,
    lookup,
)

# The families the "Define" issue names, item 2.
ISSUE_FAMILIES = [
    "g4dn",
    "g5",
    "g6",
    "g6e",
    "gr6",
    "p3",
    "p3dn",
    "p4d",
    "p4de",
    "p5",
    "p5e",
    "p5en",
    "p6-b200",
]

# Spot checks against EC2 DescribeInstanceTypes as mirrored by
# aws/karpenter-provider-aws (docs/catalog.md): name -> (GPUs, GPU MiB, vCPUs, memory MiB).
KNOWN = {
    "g4dn.xlarge": (1, 16384, 4, 16384),
    "g4dn.12xlarge": (4, 16384, 48, 196608),
    "g4dn.metal": (8, 16384, 96, 393216),
    "g5.xlarge": (1, 22888, 4, 16384),
    "g5.16xlarge": (1, 22888, 64, 262144),
    "g5.12xlarge": (4, 22888, 48, 196608),
    "g5.48xlarge": (8, 22888, 192, 786432),
    "g6.24xlarge": (4, 22888, 96, 393216),
    "g6e.xlarge": (1, 45776, 4, 32768),
    "g6e.48xlarge": (8, 45776, 192, 1572864),
    "gr6.8xlarge": (1, 22888, 32, 262144),
    "p3.2xlarge": (1, 16384, 8, 62464),
    "p3.8xlarge": (4, 16384, 32, 249856),
    "p3dn.24xlarge": (8, 32768, 96, 786432),
    "p4d.24xlarge": (8, 40960, 96, 1179648),
    "p4de.24xlarge": (8, 81920, 96, 1179648),
    "p5.4xlarge": (1, 81920, 16, 262144),
    "p5.48xlarge": (8, 81920, 192, 2097152),
    "p5e.48xlarge": (8, 144384, 192, 2097152),
    "p5en.48xlarge": (8, 144384, 192, 2097152),
    "p6-b200.48xlarge": (8, 183359, 192, 2097152),
}


@pytest.mark.parametrize("family", ISSUE_FAMILIES)
def test_every_issue_family_is_present(family: str) -> None:
    sizes = [t for t in CATALOG.values() if t.family == family]
    assert sizes, f"{family} missing from the catalog"
    assert family in catalog.families()


def test_no_family_beyond_the_supported_list() -> None:
    assert sorted(catalog.families()) == sorted(ISSUE_FAMILIES)


@pytest.mark.parametrize(("name", "facts"), sorted(KNOWN.items()))
def test_known_sizes_match_ec2(name: str, facts: tuple[int, int, int, int]) -> None:
    t = lookup(name)
    assert (t.gpus, t.gpu_memory_mib, t.vcpus, t.memory_mib) == facts


def test_family_size_counts() -> None:
    count = {f: sum(1 for t in CATALOG.values() if t.family == f) for f in ISSUE_FAMILIES}
    assert count == {
        "g4dn": 7,
        "g5": 8,
        "g6": 8,
        "g6e": 8,
        "gr6": 2,
        "p3": 3,
        "p3dn": 1,
        "p4d": 1,
        "p4de": 1,
        "p5": 2,
        "p5e": 1,
        "p5en": 1,
        "p6-b200": 1,
    }


def test_gpu_models_per_family() -> None:
    models = {t.family: t.gpu_model for t in CATALOG.values()}
    assert models["g4dn"] == "NVIDIA T4"
    assert models["g5"] == "NVIDIA A10G"
    assert models["g6"] == models["gr6"] == "NVIDIA L4"
    assert models["g6e"] == "NVIDIA L40S"
    assert models["p3"] == models["p3dn"] == "NVIDIA V100"
    assert models["p4d"] == models["p4de"] == "NVIDIA A100"
    assert models["p5"] == "NVIDIA H100"
    assert models["p5e"] == models["p5en"] == "NVIDIA H200"
    assert models["p6-b200"] == "NVIDIA B200"


def test_every_entry_is_self_consistent() -> None:
    for name, t in CATALOG.items():
        assert t.name == name
        assert t.gpus >= 1, name
        assert t.gpu_memory_mib > 0 and t.vcpus > 0 and t.memory_gib > 0, name
        assert t.cpu_units == t.vcpus * 1024
        assert t.schedulable_memory_mib > 0, name


def test_prices_positive_and_dated() -> None:
    for name, t in CATALOG.items():
        assert t.price_usd_per_hour > 0, name
        dt.date.fromisoformat(t.price_date)  # raises on a malformed date
        assert t.price_date <= dt.date.today().isoformat(), name
    dt.date.fromisoformat(PRICE_DATE)


def test_prices_reflect_the_june_2025_p4_p5_cuts() -> None:
    # Pre-cut list prices were p5.48xlarge 98.32 and p4d.24xlarge 32.7726.
    assert lookup("p5.48xlarge").price_usd_per_hour == pytest.approx(55.04)
    assert lookup("p4d.24xlarge").price_usd_per_hour == pytest.approx(21.957642)
    assert lookup("p5en.48xlarge").price_usd_per_hour == pytest.approx(63.296)


def test_estimated_prices_say_so() -> None:
    p5e = lookup("p5e.48xlarge")
    assert "estimate" in p5e.price_note
    # Entries priced from the cross-checked offer file carry no note.
    assert lookup("g5.xlarge").price_note == ""
    assert lookup("g5.xlarge").price_date == PRICE_DATE


def test_price_grows_with_vcpus_at_equal_gpu_count() -> None:
    # Only within one GPU count: a 1-GPU g4dn.16xlarge costs more than a 4-GPU g4dn.12xlarge.
    groups: dict[tuple[str, int], list[catalog.InstanceType]] = {}
    for t in CATALOG.values():
        groups.setdefault((t.family, t.gpus), []).append(t)
    for key, sizes in groups.items():
        prices = [t.price_usd_per_hour for t in sorted(sizes, key=lambda t: t.vcpus)]
        assert prices == sorted(prices), key


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("g2.2xlarge", "deprecated"),
        ("g2.8xlarge", "deprecated"),
        ("g3.4xlarge", "previous-generation"),
        ("g3s.xlarge", "previous-generation"),
        ("p2.xlarge", "20230912"),
        ("p2.16xlarge", "end-of-life"),
        ("g6f.large", "fractions"),
        ("g6f.4xlarge", "fractional"),
        ("gr6f.4xlarge", "half an L4"),
        ("g4ad.xlarge", "AMD"),
        ("g5g.xlarge", "arm64"),
        ("inf2.xlarge", "not a GPU"),
        ("trn1.32xlarge", "not a GPU"),
        ("fargate", "Fargate has no GPU support"),
        ("FARGATE", "Fargate has no GPU support"),
        ("windows", "Windows containers"),
        ("g5.xlarge-windows", "Windows containers"),
    ],
)
def test_refused_types_name_the_reason(name: str, why: str) -> None:
    with pytest.raises(UnknownInstanceType) as exc:
        lookup(name)
    msg = str(exc.value)
    assert repr(name) in msg
    assert "refused" in msg
    assert why in msg


def test_every_refused_family_is_refused_by_lookup() -> None:
    for family, why in REFUSED_FAMILIES.items():
        with pytest.raises(UnknownInstanceType, match=re.escape(why)):
            lookup(f"{family}.xlarge")
        assert family not in catalog.families()


def test_wrong_case_suggests_the_ec2_spelling() -> None:
    with pytest.raises(UnknownInstanceType, match=re.escape("use 'g5.xlarge'")):
        lookup("G5.XLARGE")


def test_unknown_size_of_a_supported_family_lists_its_sizes() -> None:
    with pytest.raises(UnknownInstanceType) as exc:
        lookup("g5.3xlarge")
    assert "g5.48xlarge" in str(exc.value) and "g5.xlarge" in str(exc.value)


def test_non_gpu_type_lists_supported_families() -> None:
    with pytest.raises(UnknownInstanceType) as exc:
        lookup("m5.large")
    msg = str(exc.value)
    assert "not an ECS-supported GPU instance type" in msg
    for family in ISSUE_FAMILIES:
        assert family in msg
    assert "ecs-gpu catalog" in msg


def test_memory_model_numbers() -> None:
    g5 = lookup("g5.xlarge")
    registered = int(16384 * (1 - OS_MEMORY_OVERHEAD_FRACTION))
    assert g5.registered_memory_mib == registered == 15400
    assert g5.schedulable_memory_mib == registered - ECS_RESERVED_MEMORY_MIB == 14888
    # The documented m4.large datapoint (8192 -> 7985 MiB) is within the model's margin.
    assert int(8192 * (1 - OS_MEMORY_OVERHEAD_FRACTION)) <= 7985


def test_tasks_per_instance_gpu_bound() -> None:
    # g6.48xlarge: 8 GPUs and 15 network interfaces, so the GPUs bind.
    g6_48 = lookup("g6.48xlarge")
    assert g6_48.tasks_per_instance(1, 1024, 4096) == 8
    assert g6_48.binding_limits(1, 1024, 4096) == [catalog.GPU]
    assert g6_48.tasks_per_instance(2, 1024, 4096) == 4
    assert g6_48.tasks_per_instance(3, 1024, 4096) == 2
    assert g6_48.tasks_per_instance(8, 1024, 4096) == 1
    assert g6_48.tasks_per_instance(9, 1024, 4096) == 0


def test_tasks_per_instance_eni_bound() -> None:
    # 8 GPUs but 7 ENIs: the primary interface is the instance's, six are left for tasks.
    g5_48 = lookup("g5.48xlarge")
    assert (g5_48.gpus, g5_48.max_network_interfaces, g5_48.awsvpc_task_slots) == (8, 7, 6)
    assert g5_48.tasks_per_instance(1, 1024, 4096) == 6
    assert g5_48.binding_limits(1, 1024, 4096) == [catalog.ENI]
    # Two GPUs per task leave four tasks, within the six interfaces: GPUs bind again.
    assert g5_48.tasks_per_instance(2, 1024, 4096) == 4
    assert g5_48.binding_limits(2, 1024, 4096) == [catalog.GPU]
    # Multi-card types count only the default card: p5.48xlarge has 64 interfaces on
    # 32 cards, 2 of them on card 0.
    p5 = lookup("p5.48xlarge")
    assert (p5.max_network_interfaces, p5.default_card_network_interfaces) == (64, 2)
    assert p5.tasks_per_instance(1, 1024, 4096) == 1
    assert p5.tasks_per_instance(8, 1024, 4096) == 1


def test_binding_limits_name_ties_in_order() -> None:
    g5 = lookup("g5.xlarge")  # 1 GPU, 4096 CPU units, 14888 MiB for tasks, 3 task ENIs
    assert g5.binding_limits(1, 4096, 14888) == [catalog.GPU, catalog.CPU, catalog.MEMORY]
    assert g5.placement_limits(1, 1024, 1024) == {
        catalog.GPU: 1,
        catalog.CPU: 4,
        catalog.MEMORY: 14,
        catalog.ENI: 3,
    }


def test_every_type_holds_at_least_one_awsvpc_task() -> None:
    for name, t in CATALOG.items():
        assert t.awsvpc_task_slots >= 1, name
        assert t.default_card_network_interfaces <= t.max_network_interfaces, name


def _describe_instance_types() -> dict[str, Any]:
    """EC2 DescribeInstanceTypes as moto ships it (generated from the real API)."""
    data = resources.files("moto.ec2").joinpath("resources/instance_types.json.gz")
    with data.open("rb") as raw, gzip.open(raw) as f:
        types: dict[str, Any] = json.load(f)
    return types


def test_network_interfaces_match_describe_instance_types() -> None:
    ec2 = _describe_instance_types()
    checked = 0
    for name, t in CATALOG.items():
        if name not in ec2:
            # moto's copy has no p3 (previous generation): docs/catalog.md sources it.
            assert t.family == "p3", f"{name} missing from DescribeInstanceTypes"
            continue
        net = ec2[name]["NetworkInfo"]
        cards = {c["NetworkCardIndex"]: c["MaximumNetworkInterfaces"] for c in net["NetworkCards"]}
        assert t.max_network_interfaces == net["MaximumNetworkInterfaces"], name
        assert t.default_card_network_interfaces == cards[net["DefaultNetworkCardIndex"]], name
        checked += 1
    assert checked == len(CATALOG) - 3


def test_tasks_per_instance_cpu_bound() -> None:
    g4dn_12 = lookup("g4dn.12xlarge")  # 4 GPUs, 48 vCPU = 49152 units
    assert g4dn_12.tasks_per_instance(1, 16384, 1024) == 3
    assert g4dn_12.tasks_per_instance(1, 49152, 1024) == 1
    assert g4dn_12.tasks_per_instance(1, 49153, 1024) == 0


def test_tasks_per_instance_memory_bound() -> None:
    g6_12 = lookup("g6.12xlarge")  # 4 GPUs, 192 GiB
    sched = g6_12.schedulable_memory_mib
    assert g6_12.tasks_per_instance(1, 1024, sched // 2) == 2
    assert g6_12.tasks_per_instance(1, 1024, sched // 2 + 1) == 1
    assert g6_12.tasks_per_instance(1, 1024, sched) == 1
    assert g6_12.tasks_per_instance(1, 1024, sched + 1) == 0


def test_nominal_memory_never_fits() -> None:
    # A task asking for the advertised memory cannot be placed: ECS registers less.
    g5 = lookup("g5.xlarge")
    assert g5.tasks_per_instance(1, 1024, g5.memory_mib) == 0


@pytest.mark.parametrize(("g", "c", "m"), [(0, 1024, 1024), (1, 0, 1024), (1, 1024, 0)])
def test_tasks_per_instance_rejects_empty_tasks(g: int, c: int, m: int) -> None:
    with pytest.raises(ValueError, match="at least one GPU"):
        lookup("g5.xlarge").tasks_per_instance(g, c, m)


def test_docs_catalog_lists_every_type_and_refusal() -> None:
    doc = (Path(__file__).parents[1] / "docs" / "catalog.md").read_text(encoding="utf-8")
    rows = {
        line.split("|")[1].strip(" `"): line for line in doc.splitlines() if line.startswith("| `")
    }
    for name, t in CATALOG.items():
        assert name in rows, f"docs/catalog.md has no row for {name}"
        cells = [c.strip() for c in rows[name].split("|")]
        assert f"{t.price_usd_per_hour:g}" in cells and t.price_date in cells, rows[name]
        assert str(t.gpus) == cells[2] and str(t.gpu_memory_mib) == cells[4], rows[name]
        assert cells[8] == f"{t.max_network_interfaces} ({t.awsvpc_task_slots})", rows[name]
    for family in REFUSED_FAMILIES:
        assert family in rows, f"docs/catalog.md does not list refused family {family}"


def test_catalog_command_shows_enis(capsys: pytest.CaptureFixture[str]) -> None:
    from ecs_gpu import cli

    assert cli.main(["catalog"]) == 0
    out = capsys.readouterr().out
    assert "ENIs" in out
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for name, t in CATALOG.items():
        # Every type uncut on a default 80-column console, with "total (awsvpc tasks)".
        assert name in rows, out
        eni = rf" {t.max_network_interfaces} \({t.awsvpc_task_slots}\) "
        assert re.search(eni, rows[name]), rows[name]
