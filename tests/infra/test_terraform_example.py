"""examples/terraform/main.tf.json deploys the g5 example's real template (docs/terraform.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.aws.deploy import TAG_SPEC
from ecs_gpu.checks.stack_events import required_capabilities
from ecs_gpu.contracts import ami
from ecs_gpu.contracts.naming import stack_name_of
from ecs_gpu.spec import Spec
from ecs_gpu.template.synth import template_path

from .conftest import EXAMPLES_DIR

CONFIG = EXAMPLES_DIR / "terraform" / "main.tf.json"
SPEC = "g5-vllm.toml"


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(CONFIG.read_text(encoding="utf-8"))
    return doc


def _stack(config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    ((name, stack),) = config["resource"]["aws_cloudformation_stack"].items()
    return name, stack


def test_it_passes_the_templates_real_parameters_with_their_defaults(
    config: dict[str, Any], templates: dict[str, dict[str, Any]]
) -> None:
    params = templates[SPEC]["Parameters"]
    _, stack = _stack(config)
    assert set(stack["parameters"]) == set(params)
    # Each value is a variable whose default is the template's own default, and
    # a parameter without one (the AMI) is a variable without one.
    for key, value in stack["parameters"].items():
        m = re.fullmatch(r"\$\{var\.(\w+)\}", value)
        assert m is not None, value
        variable = config["variable"][m.group(1)]
        assert variable.get("default") == params[key].get("Default")


def test_the_ami_variable_says_where_to_read_the_recommended_ami(
    config: dict[str, Any], templates: dict[str, dict[str, Any]]
) -> None:
    _, stack = _stack(config)
    m = re.fullmatch(r"\$\{var\.(\w+)\}", stack["parameters"][ami.PARAMETER])
    assert m is not None
    assert "Default" not in templates[SPEC]["Parameters"][ami.PARAMETER]
    assert ami.RECOMMENDED_COMMAND in config["variable"][m.group(1)]["description"]
    doc = (EXAMPLES_DIR.parent / "docs" / "terraform.md").read_text(encoding="utf-8")
    assert ami.PARAMETER in doc and ami.RECOMMENDED_COMMAND in doc


def test_it_exposes_every_stack_output(
    config: dict[str, Any], templates: dict[str, dict[str, Any]]
) -> None:
    name, _ = _stack(config)
    outputs = templates[SPEC]["Outputs"]
    assert set(config["output"]) == set(outputs)
    for key, out in config["output"].items():
        assert out["value"] == f'${{aws_cloudformation_stack.{name}.outputs["{key}"]}}'


def test_it_passes_the_capabilities_deploy_passes(
    config: dict[str, Any], templates: dict[str, dict[str, Any]]
) -> None:
    _, stack = _stack(config)
    assert stack["capabilities"] == required_capabilities(templates[SPEC])
    assert stack["capabilities"]  # the template has IAM resources: never none


def test_it_names_the_stack_and_file_synth_makes(
    config: dict[str, Any], specs: dict[str, Spec], templates: dict[str, dict[str, Any]]
) -> None:
    spec = specs[SPEC]
    _, stack = _stack(config)
    assert stack["name"] == stack_name_of(spec)
    assert stack["tags"][TAG_SPEC] == spec.service.name
    file_name = template_path(spec, Path(".")).name
    assert config["variable"]["template_file"]["default"] == file_name
    assert "file(" in stack["template_body"] and "var.template_file" in stack["template_body"]
    # Inline is enough for this template (within the TemplateBody limit synth writes for).
    from ecs_gpu.template.limits import MAX_TEMPLATE_BODY_BYTES
    from ecs_gpu.template.synth import template_json

    assert len(template_json(templates[SPEC]).encode()) <= MAX_TEMPLATE_BODY_BYTES


def test_docs_name_every_output_and_the_capability(templates: dict[str, dict[str, Any]]) -> None:
    doc = (EXAMPLES_DIR.parent / "docs" / "terraform.md").read_text(encoding="utf-8")
    assert all(f"`{key}`" in doc for key in templates[SPEC]["Outputs"])
    assert all(f'"{cap}"' in doc for cap in required_capabilities(templates[SPEC]))
