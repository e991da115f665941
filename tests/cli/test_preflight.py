"""``ecs-gpu preflight`` and deploy's gate, against a moto server.

moto (5.2) has EC2 offerings, subnets, route tables, VPC endpoints, SSM,
Secrets Manager, ECR and IAM, and these tests read them from it. What it
lacks is answered AWS-shaped through botocore's Stubber (which checks each
answer against the service's output shape): Service Quotas knows only the
"vpc" service there (GetServiceQuota answers NoSuchResourceException for
every EC2 code, GetAWSDefaultServiceQuota is not implemented and answers
500), and DescribeCapacityReservations is not implemented (its
reservation checks are in tests/checks/preflight/).
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from ecs_gpu.aws import preflight as pf
from ecs_gpu.checks.preflight.account import Needs
from ecs_gpu.cli import main, prelude
from ecs_gpu.errors import EXIT_AWS, EXIT_BAD_INPUT, EXIT_OK, EXIT_PROBLEMS, BadInputError
from ecs_gpu.spec import load_spec

from .test_failures import as_user, restricted_user

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
G5 = EXAMPLES / "g5-vllm.toml"
ACCOUNT = "123456789012"
QUOTA_PARAMS = {"ServiceCode": "ec2", "QuotaCode": "L-DB2E81BA"}


def _quota(value: float) -> dict[str, Any]:
    return {
        "Quota": {
            "ServiceCode": "ec2",
            "QuotaArn": f"arn:aws:servicequotas:us-east-1:{ACCOUNT}:ec2/L-DB2E81BA",
            "QuotaCode": "L-DB2E81BA",
            "QuotaName": "Running On-Demand G and VT instances",
            "Value": value,
            "Unit": "None",
            "Adjustable": True,
            "GlobalQuota": False,
        }
    }


def _spec(tmp_path: Path, extra: str = "", *, replace: tuple[str, str] | None = None) -> Path:
    text = G5.read_text(encoding="utf-8")
    if replace is not None:
        text = text.replace(*replace)
    path = tmp_path / "spec.toml"
    path.write_text(text + extra, encoding="utf-8")
    return path


def _by_id(doc: dict[str, Any], check_id: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["id"] == check_id]


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any], str]:
    code = main(["preflight", *args, "--json"])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def test_on_moto_the_g5_example_passes_and_the_quota_moto_lacks_is_unknown(
    aws: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """moto: offerings, AZs, the public AMI parameter and IAM answer; quotas do not."""
    code, doc, err = _json(capsys, str(G5))
    assert code == EXIT_OK
    assert {"stack", "region", "needs", "findings", "unknown", "ok", "missing_permissions"} <= set(
        doc
    )
    assert doc["stack"] == "vllm-g5" and doc["region"] == "us-east-1"
    # 4 g5.xlarge and 1 beside them while an instance refresh rolls, 4 vCPUs each.
    assert doc["needs"]["refresh_instances"] == 1
    assert doc["needs"]["vcpus_needed"] == 20 and doc["needs"]["quota"]["code"] == "L-DB2E81BA"
    assert {"PRE002", "PRE004"} <= set(doc["ok"])
    (unknown,) = doc["unknown"]
    assert unknown["id"] == "PRE001" and "GetAWSDefaultServiceQuota" in unknown["reason"]
    assert [f["severity"] for f in _by_id(doc, "PRE009")] == ["info"]  # deploy creates it
    assert {n["id"] for n in doc["not_applicable"]} >= {"PRE005", "PRE010", "PRE011"}
    assert "preflight: " in err  # the summary still reaches a person


def test_on_moto_a_spot_spec_also_asks_for_the_spot_quota(
    aws: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """moto's Service Quotas knows no EC2 code: both quota checks are unknown, the rest runs."""
    spec = tmp_path / "spot.toml"
    table = '\n[capacity.spot]\ninstance_types = ["g5.xlarge", "g6.xlarge"]\n'
    spec.write_text(G5.read_text().replace("\n[scaling]\n", table + "\n[scaling]\n"))
    code, doc, _ = _json(capsys, str(spec))
    assert code == EXIT_OK
    assert doc["needs"]["spot_vcpus_needed"] == 20
    assert [q["code"] for q in doc["needs"]["spot_quotas"]] == ["L-3819A6DF"]
    assert doc["needs"]["spot_quotas"][0]["vcpus_needed"] == 20
    assert sorted(u["id"] for u in doc["unknown"]) == ["PRE001", "PRE012"]
    assert "PRE012" not in {n["id"] for n in doc["not_applicable"]}


def test_the_table_on_a_terminal_names_each_finding_and_the_summary(
    aws: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["preflight", str(G5)]) == EXIT_OK
    out = " ".join(capsys.readouterr().out.split())
    assert "ecs-gpu preflight: stack vllm-g5 in us-east-1" in out
    assert "PRE009" in out and "Not checked (unknown)" in out
    assert "PRE011 not needed:" in out and "creates its own VPC" in out


@pytest.fixture
def quotas_stub(monkeypatch: pytest.MonkeyPatch, aws: str) -> Stubber:
    """Service Quotas answered AWS-shaped (moto lacks EC2's); everything else from moto."""
    sq = boto3.Session().client("service-quotas")
    stub = Stubber(sq)
    stub.activate()
    real = pf.Collector.client

    def client(self: pf.Collector, service: str, region: str | None = None) -> Any:
        return sq if service == "service-quotas" else real(self, service, region)

    monkeypatch.setattr(pf.Collector, "client", client)
    return stub


def _needs() -> Needs:
    return Needs.from_spec(load_spec(G5), "us-east-1")


def test_an_applied_quota_too_low_is_an_error(quotas_stub: Stubber) -> None:
    quotas_stub.add_response("get_service_quota", _quota(8.0), QUOTA_PARAMS)
    result = pf.preflight(boto3.Session(), _needs())
    (f,) = [f for f in result.report.findings if f.id == "PRE001"]
    assert f.severity == "error" and "(L-DB2E81BA) is 8 vCPUs" in f.title and "needs 16" in f.title
    assert "request-service-quota-increase" in f.fix
    quotas_stub.assert_no_pending_responses()


def test_without_an_applied_value_the_aws_default_is_read(quotas_stub: Stubber) -> None:
    quotas_stub.add_client_error(
        "get_service_quota", "NoSuchResourceException", "no applied value", 400, QUOTA_PARAMS
    )
    quotas_stub.add_response("get_aws_default_service_quota", _quota(64.0), QUOTA_PARAMS)
    result = pf.preflight(boto3.Session(), _needs())
    (f,) = [f for f in result.report.findings if f.id == "PRE001"]
    assert f.severity == "info" and "64 vCPUs (AWS default) against 20 needed" in f.title
    # Usage is read from moto's DescribeInstances: none there (moto matches the
    # g* filter without wildcards; tests/aws/test_preflight.py answers it AWS-shaped).
    assert "0 in use now" in f.title


def test_access_denied_on_service_quotas_makes_only_the_quota_check_unknown(
    quotas_stub: Stubber,
) -> None:
    quotas_stub.add_client_error(
        "get_service_quota", "AccessDeniedException", "not authorized", 400, QUOTA_PARAMS
    )
    result = pf.preflight(boto3.Session(), _needs())
    assert [r.check.id for r in result.report.unknown] == ["PRE001"]
    assert "servicequotas:GetServiceQuota" in result.report.unknown[0].reason
    assert [d["permission"] for d in result.report.missing_permissions] == [
        "servicequotas:GetServiceQuota"
    ]
    assert result.report.checked == len(result.report.results) - 1


def _default_route(ec2: Any, vpc: str, **target: str) -> None:
    """0.0.0.0/0 in the VPC's main route table, to ``target`` (GatewayId=, NatGatewayId=)."""
    (main_rt,) = ec2.describe_route_tables(
        Filters=[
            {"Name": "vpc-id", "Values": [vpc]},
            {"Name": "association.main", "Values": ["true"]},
        ]
    )["RouteTables"]
    ec2.create_route(
        RouteTableId=main_rt["RouteTableId"], DestinationCidrBlock="0.0.0.0/0", **target
    )


def _network(tmp_path: Path, ec2: Any, *, nat: bool, extra_subnet: str | None = None) -> Path:
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    # moto's offerings: g5.xlarge is offered in us-east-1a but not in us-east-1e.
    a = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24", AvailabilityZone="us-east-1a")
    e = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.2.0/24", AvailabilityZone="us-east-1e")
    ids = [a["Subnet"]["SubnetId"], e["Subnet"]["SubnetId"]]
    ids += [extra_subnet] if extra_subnet else []
    if nat:
        # moto keeps a route's NatGatewayId only for a NAT gateway it knows.
        eip = ec2.allocate_address(Domain="vpc")["AllocationId"]
        gw = ec2.create_nat_gateway(SubnetId=ids[0], AllocationId=eip)["NatGateway"]
        _default_route(ec2, vpc, NatGatewayId=gw["NatGatewayId"])
    return _spec(tmp_path, f'\n[network]\nvpc_id = "{vpc}"\nsubnet_ids = {json.dumps(ids)}\n')


def test_network_checks_read_moto_subnets_routes_and_endpoints(
    aws: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """moto: the subnets, the main route table (local route only) and no endpoints."""
    ec2 = boto3.Session().client("ec2")
    spec = _network(tmp_path, ec2, nat=False, extra_subnet="subnet-0000000000000dead")
    code, doc, _ = _json(capsys, str(spec))
    assert code == EXIT_PROBLEMS
    (az,) = _by_id(doc, "PRE003")
    assert "not offered in us-east-1e" in az["title"]
    (missing,) = _by_id(doc, "PRE010")
    assert missing["title"] == "subnet subnet-0000000000000dead does not exist in us-east-1"
    egress = _by_id(doc, "PRE011")
    assert len(egress) == 2 and all("no route out" in f["title"] for f in egress)


def test_a_nat_route_satisfies_the_egress_check(
    aws: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = _network(tmp_path, boto3.Session().client("ec2"), nat=True)
    _, doc, _ = _json(capsys, str(spec))
    assert "PRE011" in doc["ok"] and "PRE010" in doc["ok"]


def test_secrets_and_the_ecr_image_are_read_from_moto(
    aws: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = boto3.Session()
    arn = session.client("secretsmanager").create_secret(Name="hf-token", SecretString="x")["ARN"]
    session.client("ssm").put_parameter(Name="/llm/key", Value="x", Type="SecureString")
    ecr = session.client("ecr")
    ecr.create_repository(repositoryName="llm")
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {
            "mediaType": "application/vnd.docker.container.image.v1+json",
            "size": 1,
            "digest": "sha256:" + "a" * 64,
        },
        "layers": [],
    }
    ecr.put_image(repositoryName="llm", imageManifest=json.dumps(manifest), imageTag="v1")
    registry = f"{ACCOUNT}.dkr.ecr.us-east-1.amazonaws.com/llm"
    gone = f"arn:aws:ssm:us-east-1:{ACCOUNT}:parameter/llm/missing"
    secrets = (
        f'\n[service.secrets]\nHF_TOKEN = "{arn}"\nKEY = "arn:aws:ssm:us-east-1:{ACCOUNT}:'
        f'parameter/llm/key"\nGONE = "{gone}"\n'
    )
    image = ('image = "vllm/vllm-openai:v0.11.0"', f'image = "{registry}:v2"')
    code, doc, _ = _json(capsys, str(_spec(tmp_path, secrets, replace=image)))
    assert code == EXIT_PROBLEMS
    (sm,) = _by_id(doc, "PRE006")
    assert sm["severity"] == "info" and "secretsmanager:GetSecretValue" in sm["fix"]
    (ssm,) = _by_id(doc, "PRE007")
    assert ssm["severity"] == "error" and ssm["title"] == f"secret {gone} does not exist"
    (img,) = _by_id(doc, "PRE008")
    assert img["severity"] == "error" and "ImageNotFoundException" in img["title"]
    # The tag that exists passes.
    image = ('image = "vllm/vllm-openai:v0.11.0"', f'image = "{registry}:v1"')
    _, doc, _ = _json(capsys, str(_spec(tmp_path, "", replace=image)))
    assert "PRE008" in doc["ok"]


@pytest.mark.parametrize(
    ("args", "code", "says", "not_said"),
    [
        # A user allowed nothing preflight calls is denied each call.
        ([str(G5)], EXIT_AWS, "Nothing could be checked (exit 3)", "certificate_arn is"),
        # PRE013 needs no call: its error is exit 1, and the summary does not say exit 3.
        (
            [str(EXAMPLES / "g6e-alb-odcr.toml"), "--region", "eu-west-1"],
            EXIT_PROBLEMS,
            "PRE013",
            "Nothing could be checked",
        ),
    ],
)
def test_every_call_denied_is_exit_3_unless_a_check_without_aws_found_an_error(
    aws: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    says: str,
    not_said: str,
) -> None:
    """moto with IAM enforced, a user allowed only DescribeStacks."""
    env = restricted_user(["cloudformation:DescribeStacks"])
    request.getfixturevalue("iam_enforced")
    as_user(monkeypatch, env)
    assert main(["preflight", *args]) == code
    out = " ".join(capsys.readouterr().out.split())
    assert says in out and not_said not in out and "Missing permissions" in out


def test_an_unreachable_endpoint_is_exit_3_and_a_missing_spec_exit_2(
    aws: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Nothing listens on the port once the socket is closed: connections are refused.
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    assert main(["preflight", str(G5)]) == EXIT_AWS
    assert "cannot reach AWS" in capsys.readouterr().err
    assert main(["preflight", "no-such-spec.toml"]) == EXIT_BAD_INPUT


def test_deploy_refuses_on_a_preflight_error_and_skip_preflight_goes_ahead(
    aws: str,
    tmp_path: Path,
    template: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """moto: the secret is missing from Secrets Manager; the template is the stand-in."""
    synthesized: list[object] = []

    def synth(*_: object, **__: object) -> dict[str, Any]:
        synthesized.append(_)
        return template

    monkeypatch.setattr(prelude, "synth_template", synth)
    arn = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:hf-token-AbC123"
    spec = _spec(tmp_path, f'\n[service.secrets]\nHF_TOKEN = "{arn}"\n')
    args = ["deploy", str(spec), "--yes", "--poll-interval", "0.01"]
    assert main(args) == EXIT_PROBLEMS
    # The refusal comes before the template is synthesized (its seconds are not spent).
    assert synthesized == []
    err = " ".join(capsys.readouterr().err.split())
    assert "preflight found 1 error(s); nothing was deployed" in err
    assert f"PRE006: secret {arn} does not exist" in err and "--skip-preflight" in err
    cfn = boto3.Session().client("cloudformation")
    assert cfn.list_stacks()["StackSummaries"] == []

    assert main([*args, "--skip-preflight"]) == EXIT_OK
    err = " ".join(capsys.readouterr().err.split())
    assert "--skip-preflight: preflight did not run" in err
    assert cfn.describe_stacks(StackName="vllm-g5")["Stacks"][0]["StackStatus"] == (
        "CREATE_COMPLETE"
    )


def test_json_to_a_path_writes_the_report_and_still_prints_the_table(
    aws: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "preflight.json"
    assert main(["preflight", str(G5), "--json", str(report)]) == EXIT_OK
    out = " ".join(capsys.readouterr().out.split())
    assert "ecs-gpu preflight: stack vllm-g5" in out and f"findings JSON: {report}" in out
    doc = json.loads(report.read_text(encoding="utf-8"))
    assert doc["stack"] == "vllm-g5" and {f["id"] for f in doc["findings"]} >= {"PRE008"}
    # The output path is checked before any AWS call: SPEC itself is refused as --json.
    assert main(["preflight", str(G5), "--json", str(G5)]) == EXIT_BAD_INPUT
    assert "--json" in capsys.readouterr().err


def _pinned(tmp_path: Path, image_id: str) -> Path:
    pin = f'\n[capacity]\nami_id = "{image_id}"\ninstance_type = "g5.xlarge"'
    return _spec(tmp_path, replace=('\n[capacity]\ninstance_type = "g5.xlarge"', pin))


def test_a_pinned_ami_that_does_not_exist_fails_pre004_naming_the_key_and_the_id(
    aws: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """moto answers DescribeImages for an unknown id as AWS does: InvalidAMIID.NotFound."""
    missing = "ami-0123456789abcdef0"
    code, doc, _ = _json(capsys, str(_pinned(tmp_path, missing)))
    assert code == EXIT_PROBLEMS
    (f,) = _by_id(doc, "PRE004")
    assert f["severity"] == "error"
    assert f"[capacity] ami_id {missing} does not exist in us-east-1" in f["title"]
    assert "[capacity] ami_id" in f["fix"] and "drop ami_id" in f["fix"]


def test_a_pinned_ami_that_exists_passes_pre004(
    aws: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ec2 = boto3.Session().client("ec2")
    base = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    iid = ec2.run_instances(ImageId=base, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    image = ec2.create_image(InstanceId=iid, Name="pinned-gpu")["ImageId"]
    code, doc, _ = _json(capsys, str(_pinned(tmp_path, image)))
    assert code == EXIT_OK, doc["findings"]
    assert "PRE004" in doc["ok"]


def test_an_internet_gateway_route_is_a_way_out_only_where_instances_get_a_public_ip(
    aws: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """moto: a subnet whose main route table sends 0.0.0.0/0 to an internet gateway.

    The launch template sets no AssociatePublicIpAddress, so the subnet's
    MapPublicIpOnLaunch decides whether its instances can use that route.
    """
    ec2 = boto3.Session().client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    sid = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.1.0/24", AvailabilityZone="us-east-1a")[
        "Subnet"
    ]["SubnetId"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc)
    _default_route(ec2, vpc, GatewayId=igw)
    spec = _spec(tmp_path, f'\n[network]\nvpc_id = "{vpc}"\nsubnet_ids = ["{sid}"]\n')
    code, doc, _ = _json(capsys, str(spec))
    assert code == EXIT_PROBLEMS
    (f,) = _by_id(doc, "PRE011")
    assert (
        f"subnet {sid} routes 0.0.0.0/0 to {igw}, but its MapPublicIpOnLaunch is false"
        in (f["title"])
    )
    assert f"modify-subnet-attribute --subnet-id {sid} --map-public-ip-on-launch" in f["fix"]
    assert "NAT gateway" in f["fix"]
    ec2.modify_subnet_attribute(SubnetId=sid, MapPublicIpOnLaunch={"Value": True})
    code, doc, _ = _json(capsys, str(spec))
    # The instances now go out; the tasks (awsvpc on EC2: no public IP) still cannot, so
    # the demand sidecar (the example's [service.metrics]) cannot publish.
    (f,) = _by_id(doc, "PRE011")
    assert f["severity"] == "error" and "the demand sidecar cannot publish" in f["title"]
    assert "com.amazonaws.us-east-1.monitoring" in f["fix"] and "NAT gateway" in f["fix"]
    ec2.create_vpc_endpoint(
        VpcId=vpc,
        ServiceName="com.amazonaws.us-east-1.monitoring",
        VpcEndpointType="Interface",
        SubnetIds=[sid],
    )
    code, doc, _ = _json(capsys, str(spec))
    (f,) = _by_id(doc, "PRE011")
    assert f["severity"] == "warning" and "a task cannot download from the internet" in f["title"]


def test_stack_names_the_groups_whose_instances_are_part_of_the_need(
    aws: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _, doc, _ = _json(capsys, str(G5), "--stack", "canary")
    assert doc["stack"] == "canary" and doc["needs"]["own_groups"] == ["canary-gpu-asg"]
    _, doc, _ = _json(capsys, str(G5))
    assert doc["needs"]["own_groups"] == ["vllm-g5-gpu-asg"]


def test_deploys_preflight_reads_the_groups_of_the_stack_it_deploys(
    aws: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[Needs] = []

    def preflight(_session: Any, needs: Needs, **_: Any) -> Any:
        seen.append(needs)
        raise BadInputError("stop here")

    monkeypatch.setattr(pf, "preflight", preflight)
    assert main(["deploy", str(G5), "--stack", "canary", "--yes"]) == EXIT_BAD_INPUT
    assert [n.own_groups for n in seen] == [("canary-gpu-asg",)]
