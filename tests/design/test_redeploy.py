"""redeploy: the nonce, and when an update forces the service's new deployment or is refused."""

from __future__ import annotations

import copy
from typing import Any

import botocore.session
import pytest

from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import Design, redeploy
from ecs_gpu.errors import EXIT_BAD_INPUT, BadInputError
from ecs_gpu.spec import Spec, parse_spec
from example_specs import G5_PATH

STACK = "vllm-g5"
NAMES = Names(STACK)
SPEC_PATH = "specs/g5.toml"
OD_LID, SPOT_LID = "GpuServiceCapacityProvider45A9D374", "GpuServiceSpotCapacityProvider71C8D205"
TABLE = '\n[capacity.spot]\ninstance_types = ["g5.xlarge", "g6.xlarge"]\n'


def _spec(spot: str | None = None) -> Spec:
    """The g5 example; with ``spot`` the [capacity.spot] table plus those lines."""
    text = G5_PATH.read_text(encoding="utf-8")
    if spot is not None:
        text = text.replace("\n[scaling]\n", TABLE + spot + "\n[scaling]\n", 1)
    return parse_spec(text, SPEC_PATH)


def _item(lid: str, base: int, weight: int) -> dict[str, Any]:
    return {"Base": base, "CapacityProvider": {"Ref": lid}, "Weight": weight}


def _running(*items: dict[str, Any]) -> dict[str, Any]:
    """A running template as ecs-gpu writes it: the service's strategy Refs the providers."""
    cps = {
        OD_LID: {
            "Type": redeploy.CAPACITY_PROVIDER_TYPE,
            "Properties": {"Name": NAMES.capacity_provider},
        },
        SPOT_LID: {
            "Type": redeploy.CAPACITY_PROVIDER_TYPE,
            "Properties": {"Name": NAMES.spot_capacity_provider},
        },
    }
    return {
        "Resources": {
            **cps,
            "GpuService3FB432FD": {
                "Type": redeploy.SERVICE_TYPE,
                "Properties": {"ServiceName": STACK, "CapacityProviderStrategy": list(items)},
            },
        }
    }


PLAIN = _running(_item(OD_LID, 0, 1))
WITH_SPOT = _running(_item(OD_LID, 1, 30), _item(SPOT_LID, 0, 70))
DRAINED = _running(_item(OD_LID, 1, 100), _item(SPOT_LID, 0, 0))


def test_the_nonce_is_the_same_for_the_same_strategy_and_changes_with_it() -> None:
    nonces = {
        redeploy.strategy_nonce(s)
        for s in (
            _spec("on_demand_base = 2\n"),
            _spec("spot_percent = 50\n"),
            _spec("spot_percent = 0\n"),
            _spec(""),
        )
    }
    nonces.add(redeploy.strategy_nonce(_spec(None)))
    assert len(nonces) == 5
    assert redeploy.strategy_nonce(_spec("")) == redeploy.strategy_nonce(_spec(""))
    # CloudFormation's ForceNewDeploymentNonce: 1 to 255 characters.
    assert all(n.startswith(redeploy.NONCE_PREFIX) and 1 <= len(n) <= 255 for n in nonces)
    # A type added to the Spot group changes placement, which needs no deployment.
    three = _spec("").model_copy(deep=True)
    assert three.capacity.spot is not None
    three.capacity.spot.instance_types.append("g5.2xlarge")
    assert redeploy.strategy_nonce(three) == redeploy.strategy_nonce(_spec(""))


def test_the_running_strategy_is_read_by_the_providers_physical_names() -> None:
    assert redeploy.deployed_strategy(WITH_SPOT) == [
        (NAMES.capacity_provider, 1, 30),
        (NAMES.spot_capacity_provider, 0, 70),
    ]
    assert redeploy.strategy(_spec(""), NAMES) == redeploy.deployed_strategy(WITH_SPOT)
    assert redeploy.strategy(_spec(None), NAMES) == redeploy.deployed_strategy(PLAIN)


def test_a_new_stack_or_an_unchanged_strategy_forces_nothing() -> None:
    assert redeploy.decide(Design.of(_spec("")), SPEC_PATH, STACK, None) == redeploy.Decision()
    for spec, running in ((_spec(""), WITH_SPOT), (_spec(None), PLAIN)):
        d = redeploy.decide(Design.of(spec), SPEC_PATH, STACK, running)
        assert not d.forces and d.note is None and d.warning is None


def test_a_changed_or_added_strategy_forces_with_the_specs_nonce_and_says_so() -> None:
    cases = [
        (_spec(""), PLAIN),  # [capacity.spot] added to a running stack
        (_spec("on_demand_base = 2\n"), WITH_SPOT),  # on_demand_base changed
        (_spec("spot_percent = 0\n"), WITH_SPOT),  # the step before a removal
    ]
    for spec, running in cases:
        d = redeploy.decide(Design.of(spec), SPEC_PATH, STACK, running)
        assert d.nonce == redeploy.strategy_nonce(spec)
        assert d.note is not None and "replaces every running task" in d.note


def test_removing_spot_while_it_has_a_weight_is_refused_with_the_way_there() -> None:
    with pytest.raises(BadInputError) as e:
        redeploy.decide(Design.of(_spec(None)), SPEC_PATH, STACK, WITH_SPOT)
    msg = e.value.message
    assert e.value.exit_code == EXIT_BAD_INPUT
    assert msg.startswith(f"{SPEC_PATH}: [capacity.spot] is removed")
    assert "spot_percent = 0" in msg and NAMES.spot_asg in msg and "deploy again" in msg


def test_removing_spot_once_its_weight_is_0_forces_the_new_strategy() -> None:
    d = redeploy.decide(Design.of(_spec(None)), SPEC_PATH, STACK, DRAINED)
    assert d.nonce == redeploy.strategy_nonce(_spec(None))
    assert d.note is not None and NAMES.spot_asg in d.note and "no instances" in d.note


def test_a_running_template_that_cannot_be_read_is_a_warning_and_forces_nothing() -> None:
    two = copy.deepcopy(WITH_SPOT)
    two["Resources"]["Other"] = copy.deepcopy(two["Resources"]["GpuService3FB432FD"])
    none = {"Resources": {OD_LID: PLAIN["Resources"][OD_LID]}}
    foreign = _running({"CapacityProvider": {"Fn::ImportValue": "x"}, "Weight": 1})
    for running in (two, none, foreign, "its template body is not JSON (YAML?)"):
        d = redeploy.decide(Design.of(_spec(None)), SPEC_PATH, STACK, running)
        assert not d.forces and d.warning is not None, running
        assert d.warning.startswith(f"stack {STACK}: could not read")
    assert "YAML" in str(
        redeploy.decide(Design.of(_spec("")), SPEC_PATH, STACK, "body is YAML").warning
    )


def test_service_properties_and_the_forced_service() -> None:
    t = copy.deepcopy(WITH_SPOT)
    assert redeploy.forced_service(t) is None and not redeploy.forces(t)
    t["Resources"]["GpuService3FB432FD"]["Properties"][redeploy.FORCE_KEY] = {
        "EnableForceNewDeployment": True,
        "ForceNewDeploymentNonce": "strategy-0123456789abcdef",
    }
    assert redeploy.forced_service(t) == "GpuService3FB432FD"
    assert redeploy.service_properties({"Resources": []}) is None
    assert redeploy.service_properties(None) is None


def test_the_refresh_preferences_are_what_the_autoscaling_api_takes() -> None:
    # doctor LT001 prints them as start-instance-refresh --preferences JSON, and
    # the template's update policy writes the same percentages.
    model = botocore.session.get_session().get_service_model("autoscaling")
    members = model.shape_for("RefreshPreferences").members
    prefs = redeploy.REFRESH_PREFERENCES
    assert set(prefs) <= set(members)
    assert prefs["ScaleInProtectedInstances"] in members["ScaleInProtectedInstances"].enum


def test_an_instance_refresh_surge_is_its_max_healthy_share_of_the_group_rounded_up() -> None:
    """MaxHealthyPercentage 110: up to 10 % more instances in service or pending."""
    assert redeploy.REFRESH_PREFERENCES["MaxHealthyPercentage"] == 110
    assert [redeploy.refresh_surge(n) for n in (0, 1, 4, 10, 11, 20, 21)] == [0, 1, 1, 1, 2, 2, 3]
