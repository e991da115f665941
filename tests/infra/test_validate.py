"""validate(): cfn-lint and cdk-nag clean on every example, and each check can fail."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import pytest

from ecs_gpu.errors import SpecError
from ecs_gpu.infra import nag
from ecs_gpu.node import ensure_node
from ecs_gpu.spec import Spec
from ecs_gpu.validate import cfn_lint_findings, nag_findings, synth_findings, validate

from .tpl import one

if TYPE_CHECKING:
    from ecs_gpu.synth import Synthesized
    from ecs_gpu.validate import ValidationReport


def test_example_is_clean(example: str, reports: dict[str, ValidationReport]) -> None:
    report = reports[example]
    assert report.findings == []
    assert report.ok


def test_cfn_lint_zero_errors_zero_warnings(example: str, templates: dict[str, Any]) -> None:
    # Run again on the dict exactly as `ecs-gpu synth` writes it.
    assert cfn_lint_findings(templates[example]) == []


def test_cfn_lint_ignores_nothing_silently(example: str, templates: dict[str, Any]) -> None:
    # No rule is ignored anywhere; if one ever must be, it goes in the
    # template's own Metadata with its reason (docs/template.md).
    assert "cfn-lint" not in templates[example].get("Metadata", {})
    for r in templates[example]["Resources"].values():
        assert "cfn-lint" not in r.get("Metadata", {})


def test_cfn_lint_reports_a_broken_template(templates: dict[str, Any]) -> None:
    broken = copy.deepcopy(templates["g5-vllm.toml"])
    _, lt = one(broken, "AWS::EC2::LaunchTemplate")
    lt["Properties"]["LaunchTemplateData"]["InstanceTypo"] = "g5.xlarge"
    findings = cfn_lint_findings(broken)
    assert findings
    assert {f.source for f in findings} == {"cfn-lint"}
    assert any("InstanceTypo" in f.message for f in findings)


def test_every_acknowledgement_has_a_written_reason() -> None:
    assert nag.ACKS
    for key, a in nag.ACKS.items():
        assert a.rule.startswith("AwsSolutions-")
        assert len(a.reason.split()) >= 15, f"{key}: reason too thin"


@pytest.fixture(scope="module")
def built_with_a_bad_construct(
    specs: dict[str, Spec], tmp_path_factory: pytest.TempPathFactory
) -> Synthesized:
    """The g5 example plus a security group open to the world and a CDK warning."""
    ensure_node()
    from aws_cdk import Annotations
    from aws_cdk import aws_ec2 as ec2

    from ecs_gpu.synth import build

    built = build(specs["g5-vllm.toml"], outdir=str(tmp_path_factory.mktemp("cdk")))
    sg = ec2.SecurityGroup(built.stack, "Open", vpc=built.service.network.vpc)
    sg.add_ingress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(22), "ssh from anywhere")
    Annotations.of(built.stack).add_warning_v2("test:warning", "a synth warning")
    return built


def test_nag_reports_an_unacknowledged_finding(built_with_a_bad_construct: Synthesized) -> None:
    findings = nag_findings(built_with_a_bad_construct.stack)
    assert [(f.id, f.resource) for f in findings] == [
        ("AwsSolutions-EC23", f"{built_with_a_bad_construct.stack.stack_name}/Open/Resource")
    ]
    assert findings[0].source == "cdk-nag"


def test_cdk_synth_warnings_are_findings(built_with_a_bad_construct: Synthesized) -> None:
    b = built_with_a_bad_construct
    messages = b.app.synth().get_stack_by_name(b.stack.stack_name).messages
    findings = synth_findings(list(messages))
    assert [(f.source, f.severity) for f in findings] == [("cdk", "warning")]
    assert "a synth warning" in findings[0].message


def test_validate_refuses_a_spec_that_breaks_a_rule(specs: dict[str, Spec]) -> None:
    good = specs["g5-vllm.toml"].model_dump()
    good["service"]["gpus_per_task"] = 4  # g5.xlarge has one GPU
    bad = Spec.model_validate(good)
    with pytest.raises(SpecError) as exc:
        validate(bad, path="bad.toml")
    assert exc.value.exit_code == 2
    assert any("service.gpus_per_task" in p for p in exc.value.problems)


def test_docs_list_every_acknowledgement() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "template.md").read_text("utf-8")
    for a in nag.ACKS.values():
        assert f"`{a.rule.split('[')[0]}" in doc, a.rule
