"""aws/staging: the staged template's key and URL, the size limits, a bucket of another account."""

from __future__ import annotations

from collections.abc import Callable

import boto3
import pytest
from botocore.stub import ANY, Stubber

from cli.test_template_bucket import ACCOUNT, BUCKET, BUCKET_OPT
from ecs_gpu.aws import staging as st
from ecs_gpu.aws.errors import AccessDenied
from ecs_gpu.errors import EXIT_AWS
from ecs_gpu.template import limits as template


def test_key_and_url_forms() -> None:
    a = st.template_key("ecs-gpu/", "svc", '{"a":1}')
    assert a.startswith("ecs-gpu/svc-") and a.endswith(".json")
    # docs/operate.md: PREFIX + STACK + "-" + 16 hex of the body's SHA-256 + ".json"
    # (sha256 of '{"a":1}' begins 015abd7f5cc57a2d).
    assert a == "ecs-gpu/svc-015abd7f5cc57a2d.json"
    # Another template or another stack never shares an object.
    assert a != st.template_key("ecs-gpu/", "svc", '{"a":2}')
    assert a != st.template_key("ecs-gpu/", "svc2", '{"a":1}')
    assert st.template_url("b", "k/x.json", "eu-west-1") == (
        "https://b.s3.eu-west-1.amazonaws.com/k/x.json"
    )
    # A dotted name would not match S3's certificate as a host name: path-style.
    assert st.template_url("a.b", "k", "us-east-1") == "https://s3.us-east-1.amazonaws.com/a.b/k"
    assert st.template_url("b", "k", "cn-north-1", "aws-cn").endswith(".amazonaws.com.cn/k")


def test_size_limits_inline_and_through_s3() -> None:
    over_body = "x" * (template.MAX_TEMPLATE_BODY_BYTES + 1)
    inline = st.template_size_problem(over_body)
    assert inline is not None and "--template-bucket" in inline
    assert st.template_size_problem(over_body, bucket=True) is None
    over_url = "x" * (template.MAX_TEMPLATE_URL_BYTES + 1)
    for bucket in (False, True):
        problem = st.template_size_problem(over_url, bucket=bucket)
        assert problem is not None and "TemplateURL" in problem


def test_a_bucket_of_another_account_is_refused_as_denied() -> None:
    """moto ignores ExpectedBucketOwner (moto/s3 never reads it), so S3's documented
    answer to a mismatch, 403 AccessDenied, comes from a Stubber here."""
    client = boto3.Session(
        aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1"
    ).client("s3")
    body = st.minified({"Resources": {}})
    key = st.template_key("ecs-gpu/", "svc", body)
    owner = {"Bucket": BUCKET, "ExpectedBucketOwner": ACCOUNT}
    with Stubber(client) as stub:
        stub.add_client_error("head_bucket", "403", http_status_code=403, expected_params=owner)
        stub.add_client_error(
            "put_object",
            "AccessDenied",
            "Access Denied",
            http_status_code=403,
            expected_params={**owner, "Key": key, "Body": ANY, "ContentType": "application/json"},
        )
        source = st.TemplateSource({"Resources": {}}, "svc", bucket=BUCKET_OPT, s3=client)
        with pytest.raises(AccessDenied) as exc:
            source.stage("us-east-1")
        stub.assert_no_pending_responses()
    assert exc.value.exit_code == EXIT_AWS and exc.value.permission == "s3:PutObject"
    assert f"not owned by your account {ACCOUNT}" in exc.value.message
    assert source.remove() is None  # nothing was staged, nothing to delete


def test_template_over_the_body_limit_is_refused_with_exit_2() -> None:
    big = {"Resources": {f"R{i}": {"Type": "AWS::SNS::Topic"} for i in range(2000)}}
    with pytest.raises(Exception) as exc:
        st.template_body(big)
    assert getattr(exc.value, "exit_code", None) == 2
    assert "51,200" in str(exc.value) and "S3 bucket" in str(exc.value)
    small: Callable[[], str] = lambda: st.template_body({"Resources": {}})  # noqa: E731
    assert small() == '{"Resources":{}}'  # minified: no spaces
