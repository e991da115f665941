"""The service's ForceNewDeployment: only with Spot (or a stack that had it), nonce = strategy."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ecs_gpu import redeploy
from ecs_gpu.naming import Names
from ecs_gpu.spec import parse_spec
from ecs_gpu.synth import synth_template
from ecs_gpu.validate import cfn_lint_findings

from .conftest import G5, SPOT, SPOT_TABLE
from .tpl import props

SERVICE = "AWS::ECS::Service"


def _force(t: dict[str, Any]) -> dict[str, Any] | None:
    found: dict[str, Any] | None = props(t, SERVICE).get(redeploy.FORCE_KEY)
    return found


def _nonce(t: dict[str, Any]) -> str:
    force = _force(t)
    assert force is not None
    return str(force["ForceNewDeploymentNonce"])


def _spot(extra: str) -> str:
    return SPOT.replace(SPOT_TABLE, SPOT_TABLE + extra, 1)


@pytest.fixture(scope="module")
def spot_t(variant_reports: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = variant_reports["spot"].template
    return found


def test_only_a_spot_stack_forces_the_new_deployment(
    spot_t: dict[str, Any], templates: dict[str, Any]
) -> None:
    names = Names("vllm-g5")
    # The strategy by the providers' physical names: 1 On-Demand task, then 30/70.
    strategy = [(names.capacity_provider, 1, 30), (names.spot_capacity_provider, 0, 70)]
    assert _force(spot_t) == {
        "EnableForceNewDeployment": True,
        "ForceNewDeploymentNonce": redeploy.nonce(strategy),
    }
    for example, t in templates.items():
        assert redeploy.FORCE_KEY not in props(t, SERVICE), example
        assert redeploy.SPOT_OUTPUT not in t["Outputs"], example
    # The output deploy reads to know that a running stack has Spot (spot_in_stack).
    assert spot_t["Outputs"][redeploy.SPOT_OUTPUT]["Value"] == {
        "Ref": "GpuServiceSpotCapacityProvider71C8D205"
    }


def test_the_nonce_is_the_same_for_an_identical_spec(spot_t: dict[str, Any]) -> None:
    again = synth_template(parse_spec(SPOT, "spot-again.toml"))
    assert _nonce(again) == _nonce(spot_t)
    # A redeploy of the same spec sends the same template: nothing to update.
    assert again == spot_t


def test_the_nonce_changes_with_on_demand_base_and_spot_percent(
    spot_t: dict[str, Any], variant_reports: dict[str, Any]
) -> None:
    od0 = variant_reports["spot-od0"].template  # on_demand_base = 0
    half = synth_template(parse_spec(_spot("spot_percent = 50\n"), "spot-50.toml"))
    assert len({_nonce(t) for t in (spot_t, od0, half)}) == 3


def test_a_type_added_to_the_spot_group_changes_placement_not_the_nonce(
    spot_t: dict[str, Any],
) -> None:
    # UpdateService applies placement without a new deployment (aws-semantics §11).
    text = SPOT.replace('["g5.xlarge", "g6.xlarge"]', '["g5.xlarge", "g6.xlarge", "g5.2xlarge"]')
    t = synth_template(parse_spec(text, "spot-three.toml"))
    assert (
        props(t, SERVICE)["PlacementConstraints"] != props(spot_t, SERVICE)["PlacementConstraints"]
    )
    assert _nonce(t) == _nonce(spot_t)


def test_removing_spot_from_a_stack_that_had_it_still_forces_it() -> None:
    names = Names("vllm-g5")
    t = synth_template(parse_spec(G5, "g5-gpu.toml"), spot_deployed=True)
    assert _force(t) == {
        "EnableForceNewDeployment": True,
        "ForceNewDeploymentNonce": redeploy.nonce([(names.capacity_provider, 0, 1)]),
    }
    # Nothing else differs from the same spec synthesized without the flag.
    plain = synth_template(parse_spec(G5, "g5-gpu.toml"))
    del props(t, SERVICE)[redeploy.FORCE_KEY]
    assert t == plain
    assert redeploy.FORCE_KEY not in props(plain, SERVICE)


def test_cfn_lint_checks_the_property_and_passes_it(spot_t: dict[str, Any]) -> None:
    # test_variants.py validates the Spot variants clean (cfn-lint included);
    # that would say nothing if cfn-lint did not read the property.
    assert cfn_lint_findings(spot_t) == []
    broken = copy.deepcopy(spot_t)
    force = props(broken, SERVICE)[redeploy.FORCE_KEY]
    del force["EnableForceNewDeployment"]  # required by the resource schema
    force["ForceNewDeploymentNonce"] = "x" * 256  # at most 255 characters
    messages = " ".join(f.message for f in cfn_lint_findings(broken))
    assert "EnableForceNewDeployment" in messages and "x" * 20 in messages
