"""Failure paths through the real CLI: access denied, an unreachable endpoint.

Access denied is real: moto checks IAM policies once its auth is switched on
(``/moto-api/reset-auth``), so a user whose policy lacks an action gets the
same AccessDenied AWS would send.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse

from conftest import CAPTIVE_PORTAL, JUNK, FakeEndpoint, http_200
from ecs_gpu.aws import clients
from ecs_gpu.aws import verify_scaling as vs
from ecs_gpu.aws.errors import AccessDenied
from ecs_gpu.cli import deploy as deploy_cli
from ecs_gpu.cli import destroy as destroy_cli
from ecs_gpu.cli import main, options
from ecs_gpu.cli import verify_scaling as verify_cli
from ecs_gpu.errors import EXIT_AWS, EXIT_BAD_INPUT, EXIT_PROBLEMS

from .conftest import NAMES, NO_WAIT, SETTLE_S, Lockstep

SPEC = Path(__file__).resolve().parents[2] / "examples" / "g5-vllm.toml"


def restricted_user(actions: list[str]) -> dict[str, str]:
    """An IAM user allowed only ``actions``; returns its access key as env vars."""
    iam = boto3.Session().client("iam")
    iam.create_user(UserName="operator")
    iam.put_user_policy(
        UserName="operator",
        PolicyName="only-these",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}],
            }
        ),
    )
    key = iam.create_access_key(UserName="operator")["AccessKey"]
    return {
        "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
    }


def as_user(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)


def test_access_denied_exits_3_naming_the_call_and_permission(
    aws: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = restricted_user(["cloudformation:DescribeStacks"])
    request.getfixturevalue("iam_enforced")
    as_user(monkeypatch, env)
    code = main(["verify", "metrics", "--asg", NAMES.asg, "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_AWS
    # moto answers this JSON-protocol call's denial with an XML body botocore
    # cannot parse, so the code arrives as a bare "403"; still access denied.
    assert "AWS denied cloudwatch GetMetricData" in err
    assert "not authorized to perform" in err
    assert "grant cloudwatch:GetMetricData" in err
    assert "Traceback" not in err


def test_deploy_denied_create_change_set_names_it(
    aws: str,
    template: dict[str, Any],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = restricted_user(["cloudformation:DescribeStacks", "cloudformation:DescribeStackEvents"])
    request.getfixturevalue("iam_enforced")
    as_user(monkeypatch, env)
    cfn = boto3.Session().client("cloudformation")  # a fresh session reads the new keys
    with pytest.raises(AccessDenied) as exc:
        deploy_cli.run_deploy(
            cfn, NAMES.stack, template, yes=True, waits=NO_WAIT, service_name=NAMES.service_name
        )
    assert exc.value.exit_code == EXIT_AWS
    assert exc.value.permission == "cloudformation:CreateChangeSet"


def test_destroy_denied_describe_stacks_exits_3(
    aws: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = restricted_user([f"cloudwatch:{'PutMetricData'}"])
    request.getfixturevalue("iam_enforced")
    as_user(monkeypatch, env)
    code = main(["destroy", str(SPEC), "--yes"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_AWS
    assert "cloudformation:DescribeStacks" in err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the socket is


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "metrics", "--asg", NAMES.asg, "--timeout", "0"],
        ["destroy", str(SPEC), "--yes"],
    ],
    ids=["verify-metrics", "destroy"],
)
def test_unreachable_endpoint_exits_3_quickly_with_a_clear_message(
    aws: str,
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{closed_port()}")
    # The standard setting: one attempt, so the test does not sit in backoff.
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    # "Quickly" is what the tool waits for, not how fast this machine runs:
    # every back-off and poll goes through time.sleep, recorded here instead.
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    code = main(argv)
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_AWS
    assert "cannot reach AWS" in err and "AWS_ENDPOINT_URL" in err
    assert "Traceback" not in err
    assert sum(slept) < 20, slept


def _session_clients(env: dict[str, str]) -> dict[str, Any]:
    s = boto3.Session(
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
    )
    names = ("cloudformation", "ecs", "autoscaling", "application-autoscaling", "cloudwatch")
    return {n: s.client(n) for n in names}


# What destroy reads and changes (docs/operate.md "IAM permissions"), less one.
DESTROY_ACTIONS = [
    "cloudformation:DescribeStacks",
    "cloudformation:ListStackResources",
    "cloudformation:DescribeStackEvents",
    "cloudformation:DeleteStack",
    "application-autoscaling:DescribeScalableTargets",
    "application-autoscaling:RegisterScalableTarget",
    "ecs:UpdateService",
    "ecs:ListTasks",
    "ecs:DescribeTasks",
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:UpdateAutoScalingGroup",
    "autoscaling:SetInstanceProtection",
]


def test_destroy_denied_midway_exits_3_naming_the_permission_and_what_is_left(
    aws: str, template: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    admin = boto3.Session().client("cloudformation")
    result = deploy_cli.run_deploy(
        admin, NAMES.stack, template, yes=True, waits=NO_WAIT, service_name=NAMES.service_name
    )
    assert result is not None and result.ok
    env = restricted_user([a for a in DESTROY_ACTIONS if a != "ecs:UpdateService"])
    request.getfixturevalue("iam_enforced")
    c = _session_clients(env)
    with pytest.raises(AccessDenied) as exc:
        destroy_cli.run_destroy(
            c["cloudformation"],
            c["ecs"],
            c["autoscaling"],
            c["application-autoscaling"],
            NAMES,
            yes=True,
            waits=NO_WAIT,
            task_timeout_s=1,
            stuck_after_s=1,
        )
    assert exc.value.exit_code == EXIT_AWS
    assert exc.value.permission == "ecs:UpdateService"
    assert "grant ecs:UpdateService" in exc.value.message
    assert "ecs-gpu destroy SPEC" in exc.value.message  # the way on from half-done
    status = c["cloudformation"].describe_stacks(StackName=NAMES.stack)["Stacks"][0]
    assert status["StackStatus"] == "CREATE_COMPLETE"


def _deploy_as_admin(template: dict[str, Any]) -> None:
    """Deploy the stack with full rights, plus the scalable target moto's CFN skips."""
    admin = boto3.Session()
    result = deploy_cli.run_deploy(
        admin.client("cloudformation"),
        NAMES.stack,
        template,
        yes=True,
        waits=NO_WAIT,
        service_name=NAMES.service_name,
    )
    assert result is not None and result.ok
    # moto's CloudFormation skips the scalable target; register it as the stack would.
    admin.client("application-autoscaling").register_scalable_target(
        ServiceNamespace="ecs",
        ResourceId=NAMES.scalable_target_resource_id,
        ScalableDimension="ecs:service:DesiredCount",
        MinCapacity=1,
        MaxCapacity=4,
    )


def test_verify_scaling_denied_put_metric_data_exits_3_naming_it(
    aws: str, template: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    _deploy_as_admin(template)
    env = restricted_user(
        ["ecs:DescribeServices", "application-autoscaling:DescribeScalableTargets"]
    )
    request.getfixturevalue("iam_enforced")
    c = _session_clients(env)
    # The publisher's first put is denied and ends its thread; the poll after it
    # raises the denial. The stand-in sleep waits for that event and moves a fake
    # clock, so no real second decides the outcome (a publisher that is not denied
    # puts once, then the fake timeout ends the test as a failure).
    pub = vs.Publisher(c["cloudwatch"], NAMES.asg, 0.0, interval_s=60, pace=Lockstep())
    now = [0.0]

    def until_the_publisher_ends(seconds: float) -> None:
        for t in threading.enumerate():
            if t.name == "ecs-gpu-publisher":
                t.join(SETTLE_S)
        now[0] += seconds

    with pytest.raises(AccessDenied) as exc:
        verify_cli.run_verify_scaling(
            c["cloudwatch"],
            c["ecs"],
            c["application-autoscaling"],
            NAMES,
            yes=True,
            publish_interval_s=60,
            poll_s=15,
            scale_out_timeout_s=15,
            scale_in_timeout_s=15,
            sleep=until_the_publisher_ends,
            clock=lambda: now[0],
            publisher=pub,
        )
    assert exc.value.exit_code == EXIT_AWS
    assert exc.value.permission == "cloudwatch:PutMetricData"


def test_destroy_needs_no_more_than_the_documented_permissions(
    aws: str, template: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    _deploy_as_admin(template)
    doc = (Path(__file__).resolve().parents[2] / "docs" / "operate.md").read_text()
    row = next(ln for ln in doc.splitlines() if ln.startswith("| `destroy` |"))
    for action in DESTROY_ACTIONS:  # the list below is the documented one
        assert action.split(":")[1] in row, action
    env = restricted_user(DESTROY_ACTIONS)
    request.getfixturevalue("iam_enforced")
    c = _session_clients(env)
    done = destroy_cli.run_destroy(
        c["cloudformation"],
        c["ecs"],
        c["autoscaling"],
        c["application-autoscaling"],
        NAMES,
        yes=True,
        waits=NO_WAIT,
        task_timeout_s=1,
        stuck_after_s=60,
    )
    assert done is not None and done.status == "DELETE_COMPLETE"


# --- an endpoint that answers, but is not AWS (tests/conftest.py FakeEndpoint) -----------


def test_binary_junk_from_the_endpoint_exits_3_naming_it(
    fake_endpoint: Callable[..., FakeEndpoint], capsys: pytest.CaptureFixture[str]
) -> None:
    server = fake_endpoint(http_200(JUNK, "application/x-amz-json-1.0"))
    code = main(["verify", "metrics", "--asg", NAMES.asg, "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_AWS, err
    assert f"{server.url} answered GetMetricData with 1024 bytes that are not text" in err
    assert "internal error" not in err and "UnicodeDecodeError" not in err
    server.close()
    assert server.requests == 1  # refused at once, not retried


def test_a_captive_portal_is_not_aws_not_an_unpublished_metric(
    fake_endpoint: Callable[..., FakeEndpoint], capsys: pytest.CaptureFixture[str]
) -> None:
    server = fake_endpoint(http_200(CAPTIVE_PORTAL, "text/html; charset=utf-8"))
    code = main(["verify", "metrics", "--asg", NAMES.asg, "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_AWS, err
    assert f"{server.url} answered GetMetricData with an HTML page (HTTP 200" in err
    assert "captive portal" in err and "published" not in err


def test_a_black_holed_endpoint_fails_a_check_once_after_two_attempts(
    fake_endpoint: Callable[..., FakeEndpoint],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = fake_endpoint(None)
    # The documented override, lowered so the test waits a second, not 10 s.
    monkeypatch.setenv(clients.TIMEOUT_ENV, "0.5")
    code = main(["verify", "metrics", "--asg", NAMES.asg, "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_AWS, err
    assert "cannot reach AWS for cloudwatch GetMetricData" in err and "Read timeout" in err
    # --timeout 0 checks once: FAIL_FAST_CONFIG's two attempts, not the default eight.
    server.close()
    assert server.requests == 2


def test_a_black_holed_endpoint_fails_a_specs_check_once_in_its_first_read_too(
    fake_endpoint: Callable[..., FakeEndpoint],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With a SPEC verify metrics first reads the service (is it at zero tasks?): that
    client must fail fast under --timeout 0 as CloudWatch's does (it retried 8 x 30 s)."""
    server = fake_endpoint(None)
    monkeypatch.setenv(clients.TIMEOUT_ENV, "0.5")
    code = main(["verify", "metrics", str(SPEC), "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_AWS, err
    assert "cannot reach AWS for ecs DescribeServices" in err
    server.close()
    assert server.requests == 2


def test_an_empty_asg_is_refused_before_any_call(
    fake_endpoint: Callable[..., FakeEndpoint], capsys: pytest.CaptureFixture[str]
) -> None:
    server = fake_endpoint(http_200(JUNK, "application/json"))
    code = main(["verify", "metrics", "--asg", "", "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_BAD_INPUT, err
    assert "--asg '': an Auto Scaling group name has 1 to 255 characters" in err
    server.close()
    assert server.requests == 0


def test_a_bad_timeout_setting_is_bad_input(
    fake_endpoint: Callable[..., FakeEndpoint],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fake_endpoint(None, max_requests=0)
    monkeypatch.setenv(clients.TIMEOUT_ENV, "soon")
    assert main(["verify", "metrics", "--asg", NAMES.asg, "--timeout", "0"]) == EXIT_BAD_INPUT
    assert f"{clients.TIMEOUT_ENV}='soon': not a number of seconds" in capsys.readouterr().err


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


def _cloudformation_answers(
    monkeypatch: pytest.MonkeyPatch, operation: str, status: int, code: str, message: str
) -> None:
    """Every session the command makes gets this CloudFormation error for ``operation``."""
    body = (
        '<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/">'
        f"<Error><Type>Sender</Type><Code>{code}</Code><Message>{message}</Message></Error>"
        "<RequestId>injected</RequestId></ErrorResponse>"
    ).encode()
    real = options.make_session

    def answer(**_: Any) -> AWSResponse:
        return AWSResponse(
            "http://127.0.0.1/injected", status, {"Content-Type": "text/xml"}, _Raw(body)
        )

    def make(profile: str | None = None, region: str | None = None) -> boto3.Session:
        s = real(profile, region)
        s.events.register(f"before-send.cloudformation.{operation}", answer)
        return s

    monkeypatch.setattr(options, "make_session", make)


GONE = f"Stack with id {NAMES.stack} does not exist"
PROTECTED = f"Stack [{NAMES.stack}] cannot be deleted while TerminationProtection is enabled"


@pytest.mark.parametrize(
    ("operation", "message", "said", "left"),
    [
        # The stack vanished between DescribeStacks and the listing: nothing changed yet.
        (
            "ListStackResources",
            GONE,
            f"AWS refused cloudformation ListStackResources: ValidationError: {GONE}",
            False,
        ),
        # CloudFormation refuses the delete itself, after the service was scaled to 0.
        (
            "DeleteStack",
            PROTECTED,
            "CloudFormation refused DeleteStack for stack arn:aws:cloudformation:",
            True,
        ),
    ],
    ids=["stack-vanished", "delete-refused"],
)
def test_destroy_on_a_validation_error_exits_1_not_3(
    aws: str,
    template: dict[str, Any],
    operation: str,
    message: str,
    said: str,
    left: bool,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """AWS answered and refused: a failed operation (1), not unreachable or denied (3)."""
    _deploy_as_admin(template)
    _cloudformation_answers(monkeypatch, operation, 400, "ValidationError", message)
    code = main(["destroy", str(SPEC), "--yes"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert said in err and message in err
    assert ("Finish with `ecs-gpu destroy SPEC`" in err) == left
    assert "Traceback" not in err


def test_throttled_past_the_retries_is_still_exit_3(
    aws: str,
    template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _deploy_as_admin(template)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # no backoff in the test
    _cloudformation_answers(monkeypatch, "ListStackResources", 400, "Throttling", "Rate exceeded")
    code = main(["destroy", str(SPEC), "--yes"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_AWS
    assert "Throttling: Rate exceeded" in err and "run the command again" in err
