"""``GpuService``: the whole GPU inference service as one CDK construct.

Usable in a user's own CDK app (``from ecs_gpu import GpuService``) and by
``ecs-gpu synth``, which puts it in a standalone stack; both paths build the
same resources with the same logical ids.
"""

from __future__ import annotations

from typing import Final

from aws_cdk import CfnOutput, Duration, RemovalPolicy, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_logs as logs
from constructs import Construct

from ecs_gpu.contracts.naming import CONSTRUCT_ID, Names, deployment_base
from ecs_gpu.design import Design, check_woken_task, redeploy
from ecs_gpu.errors import SpecError
from ecs_gpu.infra import deployment, nag
from ecs_gpu.infra.capacity import build_capacity
from ecs_gpu.infra.iam import build_instance_role
from ecs_gpu.infra.loadbalancer import build_load_balancer
from ecs_gpu.infra.network import build_network, retention
from ecs_gpu.infra.observability import add_observability
from ecs_gpu.infra.scaling import build_scaling
from ecs_gpu.infra.task import build_task
from ecs_gpu.spec import Spec
from ecs_gpu.spec.rules import cross_field_problems

# The construct id `ecs-gpu synth` gives GpuService in its standalone stack;
# there the outputs keep fixed logical ids.
STANDALONE_ID: Final = CONSTRUCT_ID
# Tasks spread over Availability Zones first (one AZ's capacity shortage or
# outage leaves the others serving), then pack onto the fewest instances by
# memory, so managed scaling can drain and remove emptied instances. GPUs
# cannot be a binpack field (ECS binpacks on cpu or memory only).
PLACEMENT_SPREAD_FIELD: Final = "attribute:ecs.availability-zone"
PLACEMENT_BINPACK: Final = "memory"

# CfnOutput ids; deploy/verify read the stack outputs by these keys.
OUTPUT_CLUSTER = "ClusterName"
OUTPUT_SERVICE = "ServiceName"
OUTPUT_ASG = "AutoScalingGroupName"
OUTPUT_CAPACITY_PROVIDER = "CapacityProviderName"
OUTPUT_CLIENTS_SG = "ClientsSecurityGroupId"
OUTPUT_LB_DNS = "LoadBalancerDnsName"
# [capacity.spot] only.
OUTPUT_SPOT_ASG = "SpotAutoScalingGroupName"
OUTPUT_SPOT_CAPACITY_PROVIDER = redeploy.SPOT_OUTPUT


class GpuService(Construct):
    """A GPU inference service on ECS with its instances, scaling, IAM and dashboard.

    The spec is resolved once (``Design.of``), after it is named for this
    construct's place; every builder reads that design (``self.design``).

    Example (inside a user's CDK app)::

        from ecs_gpu import GpuService
        from ecs_gpu.spec import load_spec

        stack = Stack(app, "vllm-g5")
        GpuService(stack, "GpuService", spec=load_spec("examples/g5-vllm.toml"))

    ``force_new_deployment_nonce``: set the service's ``ForceNewDeployment``
    with this nonce, which ECS needs to take a new capacity-provider strategy
    on a running service. Pass ``ecs_gpu.design.redeploy.strategy_nonce(spec)`` for
    the deploy that adds, changes or removes [capacity.spot] on a running
    stack (it replaces every task); leave it None otherwise, so a redeploy
    replaces no task. ``ecs-gpu deploy`` passes it when the running
    template's strategy differs (ecs_gpu.design.redeploy.decide).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        spec: Spec,
        force_new_deployment_nonce: str | None = None,
    ) -> None:
        # A Spec built in Python skips load_spec's cross-field rules (an image
        # is checked per field, a CDK token marker only across the spec): no
        # template is built from a spec that breaks one, on either path.
        problems = cross_field_problems(spec)
        if problems:
            raise SpecError("spec", problems)
        super().__init__(scope, construct_id)
        spec = self._for_deployment(spec)
        design = Design.of(spec)
        check_woken_task(design)
        self.spec = spec
        self.design = design
        names = Names(spec.service.name)
        self.names = names

        self.network = build_network(self, spec)
        self._cluster_and_instances(design, names)
        cp_name = self.capacity.capacity_provider.capacity_provider_name
        self.capacity_provider_association = self._capacity_provider_association(cp_name)
        self._security_groups(names)
        self.task = build_task(self, design)
        self.load_balancer = build_load_balancer(
            self, spec, self.network, self.clients_security_group
        )
        self._open_task_port(spec)
        self.service = self._ecs_service(design, names, cp_name)
        if force_new_deployment_nonce is not None:
            self._force_new_deployment(force_new_deployment_nonce)
        self.scaling = build_scaling(
            self.service,
            design,
            self.load_balancer.target_group if self.load_balancer is not None else None,
            self.load_balancer.alb if self.load_balancer is not None else None,
        )
        self.observability = add_observability(
            self, design=design, fast_path_alarm=self.scaling.fast_path_alarm
        )
        self._outputs(cp_name)
        nag.acknowledge(self)

    def _for_deployment(self, spec: Spec) -> Spec:
        """``spec`` with its service named for this construct's place (sets ``standalone``)."""
        stack = Stack.of(self)
        path_in_stack = self.node.path.removeprefix(stack.node.path + "/")
        stack_name = None if Token.is_unresolved(stack.stack_name) else stack.stack_name
        self.standalone = path_in_stack == STANDALONE_ID
        # Every builder names resources from spec.service.name (naming.Names);
        # giving it this construct's base keeps two services in one stack, or
        # one spec in two stacks, from colliding on a physical name.
        base = deployment_base(
            spec.service.name, stack_name, path_in_stack, standalone_id=STANDALONE_ID
        )
        return spec.model_copy(update={"service": spec.service.model_copy(update={"name": base})})

    def _cluster_and_instances(self, design: Design, names: Names) -> None:
        """The cluster, the hosts' log group and role, and the instances (ASG, provider)."""
        spec = design.spec
        # Container Insights feeds the dashboard's task-count panel.
        self.cluster = ecs.Cluster(
            self,
            "Cluster",
            cluster_name=names.cluster,
            vpc=self.network.vpc,
            container_insights_v2=ecs.ContainerInsights.ENABLED,
        )
        self.host_log_group = logs.LogGroup(
            self,
            "HostLogs",
            log_group_name=names.host_log_group,
            retention=retention(spec.service.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.instance_role = build_instance_role(
            self,
            names,
            self.cluster.cluster_arn,
            self.host_log_group,
            spot_draining=spec.capacity.spot is not None,
        )
        self.capacity = build_capacity(self, design, self.network, self.instance_role.role)
        # Instances must find their permissions and their cluster at first boot.
        groups = [self.capacity.asg]
        if self.capacity.spot is not None:
            groups.append(self.capacity.spot.asg)
        for asg in groups:
            asg.node.add_dependency(self.instance_role.policy)
            asg.node.add_dependency(self.cluster)

    def _strategy(self, cp_name: str) -> list[redeploy.StrategyItem]:
        """(provider, base, weight) of the service's strategy, the cluster's default too
        (redeploy.strategy_items, by the providers' CDK names)."""
        spot_group = self.capacity.spot
        spot_cp = "" if spot_group is None else spot_group.capacity_provider.capacity_provider_name
        return redeploy.strategy_items(self.design.strategy, cp_name, spot_cp)

    def _capacity_provider_association(
        self, cp_name: str
    ) -> ecs.CfnClusterCapacityProviderAssociations:
        """The capacity providers on the cluster, the service's strategy as its default."""
        strategy = self._strategy(cp_name)
        item = ecs.CfnClusterCapacityProviderAssociations.CapacityProviderStrategyProperty
        return ecs.CfnClusterCapacityProviderAssociations(
            self,
            "ClusterCapacityProviders",
            cluster=self.cluster.cluster_name,
            capacity_providers=[name for name, _, _ in strategy],
            default_capacity_provider_strategy=[
                item(capacity_provider=name, weight=weight, base=base)
                for name, base, weight in strategy
            ],
        )

    def _security_groups(self, names: Names) -> None:
        """The clients' group and the tasks' group."""
        # Whoever should reach the service (directly, or through an internal
        # load balancer in a VPC we do not look up) joins this group.
        self.clients_security_group = ec2.SecurityGroup(
            self,
            "ClientsSecurityGroup",
            vpc=self.network.vpc,
            description=f"ecs-gpu {names.service_name}: attach to clients of the service",
            allow_all_outbound=True,
        )
        self.task_security_group = ec2.SecurityGroup(
            self,
            "TaskSecurityGroup",
            vpc=self.network.vpc,
            description=f"ecs-gpu {names.service_name}: GPU tasks (awsvpc)",
            # Model weights and images come from outside the VPC.
            allow_all_outbound=True,
        )

    def _open_task_port(self, spec: Spec) -> None:
        """The container port, open to the load balancer or else to the clients' group."""
        port = ec2.Port.tcp(spec.service.container_port)
        if self.load_balancer is not None:
            self.task_security_group.add_ingress_rule(
                self.load_balancer.security_group, port, "from the load balancer"
            )
            self.load_balancer.security_group.add_egress_rule(
                self.task_security_group, port, "to the tasks"
            )
        else:
            self.task_security_group.add_ingress_rule(
                self.clients_security_group, port, "from the clients security group"
            )

    def _ecs_service(self, design: Design, names: Names, cp_name: str) -> ecs.Ec2Service:
        """The ECS service: placement, deployment, grace period, no DesiredCount."""
        spec = design.spec
        # Ec2Service validates that its cluster "has EC2 capacity", which the
        # L2 learns only from add_asg_capacity_provider; that call would also
        # add CDK's instance statements (logs on "*") and an AL2 user-data
        # line to our cloud-config. The association above does the real work,
        # so the service sees the same cluster through a reference that says so.
        cluster_ref = ecs.Cluster.from_cluster_attributes(
            self,
            "ClusterRef",
            cluster_name=self.cluster.cluster_name,
            cluster_arn=self.cluster.cluster_arn,
            vpc=self.network.vpc,
            has_ec2_capacity=True,
            security_groups=[],
        )
        # Container health checks run with or without a load balancer; the
        # grace period makes ECS ignore both while the model loads (startup.py).
        grace = design.startup.health.grace_period_s
        service = ecs.Ec2Service(
            self,
            "Service",
            service_name=names.service,
            cluster=cluster_ref,
            task_definition=self.task.definition,
            # No launch type: the strategy is what makes cluster auto scaling
            # count these tasks (aws-semantics.md §2).
            capacity_provider_strategies=[
                ecs.CapacityProviderStrategy(capacity_provider=name, weight=weight, base=base)
                for name, base, weight in self._strategy(cp_name)
            ],
            placement_constraints=[ecs.PlacementConstraint.member_of(_instance_types(spec))],
            placement_strategies=[
                ecs.PlacementStrategy.spread_across(PLACEMENT_SPREAD_FIELD),
                ecs.PlacementStrategy.packed_by(ecs.BinPackResource.MEMORY),
            ],
            # ECS enables AZ rebalancing on a new service whose first strategy is
            # an AZ spread: it would stop running GPU tasks (a model reload each)
            # to even out AZs, and start them away from a one-AZ reservation
            # (aws-semantics.md §3).
            availability_zone_rebalancing=ecs.AvailabilityZoneRebalancing.DISABLED,
            circuit_breaker=ecs.DeploymentCircuitBreaker(enable=True, rollback=True),
            # Start-first (100 %) when the fleet has room at its maximum; else
            # one task at a time at max_tasks, so a deploy at peak cannot stall.
            min_healthy_percent=deployment.min_healthy_percent(spec),
            max_healthy_percent=deployment.MAX_PERCENT,
            vpc_subnets=self.network.private,
            security_groups=[self.task_security_group],
            health_check_grace_period=Duration.seconds(grace),
            enable_ecs_managed_tags=True,
            propagate_tags=ecs.PropagatedTagSource.SERVICE,
        )
        cfn_service = service.node.default_child
        assert isinstance(cfn_service, ecs.CfnService)
        # No DesiredCount: CloudFormation then starts a new service at 1 and
        # never sends a count on update, so a redeploy cannot reset what
        # autoscaling set (the reference's `ignore_changes = [desired_count]`).
        cfn_service.add_property_deletion_override("DesiredCount")
        # The capacity provider must be on the cluster before a service names it.
        service.node.add_dependency(self.capacity_provider_association)

        if self.load_balancer is not None:
            # Registers the essential container `app` on its port, as targets of type ip.
            service.attach_to_application_target_group(self.load_balancer.target_group)
        return service

    def _force_new_deployment(self, nonce: str) -> None:
        """ForceNewDeployment with ``nonce``: ECS refuses a running service a new strategy
        without it (aws-semantics §11)."""
        cfn_service = self.service.node.default_child
        assert isinstance(cfn_service, ecs.CfnService)
        cfn_service.force_new_deployment = ecs.CfnService.ForceNewDeploymentProperty(
            enable_force_new_deployment=True, force_new_deployment_nonce=nonce
        )

    def _outputs(self, cp_name: str) -> None:
        """The stack outputs deploy and verify read."""
        outputs = {
            OUTPUT_CLUSTER: self.cluster.cluster_name,
            OUTPUT_SERVICE: self.service.service_name,
            OUTPUT_ASG: self.capacity.asg.auto_scaling_group_name,
            OUTPUT_CAPACITY_PROVIDER: cp_name,
            OUTPUT_CLIENTS_SG: self.clients_security_group.security_group_id,
        }
        sg = self.capacity.spot
        if sg is not None:
            outputs[OUTPUT_SPOT_ASG] = sg.asg.auto_scaling_group_name
            outputs[OUTPUT_SPOT_CAPACITY_PROVIDER] = sg.capacity_provider.capacity_provider_name
        if self.load_balancer is not None:
            outputs[OUTPUT_LB_DNS] = self.load_balancer.alb.load_balancer_dns_name
        for key, value in outputs.items():
            # deploy and verify read the standalone stack's outputs by these
            # keys; elsewhere CDK derives unique ids from the construct path.
            CfnOutput(self, key, value=value, key=key if self.standalone else None)


def _instance_types(spec: Spec) -> str:
    """The placement constraint's expression: the On-Demand type, or with Spot every listed type.

    A task of either provider must start on that provider's instances, and
    a Spot replacement on On-Demand room (cluster query language, ``in``).
    """
    sp = spec.capacity.spot
    if sp is None:
        return f"attribute:ecs.instance-type == {spec.capacity.instance_type}"
    types = list(dict.fromkeys([spec.capacity.instance_type, *sp.instance_types]))
    return f"attribute:ecs.instance-type in [{', '.join(types)}]"
