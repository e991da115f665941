"""deploy/diff --template-bucket: a template over TemplateBody's limit travels through S3.

Against moto in server mode. moto models S3 (buckets with a Region,
HeadBucket's x-amz-bucket-region, IAM checks on PutObject once auth is on)
and CloudFormation's TemplateURL (it reads the object from its own S3 by
the bucket and key in the URL). The spec is the largest realistic one of
tests/template/test_limits.py, whose template is over 51,200 bytes.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import boto3
import pytest

from ecs_gpu.aws import staging as st
from ecs_gpu.cli import deploy as deploy_cli
from ecs_gpu.cli import main, options, render
from ecs_gpu.errors import EXIT_AWS, EXIT_INTERRUPTED, BadInputError, EcsGpuError
from ecs_gpu.spec import parse_spec
from ecs_gpu.template.limits import MAX_TEMPLATE_BODY_BYTES
from ecs_gpu.template.synth import synth_template
from support.moto_cfn import ami_parameters, for_moto
from template.test_limits import largest_spec_text

from .conftest import NO_WAIT, Clients
from .test_failures import as_user, restricted_user

BUCKET = "team-cfn-templates"
ACCOUNT = "123456789012"  # moto's default account
BUCKET_OPT = st.TemplateBucket(BUCKET, owner=ACCOUNT)


EXAMPLE = "g5-vllm.toml"


@pytest.fixture(scope="module")
def largest_text() -> str:
    return largest_spec_text(EXAMPLE)


@pytest.fixture(scope="module")
def largest_synth(largest_text: str) -> tuple[str, dict[str, Any]]:
    spec = parse_spec(largest_text, "largest")
    return spec.service.name, for_moto(synth_template(spec))


@pytest.fixture
def largest(aws: str, largest_synth: tuple[str, dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
    """(stack, service name, the largest spec's template as moto can deploy it).

    The spec names a VPC, subnets and a certificate of the user's; moto refuses
    ids it does not have, so they are created here and their ids put in the
    template.
    """
    name, template = largest_synth
    text = json.dumps(template)
    session = boto3.Session()
    ec2 = session.client("ec2")
    spec = tomllib.loads(largest_spec_text(EXAMPLE))
    cert = session.client("acm").request_certificate(DomainName="llm.example.com")
    text = text.replace(spec["load_balancer"]["certificate_arn"], cert["CertificateArn"])
    network = spec["network"]
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    text = text.replace(network["vpc_id"], vpc)
    for i, old in enumerate([*network["subnet_ids"], *network["public_subnet_ids"]]):
        az = "us-east-1" + "abc"[i % 3]
        new = ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.0.{i}.0/24", AvailabilityZone=az)
        text = text.replace(old, new["Subnet"]["SubnetId"])
    return name, name, json.loads(text)


def size(template: dict[str, Any]) -> int:
    return len(st.minified(template).encode())


def s3() -> Any:
    return boto3.Session().client("s3")


def make_bucket(name: str = BUCKET, region: str = "us-east-1") -> None:
    kw: dict[str, Any] = {"Bucket": name}
    if region != "us-east-1":
        kw["CreateBucketConfiguration"] = {"LocationConstraint": region}
    boto3.Session().client("s3", region_name=region).create_bucket(**kw)


def objects(name: str = BUCKET) -> list[str]:
    return [o["Key"] for o in s3().list_objects_v2(Bucket=name).get("Contents", [])]


def record_params(client: Any) -> list[tuple[str, dict[str, Any]]]:
    """(operation, parameters) of every call the client sends (a botocore event hook)."""
    calls: list[tuple[str, dict[str, Any]]] = []

    def hook(model: Any, params: dict[str, Any], **_: Any) -> None:
        calls.append((model.name, dict(params)))

    # Before serialization: the API's own parameter names, for REST (S3) and query (CFN).
    client.meta.events.register("before-parameter-build", hook)
    return calls


def test_largest_spec_deploys_through_the_bucket_and_the_object_is_gone(
    clients: Clients, largest: tuple[str, str, dict[str, Any]]
) -> None:
    stack, service, template = largest
    assert size(template) > MAX_TEMPLATE_BODY_BYTES  # the case this option exists for
    make_bucket()
    s3c = s3()
    cfn_calls = record_params(clients.cfn)
    s3_calls = record_params(s3c)
    result = deploy_cli.run_deploy(
        clients.cfn,
        stack,
        template,
        yes=True,
        waits=NO_WAIT,
        service_name=service,
        bucket=BUCKET_OPT,
        s3=s3c,
        parameters=ami_parameters(template),
    )
    assert result is not None and result.status == "CREATE_COMPLETE"
    create = [p for op, p in cfn_calls if op == "CreateChangeSet"]
    assert len(create) == 1 and "TemplateBody" not in create[0]
    key = st.template_key("ecs-gpu/", stack, st.minified(template))
    assert create[0]["TemplateURL"] == f"https://{BUCKET}.s3.us-east-1.amazonaws.com/{key}"
    ops = [op for op, _ in s3_calls]
    assert ops == ["HeadBucket", "PutObject", "DeleteObject"]
    # Every S3 call insists the bucket is the caller's account's.
    assert {p.get("ExpectedBucketOwner") for _, p in s3_calls} == {ACCOUNT}
    put = dict(s3_calls)["PutObject"]
    # No ACL and no encryption override: private, the bucket's default encryption.
    assert put["Key"] == key and "ACL" not in put and "ServerSideEncryption" not in put
    assert objects() == []
    # CloudFormation deployed the very template that was staged.
    got = clients.cfn.get_template(StackName=stack)["TemplateBody"]
    assert (json.loads(got) if isinstance(got, str) else got) == template


def test_diff_of_the_deployed_stack_stages_and_removes_the_template(
    clients: Clients, largest: tuple[str, str, dict[str, Any]]
) -> None:
    stack, service, template = largest
    make_bucket()
    s3c = s3()
    kw: dict[str, Any] = {
        "waits": NO_WAIT,
        "service_name": service,
        "bucket": BUCKET_OPT,
        "parameters": ami_parameters(template),
    }
    deploy_cli.run_deploy(clients.cfn, stack, template, yes=True, s3=s3c, **kw)
    cfn_calls = record_params(clients.cfn)
    p = deploy_cli.run_diff(clients.cfn, stack, template, s3=s3c, **kw)
    assert not p.new_stack and p.change_set_id is None
    assert [("TemplateURL" in b) for op, b in cfn_calls if op == "CreateChangeSet"] == [True]
    assert objects() == []


def test_over_the_limit_without_a_bucket_is_refused_before_any_call(
    clients: Clients, largest: tuple[str, str, dict[str, Any]]
) -> None:
    stack, service, template = largest
    calls = record_params(clients.cfn)
    with pytest.raises(BadInputError) as exc:
        deploy_cli.run_deploy(
            clients.cfn, stack, template, yes=True, waits=NO_WAIT, service_name=service
        )
    assert exc.value.exit_code == 2
    assert "--template-bucket" in exc.value.message and "51,200" in exc.value.message
    assert calls == []


def test_ctrl_c_while_following_still_deletes_the_object(
    clients: Clients,
    largest: tuple[str, str, dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack, service, template = largest
    make_bucket()

    def interrupted(*_: Any, **__: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(render, "follow_with_progress", interrupted)
    with pytest.raises(EcsGpuError) as exc:
        deploy_cli.run_deploy(
            clients.cfn,
            stack,
            template,
            yes=True,
            waits=NO_WAIT,
            service_name=service,
            bucket=BUCKET_OPT,
            s3=s3(),
            parameters=ami_parameters(template),
        )
    assert exc.value.exit_code == EXIT_INTERRUPTED
    assert objects() == []


def test_the_cli_expects_the_callers_own_account_to_own_the_bucket(aws: str) -> None:
    staging = options.owned_by_caller(
        options._aws(None, "us-east-1"), options.template_bucket(BUCKET, "t/")
    )
    assert staging == st.TemplateBucket(BUCKET, "t/", owner=ACCOUNT)
    assert options.owned_by_caller(options._aws(None, "us-east-1"), None) is None


def write_spec(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "largest.toml"
    path.write_text(text)
    return path


def test_cli_missing_bucket_exits_2_naming_the_option(
    aws: str, tmp_path: Path, largest_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, largest_text)
    # --skip-preflight: the largest spec names subnets, a reservation and secrets
    # that moto does not hold, so preflight would refuse (exit 1) before the bucket
    # is reached; this test is about the bucket.
    code = main(
        [
            "deploy",
            str(spec),
            "--yes",
            "--template-bucket",
            "no-such-bucket-here",
            "--skip-preflight",
        ]
    )
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "--template-bucket no-such-bucket-here: no such bucket" in err and "Fix:" in err
    # Refused before the question: no stack, not even REVIEW_IN_PROGRESS.
    stacks = boto3.Session().client("cloudformation").list_stacks()["StackSummaries"]
    assert stacks == []


def test_cli_bucket_in_another_region_exits_2_and_explains(
    aws: str, tmp_path: Path, largest_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    make_bucket("templates-in-ireland", "eu-west-1")
    spec = write_spec(tmp_path, largest_text)
    code = main(["diff", str(spec), "--template-bucket", "templates-in-ireland"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "is in eu-west-1, the stack in us-east-1" in err
    assert "--region eu-west-1" in err
    assert objects("templates-in-ireland") == []


def test_cli_bucket_url_instead_of_a_name_exits_2(
    aws: str, tmp_path: Path, largest_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_spec(tmp_path, largest_text)
    code = main(["diff", str(spec), "--template-bucket", f"s3://{BUCKET}"])
    assert code == 2
    assert "not an S3 bucket name" in capsys.readouterr().err


def test_cli_denied_put_object_exits_3_naming_it_and_the_bucket(
    aws: str,
    tmp_path: Path,
    largest_text: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    make_bucket()
    # Everything deploy needs except s3:PutObject (HeadBucket is s3:ListBucket;
    # the AMI choice reads SSM and EC2).
    env = restricted_user(
        [
            "cloudformation:*",
            "iam:*",
            "s3:ListBucket",
            "s3:GetObject",
            "ssm:GetParameter",
            "ec2:DescribeImages",
        ]
    )
    request.getfixturevalue("iam_enforced")
    as_user(monkeypatch, env)
    spec = write_spec(tmp_path, largest_text)
    # --skip-preflight: as above, preflight would refuse the largest spec's
    # subnets, reservation and secrets (absent from moto) before the bucket.
    code = main(["deploy", str(spec), "--yes", "--template-bucket", BUCKET, "--skip-preflight"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_AWS
    assert "s3:PutObject" in err and f"--template-bucket {BUCKET}" in err
    assert "Traceback" not in err


def test_cli_prefix_without_a_bucket_exits_2_before_any_call(
    tmp_path: Path, largest_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--template-prefix says where in the bucket: without one it would silently do nothing."""
    spec = write_spec(tmp_path, largest_text)
    code = main(["diff", str(spec), "--template-prefix", "team/"])
    assert code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--template-prefix 'team/': names where in --template-bucket" in err
    assert "add --template-bucket BUCKET" in err


def test_the_default_prefix_applies_with_a_bucket() -> None:
    from ecs_gpu.aws.staging import DEFAULT_TEMPLATE_PREFIX

    staged = options.template_bucket(BUCKET, None)
    assert staged is not None and staged.prefix == DEFAULT_TEMPLATE_PREFIX
