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
and INTERVAL_S is 1 s instead of 10 s so two publishes take two seconds.
What this cannot prove: that ECS starts the container as described, or that
the real AWS CLI parses the options as awscli's put-metric-data
customization documents (tests/test_demand_metric.py checks the request).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest

from ecs_gpu import demand_metric, gpu_metric
from ecs_gpu.cli import deploy as deploy_cli
from ecs_gpu.cli import main
from ecs_gpu.errors import EXIT_OK, EXIT_PROBLEMS
from ecs_gpu.host.probe import Gpu, parse_nvidia_smi_xml
from ecs_gpu.naming import Names
from ecs_gpu.spec import load_spec
from example_specs import G5, G5_PATH
from moto_cfn import ami_parameters, for_moto

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
    from ecs_gpu.synth import synth_template

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
    returncode: int


def run_sidecar(
    task: Task, tmp_path: Path, port: int, *, until: str, override: dict[str, str] | None = None
) -> SidecarRun:
    """Run the deployed entry point + command until ``until`` happened twice, then stop it.

    ``until``: "call" (the sidecar called `aws`) or a text its log must show.
    """
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "aws").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{STANDIN}" "$@"\n')
    (bindir / "aws").chmod(0o755)
    policies, log, err = tmp_path / "policies.json", tmp_path / "calls.jsonl", tmp_path / "err"
    policies.write_text(json.dumps(task.task_policies))
    log.touch()
    env = {
        **task.environment,
        "METRICS_PORT": str(port),
        "INTERVAL_S": "1",
        **(override or {}),
        # The sidecar's process environment on ECS holds its task-role credentials; here
        # the moto endpoint's.
        **{k: v for k, v in os.environ.items() if k.startswith("AWS_") and k != "AWS_REGION"},
        "PATH": f"{bindir}:{os.environ['PATH']}",
        "STANDIN_POLICIES": str(policies),
        "STANDIN_LOG": str(log),
    }
    argv = [*task.sidecar["entryPoint"], *task.sidecar["command"]]
    with err.open("w") as stderr:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                seen = (
                    len(log.read_text().splitlines())
                    if until == "call"
                    else err.read_text().count(until)
                )
                if seen >= PUBLISHES:
                    break
                time.sleep(0.1)
            assert proc.poll() is None, err.read_text()  # it runs until ECS stops it
        finally:
            proc.terminate()  # ECS's stop: the script's trap exits at once
            proc.wait(timeout=30)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    return SidecarRun(calls, err.read_text(), proc.returncode)


def verify(capsys: pytest.CaptureFixture[str], spec: Path) -> tuple[int, str]:
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    captured = capsys.readouterr()
    return code, " ".join((captured.out + captured.err).split())


def test_the_deployed_sidecar_publishes_and_verify_and_doctor_accept(
    aws: str,
    template: dict[str, Any],
    vllm: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    task = deploy(template)
    env = task.environment
    # What the task definition says (before the test's two overrides).
    assert task.sidecar["entryPoint"] == list(demand_metric.SIDECAR_ENTRY_POINT)
    assert task.sidecar["command"] == list(demand_metric.SIDECAR_COMMAND)
    assert env["METRICS_PORT"] == str(SPEC.service.container_port)
    assert env["SERIES"] == "vllm:num_requests_running vllm:num_requests_waiting"
    assert env["DIMENSIONS"] == f"ClusterName={NAMES.cluster},ServiceName={NAMES.service}"
    assert agent.put_metric_data_denial(task.task_policies, env["NAMESPACE"]) is None

    emulate_agent(task.session)
    run = run_sidecar(task, tmp_path, vllm, until="call")
    assert run.returncode == 0, run.stderr
    assert len(run.calls) >= PUBLISHES and all(c["denied"] is None for c in run.calls)
    datum = run.calls[0]["request"]["MetricData"][0]
    assert datum["Value"] == SAMPLE_SUM and datum["StorageResolution"] == 1

    code, out = verify(capsys, G5_PATH)
    assert code == EXIT_OK, out
    assert "The concurrency series EcsGpu/Serving ConcurrentRequestsPerTask" in out
    assert f"latest mean per task {SAMPLE_SUM:g}" in out
    assert re.search(rf"ConcurrentRequestsPerTask Average present\W+\d+\W+{SAMPLE_SUM:g}", out)

    # doctor reads up to "now" (verify one period past it), and moto truncates
    # GetMetricData's EndTime to the whole second while it stamps datapoints
    # to the microsecond: a datapoint from this very second would be left out.
    time.sleep(1.1)
    code = main(["doctor", str(G5_PATH), "--json", "-"])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
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
    run = run_sidecar(task, tmp_path, vllm, until="none of")
    assert run.calls == []  # it never called `aws`: no false zero
    assert "none of 'vllm:num_requests_runing vllm:num_requests_queued'" in run.stderr

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
    run = run_sidecar(task, tmp_path, vllm, until="call", override={"NAMESPACE": "EcsGpu/Other"})
    assert len(run.calls) >= PUBLISHES
    assert all("cloudwatch:namespace=EcsGpu/Other" in (c["denied"] or "") for c in run.calls)
    assert "AccessDenied" in run.stderr
    cw = task.session.client("cloudwatch")
    for ns in ("EcsGpu/Other", demand_metric.NAMESPACE):
        assert cw.list_metrics(Namespace=ns)["Metrics"] == []

    code, out = verify(capsys, G5_PATH)
    assert code == EXIT_PROBLEMS, out
    assert "ConcurrentRequestsPerTask: no datapoint at all" in out
    assert f"denied cloudwatch:PutMetricData in {demand_metric.NAMESPACE}" in out
