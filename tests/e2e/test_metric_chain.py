"""The GPU metric chain end to end: synthesized template -> deployed stack -> agent -> verify.

Against the moto server (``aws`` fixture), with everything real except the
agent process itself:

1. examples/g5-vllm.toml on the GPU signal (tests/example_specs.py: the
   example less its concurrency settings; test_concurrency_chain.py runs the
   example itself) is synthesized (once per module) and deployed with
   the project's own deploy code (``deploy_cli.run_deploy``), as tests/cli
   does (the one GetAtt on an alarm moto skips becomes a literal ARN).
2. The agent config is read back FROM THE DEPLOYED launch template's user
   data, and the instance role's policies from the deployed IAM role
   (:mod:`tests.e2e.agent`), not from Python objects.
3. The emulated agent publishes, per that config and that IAM policy only,
   the values of a real A10G nvidia-smi sample (tests/data/nvidia-smi,
   parsed by the doctor's parser) for the ASG's real instances.
4. ``ecs-gpu verify metrics`` and ``ecs-gpu doctor --json`` run through
   ``ecs_gpu.cli.main`` against what landed.
5. Two breaks, each caught: the dimension changed in the deployed config
   (verify: "wrong dimension"), and a namespace outside the IAM condition
   (the agent is denied, nothing lands, verify: "nothing publishes").

What this cannot prove: that the real agent binary behaves as documented
(the emulator encodes docs/aws-semantics.md §5), that nvidia-smi runs on a
real GPU, or that cloud-init runs the file (tests/host/test_user_data.py validates the user
data with ``cloud-init schema``).
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest

from ecs_gpu.aws.deploy import Waits
from ecs_gpu.cli import deploy as deploy_cli
from ecs_gpu.cli import main
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.errors import EXIT_OK, EXIT_PROBLEMS
from ecs_gpu.host.probe import Gpu, parse_nvidia_smi_xml
from ecs_gpu.spec import load_spec, parse_spec
from example_specs import G5_GPU, write_g5_gpu
from support.moto_cfn import ami_parameters, for_moto

from . import agent

ROOT = Path(__file__).resolve().parents[2]
# g5.xlarge carries one A10G: the sample from aws/amazon-cloudwatch-agent's testdata.
A10G_XML = ROOT / "tests" / "data" / "nvidia-smi" / "a10g.xml"
SAMPLES = 3  # collection intervals the agent has published when verify looks
NAMES = Names(parse_spec(G5_GPU, "g5-vllm-gpu.toml").service.name)
NO_WAIT = Waits(poll_s=0.0, change_set_timeout_s=5.0, sleep=lambda _: None)


@pytest.fixture(scope="module")
def gpu_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The g5 example on the GPU signal, as a spec file the CLI reads."""
    return write_g5_gpu(tmp_path_factory.mktemp("spec"))


@pytest.fixture(scope="module")
def g5_template(gpu_spec: Path) -> dict[str, Any]:
    """The real synthesized template of that spec, synthesized once."""
    from ecs_gpu.template.synth import synth_template

    return for_moto(synth_template(load_spec(gpu_spec)))


@pytest.fixture(scope="module")
def a10g() -> list[Gpu]:
    gpus = list(parse_nvidia_smi_xml(A10G_XML.read_text()).gpus)
    assert [g.product_name for g in gpus] == ["NVIDIA A10G"]
    return gpus


@dataclass(frozen=True)
class Deployed:
    session: boto3.Session
    user_data: str  # base64, as EC2 serves it
    config: dict[str, Any]  # the agent JSON cloud-init writes
    policies: list[Any]  # the instance role's policy documents
    asg: str
    instances: list[agent.Instance]


@pytest.fixture
def deployed(aws: str, g5_template: dict[str, Any]) -> Iterator[Deployed]:
    """The g5 stack deployed into a fresh moto account, and what its instances would read."""
    session = boto3.Session()
    result = deploy_cli.run_deploy(
        session.client("cloudformation"),
        NAMES.stack,
        g5_template,
        yes=True,
        waits=NO_WAIT,
        service_name=NAMES.service_name,
        parameters=ami_parameters(g5_template),
    )
    assert result is not None and result.status == "CREATE_COMPLETE"
    lt = agent.launch_template_data(session, NAMES.stack)
    config = agent.agent_config_from_user_data(lt["UserData"], gpu_metric.AGENT_CONFIG_PATH)
    asg, instances = agent.asg_instances(session, NAMES.stack)
    yield Deployed(
        session=session,
        user_data=lt["UserData"],
        config=config,
        policies=agent.instance_role_policies(session, lt),
        asg=asg,
        instances=instances,
    )


def verify(capsys: pytest.CaptureFixture[str], spec: Path, *extra: str) -> tuple[int, str]:
    code = main(["verify", "metrics", str(spec), *extra])
    captured = capsys.readouterr()
    return code, " ".join((captured.out + captured.err).split())


def doctor(capsys: pytest.CaptureFixture[str], spec: Path) -> tuple[int, dict[str, Any]]:
    code = main(["doctor", str(spec), "--json", "-"])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return code, report


def _met_errors(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["id"].startswith("MET") and f["severity"] == "error"]


def test_what_the_instances_read_is_what_was_deployed(deployed: Deployed) -> None:
    """The chain's inputs come from moto's EC2/IAM/ASG, and they are the real ones."""
    # The ASG's instances carry the tag the agent resolves ${aws:AutoScalingGroupName} from.
    assert deployed.asg == NAMES.asg
    assert deployed.instances, "the deployed ASG launched no instance"
    assert {i.tags.get(agent.ASG_TAG) for i in deployed.instances} == {NAMES.asg}
    # The file cloud-init writes is the agent config, with a GPU plugin in it.
    assert "nvidia_gpu" in deployed.config["metrics"]["metrics_collected"]
    # The instance role carries the namespace-scoped PutMetricData the template grants.
    namespace = deployed.config["metrics"]["namespace"]
    assert agent.put_metric_data_denial(deployed.policies, namespace) is None
    assert agent.put_metric_data_denial(deployed.policies, "SomeOtherNamespace") is not None
    # EC2 and IAM serve what the stack's deployed template says, not something moto made up.
    body = deployed.session.client("cloudformation").get_template(StackName=NAMES.stack)
    resources = dict(body["TemplateBody"])["Resources"]
    (lt,) = [r for r in resources.values() if r["Type"] == "AWS::EC2::LaunchTemplate"]
    text = lt["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]
    assert base64.b64decode(deployed.user_data).decode() == text

    def put_conditions(docs: list[Any]) -> list[Any]:
        return [
            st.get("Condition")
            for d in docs
            for st in d["Statement"]
            if "cloudwatch:PutMetricData" in agent.as_list(st["Action"])
        ]

    in_template = [
        r["Properties"]["PolicyDocument"]
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy"
    ]
    conditions = put_conditions(deployed.policies)
    assert conditions == put_conditions(in_template)
    assert conditions == [{"StringEquals": {agent.NAMESPACE_KEY: namespace}}]


def test_deployed_agent_config_makes_every_series_verify_and_doctor_accept(
    deployed: Deployed, a10g: list[Gpu], capsys: pytest.CaptureFixture[str], gpu_spec: Path
) -> None:
    pub = agent.run_agent(
        deployed.session,
        deployed.config,
        deployed.policies,
        deployed.instances,
        a10g,
        samples=SAMPLES,
    )
    assert pub.denied is None and pub.published > 0

    # The agent's datapoints are in moto before verify starts, so its first read must
    # find them: a timeout would only retry on real seconds.
    code, out = verify(capsys, gpu_spec, "--timeout", "0")
    assert code == EXIT_OK, out
    assert f"All {len(gpu_metric.METRIC_NAMES)} GPU series of {NAMES.asg} have datapoints" in out
    gpu = a10g[0]
    latest = {
        gpu_metric.UTILIZATION: gpu.utilization_gpu_percent,
        gpu_metric.MEMORY_USED: gpu.memory_used_mib,
        gpu_metric.MEMORY_TOTAL: gpu.memory_total_mib,
    }
    for name, value in latest.items():
        # One table row per series: its name, present, the datapoint count, the latest value.
        assert re.search(rf"{name} present\W+{SAMPLES}\W+{value}\b", out), out

    code, report = doctor(capsys, gpu_spec)
    # moto has no GPU resources, capacity providers or scaling activities, so
    # other checks may fire or stay unknown; the metric checks are what this chain feeds.
    assert code in (EXIT_OK, EXIT_PROBLEMS)
    assert _met_errors(report) == []
    assert "MET001" in report["ok"]


def test_a_config_rolled_up_by_another_dimension_is_caught_as_wrong_dimension(
    deployed: Deployed, a10g: list[Gpu], capsys: pytest.CaptureFixture[str], gpu_spec: Path
) -> None:
    broken = copy.deepcopy(deployed.config)
    broken["metrics"]["append_dimensions"] = {"InstanceId": "${aws:InstanceId}"}
    broken["metrics"]["aggregation_dimensions"] = [["InstanceId"]]
    pub = agent.run_agent(
        deployed.session, broken, deployed.policies, deployed.instances, a10g, samples=SAMPLES
    )
    assert pub.denied is None and pub.published > 0  # the agent did publish, elsewhere

    code, out = verify(capsys, gpu_spec, "--timeout", "0")
    assert code == EXIT_PROBLEMS
    assert f"3 of 3 GPU series missing for ASG {NAMES.asg}" in out
    instance = deployed.instances[0].instance_id
    for name in gpu_metric.METRIC_NAMES:
        assert f"{name}: wrong dimension" in out, out
    assert f"InstanceId={instance}" in out

    code, report = doctor(capsys, gpu_spec)
    assert code == EXIT_PROBLEMS
    assert "MET001" in {f["id"] for f in _met_errors(report)}


def test_a_namespace_outside_the_iam_condition_is_denied_and_nothing_lands(
    deployed: Deployed, a10g: list[Gpu], capsys: pytest.CaptureFixture[str], gpu_spec: Path
) -> None:
    broken = copy.deepcopy(deployed.config)
    broken["metrics"]["namespace"] = "ecs-gpu/GPU"
    pub = agent.run_agent(
        deployed.session, broken, deployed.policies, deployed.instances, a10g, samples=SAMPLES
    )
    assert pub.published == 0
    assert pub.denied is not None and "cloudwatch:namespace=ecs-gpu/GPU" in pub.denied
    # Nothing reached CloudWatch in either namespace.
    cw = deployed.session.client("cloudwatch")
    for ns in ("ecs-gpu/GPU", gpu_metric.NAMESPACE):
        assert cw.list_metrics(Namespace=ns)["Metrics"] == []

    code, out = verify(capsys, gpu_spec, "--timeout", "0")
    assert code == EXIT_PROBLEMS
    for name in gpu_metric.METRIC_NAMES:
        assert f"{name}: nothing publishes" in out, out
    assert "denied cloudwatch:PutMetricData" in out


# --- the emulator refuses what it cannot honour ------------------------------------


def test_emulator_refuses_an_unsupported_global_append_dimension(a10g: list[Gpu]) -> None:
    cfg = {
        "metrics": {
            "append_dimensions": {"Team": "ml"},
            "metrics_collected": {"nvidia_gpu": {"measurement": ["utilization_gpu"]}},
        }
    }
    inst = agent.Instance("i-1", "ami-1", "g5.xlarge", "ip-10-0-0-1", {})
    with pytest.raises(agent.EmulationError, match="only"):
        agent.agent_datums(cfg, [inst], a10g, samples=1, now=datetime.now(UTC))


def test_iam_explicit_deny_wins_and_unknown_conditions_are_refused() -> None:
    allow = {"Effect": "Allow", "Action": "cloudwatch:*", "Resource": "*"}
    deny = {"Effect": "Deny", "Action": "cloudwatch:PutMetricData", "Resource": "*", "Sid": "No"}
    assert agent.put_metric_data_denial([{"Statement": [allow]}], "Any") is None
    denial = agent.put_metric_data_denial([{"Statement": [allow, deny]}], "Any")
    assert denial is not None and "explicit Deny" in denial
    odd = {**allow, "Condition": {"ForAnyValue:StringEquals": {"aws:RequestTag/x": "y"}}}
    with pytest.raises(agent.EmulationError):
        agent.put_metric_data_denial([{"Statement": [odd]}], "Any")
