"""The GpuService construct (infra/service.py): a user's own CDK app with it makes the same
resources as `ecs-gpu synth`, and the cluster and ECS service it builds, on every example."""

from __future__ import annotations

import tempfile
from typing import Any

import pytest

from ecs_gpu.contracts import ami
from ecs_gpu.contracts.naming import CONSTRUCT_ID, Names
from ecs_gpu.errors import BadInputError, SpecError
from ecs_gpu.node import ensure_node
from ecs_gpu.spec import Spec

from .tpl import as_list, one, props

T = dict[str, Any]

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


# --- two services in one stack, one spec in two stacks ------------------------------------

# Properties that hold a name AWS keeps unique per account and Region.
PHYSICAL_NAME_KEYS = {
    "ClusterName",
    "ServiceName",
    "AutoScalingGroupName",
    "Family",
    "LogGroupName",
    "DashboardName",
    "AlarmName",
    "RoleName",
    "LaunchTemplateName",
    "TopicName",
    "FunctionName",
    "Name",  # capacity provider, load balancer, target group
}


def _physical_names(t: dict[str, Any], prefix: str = "") -> set[str]:
    return {
        v
        for lid, r in t["Resources"].items()
        if lid.startswith(prefix)
        for k, v in r.get("Properties", {}).items()
        if k in PHYSICAL_NAME_KEYS and isinstance(v, str)
    }


def _checked(app: Any, stack: Any) -> dict[str, Any]:
    """The stack's template after synth, with no cfn-lint or cdk-nag finding."""
    from ecs_gpu.template.validate import cfn_lint_findings, nag_findings, synth_findings

    artifact = app.synth().get_stack_by_name(stack.stack_name)
    template: dict[str, Any] = artifact.template
    findings = [
        *synth_findings(list(artifact.messages)),
        *cfn_lint_findings(template),
        *nag_findings(stack),
    ]
    assert findings == [], [(f.id, f.resource, f.message) for f in findings]
    return template


def test_two_services_in_one_stack_do_not_collide(specs: dict[str, Spec]) -> None:
    ensure_node()
    from aws_cdk import App, Stack

    from ecs_gpu import GpuService

    spec = specs["g5-vllm.toml"]
    with tempfile.TemporaryDirectory(prefix="ecs-gpu-two-") as outdir:
        app = App(outdir=outdir)
        stack = Stack(app, "shared")
        a = GpuService(stack, "Blue", spec=spec)
        b = GpuService(stack, "Green", spec=spec)
        t = _checked(app, stack)
    blue, green = _physical_names(t, "Blue"), _physical_names(t, "Green")
    assert blue and green
    assert not blue & green, blue & green
    assert a.names.cluster != b.names.cluster
    # Outputs get ids from the construct path, one set per service.
    assert len(t["Outputs"]) == 2 * len({k for k in t["Outputs"] if k.startswith("Blue")})
    # One AMI parameter for the stack (the id deploy passes), used by both fleets.
    assert set(t["Parameters"]) - BOOTSTRAP_ONLY == {ami.PARAMETER}
    images = [
        r["Properties"]["LaunchTemplateData"]["ImageId"]
        for r in t["Resources"].values()
        if r["Type"] == "AWS::EC2::LaunchTemplate"
    ]
    assert images == [{"Ref": ami.PARAMETER}] * 2


def test_two_services_in_one_stack_pinning_different_amis_is_refused(
    specs: dict[str, Spec],
) -> None:
    ensure_node()
    from aws_cdk import App, Stack

    from ecs_gpu import GpuService

    spec = specs["g5-vllm.toml"]

    def pinned(image_id: str) -> Spec:
        return spec.model_copy(
            update={"capacity": spec.capacity.model_copy(update={"ami_id": image_id})}
        )

    with tempfile.TemporaryDirectory(prefix="ecs-gpu-two-amis-") as outdir:
        stack = Stack(App(outdir=outdir), "shared")
        GpuService(stack, "Blue", spec=pinned("ami-0123456789abcdef0"))
        with pytest.raises(BadInputError, match=r"\[capacity\] ami_id 'ami-0fedcba9876543210'"):
            GpuService(stack, "Green", spec=pinned("ami-0fedcba9876543210"))


def test_one_spec_in_two_stacks_does_not_collide(specs: dict[str, Spec]) -> None:
    ensure_node()
    from aws_cdk import App, Stack

    from ecs_gpu import GpuService

    spec = specs["g5-vllm.toml"]
    with tempfile.TemporaryDirectory(prefix="ecs-gpu-two-stacks-") as outdir:
        app = App(outdir=outdir)
        prod = Stack(app, spec.service.name)
        staging = Stack(app, f"{spec.service.name}-staging")
        odd = Stack(app, "VllmCanary")  # not a valid service name: hashed
        services = [GpuService(s, CONSTRUCT_ID, spec=spec) for s in (prod, staging, odd)]
        templates = [_checked(app, s) for s in (prod, staging, odd)]
    names = [_physical_names(t) for t in templates]
    for i, left in enumerate(names):
        for right in names[i + 1 :]:
            assert not left & right, left & right
    # The default stack keeps the spec's names (deploy, verify and doctor find
    # them); `--stack` names take the stack's name.
    assert services[0].names.cluster == spec.service.name
    assert services[1].names.cluster == f"{spec.service.name}-staging"
    assert services[2].names.cluster.startswith(spec.service.name + "-")
    # Standalone stacks keep the fixed output keys deploy and verify read.
    assert all("ClusterName" in t["Outputs"] for t in templates)


def test_the_construct_refuses_a_spec_that_breaks_a_rule(specs: dict[str, Spec]) -> None:
    # A Spec built in Python skips load_spec's cross-field rules; the construct applies them.
    ensure_node()
    from aws_cdk import App, Stack

    from ecs_gpu import GpuService

    data = specs["g5-vllm.toml"].model_dump()
    data["service"]["environment"] = {"HF_HOME": "${Token[TOKEN.1]}"}
    with tempfile.TemporaryDirectory(prefix="ecs-gpu-user-app-") as outdir:
        stack = Stack(App(outdir=outdir), "vllm-g5")
        with pytest.raises(SpecError) as exc:
            GpuService(stack, CONSTRUCT_ID, spec=Spec.model_validate(data))
    (line,) = exc.value.problems
    assert line.startswith("spec: service.environment.HF_HOME = ") and "CDK token" in line


# --- service ----------------------------------------------------------------------------


def test_service_strategy_placement_breaker_no_desired_count(t: T, spec: Spec) -> None:
    cp_id, _ = one(t, "AWS::ECS::CapacityProvider")
    cluster_id, _ = one(t, "AWS::ECS::Cluster")
    p = props(t, "AWS::ECS::Service")
    assert p["ServiceName"] == Names(spec.service.name).service
    assert p["Cluster"] == {"Ref": cluster_id}
    assert "LaunchType" not in p
    assert [s["CapacityProvider"] for s in p["CapacityProviderStrategy"]] == [{"Ref": cp_id}]
    assert {"Type": "memberOf", "Expression": "attribute:ecs.instance-type == "
            f"{spec.capacity.instance_type}"} in p["PlacementConstraints"]  # fmt: skip
    breaker = p["DeploymentConfiguration"]["DeploymentCircuitBreaker"]
    assert breaker == {"Enable": True, "Rollback": True}
    # A redeploy must never reset the count autoscaling set.
    assert "DesiredCount" not in p
    assert p["NetworkConfiguration"]["AwsvpcConfiguration"]["AssignPublicIp"] == "DISABLED"


def test_service_waits_for_capacity_provider_association(t: T) -> None:
    assoc_id, _ = one(t, "AWS::ECS::ClusterCapacityProviderAssociations")
    _, service = one(t, "AWS::ECS::Service")
    assert assoc_id in as_list(service.get("DependsOn", []))


def test_cluster_container_insights(t: T, spec: Spec) -> None:
    p = props(t, "AWS::ECS::Cluster")
    assert p["ClusterName"] == Names(spec.service.name).cluster
    assert {"Name": "containerInsights", "Value": "enabled"} in p["ClusterSettings"]
