"""The examples' and the variants' templates, each validated (and so synthesized) once.

The examples' fixtures are tests/support/examples.py's (shared with tests/template/ and
tests/cli/); the variants below are spec shapes the examples do not cover.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ecs_gpu.spec import Spec, parse_spec
from example_specs import G5_GPU, G5_PATH
from support.examples import (
    EXAMPLES,
    EXAMPLES_DIR,
    example,
    reports,
    spec,
    specs,
    t,
    templates,
    validate_stages,
)

__all__ = [
    "EXAMPLES",
    "EXAMPLES_DIR",
    "example",
    "reports",
    "spec",
    "specs",
    "t",
    "templates",
    "validate_stages",
]

if TYPE_CHECKING:
    from ecs_gpu.template.validate import ValidationReport


# The g5 example scales on concurrency; the variants below are GPU-signal shapes
# (tests/example_specs.py: the same file less [service.metrics] and the target).
G5 = G5_GPU
ECR_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v1"
USER_VPC = """
[network]
vpc_id = "vpc-0a1b2c3d4e5f60718"
subnet_ids = ["subnet-0a1b2c3d4e5f60711", "subnet-0a1b2c3d4e5f60712"]
"""
PINNED_AMI = "ami-0123456789abcdef0"
ALERT_EMAILS = '\n[alerts]\nemail = ["oncall@example.com", "ml-team@example.com"]\n'
# The g5 example (concurrency) with a Spot group over two interchangeable types.
SPOT_TABLE = '\n[capacity.spot]\ninstance_types = ["g5.xlarge", "g6.xlarge"]\n'
SPOT = G5_PATH.read_text(encoding="utf-8").replace("\n[scaling]\n", SPOT_TABLE + "\n[scaling]\n", 1)
SPOT_OD0 = SPOT.replace(SPOT_TABLE, SPOT_TABLE + "on_demand_base = 0\n", 1).replace(
    "min_instances = 1", "min_instances = 0", 1
)
# Spec shapes the examples do not cover; each is validated (synth, cfn-lint,
# cdk-nag) once per session.
VARIANTS = {
    "asg-average": G5.replace("[scaling]\n", '[scaling]\ngpu_metric = "asg-average"\n'),
    "ecr-image": G5.replace('image = "vllm/vllm-openai:v0.11.0"', f'image = "{ECR_IMAGE}"'),
    "internal-alb-in-user-vpc": G5 + USER_VPC + '\n[load_balancer]\nscheme = "internal"\n',
    "public-http-alb-narrowed": G5
    + '\n[load_balancer]\nscheme = "internet-facing"\ningress_cidrs = ["203.0.113.0/24"]\n',
    "user-vpc-no-alb": G5 + USER_VPC,
    # One instance more than max_tasks needs: deployments at full scale start first.
    "deploy-headroom": G5.replace("max_instances = 4", "max_instances = 5"),
    # The stack's own alert topic (a topic ARN is in examples/g6e-alb-odcr.toml).
    "alerts-email": G5 + ALERT_EMAILS,
    # [capacity.spot] on the concurrency example: a Spot group beside the On-Demand one.
    "spot": SPOT,
    # Every task may run on Spot (no base) and the On-Demand group may be empty:
    # its GPU missing-metric alarm reads its series only while it has an instance.
    "spot-od0": SPOT_OD0,
    # The Spot alarms' actions and the topic policy naming them.
    "spot-alerts-email": SPOT + ALERT_EMAILS,
    # [capacity] ami_id pins the AMI: the parameter's default.
    "pinned-ami": G5.replace("[capacity]\n", f'[capacity]\nami_id = "{PINNED_AMI}"\n'),
}


@pytest.fixture(scope="session")
def variant_reports() -> dict[str, ValidationReport]:
    from ecs_gpu.template.validate import validate

    return {k: validate(parse_spec(text, k), path=k) for k, text in VARIANTS.items()}


def gpu_signal_only(spec: Spec) -> None:
    """Skip a test of the GPU policy for an example that scales on concurrency.

    examples/g5-vllm.toml has no GPU policy; test_scaling_policies.py tests
    the concurrency policies, and the GPU shapes run on the GPU examples.
    """
    if spec.scaling.signal == "concurrency":
        pytest.skip("scales on concurrency: no GPU policy (test_scaling_policies.py)")
