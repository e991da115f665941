"""The instance layer: launch template, Auto Scaling group and ECS capacity provider.

The capacity provider's managed scaling is the ONLY controller of the group's
size; there is no host-CPU policy on the group (field report: adding a GPU
instance cannot lower the CPU of tasks already placed elsewhere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ecs_gpu.infra import host
from ecs_gpu.naming import Names
from ecs_gpu.node import ensure_node
from ecs_gpu.spec import Spec

ensure_node()

from aws_cdk import Duration  # noqa: E402
from aws_cdk import aws_autoscaling as autoscaling  # noqa: E402
from aws_cdk import aws_ec2 as ec2  # noqa: E402
from aws_cdk import aws_ecs as ecs  # noqa: E402
from aws_cdk import aws_iam as iam  # noqa: E402
from constructs import Construct  # noqa: E402

from ecs_gpu.infra.network import Network  # noqa: E402
from ecs_gpu.managed_scaling import (  # noqa: E402
    MIN_SCALING_STEP,
    instance_warmup_s,
    max_scaling_step,
)

# The AL2023 ECS GPU AMI's root device. Its size is [capacity] root_volume_gib.
ROOT_DEVICE: Final = "/dev/xvda"
# The group's reservation preference: fill the targeted ODCR first, then
# overflow to On-Demand (EC2 Auto Scaling CapacityReservationSpecification).
ODCR_PREFERENCE: Final = "capacity-reservations-first"


@dataclass(frozen=True)
class Capacity:
    launch_template: ec2.LaunchTemplate
    asg: autoscaling.AutoScalingGroup
    capacity_provider: ecs.AsgCapacityProvider
    security_group: ec2.SecurityGroup


def build_capacity(scope: Construct, spec: Spec, network: Network, role: iam.IRole) -> Capacity:
    """Launch template, ASG and capacity provider for ``spec.capacity``."""
    names = Names(spec.service.name)
    cap = spec.capacity

    sg = ec2.SecurityGroup(
        scope,
        "InstanceSecurityGroup",
        vpc=network.vpc,
        description=f"ecs-gpu {names.service_name}: GPU instances (no inbound; tasks use awsvpc)",
        # The ECS agent, SSM, dnf and image pulls all need outbound HTTPS.
        allow_all_outbound=True,
    )
    lt = ec2.LaunchTemplate(
        scope,
        "LaunchTemplate",
        # Resolved from the public SSM parameter at deploy time (a CFN
        # parameter of type AWS::SSM::Parameter::Value), so every deploy
        # picks up the current driver-bearing AMI and synth needs no AWS.
        machine_image=ecs.EcsOptimizedImage.amazon_linux2023(ecs.AmiHardwareType.GPU),
        instance_type=ec2.InstanceType(cap.instance_type),
        user_data=ec2.UserData.custom(host.cloud_config(spec)),
        role=role,
        security_group=sg,
        require_imdsv2=True,
        # Hop limit 1: awsvpc tasks get credentials from the ECS endpoint, so
        # no container needs the instance role through IMDS.
        http_put_response_hop_limit=1,
        detailed_monitoring=True,
        block_devices=[
            ec2.BlockDevice(
                device_name=ROOT_DEVICE,
                volume=ec2.BlockDeviceVolume.ebs(
                    cap.root_volume_gib,
                    encrypted=True,
                    volume_type=ec2.EbsDeviceVolumeType.GP3,
                    delete_on_termination=True,
                ),
            )
        ],
    )
    warm = Duration.seconds(instance_warmup_s(spec))
    asg = autoscaling.AutoScalingGroup(
        scope,
        "Asg",
        auto_scaling_group_name=names.asg,
        vpc=network.vpc,
        vpc_subnets=network.private,
        launch_template=lt,
        min_capacity=cap.min_instances,
        max_capacity=cap.max_instances,
        # The dashboard's instance panel reads GroupInServiceInstances.
        group_metrics=[autoscaling.GroupMetrics.all()],
        default_instance_warmup=warm,
        cooldown=warm,
        # A new AMI (the SSM parameter resolving to a newer image) or any
        # launch-template change makes a new template version; the instance
        # refresh carries it to running instances instead of only to new ones.
        update_policy=autoscaling.UpdatePolicy.instance_refresh(
            strategy=autoscaling.InstanceRefreshStrategy.ROLLING,
            # Launch the replacement before terminating: never below the
            # current GPU count while a refresh runs.
            min_healthy_percentage=100,
            max_healthy_percentage=110,
            instance_warmup=warm,
            skip_matching=True,
            # Every instance is protected from scale-in (managed termination
            # protection); WAIT would stall the refresh forever. ECS managed
            # draining moves the tasks off before the old instance goes.
            scale_in_protected_instances=autoscaling.ScaleInProtectedInstances.REFRESH,
        ),
    )
    if cap.capacity_reservation_id is not None:
        # The reservation is targeted by the group, never by the launch
        # template: EC2 fails a launch that targets a full reservation
        # (ReservationCapacityExceeded), so a template target would stop the
        # fleet at reserved_instances. "capacity-reservations-first" fills the
        # reservation, then launches On-Demand up to max_instances. The L2 has
        # no prop for it, so it goes in through the L1.
        cfn_asg = asg.node.default_child
        if not isinstance(cfn_asg, autoscaling.CfnAutoScalingGroup):
            raise TypeError(f"unexpected ASG child {type(cfn_asg).__name__}")
        cfn = autoscaling.CfnAutoScalingGroup
        cfn_asg.capacity_reservation_specification = cfn.CapacityReservationSpecificationProperty(
            capacity_reservation_preference=ODCR_PREFERENCE,
            capacity_reservation_target=cfn.CapacityReservationTargetProperty(
                capacity_reservation_ids=[cap.capacity_reservation_id]
            ),
        )
    cp = ecs.AsgCapacityProvider(
        scope,
        "CapacityProvider",
        capacity_provider_name=names.capacity_provider,
        auto_scaling_group=asg,
        enable_managed_scaling=True,
        target_capacity_percent=cap.target_capacity_percent,
        # Sets NewInstancesProtectedFromScaleIn on the group: ECS, not the
        # ASG, picks which GPU instance may go (only an empty one).
        enable_managed_termination_protection=True,
        enable_managed_draining=True,
        instance_warmup_period=instance_warmup_s(spec),
        minimum_scaling_step_size=MIN_SCALING_STEP,
        maximum_scaling_step_size=max_scaling_step(spec),
    )
    return Capacity(launch_template=lt, asg=asg, capacity_provider=cp, security_group=sg)
