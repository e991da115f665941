"""Task definition, service, IAM and load balancer, read from validated templates.

Each spec here goes through ``validate()`` (synth, cfn-lint, cdk-nag) once per
module; the assertions read the synthesized template, and the container
health check is run for real with sh against a local HTTP server.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.contracts import demand_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design import startup
from ecs_gpu.errors import SpecError
from ecs_gpu.infra import service as service_mod
from ecs_gpu.infra import task as task_mod
from ecs_gpu.spec import Spec, load_spec, parse_spec

from .conftest import EXAMPLES_DIR, G5
from .tpl import as_list, props, resources, statements

T = dict[str, Any]

HF_TOKEN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hf-token-AbC123:token::"
API_KEY = "arn:aws:secretsmanager:us-east-1:123456789012:secret:team/api"
DB_URL = "arn:aws:ssm:us-east-1:123456789012:parameter/team/db"
CONCURRENCY = f"""
[service]
name = "vllm-conc"
image = "vllm/vllm-openai:v0.11.0"
gpus_per_task = 1
container_port = 8000
health_check_path = "/v1/models"
model_size_gib = 15
shared_memory_mib = 2048
secrets = {{ HF_TOKEN = "{HF_TOKEN}", API_KEY = "{API_KEY}", DB_URL = "{DB_URL}" }}

[service.metrics]
preset = "vllm"
port = 8001

[capacity]
instance_type = "g5.xlarge"
min_instances = 1
max_instances = 4

[scaling]
min_tasks = 1
max_tasks = 4
target_concurrency_per_task = 16
"""
OPEN_ALB = G5 + (
    '\n[network]\nvpc_id = "vpc-0a1b2c3d4e5f60718"\n'
    'subnet_ids = ["subnet-0a1b2c3d4e5f60711", "subnet-0a1b2c3d4e5f60712"]\n'
    'public_subnet_ids = ["subnet-0a1b2c3d4e5f60721", "subnet-0a1b2c3d4e5f60722"]\n'
    '\n[load_balancer]\nscheme = "internet-facing"\ningress_cidrs = ["0.0.0.0/0"]\n'
)
NARROW_ALB = OPEN_ALB.replace('["0.0.0.0/0"]', '["203.0.113.0/24", "198.51.100.0/24"]')
SPECS = {
    "concurrency": CONCURRENCY,
    "g5": G5,
    "p5": (EXAMPLES_DIR / "p5-8gpu.toml").read_text(encoding="utf-8"),
    "open-alb": OPEN_ALB,
    "narrow-alb": NARROW_ALB,
}


@pytest.fixture(scope="module")
def built() -> dict[str, tuple[Spec, T]]:
    """Every spec above, validated; a finding (cfn-lint, cdk-nag, CDK) fails here."""
    from ecs_gpu.template.validate import validate

    out = {}
    for name, text in SPECS.items():
        spec = parse_spec(text, name)
        report = validate(spec, path=name)
        assert report.findings == [], [f.message for f in report.findings]
        out[name] = (spec, report.template)
    return out


def _containers(t: T) -> dict[str, dict[str, Any]]:
    return {c["Name"]: c for c in props(t, "AWS::ECS::TaskDefinition")["ContainerDefinitions"]}


def _service(t: T) -> dict[str, Any]:
    return props(t, "AWS::ECS::Service")


# --- (3) shared memory ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["concurrency", "p5", "g5"])
def test_shared_memory_follows_the_spec(built: dict[str, tuple[Spec, T]], name: str) -> None:
    spec, t = built[name]
    app = _containers(t)[task_mod.CONTAINER_NAME]
    shm = app.get("LinuxParameters", {}).get("SharedMemorySize")
    assert shm == spec.service.shm_mib
    if name == "p5":  # 8 GPUs per task: the automatic size, capped at 16 GiB
        assert shm == 16384
    if name == "g5":  # one GPU, no setting: Docker's default
        assert shm is None


# --- (4) health check and grace period -------------------------------------------------


@pytest.mark.parametrize("name", ["concurrency", "g5", "p5"])
def test_health_check_and_grace_come_from_startup(
    built: dict[str, tuple[Spec, T]], name: str
) -> None:
    spec, t = built[name]
    hc = _containers(t)[task_mod.CONTAINER_NAME]["HealthCheck"]
    timings = startup.health_timings(spec)
    assert hc["Command"] == startup.health_check_command(
        spec.service.container_port, spec.service.health_check_path
    )
    assert hc["Command"][0] == "CMD-SHELL"
    assert (
        f"127.0.0.1:{spec.service.container_port}{spec.service.health_check_path}"
        in (hc["Command"][1])
    )
    assert (hc["StartPeriod"], hc["Interval"], hc["Timeout"], hc["Retries"]) == (
        timings.start_period_s,
        timings.interval_s,
        timings.timeout_s,
        timings.retries,
    )
    # ECS limits (botocore ecs HealthCheck): startPeriod 0-300, retries 1-10, timeout 2-60.
    assert 0 <= hc["StartPeriod"] <= 300 and 1 <= hc["Retries"] <= 10 and 2 <= hc["Timeout"] <= 60
    assert _service(t)["HealthCheckGracePeriodSeconds"] == timings.grace_period_s
    # The grace covers the pull and the model load, which the start period cannot.
    assert timings.grace_period_s >= startup.task_ready_s(spec)


def test_startup_scales_with_model_size() -> None:
    small = parse_spec(CONCURRENCY.replace("model_size_gib = 15", "model_size_gib = 1"), "s")
    # 400 GiB of weights load only on 8 x 80 GB, with room for them on disk.
    big_text = CONCURRENCY.replace("model_size_gib = 15", "model_size_gib = 400")
    big_text = big_text.replace("gpus_per_task = 1", "gpus_per_task = 8")
    big_text = big_text.replace('"g5.xlarge"', '"p5.48xlarge"\nroot_volume_gib = 1000')
    big = parse_spec(big_text, "b")
    none = parse_spec(CONCURRENCY.replace("model_size_gib = 15\n", ""), "n")
    assert startup.model_ready_s(small) < startup.model_ready_s(big)
    assert startup.model_ready_s(none) == none.simulation.model_load_s
    s, b = startup.health_timings(small), startup.health_timings(big)
    assert s.start_period_s < startup.MAX_START_PERIOD_S
    assert s.retries == startup.MIN_RETRIES
    # 400 GiB takes longer than ECS's 300-s cap: more retries, a longer grace.
    assert b.start_period_s == startup.MAX_START_PERIOD_S
    assert b.retries == startup.MAX_RETRIES
    assert b.grace_period_s > s.grace_period_s
    # No root_volume_throughput_mibps: the download writes at gp3's baseline
    # 125 MiB/s, slower than the network's guessed 200.
    assert big.capacity.root_volume_throughput_mibps is None
    expected = 400 * 1024 / 125 + 400 * 1024 / startup.GUESS_LOAD_MIBPS
    assert startup.model_ready_s(big) == pytest.approx(expected + startup.GUESS_ENGINE_WARMUP_S)


@pytest.mark.parametrize(("throughput", "download"), [(None, 125.0), (150, 150.0), (1000, 200.0)])
def test_the_download_goes_no_faster_than_the_root_volume_writes(
    throughput: int | None, download: float
) -> None:
    text = CONCURRENCY.replace("model_size_gib = 15", "model_size_gib = 20")
    if throughput is not None:
        text = text.replace(
            "[capacity]\n",
            f"[capacity]\nroot_volume_throughput_mibps = {throughput}\n"
            f"root_volume_iops = {4 * throughput if throughput > 750 else 3000}\n",
            1,
        )
    spec = parse_spec(text, "t")
    assert spec.capacity.root_volume_throughput_mibps == throughput
    assert spec.tasks_per_instance == 1
    assert startup.download_mibps(spec) == download
    mib = 20 * 1024
    assert startup.model_ready_s(spec) == pytest.approx(
        mib / download + mib / startup.GUESS_LOAD_MIBPS + startup.GUESS_ENGINE_WARMUP_S
    )


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path.startswith("/ready") else 503)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def health_server() -> Iterator[int]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize(
    ("path", "healthy"),
    [("/ready", True), ("/ready?x='1'&y=\"2\"", True), ("/health", False)],
)
def test_health_check_command_runs_under_sh(health_server: int, path: str, healthy: bool) -> None:
    """CMD-SHELL runs the string with the image's /bin/sh; quotes in the path survive."""
    kind, shell = startup.health_check_command(health_server, path)
    assert kind == "CMD-SHELL"
    sh = shutil.which("sh")
    assert sh is not None
    result = subprocess.run([sh, "-c", shell], capture_output=True, timeout=30, check=False)
    assert (result.returncode == 0) is healthy, result.stderr


def test_health_check_falls_back_to_curl_without_python3(
    health_server: int, tmp_path: Path
) -> None:
    curl = shutil.which("curl")
    if curl is None:
        pytest.fail("curl is not installed (apt-get install curl); this check never skips")
    sh = shutil.which("sh")
    assert sh is not None
    # A PATH holding curl but no python3, as in an image built without Python.
    (tmp_path / "curl").symlink_to(curl)
    for path, healthy in (("/ready", True), ("/health", False)):
        _, shell = startup.health_check_command(health_server, path)
        result = subprocess.run(
            [sh, "-c", shell],
            env={"PATH": str(tmp_path)},
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert (result.returncode == 0) is healthy, result.stderr


# --- (5) secrets ------------------------------------------------------------------------


def test_container_secrets_are_the_specs_arns(built: dict[str, tuple[Spec, T]]) -> None:
    spec, t = built["concurrency"]
    app = _containers(t)[task_mod.CONTAINER_NAME]
    assert {s["Name"]: s["ValueFrom"] for s in app["Secrets"]} == spec.service.secrets
    # Never as plain environment.
    assert not {e["Name"] for e in app["Environment"]} & set(spec.service.secrets)
    assert "Secrets" not in _containers(t)[demand_metric.SIDECAR_NAME]


def _execution_statements(t: T) -> list[dict[str, Any]]:
    role = props(t, "AWS::ECS::TaskDefinition")["ExecutionRoleArn"]["Fn::GetAtt"][0]
    return [
        st
        for lid, st in statements(t)
        if {"Ref": role} in t["Resources"][lid]["Properties"]["Roles"]
    ]


def test_execution_role_reads_exactly_those_secrets(built: dict[str, tuple[Spec, T]]) -> None:
    _, t = built["concurrency"]
    sts = _execution_statements(t)
    reads = {
        a: sorted(as_list(st["Resource"]))
        for st in sts
        for a in as_list(st["Action"])
        if a.startswith(("secretsmanager:", "ssm:", "kms:"))
    }
    base = "arn:aws:secretsmanager:us-east-1:123456789012:secret:"
    assert reads == {
        # The json-key tail cut off; a name ending like the random suffix may be complete.
        "secretsmanager:GetSecretValue": sorted(
            [f"{base}hf-token-AbC123", f"{base}hf-token-AbC123-??????", f"{base}team/api-??????"]
        ),
        "ssm:GetParameters": [DB_URL],
    }


def test_no_secret_permissions_without_secrets(built: dict[str, tuple[Spec, T]]) -> None:
    _, t = built["g5"]
    actions = {a for st in _execution_statements(t) for a in as_list(st["Action"])}
    assert not {a for a in actions if a.startswith(("secretsmanager:", "ssm:", "kms:"))}
    assert "Secrets" not in _containers(t)[task_mod.CONTAINER_NAME]


@pytest.mark.parametrize(
    ("value_from", "action", "arns"),
    [
        (
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:tok-a1B2c3",
            "secretsmanager:GetSecretValue",
            [
                "arn:aws:secretsmanager:eu-west-1:123456789012:secret:tok-a1B2c3",
                "arn:aws:secretsmanager:eu-west-1:123456789012:secret:tok-a1B2c3-??????",
            ],
        ),
        (
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:hf:key:AWSCURRENT:",
            "secretsmanager:GetSecretValue",
            ["arn:aws:secretsmanager:eu-west-1:123456789012:secret:hf-??????"],
        ),
        (
            "arn:aws-cn:ssm:cn-north-1:123456789012:parameter/a/b",
            "ssm:GetParameters",
            ["arn:aws-cn:ssm:cn-north-1:123456789012:parameter/a/b"],
        ),
    ],
)
def test_secret_resources(value_from: str, action: str, arns: list[str]) -> None:
    assert task_mod.secret_resources(value_from) == (action, arns)


# --- (7) placement ------------------------------------------------------------------------


def test_placement_spreads_over_zones_then_packs_by_memory(
    built: dict[str, tuple[Spec, T]],
) -> None:
    for _, t in built.values():
        strategies = _service(t)["PlacementStrategies"]
        assert [(s["Type"], s["Field"].lower()) for s in strategies] == [
            ("spread", service_mod.PLACEMENT_SPREAD_FIELD),
            ("binpack", service_mod.PLACEMENT_BINPACK),
        ]


def test_az_rebalancing_is_off_so_ecs_never_stops_gpu_tasks_to_even_out_zones(
    built: dict[str, tuple[Spec, T]],
) -> None:
    # Left out, ECS enables it on a new service whose first strategy spreads by AZ.
    for _, t in built.values():
        assert _service(t)["PlacementStrategies"][0]["Field"].lower() == (
            service_mod.PLACEMENT_SPREAD_FIELD
        )
        assert _service(t)["AvailabilityZoneRebalancing"] == "DISABLED"


# --- (8) internet-facing ALB ingress ------------------------------------------------------


def _lb_ingress(t: T) -> list[dict[str, Any]]:
    lb_sgs = as_list(props(t, "AWS::ElasticLoadBalancingV2::LoadBalancer")["SecurityGroups"])
    (lb_sg,) = [sg["Fn::GetAtt"][0] for sg in lb_sgs]
    rules = list(t["Resources"][lb_sg]["Properties"].get("SecurityGroupIngress", []))
    for r in resources(t, "AWS::EC2::SecurityGroupIngress").values():
        if r["Properties"]["GroupId"] == {"Fn::GetAtt": [lb_sg, "GroupId"]}:
            rules.append(r["Properties"])
    return rules


@pytest.mark.parametrize("name", ["narrow-alb", "open-alb"])
def test_listener_open_to_exactly_ingress_cidrs(
    built: dict[str, tuple[Spec, T]], name: str
) -> None:
    spec, t = built[name]
    assert spec.load_balancer is not None
    rules = _lb_ingress(t)
    cidrs = sorted(r["CidrIp"] for r in rules if "CidrIp" in r)
    assert cidrs == sorted(spec.load_balancer.ingress_cidrs or [])
    # Besides the CIDRs only the clients security group.
    others = [r for r in rules if "CidrIp" not in r]
    assert len(others) == 1 and "SourceSecurityGroupId" in others[0]


def test_no_implicit_open_ingress_anywhere(built: dict[str, tuple[Spec, T]]) -> None:
    """Only a spec that writes 0.0.0.0/0 gets an ingress rule from everywhere."""
    for name, (_, t) in built.items():
        rules = [
            r
            for sg in resources(t, "AWS::EC2::SecurityGroup").values()
            for r in sg["Properties"].get("SecurityGroupIngress", [])
        ] + [r["Properties"] for r in resources(t, "AWS::EC2::SecurityGroupIngress").values()]
        opened = [r for r in rules if r.get("CidrIp") == "0.0.0.0/0" or r.get("CidrIpv6") == "::/0"]
        assert len(opened) == (1 if name == "open-alb" else 0), name


# --- (10) container split and the sidecar ---------------------------------------------------


@pytest.mark.parametrize("name", ["concurrency", "g5", "p5"])
def test_containers_fill_the_task_size(built: dict[str, tuple[Spec, T]], name: str) -> None:
    spec, t = built[name]
    td = props(t, "AWS::ECS::TaskDefinition")
    containers = _containers(t).values()
    assert int(td["Cpu"]) == spec.service.cpu_units == sum(c["Cpu"] for c in containers)
    assert int(td["Memory"]) == spec.service.memory_mib == sum(c["Memory"] for c in containers)
    gpus = [c for c in containers if "ResourceRequirements" in c]
    assert [c["Name"] for c in gpus] == [task_mod.CONTAINER_NAME]
    assert gpus[0]["ResourceRequirements"] == [
        {"Type": "GPU", "Value": str(spec.service.gpus_per_task)}
    ]


def test_defaults_are_the_instance_share() -> None:
    # cpu_units and memory_mib left out: the spec fills in the task's share.
    text = CONCURRENCY
    spec = parse_spec(text, "c")
    assert task_mod.container_split(spec) == (
        spec.service.cpu_units - demand_metric.SIDECAR_CPU_UNITS,
        spec.service.memory_mib - demand_metric.SIDECAR_MEMORY_MIB,
    )


def test_too_small_a_task_for_the_sidecar_is_refused_naming_the_file() -> None:
    # The spec layer refuses it (it knows the file); synth never sees it.
    text = CONCURRENCY.replace("gpus_per_task = 1\n", "gpus_per_task = 1\ncpu_units = 200\n")
    text = text.replace("shared_memory_mib = 2048\n", "")
    with pytest.raises(SpecError) as exc:
        parse_spec(text, "small.toml")
    (line,) = exc.value.problems
    assert line.startswith("small.toml: service.cpu_units = 200: [service.metrics] adds a sidecar")
    assert "leaving the server 72 units" in line and "Fix: raise cpu_units to at least 256" in line


def test_sidecar_container(built: dict[str, tuple[Spec, T]]) -> None:
    spec, t = built["concurrency"]
    assert spec.service.metrics is not None
    side = _containers(t)[demand_metric.SIDECAR_NAME]
    names = Names(spec.service.name)
    assert side["Image"] == demand_metric.SIDECAR_IMAGE
    assert side["Essential"] is False
    assert side["DependsOn"] == [{"ContainerName": task_mod.CONTAINER_NAME, "Condition": "START"}]
    assert side["EntryPoint"] == list(demand_metric.SIDECAR_ENTRY_POINT)
    assert side["Command"] == list(demand_metric.SIDECAR_COMMAND)
    # Nothing CloudFormation could read as a parameter but the script's
    # Fn::Sub body, whose only variable is the Region.
    env = {e["Name"]: e["Value"] for e in side["Environment"]}
    script = env.pop(demand_metric.SCRIPT_ENV)
    assert script == {"Fn::Sub": demand_metric.script_sub_body()}
    assert "${" not in str({**side, "Environment": env})
    env = {e["Name"]: e["Value"] for e in side["Environment"]}
    metrics = spec.service.metrics
    assert env == {
        **demand_metric.sidecar_environment(
            metrics_port=8001,
            metrics_path="/metrics",
            series=metrics.names,
            cluster_name=names.cluster,
            service_name=names.service,
            starting_max_s=startup.health_timings(spec).grace_period_s,
            waiting=metrics.waiting_name,
            completed=metrics.completed_name,
            drain_s=spec.scaling.backlog_drain_s,
        ),
        demand_metric.SCRIPT_ENV: {"Fn::Sub": demand_metric.script_sub_body()},
    }
    # A loading task counts as 0 for at least its image pull and model load.
    sim = spec.simulation
    assert int(env["STARTING_MAX_S"]) >= sim.image_pull_s + startup.model_ready_s(spec)
    assert env["ABSENT_IS_ZERO"] == "0"  # vLLM exports both gauges from the start
    # The sidecar names the same cluster and service the template creates.
    assert env["DIMENSIONS"] == (
        f"ClusterName={props(t, 'AWS::ECS::Cluster')['ClusterName']},"
        f"ServiceName={_service(t)['ServiceName']}"
    )
    assert side["LogConfiguration"]["Options"]["awslogs-stream-prefix"] == (
        demand_metric.SIDECAR_NAME
    )


def test_no_sidecar_without_metrics(built: dict[str, tuple[Spec, T]]) -> None:
    _, t = built["g5"]
    assert set(_containers(t)) == {task_mod.CONTAINER_NAME}
    puts = [st for _, st in statements(t) if "cloudwatch:PutMetricData" in as_list(st["Action"])]
    assert all(
        st["Condition"]["StringEquals"]["cloudwatch:namespace"] != demand_metric.NAMESPACE
        for st in puts
    )


def test_task_role_may_publish_only_the_demand_namespace(
    built: dict[str, tuple[Spec, T]],
) -> None:
    _, t = built["concurrency"]
    role = props(t, "AWS::ECS::TaskDefinition")["TaskRoleArn"]["Fn::GetAtt"][0]
    (policy,) = [
        r
        for r in resources(t, "AWS::IAM::Policy").values()
        if {"Ref": role} in r["Properties"]["Roles"]
    ]
    (st,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert st["Sid"] == task_mod.SID_DEMAND_METRIC
    assert as_list(st["Action"]) == list(demand_metric.PUBLISH_ACTIONS)
    assert st["Condition"] == demand_metric.iam_condition()
    assert "ManagedPolicyArns" not in t["Resources"][role]["Properties"]


def test_task_role_trusts_ecs_for_this_account_only(built: dict[str, tuple[Spec, T]]) -> None:
    _, t = built["concurrency"]
    roles = {
        k: r["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        for k, r in t["Resources"].items()
        if r["Type"] == "AWS::IAM::Role"
    }
    task_def = props(t, "AWS::ECS::TaskDefinition")
    (statement,) = roles[task_def["TaskRoleArn"]["Fn::GetAtt"][0]]
    assert statement["Principal"] == {"Service": "ecs-tasks.amazonaws.com"}
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    }


def test_tasks_that_share_an_instance_share_its_volume_for_the_download() -> None:
    # Two 2-GPU tasks per g6e.12xlarge start together on a new instance.
    spec = load_spec(EXAMPLES_DIR / "g6e-alb-odcr.toml")
    assert spec.tasks_per_instance == 2
    assert startup.download_mibps(spec) == startup.volume_write_mibps(spec) / 2
