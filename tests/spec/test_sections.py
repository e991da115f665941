"""The [section] models' own rules (spec/sections/): names, images, environment, secrets, CIDRs,
the AMI id, [alerts], defaults one section takes from another, and docs/spec.md's key tables."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.spec import (
    parse_spec,
)

from .specdata import (
    _SSM,
    FULL,
    MINIMAL,
    PATH,
    TABLES,
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


@pytest.mark.parametrize(
    ("itype", "why"),
    [
        ("p2.xlarge", "20230912"),
        ("g3.4xlarge", "previous-generation"),
        ("g2.2xlarge", "deprecated"),
        ("g6f.large", "fractions of an L4"),
        ("fargate", "Fargate has no GPU support"),
        ("windows", "Windows containers"),
        ("m5.large", "not an ECS-supported GPU instance type"),
        ("G5.XLARGE", "use 'g5.xlarge'"),
    ],
)
def test_refused_instance_type(itype: str, why: str) -> None:
    line = one_problem(with_("capacity", instance_type=itype), "capacity.instance_type")
    assert repr(itype) in line and why in line
    assert "Fix: pick a type that `ecs-gpu catalog` lists" in line


@pytest.mark.parametrize(
    ("cidr", "what"),
    [
        ("not-a-cidr", "is not an IPv4 CIDR"),
        ("10.0.0.0/33", "is not an IPv4 CIDR"),
        ("2001:db8::/32", "is not an IPv4 CIDR"),
        ("10.0.0.1/16", "host bits set"),
        ("10.0.0.0", "prefix missing"),
    ],
)
def test_bad_ingress_cidr(cidr: str, what: str) -> None:
    line = one_problem(with_("load_balancer", ingress_cidrs=[cidr]), "load_balancer.ingress_cidrs")
    assert repr(cidr) in line and what in line


def test_ingress_cidr_with_host_bits_suggests_the_network() -> None:
    line = one_problem(
        with_("load_balancer", ingress_cidrs=["10.0.0.1/16"]), "load_balancer.ingress_cidrs"
    )
    assert "Fix: write '10.0.0.0/16'" in line


@pytest.mark.parametrize("good", ["ami-12c6146b", "ami-0123456789abcdef0"])
def test_ami_id_takes_both_ec2_id_lengths(good: str) -> None:
    assert parse_spec(with_("capacity", ami_id=good), PATH).capacity.ami_id == good


@pytest.mark.parametrize("bad", ["ami-0123", "AMI-0123456789ABCDEF0", "i-0123456789abcdef0"])
def test_ami_id_that_is_no_image_id_says_where_to_read_one(bad: str) -> None:
    line = one_problem(with_("capacity", ami_id=bad), "capacity.ami_id", repr(bad))
    assert "aws ssm get-parameter --name /aws/service/ecs/optimized-ami/" in line


@pytest.mark.parametrize(
    ("section", "key", "bad", "fix"),
    [
        ("scaling", "gpu_target_percent", 0.0, "raise it"),
        ("scaling", "gpu_target_percent", 100.5, "lower it"),
        ("scaling", "cpu_target_percent", -1.0, "raise it"),
        ("scaling", "cpu_target_percent", 101.0, "lower it"),
        ("capacity", "target_capacity_percent", 0, "raise it"),
        ("capacity", "target_capacity_percent", 101, "lower it"),
    ],
)
def test_targets_in_zero_to_hundred(section: str, key: str, bad: Any, fix: str) -> None:
    line = one_problem(with_(section, **{key: bad}), f"{section}.{key}", repr(bad))
    assert f"Fix: {fix}" in line


@pytest.mark.parametrize("good", [100, 1])
def test_target_bounds_are_inclusive_at_100(good: int) -> None:
    spec = parse_spec(with_("capacity", target_capacity_percent=good), PATH)
    assert spec.capacity.target_capacity_percent == good
    assert parse_spec(with_("scaling", gpu_target_percent=100.0), PATH).scaling.gpu_target_percent


def _doc_rows() -> dict[str, dict[str, list[str]]]:
    doc = (Path(__file__).parents[2] / "docs" / "spec.md").read_text(encoding="utf-8")
    rows: dict[str, dict[str, list[str]]] = {}
    section = ""
    for line in doc.splitlines():
        if line.startswith("## ") or line.startswith("### "):
            heading = re.match(r"#{2,3} `\[([\w.]+)\]`", line)
            section = heading.group(1) if heading else ""
            if section:
                rows[section] = {}
        elif line.startswith("| `") and section:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[section][cells[0].strip("`")] = cells
    return rows


# Keys whose default Spec derives from other keys: the cell starts with what the
# model says and goes on to say what is filled in, e.g. "required, or ...".
_DERIVED_DEFAULTS = {"service.cpu_units", "service.memory_mib", "scaling.signal"}


def _doc_default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, int | float):
        return f"`{value:g}`"
    return f"`{value}`"


def test_docs_spec_documents_every_key_with_its_default() -> None:
    rows = _doc_rows()
    assert set(rows) == set(TABLES)
    for section, model in TABLES.items():
        missing = set(model.model_fields) - set(rows[section])
        assert not missing, f"document [{section}] {sorted(missing)} in docs/spec.md"
        assert set(rows[section]) <= set(model.model_fields), f"docs/spec.md [{section}] is stale"
        for key, field in model.model_fields.items():
            default = rows[section][key][2]
            expected = _doc_default(field)
            if f"{section}.{key}" in _DERIVED_DEFAULTS:
                expected = {"required": "the task's share"}.get(expected, expected)
                assert default.startswith((expected + " ", expected + ",")), (section, key, default)
            elif expected == "none":
                # Unset keys may say what "none" means, e.g. "none (the image's)".
                assert default.startswith("none"), (section, key, default)
            else:
                assert default == expected, (section, key, default)


def test_alerts_are_optional_and_off_by_default() -> None:
    assert parse_spec(MINIMAL, PATH).alerts is None


def test_alerts_topic_arn_is_kept() -> None:
    spec = parse_spec(dumps(FULL), PATH)
    assert spec.alerts is not None
    assert spec.alerts.sns_topic_arn == "arn:aws:sns:us-east-1:123456789012:gpu-alerts"
    assert spec.alerts.email is None


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sns:us-gov-west-1:123456789012:alerts",
        "arn:aws-cn:sns:cn-north-1:123456789012:my_alerts-2",
    ],
)
def test_alerts_topic_arn_in_other_partitions(arn: str) -> None:
    spec = parse_spec(with_("alerts", sns_topic_arn=arn), PATH)
    assert spec.alerts is not None and spec.alerts.sns_topic_arn == arn


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sns:us-east-1:12345678901:alerts",  # 11-digit account
        "arn:aws:sqs:us-east-1:123456789012:alerts",  # a queue, not a topic
        "arn:aws:sns:us-east-1:123456789012:alerts.fifo",  # alarms cannot publish to FIFO
        "arn:aws:sns:us-east-1:123456789012:alerts:0b1c2d3e",  # a subscription ARN
        "gpu-alerts",  # a bare name
    ],
)
def test_bad_alerts_topic_arn_names_an_example(arn: str) -> None:
    line = one_problem(with_("alerts", sns_topic_arn=arn), "alerts.sns_topic_arn", repr(arn))
    assert '"arn:aws:sns:us-east-1:123456789012:gpu-alerts"' in line
    assert "not FIFO" in line


def test_alerts_email_creates_a_topic_of_its_own() -> None:
    spec = parse_spec(
        with_("alerts", sns_topic_arn=..., email=["oncall@example.com", "ml@example.com"]), PATH
    )
    assert spec.alerts is not None
    assert spec.alerts.email == ["oncall@example.com", "ml@example.com"]
    assert spec.alerts.sns_topic_arn is None


def test_alerts_email_must_be_an_address() -> None:
    line = one_problem(
        with_("alerts", sns_topic_arn=..., email=["oncall@example.com", "oncall"]),
        "alerts.email[1]",
        "'oncall'",
    )
    assert '"oncall@example.com"' in line


def test_alerts_email_listed_twice() -> None:
    line = one_problem(
        with_("alerts", sns_topic_arn=..., email=["a@example.com", "A@example.com"]),
        "alerts.email",
    )
    assert "a@example.com more than once" in line and "Fix: list each address once" in line


def test_alerts_topic_and_email_together_are_refused() -> None:
    line = one_problem(with_("alerts", email=["a@example.com"]), "alerts.email")
    assert "sns_topic_arn" in line and "not both" in line


def test_empty_alerts_section_is_refused() -> None:
    line = one_problem(with_("alerts", sns_topic_arn=...), "alerts")
    assert "nobody would be told" in line
    assert "sns_topic_arn" in line and "email" in line


def test_unknown_alerts_key_suggests_the_nearest() -> None:
    line = one_problem(with_("alerts", emails=["a@example.com"]), "alerts.emails")
    assert "did you mean 'email'?" in line
    assert "known keys here: sns_topic_arn, email" in line


def test_task_size_defaults_to_its_share_of_the_instance() -> None:
    doc = copy.deepcopy(FULL)
    doc["service"].pop("cpu_units")
    doc["service"].pop("memory_mib")
    spec = parse_spec(dumps(doc), PATH)
    it = spec.instance
    share = spec.service.gpus_per_task / it.gpus
    assert spec.service.cpu_units == int(it.cpu_units * share)
    assert spec.service.memory_mib == int(it.schedulable_memory_mib * share)
    assert (spec.service.cpu_units, spec.service.memory_mib) == (4096, 14888)  # g5.xlarge
    assert spec.tasks_per_instance == 1


def test_task_size_not_guessed_for_unknown_instance_type() -> None:
    doc = copy.deepcopy(FULL)
    doc["service"].pop("cpu_units")
    doc["capacity"]["instance_type"] = "g5.bogus"
    lines = problems(dumps(doc))
    assert any("capacity.instance_type" in line for line in lines)


def test_signal_defaults_to_concurrency_when_the_image_serves_metrics() -> None:
    doc = copy.deepcopy(FULL)
    assert parse_spec(dumps(doc), PATH).scaling.signal == "task-gpus"
    doc["service"]["metrics"] = {"preset": "tgi"}
    doc["scaling"]["target_concurrency_per_task"] = 10.0
    spec = parse_spec(dumps(doc), PATH)
    assert spec.scaling.signal == "concurrency"
    assert spec.scaling.fast_scale_out_enabled
    assert spec.service.metrics is not None
    assert spec.service.metrics.names == ("tgi_batch_current_size", "tgi_queue_size")


def test_old_gpu_metric_key_is_read_as_signal() -> None:
    spec = parse_spec(with_("scaling", gpu_metric="asg-average"), PATH)
    assert spec.scaling.signal == "asg-average"
    assert spec.scaling.gpu_metric == "asg-average"
    (line,) = problems(with_("scaling", gpu_metric="asg-average", signal="task-gpus"))
    assert "scaling" in line and "Fix: remove gpu_metric" in line


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
    p5 = (Path(__file__).parents[2] / "examples" / "p5-8gpu.toml").read_text()
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


def test_more_scheduled_actions_than_the_quota_are_refused() -> None:
    # Each at its own minute: two at one minute are refused on their own.
    entries = [
        {"cron": f"{i % 60} {i // 60} ? * MON-FRI *", "min_tasks": 1, "max_tasks": 2}
        for i in range(201)
    ]
    line = one_problem(with_("scaling", schedule=entries), "scaling.schedule")
    assert "201 entries" in line and "at most 200" in line
    ok = parse_spec(with_("scaling", schedule=entries[:200]), PATH)
    assert len(ok.scaling.schedule) == 200


_CERT = "arn:aws:acm:us-east-1:123456789012:certificate/"


@pytest.mark.parametrize(
    ("arn", "needle"),
    [
        (_CERT + "abc 123", "has whitespace"),
        (" " + _CERT + "abc-123", "has whitespace"),
        ("arn:aws:iam::123456789012:server-certificate/web", "IAM server certificate"),
        ("arn:aws:acm:us-east-1:12345:certificate/abc-123", "not an ACM certificate ARN"),
        ("arn:aws:acm:useast1:123456789012:certificate/abc-123", "not an ACM certificate ARN"),
        ("arn:aws:acm:us-east-1:123456789012:certificate/", "not an ACM certificate ARN"),
        ("arn:aws:elasticloadbalancing:us-east-1:123456789012:x/y", "not an ACM certificate"),
        # A CDK token marker (GpuService given cert.certificate_arn) is no ARN either:
        # refused before it could reach CDK, saying why.
        (_CERT + "${Token[TOKEN.1]}", "holds a CDK token marker"),
        (_CERT + "a" * 2100, "at most 2048"),
    ],
)
def test_a_certificate_arn_that_is_no_acm_certificate_is_refused(arn: str, needle: str) -> None:
    line = one_problem(with_("load_balancer", certificate_arn=arn), "load_balancer.certificate_arn")
    assert needle in line and "Fix: " in line


@pytest.mark.parametrize(
    "arn",
    [
        _CERT + "12345678-1234-1234-1234-123456789012",
        "arn:aws-cn:acm:cn-north-1:123456789012:certificate/abc-123",
        "arn:aws-us-gov:acm:us-gov-west-1:123456789012:certificate/abc-123",
        # The AWS European Sovereign Cloud: a four-letter Region prefix.
        "arn:aws-eusc:acm:eusc-de-east-1:123456789012:certificate/abc-123",
    ],
)
def test_acm_certificate_arns_are_accepted(arn: str) -> None:
    from ecs_gpu.spec.sections.network import certificate_region

    lb = parse_spec(with_("load_balancer", certificate_arn=arn), PATH).load_balancer
    assert lb is not None and lb.certificate_arn == arn
    assert certificate_region(arn) == arn.split(":")[3]
