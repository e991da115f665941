"""A user's own CDK app with GpuService makes the same resources as `ecs-gpu synth`."""

from __future__ import annotations

import tempfile
from typing import Any

from ecs_gpu.node import ensure_node
from ecs_gpu.spec import Spec
from ecs_gpu.synth import CONSTRUCT_ID

# What the default synthesizer adds and the standalone one leaves out.
BOOTSTRAP_ONLY = {"BootstrapVersion"}


def _user_app_template(spec: Spec) -> dict[str, Any]:
    ensure_node()
    from aws_cdk import App, Stack, Validations
    from cdk_nag import AwsSolutionsChecks

    from ecs_gpu import GpuService

    # Like a `cdk init` app: a feature flag that would add a Lambda-backed
    # custom resource to any VPC whose construct does not opt out, and
    # cdk-nag as a validation plugin (synth fails on an unacknowledged finding).
    with tempfile.TemporaryDirectory(prefix="ecs-gpu-user-app-") as outdir:
        app = App(outdir=outdir, context={"@aws-cdk/aws-ec2:restrictDefaultSecurityGroup": True})
        stack = Stack(app, spec.service.name)
        GpuService(stack, CONSTRUCT_ID, spec=spec)
        Validations.of(app).add_plugins(AwsSolutionsChecks(app))
        template: dict[str, Any] = app.synth().get_stack_by_name(stack.stack_name).template
    return template


def _shape(t: dict[str, Any]) -> dict[str, str]:
    return {lid: r["Type"] for lid, r in t["Resources"].items()}


def test_user_app_matches_cli(example: str, specs: dict[str, Spec], templates: Any) -> None:
    from ecs_gpu import GpuService as Exported
    from ecs_gpu.infra.service import GpuService

    assert Exported is GpuService
    user = _user_app_template(specs[example])
    cli = templates[example]
    assert _shape(user) == _shape(cli)
    # Same properties too, apart from what the synthesizer itself adds.
    assert user["Resources"] == cli["Resources"]
    assert set(user.get("Parameters", {})) - set(cli.get("Parameters", {})) <= BOOTSTRAP_ONLY
    assert user.get("Outputs") == cli.get("Outputs")


def test_import_ecs_gpu_and_cli_stay_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, ecs_gpu, ecs_gpu.cli\n"
        "assert 'aws_cdk' not in sys.modules and 'jsii' not in sys.modules, 'CDK loaded'\n"
        "from ecs_gpu import GpuService\n"
        "assert 'aws_cdk' in sys.modules and GpuService.__name__ == 'GpuService'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_unknown_attribute_is_an_attribute_error() -> None:
    import pytest

    import ecs_gpu

    with pytest.raises(AttributeError, match="NotAThing"):
        ecs_gpu.NotAThing  # noqa: B018
