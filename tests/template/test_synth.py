"""Spec -> standalone CloudFormation template (template/synth.py): no bootstrap and no asset,
named after the stack, written pretty unless only the minified form deploys inline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ecs_gpu.contracts.naming import Names
from ecs_gpu.spec import Spec
from ecs_gpu.template.limits import MAX_TEMPLATE_BODY_BYTES, minified
from ecs_gpu.template.synth import TEMPLATE_SUFFIX, template_json, template_path

T = dict[str, Any]


def test_standalone_no_bootstrap_no_assets(t: T) -> None:
    types = {r["Type"] for r in t["Resources"].values()}
    assert "BootstrapVersion" not in t.get("Parameters", {})
    assert "CheckBootstrapVersion" not in t.get("Rules", {})
    # With managed termination protection and draining, CDK's drain-hook
    # Lambda (an asset) and its SNS topic must not exist. The one function is
    # the delete-safety release, its code inline (tests/infra/test_capacity_host.py).
    functions = [r for r in t["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert [set(f["Properties"]["Code"]) for f in functions] == [{"ZipFile"}]
    assert "AWS::SNS::Topic" not in types
    assert "Custom::VpcRestrictDefaultSG" not in types
    assert "AWS::CDK::Metadata" not in types
    assert "aws:asset" not in str(t)
    assert "cdk-hnb659fds" not in str(t)  # no reference to bootstrap resources


def test_the_stack_says_what_it_holds(t: T, spec: Spec) -> None:
    assert t["Description"] == (f"ecs-gpu: GPU inference service {spec.service.name} on Amazon ECS")


def test_the_file_is_named_after_the_stack_and_dash_stays_stdout(spec: Spec) -> None:
    out = Path("out")
    assert template_path(spec, out) == out / f"{Names(spec.service.name).stack}{TEMPLATE_SUFFIX}"
    assert template_path(spec, out, stack_name="staging") == out / "staging.template.json"
    assert template_path(spec, Path("-")) == Path("-")


def test_the_file_is_indented_unless_only_the_minified_form_fits_inline() -> None:
    small = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}
    assert template_json(small) == json.dumps(small, indent=1) + "\n"
    big = {"Resources": {f"Topic{i}": {"Type": "AWS::SNS::Topic"} for i in range(1200)}}
    assert len(json.dumps(big, indent=1).encode()) > MAX_TEMPLATE_BODY_BYTES
    assert template_json(big) == minified(big)
