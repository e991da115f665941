"""[service] (spec/sections/service.py): its name, image, environment, secrets, driver
capabilities, shared memory and log retention, each refused with its fix."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from ecs_gpu.spec import (
    parse_spec,
)

from ..specdata import (
    _SSM,
    FULL,
    PATH,
    dumps,
    one_problem,
    problems,
    with_,
)


@pytest.mark.parametrize(
    "name",
    ["VLLM", "9lives", "ends-", "a--b", "x", "a" * 33, "under_score", "dot.name", "spa ce"],
)
def test_bad_service_name(name: str) -> None:
    line = one_problem(with_("service", name=name), "service.name", repr(name))
    assert "lowercase letters, digits and single hyphens" in line
    assert 'Fix: rename it, e.g. name = "vllm-g5"' in line


@pytest.mark.parametrize("name", ["ab", "a" * 32, "vllm-g5", "a1-b2-c3"])
def test_good_service_names(name: str) -> None:
    assert parse_spec(with_("service", name=name), PATH).service.name == name


def test_image_with_spaces() -> None:
    line = one_problem(with_("service", image="vllm/vllm openai"), "service.image")
    assert "'vllm/vllm openai'" in line and "no spaces" in line


def test_empty_image() -> None:
    line = one_problem(with_("service", image=""), "service.image", "''")
    assert "Fix: give a non-empty value" in line


def test_nvidia_visible_devices_is_refused() -> None:
    env = {"HF_HOME": "/x", "NVIDIA_VISIBLE_DEVICES": "all"}
    line = one_problem(with_("service", environment=env), "service.environment")
    assert "NVIDIA_VISIBLE_DEVICES = 'all' must not be set" in line
    assert "ECS sets it to the GPUs it assigned" in line
    assert "Fix: remove NVIDIA_VISIBLE_DEVICES from [service] environment" in line


def test_nvidia_driver_capabilities_belongs_to_its_own_key() -> None:
    env = {"NVIDIA_DRIVER_CAPABILITIES": "all"}
    line = one_problem(with_("service", environment=env), "service.environment")
    assert "NVIDIA_DRIVER_CAPABILITIES = 'all'" in line
    assert "write nvidia_driver_capabilities = 'all' under [service]" in line


@pytest.mark.parametrize("var", ["1X", "A-B", "A B", ""])
def test_bad_environment_variable_name(var: str) -> None:
    line = one_problem(with_("service", environment={var: "v"}), "service.environment")
    assert f"{var!r} is not a valid environment variable name" in line


@pytest.mark.parametrize(
    ("caps", "bad"), [("utility,gpu", "'gpu'"), ("", "''"), ("compute,,utility", "''")]
)
def test_unknown_driver_capability(caps: str, bad: str) -> None:
    line = one_problem(
        with_("service", nvidia_driver_capabilities=caps), "service.nvidia_driver_capabilities"
    )
    assert f"unknown capability {bad}" in line
    assert "utility,compute" in line


def test_driver_capabilities_are_normalised() -> None:
    spec = parse_spec(with_("service", nvidia_driver_capabilities=" compute , utility"), PATH)
    assert spec.service.nvidia_driver_capabilities == "compute,utility"


@pytest.mark.parametrize("field", ["name"])
def test_trailing_newline_in_a_name_is_refused(field: str) -> None:
    (line,) = problems(with_("service", **{field: "vllm-g5\n"}))
    assert "service.name" in line


def test_trailing_newline_in_an_env_key_is_refused() -> None:
    (line,) = problems(with_("service", environment={"HF_HOME\n": "/x"}))
    assert "HF_HOME" in line and "environment" in line


def test_secret_must_be_an_arn_and_the_fix_shows_one() -> None:
    (line,) = problems(with_("service", secrets={"HF_TOKEN": "hf_abc"}))
    assert "service.secrets.HF_TOKEN = 'hf_abc'" in line
    assert "arn:aws:secretsmanager:" in line.split("Fix:")[1]
    ok = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hf-token-AbCdEf:token::"
    assert parse_spec(with_("service", secrets={"HF_TOKEN": ok}), PATH).service.secrets


def test_shared_memory_is_automatic_for_multi_gpu_tasks_only() -> None:
    one = parse_spec(with_("service", gpus_per_task=1), PATH)
    assert one.service.shm_mib is None
    doc = copy.deepcopy(FULL)
    doc["service"]["shared_memory_mib"] = 2048
    assert parse_spec(dumps(doc), PATH).service.shm_mib == 2048
    p5 = (Path(__file__).parents[3] / "examples" / "p5-8gpu.toml").read_text()
    assert parse_spec(p5, PATH).service.shm_mib == 16384


@pytest.mark.parametrize("name", ["1X", "A-B", "HF_TOKEN\n", "", "HF TOKEN"])
def test_bad_secret_name(name: str) -> None:
    line = one_problem(with_("service", secrets={name: _SSM}), "service.secrets")
    assert f"{name!r} is not a valid environment variable name" in line
    assert "HF_TOKEN = " in line.split("Fix:")[1]


@pytest.mark.parametrize("name", ["NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"])
def test_reserved_secret_name(name: str) -> None:
    line = one_problem(with_("service", secrets={name: _SSM}), "service.secrets")
    assert f"{name} must not be set" in line
    assert f"Fix: remove {name} from [service] secrets" in line


@pytest.mark.parametrize(
    ("image", "needle"),
    [
        ("$(reboot)", "only letters, digits"),
        ('vllm/vllm-openai:"v1"', "only letters, digits"),
        ("vllm/vllm-openai:v1;rm", "only letters, digits"),
        ("a/" + "b" * 300, "ECS allows at most 255"),
        ("vllm/vllm-openai@sha256:abc", "64 hex digits"),
        ("$(x)@sha256:" + "a" * 64, "only letters, digits"),
    ],
)
def test_the_spec_refuses_images_ecs_refuses(image: str, needle: str) -> None:
    line = one_problem(with_("service", image=image), "service.image")
    assert needle in line


def test_images_ecs_takes_are_accepted() -> None:
    for image in (
        "vllm/vllm-openai:v0.11.0",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v1",
        "public.ecr.aws/a/b@sha256:" + "0f" * 32,
    ):
        assert parse_spec(with_("service", image=image), PATH).service.image == image


def test_an_uppercase_digest_is_refused_with_its_lowercase_form() -> None:
    # ECS takes [A-F]; the OCI digest grammar (go-digest's ^[a-f0-9]{64}$) does not.
    image = "public.ecr.aws/a/b@sha256:" + "0F" * 32
    line = one_problem(with_("service", image=image), "service.image")
    assert "uppercase hex digits" in line and "a runtime refuses" in line
    assert f"Fix: lowercase the digest: write {'public.ecr.aws/a/b@sha256:' + '0f' * 32!r}" in line


@pytest.mark.parametrize(
    ("image", "needle"),
    [
        # ECS takes each of these; a runtime cannot pull it (CannotPullContainerError).
        ("vllm/vllm-openai:", "the tag ''"),  # an unset template variable
        ("Vllm/vllm-openai:v0.11.0", "write 'vllm/vllm-openai:v0.11.0'"),
        ("123456789012.dkr.ecr.us-east-1.amazonaws.com/Repo:v1", "lowercase letters only"),
        ("vllm/vllm-openai:v0.11.0:v2", "no image reference a runtime can pull"),
        ("vllm//vllm-openai:v1", "no image reference a runtime can pull"),
        ("vllm/vllm-openai:v0.11.0/", "no image reference a runtime can pull"),
        (":", "no image reference"),
        ("##", "no image reference"),
        ("vllm/x:" + "a" * 129, "1-128 letters"),
        ("host:abc/x:1", "the registry 'host:abc'"),
        ("Vllm/x@sha256:" + "a" * 64, "lowercase letters only"),
    ],
)
def test_the_spec_refuses_images_no_runtime_can_pull(image: str, needle: str) -> None:
    line = one_problem(with_("service", image=image), "service.image")
    assert needle in line and "Fix:" in line


def test_pullable_references_of_every_registry_shape_are_accepted() -> None:
    for image in (
        "ubuntu",
        "lmsysorg/sglang:latest",
        "nvcr.io/nvidia/tritonserver:24.08-py3",
        "ghcr.io/huggingface/text-generation-inference:3.0",
        "localhost:5000/team/vllm:1",
        "public.ecr.aws/docker/library/python:3.12",
        "registry.example.com:5000/a__b/c-d.e:x_1." + "t" * 100,
    ):
        assert parse_spec(with_("service", image=image), PATH).service.image == image


@pytest.mark.parametrize("value", [True, 1.0, "30"])
def test_log_retention_must_be_a_whole_number_of_days(value: object) -> None:
    line = one_problem(with_("service", log_retention_days=value), "service.log_retention_days")
    assert "whole number of days" in line and "log_retention_days = 30" in line
