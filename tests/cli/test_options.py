"""Issue 9's CLI items for the operate commands.

The ECS service-linked role on a fresh account, ``--stack`` for
diff/deploy/destroy, destroy refusing a stack ecs-gpu did not make,
``--version``, and options checked before any AWS call (intervals, timeouts,
``--region``). AWS runs on moto in server mode; where moto answers
differently from AWS (an existing service-linked role), a Stubber gives the
AWS-shaped answer and the test says so.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws.errors import AccessDenied
from ecs_gpu.cli import deploy as deploy_cli
from ecs_gpu.cli import main, options, prelude
from ecs_gpu.errors import EXIT_AWS, EXIT_BAD_INPUT, EXIT_OK, BadInputError

from .conftest import EXAMPLE_SPEC, NAMES, NO_WAIT, Clients, for_moto

SPEC = str(EXAMPLE_SPEC)
ROLE = "AWSServiceRoleForECS"


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    return captured.out + captured.err


def _ordered_calls(*clients: Any) -> list[str]:
    """``service:Operation`` of every call the clients send, in one shared order."""
    calls: list[str] = []

    def hook(model: Any, **_: Any) -> None:
        calls.append(f"{model.service_model.service_name}:{model.name}")

    for c in clients:
        c.meta.events.register("before-call", hook)
    return calls


# --- the ECS service-linked role ----------------------------------------------------


def _ecs_linked_roles(clients: Clients) -> list[dict[str, Any]]:
    roles = clients.iam.list_roles(PathPrefix="/aws-service-role/ecs.amazonaws.com/")["Roles"]
    return [dict(r) for r in roles]


def test_deploy_of_a_new_stack_creates_the_ecs_service_linked_role_first(
    clients: Clients, template: dict[str, Any]
) -> None:
    # A fresh moto account, like a fresh AWS account, has no ECS service-linked role.
    assert _ecs_linked_roles(clients) == []
    calls = _ordered_calls(clients.iam, clients.cfn)
    result = deploy_cli.run_deploy(
        clients.cfn,
        NAMES.stack,
        template,
        service_name=NAMES.service_name,
        yes=True,
        waits=NO_WAIT,
        iam=clients.iam,
    )
    assert result is not None and result.ok
    # AWS names it AWSServiceRoleForECS; moto lower-cases the service ("...Forecs").
    assert [r["RoleName"].lower() for r in _ecs_linked_roles(clients)] == [ROLE.lower()]
    # Before the stack is created: CloudFormation's cluster needs the role.
    assert calls.index("iam:CreateServiceLinkedRole") < calls.index(
        "cloudformation:CreateChangeSet"
    )


def test_an_existing_service_linked_role_is_success_under_moto_and_aws(
    clients: Clients, template: dict[str, Any]
) -> None:
    clients.iam.create_service_linked_role(AWSServiceName="ecs.amazonaws.com")
    # moto answers a second create with EntityAlreadyExists.
    assert dp.ensure_ecs_service_linked_role(clients.iam) is False
    # AWS answers InvalidInput "... has been taken in this account" (as reported
    # in e.g. Rayraegah/terraform-aws-hasura#17); moto does not, so a Stubber does.
    iam = boto3.client("iam", region_name="us-east-1")
    with Stubber(iam) as stub:
        stub.add_client_error(
            "create_service_linked_role",
            service_error_code="InvalidInput",
            service_message="Service role name AWSServiceRoleForECS has been taken in this "
            "account, please try a different suffix.",
            http_status_code=400,
            expected_params={"AWSServiceName": "ecs.amazonaws.com"},
        )
        assert dp.ensure_ecs_service_linked_role(iam) is False
        stub.assert_no_pending_responses()
    # Any other InvalidInput is a real error.
    with Stubber(iam) as stub:
        stub.add_client_error(
            "create_service_linked_role",
            service_error_code="InvalidInput",
            service_message="Invalid service name",
            http_status_code=400,
        )
        with pytest.raises(Exception, match="Invalid service name"):
            dp.ensure_ecs_service_linked_role(iam)
    # And the deploy goes on with the role already there.
    result = deploy_cli.run_deploy(
        clients.cfn,
        NAMES.stack,
        template,
        service_name=NAMES.service_name,
        yes=True,
        waits=NO_WAIT,
        iam=clients.iam,
    )
    assert result is not None and result.ok


def test_denied_service_linked_role_exits_3_naming_the_permission_and_creates_nothing(
    clients: Clients, template: dict[str, Any]
) -> None:
    iam = boto3.client("iam", region_name="us-east-1")
    calls = _ordered_calls(clients.cfn)
    with Stubber(iam) as stub:
        stub.add_client_error(
            "create_service_linked_role",
            service_error_code="AccessDenied",
            service_message="User: arn:aws:iam::123456789012:user/dev is not authorized to "
            "perform: iam:CreateServiceLinkedRole",
            http_status_code=403,
        )
        with pytest.raises(AccessDenied) as exc:
            deploy_cli.run_deploy(
                clients.cfn,
                NAMES.stack,
                template,
                service_name=NAMES.service_name,
                yes=True,
                waits=NO_WAIT,
                iam=iam,
            )
    assert exc.value.exit_code == EXIT_AWS
    assert exc.value.permission == "iam:CreateServiceLinkedRole"
    assert "aws iam create-service-linked-role --aws-service-name ecs.amazonaws.com" in (
        exc.value.message
    )
    assert "cloudformation:CreateChangeSet" not in calls
    with pytest.raises(Exception, match="does not exist"):
        clients.cfn.describe_stacks(StackName=NAMES.stack)


def test_an_update_does_not_touch_iam(clients: Clients, fresh_template: dict[str, Any]) -> None:
    # fresh_template: the session's `template` is shared; changing it here changed
    # what later tests deployed (the diff test then saw no Modify).
    template = fresh_template
    deploy_cli.run_deploy(
        clients.cfn, NAMES.stack, template, service_name=NAMES.service_name, yes=True, waits=NO_WAIT
    )
    template["Resources"]["LogGroup"]["Properties"]["RetentionInDays"] = 7
    iam = boto3.client("iam", region_name="us-east-1")
    with Stubber(iam) as stub:  # no response queued: any IAM call fails the test
        result = deploy_cli.run_deploy(
            clients.cfn,
            NAMES.stack,
            template,
            service_name=NAMES.service_name,
            yes=True,
            waits=NO_WAIT,
            iam=iam,
        )
        stub.assert_no_pending_responses()
    assert result is not None and result.status == "UPDATE_COMPLETE"


# --- --stack and stack ownership ------------------------------------------------------


def test_deploy_tags_the_stack_with_the_spec_and_the_version(
    clients: Clients, template: dict[str, Any]
) -> None:
    deploy_cli.run_deploy(
        clients.cfn,
        "other-name",
        template,
        service_name=NAMES.service_name,
        yes=True,
        waits=NO_WAIT,
    )
    stack = clients.cfn.describe_stacks(StackName="other-name")["Stacks"][0]
    tags = {t["Key"]: t["Value"] for t in stack["Tags"]}
    assert tags == {
        "ecs-gpu:spec": NAMES.service_name,
        "ecs-gpu:version": metadata.version("ecs-gpu"),
    }


def test_destroy_with_stack_deletes_that_stack_and_only_it(
    clients: Clients, template: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    deploy_cli.run_deploy(
        clients.cfn,
        "vllm-g5-staging",
        template,
        service_name=NAMES.service_name,
        yes=True,
        waits=NO_WAIT,
    )
    capsys.readouterr()
    # Without --stack, destroy looks for the spec's own stack, which is not there.
    assert main(["destroy", SPEC, "--yes"]) == EXIT_OK
    assert "Stack vllm-g5 does not exist" in _err(capsys)
    assert (
        main(["destroy", SPEC, "--yes", "--stack", "vllm-g5-staging", "--poll-interval", "0.01"])
        == EXIT_OK
    )
    out = _err(capsys)
    assert "vllm-g5-staging" in out and "DELETE_COMPLETE" in out
    with pytest.raises(Exception, match="does not exist"):
        clients.cfn.describe_stacks(StackName="vllm-g5-staging")


def test_diff_with_stack_previews_that_stack(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["diff", SPEC, "--stack", "vllm-g5-blue"]) == EXIT_OK
    out = _err(capsys)
    assert "Stack vllm-g5-blue (new stack)" in out and "to add" in out
    assert "Stack vllm-g5 " not in out


FOREIGN = {"Resources": {"Logs": {"Type": "AWS::Logs::LogGroup", "Properties": {}}}}


def test_destroy_refuses_a_stack_ecs_gpu_did_not_make(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    clients.cfn.create_stack(StackName="payments", TemplateBody=json.dumps(FOREIGN))
    calls = _ordered_calls(clients.cfn)
    assert main(["destroy", SPEC, "--yes", "--stack", "payments"]) == EXIT_BAD_INPUT
    err = _err(capsys)
    assert "stack payments: not made by ecs-gpu" in err and "Fix:" in err
    assert "--stack" in err
    assert "Traceback" not in err
    # Refused before anything was listed or changed.
    assert "cloudformation:DeleteStack" not in calls
    assert "cloudformation:ListStackResources" not in calls
    status = clients.cfn.describe_stacks(StackName="payments")["Stacks"][0]["StackStatus"]
    assert status == "CREATE_COMPLETE"


def test_deploy_refuses_to_overwrite_a_stack_ecs_gpu_did_not_make(
    clients: Clients, template: dict[str, Any]
) -> None:
    import json

    clients.cfn.create_stack(StackName="payments", TemplateBody=json.dumps(FOREIGN))
    with pytest.raises(
        BadInputError, match=r"stack payments: not made by ecs-gpu .* will not update it"
    ):
        deploy_cli.run_deploy(
            clients.cfn,
            "payments",
            template,
            service_name=NAMES.service_name,
            yes=True,
            waits=NO_WAIT,
        )
    assert clients.cfn.list_change_sets(StackName="payments")["Summaries"] == []


def test_destroy_refuses_a_stack_deployed_from_another_spec(
    clients: Clients, template: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    deploy_cli.run_deploy(
        clients.cfn, "llama-70b", template, service_name="llama-70b", yes=True, waits=NO_WAIT
    )
    capsys.readouterr()
    assert main(["destroy", SPEC, "--yes", "--stack", "llama-70b"]) == EXIT_BAD_INPUT
    err = _err(capsys)
    assert "service.name is 'llama-70b', not 'vllm-g5'" in err and "Fix:" in err
    assert clients.cfn.describe_stacks(StackName="llama-70b")["Stacks"][0]["StackStatus"] == (
        "CREATE_COMPLETE"
    )


@pytest.mark.parametrize("name", ["9lives", "has_underscore", "a" * 129, "", "spaces here"])
def test_a_bad_stack_name_is_exit_2_before_any_call(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing may be called
    for command in ("diff", "deploy", "destroy"):
        assert (
            main(
                [command, SPEC, "--stack", name, "--yes"]
                if command != "diff"
                else [command, SPEC, "--stack", name]
            )
            == EXIT_BAD_INPUT
        )
        err = _err(capsys)
        assert "--stack" in err and "not a CloudFormation stack name" in err and "Fix:" in err


# --- options checked before any call ----------------------------------------------------


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == EXIT_OK
    assert capsys.readouterr().out.strip() == f"ecs-gpu {metadata.version('ecs-gpu')}"


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "metrics", "--asg", "g", "--interval", "0"],
        ["verify", "metrics", "--asg", "g", "--interval", "-5"],
        ["verify", "metrics", "--asg", "g", "--interval", "nan"],
        ["verify", "metrics", "--asg", "g", "--timeout", "-1"],
        ["verify", "metrics", "--asg", "g", "--window", "30"],
        ["verify", "scaling", SPEC, "--yes", "--poll-interval", "0"],
        ["verify", "scaling", SPEC, "--yes", "--publish-interval", "0"],
        ["verify", "scaling", SPEC, "--yes", "--scale-out-timeout", "0"],
        ["verify", "scaling", SPEC, "--yes", "--scale-in-timeout", "inf"],
        ["deploy", SPEC, "--yes", "--poll-interval", "0"],
        ["diff", SPEC, "--poll-interval", "0"],
        ["destroy", SPEC, "--yes", "--poll-interval", "0"],
        ["destroy", SPEC, "--yes", "--stuck-after", "0"],
        ["destroy", SPEC, "--yes", "--task-timeout", "-1"],
    ],
)
def test_an_interval_or_timeout_out_of_range_is_exit_2_naming_the_option(
    argv: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing may be called
    assert main(argv) == EXIT_BAD_INPUT
    err = _err(capsys)
    option = next(a for a in argv if a.startswith("--") and a != "--yes" and a != "--asg")
    assert f"'{option}'" in err and "Fix:" in err.replace("\n", " ").replace("│", "")
    assert "Traceback" not in err


@pytest.mark.parametrize("region", ["us-east-9x", "US_EAST_1", "useast1", "us-east-1 "])
def test_a_bad_region_is_exit_2_naming_region_not_exit_3(
    region: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    assert main(["destroy", SPEC, "--yes", "--region", region]) == EXIT_BAD_INPUT
    err = _err(capsys)
    assert f"--region {region!r}: not an AWS Region name" in err
    assert r"^(us|eu|ap|sa|ca|me|af|il|mx)\-\w+\-\d+$" in err  # the known pattern
    assert "Fix:" in err and "Traceback" not in err


def test_a_bad_region_from_the_environment_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ecs_gpu.aws.clients import make_session

    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_REGION", "eu_west_1")
    with pytest.raises(BadInputError, match=r"^AWS_REGION='eu_west_1': not an AWS Region"):
        make_session()
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "EU-WEST-1")
    with pytest.raises(BadInputError, match=r"^AWS_DEFAULT_REGION=EU-WEST-1: not an AWS Region"):
        make_session()
    # Every partition's Regions pass, and a Region newer than this botocore too.
    for ok in ("eu-west-1", "cn-north-1", "us-gov-west-1", "us-isob-east-1", "ap-southeast-9"):
        assert make_session(region=ok).region_name == ok


def test_one_spec_deploys_as_two_stacks_that_do_not_collide(
    clients: Clients, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI passes --stack down to synth: the real g5 template, made twice."""
    from ecs_gpu.spec import load_spec

    made: list[str | None] = []
    real = prelude.synth_template

    def synth_for_moto(spec: Any, stack: str | None = None, **kw: Any) -> dict[str, Any]:
        made.append(stack)
        return for_moto(real(spec, stack, **kw))

    monkeypatch.setattr(prelude, "synth_template", synth_for_moto)
    assert main(["deploy", SPEC, "--yes", "--poll-interval", "0.01"]) == EXIT_OK
    assert main(["deploy", SPEC, "--yes", "--stack", "vllm-g5-b", "--poll-interval", "0.01"]) == (
        EXIT_OK
    )
    assert made == ["vllm-g5", "vllm-g5-b"]
    spec = load_spec(EXAMPLE_SPEC)
    groups = {}
    for stack in ("vllm-g5", "vllm-g5-b"):
        assert clients.cfn.describe_stacks(StackName=stack)["Stacks"][0]["StackStatus"] == (
            "CREATE_COMPLETE"
        )
        # verify and destroy find each stack's fleet by the same names the construct used.
        asg = options.names_of(spec, stack).asg
        found = clients.autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg])
        assert [g["AutoScalingGroupName"] for g in found["AutoScalingGroups"]] == [asg]
        groups[stack] = asg
    assert groups["vllm-g5"] != groups["vllm-g5-b"]
    assert options.names_of(spec, None) == NAMES  # the default stays the spec's names


def test_verify_metrics_stack_needs_a_spec_not_an_asg(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["verify", "metrics", "--asg", "g", "--stack", "vllm-g5-b"]) == EXIT_BAD_INPUT
    err = _err(capsys)
    assert "--stack" in err and "Fix:" in err


# --- region and credentials before synth ----------------------------------------------


def _no_aws_config(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """No region or credentials from any file, and a synth that records that it ran."""
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance-role lookup
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing may be called
    synthesized: list[str | None] = []

    def synth(spec: Any, stack: str | None = None, **_: Any) -> dict[str, Any]:
        synthesized.append(stack)
        return {}

    monkeypatch.setattr(prelude, "synth_template", synth)
    return synthesized


@pytest.mark.parametrize("command", [["diff"], ["deploy", "--yes"], ["destroy", "--yes"]])
def test_no_region_fails_fast_with_exit_2_before_synthesizing(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    synthesized = _no_aws_config(monkeypatch)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    assert main([command[0], SPEC, *command[1:]]) == EXIT_BAD_INPUT
    err = " ".join(_err(capsys).split())
    assert "no AWS region configured" in err and "Fix: pass --region" in err
    assert "Traceback" not in err
    assert synthesized == []


@pytest.mark.parametrize("command", [["diff"], ["deploy", "--yes"], ["destroy", "--yes"]])
def test_no_credentials_fail_fast_with_exit_3_before_synthesizing(
    command: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    synthesized = _no_aws_config(monkeypatch)
    assert main([command[0], SPEC, *command[1:], "--region", "us-east-1"]) == EXIT_AWS
    err = " ".join(_err(capsys).split())
    assert "no AWS credentials" in err and "Fix:" in err and "AWS_PROFILE" in err
    assert "Traceback" not in err
    assert synthesized == []
