"""Capacity and delete safety on the synthesized template (issue 8 item 3; issue 9 items 1, 6, 9).

Warm pool, gp3 performance, the ODCR AZ strategy and the release custom
resource, each asserted on the template ``validate`` builds (cfn-lint and
cdk-nag clean); the release handler's logic against a fake client and
against moto in server mode, end to end with CloudFormation's response URL.
"""

from __future__ import annotations

import http.server
import inspect
import json
import threading
import types
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import botocore.session
import pytest
import yaml
from botocore.stub import Stubber

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


# --- the release handler: plain logic ----------------------------------------------------


class FakeAutoScaling:
    """Records calls; instances unprotect when SetInstanceProtection is called."""

    def __init__(self, instances: dict[str, bool] | None, hooks: list[str]) -> None:
        self.instances = instances  # None: the group does not exist
        self.hooks = hooks
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def describe_auto_scaling_groups(self, **kw: Any) -> dict[str, Any]:
        self.calls.append(("describe", kw))
        if self.instances is None:
            return {"AutoScalingGroups": []}
        inst = [{"InstanceId": i, "ProtectedFromScaleIn": p} for i, p in self.instances.items()]
        return {"AutoScalingGroups": [{"Instances": inst}]}

    def update_auto_scaling_group(self, **kw: Any) -> None:
        self.calls.append(("update", kw))

    def describe_lifecycle_hooks(self, **kw: Any) -> dict[str, Any]:
        return {"LifecycleHooks": [{"LifecycleHookName": h} for h in self.hooks]}

    def delete_lifecycle_hook(self, **kw: Any) -> None:
        self.calls.append(("delete_hook", kw))

    def set_instance_protection(self, **kw: Any) -> None:
        self.calls.append(("protect", kw))
        assert self.instances is not None
        for i in kw["InstanceIds"]:
            self.instances[i] = kw["ProtectedFromScaleIn"]


def test_release_stops_new_protection_before_clearing_the_flags() -> None:
    ids = {f"i-{n:017x}": n % 3 != 0 for n in range(120)}
    fake = FakeAutoScaling(dict(ids), ["ecs-managed-draining-termination-hook-x", "mine"])
    released = cleanup.release(fake, "g")  # type: ignore[arg-type]
    assert released == [i for i, p in ids.items() if p]
    kinds = [c[0] for c in fake.calls]
    assert kinds.index("update") < kinds.index("protect")
    assert fake.calls[kinds.index("update")][1] == {
        "AutoScalingGroupName": "g",
        "MinSize": 0,
        "DesiredCapacity": 0,
        "NewInstancesProtectedFromScaleIn": False,
    }
    batches = [c[1]["InstanceIds"] for c in fake.calls if c[0] == "protect"]
    assert all(len(b) <= cleanup.PROTECTION_BATCH for b in batches)
    assert fake.instances is not None and not any(fake.instances.values())
    # Only ECS's draining hook goes; a hook of the user's stays.
    assert [c[1]["LifecycleHookName"] for c in fake.calls if c[0] == "delete_hook"] == [
        "ecs-managed-draining-termination-hook-x"
    ]


def test_release_of_a_missing_group_does_nothing() -> None:
    fake = FakeAutoScaling(None, [])
    assert cleanup.release(fake, "gone") == []  # type: ignore[arg-type]
    assert [c[0] for c in fake.calls] == ["describe"]


STACK_ID = (
    "arn:aws:cloudformation:us-east-1:123456789012:stack/s/5b8e3f40-c7a1-11f0-9d3e-0a1b2c3d4e5f"
)
# What CloudFormation's status is when it sends this resource a Delete:
# the stack is deleted, a failed create rolls back, or (leave the group
# alone) an update removes or replaces the resource, or an update rolls back.
RELEASING = ["DELETE_IN_PROGRESS", "ROLLBACK_IN_PROGRESS"]
KEEPING = [
    "UPDATE_COMPLETE_CLEANUP_IN_PROGRESS",
    "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS",
    "UPDATE_ROLLBACK_IN_PROGRESS",
    "UPDATE_IN_PROGRESS",
    "IMPORT_ROLLBACK_IN_PROGRESS",
    "CREATE_COMPLETE",
]


def _stack_statuses() -> list[str]:
    """CloudFormation's StackStatus values, from botocore's model."""
    model = botocore.session.get_session().get_service_model("cloudformation")
    enum: list[str] = model.shape_for("StackStatus").enum
    return enum


def test_release_statuses_are_real_and_every_status_is_decided() -> None:
    statuses = _stack_statuses()
    assert set(cleanup.RELEASE_ON) == set(RELEASING)
    assert set(RELEASING + KEEPING) <= set(statuses)
    # Only a delete or a create's rollback of the whole stack empties the group.
    assert [s for s in statuses if s in cleanup.RELEASE_ON] == [
        s for s in statuses if s in ("ROLLBACK_IN_PROGRESS", "DELETE_IN_PROGRESS")
    ]


def _cfn_client() -> Any:
    return boto3.session.Session().client(
        "cloudformation", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


def _cfn(status: str | None, stack_id: str = STACK_ID) -> tuple[Any, Stubber]:
    """A real CloudFormation client answered by botocore's Stubber (request and
    response checked against botocore's model); ``status`` None: no call expected."""
    cfn = _cfn_client()
    stubber = Stubber(cfn)
    if status is not None:
        stack = {
            "StackId": stack_id,
            "StackName": "s",
            "CreationTime": "2026-12-01T00:00:00Z",
            "StackStatus": status,
        }
        stubber.add_response("describe_stacks", {"Stacks": [stack]}, {"StackName": stack_id})
    stubber.activate()
    return cfn, stubber


@pytest.mark.parametrize("status", RELEASING)
def test_delete_of_the_stack_releases_the_group(status: str) -> None:
    fake = FakeAutoScaling({"i-1": True, "i-2": False}, [])
    cfn, stubber = _cfn(status)
    got = cleanup.handle(_event("Delete"), fake, cfn)  # type: ignore[arg-type]
    assert got == ("SUCCESS", "g: scaled to 0, 1 instance(s) unprotected")
    assert fake.instances == {"i-1": False, "i-2": False}
    stubber.assert_no_pending_responses()


@pytest.mark.parametrize("status", KEEPING)
def test_delete_in_an_update_leaves_the_group_in_service(status: str) -> None:
    # An update that removes or replaces only this resource, or rolls back:
    # the group stays and serves; emptying it would take the fleet down.
    fake = FakeAutoScaling({"i-1": True}, [])
    cfn, stubber = _cfn(status)
    got = cleanup.handle(_event("Delete"), fake, cfn)  # type: ignore[arg-type]
    assert got == ("SUCCESS", f"g left in service: stack is {status}, not deleted")
    assert fake.calls == [] and fake.instances == {"i-1": True}
    stubber.assert_no_pending_responses()


def test_unreadable_stack_status_fails_and_touches_nothing() -> None:
    fake = FakeAutoScaling({"i-1": True}, [])
    cfn = _cfn_client()
    stubber = Stubber(cfn)
    stubber.add_client_error(
        "describe_stacks",
        service_error_code="AccessDenied",
        service_message="not authorized to perform: cloudformation:DescribeStacks",
        http_status_code=403,
        expected_params={"StackName": STACK_ID},
    )
    with stubber:
        status, reason = cleanup.handle(_event("Delete"), fake, cfn)  # type: ignore[arg-type]
    assert status == "FAILED"
    assert "could not release g" in reason and "cloudformation:DescribeStacks" in reason
    assert fake.calls == []


def _event(kind: str, url: str = "http://unused", stack_id: str = STACK_ID) -> dict[str, Any]:
    return {
        "RequestType": kind,
        "ResponseURL": url,
        "StackId": stack_id,
        "RequestId": "r-1",
        "LogicalResourceId": "GpuServiceAsgRelease",
        "ResourceType": "Custom::AsgRelease",
        "ResourceProperties": {"AutoScalingGroupName": "g"},
    }


@pytest.mark.parametrize("kind", ["Create", "Update"])
def test_create_and_update_touch_nothing(kind: str) -> None:
    fake = FakeAutoScaling({"i-1": True}, [])
    cfn, stubber = _cfn(None)  # any call would find no stubbed response and raise
    assert cleanup.handle(_event(kind), fake, cfn)[0] == "SUCCESS"  # type: ignore[arg-type]
    assert fake.calls == []
    stubber.assert_no_pending_responses()


def test_a_failed_release_is_reported_not_swallowed() -> None:
    class Broken(FakeAutoScaling):
        def update_auto_scaling_group(self, **kw: Any) -> None:
            raise RuntimeError("AccessDenied")

    cfn, _ = _cfn("DELETE_IN_PROGRESS")
    status, reason = cleanup.handle(_event("Delete"), Broken({"i-1": True}, []), cfn)  # type: ignore[arg-type]
    assert status == "FAILED"
    assert "AccessDenied" in reason and "g" in reason


# --- the handler against moto, answering a stand-in CloudFormation ------------------------


@pytest.fixture
def response_url() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local HTTP server standing in for CloudFormation's pre-signed S3 response URL."""
    got: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            n = int(self.headers["Content-Length"])
            got.append(json.loads(self.rfile.read(n)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/cfn-response", got
    finally:
        server.shutdown()


def _protected_group(n: int) -> Any:
    client = boto3.client("autoscaling")
    ec2 = boto3.client("ec2")
    ami = ec2.describe_images()["Images"][0]["ImageId"]
    ec2.create_launch_template(
        LaunchTemplateName="gpu-lt",
        LaunchTemplateData={"ImageId": ami, "InstanceType": "g5.xlarge"},
    )
    client.create_auto_scaling_group(
        AutoScalingGroupName="g",
        LaunchTemplate={"LaunchTemplateName": "gpu-lt"},
        MinSize=n,
        MaxSize=n + 2,
        DesiredCapacity=n,
        AvailabilityZones=["us-east-1a"],
        NewInstancesProtectedFromScaleIn=True,
    )
    return client


@pytest.fixture(params=["module", "inline"])
def code(request: pytest.FixtureRequest) -> Any:
    """cleanup.py as imported, and the inline copy the template carries."""
    return cleanup if request.param == "module" else _inline_module()


def _moto_stack(monkeypatch: pytest.MonkeyPatch, status: str | None) -> str:
    """A stack in moto, seen by the handler's own boto3 clients with ``status``.

    moto runs every stack operation to its end inside the call, so a stack
    is never seen DELETE_IN_PROGRESS, ROLLBACK_IN_PROGRESS or in an update's
    cleanup. The handler's real DescribeStacks reaches moto; an after-call
    hook on boto3's default session then sets only StackStatus (a value of
    botocore's StackStatus enum). ``status`` None: moto's own (CREATE_COMPLETE).
    """
    session = boto3.session.Session()
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", session)
    body = json.dumps({"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}})
    stack_id: str = session.client("cloudformation").create_stack(StackName="s", TemplateBody=body)[
        "StackId"
    ]
    if status is not None:
        assert status in _stack_statuses()

        def in_progress(parsed: dict[str, Any], **_: Any) -> None:
            for stack in parsed.get("Stacks", []):
                stack["StackStatus"] = status

        session.events.register("after-call.cloudformation.DescribeStacks", in_progress)
    return stack_id


def test_handler_unprotects_and_empties_the_group_on_moto(
    aws: str,
    response_url: tuple[str, list[dict[str, Any]]],
    code: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = _protected_group(3)
    before = client.describe_auto_scaling_groups(AutoScalingGroupNames=["g"])
    assert [i["ProtectedFromScaleIn"] for i in before["AutoScalingGroups"][0]["Instances"]] == [
        True
    ] * 3
    stack_id = _moto_stack(monkeypatch, "DELETE_IN_PROGRESS")
    url, got = response_url
    code.handler(_event("Delete", url, stack_id), None)
    assert len(got) == 1
    answer = got[0]
    assert answer["Status"] == "SUCCESS", answer
    assert answer["RequestId"] == "r-1" and answer["LogicalResourceId"] == "GpuServiceAsgRelease"
    assert "3 instance(s) unprotected" in answer["Reason"]
    g = client.describe_auto_scaling_groups(AutoScalingGroupNames=["g"])["AutoScalingGroups"][0]
    assert (g["MinSize"], g["DesiredCapacity"]) == (0, 0)
    assert g["NewInstancesProtectedFromScaleIn"] is False
    # moto keeps terminated instances listed only while they drain; any left are unprotected.
    assert not any(i["ProtectedFromScaleIn"] for i in g["Instances"])


@pytest.mark.parametrize("status", ["UPDATE_COMPLETE_CLEANUP_IN_PROGRESS", None])
def test_handler_leaves_the_group_in_an_update_on_moto(
    aws: str,
    response_url: tuple[str, list[dict[str, Any]]],
    code: Any,
    monkeypatch: pytest.MonkeyPatch,
    status: str | None,
) -> None:
    # An update removed or replaced the release resource: the fleet keeps serving.
    client = _protected_group(3)
    stack_id = _moto_stack(monkeypatch, status)
    url, got = response_url
    code.handler(_event("Delete", url, stack_id), None)
    assert got[0]["Status"] == "SUCCESS", got[0]
    assert f"stack is {status or 'CREATE_COMPLETE'}, not deleted" in got[0]["Reason"]
    g = client.describe_auto_scaling_groups(AutoScalingGroupNames=["g"])["AutoScalingGroups"][0]
    assert (g["MinSize"], g["DesiredCapacity"]) == (3, 3)
    assert g["NewInstancesProtectedFromScaleIn"] is True
    assert [i["ProtectedFromScaleIn"] for i in g["Instances"]] == [True] * 3


def test_handler_answers_failed_when_it_cannot_act(
    aws: str,
    response_url: tuple[str, list[dict[str, Any]]],
    monkeypatch: pytest.MonkeyPatch,
    code: Any,
) -> None:
    # An endpoint nobody serves: the call fails, and CloudFormation still hears why.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    url, got = response_url
    code.handler(_event("Delete", url), None)
    assert got[0]["Status"] == "FAILED"
    assert "could not release g" in got[0]["Reason"]


def test_handler_on_a_deleted_group_succeeds(
    aws: str,
    response_url: tuple[str, list[dict[str, Any]]],
    code: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack_id = _moto_stack(monkeypatch, "ROLLBACK_IN_PROGRESS")
    url, got = response_url
    code.handler(_event("Delete", url, stack_id), None)
    assert got[0]["Status"] == "SUCCESS"
    assert "0 instance(s)" in got[0]["Reason"]
