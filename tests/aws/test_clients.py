# ruff: noqa: E501  (one case per line reads best)
"""aws/clients.py: the response guard that refuses what no AWS API sends, and the timeouts."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest

from ecs_gpu.aws import clients
from ecs_gpu.aws.errors import NotAwsResponse
from ecs_gpu.errors import BadInputError

_MODELS = botocore.session.get_session()


def _op(service: str, operation: str) -> Any:
    return _MODELS.get_service_model(service).operation_model(operation)


def _response(status: int, body: bytes, ctype: str) -> dict[str, Any]:
    return {"status_code": status, "headers": {"content-type": ctype}, "body": body}


@pytest.mark.parametrize(
    ("service", "operation", "response", "what"),
    [
        ("ecs", "DescribeServices", _response(200, b"\xff\xfe\x00junk", "application/json"), "7 bytes that are not text"),
        ("ecs", "DescribeServices", _response(500, b"\x80\x81", "application/json"), "2 bytes that are not text"),
        ("ecs", "DescribeServices", _response(200, b"<html><body>log in</body></html>", "text/html"), "an HTML page (HTTP 200, text/html)"),
        ("ecs", "DescribeServices", _response(200, b"hello", "text/plain"), "a body that is not JSON"),
        ("ecs", "DescribeServices", _response(200, b"[1]", "application/json"), "JSON that is no object"),
        ("autoscaling", "DescribeAutoScalingGroups", _response(200, b"hello", "text/xml"), "a body that is not XML"),
        ("autoscaling", "DescribeAutoScalingGroups", _response(200, b"<!DOCTYPE html><html/>", "text/xml"), "an HTML page"),
    ],
)  # fmt: skip
def test_what_no_aws_api_sends_is_refused(
    service: str, operation: str, response: dict[str, Any], what: str
) -> None:
    with pytest.raises(NotAwsResponse) as e:
        clients.refuse_non_aws("http://127.0.0.1:9", _op(service, operation), response)
    assert f"http://127.0.0.1:9 answered {operation} with {what}" in str(e.value)


@pytest.mark.parametrize(
    ("service", "operation", "response"),
    [
        ("ecs", "DescribeServices", _response(200, b'{"services": []}', "application/x-amz-json-1.1")),
        # JSON labelled text/html (moto's server does so) is still JSON.
        ("application-autoscaling", "DescribeScalableTargets", _response(200, b'{"ScalableTargets": []}', "text/html; charset=utf-8")),
        ("ecs", "DescribeServices", _response(200, b"", "application/x-amz-json-1.1")),
        # An error page keeps its status: botocore reports 403 as a denial, 502 as a failure.
        ("ecs", "DescribeServices", _response(403, b"<html>Forbidden</html>", "text/html")),
        ("autoscaling", "DescribeAutoScalingGroups", _response(200, b"<DescribeAutoScalingGroupsResponse/>", "text/xml")),
    ],
)  # fmt: skip
def test_what_aws_sends_passes(service: str, operation: str, response: dict[str, Any]) -> None:
    clients.refuse_non_aws("http://127.0.0.1:9", _op(service, operation), response)


def test_the_timeout_setting_overrides_both_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3

    session = boto3.Session(
        aws_access_key_id="t", aws_secret_access_key="t", region_name="us-east-1"
    )
    monkeypatch.delenv(clients.TIMEOUT_ENV, raising=False)
    assert clients.client(session, "ecs", fail_fast=True).meta.config.read_timeout == 5
    assert clients.client(session, "ecs").meta.config.read_timeout == 30
    monkeypatch.setenv(clients.TIMEOUT_ENV, "2.5")
    cfg = clients.client(session, "ecs").meta.config
    assert (cfg.connect_timeout, cfg.read_timeout) == (2.5, 2.5)
    for bad in ("0", "-1", "nan", "x"):
        monkeypatch.setenv(clients.TIMEOUT_ENV, bad)
        with pytest.raises(BadInputError, match=clients.TIMEOUT_ENV):
            clients.client(session, "ecs")


@pytest.fixture
def profile_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    """Credentials only from a config file's profile (no keys in the environment)."""
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    def write(text: str) -> Any:
        path = tmp_path / "config"
        path.write_text(text)
        monkeypatch.setenv("AWS_CONFIG_FILE", str(path))
        return path

    return write


@pytest.mark.parametrize(
    "process",
    [
        "/nonexistent/credential-helper --token s3cr3t",  # missing
        "/bin/echo not-json --token s3cr3t",  # prints no JSON
        "/bin/false --token s3cr3t",  # exits non-zero (botocore's CredentialRetrievalError)
    ],
)
def test_a_failing_credential_process_is_bad_input_naming_the_profile(
    profile_only: Any, process: str
) -> None:
    profile_only(f"[profile p]\nregion = us-east-1\ncredential_process = {process}\n")
    session = clients.make_session(profile="p")
    with pytest.raises(BadInputError) as exc:
        clients.check_ready(session)
    program = process.split()[0]
    assert f"AWS profile 'p' (credential_process runs {program})" in exc.value.message
    # Its arguments may hold a secret: never printed.
    assert "s3cr3t" not in exc.value.message


def test_a_malformed_credentials_file_names_its_own_variable(
    profile_only: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    profile_only("[profile p]\nregion = us-east-1\n")
    bad = tmp_path / "credentials"
    bad.write_text("AKID\n[default\nfoo")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(bad))
    with pytest.raises(BadInputError) as exc:
        clients.check_ready(clients.make_session(profile="p"))
    assert f"AWS credentials file {bad}: cannot be parsed" in exc.value.message
    assert "AWS_SHARED_CREDENTIALS_FILE" in exc.value.message


def test_a_malformed_config_file_is_bad_input_naming_it(profile_only: Any) -> None:
    path = profile_only("[profile p\nregion = us-east-1\n")
    with pytest.raises(BadInputError) as exc:
        clients.check_ready(clients.make_session(profile="p", region="us-east-1"))
    assert str(path) in exc.value.message and "cannot be parsed" in exc.value.message


@pytest.mark.parametrize("url", ["notaurl", "http://[::1", "http://host:abc"])
def test_a_malformed_endpoint_url_is_bad_input(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    session = clients.make_session(region="us-east-1")
    with pytest.raises(BadInputError) as exc:
        clients.client(session, "ecs")
    assert "AWS_ENDPOINT_URL" in exc.value.message
