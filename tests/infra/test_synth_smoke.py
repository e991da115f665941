"""The standalone template: no bootstrap, no assets, no launch configuration."""

from __future__ import annotations

from typing import Any

from ecs_gpu.spec import Spec

AL2023_GPU_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id"


def _types(t: dict[str, Any]) -> set[str]:
    return {r["Type"] for r in t["Resources"].values()}


def test_standalone_no_bootstrap_no_assets(
    example: str, templates: dict[str, dict[str, Any]]
) -> None:
    t = templates[example]
    assert "BootstrapVersion" not in t.get("Parameters", {})
    assert "CheckBootstrapVersion" not in t.get("Rules", {})
    # Drain-hook Lambda (asset) must not exist with managed draining/termination protection.
    assert "AWS::Lambda::Function" not in _types(t)
    assert "AWS::SNS::Topic" not in _types(t)
    assert "AWS::CDK::Metadata" not in _types(t)
    assert "aws:asset:path" not in str(t)


def test_launch_template_never_launch_configuration(
    example: str, templates: dict[str, dict[str, Any]], specs: dict[str, Spec]
) -> None:
    t = templates[example]
    assert "AWS::AutoScaling::LaunchConfiguration" not in _types(t)
    assert "AWS::EC2::LaunchTemplate" in _types(t)
