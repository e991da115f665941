"""redeploy: the nonce, and which updates keep the service's forced deployment."""

from __future__ import annotations

import copy
from typing import Any

from ecs_gpu import redeploy

OD = {"Ref": "GpuServiceCapacityProvider45A9D374"}
SPOT = {"Ref": "GpuServiceSpotCapacityProvider71C8D205"}
PLAIN = [{"Base": 0, "CapacityProvider": OD, "Weight": 1}]
WITH_SPOT = [
    {"Base": 1, "CapacityProvider": OD, "Weight": 30},
    {"Base": 0, "CapacityProvider": SPOT, "Weight": 70},
]
FORCE = {"EnableForceNewDeployment": True, "ForceNewDeploymentNonce": "strategy-0123456789abcdef"}


def _template(strategy: list[dict[str, Any]], *, force: bool = False) -> dict[str, Any]:
    props: dict[str, Any] = {"ServiceName": "vllm-g5", "CapacityProviderStrategy": strategy}
    if force:
        props[redeploy.FORCE_KEY] = dict(FORCE)
    return {
        "Resources": {
            "Cluster": {"Type": "AWS::ECS::Cluster", "Properties": {}},
            "GpuServiceService": {"Type": "AWS::ECS::Service", "Properties": props},
        }
    }


def test_the_nonce_is_the_same_for_the_same_strategy_and_changes_with_it() -> None:
    base = [("cp-vllm-g5", 1, 30), ("cp-vllm-g5-spot", 0, 70)]
    assert redeploy.nonce(base) == redeploy.nonce(list(base))
    others = [
        [("cp-vllm-g5", 2, 30), ("cp-vllm-g5-spot", 0, 70)],  # on_demand_base
        [("cp-vllm-g5", 1, 50), ("cp-vllm-g5-spot", 0, 50)],  # spot_percent
        [("cp-vllm-g5", 0, 1)],  # [capacity.spot] removed
    ]
    nonces = {redeploy.nonce(s) for s in [base, *others]}
    assert len(nonces) == 4
    # CloudFormation's ForceNewDeploymentNonce: 1 to 255 characters.
    assert all(n.startswith(redeploy.NONCE_PREFIX) and 1 <= len(n) <= 255 for n in nonces)


def test_an_unchanged_strategy_drops_the_forced_deployment() -> None:
    new = _template(WITH_SPOT, force=True)
    before = copy.deepcopy(new)
    out = redeploy.settled(new, _template(WITH_SPOT))
    assert redeploy.forces(new) and not redeploy.forces(out)
    assert new == before  # the input is untouched
    assert out["Resources"]["GpuServiceService"]["Properties"] == {
        "ServiceName": "vllm-g5",
        "CapacityProviderStrategy": WITH_SPOT,
    }
    assert redeploy.note(out) is None


def test_a_changed_added_or_removed_strategy_keeps_it() -> None:
    changed = copy.deepcopy(WITH_SPOT)
    changed[0]["Base"] = 2
    cases = [
        (WITH_SPOT, PLAIN),  # [capacity.spot] added to a running stack
        (changed, WITH_SPOT),  # on_demand_base changed
        (PLAIN, WITH_SPOT),  # removed (the construct told spot_deployed)
    ]
    for new, deployed in cases:
        t = _template(new, force=True)
        assert redeploy.strategy_changed(t, _template(deployed))
        out = redeploy.settled(t, _template(deployed))
        assert out is t and redeploy.forces(out)
        note = redeploy.note(out)
        assert note is not None and "replaces every running task" in note


def test_a_new_stack_needs_no_forced_deployment() -> None:
    t = _template(WITH_SPOT, force=True)
    assert not redeploy.forces(redeploy.settled(t, None))
    # Nor a running stack without the service (CloudFormation creates it).
    bare = {"Resources": {"Cluster": {"Type": "AWS::ECS::Cluster", "Properties": {}}}}
    assert not redeploy.forces(redeploy.settled(t, bare))


def test_a_template_that_does_not_force_is_sent_as_it_is() -> None:
    t = _template(PLAIN)
    assert redeploy.settled(t, _template(WITH_SPOT)) is t
    assert redeploy.note(t) is None


def test_two_services_or_none_are_not_read_as_ours() -> None:
    t = _template(WITH_SPOT, force=True)
    two = copy.deepcopy(t)
    two["Resources"]["Other"] = copy.deepcopy(t["Resources"]["GpuServiceService"])
    assert redeploy.service_properties(two) is None and not redeploy.forces(two)
    assert redeploy.service_properties({"Resources": []}) is None
    assert redeploy.service_properties(None) is None
