"""[capacity]: the root volume holds the model, gp3's ratios, the warm pool, the Spot group."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ecs_gpu import catalog
from ecs_gpu.contracts.signals import SignalPlan
from ecs_gpu.spec.messages import Problem
from ecs_gpu.spec.rules.placement import _task_fits
from ecs_gpu.spec.rules.service import _model_fits_gpu_memory, _weights_room_mib
from ecs_gpu.spec.sections.capacity import (
    GP3_BASELINE_IOPS,
    GP3_IOPS_PER_MIBPS,
    GP3_MAX_IOPS_PER_GIB,
)

if TYPE_CHECKING:
    from ecs_gpu.spec.model import Spec


# The root volume holds, besides the weights (downloaded into the container),
# the OS with the NVIDIA driver and the ECS and CloudWatch agents, and the
# serving image, extracted. Both are named guesses: the ECS GPU AMI's root
# snapshot is 30 GiB (aws/amazon-ecs-ami block_device_size_gb) and holds the
# OS; deep-learning serving images are 15-20 GB (aws-semantics.md §4).
ROOT_OS_GIB = 30
ROOT_IMAGE_GIB = 20


def root_volume_needed_gib(spec: Spec) -> int:
    """Root volume an instance needs at least: OS + image + every placed task's model."""
    size = spec.service.model_size_gib or 0.0
    return ROOT_OS_GIB + ROOT_IMAGE_GIB + math.ceil(size * max(1, spec.tasks_per_instance))


def _root_volume_holds_the_model(spec: Spec) -> Iterator[Problem]:
    cap, svc = spec.capacity, spec.service
    if svc.model_size_gib is None or not _task_fits(spec):
        return
    if svc.model_size_gib * 1024 > _weights_room_mib(spec):
        return  # it never loads (_model_fits_gpu_memory): the disk is not the problem
    need = root_volume_needed_gib(spec)
    if cap.root_volume_gib >= need:
        return
    per = spec.tasks_per_instance
    yield Problem(
        "capacity.root_volume_gib",
        cap.root_volume_gib,
        f"each instance downloads the {svc.model_size_gib:g}-GiB model once per task "
        f"({per} per instance) beside the OS (about {ROOT_OS_GIB} GiB) and the image "
        f"(about {ROOT_IMAGE_GIB} GiB): {need} GiB at least, so the download fills the disk "
        "and the task never serves",
        f"set root_volume_gib to at least {need} (more leaves room for a redeploy: ECS keeps "
        "a stopped container's files for 3 hours)",
    )


def _gp3_ratios(spec: Spec) -> Iterator[Problem]:
    # The launch template takes a broken ratio and EC2 refuses it only when
    # the group launches an instance, so the fleet never starts. CDK's synth
    # catches the throughput ratio only when root_volume_iops is set.
    cap = spec.capacity
    iops = cap.root_volume_iops or GP3_BASELINE_IOPS
    iops_from = (
        "root_volume_iops" if cap.root_volume_iops else "gp3's baseline without root_volume_iops"
    )
    thr = cap.root_volume_throughput_mibps
    if thr is not None and thr * GP3_IOPS_PER_MIBPS > iops:
        yield Problem(
            "capacity.root_volume_throughput_mibps",
            thr,
            f"gp3 allows at most 0.25 MiB/s per IOPS, so {iops} IOPS ({iops_from}) carry at "
            f"most {iops // GP3_IOPS_PER_MIBPS} MiB/s; EC2 refuses to launch the instances",
            f"set root_volume_iops to at least {thr * GP3_IOPS_PER_MIBPS} (4 x throughput), "
            f"or lower root_volume_throughput_mibps to at most {iops // GP3_IOPS_PER_MIBPS}",
        )
    most = GP3_MAX_IOPS_PER_GIB * cap.root_volume_gib
    if iops > most:
        need = -(-iops // GP3_MAX_IOPS_PER_GIB)
        yield Problem(
            "capacity.root_volume_iops",
            iops,
            f"gp3 allows at most {GP3_MAX_IOPS_PER_GIB} IOPS per GiB, so a "
            f"{cap.root_volume_gib}-GiB root volume takes at most {most}; EC2 refuses to "
            "launch the instances",
            f"raise root_volume_gib to at least {need}, or lower root_volume_iops to at most "
            f"{most}",
        )


def _warm_pool(spec: Spec) -> Iterator[Problem]:
    cap = spec.capacity
    wp = cap.warm_pool
    if wp is None:
        return
    if wp.min_size > cap.max_instances:
        yield Problem(
            "capacity.warm_pool.min_size",
            wp.min_size,
            f"greater than capacity.max_instances ({cap.max_instances}): the group can never "
            "take in that many, and each waiting instance's volume is paid for",
            f"set min_size to at most {cap.max_instances}",
        )
    if wp.max_prepared is not None and wp.max_prepared > cap.max_instances:
        # The pool holds max_prepared - desired instances (PutWarmPool), so at
        # max_instances the ones beyond it wait for a group that never grows.
        yield Problem(
            "capacity.warm_pool.max_prepared",
            wp.max_prepared,
            f"greater than capacity.max_instances ({cap.max_instances}): the group never "
            f"holds more than {cap.max_instances}, so {wp.max_prepared - cap.max_instances} "
            "prepared instance(s) can never join it, yet each boots, pulls the image and "
            "is billed",
            f"set max_prepared to at most {cap.max_instances}, or remove it "
            "(default: min_size, at least 1)",
        )
    if wp.max_prepared is not None and wp.max_prepared < wp.min_size:
        yield Problem(
            "capacity.warm_pool.max_prepared",
            wp.max_prepared,
            f"less than warm_pool.min_size ({wp.min_size}); max_prepared counts the group's "
            "instances and the pool's together",
            f"set max_prepared to at least {wp.min_size}, or remove it (default: min_size)",
        )
    if wp.pool_state == "Hibernated":
        # EC2's hibernation prerequisites list no accelerated-computing (G, P)
        # family, and the catalog holds only those.
        yield Problem(
            "capacity.warm_pool.pool_state",
            "Hibernated",
            f"{spec.instance.name} cannot hibernate: EC2 supports hibernation on no GPU "
            "instance family",
            'use pool_state = "Stopped" (only the volume is paid for while waiting)',
        )
    if wp.reuse_on_scale_in:
        # awsdocs/amazon-ecs-developer-guide#216: with a capacity provider the
        # scale-in of reused instances breaks; ECS documents the option as unsupported.
        yield Problem(
            "capacity.warm_pool.reuse_on_scale_in",
            True,
            "Amazon ECS capacity providers do not support returning instances to the warm "
            "pool on scale-in (ECS developer guide, capacity providers with warm pools)",
            "remove reuse_on_scale_in",
        )


def _running_warm_pool(spec: Spec) -> Iterator[Problem]:
    wp = spec.capacity.warm_pool
    if wp is not None and wp.pool_state == "Running":
        yield Problem(
            "capacity.warm_pool.pool_state",
            "Running",
            "a running pool instance costs as much as a serving one, for a start about a "
            "minute faster than a stopped one",
            'use pool_state = "Stopped" unless that minute matters more than the price',
        )


def _with_type(spec: Spec, name: str) -> Spec:
    """``spec`` with ``name`` as its instance type: how a Spot type must hold the task."""
    cap = spec.capacity.model_copy(update={"instance_type": name})
    return spec.model_copy(update={"capacity": cap})


def _spot(spec: Spec) -> Iterator[Problem]:
    cap, sc = spec.capacity, spec.scaling
    spot = cap.spot
    if spot is None or not _task_fits(spec):
        return
    it, per = spec.instance, spec.tasks_per_instance
    for name in spot.instance_types:
        other = _with_type(spec, name)
        oi = other.instance
        if oi.gpus != it.gpus or not _task_fits(other) or other.tasks_per_instance != per:
            # Managed scaling sizes both groups from tasks per instance, and
            # the service's tasks must place on either group's instances.
            held = other.tasks_per_instance if _task_fits(other) else 0
            yield Problem(
                "capacity.spot.instance_types",
                name,
                f"not interchangeable with {it.name}: {oi.gpus} GPU(s) holding {held} task(s) "
                f"per instance where {it.name} has {it.gpus} GPU(s) holding {per}",
                f"list types with {it.gpus} GPU(s) per instance that hold {per} task(s) each "
                "(`ecs-gpu catalog`), e.g. the same size of another G family",
            )
            continue
        if list(_model_fits_gpu_memory(other)):
            yield Problem(
                "capacity.spot.instance_types",
                name,
                f"its {oi.gpu_model} ({oi.gpu_memory_mib} MiB per GPU) cannot hold the "
                f"{spec.service.model_size_gib:g}-GiB model that {it.name} holds, so a task "
                "placed there never loads",
                f"remove {name}, or list types with at least {it.gpu_memory_mib} MiB per GPU",
            )
    plan = SignalPlan.of(sc)
    if plan.tracks_gpu:
        # The host agent's GPU series has one value per Auto Scaling group
        # (gpu_metric.DIMENSION), and the policy reads the On-Demand group's.
        guard = plan.tracks_concurrency
        yield Problem(
            "scaling.gpu_guard" if guard else "scaling.signal",
            True if guard else sc.signal,
            "a GPU policy reads the GPU series of the On-Demand group only (the agent "
            "publishes one per Auto Scaling group), so with [capacity.spot] it would not see "
            "the tasks on Spot",
            'scale on concurrency: signal = "concurrency" with [service.metrics] and '
            "target_concurrency_per_task, without gpu_guard",
        )
    if spot.on_demand_base >= sc.max_tasks:
        yield Problem(
            "capacity.spot.on_demand_base",
            spot.on_demand_base,
            f"at least scaling.max_tasks ({sc.max_tasks}): every task runs on On-Demand, and "
            "the Spot group never launches an instance",
            f"set on_demand_base below {sc.max_tasks}, or remove [capacity.spot]",
        )


def _all_on_spot(spec: Spec) -> Iterator[Problem]:
    spot = spec.capacity.spot
    if spot is not None and spot.on_demand_base == 0 and spot.spot_percent == 100:
        yield Problem(
            "capacity.spot.spot_percent",
            100,
            "with on_demand_base = 0 every task runs on Spot, so one Spot capacity shortage "
            "can interrupt them all within two minutes",
            "keep on_demand_base at 1 or more (the default), or lower spot_percent",
        )


def _spot_unpriced(spec: Spec) -> Iterator[Problem]:
    spot = spec.capacity.spot
    if spot is None or spec.simulation.spot_discount_percent is not None:
        return
    # The same rule as ecs_gpu.design.spot.missing_discounts (spec cannot import it).
    missing = [n for n in spot.instance_types if catalog.spot_discount(n) is None]
    if missing:
        yield Problem(
            "capacity.spot.instance_types",
            missing,
            "no dated Spot discount for these types' families (docs/catalog.md), so `plan` "
            "and `simulate` cannot price Spot; the stack deploys as it is",
            "set [simulation] spot_discount_percent to the Spot Instance Advisor's 'Savings "
            "over On-Demand' for them in your Region",
        )
