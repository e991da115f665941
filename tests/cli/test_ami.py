"""diff and deploy keep the GPU AMI the stack runs (docs/operate.md "The AMI").

The real synthesized g5 template goes into moto through the CLI (``main``).
Two images are registered in moto's EC2, so DescribeImages answers their
names and creation dates as EC2 would. What moto lacks: its SSM holds a
fixed copy of the public parameter
/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id
and refuses writes under /aws/, so AWS publishing a new GPU AMI cannot be
acted out there; a botocore ``before-call`` hook on the CLI's SSM client
answers GetParameter AWS-shaped (the output shape of botocore's ssm model)
with whichever image the test says is published. Two more gaps, filled on
the CLI's CloudFormation client: moto lists no change for an update that
changes only a parameter's value (:class:`ParameterOnlyChanges`), and its
DescribeStacks leaves out an SSM-typed parameter's ResolvedValue
(:meth:`Published.resolve`).
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import destroy as ds
from ecs_gpu.cli import main, options, prelude
from ecs_gpu.contracts import ami
from ecs_gpu.errors import EXIT_BAD_INPUT, EXIT_OK
from ecs_gpu.template import limits as template
from support.stubbed import modify_change

from .conftest import EXAMPLE_SPEC, NAMES, Clients

SPEC = str(EXAMPLE_SPEC)
STACK = NAMES.stack
OLD_NAME = "al2023-ami-ecs-gpu-hvm-2023.0.20261001-kernel-6.1-x86_64-ebs"
NEW_NAME = "al2023-ami-ecs-gpu-hvm-2023.0.20261113-kernel-6.1-x86_64-ebs"


class Published:
    """The recommended AMI the public parameter holds; the hook answers it."""

    def __init__(self, image_id: str) -> None:
        self.image_id = image_id
        self.reads = 0
        # The AMI an older ecs-gpu's SSM-typed parameter resolved to (see resolve).
        self.legacy_resolved: str | None = None

    def resolve(self, parsed: dict[str, Any], **_: Any) -> None:
        """DescribeStacks' ResolvedValue of an SSM-typed parameter, which moto leaves out."""
        for stack in parsed.get("Stacks", []):
            for p in stack.get("Parameters", []):
                if p["ParameterKey"] == ami.LEGACY_PARAMETER and self.legacy_resolved:
                    p["ResolvedValue"] = self.legacy_resolved

    def answer(self, model: Any, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        if model.name != "GetParameter":
            return None
        self.reads += 1
        parsed = {
            "Parameter": {
                "Name": ami.RECOMMENDED_SSM_PARAMETER,
                "Type": "String",
                "Value": self.image_id,
                "Version": 42,
                "LastModifiedDate": datetime.now(UTC),
                "ARN": f"arn:aws:ssm:us-east-1::parameter{ami.RECOMMENDED_SSM_PARAMETER}",
                "DataType": "text",
            },
            "ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {}},
        }
        return AWSResponse(ami.RECOMMENDED_SSM_PARAMETER, 200, {}, None), parsed


def _parameter_changes(lt_id: str, asg_id: str) -> list[dict[str, Any]]:
    """The changes CloudFormation lists when only the AMI parameter's value changes.

    The launch template's data references the parameter (a new version with the
    new ImageId); the group references the template's LatestVersionNumber.
    """

    def change(logical_id: str, rtype: str, name: str, source: str) -> dict[str, Any]:
        by_parameter = source == "ParameterReference"
        return modify_change(
            logical_id,
            rtype,
            name,
            evaluation="Static" if by_parameter else "Dynamic",
            source=source,
            causing_entity=ami.PARAMETER if by_parameter else lt_id,
        )

    return [
        change(lt_id, "AWS::EC2::LaunchTemplate", "LaunchTemplateData", "ParameterReference"),
        change(asg_id, "AWS::AutoScaling::AutoScalingGroup", "LaunchTemplate", "ResourceAttribute"),
    ]


class ParameterOnlyChanges:
    """moto lists no change for an update that changes only a parameter's value.

    Its change set diffs the template text alone (Changes is empty although the
    AMI differs), so deploy would see nothing to execute. This hook, on the
    CLI's CloudFormation client, adds what CloudFormation lists then
    (:func:`_parameter_changes`, shapes from botocore's cloudformation model)
    when the change set's AMI differs from the stack's.
    """

    def __init__(self, template: dict[str, Any]) -> None:
        types = {r["Type"]: k for k, r in template["Resources"].items()}
        self.changes = _parameter_changes(
            types["AWS::EC2::LaunchTemplate"], types["AWS::AutoScaling::AutoScalingGroup"]
        )
        self.sent: dict[str, str] = {}

    def record(self, params: dict[str, Any], **_: Any) -> None:
        self.sent = {p["ParameterKey"]: p["ParameterValue"] for p in params.get("Parameters", [])}

    def add(self, parsed: dict[str, Any], **_: Any) -> None:
        if parsed.get("Status") != "CREATE_COMPLETE" or parsed.get("Changes"):
            return
        stacks = boto3.Session().client("cloudformation").describe_stacks(StackName=STACK)
        running = {
            p["ParameterKey"]: p["ParameterValue"] for p in stacks["Stacks"][0]["Parameters"]
        }
        if self.sent.get(ami.PARAMETER) != running.get(ami.PARAMETER):
            parsed["Changes"] = self.changes


@pytest.fixture
def images(clients: Clients) -> tuple[str, str]:
    """An older and a newer ECS GPU AMI, registered in moto's EC2 in that order."""
    ec2 = boto3.Session().client("ec2")
    old = ec2.register_image(Name=OLD_NAME)["ImageId"]
    new = ec2.register_image(Name=NEW_NAME)["ImageId"]
    return old, new


@pytest.fixture
def published(
    images: tuple[str, str], g5_for_moto: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> Published:
    """The CLI's SSM clients answer GetParameter from here; synth is the session's one.

    Its CloudFormation clients list the changes of a parameter-only update
    (:class:`ParameterOnlyChanges`).
    """
    pub = Published(images[0])
    real = options.client
    changes = ParameterOnlyChanges(g5_for_moto)

    def hooked(session: Any, service: str, **kw: Any) -> Any:
        c = real(session, service, **kw)
        if service == "ssm":
            c.meta.events.register("before-call.ssm.GetParameter", pub.answer)
        if service == "cloudformation":
            c.meta.events.register(
                "before-parameter-build.cloudformation.CreateChangeSet", changes.record
            )
            c.meta.events.register("after-call.cloudformation.DescribeChangeSet", changes.add)
            c.meta.events.register("after-call.cloudformation.DescribeStacks", pub.resolve)
        return c

    monkeypatch.setattr(options, "client", hooked)
    # The template `ecs-gpu deploy` synthesizes for this spec and stack, made once.
    monkeypatch.setattr(prelude, "synth_template", lambda spec, stack=None, **_: g5_for_moto)
    return pub


def _out(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    c = capsys.readouterr()
    return " ".join(c.out.split()), " ".join(c.err.split())


def _stack_ami(clients: Clients) -> str:
    params = clients.cfn.describe_stacks(StackName=STACK)["Stacks"][0]["Parameters"]
    (value,) = [p["ParameterValue"] for p in params if p["ParameterKey"] == ami.PARAMETER]
    return value


def _launch_template(clients: Clients) -> tuple[str, int]:
    """The stack's launch template: its latest version's ImageId, and how many versions."""
    ec2 = boto3.Session().client("ec2")
    (lt,) = [
        r.physical_id
        for r in ds.stack_resources(clients.cfn, STACK)
        if r.resource_type == "AWS::EC2::LaunchTemplate"
    ]
    versions = ec2.describe_launch_template_versions(LaunchTemplateId=lt)["LaunchTemplateVersions"]
    latest = max(versions, key=lambda v: v["VersionNumber"])
    return latest["LaunchTemplateData"]["ImageId"], len(versions)


def deploy(*extra: str) -> int:
    return main(["deploy", SPEC, "--yes", "--poll-interval", "0.01", *extra])


def test_a_new_stack_gets_the_recommended_ami(
    clients: Clients,
    images: tuple[str, str],
    published: Published,
    capsys: pytest.CaptureFixture[str],
) -> None:
    old, _ = images
    assert main(["diff", SPEC]) == EXIT_OK
    _, err = _out(capsys)
    assert f"AMI: {old} ({OLD_NAME}, " in err and "the recommended ECS GPU AMI (new stack)" in err
    assert deploy() == EXIT_OK
    assert _stack_ami(clients) == old
    assert _launch_template(clients) == (old, 1)
    assert published.reads == 2


def test_a_newer_published_ami_leaves_the_fleet_alone_until_update_ami(
    clients: Clients,
    images: tuple[str, str],
    published: Published,
    capsys: pytest.CaptureFixture[str],
) -> None:
    old, new = images
    assert deploy() == EXIT_OK
    capsys.readouterr()
    # AWS publishes a newer GPU AMI; the spec and template are unchanged.
    published.image_id = new
    assert deploy() == EXIT_OK
    out, err = _out(capsys)
    assert "no changes" in out and "Nothing to deploy." in out
    assert f"AMI: {old} ({OLD_NAME}, " in err and "the one the stack runs (kept)" in err
    assert f"Note: a newer ECS GPU AMI is published: {new} ({NEW_NAME}, " in err
    assert f"the stack stays on {old}" in err
    assert "`--update-ami` moves the fleet to it" in err and "one at a time" in err
    assert _stack_ami(clients) == old
    assert _launch_template(clients) == (old, 1)

    # diff --update-ami previews the move and changes nothing.
    assert main(["diff", SPEC, "--update-ami"]) == EXIT_OK
    out, err = _out(capsys)
    assert f"AMI: {old} ({OLD_NAME}, " in err and f"-> {new} ({NEW_NAME}, " in err
    assert "(--update-ami): the instance refresh replaces every GPU instance" in err
    assert "AWS::EC2::LaunchTemplate" in out and "2 to modify" in out
    assert _stack_ami(clients) == old

    assert deploy("--update-ami") == EXIT_OK
    assert _stack_ami(clients) == new
    image, n_versions = _launch_template(clients)
    assert image == new and n_versions == 2

    # The next plain deploy keeps the new AMI.
    capsys.readouterr()
    assert deploy() == EXIT_OK
    out, err = _out(capsys)
    assert "Nothing to deploy." in out and "Note:" not in err
    assert _stack_ami(clients) == new


def test_a_pinned_ami_is_passed_and_update_ami_with_a_pin_is_refused(
    clients: Clients,
    images: tuple[str, str],
    published: Published,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:
    old, new = images
    published.image_id = new
    spec = tmp_path / "pinned.toml"
    text = EXAMPLE_SPEC.read_text(encoding="utf-8")
    spec.write_text(text.replace("[capacity]\n", f'[capacity]\nami_id = "{old}"\n'), "utf-8")
    args = ["deploy", str(spec), "--yes", "--poll-interval", "0.01"]
    assert main(args) == EXIT_OK
    _, err = _out(capsys)
    assert f"AMI: {old} ({OLD_NAME}, " in err and "pinned by [capacity] ami_id" in err
    assert f"Note: a newer ECS GPU AMI is published: {new}" in err
    assert "Change [capacity] ami_id to it" in err
    assert _stack_ami(clients) == old
    assert main([*args, "--update-ami"]) == EXIT_BAD_INPUT
    _, err = _out(capsys)
    assert "--update-ami" in err and "[capacity] ami_id" in err and "Traceback" not in err
    assert _stack_ami(clients) == old


def test_the_first_deploy_over_an_older_ecs_gpus_stack_keeps_its_running_ami(
    clients: Clients,
    images: tuple[str, str],
    published: Published,
    g5_for_moto: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The stack an older release made (the SSM-typed AMI parameter), then this deploy.

    The older template is today's with the AMI as the older release had it;
    moto's CloudFormation resolves its SSM path from moto's own copy.
    """
    legacy = copy.deepcopy(g5_for_moto)
    legacy["Parameters"] = {
        ami.LEGACY_PARAMETER: {
            "Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>",
            "Default": ami.RECOMMENDED_SSM_PARAMETER,
        }
    }
    resources = legacy["Resources"]
    (lt_id,) = [k for k, r in resources.items() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    resources[lt_id]["Properties"]["LaunchTemplateData"]["ImageId"] = {"Ref": ami.LEGACY_PARAMETER}
    clients.cfn.create_stack(
        StackName=STACK,
        TemplateBody=template.minified(legacy),
        Capabilities=["CAPABILITY_IAM"],
        Tags=[{"Key": dp.TAG_SPEC, "Value": NAMES.service_name}],
    )
    running, _ = _launch_template(clients)
    published.legacy_resolved = running
    _, new = images
    published.image_id = new
    assert deploy() == EXIT_OK
    _, err = _out(capsys)
    assert f"AMI: {running} (" in err and "the one the stack runs (kept)." in err
    assert f"Note: a newer ECS GPU AMI is published: {new}" in err
    assert _stack_ami(clients) == running
    image, _ = _launch_template(clients)
    assert image == running
