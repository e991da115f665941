"""What deploy sends must fit CloudFormation's limits (template/limits.py) with every feature on.

``deploy`` sends the template inline (minified JSON, at most 51,200 bytes as
TemplateBody; ``template.template_size_problem``), or through a bucket the
user names with ``--template-bucket`` (TemplateURL, at most 1 MB). The
examples, even with a warm pool and the GPU guard, fit inline; the largest
realistic spec (every feature on) needs the bucket and fits it many times
over. These tests synthesize specs bigger than the examples, on each
example's instance family, and measure what deploy would send. The headroom
they leave is in docs/host.md "Size".
"""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest

from ecs_gpu import catalog, host
from ecs_gpu.spec import Spec, parse_spec
from ecs_gpu.template.limits import (
    MAX_TEMPLATE_BODY_BYTES,
    MAX_TEMPLATE_URL_BYTES,
    template_size_problem,
)
from ecs_gpu.template.synth import synth_template, template_json
from support.examples import EXAMPLES, EXAMPLES_DIR

# Room left for what a real spec adds beyond these: a longer name, another
# variable, a longer image reference.
MARGIN_BYTES = 1024
POOL_MARGIN_BYTES = 512
# EC2 refuses user data over 16 KB (before base64).
EC2_USER_DATA_MAX = 16 * 1024

WARM_POOL = "\n[capacity.warm_pool]\nmin_size = 1\n"
ALERT_EMAILS = '\n[alerts]\nemail = ["oncall@example.com", "ml-platform-team@example.com"]\n'


ACCOUNT = "arn:aws:{}:us-east-1:123456789012:"
IMAGE = (
    "123456789012.dkr.ecr.us-east-1.amazonaws.com/ml-platform/vllm-openai:v0.11.0-cu128-20261130"
)
SECRETS = {
    "HF_TOKEN": ACCOUNT.format("secretsmanager") + "secret:ml/hf-token-AbCdEf",
    "API_KEYS": ACCOUNT.format("secretsmanager") + "secret:ml/api-keys-GhIjKl:vllm:AWSCURRENT:",
    "WANDB_API_KEY": ACCOUNT.format("ssm") + "parameter/ml/wandb/api-key",
}
CERTIFICATE = ACCOUNT.format("acm") + "certificate/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"


def _subnets(prefix: int) -> str:
    """Three subnets, one per Availability Zone, as a TOML array."""
    return json.dumps([f"subnet-0a1b2c3d4e5f60{prefix}{az}" for az in (1, 2, 3)])


def _body(spec: Spec) -> str:
    """What deploy sends as TemplateBody (aws.staging.template_body's serialization)."""
    return json.dumps(synth_template(spec), separators=(",", ":"))


def _with_warm_pool(text: str) -> str:
    """An example plus a warm pool."""
    cap = text.index("[capacity]\n")
    end = text.find("\n[", cap + 1)
    return text[:end] + WARM_POOL + text[end:]


def _with_warm_pool_and_guard(text: str) -> str:
    """An example plus a warm pool and, where it scales on concurrency, the GPU guard."""
    text = _with_warm_pool(text)
    if "[service.metrics]" in text:
        text = text.replace("[scaling]\n", "[scaling]\ngpu_guard = true\n", 1)
    return text


def largest_spec_text(example: str) -> str:
    """Every feature on, on the example's instance type, with realistic long values.

    Concurrency signal with GPU guard and fast path, a warm pool, a reservation,
    gp3 IOPS/throughput, secrets, an internet-facing HTTPS load balancer with a
    request-count policy in a three-AZ VPC of yours, email alerts, and a
    command and environment the size of a tuned vLLM deployment. The model is
    the largest that loads on the task's GPUs, up to 140 GiB (a 70B model in 16 bits).
    """
    ex = tomllib.loads((EXAMPLES_DIR / example).read_text())
    itype = ex["capacity"]["instance_type"]
    gpus = int(ex["service"].get("gpus_per_task", 1))
    mx = int(ex["capacity"]["max_instances"])
    secrets = ", ".join(f'{k} = "{v}"' for k, v in SECRETS.items())
    env = ", ".join(f'VLLM_SETTING_{i:02d} = "value-{i:02d}-{"x" * 24}"' for i in range(12))
    return f'''
[service]
name = "largest-{itype.split(".")[0]}-inference-svc"
image = "{IMAGE}"
gpus_per_task = {gpus}
container_port = 8000
command = [
  "--model", "meta-llama/Llama-3.3-70B-Instruct", "--served-model-name", "llama-70b",
  "--tensor-parallel-size", "{gpus}", "--max-model-len", "32768", "--max-num-seqs", "256",
  "--gpu-memory-utilization", "0.92", "--enable-prefix-caching", "--enable-chunked-prefill",
  "--download-dir", "/root/.cache/huggingface", "--disable-log-requests",
]
environment = {{ HF_HOME = "/root/.cache/huggingface", {env} }}
secrets = {{ {secrets} }}
health_check_path = "/health"
model_size_gib = {min(140, 20 * gpus)}
log_retention_days = 90

[service.metrics]
preset = "vllm"

[capacity]
instance_type = "{itype}"
capacity_reservation_id = "cr-0123456789abcdef0"
reserved_instances = 1
min_instances = 1
max_instances = {mx}
root_volume_gib = 1000
root_volume_iops = 16000
root_volume_throughput_mibps = 1000

[capacity.warm_pool]
min_size = 1
max_prepared = 2

[scaling]
min_tasks = 1
max_tasks = {mx * (catalog.lookup(itype).gpus // gpus)}
target_concurrency_per_task = 22
gpu_guard = true
gpu_target_percent = 80

[network]
vpc_id = "vpc-0a1b2c3d4e5f60718"
subnet_ids = {_subnets(71)}
public_subnet_ids = {_subnets(72)}

[load_balancer]
scheme = "internet-facing"
ingress_cidrs = ["198.51.100.0/24", "203.0.113.0/24"]
certificate_arn = "{CERTIFICATE}"
request_count_target = 120
{ALERT_EMAILS}'''


@pytest.fixture(scope="module")
def largest() -> dict[str, tuple[Spec, str]]:
    out = {}
    for example in EXAMPLES:
        spec = parse_spec(largest_spec_text(example), f"largest-{example}")
        out[example] = (spec, _body(spec))
    return out


def _assert_fits(body: str, what: str, margin: int = MARGIN_BYTES) -> None:
    size = len(body.encode())
    assert template_size_problem(body) is None, f"{what}: {size:,} bytes"
    assert size + margin <= MAX_TEMPLATE_BODY_BYTES, (
        f"{what}: {size:,} bytes leaves {MAX_TEMPLATE_BODY_BYTES - size:,} of headroom, "
        f"less than the {margin:,}-byte margin"
    )


def test_largest_spec_turns_every_feature_on(largest: dict[str, tuple[Spec, str]]) -> None:
    # Guards the fixture: a spec default that changes must not quietly drop a feature.
    for example, (spec, body) in largest.items():
        t: dict[str, Any] = json.loads(body)
        types = {r["Type"] for r in t["Resources"].values()}
        assert spec.scaling.signal == "concurrency" and spec.scaling.gpu_guard, example
        assert spec.scaling.fast_scale_out_enabled, example
        assert spec.capacity.warm_pool is not None and spec.service.secrets, example
        assert {
            "AWS::AutoScaling::WarmPool",
            "AWS::ElasticLoadBalancingV2::Listener",
            "AWS::SNS::Subscription",
            "AWS::CloudWatch::Alarm",
        } <= types, example
        listener = next(
            r
            for r in t["Resources"].values()
            if r["Type"] == "AWS::ElasticLoadBalancingV2::Listener"
        )
        assert listener["Properties"]["Protocol"] == "HTTPS", example


@pytest.mark.parametrize("example", EXAMPLES)
def test_each_example_with_a_warm_pool_fits(example: str) -> None:
    # Issue 16's arrival-rate estimate (about 1.9 KB of sidecar script) left
    # the g5 example with a pool 604 bytes of headroom: the margin here is
    # half the examples' own (docs/host.md "Size").
    text = _with_warm_pool((EXAMPLES_DIR / example).read_text())
    spec = parse_spec(text, example)
    assert spec.capacity.warm_pool is not None
    _assert_fits(_body(spec), f"{example} + warm pool", margin=POOL_MARGIN_BYTES)


@pytest.mark.parametrize("example", EXAMPLES)
def test_each_example_with_a_warm_pool_and_gpu_guard_fits_or_says_use_a_bucket(
    example: str,
) -> None:
    text = _with_warm_pool_and_guard((EXAMPLES_DIR / example).read_text())
    spec = parse_spec(text, example)
    assert spec.capacity.warm_pool is not None
    assert spec.scaling.gpu_guard == (spec.scaling.signal == "concurrency")
    body = _body(spec)
    if not spec.scaling.gpu_guard:
        _assert_fits(body, f"{example} + warm pool")
        return
    # The concurrency example with both: over the inline limit since issue 16;
    # deploy refuses it inline, naming --template-bucket, through which it fits.
    problem = template_size_problem(body)
    assert problem is not None and "--template-bucket" in problem
    assert template_size_problem(body, bucket=True) is None


@pytest.mark.parametrize("example", EXAMPLES)
def test_largest_user_data_fits_the_ec2_limit(
    example: str, largest: dict[str, tuple[Spec, str]]
) -> None:
    spec, _ = largest[example]
    assert len(host.cloud_config(spec).encode()) < EC2_USER_DATA_MAX


@pytest.mark.parametrize("example", EXAMPLES)
def test_largest_realistic_spec_fits_through_the_template_bucket(
    example: str, largest: dict[str, tuple[Spec, str]]
) -> None:
    """54,122 to 54,282 bytes (2026-12-01): over TemplateBody's 51,200, so deploy needs
    --template-bucket (TemplateURL, 1 MB), where it fits ten times over.
    tests/cli/test_template_bucket.py deploys it that way into moto."""
    _, body = largest[example]
    size = len(body.encode())
    assert template_size_problem(body, bucket=True) is None, f"{example}: {size:,} bytes"
    assert size * 10 <= MAX_TEMPLATE_URL_BYTES, f"{example}: {size:,} bytes"


@pytest.mark.parametrize("example", EXAMPLES)
def test_synth_writes_a_file_the_aws_cli_deploys_inline(example: str) -> None:
    # `aws cloudformation deploy --template-file` checks the file's size on disk
    # against TemplateBody's limit; the indented text of the g5 example is over
    # it, the minified one far under.
    for text in (
        (EXAMPLES_DIR / example).read_text(),
        _with_warm_pool((EXAMPLES_DIR / example).read_text()),
    ):
        template = synth_template(parse_spec(text, example))
        written = template_json(template)
        assert json.loads(written) == template
        assert len(written.encode()) <= MAX_TEMPLATE_BODY_BYTES, example
        # Readable whenever the indented text fits.
        pretty = json.dumps(template, indent=1) + "\n"
        assert (written == pretty) == (len(pretty.encode()) <= MAX_TEMPLATE_BODY_BYTES)
