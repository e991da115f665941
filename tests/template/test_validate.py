"""validate() (template/validate.py): cfn-lint and cdk-nag clean on every example, and each
check can fail."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import pytest

from ecs_gpu.errors import SpecError
from ecs_gpu.node import ensure_node
from ecs_gpu.spec import Spec, parse_spec
from ecs_gpu.template.validate import (
    STAGES,
    cfn_lint_findings,
    ecs_findings,
    is_cdk_advice,
    nag_findings,
    size_findings,
    synth_findings,
    validate,
)
from infra.tpl import one
from support.examples import EXAMPLES_DIR

if TYPE_CHECKING:
    from ecs_gpu.template.synth import Synthesized
    from ecs_gpu.template.validate import ValidationReport


def test_example_is_clean(example: str, reports: dict[str, ValidationReport]) -> None:
    report = reports[example]
    assert report.findings == []
    assert report.ok


def test_validate_announces_each_stage_in_order(
    example: str, reports: dict[str, ValidationReport], validate_stages: dict[str, list[str]]
) -> None:
    assert reports[example].ok
    assert validate_stages[example] == ["synth", "agent schema", "cfn-lint", "cdk-nag"]
    assert tuple(validate_stages[example]) == STAGES


def test_a_spec_that_breaks_a_rule_is_refused_before_any_stage(specs: dict[str, Spec]) -> None:
    data = specs["g5-vllm.toml"].model_dump()
    data["service"]["gpus_per_task"] = 4  # g5.xlarge has one GPU
    told: list[str] = []
    with pytest.raises(SpecError):
        validate(Spec.model_validate(data), path="bad.toml", stage=told.append)
    assert told == []


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


@pytest.fixture(scope="module")
def built_with_a_bad_construct(
    specs: dict[str, Spec], tmp_path_factory: pytest.TempPathFactory
) -> Synthesized:
    """The g5 example plus a security group open to the world and a CDK warning."""
    ensure_node()
    from aws_cdk import Annotations
    from aws_cdk import aws_ec2 as ec2

    from ecs_gpu.template.synth import build

    built = build(specs["g5-vllm.toml"], outdir=str(tmp_path_factory.mktemp("cdk")))
    sg = ec2.SecurityGroup(built.stack, "Open", vpc=built.service.network.vpc)
    sg.add_ingress_rule(ec2.Peer.any_ipv4(), ec2.Port.tcp(22), "ssh from anywhere")
    Annotations.of(built.stack).add_warning_v2("test:warning", "a synth warning")
    # CDK's advice about CDK, which validate must not show (see CDK_ADVICE).
    Annotations.of(built.stack).add_warning_v2(
        "@aws-cdk/core:newStyleFlag",
        "Set the feature flag '@aws-cdk/core:newStyleFlag' to true in cdk.json.",
    )
    Annotations.of(built.stack).add_warning_v2(
        "@aws-cdk/core:notice", "Run 'cdk acknowledge 31885' to stop seeing this notice."
    )
    Annotations.of(built.stack).add_deprecation("aws-cdk-lib.aws_ecs.Old#prop", "use newProp")
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


def test_cdk_advice_is_hidden_and_the_rest_kept(built_with_a_bad_construct: Synthesized) -> None:
    b = built_with_a_bad_construct
    messages = list(b.app.synth().get_stack_by_name(b.stack.stack_name).messages)
    texts = [str(m.entry.data) for m in messages]
    # CDK did attach the three pieces of advice; synth_findings drops exactly them.
    assert sum(1 for t in texts if is_cdk_advice(t)) == 3
    kept = synth_findings(messages)
    assert [f.message for f in kept] == ["a synth warning"]  # "[ack: test:warning]" dropped
    assert not is_cdk_advice("service.image is 300 characters; ECS allows 255")


def test_validate_notes_a_template_that_needs_a_template_bucket(
    specs: dict[str, Spec], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ecs_gpu.aws import staging as dp
    from ecs_gpu.template import limits

    assert size_findings({"Resources": {}}) == []
    # The same function deploy refuses with, at a TemplateBody limit the example exceeds:
    # deploy can still send it through --template-bucket, so it is a note, not a finding.
    monkeypatch.setattr(limits, "MAX_TEMPLATE_BODY_BYTES", 1_000)
    report = validate(specs["g5-vllm.toml"], path="g5.toml")
    assert report.ok and not [f for f in report.findings if f.source == "deploy"]
    sized = [n for n in report.notes if n.source == "deploy"]
    assert [(n.source, n.id, n.severity) for n in sized] == [("deploy", "template-size", "warning")]
    note = sized[0].message
    assert "at most 1,000 bytes inline (TemplateBody)" in note and "--template-bucket" in note
    with pytest.raises(Exception, match="at most 1,000 bytes"):
        dp.template_body(report.template)


def test_validate_cli_prints_the_note_and_exits_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ecs_gpu.cli import main
    from ecs_gpu.template import limits
    from support.examples import EXAMPLES_DIR

    monkeypatch.setattr(limits, "MAX_TEMPLATE_BODY_BYTES", 1_000)
    code = main(["validate", str(EXAMPLES_DIR / "g6e-alb-odcr.toml")])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert "note:" in out and "--template-bucket" in out and "clean:" in out


def test_validate_fails_a_template_over_the_template_url_limit(
    specs: dict[str, Spec], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ecs_gpu.aws import staging as dp
    from ecs_gpu.template import limits

    # Over TemplateURL's limit no bucket helps: a finding, and no note besides.
    monkeypatch.setattr(limits, "MAX_TEMPLATE_BODY_BYTES", 1_000)
    monkeypatch.setattr(limits, "MAX_TEMPLATE_URL_BYTES", 2_000)
    report = validate(specs["g5-vllm.toml"], path="g5.toml")
    sized = [f for f in report.findings if f.source == "deploy"]
    assert [(f.id, f.severity) for f in sized] == [("template-size", "error")]
    assert "at most 2,000 bytes even from S3 (TemplateURL)" in sized[0].message
    assert "Fix:" in sized[0].message and not report.ok
    assert [n for n in report.notes if n.source == "deploy"] == []
    with pytest.raises(Exception, match="TemplateURL"):
        dp.TemplateSource(report.template, "s", bucket=dp.TemplateBucket("b"), s3=object())  # type: ignore[arg-type]


def _with_container(templates: dict[str, Any], **changes: str) -> dict[str, Any]:
    t = copy.deepcopy(templates["g5-vllm.toml"])
    _, td = one(t, "AWS::ECS::TaskDefinition")
    td["Properties"]["ContainerDefinitions"][0].update(changes)
    return t


LONG_REPO = "123456789012.dkr.ecr.us-east-1.amazonaws.com/" + "team/" * 45 + "vllm"


@pytest.mark.parametrize(
    ("changes", "finding_id", "needle"),
    [
        ({"Image": LONG_REPO + ":v1"}, "image", "ECS allows at most 255"),
        ({"Image": LONG_REPO + "@sha256:" + "a" * 64}, "image", "the part before '@'"),
        ({"Image": "vllm/vllm-openai@sha256:abc"}, "image", "64 hex digits"),
        ({"Image": "vllm/vllm-openai:v0.11.0;rm"}, "image", "only letters, digits"),
        ({"Name": "server.main"}, "container-name", "1 to 255 letters"),
        ({"Name": "x" * 256}, "container-name", "1 to 255 letters"),
    ],
)
def test_ecs_limits_are_findings(
    templates: dict[str, Any], changes: dict[str, str], finding_id: str, needle: str
) -> None:
    findings = ecs_findings(_with_container(templates, **changes))
    assert [(f.source, f.id) for f in findings] == [("ecs", finding_id)]
    assert needle in findings[0].message and "Fix:" in findings[0].message
    assert findings[0].resource.endswith(f"/ContainerDefinitions/0/{next(iter(changes))}")


def test_ecs_limits_accept_what_ecs_accepts(templates: dict[str, Any]) -> None:
    assert ecs_findings(templates["g5-vllm.toml"]) == []
    ok = _with_container(templates, Image="public.ecr.aws/a/b@sha256:" + "0f" * 32, Name="a_b-1")
    assert ecs_findings(ok) == []
    # An image built by an intrinsic (an ECR repository's URI) is left to CloudFormation.
    assert ecs_findings(_with_container(templates, Image={"Fn::Join": ["", ["a"]]})) == []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "image",
    [
        # An ECR image reaches the template as an Fn::Join; the spec's string is checked.
        LONG_REPO + ":v1",
        "registry.example.com/" + "team/" * 50 + "vllm:v1",
        "$(reboot)",
    ],
)
def test_the_spec_refuses_an_image_ecs_would_refuse_before_any_template(image: str) -> None:
    # One rule (spec.image_problem) for validate, synth, deploy, diff and plan.
    text = (EXAMPLES_DIR / "g5-vllm.toml").read_text(encoding="utf-8")
    text = text.replace('"vllm/vllm-openai:v0.11.0"', json.dumps(image))
    with pytest.raises(SpecError) as exc:
        parse_spec(text, "long.toml")
    (line,) = exc.value.problems
    assert line.startswith("long.toml: service.image = ") and "Fix:" in line


def test_validate_refuses_a_spec_that_breaks_a_rule(specs: dict[str, Spec]) -> None:
    good = specs["g5-vllm.toml"].model_dump()
    good["service"]["gpus_per_task"] = 4  # g5.xlarge has one GPU
    bad = Spec.model_validate(good)
    with pytest.raises(SpecError) as exc:
        validate(bad, path="bad.toml")
    assert exc.value.exit_code == 2
    assert any("service.gpus_per_task" in p for p in exc.value.problems)


def test_validate_notes_the_model_start_estimate_with_its_inputs(specs: dict[str, Spec]) -> None:
    from ecs_gpu.design import startup

    # p5: 382 GiB at the network's 200 MiB/s (its volume writes 250).
    report = validate(specs["p5-8gpu.toml"], path="p5.toml")
    (note,) = [n for n in report.notes if n.source == "startup"]
    assert (note.id, note.severity, note.resource) == (
        "model-start",
        "info",
        "service.model_size_gib",
    )
    grace = startup.health_timings(specs["p5-8gpu.toml"]).grace_period_s
    assert note.message.startswith(
        "p5.toml: model start estimate 2,398 s = 382 GiB downloaded at 200"
    )
    assert (
        "root volume's 250 MiB/s" in note.message and f"grace period is {grace} s" in note.message
    )
    # g6e: two tasks share one volume's 400 MiB/s.
    report = validate(specs["g6e-alb-odcr.toml"], path="g6e.toml")
    (note,) = [n for n in report.notes if n.source == "startup"]
    assert "400 MiB/s shared by 2 tasks" in note.message


def test_validate_warns_when_no_model_size_sizes_the_grace_period(specs: dict[str, Spec]) -> None:
    spec = specs["g5-vllm.toml"]
    assert spec.service.model_size_gib is None
    report = validate(spec, path="g5.toml")
    (note,) = [n for n in report.notes if n.source == "startup"]
    assert (note.id, note.severity) == ("model-size-unset", "warning")
    assert f"model_load_s = {spec.simulation.model_load_s:g} s" in note.message
    assert "Fix: set model_size_gib" in note.message and report.ok
