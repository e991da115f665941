"""A CDK app's own tags never reach the launch templates (no fleet refresh per deploy).

An app that tags everything (``Tags.of(app).add("deployed-at", sha)``) would
otherwise put the tag in both launch templates' TagSpecifications: a new
value each deploy is a new template version, and the group's instance
refresh then replaces every GPU instance on every ``cdk deploy``.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.contracts import ami
from ecs_gpu.contracts.naming import CONSTRUCT_ID
from ecs_gpu.node import ensure_node
from ecs_gpu.spec import parse_spec

from .conftest import SPOT
from .tpl import Template, resources

LAUNCH_TEMPLATE = "AWS::EC2::LaunchTemplate"
ASG = "AWS::AutoScaling::AutoScalingGroup"
TAG = "deployed-at"
SPOT_SPEC = parse_spec(SPOT, "spot")


def _app_template(tag_value: str | None, *, on: str = "app") -> Template:
    """The Spot variant (both launch templates) in a user's app, tagged at ``on`` with ``TAG``."""
    ensure_node()
    from aws_cdk import App, Stack, Tags

    from ecs_gpu import GpuService

    spec = SPOT_SPEC
    with tempfile.TemporaryDirectory(prefix="ecs-gpu-app-tags-") as outdir:
        app = App(outdir=outdir)
        stack = Stack(app, spec.service.name)
        GpuService(stack, CONSTRUCT_ID, spec=spec)
        if tag_value is not None:
            Tags.of(app if on == "app" else stack).add(TAG, tag_value)
        template: Template = app.synth().get_stack_by_name(stack.stack_name).template
    return template


@pytest.fixture(scope="module")
def untagged() -> Template:
    return _app_template(None)


def _launch_templates(t: Template) -> dict[str, Any]:
    found = {lid: r["Properties"] for lid, r in resources(t, LAUNCH_TEMPLATE).items()}
    assert len(found) == 2, sorted(found)  # On-Demand and Spot
    return found


@pytest.mark.parametrize("on", ["app", "stack"])
def test_a_changing_app_tag_leaves_both_launch_templates_as_they_are(
    on: str, untagged: Template
) -> None:
    first, second = _app_template("sha-1111111", on=on), _app_template("sha-2222222", on=on)
    lts = _launch_templates(first)
    assert lts == _launch_templates(second)
    # Only the construct's own tags: what the untagged app has.
    assert lts == _launch_templates(untagged)
    for props in lts.values():
        assert TAG not in str(props)
    # The tag did reach the app's resources: the groups still pass it to their
    # instances at launch (a group's tags are no launch-template version).
    for lid, group in resources(first, ASG).items():
        tags = {t["Key"]: t for t in group["Properties"].get("Tags", [])}
        assert tags[TAG] == {"Key": TAG, "Value": "sha-1111111", "PropagateAtLaunch": True}, lid


def test_the_construct_keeps_its_own_launch_template_tags(untagged: Template) -> None:
    """The On-Demand template's Name tag (the construct path); the Spot one has none."""
    lts = _launch_templates(untagged)
    spot = next(lid for lid in lts if "Spot" in lid)
    (od,) = set(lts) - {spot}
    name = [{"Key": "Name", "Value": f"{SPOT_SPEC.service.name}/{CONSTRUCT_ID}/LaunchTemplate"}]
    assert lts[od]["TagSpecifications"] == [{"ResourceType": "launch-template", "Tags": name}]
    assert lts[od]["LaunchTemplateData"]["TagSpecifications"] == [
        {"ResourceType": "instance", "Tags": name},
        {"ResourceType": "volume", "Tags": name},
    ]
    assert "TagSpecifications" not in lts[spot]
    assert "TagSpecifications" not in lts[spot]["LaunchTemplateData"]


def test_the_documented_cdk_deploy_parameter_is_the_apps_ami_parameter(untagged: Template) -> None:
    """docs/template.md's `cdk deploy --parameters KEY=...` names the parameter both
    launch templates read, in a user's app as in `ecs-gpu synth`."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "template.md").read_text("utf-8")
    keys = set(re.findall(r"cdk deploy --parameters (\w+)=", doc))
    assert keys == {ami.PARAMETER}, keys
    param = untagged["Parameters"][ami.PARAMETER]
    assert param["Type"] == "AWS::EC2::Image::Id"
    assert "Default" not in param  # the spec pins no ami_id: a new stack must be given one
    images = [p["LaunchTemplateData"]["ImageId"] for p in _launch_templates(untagged).values()]
    assert images == [{"Ref": ami.PARAMETER}] * 2
