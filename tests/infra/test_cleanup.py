"""The release handler (infra/cleanup.py) that empties the GPU group when the stack is deleted.

Its logic against a fake client, its statuses against CloudFormation's model, and the
handler against moto in server mode, end to end with CloudFormation's response URL;
both as imported and as the inline copy the template carries (test_capacity_host.py).
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import botocore.session
import pytest
from botocore.stub import Stubber

from ecs_gpu.infra import cleanup

from .test_capacity_host import _inline_module

if TYPE_CHECKING:
    pass

T = dict[str, Any]


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
