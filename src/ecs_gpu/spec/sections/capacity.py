"""[capacity], [capacity.warm_pool] and [capacity.spot]: instance type, group bounds,
reservation, AMI, disk, the pool, the Spot group."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from ecs_gpu import catalog
from ecs_gpu.contracts.ami import AMI_ID_PATTERN
from ecs_gpu.spec.messages import RuleError
from ecs_gpu.spec.sections.base import _Section


class WarmPoolSpec(_Section):
    """[capacity.warm_pool]: an EC2 Auto Scaling warm pool for the GPU ASG."""

    min_size: Annotated[int, Field(ge=0)] = 1
    # MaxGroupPreparedCapacity: the group's instances and the pool's together.
    # None: prepared_capacity's default, never AWS's (the group's max size).
    max_prepared: Annotated[int, Field(ge=0)] | None = None
    # Stopped: pay only for the EBS volume while waiting (AWS::AutoScaling::WarmPool).
    pool_state: Literal["Stopped", "Hibernated", "Running"] = "Stopped"
    reuse_on_scale_in: bool = False

    @property
    def prepared_capacity(self) -> int:
        """The MaxGroupPreparedCapacity the template deploys and the simulator runs.

        Unset, AWS keeps max size - desired instances prepared (PutWarmPool):
        a stopped GPU instance and its volume for every one the group could
        still add, and each scale-in boots one more. The default, min_size
        (at least 1), gives the pool an absolute size: PutWarmPool sizes it
        max(MinSize, MaxGroupPreparedCapacity - desired), which is min_size
        whatever the group runs; with min_size 0, one instance waits while
        the group has none (aws-semantics §4 "Pool size").
        """
        return self.max_prepared if self.max_prepared is not None else max(1, self.min_size)


class SpotSpec(_Section):
    """[capacity.spot]: a second Auto Scaling group of Spot instances beside the On-Demand one.

    The service's capacity-provider strategy keeps ``on_demand_base`` tasks on
    On-Demand and puts ``spot_percent`` of the tasks above it on Spot
    (aws-semantics §11). The Spot group has no warm pool: EC2 Auto Scaling
    refuses one on a group that requests Spot Instances.
    """

    # Interchangeable types for price-capacity-optimized to choose from: each
    # holds as many tasks as capacity.instance_type (spec rule _spot). Up to
    # 20: the Spot group's launch-template overrides, one per type, and more
    # types than that add no pools a GPU service can fill.
    instance_types: Annotated[list[str], Field(min_length=1, max_length=20)]
    # Tasks that always run on On-Demand: the strategy's base (only one
    # provider in a strategy may have one). 1: a Spot shortage never takes
    # the whole service down.
    on_demand_base: Annotated[int, Field(ge=0)] = 1
    # Percent of the tasks above the base that run on Spot: the strategy's
    # weights, spot_percent on Spot and 100 - spot_percent on On-Demand.
    # 0 keeps the Spot provider at weight 0, which places no task: the step
    # that empties the Spot group before the table is removed (redeploy.py).
    spot_percent: Annotated[int, Field(ge=0, le=100)] = 70

    @field_validator("instance_types")
    @classmethod
    def _types(cls, v: list[str]) -> list[str]:
        for name in v:
            try:
                catalog.lookup(name)
            except catalog.UnknownInstanceType as e:
                raise RuleError(
                    str(e),
                    'list types that `ecs-gpu catalog` lists, e.g. ["g5.xlarge", "g6.xlarge"]',
                ) from None
        if len(set(v)) != len(v):
            raise RuleError(f"{v} lists a type twice", "list each instance type once")
        return v


# gp3 limits, from the EC2 API (botocore 1.44's ec2 model, CreateVolume and
# LaunchTemplateEbsBlockDeviceRequest: Iops, Throughput, VolumeSize; the
# CloudFormation AWS::EC2::LaunchTemplate Ebs schema says the same): 3,000
# (the default) to 80,000 IOPS, 125 to 2,000 MiB/s, 1 to 65,536 GiB. The two
# ratios are in the EBS User Guide's gp3 section ("maximum ratio of
# provisioned IOPS to provisioned volume size is 500 IOPS per GiB", "of
# provisioned throughput to provisioned IOPS is .25 MiB/s per IOPS"; CDK's
# ec2 Volume and block-device checks use the same 500 and 0.25).
GP3_BASELINE_IOPS = 3000
# What a gp3 volume writes without root_volume_throughput_mibps (the EBS User
# Guide's gp3 baseline, the API's smallest Throughput).
GP3_BASELINE_MIBPS = 125
GP3_MAX_GIB = 65536
GP3_MAX_IOPS_PER_GIB = 500
# 0.25 MiB/s per IOPS, kept whole: throughput x 4 <= IOPS.
GP3_IOPS_PER_MIBPS = 4


class CapacitySpec(_Section):
    instance_type: str
    min_instances: Annotated[int, Field(ge=0)] = 0
    max_instances: Annotated[int, Field(ge=1)]
    target_capacity_percent: Annotated[int, Field(gt=0, le=100)] = 100
    capacity_reservation_id: Annotated[str, Field(pattern=r"^cr-[0-9a-f]{17}$")] | None = None
    reserved_instances: Annotated[int, Field(ge=1)] | None = None
    # Pins the GPU AMI (the template's AMI parameter default). Without it
    # deploy gives a new stack the recommended ECS GPU AMI and keeps an
    # existing stack's AMI until --update-ami (ecs_gpu.contracts.ami).
    ami_id: Annotated[str, Field(pattern=AMI_ID_PATTERN)] | None = None
    # Root EBS volume of each instance (gp3). Images and the model weights a
    # container downloads land here, and ECS keeps a stopped container's layer
    # for 3 h (ECS_ENGINE_TASK_CLEANUP_WAIT_DURATION), so a redeploy holds two
    # copies. 30: the ECS AMIs' root snapshot (aws/amazon-ecs-ami
    # block_device_size_gb); GP3_MAX_GIB: the largest gp3 volume.
    root_volume_gib: Annotated[int, Field(ge=30, le=GP3_MAX_GIB)] = 200
    # gp3 performance of that volume; None keeps gp3's baseline (3,000 IOPS,
    # 125 MiB/s). Image extraction and weight loading are throughput-bound.
    # Bounds: gp3's (see GP3_*); the ratios between the three are _gp3_ratios.
    root_volume_iops: Annotated[int, Field(ge=GP3_BASELINE_IOPS, le=80000)] | None = None
    root_volume_throughput_mibps: Annotated[int, Field(ge=GP3_BASELINE_MIBPS, le=2000)] | None = (
        None
    )
    # [capacity.warm_pool]: pre-initialized instances that start in about a
    # minute instead of booting and pulling the image.
    warm_pool: WarmPoolSpec | None = None
    # [capacity.spot]: a Spot group and capacity provider beside this one.
    spot: SpotSpec | None = None

    @field_validator("instance_type")
    @classmethod
    def _type(cls, v: str) -> str:
        try:
            catalog.lookup(v)
        except catalog.UnknownInstanceType as e:
            raise RuleError(
                str(e), 'pick a type that `ecs-gpu catalog` lists, e.g. "g5.xlarge"'
            ) from None
        return v

    @property
    def instance(self) -> catalog.InstanceType:
        return catalog.lookup(self.instance_type)
