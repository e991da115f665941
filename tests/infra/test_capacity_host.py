"""Capacity and delete safety on the synthesized template (infra/capacity.py).

Warm pool, gp3 performance, the ODCR AZ strategy and the release custom
resource, each asserted on the template ``validate`` builds (cfn-lint and
cdk-nag clean); the release handler itself is tested in test_cleanup.py.
"""

from __future__ import annotations

import inspect
import json
import types
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from ecs_gpu import host
from ecs_gpu.contracts.naming import Names
from ecs_gpu.infra import capacity, cleanup
from ecs_gpu.spec import Spec, parse_spec

from .conftest import ECR_IMAGE, G5
from .tpl import as_list, one, props, render, resources

if TYPE_CHECKING:
    from ecs_gpu.template.validate import ValidationReport

T = dict[str, Any]


WARM = (
    G5.replace('image = "vllm/vllm-openai:v0.11.0"', f'image = "{ECR_IMAGE}"').replace(
        "[capacity]\n",
        "[capacity]\nroot_volume_iops = 6000\nroot_volume_throughput_mibps = 500\n",
    )
    + "\n[capacity.warm_pool]\nmin_size = 2\nmax_prepared = 4\n"
)
WARM_PUBLIC = G5 + '\n[capacity.warm_pool]\npool_state = "Running"\n'
VARIANTS = {"warm": WARM, "warm-public": WARM_PUBLIC}


@pytest.fixture(scope="module")
def warm_reports() -> dict[str, tuple[Spec, ValidationReport]]:
    from ecs_gpu.template.validate import validate

    out = {}
    for name, text in VARIANTS.items():
        spec = parse_spec(text, f"{name}.toml")
        out[name] = (spec, validate(spec, path=name))
    return out


def _asg(t: T) -> tuple[str, dict[str, Any]]:
    return one(t, "AWS::AutoScaling::AutoScalingGroup")


def _lt_ebs(t: T) -> dict[str, Any]:
    data = props(t, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    ebs: dict[str, Any] = data["BlockDeviceMappings"][0]["Ebs"]
    return ebs


def _user_data(t: T) -> dict[str, Any]:
    data = props(t, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["UserData"]
    text = render(data["Fn::Base64"])
    doc: dict[str, Any] = yaml.safe_load(text)
    return doc


# --- validated clean -----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_warm_pool_variants_validate_clean(
    name: str, warm_reports: dict[str, tuple[Spec, ValidationReport]]
) -> None:
    # cfn-lint (every error and warning) and cdk-nag, nothing left unacknowledged.
    assert warm_reports[name][1].findings == []


# --- warm pool -----------------------------------------------------------------------


def test_warm_pool_on_the_gpu_group(
    warm_reports: dict[str, tuple[Spec, ValidationReport]],
) -> None:
    t = warm_reports["warm"][1].template
    asg_id, _ = _asg(t)
    pool = props(t, "AWS::AutoScaling::WarmPool")
    assert pool == {
        "AutoScalingGroupName": {"Ref": asg_id},
        "MinSize": 2,
        "MaxGroupPreparedCapacity": 4,
        "PoolState": "Stopped",
    }
    # ECS docs: an ECS group's warm pool cannot reuse instances on scale-in,
    # so the policy is left out unless the spec asks for it.
    assert "InstanceReusePolicy" not in pool
    running = props(warm_reports["warm-public"][1].template, "AWS::AutoScaling::WarmPool")
    assert running["PoolState"] == "Running"
    # max_prepared unset: the default, min_size (1), never AWS's max - desired.
    assert running["MinSize"] == 1
    assert running["MaxGroupPreparedCapacity"] == 1


def test_warm_pool_is_created_after_the_release_resource(
    warm_reports: dict[str, tuple[Spec, ValidationReport]],
) -> None:
    # A pool that fails during a create then rolls back through the release's
    # Delete (unprotect, empty) instead of hanging on protected instances.
    for name in ("warm", "warm-public"):
        t = warm_reports[name][1].template
        (pool_id,) = resources(t, "AWS::AutoScaling::WarmPool")
        (release_id,) = resources(t, "Custom::AsgRelease")
        assert release_id in as_list(t["Resources"][pool_id].get("DependsOn", [])), name


def test_launch_hook_is_on_the_group_itself(
    warm_reports: dict[str, tuple[Spec, ValidationReport]],
) -> None:
    spec, report = warm_reports["warm"]
    _, asg = _asg(report.template)
    # In the group's own properties, so it exists before the first launch.
    assert asg["Properties"]["LifecycleHookSpecificationList"] == [
        {
            "LifecycleHookName": host.warm_pool_hook_name(spec),
            "LifecycleTransition": "autoscaling:EC2_INSTANCE_LAUNCHING",
            "DefaultResult": "CONTINUE",
            "HeartbeatTimeout": host.hook_timeout_s(spec),
        }
    ]
    assert resources(report.template, "AWS::AutoScaling::LifecycleHook") == {}
    # One source: the heartbeat is the function the warm-pool script's budget
    # is checked against (tests/host/test_scripts.py), for every variant.
    for variant, (vspec, vreport) in warm_reports.items():
        (hook,) = _asg(vreport.template)[1]["Properties"]["LifecycleHookSpecificationList"]
        assert hook["HeartbeatTimeout"] == host.hook_timeout_s(vspec), variant


def test_user_data_installs_the_warm_pool_unit_and_flags(
    warm_reports: dict[str, tuple[Spec, ValidationReport]],
) -> None:
    spec, report = warm_reports["warm"]
    doc = _user_data(report.template)
    user_data = props(report.template, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    files = host.written_files(render(user_data["UserData"]["Fn::Base64"]))
    assert files[host.WARM_SCRIPT_PATH] == host.warm_pool_script(spec)
    assert f"{host.SYSTEMD_DIR}/{host.WARM_UNIT}" in files
    env = dict(line.split("=", 1) for line in files[host.ECS_CONFIG_PATH].splitlines())
    assert env["ECS_WARM_POOLS_CHECK"] == "true"
    assert env["ECS_IMAGE_PULL_BEHAVIOR"] == "prefer-cached"
    # The image is read from SSM at boot, not written into user data: an
    # image bump must not replace the fleet.
    # The files travel gz+b64: search their decoded text, not only the YAML.
    assert spec.service.image not in json.dumps(doc) + "".join(files.values())


def test_examples_have_no_warm_pool(t: T) -> None:
    assert resources(t, "AWS::AutoScaling::WarmPool") == {}
    assert "LifecycleHookSpecificationList" not in _asg(t)[1]["Properties"]
    assert resources(t, "AWS::SSM::Parameter") == {}


def test_image_parameter_and_warm_pool_permissions(
    warm_reports: dict[str, tuple[Spec, ValidationReport]],
) -> None:
    spec, report = warm_reports["warm"]
    t = report.template
    names = Names(spec.service.name)
    param_id, param = one(t, "AWS::SSM::Parameter")
    assert param["Properties"]["Name"] == host.image_parameter_name(spec)
    assert param["Properties"]["Value"] == spec.service.image
    pol_id, pol = next(
        (k, r)
        for k, r in resources(t, "AWS::IAM::Policy").items()
        if r["Properties"]["PolicyName"] == "ecs-gpu-warm-pool"
    )
    role_ref = pol["Properties"]["Roles"]
    inst_role = one(t, "AWS::IAM::InstanceProfile")[1]["Properties"]["Roles"]
    assert role_ref == inst_role  # the instance role, nothing else
    by_sid = {s["Sid"]: s for s in pol["Properties"]["PolicyDocument"]["Statement"]}
    assert set(by_sid) == {"CompleteLaunchHook", "ReadImageParameter", "EcrLogin", "EcrPull"}
    hook = by_sid["CompleteLaunchHook"]
    assert hook["Action"] == "autoscaling:CompleteLifecycleAction"
    assert render(hook["Resource"]).endswith(
        f":autoScalingGroup:*:autoScalingGroupName/{names.asg}"
    )
    assert by_sid["ReadImageParameter"]["Action"] == "ssm:GetParameter"
    assert param_id in json.dumps(by_sid["ReadImageParameter"]["Resource"])
    assert by_sid["EcrLogin"]["Resource"] == "*"
    assert render(by_sid["EcrPull"]["Resource"]).endswith(":repository/team/vllm")
    # Instances complete the hook at their first boot: the group waits for it.
    assert pol_id in as_list(_asg(t)[1]["DependsOn"])
    # A public image needs no registry permissions.
    public = warm_reports["warm-public"][1].template
    sids = {
        s["Sid"]
        for r in resources(public, "AWS::IAM::Policy").values()
        if r["Properties"]["PolicyName"] == "ecs-gpu-warm-pool"
        for s in r["Properties"]["PolicyDocument"]["Statement"]
    }
    assert sids == {"CompleteLaunchHook", "ReadImageParameter"}


# --- gp3 ---------------------------------------------------------------------------------


def test_gp3_iops_and_throughput_from_the_spec(
    warm_reports: dict[str, tuple[Spec, ValidationReport]],
) -> None:
    ebs = _lt_ebs(warm_reports["warm"][1].template)
    assert ebs["VolumeType"] == "gp3"
    assert (ebs["Iops"], ebs["Throughput"]) == (6000, 500)


def test_gp3_baseline_leaves_them_out(t: T, spec: Spec) -> None:
    # The examples' big models raise throughput alone (within the 3,000 IOPS baseline).
    ebs = _lt_ebs(t)
    assert spec.capacity.root_volume_iops is None
    assert "Iops" not in ebs
    assert ebs.get("Throughput") == spec.capacity.root_volume_throughput_mibps


# --- ODCR --------------------------------------------------------------------------------


def test_reservation_az_first_then_balanced(t: T, spec: Spec) -> None:
    p = _asg(t)[1]["Properties"]
    if spec.capacity.capacity_reservation_id is None:
        assert "AvailabilityZoneDistribution" not in p
        assert "CapacityReservationSpecification" not in p
    else:
        assert p["AvailabilityZoneDistribution"] == {
            "CapacityDistributionStrategy": "reservations-then-balanced"
        }
        assert p["CapacityReservationSpecification"]["CapacityReservationPreference"] == (
            "capacity-reservations-first"
        )


def test_some_example_has_a_reservation(specs: dict[str, Spec]) -> None:
    # Otherwise the ODCR branch above would never run.
    assert any(s.capacity.capacity_reservation_id for s in specs.values())


# --- delete safety: the release custom resource --------------------------------------------


def test_release_runs_after_the_capacity_provider_and_before_the_group(t: T) -> None:
    asg_id, _ = _asg(t)
    cr_id, cr = one(t, "Custom::AsgRelease")
    fn_id, fn = one(t, "AWS::Lambda::Function")
    cp = one(t, "AWS::ECS::CapacityProvider")[1]
    # Refs the group: created after it, deleted before it.
    assert cr["Properties"]["AutoScalingGroupName"] == {"Ref": asg_id}
    assert cr["Properties"]["ServiceToken"] == {"Fn::GetAtt": [fn_id, "Arn"]}
    # The capacity provider goes first on delete, so ECS cannot protect again.
    assert cr_id in as_list(cp["DependsOn"])
    pol_id = next(
        k
        for k, r in resources(t, "AWS::IAM::Policy").items()
        if r["Properties"]["PolicyName"] == "ecs-gpu-release"
    )
    log_id = fn["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    # Its permissions and log group outlive its Delete call.
    assert {pol_id, log_id} <= set(as_list(cr["DependsOn"]))
    assert cr["DeletionPolicy"] == "Delete"
    assert int(cr["Properties"]["ServiceTimeout"]) < 3600


def _inline_module() -> types.ModuleType:
    """The function's inline code, loaded as Lambda loads index.py."""
    module = types.ModuleType("index")
    exec(compile(capacity.release_source(), "index.py", "exec"), module.__dict__)
    return module


def test_release_function_is_the_tested_source_inline(t: T) -> None:
    fn = one(t, "AWS::Lambda::Function")[1]["Properties"]
    assert fn["Code"] == {"ZipFile": capacity.release_source()}
    # The same code as cleanup.py, only docstrings and comments dropped; the
    # moto tests below run this inline copy too.
    inline = _inline_module()
    assert {n for n in vars(inline) if not n.startswith("_")} >= {"handler", "release", "handle"}
    assert len(capacity.release_source()) < 0.6 * len(inspect.getsource(cleanup))
    assert '"""' not in capacity.release_source()
    assert fn["Handler"] == "index.handler"
    assert fn["Runtime"] == capacity.RELEASE_RUNTIME.name
    assert fn["Timeout"] == capacity.RELEASE_TIMEOUT_S


def test_bare_source_keeps_behaviour_and_drops_typing() -> None:
    source = (
        '"""Doc."""\n'
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING, Final\n"
        "if TYPE_CHECKING:\n"
        "    from x import Y\n"
        "LIMIT: Final = 2  # why\n"
        "pending: Y\n"
        "class Box:\n"
        '    """Doc."""\n'
        "    size: int = 3\n"
        "def f(a: Y, *rest: int, k: str = 'a\\nb', **kw: Y) -> list[Y]:\n"
        '    """Doc."""\n'
        "    if a:\n"
        "        return [LIMIT, Box.size, k, len(rest), sorted(kw)]\n"
        "    return []\n"
    )
    bare = capacity.bare_source(source)
    dropped = ("typing", "TYPE_CHECKING", "Doc", "Final", "->", ": Y", "int", "why")
    assert [w for w in dropped if w in bare] == []
    assert "\n  return [LIMIT" in bare  # one space a level
    module = types.ModuleType("bare")
    exec(compile(bare, "bare.py", "exec"), module.__dict__)
    assert module.f(1, 5, 6, x=1) == [2, 3, "a\nb", 2, ["x"]]
    assert module.f(0) == []


def test_release_permissions_are_this_group_and_stack_only(t: T, spec: Spec) -> None:
    names = Names(spec.service.name)
    pol = next(
        r
        for r in resources(t, "AWS::IAM::Policy").values()
        if r["Properties"]["PolicyName"] == "ecs-gpu-release"
    )
    fn = one(t, "AWS::Lambda::Function")[1]["Properties"]
    assert pol["Properties"]["Roles"] == [{"Ref": fn["Role"]["Fn::GetAtt"][0]}]
    by_sid = {s["Sid"]: s for s in pol["Properties"]["PolicyDocument"]["Statement"]}
    change = by_sid["EmptyThisGroup"]
    assert sorted(change["Action"]) == [
        "autoscaling:DeleteLifecycleHook",
        "autoscaling:SetInstanceProtection",
        "autoscaling:UpdateAutoScalingGroup",
    ]
    assert render(change["Resource"]).endswith(
        f":autoScalingGroup:*:autoScalingGroupName/{names.asg}"
    )
    assert by_sid["DescribeGroups"]["Resource"] == "*"
    # Its own stack's status, nothing else of CloudFormation.
    assert by_sid["ReadOwnStack"]["Action"] == "cloudformation:DescribeStacks"
    assert by_sid["ReadOwnStack"]["Resource"] == {"Ref": "AWS::StackId"}
    assert set(by_sid) == {"EmptyThisGroup", "DescribeGroups", "ReadOwnStack", "WriteOwnLogs"}
    assert all(a.startswith("autoscaling:Describe") for a in by_sid["DescribeGroups"]["Action"])
    logs = by_sid["WriteOwnLogs"]
    assert logs["Resource"] != "*"
    assert "ReleaseLogs" in json.dumps(logs["Resource"])
    # No managed policy (AWSLambdaBasicExecutionRole writes logs anywhere).
    role = t["Resources"][fn["Role"]["Fn::GetAtt"][0]]["Properties"]
    assert "ManagedPolicyArns" not in role
