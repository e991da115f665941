"""When a stack update forces the ECS service's new deployment, and when it must not.

ECS refuses a running service a changed capacity-provider strategy unless
the update forces a new deployment (docs/aws-semantics.md §11 "Changing a
running service's strategy"), so adding, changing or removing
[capacity.spot] on a running stack needs the service's
``ForceNewDeployment``. Its nonce is a hash of the strategy, so it changes
exactly when the strategy does. CloudFormation does not document whether it
also forces a deployment when the service is updated for another reason (a
tag, the grace period) while the property stays in the template (§11
[gap]), so deploy keeps the property only in the update whose strategy
differs from the deployed one (:func:`settled`): a redeploy never replaces
tasks for it.

Pure: the construct (:mod:`ecs_gpu.infra.service`) renders the property,
deploy (:mod:`ecs_gpu.aws.deploy`) settles it against the deployed template.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

SERVICE_TYPE: Final = "AWS::ECS::Service"
FORCE_KEY: Final = "ForceNewDeployment"
STRATEGY_KEY: Final = "CapacityProviderStrategy"
# The stack output naming the Spot capacity provider (the construct's
# OUTPUT_SPOT_CAPACITY_PROVIDER): deploy reads the running stack's Spot from it.
SPOT_OUTPUT: Final = "SpotCapacityProviderName"
NONCE_PREFIX: Final = "strategy-"

# (capacity provider name, base, weight): one item of the service's strategy.
StrategyItem = tuple[str, int, int]


def nonce(strategy: Sequence[StrategyItem]) -> str:
    """``ForceNewDeploymentNonce`` for ``strategy``: the same for the same strategy, always.

    Placement is left out: UpdateService applies new placement constraints
    and strategies without a new deployment, so a change to them alone (a
    type added to ``instance_types``) must not force one.
    """
    canonical = json.dumps([[name, base, weight] for name, base, weight in strategy])
    return NONCE_PREFIX + hashlib.sha256(canonical.encode()).hexdigest()[:16]


def service_properties(template: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The properties of the template's one ECS service; None without exactly one."""
    if template is None:
        return None
    resources = template.get("Resources")
    if not isinstance(resources, Mapping):
        return None
    found = [
        r for r in resources.values() if isinstance(r, Mapping) and r.get("Type") == SERVICE_TYPE
    ]
    if len(found) != 1:
        return None
    props = found[0].get("Properties", {})
    return props if isinstance(props, Mapping) else None


def forces(template: Mapping[str, Any]) -> bool:
    """Whether ``template`` forces the service's new deployment."""
    props = service_properties(template)
    return props is not None and FORCE_KEY in props


def strategy_changed(template: Mapping[str, Any], deployed: Mapping[str, Any] | None) -> bool:
    """Whether the service's strategy in ``template`` differs from the one in ``deployed``.

    False when ``deployed`` (the stack's current template) has no service:
    a service CloudFormation creates needs no forced deployment.
    """
    new, old = service_properties(template), service_properties(deployed)
    if new is None or old is None:
        return False
    return new.get(STRATEGY_KEY) != old.get(STRATEGY_KEY)


def settled(template: dict[str, Any], deployed: Mapping[str, Any] | None) -> dict[str, Any]:
    """``template`` as deploy sends it onto a stack whose template is ``deployed``.

    ``deployed`` None is a new stack. The service's ``ForceNewDeployment``
    stays only when its strategy differs from the deployed one; otherwise
    the template comes back without it (a copy; ``template`` is untouched).
    """
    if not forces(template) or strategy_changed(template, deployed):
        return template
    out = copy.deepcopy(template)
    for r in out["Resources"].values():
        if r.get("Type") == SERVICE_TYPE:
            del r["Properties"][FORCE_KEY]
    return out


def note(template: Mapping[str, Any]) -> str | None:
    """What diff and deploy tell the user when ``template`` forces a new deployment."""
    if not forces(template):
        return None
    return (
        "the service's capacity-provider strategy changes ([capacity.spot] added, changed "
        "or removed): ECS takes a new strategy only with a new deployment, so this update "
        "replaces every running task, as a new image would (docs/spec.md [capacity.spot])."
    )
