"""When a stack update forces the ECS service's new deployment, and when deploy refuses.

ECS refuses a running service a changed capacity-provider strategy unless
the update forces a new deployment (docs/aws-semantics.md §11 "Changing a
running service's strategy"), so adding, changing or removing
[capacity.spot] on a running stack needs the service's
``ForceNewDeployment``. A template renders it only when asked
(``GpuService(force_new_deployment_nonce=...)``): a redeploy never replaces
tasks the user did not ask to replace. ``ecs-gpu deploy`` and ``diff`` ask
(:func:`decide`) only when the stack exists and the strategy the spec makes
differs from the one its running template gives the service (GetTemplate).
Pure: :mod:`ecs_gpu.aws.deploy` reads the running template, the construct
(:mod:`ecs_gpu.infra.service`) renders the property.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import spot
from ecs_gpu.errors import BadInputError
from ecs_gpu.spec import Spec

if TYPE_CHECKING:
    from ecs_gpu.design.resolve import Design

SERVICE_TYPE: Final = "AWS::ECS::Service"
CAPACITY_PROVIDER_TYPE: Final = "AWS::ECS::CapacityProvider"
FORCE_KEY: Final = "ForceNewDeployment"
STRATEGY_KEY: Final = "CapacityProviderStrategy"
# The stack output naming the Spot capacity provider (the construct's
# OUTPUT_SPOT_CAPACITY_PROVIDER).
SPOT_OUTPUT: Final = "SpotCapacityProviderName"
NONCE_PREFIX: Final = "strategy-"
# The roles the nonce names the providers by: the same for any stack name.
ON_DEMAND: Final = "on-demand"
SPOT: Final = "spot"

# (capacity provider, base, weight): one item of the service's strategy.
StrategyItem = tuple[str, int, int]


def nonce(strategy: Sequence[StrategyItem]) -> str:
    """``ForceNewDeploymentNonce`` for ``strategy``: the same for the same strategy, always.

    Placement is left out: UpdateService applies new placement constraints
    and strategies without a new deployment, so a change to them alone (a
    type added to ``instance_types``) must not force one.
    """
    canonical = json.dumps([[name, base, weight] for name, base, weight in strategy])
    return NONCE_PREFIX + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def strategy_items(
    st: spot.Strategy | None, on_demand: str, spot_provider: str
) -> list[StrategyItem]:
    """The service's strategy ``st`` (``Design.strategy``), its providers called
    ``on_demand`` and ``spot_provider`` (unused without [capacity.spot]): one provider,
    or the On-Demand base and both weights (only one provider may have a base). The
    template (by CDK tokens), :func:`strategy` and :func:`decide` (by physical names)
    and :func:`strategy_nonce` (by role) all read it."""
    if st is None:
        return [(on_demand, 0, 1)]
    return [
        (on_demand, st.on_demand_base, st.on_demand_weight),
        (spot_provider, 0, st.spot_weight),
    ]


def strategy(spec: Spec, names: Names) -> list[StrategyItem]:
    """The service's strategy for ``spec`` by the providers' physical names ``names``."""
    return strategy_items(
        spot.strategy(spec), names.capacity_provider, names.spot_capacity_provider
    )


def strategy_nonce(spec: Spec) -> str:
    """The nonce to pass ``GpuService(force_new_deployment_nonce=...)`` for ``spec``'s strategy.

    The providers by role, not name, so the nonce does not depend on the
    stack or the construct's place; it changes exactly when the strategy does.
    """
    return _role_nonce(spot.strategy(spec))


def _role_nonce(st: spot.Strategy | None) -> str:
    return nonce(strategy_items(st, ON_DEMAND, SPOT))


def service_properties(template: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The properties of the template's one ECS service; None without exactly one."""
    resources = template.get("Resources") if template is not None else None
    if not isinstance(resources, Mapping):
        return None
    found = [
        r for r in resources.values() if isinstance(r, Mapping) and r.get("Type") == SERVICE_TYPE
    ]
    if len(found) != 1:
        return None
    props = found[0].get("Properties", {})
    return props if isinstance(props, Mapping) else None


def service_logical_id(template: Mapping[str, Any]) -> str | None:
    """The logical id of the template's one ECS service (None without exactly one)."""
    resources = template.get("Resources")
    if not isinstance(resources, Mapping):
        return None
    ids = [
        k for k, r in resources.items() if isinstance(r, Mapping) and r.get("Type") == SERVICE_TYPE
    ]
    return ids[0] if len(ids) == 1 else None


def forces(template: Mapping[str, Any]) -> bool:
    """Whether ``template`` forces the service's new deployment."""
    props = service_properties(template)
    return props is not None and FORCE_KEY in props


def forced_service(template: Mapping[str, Any]) -> str | None:
    """The logical id of the service whose new deployment ``template`` forces, if it does."""
    return service_logical_id(template) if forces(template) else None


def deployed_strategy(template: Mapping[str, Any]) -> list[StrategyItem] | str:
    """The running service's strategy by physical names, or what could not be read.

    A provider is a name, or a ``Ref`` to a capacity provider of the same
    template with its ``Name`` (as ecs-gpu's templates have it).
    """
    props = service_properties(template)
    if props is None:
        return "its template has no single AWS::ECS::Service"
    items = props.get(STRATEGY_KEY)
    if not isinstance(items, list) or not items:
        return "its ECS service has no CapacityProviderStrategy"
    resources = template.get("Resources", {})
    out: list[StrategyItem] = []
    for item in items:
        if not isinstance(item, Mapping):
            return f"its service's CapacityProviderStrategy item {item!r} is not one ecs-gpu wrote"
        cp = item.get("CapacityProvider")
        if isinstance(cp, Mapping) and set(cp) == {"Ref"} and isinstance(cp["Ref"], str):
            target = resources.get(cp["Ref"])
            if isinstance(target, Mapping) and target.get("Type") == CAPACITY_PROVIDER_TYPE:
                target_props = target.get("Properties")
                cp = target_props.get("Name") if isinstance(target_props, Mapping) else None
        base, weight = item.get("Base", 0), item.get("Weight", 0)
        if not (isinstance(cp, str) and isinstance(base, int) and isinstance(weight, int)):
            return f"its service's CapacityProviderStrategy item {item!r} is not one ecs-gpu wrote"
        out.append((cp, base, weight))
    return out


# The GPU group's instance refresh: the template's update policy
# (infra/capacity.py) and the command doctor gives for instances on an old
# launch template. Launch before
# terminating, never below today's GPU count, and replace the scale-in
# protected instances (managed termination protection protects every one
# running a task; the default Wait holds an hour, then fails the refresh).
REFRESH_MIN_HEALTHY_PERCENT: Final = 100
REFRESH_MAX_HEALTHY_PERCENT: Final = 110
# How the refresh's healthy range reads in a sentence (diff, doctor).
REFRESH_HEALTHY_RANGE: Final = f"{REFRESH_MIN_HEALTHY_PERCENT}-{REFRESH_MAX_HEALTHY_PERCENT} %"
REFRESH_PREFERENCES: Final = {
    "SkipMatching": True,
    "MinHealthyPercentage": REFRESH_MIN_HEALTHY_PERCENT,
    "MaxHealthyPercentage": REFRESH_MAX_HEALTHY_PERCENT,
    "ScaleInProtectedInstances": "Refresh",
}


def refresh_surge(instances: int) -> int:
    """Instances a refresh of a group of ``instances`` may launch beside them.

    MaxHealthyPercentage is a percentage of the desired capacity that may be
    in service or pending while instances are replaced, so a group at
    max_instances runs up to that share more while a launch-template change
    rolls (preflight's On-Demand and Spot quota checks count them). Rounded
    up: AWS does not say how it rounds (docs/aws-semantics.md "Quota during an
    instance refresh"), and launch-before-terminate needs at least one.
    """
    if instances <= 0:
        return 0
    return math.ceil(instances * (REFRESH_MAX_HEALTHY_PERCENT - 100) / 100)


@dataclass(frozen=True)
class Decision:
    """Whether this update forces the service's new deployment, and what to tell the user."""

    # Pass to GpuService(force_new_deployment_nonce=...); None: no forced deployment.
    nonce: str | None = None
    note: str | None = None
    # The running template could not be compared (nothing is forced).
    warning: str | None = None

    @property
    def forces(self) -> bool:
        return self.nonce is not None


REPLACES_EVERY_TASK: Final = (
    "the service's capacity-provider strategy changes ([capacity.spot] added, changed or "
    "removed): ECS takes a new strategy only with a new deployment, so this update replaces "
    "every running task, as a new image would (docs/spec.md [capacity.spot])."
)


def decide(
    design: Design,
    spec_path: str,
    stack: str,
    deployed: Mapping[str, Any] | str | None,
) -> Decision:
    """What deploying ``design`` as ``stack`` onto its running template ``deployed`` forces.

    ``deployed`` None: no stack yet (CloudFormation creates the service);
    a string: what the caller could not read (a YAML body). Raises
    :class:`BadInputError` for a removal of [capacity.spot] while the running
    strategy still gives Spot a weight: CloudFormation updates the cluster's
    capacity providers before the service that depends on them, and ECS keeps
    a provider that tasks use (PutClusterCapacityProviders, aws-semantics §11);
    ``spot_percent = 0`` first moves the tasks to On-Demand.
    """
    if deployed is None:
        return Decision()
    old = deployed_strategy(deployed) if not isinstance(deployed, str) else deployed
    if isinstance(old, str):
        return Decision(
            warning=(
                f"stack {stack}: could not read the running capacity-provider strategy ({old}), "
                "so this update forces no new deployment; if it changes [capacity.spot] on a "
                "running service, ECS refuses the update and it rolls back."
            )
        )
    spec = design.spec
    names = Names.for_deployment(spec, stack)
    new = strategy_items(design.strategy, names.capacity_provider, names.spot_capacity_provider)
    if new == old:
        return Decision()
    spot_weight = sum(w for cp, _, w in old if cp != names.capacity_provider)
    if spec.capacity.spot is None and spot_weight > 0:
        raise BadInputError(removal_refused(spec_path, stack, names))
    note = REPLACES_EVERY_TASK
    if spec.capacity.spot is None:
        note += (
            f" The Spot group {names.spot_asg} is deleted: it must have no instances left "
            "(its scale-in-protected instances would hold the delete)."
        )
    return Decision(nonce=_role_nonce(design.strategy), note=note)


def removal_refused(spec_path: str, stack: str, names: Names) -> str:
    """Why deploy will not remove [capacity.spot] while Spot has a weight, and the way there."""
    return (
        f"{spec_path}: [capacity.spot] is removed, but stack {stack} still places tasks on Spot "
        f"(its strategy gives {names.spot_capacity_provider} a weight). CloudFormation would "
        "first take the Spot provider off the cluster, which ECS refuses while tasks use it, and "
        "the update would roll back. Fix: keep the table with `spot_percent = 0` and deploy "
        "(that forced deployment moves every task to On-Demand); wait until the Spot group "
        f"has no instances (`aws autoscaling describe-auto-scaling-groups "
        f"--auto-scaling-group-names {names.spot_asg}`, or the ECS console's Tasks tab: no "
        f"task on {names.spot_capacity_provider}); then remove the table and deploy again."
    )
