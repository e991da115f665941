"""Physical names of a deployment (contracts/naming.py): one base per stack and construct,
every resource's name from it, and the stack names CloudFormation takes."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ecs_gpu.contracts.naming import (
    CONSTRUCT_ID,
    MAX_BASE_LEN,
    Names,
    check_stack_name,
    deployment_base,
    scalable_target_id,
    stack_name_of,
)
from ecs_gpu.errors import BadInputError
from ecs_gpu.spec import parse_spec
from example_specs import G5

SPEC = parse_spec(G5, "g5.toml")


def test_deployment_base() -> None:
    base = deployment_base("vllm-g5", "vllm-g5", CONSTRUCT_ID, standalone_id=CONSTRUCT_ID)
    assert base == "vllm-g5"
    assert deployment_base("vllm-g5", "other", CONSTRUCT_ID, standalone_id=CONSTRUCT_ID) == "other"
    nested = deployment_base("vllm-g5", "app", "Team/Svc", standalone_id=CONSTRUCT_ID)
    again = deployment_base("vllm-g5", "app", "Team/Svc", standalone_id=CONSTRUCT_ID)
    other = deployment_base("vllm-g5", "app", "Team/Svc2", standalone_id=CONSTRUCT_ID)
    assert nested == again != other
    long = deployment_base("a" * 32, "X" * 128, "P", standalone_id=CONSTRUCT_ID)
    assert len(long) <= 32
    # A stack name that is no valid service name (uppercase, "--") is hashed.
    assert deployment_base("s1", "a--b", CONSTRUCT_ID, standalone_id=CONSTRUCT_ID) != "a--b"


@given(
    st.from_regex(r"[a-z][a-z0-9-]{0,30}[a-z0-9]", fullmatch=True),
    st.from_regex(r"[a-zA-Z][-a-zA-Z0-9]{0,127}", fullmatch=True),
    st.text(min_size=1, max_size=40),
)
def test_every_base_fits_the_names_built_on_it(service: str, stack: str, path: str) -> None:
    base = deployment_base(service, stack, path, standalone_id=CONSTRUCT_ID)
    assert 1 <= len(base) <= MAX_BASE_LEN
    assert base[0].isalpha() and not base.endswith("-")


def test_every_name_is_derived_from_the_service_name() -> None:
    n = Names("vllm-g5")
    assert n.stack == n.cluster == n.service == n.task_family == "vllm-g5"
    assert (n.asg, n.spot_asg) == ("vllm-g5-gpu-asg", "vllm-g5-spot-asg")
    # Capacity provider names may not start with "aws", "ecs" or "fargate".
    assert (n.capacity_provider, n.spot_capacity_provider) == ("cp-vllm-g5-gpu", "cp-vllm-g5-spot")
    assert (n.task_log_group, n.host_log_group) == (
        "/ecs-gpu/vllm-g5/tasks",
        "/ecs-gpu/vllm-g5/host",
    )
    assert n.dashboard == "vllm-g5-gpu"
    assert n.gpu_metric_missing_alarm == "vllm-g5-gpu-metric-missing"
    assert n.spot_gpu_metric_missing_alarm == "vllm-g5-spot-gpu-metric-missing"
    assert n.spot_capacity_shortfall_alarm == "vllm-g5-spot-capacity-shortfall"
    assert n.scalable_target_resource_id == scalable_target_id("vllm-g5", "vllm-g5")
    assert scalable_target_id("c", "s") == "service/c/s"


@pytest.mark.parametrize("name", ["vllm-g5-staging", "A", "a" * 128, "VllmStaging"])
def test_a_name_cloudformation_takes_is_kept(name: str) -> None:
    assert check_stack_name(name) == name


@pytest.mark.parametrize("name", ["", "1abc", "has_underscore", "dot.name", "a" * 129])
def test_a_name_cloudformation_refuses_is_bad_input_naming_the_option(name: str) -> None:
    with pytest.raises(BadInputError) as exc:
        check_stack_name(name, "--stack")
    assert exc.value.message.startswith(f"--stack {name!r}: not a CloudFormation stack name.")
    assert "Fix: e.g. vllm-g5-staging." in exc.value.message


def test_the_stack_is_the_specs_own_unless_one_is_given() -> None:
    assert stack_name_of(SPEC) == SPEC.service.name
    assert stack_name_of(SPEC, "vllm-g5-staging") == "vllm-g5-staging"
    with pytest.raises(BadInputError):
        stack_name_of(SPEC, "bad_name")


def test_a_deployment_as_another_stack_is_found_by_that_stacks_names() -> None:
    assert Names.for_deployment(SPEC) == Names(SPEC.service.name)
    assert Names.for_deployment(SPEC, "vllm-g5-staging").cluster == "vllm-g5-staging"
    # A stack name that is no service name (uppercase) gets the hashed base.
    hashed = Names.for_deployment(SPEC, "VllmStaging")
    assert hashed.cluster.startswith(SPEC.service.name + "-") and hashed.cluster != "VllmStaging"
