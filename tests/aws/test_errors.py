"""botocore errors become ecs-gpu errors that name the call and the permission."""

from __future__ import annotations

from typing import Any

import pytest
from botocore import exceptions as bx

from ecs_gpu.aws.errors import AccessDenied, Unreachable, iam_action, mapped, translate
from ecs_gpu.errors import EXIT_AWS, EXIT_PROBLEMS, AwsError, AwsRefused, BadInputError, EcsGpuError


def _client_error(code: str, op: str = "DescribeServices") -> bx.ClientError:
    return bx.ClientError({"Error": {"Code": code, "Message": "m"}}, op)


def test_access_denied_names_call_and_permission() -> None:
    err = translate(_client_error("AccessDeniedException"), "ecs", "DescribeServices")
    assert isinstance(err, AccessDenied)
    assert err.exit_code == EXIT_AWS
    assert err.permission == "ecs:DescribeServices"
    assert "grant ecs:DescribeServices" in err.message


def test_cloudwatch_permission_prefix() -> None:
    assert iam_action("cloudwatch", "PutMetricData") == "cloudwatch:PutMetricData"


def test_service_quotas_permission_prefix() -> None:
    # boto3 calls it "service-quotas"; IAM's actions are "servicequotas:...".
    err = translate(_client_error("AccessDeniedException"), "service-quotas", "GetServiceQuota")
    assert isinstance(err, AccessDenied)
    assert err.permission == "servicequotas:GetServiceQuota"
    assert "grant servicequotas:GetServiceQuota" in err.message


def test_unreachable_endpoint() -> None:
    err = translate(bx.EndpointConnectionError(endpoint_url="http://x"), "ecs", "ListClusters")
    assert isinstance(err, Unreachable)
    assert err.exit_code == EXIT_AWS


def test_mapped_context_reraises_domain_error() -> None:
    with pytest.raises(AwsRefused, match="ValidationError"), mapped("ecs", "DescribeServices"):
        raise _client_error("ValidationError")


@pytest.mark.parametrize(
    ("code", "status", "kind", "exit_code"),
    [
        # AWS answered and refused what was asked: a failed operation.
        ("ValidationError", 400, AwsRefused, EXIT_PROBLEMS),
        ("ServiceNotFoundException", 400, AwsRefused, EXIT_PROBLEMS),
        # Not answering now (throttled past the retries, failing): unreachable.
        ("Throttling", 400, AwsError, EXIT_AWS),
        ("InternalFailure", 500, AwsError, EXIT_AWS),
        ("AccessDenied", 403, AccessDenied, EXIT_AWS),
    ],
)
def test_a_refusal_is_a_failed_operation_not_an_outage(
    code: str, status: int, kind: type[Exception], exit_code: int
) -> None:
    exc = bx.ClientError(
        {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "DeleteStack",
    )
    err = translate(exc, "cloudformation", "DeleteStack")
    assert type(err) is kind
    assert isinstance(err, EcsGpuError) and err.exit_code == exit_code
    assert "cloudformation DeleteStack" in err.message and "Fix:" in err.message


def test_an_html_error_page_is_one_short_line() -> None:
    # What moto's server (or a proxy) answers a call it cannot serve: botocore
    # puts the whole page in the message; the user sees one line of it.
    page = "<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n" + (
        "<p>" + "x" * 500 + "</p>\n"
    )
    exc = bx.ClientError(
        {"Error": {"Code": "500", "Message": page}, "ResponseMetadata": {"HTTPStatusCode": 500}},
        "GetAWSDefaultServiceQuota",
    )
    err = translate(exc, "service-quotas", "GetAWSDefaultServiceQuota")
    assert isinstance(err, AwsError) and err.exit_code == EXIT_AWS
    assert "\n" not in err.message
    assert "500: <!doctype html> <html lang=en> <title>500 Internal Server Error</title>" in (
        err.message
    )
    assert "x" * 400 not in err.message and "Fix: AWS is not answering" in err.message


def test_session_region_from_aws_region(monkeypatch: pytest.MonkeyPatch) -> None:
    # botocore itself reads only AWS_DEFAULT_REGION; the messages tell users
    # to set AWS_REGION, so make_session must honour it (and --region first).
    from ecs_gpu.aws.clients import make_session

    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert make_session().region_name == "eu-west-1"
    assert make_session(region="us-west-2").region_name == "us-west-2"
    monkeypatch.delenv("AWS_REGION")
    assert make_session().region_name is None


def test_unknown_profile_names_where_it_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    from ecs_gpu.aws.clients import make_session

    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_PROFILE", "from-env")
    with pytest.raises(BadInputError, match=r"^AWS_PROFILE=from-env: no such AWS profile"):
        make_session()
    with pytest.raises(BadInputError, match=r"^--profile flag: no such AWS profile"):
        make_session("flag")


def test_bare_http_403_is_access_denied_everywhere() -> None:
    # botocore's code when it cannot parse the body: the doctor's per-kind
    # isolation must record it as a denial (with the permission), as translate does.
    from ecs_gpu.aws.errors import is_access_denied

    e = _client_error("403", "DescribeAlarms")
    assert is_access_denied(e)
    err = translate(e, "cloudwatch", "DescribeAlarms")
    assert isinstance(err, AccessDenied) and err.permission == "cloudwatch:DescribeAlarms"
    assert not is_access_denied(_client_error("ValidationError"))


def _raiser(exc: BaseException) -> Any:
    def boom() -> None:
        raise exc

    return boom


def test_an_error_that_escaped_to_the_cli_reads_as_translate_says(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # One mapping from botocore to exit codes: the CLI's last line of defence
    # prints what translate() makes of the error, with its exit code.
    from ecs_gpu import cli

    monkeypatch.delenv("ECS_GPU_DEBUG", raising=False)
    cases: list[BaseException] = [
        _client_error("AccessDeniedException", "DescribeServices"),
        _client_error("ValidationError", "DescribeStacks"),
        bx.NoCredentialsError(),
        bx.EndpointConnectionError(endpoint_url="http://127.0.0.1:9"),
        bx.NoRegionError(),
    ]
    for exc in cases:
        expected = translate(exc)
        assert isinstance(expected, EcsGpuError)

        cli.app.command("boom-translate", hidden=True)(_raiser(exc))
        try:
            assert cli.main(["boom-translate"]) == expected.exit_code
        finally:
            cli.app.registered_commands = [
                c for c in cli.app.registered_commands if c.name != "boom-translate"
            ]
        err = " ".join(capsys.readouterr().err.split())
        assert " ".join(expected.message.split()) in err


def test_translate_without_a_service_names_the_operation() -> None:
    err = translate(_client_error("AccessDenied", "CreateServiceLinkedRole"))
    assert isinstance(err, AccessDenied)
    assert err.operation == "CreateServiceLinkedRole"
    assert "AWS denied CreateServiceLinkedRole" in err.message
    assert err.exit_code == EXIT_AWS


def test_parameter_validation_is_bad_input_naming_the_parameter() -> None:
    import boto3

    cw = boto3.Session(
        aws_access_key_id="t", aws_secret_access_key="t", region_name="us-east-1"
    ).client("cloudwatch")
    with pytest.raises(bx.ParamValidationError) as raised:
        cw.describe_alarms(AlarmNames=[""])
    err = translate(raised.value, "cloudwatch", "DescribeAlarms")
    assert isinstance(err, BadInputError) and not isinstance(err, AwsError)
    assert err.exit_code == 2
    assert "cloudwatch DescribeAlarms refuses a parameter before it is sent" in err.message
    assert "AlarmNames[0]" in err.message
    # The same through mapped(), the one path every call takes.
    with pytest.raises(BadInputError, match="AlarmNames"), mapped("cloudwatch", "DescribeAlarms"):
        raise raised.value


def test_a_response_no_aws_api_sends_is_unreachable() -> None:
    from ecs_gpu.aws.errors import NotAwsResponse

    exc = NotAwsResponse(endpoint="http://127.0.0.1:1", operation="GetMetricData", what="x")
    err = translate(exc, "cloudwatch", "GetMetricData")
    assert isinstance(err, Unreachable) and err.exit_code == EXIT_AWS
    assert "http://127.0.0.1:1 answered GetMetricData with x" in err.message
