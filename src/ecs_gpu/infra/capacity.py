"""The instance layer: launch template, Auto Scaling group and ECS capacity provider.

The capacity provider's managed scaling is the ONLY controller of the group's
size; there is no host-CPU policy on the group (field report: adding a GPU
instance cannot lower the CPU of tasks already placed elsewhere).
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from typing import Final

import jsii
from aws_cdk import Aws, CfnParameter, CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from ecs_gpu import host
from ecs_gpu.contracts import ami
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import Design, ManagedScaling, redeploy
from ecs_gpu.design.managed_scaling import MIN_SCALING_STEP
from ecs_gpu.errors import BadInputError
from ecs_gpu.infra import cleanup
from ecs_gpu.infra.network import Network, retention
from ecs_gpu.infra.task import ecr_repository
from ecs_gpu.spec import Spec

# The AL2023 ECS GPU AMI's root device. Its size is [capacity] root_volume_gib.
ROOT_DEVICE: Final = "/dev/xvda"
# The group's reservation preference: fill the targeted ODCR first, then
# overflow to On-Demand (EC2 Auto Scaling CapacityReservationSpecification).
ODCR_PREFERENCE: Final = "capacity-reservations-first"
# With a reservation, launch into its AZ first and balance the rest across
# healthy AZs (AvailabilityZoneDistribution; the default
# balanced-best-effort would ignore where the reservation is).
ODCR_AZ_STRATEGY: Final = "reservations-then-balanced"
LAUNCHING: Final = "autoscaling:EC2_INSTANCE_LAUNCHING"
# The release function's runtime: the newest Python Lambda runs (cdk-nag L1).
RELEASE_RUNTIME: Final = lambda_.Runtime.PYTHON_3_14
RELEASE_TIMEOUT_S: Final = 120


class _Bare(ast.NodeTransformer):
    """Drops what only documents or type-checks: docstrings, annotations, typing imports."""

    def visit_Module(self, node: ast.Module) -> ast.Module:
        node.body = [n for n in _body(node) if not _typing_only(n)]
        return self.generic_visit(node)  # type: ignore[return-value]

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.body, node.returns = _body(node), None
        args = node.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if a is not None:
                a.annotation = None
        return self.generic_visit(node)  # type: ignore[return-value]

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        node.body = _body(node)
        return self.generic_visit(node)  # type: ignore[return-value]

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        if node.value is None:
            return ast.Pass()
        return ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)


def _body(node: ast.Module | ast.FunctionDef | ast.ClassDef) -> list[ast.stmt]:
    """``node``'s statements without its docstring (never empty)."""
    first = node.body[0] if node.body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return node.body[1:] or [ast.Pass()]
    return node.body


def _typing_only(node: ast.stmt) -> bool:
    """``from __future__``/``typing`` imports and the ``if TYPE_CHECKING:`` block."""
    if isinstance(node, ast.ImportFrom):
        return node.module in ("__future__", "typing")
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )


def release_source() -> str:
    """infra/cleanup.py as the function's inline code (:func:`bare_source`).

    Without what the runtime does not need, because deploy sends the template
    inline (TemplateBody, 51,200 bytes at most). The tests run this copy as
    well as the module.
    """
    return bare_source(inspect.getsource(cleanup))


def bare_source(source: str) -> str:
    """The same statements without docstrings, comments, annotations and typing imports.

    An ast round trip, indented one space a level.
    """
    tree = _Bare().visit(ast.parse(source))
    # ast.unparse writes one line per statement (newlines inside strings are
    # escaped), so leading spaces are only ever indentation.
    lines = [re.sub(r"^(    )+", _one_space, line) for line in ast.unparse(tree).splitlines()]
    return "\n".join(lines) + "\n"


def _one_space(m: re.Match[str]) -> str:
    return " " * (len(m.group(0)) // 4)


@jsii.implements(ec2.IMachineImage)
class ParameterImage:
    """The launch template's image: the stack's AMI parameter (``ami.PARAMETER``).

    An explicit id, not the public SSM parameter CloudFormation would re-resolve
    at every deploy: a newly published AMI would then replace the whole GPU
    fleet through the instance refresh, whatever the deploy was for.
    """

    def __init__(self, image_id: str) -> None:
        self.image_id = image_id

    def get_image(self, scope: Construct) -> ec2.MachineImageConfig:
        return ec2.MachineImageConfig(
            image_id=self.image_id,
            os_type=ec2.OperatingSystemType.LINUX,
            user_data=ec2.UserData.for_linux(),
        )


def ami_parameter(scope: Construct, spec: Spec) -> CfnParameter:
    """The stack's one AMI parameter, its default the spec's ``[capacity] ami_id`` if set.

    On the stack itself, so its logical id is ``ami.PARAMETER`` whatever the
    construct path; a second GpuService in the same stack shares it, and so
    must pin the same AMI.
    """
    stack = Stack.of(scope)
    pinned = spec.capacity.ami_id
    found = stack.node.try_find_child(ami.PARAMETER)
    if isinstance(found, CfnParameter):
        if found.default != pinned:
            raise BadInputError(
                f"[capacity] ami_id {pinned!r}: another GpuService in stack {stack.stack_name} "
                f"pins {found.default!r}, and one stack has one AMI parameter "
                f"({ami.PARAMETER}). Fix: give both specs the same ami_id, or put them in "
                "separate stacks."
            )
        return found
    return CfnParameter(
        stack,
        ami.PARAMETER,
        type="AWS::EC2::Image::Id",
        default=pinned,
        # Short: every byte counts against the 51,200-byte TemplateBody limit.
        description=f"GPU instances' AMI (recommended: {ami.RECOMMENDED_SSM_PARAMETER})",
    )


def asg_arn(name: str) -> str:
    """ARN pattern of the group: its id segment is a UUID known only after create."""
    return (
        f"arn:{Aws.PARTITION}:autoscaling:{Aws.REGION}:{Aws.ACCOUNT_ID}:"
        f"autoScalingGroup:*:autoScalingGroupName/{name}"
    )


@dataclass(frozen=True)
class Release:
    """The delete-safety custom resource and what it runs with."""

    function: lambda_.CfnFunction
    role: iam.Role
    policy: iam.Policy
    resource: CustomResource


@dataclass(frozen=True)
class WarmPool:
    pool: autoscaling.WarmPool
    # What the warm-pool unit on the instance calls (hook, image parameter, ECR).
    policy: iam.Policy
    image_parameter: ssm.StringParameter


@dataclass(frozen=True)
class SpotGroup:
    """[capacity.spot]: its launch template, group, capacity provider and release."""

    launch_template: ec2.LaunchTemplate
    asg: autoscaling.AutoScalingGroup
    capacity_provider: ecs.AsgCapacityProvider
    release: CustomResource


@dataclass(frozen=True)
class Capacity:
    launch_template: ec2.LaunchTemplate
    asg: autoscaling.AutoScalingGroup
    capacity_provider: ecs.AsgCapacityProvider
    security_group: ec2.SecurityGroup
    release: Release
    warm_pool: WarmPool | None
    spot: SpotGroup | None = None


def build_capacity(scope: Construct, design: Design, network: Network, role: iam.IRole) -> Capacity:
    """Launch template, ASG and capacity provider for the design's ``spec.capacity``."""
    spec = design.spec
    names = Names(spec.service.name)
    cap = spec.capacity

    sg = _instance_security_group(scope, names, network)
    lt = _launch_template(scope, spec, role, sg)
    asg, cfn_asg = _asg(scope, spec, design.managed_scaling, names, network, lt)
    if cap.capacity_reservation_id is not None:
        _target_reservation(cfn_asg, cap.capacity_reservation_id)
    cp = _capacity_provider(scope, spec, design.managed_scaling, names, asg)
    pool = _warm_pool(scope, spec, asg, cfn_asg, role) if cap.warm_pool is not None else None
    release = _release(scope, spec, asg, cp)
    spot_group = (
        _spot_group(scope, design, names, network, role, sg, lt, release) if cap.spot else None
    )
    if pool is not None:
        # Created after the release resource, so a pool that fails during a
        # create rolls back through the release's Delete (which unprotects and
        # empties the group) instead of hanging on protected instances
        # (aws-cdk#18179).
        pool.pool.node.add_dependency(release.resource)
    return Capacity(
        launch_template=lt,
        asg=asg,
        capacity_provider=cp,
        security_group=sg,
        release=release,
        warm_pool=pool,
        spot=spot_group,
    )


def _spot_group(
    scope: Construct,
    design: Design,
    names: Names,
    network: Network,
    role: iam.IRole,
    sg: ec2.SecurityGroup,
    on_demand_lt: ec2.LaunchTemplate,
    release: Release,
) -> SpotGroup:
    """The Spot group: its own launch template (the drain flag), a mixed instances policy
    of Spot only, price-capacity-optimized over ``instance_types``, and its provider.

    A launch template of its own, not the On-Demand one's: adding the flag
    there would make a new version of it and refresh every On-Demand
    instance. No warm pool: EC2 Auto Scaling refuses one on a group that
    requests Spot Instances (spot.group_spec).
    """
    sp = design.spec.capacity.spot
    assert sp is not None and design.spot is not None
    group, ms = design.spot.group, design.spot.managed_scaling
    # The On-Demand template's instance profile (one role, one profile: a
    # second would only add bytes to the inline template).
    profile = on_demand_lt.node.find_child("Profile")
    assert isinstance(profile, iam.CfnInstanceProfile)
    shared = iam.InstanceProfile.from_instance_profile_attributes(
        scope, "SharedInstanceProfile", instance_profile_arn=profile.attr_arn, role=role
    )
    lt = _launch_template(
        scope, group, role, sg, construct_id="SpotLaunchTemplate", spot=True, profile=shared
    )
    mixed = autoscaling.MixedInstancesPolicy(
        launch_template=lt,
        launch_template_overrides=[
            autoscaling.LaunchTemplateOverrides(instance_type=ec2.InstanceType(name))
            for name in sp.instance_types
        ],
        instances_distribution=autoscaling.InstancesDistribution(
            # Every instance of this group is Spot: the On-Demand share is
            # the other group's, set by the service's strategy.
            on_demand_base_capacity=0,
            on_demand_percentage_above_base_capacity=0,
            spot_allocation_strategy=autoscaling.SpotAllocationStrategy.PRICE_CAPACITY_OPTIMIZED,
        ),
    )
    asg, _ = _asg(
        scope, group, ms, names, network, lt,
        construct_id="SpotAsg", name=names.spot_asg, mixed=mixed,
    )  # fmt: skip
    cp = _capacity_provider(
        scope, group, ms, names, asg, construct_id="SpotCapacityProvider",
        name=names.spot_capacity_provider,
    )  # fmt: skip
    # The release function empties this group too when the stack goes.
    resource = CustomResource(
        scope,
        "SpotAsgRelease",
        service_token=release.function.attr_arn,
        resource_type="Custom::AsgRelease",
        properties={"AutoScalingGroupName": asg.auto_scaling_group_name},
        service_timeout=Duration.seconds(RELEASE_TIMEOUT_S * 2),
    )
    # After the On-Demand release, which waits for the function's policy and
    # logs: on delete this one runs first, while they still exist.
    resource.node.add_dependency(release.resource)
    cp.node.add_dependency(resource)
    return SpotGroup(launch_template=lt, asg=asg, capacity_provider=cp, release=resource)


def _instance_security_group(scope: Construct, names: Names, network: Network) -> ec2.SecurityGroup:
    """The instances' group: no inbound (tasks have their own ENIs), all outbound."""
    return ec2.SecurityGroup(
        scope,
        "InstanceSecurityGroup",
        vpc=network.vpc,
        description=f"ecs-gpu {names.service_name}: GPU instances (no inbound; tasks use awsvpc)",
        # The ECS agent, SSM, dnf and image pulls all need outbound HTTPS.
        allow_all_outbound=True,
    )


def _launch_template(
    scope: Construct,
    spec: Spec,
    role: iam.IRole,
    sg: ec2.SecurityGroup,
    *,
    construct_id: str = "LaunchTemplate",
    spot: bool = False,
    profile: iam.IInstanceProfile | None = None,
) -> ec2.LaunchTemplate:
    """The GPU AMI (a parameter), the host's cloud-config, IMDSv2 and the gp3 root volume.

    ``spot``: the Spot group's, with the drain flag, its instance types from
    the group's overrides and ``profile``, the On-Demand template's.
    """
    cap = spec.capacity
    lt = ec2.LaunchTemplate(
        scope,
        construct_id,
        # An explicit AMI id, so a deploy replaces GPU instances only when
        # asked to (ecs_gpu.contracts.ami); synth still needs no AWS.
        machine_image=ParameterImage(ami_parameter(scope, spec).value_as_string),
        instance_type=None if spot else ec2.InstanceType(cap.instance_type),
        user_data=ec2.UserData.custom(host.cloud_config(spec, spot=spot)),
        role=role if profile is None else None,
        instance_profile=profile,
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
                    # None leaves the property out: gp3's baseline.
                    iops=cap.root_volume_iops,
                    throughput=cap.root_volume_throughput_mibps,
                    delete_on_termination=True,
                ),
            )
        ],
    )
    # The Spot template carries no construct-path Name tag on its instances
    # and volumes: bytes of a template that must stay under 51,200 inline
    # (docs/host.md "Size").
    _pin_tags(lt, {} if spot else {"Name": lt.node.path})
    return lt


def _pin_tags(lt: ec2.LaunchTemplate, tags: dict[str, str]) -> None:
    """Make ``tags`` the launch template's only tags, whatever a CDK app adds around it.

    The L2 renders every tag the Tags aspect gives it (``Tags.of(app).add``
    reaches it) into both TagSpecifications, the inner one part of
    LaunchTemplateData: a tag whose value changes each deploy (a commit, a
    date) would make a new template version every deploy, and the group's
    instance refresh would replace every GPU instance. The L1 overrides are
    applied after the aspects, so they win. The app's tags still reach the
    instances through the group's Tags (PropagateAtLaunch), which are no
    template version.
    """
    cfn = lt.node.default_child
    if not isinstance(cfn, ec2.CfnLaunchTemplate):
        raise TypeError(f"unexpected launch template child {type(cfn).__name__}")
    if not tags:
        cfn.add_property_deletion_override("TagSpecifications")
        cfn.add_property_deletion_override("LaunchTemplateData.TagSpecifications")
        return
    rendered = [{"Key": k, "Value": v} for k, v in sorted(tags.items())]
    cfn.add_property_override(
        "TagSpecifications", [{"ResourceType": "launch-template", "Tags": rendered}]
    )
    cfn.add_property_override(
        "LaunchTemplateData.TagSpecifications",
        [{"ResourceType": kind, "Tags": rendered} for kind in ("instance", "volume")],
    )


def _asg(
    scope: Construct,
    spec: Spec,
    ms: ManagedScaling,
    names: Names,
    network: Network,
    lt: ec2.LaunchTemplate,
    *,
    construct_id: str = "Asg",
    name: str | None = None,
    mixed: autoscaling.MixedInstancesPolicy | None = None,
) -> tuple[autoscaling.AutoScalingGroup, autoscaling.CfnAutoScalingGroup]:
    """The group (bounds, warm-up, the instance refresh) and its L1 resource.

    ``ms``: the group's managed scaling, whose instance warm-up the group's own
    warm-up and cooldown take. ``mixed``: the Spot group's mixed instances policy
    instead of the launch template.
    """
    cap = spec.capacity
    warm = Duration.seconds(ms.instance_warmup_s)
    asg = autoscaling.AutoScalingGroup(
        scope,
        construct_id,
        auto_scaling_group_name=names.asg if name is None else name,
        vpc=network.vpc,
        vpc_subnets=network.private,
        launch_template=lt if mixed is None else None,
        mixed_instances_policy=mixed,
        min_capacity=cap.min_instances,
        max_capacity=cap.max_instances,
        # The dashboard's instance panel reads GroupInServiceInstances.
        group_metrics=[autoscaling.GroupMetrics.all()],
        default_instance_warmup=warm,
        cooldown=warm,
        # A new AMI (a new value of the AMI parameter) or any launch-template
        # change makes a new template version; the instance
        # refresh carries it to running instances instead of only to new ones.
        update_policy=autoscaling.UpdatePolicy.instance_refresh(
            strategy=autoscaling.InstanceRefreshStrategy.ROLLING,
            # Launch the replacement before terminating: never below the
            # current GPU count while a refresh runs.
            min_healthy_percentage=redeploy.REFRESH_MIN_HEALTHY_PERCENT,
            max_healthy_percentage=redeploy.REFRESH_MAX_HEALTHY_PERCENT,
            instance_warmup=warm,
            skip_matching=True,
            # Every instance is protected from scale-in (managed termination
            # protection); WAIT would stall the refresh forever. ECS managed
            # draining moves the tasks off before the old instance goes.
            scale_in_protected_instances=autoscaling.ScaleInProtectedInstances.REFRESH,
        ),
    )
    cfn_asg = asg.node.default_child
    if not isinstance(cfn_asg, autoscaling.CfnAutoScalingGroup):
        raise TypeError(f"unexpected ASG child {type(cfn_asg).__name__}")
    return asg, cfn_asg


def _target_reservation(cfn_asg: autoscaling.CfnAutoScalingGroup, reservation_id: str) -> None:
    """Point the group (not the launch template) at the On-Demand Capacity Reservation."""
    # The reservation is targeted by the group, never by the launch
    # template: EC2 fails a launch that targets a full reservation
    # (ReservationCapacityExceeded), so a template target would stop the
    # fleet at reserved_instances. "capacity-reservations-first" fills the
    # reservation, then launches On-Demand up to max_instances. The L2 has
    # no prop for it, so it goes in through the L1.
    cfn = autoscaling.CfnAutoScalingGroup
    cfn_asg.availability_zone_distribution = cfn.AvailabilityZoneDistributionProperty(
        capacity_distribution_strategy=ODCR_AZ_STRATEGY
    )
    cfn_asg.capacity_reservation_specification = cfn.CapacityReservationSpecificationProperty(
        capacity_reservation_preference=ODCR_PREFERENCE,
        capacity_reservation_target=cfn.CapacityReservationTargetProperty(
            capacity_reservation_ids=[reservation_id]
        ),
    )


def _capacity_provider(
    scope: Construct,
    spec: Spec,
    ms: ManagedScaling,
    names: Names,
    asg: autoscaling.AutoScalingGroup,
    *,
    construct_id: str = "CapacityProvider",
    name: str | None = None,
) -> ecs.AsgCapacityProvider:
    """The ECS capacity provider: managed scaling, termination protection and draining."""
    cap = spec.capacity
    return ecs.AsgCapacityProvider(
        scope,
        construct_id,
        capacity_provider_name=names.capacity_provider if name is None else name,
        auto_scaling_group=asg,
        enable_managed_scaling=True,
        target_capacity_percent=cap.target_capacity_percent,
        # Sets NewInstancesProtectedFromScaleIn on the group: ECS, not the
        # ASG, picks which GPU instance may go (only an empty one).
        enable_managed_termination_protection=True,
        enable_managed_draining=True,
        instance_warmup_period=ms.instance_warmup_s,
        minimum_scaling_step_size=MIN_SCALING_STEP,
        maximum_scaling_step_size=ms.max_scaling_step,
    )


def _warm_pool(
    scope: Construct,
    spec: Spec,
    asg: autoscaling.AutoScalingGroup,
    cfn_asg: autoscaling.CfnAutoScalingGroup,
    role: iam.IRole,
) -> WarmPool:
    """The warm pool, the launch hook the instances complete, and their permissions.

    The hook is on the group itself (LifecycleHookSpecificationList), not a
    separate resource, so it exists before the first instance launches.
    Without it EC2 Auto Scaling stops a warming instance as soon as it is
    running, mid-pull (it does not wait for user data).
    """
    wp = spec.capacity.warm_pool
    assert wp is not None
    names = Names(spec.service.name)
    cfn = autoscaling.CfnAutoScalingGroup
    cfn_asg.lifecycle_hook_specification_list = [
        cfn.LifecycleHookSpecificationProperty(
            lifecycle_hook_name=host.warm_pool_hook_name(spec),
            lifecycle_transition=LAUNCHING,
            default_result="CONTINUE",
            # The warm-pool script's own pull budget (host.hook_timeout_s):
            # when it runs out the instance goes on (CONTINUE), pulled or not.
            heartbeat_timeout=host.hook_timeout_s(spec),
        )
    ]
    pool = asg.add_warm_pool(
        min_size=wp.min_size,
        # Always set: AWS's default (max size - desired) keeps a stopped GPU
        # instance for every one the group could add (WarmPoolSpec.prepared_capacity).
        max_group_prepared_capacity=wp.prepared_capacity,
        pool_state=autoscaling.PoolState[wp.pool_state.upper()],
        # Left out unless asked for: the ECS docs say a warm pool of an ECS
        # group cannot return instances on scale-in (docs/host.md).
        reuse_on_scale_in=True if wp.reuse_on_scale_in else None,
    )
    image = ssm.StringParameter(
        scope,
        "ImageParameter",
        parameter_name=host.image_parameter_name(spec),
        string_value=spec.service.image,
        description=f"ecs-gpu {names.service_name}: image the warm pool pre-pulls",
    )
    statements = [
        iam.PolicyStatement(
            sid="CompleteLaunchHook",
            actions=["autoscaling:CompleteLifecycleAction"],
            resources=[asg_arn(names.asg)],
        ),
        iam.PolicyStatement(
            sid="ReadImageParameter",
            actions=["ssm:GetParameter"],
            resources=[image.parameter_arn],
        ),
    ]
    repo = ecr_repository(spec.service.image)
    if repo is not None:
        statements += [
            # No resource-level permission: "*" is the only valid resource.
            iam.PolicyStatement(
                sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]
            ),
            iam.PolicyStatement(
                sid="EcrPull",
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                ],
                resources=[repo[0]],
            ),
        ]
    policy = iam.Policy(
        scope,
        "WarmPoolPolicy",
        statements=statements,
        roles=[role],
        policy_name="ecs-gpu-warm-pool",
    )
    # The first warming instance completes the hook at its first boot.
    asg.node.add_dependency(policy)
    return WarmPool(pool=pool, policy=policy, image_parameter=image)


def _release(
    scope: Construct,
    spec: Spec,
    asg: autoscaling.AutoScalingGroup,
    cp: ecs.AsgCapacityProvider,
) -> Release:
    """A custom resource that unprotects and empties the group before CloudFormation deletes it.

    Only when the stack itself is deleted or a failed create rolls back: an
    update that removes or replaces the resource leaves the group in service
    (infra/cleanup.py reads the stack's status).

    Ordering: it depends on the group (created after it, deleted before it)
    and the capacity provider depends on it, so on delete ECS has let go of
    the group before the flags are cleared and cannot set them again.
    The function's code is inline (ZipFile): a standalone template has no
    assets, hence no CDK Provider framework and no AwsCustomResource.
    """
    names = Names(spec.service.name)
    log_group = logs.LogGroup(
        scope,
        "ReleaseLogs",
        retention=retention(spec.service.log_retention_days),
        removal_policy=RemovalPolicy.DESTROY,
    )
    role = iam.Role(
        scope,
        "ReleaseRole",
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"ecs-gpu {names.service_name}: unprotect the GPU group on stack delete",
    )
    policy = _release_policy(scope, spec, names, role, log_group)
    source = release_source()
    # L1: the L2 Function adds a DependsOn on the role that its GetAtt Arn
    # already implies (cfn-lint W3005).
    fn = lambda_.CfnFunction(
        scope,
        "ReleaseFunction",
        runtime=RELEASE_RUNTIME.name,
        handler="index.handler",
        code=lambda_.CfnFunction.CodeProperty(zip_file=source),
        role=role.role_arn,
        timeout=RELEASE_TIMEOUT_S,
        logging_config=lambda_.CfnFunction.LoggingConfigProperty(
            log_group=log_group.log_group_name
        ),
        description=f"ecs-gpu {names.service_name}: unprotect and empty the GPU group on delete",
    )
    fn.node.add_dependency(policy)
    resource = CustomResource(
        scope,
        "AsgRelease",
        service_token=fn.attr_arn,
        resource_type="Custom::AsgRelease",
        properties={"AutoScalingGroupName": asg.auto_scaling_group_name},
        # CloudFormation waits this long for an answer (default: an hour).
        service_timeout=Duration.seconds(RELEASE_TIMEOUT_S * 2),
    )
    # The function's permissions and logs must outlive its Delete call.
    resource.node.add_dependency(policy)
    resource.node.add_dependency(log_group)
    cp.node.add_dependency(resource)
    return Release(function=fn, role=role, policy=policy, resource=resource)


def _release_policy(
    scope: Construct, spec: Spec, names: Names, role: iam.Role, log_group: logs.LogGroup
) -> iam.Policy:
    """What the release function may do: empty this service's groups (and no other),
    read them and its own stack, and write its logs."""
    return iam.Policy(
        scope,
        "ReleasePolicy",
        roles=[role],
        policy_name="ecs-gpu-release",
        statements=[
            iam.PolicyStatement(
                sid="EmptyThisGroup",
                actions=[
                    "autoscaling:UpdateAutoScalingGroup",
                    "autoscaling:SetInstanceProtection",
                    "autoscaling:DeleteLifecycleHook",
                ],
                resources=[
                    asg_arn(names.asg),
                    # [capacity.spot]: the Spot group's release (SpotAsgRelease).
                    *([asg_arn(names.spot_asg)] if spec.capacity.spot is not None else []),
                ],
            ),
            # Describe calls have no resource-level permissions.
            iam.PolicyStatement(
                sid="DescribeGroups",
                actions=[
                    "autoscaling:DescribeAutoScalingGroups",
                    "autoscaling:DescribeLifecycleHooks",
                ],
                resources=["*"],
            ),
            # A Delete acts only while this stack itself is deleted (cleanup.RELEASE_ON).
            iam.PolicyStatement(
                sid="ReadOwnStack",
                actions=["cloudformation:DescribeStacks"],
                resources=[Aws.STACK_ID],
            ),
            iam.PolicyStatement(
                sid="WriteOwnLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[log_group.log_group_arn],
            ),
        ],
    )
