"""The service's ForceNewDeployment: only when the construct is given a nonce."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import redeploy
from ecs_gpu.spec import parse_spec
from ecs_gpu.template.synth import synth_template
from ecs_gpu.template.validate import cfn_lint_findings

from .conftest import G5, SPOT, SPOT_OD0, SPOT_TABLE
from .tpl import props

SERVICE = "AWS::ECS::Service"


def _force(t: dict[str, Any]) -> dict[str, Any] | None:
    found: dict[str, Any] | None = props(t, SERVICE).get(redeploy.FORCE_KEY)
    return found


def _nonce(t: dict[str, Any]) -> str:
    force = _force(t)
    assert force is not None
    return str(force["ForceNewDeploymentNonce"])


@pytest.fixture(scope="module")
def spot_t(variant_reports: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = variant_reports["spot"].template
    return found


def test_no_template_forces_a_deployment_unless_asked(
    spot_t: dict[str, Any], templates: dict[str, Any], variant_reports: dict[str, Any]
) -> None:
    # Offline synth (and a CDK app that passes nothing) never renders it, Spot
    # or not: a redeploy of a running Spot stack replaces no task unasked.
    assert _force(spot_t) is None
    for name, report in variant_reports.items():
        assert redeploy.FORCE_KEY not in props(report.template, SERVICE), name
    for example, t in templates.items():
        assert redeploy.FORCE_KEY not in props(t, SERVICE), example
        assert redeploy.SPOT_OUTPUT not in t["Outputs"], example
    assert spot_t["Outputs"][redeploy.SPOT_OUTPUT]["Value"] == {
        "Ref": "GpuServiceSpotCapacityProvider71C8D205"
    }


def test_the_option_renders_the_forced_deployment_and_nothing_else(
    spot_t: dict[str, Any],
) -> None:
    spec = parse_spec(SPOT, "spot-forced.toml")
    nonce = redeploy.strategy_nonce(spec)
    t = synth_template(spec, force_new_deployment_nonce=nonce)
    assert _force(t) == {"EnableForceNewDeployment": True, "ForceNewDeploymentNonce": nonce}
    del props(t, SERVICE)[redeploy.FORCE_KEY]
    assert t == spot_t
    # Removing [capacity.spot]: the plain template with the plain strategy's nonce.
    plain = parse_spec(G5, "g5-gpu.toml")
    removed = synth_template(plain, force_new_deployment_nonce=redeploy.strategy_nonce(plain))
    assert _nonce(removed) == redeploy.strategy_nonce(plain) != nonce


def test_the_template_strategy_is_the_one_deploy_compares(spot_t: dict[str, Any]) -> None:
    # redeploy.strategy (what deploy computes from the spec) reads back from the
    # synthesized template as redeploy.deployed_strategy (what GetTemplate gives).
    spec = parse_spec(SPOT, "spot.toml")
    assert redeploy.deployed_strategy(spot_t) == redeploy.strategy(spec, Names("vllm-g5"))
    od0 = parse_spec(SPOT_OD0, "spot-od0.toml")
    assert redeploy.deployed_strategy(synth_template(od0, stack_name="other")) == (
        redeploy.strategy(od0, Names("other"))
    )
    # spot_percent = 0, the step before removing the table: the Spot provider
    # stays at weight 0, which places no task (CapacityProviderStrategyItem).
    drained = parse_spec(SPOT.replace(SPOT_TABLE, SPOT_TABLE + "spot_percent = 0\n", 1), "d.toml")
    assert redeploy.deployed_strategy(synth_template(drained)) == [
        ("cp-vllm-g5-gpu", 1, 100),
        ("cp-vllm-g5-spot", 0, 0),
    ]


def test_cfn_lint_checks_the_property_and_passes_it() -> None:
    spec = parse_spec(SPOT, "spot-forced.toml")
    forced = synth_template(spec, force_new_deployment_nonce=redeploy.strategy_nonce(spec))
    assert cfn_lint_findings(forced) == []
    # That would say nothing if cfn-lint did not read the property.
    broken = copy.deepcopy(forced)
    force = props(broken, SERVICE)[redeploy.FORCE_KEY]
    del force["EnableForceNewDeployment"]  # required by the resource schema
    force["ForceNewDeploymentNonce"] = "x" * 256  # at most 255 characters
    messages = " ".join(f.message for f in cfn_lint_findings(broken))
    assert "EnableForceNewDeployment" in messages and "x" * 20 in messages
