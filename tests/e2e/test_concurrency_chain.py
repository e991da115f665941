"""The concurrency metric chain end to end: template -> deployed task -> sidecar -> verify.

Against the moto server (``aws`` fixture), with everything real except the
server the sidecar scrapes and the ``aws`` program it calls:

1. examples/g5-vllm.toml (signal "concurrency": [service.metrics] preset
   vllm) is synthesized once and deployed with the project's deploy code.
2. The sidecar container's entry point, command and environment (the
   script itself rides base64 in SIDECAR_SCRIPT) are read back FROM THE
   DEPLOYED task definition, and the task role's policies from the deployed
   IAM role.
3. That entry point and command run for real (bash) against a local HTTP
   server answering GET /metrics with a real vLLM sample
   (tests/data/vllm-metrics.txt, source in vllm-metrics.SOURCE.md). The
   ``aws`` on its PATH is tests/e2e/aws_standin.py: the same PutMetricData
   the CLI sends, checked against botocore's model, allowed or denied by the
   deployed task role's policies, sent to moto.
4. The host agent is emulated as in test_metric_chain.py (its GPU series are
   part of what ``verify metrics`` checks for this spec too).
5. ``ecs-gpu verify metrics`` and ``ecs-gpu doctor --json`` run against what
   landed: TD001 (the sidecar is in the task definition) and MET005 (its
   series has datapoints) pass.
6. Two breaks, each caught by verify (exit 1): series names the server does
   not serve ([service.metrics] running/waiting_metric; the sidecar sums
   nothing and publishes nothing), and a namespace the task role's IAM
   condition denies.

Two things differ from ECS, on purpose: METRICS_PORT is the test server's
free port (the deployed value, the container port 8000, is asserted first),
and the sidecar's clock is fake (tests/support/sidecar_clock.py: stand-in ``date``
and ``sleep`` first on its PATH): its 10-s sleeps return at once and the
second ends the run with ECS's stop (SIGTERM), so each run is exactly two
scrapes, however slow the machine, and nothing waits on real seconds.
What this cannot prove: that ECS starts the container as described, or that
the real AWS CLI parses the options as awscli's put-metric-data
customization documents (tests/contracts/test_demand_metric.py checks the request).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest

from ecs_gpu.aws import facts
from ecs_gpu.cli import deploy as deploy_cli
from ecs_gpu.cli import main
from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.errors import EXIT_OK, EXIT_PROBLEMS
from ecs_gpu.host.probe import Gpu, parse_nvidia_smi_xml
from ecs_gpu.spec import load_spec
from example_specs import G5, G5_PATH
from support.moto_cfn import ami_parameters, for_moto
from support.sidecar_clock import T0, FakeClock, executable

from . import agent
from .test_metric_chain import NO_WAIT

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "vllm-metrics.txt"
A10G_XML = ROOT / "tests" / "data" / "nvidia-smi" / "a10g.xml"
STANDIN = Path(__file__).with_name("aws_standin.py")
SPEC = load_spec(G5_PATH)
NAMES = Names(SPEC.service.name)
# What the sample's vLLM preset series sum to (vllm-metrics.SOURCE.md).
SAMPLE_SUM = 8.0
PUBLISHES = 2
# Names the server does not serve: a sidecar that sums nothing.
TYPO_METRICS = (
    '[service.metrics]\npreset = "vllm"\nrunning_metric = "vllm:num_requests_runing"\n'
    'waiting_metric = "vllm:num_requests_queued"\n'
)


@pytest.fixture(scope="module")
def typo_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    text = G5.replace('[service.metrics]\npreset = "vllm"\n', TYPO_METRICS)
    assert text != G5
    path = tmp_path_factory.mktemp("spec") / "g5-vllm-typo.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _synth(path: Path) -> dict[str, Any]:
    from ecs_gpu.template.synth import synth_template

    return for_moto(synth_template(load_spec(path)))


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return _synth(G5_PATH)


@pytest.fixture(scope="module")
def typo_template(typo_spec: Path) -> dict[str, Any]:
    return _synth(typo_spec)


class _Vllm(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path != SPEC.service.metrics.path:  # type: ignore[union-attr]
            self.send_response(404)
            self.end_headers()
            return
        body = SAMPLE.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def vllm() -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Vllm)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield int(httpd.server_address[1])
    httpd.shutdown()
    httpd.server_close()


@dataclass(frozen=True)
class Task:
    """What ECS would run for the sidecar, and what its role may do, read from moto."""

    session: boto3.Session
    sidecar: dict[str, Any]  # the container definition, as DescribeTaskDefinition returns it
    task_policies: list[Any]

    @property
    def environment(self) -> dict[str, str]:
        return {e["name"]: e["value"] for e in self.sidecar.get("environment", [])}


def deploy(template: dict[str, Any]) -> Task:
    session = boto3.Session()
    result = deploy_cli.run_deploy(
        session.client("cloudformation"),
        NAMES.stack,
        template,
        yes=True,
        waits=NO_WAIT,
        service_name=NAMES.service_name,
        parameters=ami_parameters(template),
    )
    assert result is not None and result.status == "CREATE_COMPLETE"
    ecs = session.client("ecs")
    # The template gives the service no DesiredCount; CloudFormation then creates it
    # with 1 ("when creating a service, the service is created and starts up with a
    # desired count of 1", aws/aws-cdk#13130 on CloudFormation's default), moto with
    # 0, which verify metrics reads as a service scaled to zero.
    ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=1)
    (svc,) = ecs.describe_services(cluster=NAMES.cluster, services=[NAMES.service])["services"]
    td = ecs.describe_task_definition(taskDefinition=svc["taskDefinition"])["taskDefinition"]
    (sidecar,) = [c for c in td["containerDefinitions"] if c["name"] == demand_metric.SIDECAR_NAME]
    role = task_role(session, dict(td))
    return Task(session, dict(sidecar), agent.role_policies(session, role))


def task_role(session: boto3.Session, td: dict[str, Any]) -> str:
    """The task role's name: from the task definition, else from the deployed stack.

    moto's CloudFormation does not store TaskRoleArn on the task definition
    (moto/ecs/models.py: "currently TaskRoleArn isn't stored"), so the role is
    the stack's physical resource behind the deployed template's
    ``TaskRoleArn: {"Fn::GetAtt": [<role>, "Arn"]}``.
    """
    if "taskRoleArn" in td:
        return str(td["taskRoleArn"]).rsplit("/", 1)[-1]
    cfn = session.client("cloudformation")
    body = dict(cfn.get_template(StackName=NAMES.stack)["TemplateBody"])
    (logical,) = [
        r["Properties"]["TaskRoleArn"]["Fn::GetAtt"][0]
        for r in body["Resources"].values()
        if r["Type"] == "AWS::ECS::TaskDefinition"
    ]
    (physical,) = [
        r["PhysicalResourceId"]
        for page in cfn.get_paginator("list_stack_resources").paginate(StackName=NAMES.stack)
        for r in page["StackResourceSummaries"]
        if r["LogicalResourceId"] == logical
    ]
    return str(physical).rsplit("/", 1)[-1]


def emulate_agent(session: boto3.Session) -> None:
    """The host agent's GPU series, as test_metric_chain.py publishes them."""
    lt = agent.launch_template_data(session, NAMES.stack)
    config = agent.agent_config_from_user_data(lt["UserData"], gpu_metric.AGENT_CONFIG_PATH)
    _, instances = agent.asg_instances(session, NAMES.stack)
    gpus: list[Gpu] = list(parse_nvidia_smi_xml(A10G_XML.read_text()).gpus)
    pub = agent.run_agent(
        session, config, agent.instance_role_policies(session, lt), instances, gpus, samples=2
    )
    assert pub.denied is None and pub.published > 0


@dataclass(frozen=True)
class SidecarRun:
    calls: list[dict[str, Any]]  # one per `aws` call: the request and the denial, if any
    stderr: str
    sleeps: list[int]  # the seconds of each sleep between scrapes (fake ones)


def run_sidecar(
    task: Task, tmp_path: Path, port: int, *, override: dict[str, str] | None = None
) -> SidecarRun:
    """Run the deployed entry point + command for PUBLISHES intervals of its fake clock.

    The stand-in ``sleep`` returns at once; the PUBLISHES-th sends ECS's stop
    (SIGTERM), on which the script's trap exits 0 (FakeClock.run checks both),
    so the run ends on that event after exactly PUBLISHES scrapes.
    """
    clock = FakeClock(tmp_path)
    executable(tmp_path, "aws", f'exec "{sys.executable}" "{STANDIN}" "$@"')
    policies, log = tmp_path / "policies.json", tmp_path / "calls.jsonl"
    policies.write_text(json.dumps(task.task_policies))
    log.touch()
    env = {
        **task.environment,
        "METRICS_PORT": str(port),
        **(override or {}),
        # The sidecar's process environment on ECS holds its task-role credentials; here
        # the moto endpoint's.
        **{k: v for k, v in os.environ.items() if k.startswith("AWS_") and k != "AWS_REGION"},
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "STANDIN_POLICIES": str(policies),
        "STANDIN_LOG": str(log),
    }
    interval = int(env["INTERVAL_S"])
    argv = [*task.sidecar["entryPoint"], *task.sidecar["command"]]
    err = clock.run(env, stop_at=T0 + PUBLISHES * interval, argv=argv)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return SidecarRun(calls, err, clock.sleeps())


def verify(capsys: pytest.CaptureFixture[str], spec: Path) -> tuple[int, str]:
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    captured = capsys.readouterr()
    return code, " ".join((captured.out + captured.err).split())


def doctor_a_second_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], spec: Path
) -> tuple[int, dict[str, Any]]:
    """``ecs-gpu doctor SPEC --json -``, collecting as of one second from now.

    moto stamps a datapoint sent without a Timestamp (the sidecar sends none,
    so CloudWatch stamps it on receipt) with its own clock, to the
    microsecond (moto/cloudwatch/models.py, MetricDatumBase: ``timestamp or
    utcnow()``), and its GetMetricData truncates StartTime and EndTime to the
    whole second before keeping ``start <= timestamp < end``
    (CloudWatchBackend.get_metric_data). doctor reads up to the time it
    collects at (facts.Collector.now): a datapoint from that very second
    would be left out. Collecting at now + 1 s is doctor run a second after
    the last publish, without waiting for that second.
    """
    collect = facts.collect

    def a_second_on(*args: Any, **kwargs: Any) -> facts.Snapshot:
        return collect(*args, **{**kwargs, "now": datetime.now(UTC) + timedelta(seconds=1)})

    monkeypatch.setattr(facts, "collect", a_second_on)
    code = main(["doctor", str(spec), "--json", "-"])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return code, report


def test_the_deployed_sidecar_publishes_and_verify_and_doctor_accept(
    aws: str,
    template: dict[str, Any],
    vllm: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    task = deploy(template)
    env = task.environment
    # What the task definition says (before the test's two overrides).
    assert task.sidecar["entryPoint"] == list(demand_metric.SIDECAR_ENTRY_POINT)
    assert task.sidecar["command"] == list(demand_metric.SIDECAR_COMMAND)
    assert env["METRICS_PORT"] == str(SPEC.service.container_port)
    assert env["SERIES"] == "vllm:num_requests_running vllm:num_requests_waiting"
    assert env["DIMENSIONS"] == f"ClusterName={NAMES.cluster},ServiceName={NAMES.service}"
    assert env["INTERVAL_S"] == str(demand_metric.PUBLISH_INTERVAL_S)
    assert agent.put_metric_data_denial(task.task_policies, env["NAMESPACE"]) is None

    emulate_agent(task.session)
    run = run_sidecar(task, tmp_path, vllm)
    assert run.sleeps == [demand_metric.PUBLISH_INTERVAL_S] * PUBLISHES
    assert len(run.calls) == PUBLISHES and all(c["denied"] is None for c in run.calls), run.stderr
    datum = run.calls[0]["request"]["MetricData"][0]
    assert datum["Value"] == SAMPLE_SUM and datum["StorageResolution"] == 1

    code, out = verify(capsys, G5_PATH)
    assert code == EXIT_OK, out
    assert "The concurrency series EcsGpu/Serving ConcurrentRequestsPerTask" in out
    assert f"latest mean per task {SAMPLE_SUM:g}" in out
    assert re.search(rf"ConcurrentRequestsPerTask Average present\W+\d+\W+{SAMPLE_SUM:g}", out)

    code, report = doctor_a_second_on(monkeypatch, capsys, G5_PATH)
    # moto runs no task and has no GPU resources, so other checks may fire or stay
    # unknown; the sidecar and its series are what this chain feeds.
    assert code in (EXIT_OK, EXIT_PROBLEMS)
    assert {"TD001", "MET005"} <= set(report["ok"]), json.dumps(
        [f for f in report["findings"] if f["id"] in ("TD001", "MET005")], default=str
    )


def test_series_names_the_server_does_not_serve_publish_nothing_and_verify_names_them(
    aws: str,
    typo_template: dict[str, Any],
    typo_spec: Path,
    vllm: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    task = deploy(typo_template)
    assert task.environment["SERIES"] == "vllm:num_requests_runing vllm:num_requests_queued"
    emulate_agent(task.session)
    run = run_sidecar(task, tmp_path, vllm)
    assert run.calls == []  # it never called `aws`: no false zero
    none_of = "none of 'vllm:num_requests_runing vllm:num_requests_queued'"
    assert run.stderr.count(none_of) == PUBLISHES, run.stderr  # said at each scrape

    code, out = verify(capsys, typo_spec)
    assert code == EXIT_PROBLEMS, out
    assert "GPU series missing" not in out  # the agent's series landed; only this is blamed
    assert "ConcurrentRequestsPerTask: no datapoint at all" in out
    assert f"'{demand_metric.SIDECAR_NAME}' container" in out
    assert "vllm:num_requests_runing + vllm:num_requests_queued" in out
    assert "running_metric" in out


def test_a_namespace_the_task_role_denies_lands_nothing_and_verify_says_so(
    aws: str,
    template: dict[str, Any],
    vllm: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    task = deploy(template)
    emulate_agent(task.session)
    run = run_sidecar(task, tmp_path, vllm, override={"NAMESPACE": "EcsGpu/Other"})
    assert len(run.calls) == PUBLISHES, run.stderr
    assert all("cloudwatch:namespace=EcsGpu/Other" in (c["denied"] or "") for c in run.calls)
    assert "AccessDenied" in run.stderr
    cw = task.session.client("cloudwatch")
    for ns in ("EcsGpu/Other", demand_metric.NAMESPACE):
        assert cw.list_metrics(Namespace=ns)["Metrics"] == []

    code, out = verify(capsys, G5_PATH)
    assert code == EXIT_PROBLEMS, out
    assert "ConcurrentRequestsPerTask: no datapoint at all" in out
    assert f"denied cloudwatch:PutMetricData in {demand_metric.NAMESPACE}" in out
