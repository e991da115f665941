"""What deploy and diff read to decide the AMI (aws/ami.py): the stack's parameter, the
published recommended AMI, EC2's image names, and the permissions each needs.

On moto with the two images tests/cli/test_ami.py registers (its ``images`` fixture,
offered here by tests/aws/conftest.py); what moto lacks (the published parameter, an
SSM-typed parameter's ResolvedValue, a denial) a botocore hook answers AWS-shaped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from cli.conftest import Clients
from cli.test_ami import OLD_NAME, STACK, Published
from cli.test_failures import restricted_user
from ecs_gpu.aws import ami as aws_ami
from ecs_gpu.aws.errors import AccessDenied
from ecs_gpu.cli import ami as ami_cli
from ecs_gpu.contracts import ami
from ecs_gpu.template import limits as template


def test_an_older_ecs_gpu_stacks_running_ami_is_kept(
    clients: Clients, images: tuple[str, str]
) -> None:
    """A stack made before the pin has CDK's SSM-typed parameter; its ResolvedValue is kept.

    moto's DescribeStacks leaves ResolvedValue out (and its CloudFormation
    resolves the path from its own SSM copy), so an ``after-call`` hook adds
    it as CloudFormation answers it: the AMI the parameter resolved to.
    """
    old, new = images
    legacy = {
        "Description": "ecs-gpu: stand-in of an older release's stack",
        "Parameters": {
            ami.LEGACY_PARAMETER: {
                "Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>",
                "Default": ami.RECOMMENDED_SSM_PARAMETER,
            }
        },
        "Resources": {"Logs": {"Type": "AWS::Logs::LogGroup"}},
    }
    clients.cfn.create_stack(StackName=STACK, TemplateBody=template.minified(legacy))

    def resolved(parsed: dict[str, Any], model: Any, **_: Any) -> None:
        for s in parsed.get("Stacks", []):
            for p in s.get("Parameters", []):
                if p["ParameterKey"] == ami.LEGACY_PARAMETER:
                    p["ResolvedValue"] = old

    clients.cfn.meta.events.register("after-call.cloudformation.DescribeStacks", resolved)
    ssm, ec2 = boto3.Session().client("ssm"), boto3.Session().client("ec2")
    ssm.meta.events.register("before-call.ssm.GetParameter", Published(new).answer)
    choice = aws_ami.choose_ami(clients.cfn, ssm, ec2, STACK, spec_ami=None, update_ami=False)
    assert choice.decision == ami.Decision(old, "kept", newer=new)
    assert choice.parameters == {ami.PARAMETER: old}
    assert choice.current is not None and choice.current.name == OLD_NAME


def test_an_existing_stack_deploys_when_the_recommended_ami_may_not_be_read(
    clients: Clients, images: tuple[str, str]
) -> None:
    """ssm:GetParameter denied: the kept AMI needs no lookup, so only the note is lost.

    The denial is raised by a botocore hook as AWS words it (moto's IAM is off here).
    """
    from botocore.exceptions import ClientError

    old, _ = images
    stack = {
        "Parameters": {ami.PARAMETER: {"Type": "AWS::EC2::Image::Id", "Default": old}},
        "Resources": {"Logs": {"Type": "AWS::Logs::LogGroup"}},
    }
    clients.cfn.create_stack(StackName=STACK, TemplateBody=template.minified(stack))

    def denied(**_: Any) -> None:
        raise ClientError(
            {
                "Error": {
                    "Code": "AccessDeniedException",
                    "Message": "User: arn:aws:iam::123456789012:user/deployer is not "
                    "authorized to perform: ssm:GetParameter",
                }
            },
            "GetParameter",
        )

    ssm, ec2 = boto3.Session().client("ssm"), boto3.Session().client("ec2")
    ssm.meta.events.register("before-call.ssm.GetParameter", denied)
    choice = aws_ami.choose_ami(clients.cfn, ssm, ec2, STACK, spec_ami=None, update_ami=False)
    assert choice.decision == ami.Decision(old, "kept") and choice.unchecked == (
        "ssm:GetParameter",
    )
    assert any("could not look for a newer ECS GPU AMI" in ln for ln in ami_cli.lines(choice))
    # --update-ami needs the recommended AMI itself: the denial stops it.
    with pytest.raises(AccessDenied) as e:
        aws_ami.choose_ami(clients.cfn, ssm, ec2, STACK, spec_ami=None, update_ami=True)
    assert e.value.permission == "ssm:GetParameter"


def test_an_image_ec2_does_not_know_is_left_out(clients: Clients) -> None:
    """moto answers InvalidAMIID.NotFound for it, as AWS does for an id long deregistered."""
    ec2 = boto3.Session().client("ec2")
    assert aws_ami.describe(ec2, ["ami-0123456789abcdef0"]) == {}


def test_an_image_described_with_no_result_is_left_out_and_one_found_keeps_its_state() -> None:
    """AWS answers a recently deregistered id with no image, or with its State for a while."""
    ec2 = boto3.Session(region_name="us-east-1").client(
        "ec2", aws_access_key_id="x", aws_secret_access_key="x"
    )
    gone, kept = "ami-0123456789abcdef0", "ami-0fedcba9876543210"
    with Stubber(ec2) as stub:
        stub.add_response(
            "describe_images", {"Images": []}, {"ImageIds": [gone], "IncludeDeprecated": True}
        )
        assert aws_ami.describe(ec2, [gone]) == {}
        stub.add_response(
            "describe_images",
            {"Images": [{"ImageId": kept, "Name": "old", "State": "deregistered"}]},
            {"ImageIds": [gone, kept], "IncludeDeprecated": True},
        )
        assert aws_ami.describe(ec2, [kept, gone]) == {
            kept: aws_ami.Image(kept, "old", None, "deregistered")
        }


# What the AMI choice reads (docs/operate.md "IAM permissions", diff's row).
AMI_ACTIONS = ["cloudformation:DescribeStacks", "ssm:GetParameter", "ec2:DescribeImages"]


@pytest.mark.parametrize("missing", [None, *AMI_ACTIONS])
def test_the_ami_choice_needs_the_documented_permissions(
    aws: str,
    images: tuple[str, str],
    missing: str | None,
    request: pytest.FixtureRequest,
) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "operate.md").read_text()
    row = next(ln for ln in doc.splitlines() if ln.startswith("| `diff` |"))
    assert all(f"`{a}`" in row or a.split(":")[1] in row for a in AMI_ACTIONS)
    env = restricted_user([a for a in AMI_ACTIONS if a != missing])
    session = boto3.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
    )
    request.getfixturevalue("iam_enforced")
    cfn, ssm, ec2 = (session.client(n) for n in ("cloudformation", "ssm", "ec2"))
    if missing is None:
        # moto's own copy of the public parameter answers (no hook here).
        choice = aws_ami.choose_ami(cfn, ssm, ec2, STACK, spec_ami=None, update_ami=False)
        assert choice.decision.why == "new-stack"
        return
    if missing == "ec2:DescribeImages":
        # Names and dates only: the new stack still gets the recommended id.
        choice = aws_ami.choose_ami(cfn, ssm, ec2, STACK, spec_ami=None, update_ami=False)
        assert choice.decision.why == "new-stack" and choice.unchecked == (missing,)
        assert choice.chosen.name is None
        assert any(f"{missing} denied" in ln for ln in ami_cli.lines(choice))
        return
    with pytest.raises(AccessDenied) as e:
        aws_ami.choose_ami(cfn, ssm, ec2, STACK, spec_ami=None, update_ami=False)
    assert e.value.permission == missing
