"""verify metrics (cli/verify_metrics.py) against moto in server mode.

moto stores put_metric_data datapoints and answers get_metric_data and
list_metrics from them, so verify metrics runs exactly as against AWS.

examples/g5-vllm.toml scales on concurrency; the GPU-signal tests take the
same service on the GPU signal (``gpu_spec``, tests/example_specs.py).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest

from ecs_gpu.cli import main
from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.errors import EXIT_BAD_INPUT, EXIT_PROBLEMS
from example_specs import write_g5_gpu

from .conftest import EXAMPLE_SPEC, NAMES, Clients
from .verify_helpers import ASG, make_service, put, put_concurrency


@pytest.fixture(scope="module")
def gpu_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_g5_gpu(tmp_path_factory.mktemp("spec"))


def test_verify_metrics_passes_when_all_three_series_have_datapoints(
    clients: Clients, capsys: pytest.CaptureFixture[str], gpu_spec: Path
) -> None:
    put(clients.cw, gpu_metric.UTILIZATION, 37.0)
    put(clients.cw, gpu_metric.MEMORY_USED, 20480.0)
    put(clients.cw, gpu_metric.MEMORY_TOTAL, 23028.0)
    # The spec names the ASG through naming.py: vllm-g5 -> vllm-g5-gpu-asg.
    code = main(["verify", "metrics", str(gpu_spec), "--timeout", "0"])
    out = capsys.readouterr().out
    assert code == 0
    for name in gpu_metric.METRIC_NAMES:
        assert name in out
    assert "23028" in out and "All 3 GPU series" in out


def test_verify_metrics_fails_naming_the_missing_series(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    put(clients.cw, gpu_metric.UTILIZATION, 37.0)
    put(clients.cw, gpu_metric.MEMORY_USED, 20480.0)
    code = main(["verify", "metrics", "--asg", ASG, "--timeout", "0"])
    captured = capsys.readouterr()
    assert code == EXIT_PROBLEMS
    err = " ".join(captured.err.split())
    assert f"1 of 3 GPU series missing for ASG {ASG}" in err
    assert f"{gpu_metric.MEMORY_TOTAL}: nothing publishes" in err
    assert "PutMetricData" in err and "agent is not running" in err
    assert gpu_metric.UTILIZATION + ":" not in err  # present series are not blamed


def test_verify_metrics_needs_exactly_one_of_spec_or_asg(
    aws: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", "metrics"]) == EXIT_BAD_INPUT
    assert "exactly one of SPEC or --asg" in capsys.readouterr().err


def test_an_unknown_profile_is_bad_input(aws: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["verify", "metrics", "--asg", ASG, "--profile", "no-such-profile"])
    assert code == EXIT_BAD_INPUT
    assert "no such AWS profile" in capsys.readouterr().err


def put_reservation(cw: Any, value: float) -> None:
    cw.put_metric_data(
        Namespace=gpu_metric.RESERVATION_NAMESPACE,
        MetricData=[
            {
                "MetricName": gpu_metric.RESERVATION_METRIC,
                "Dimensions": gpu_metric.reservation_dimensions(NAMES.cluster),
                "Value": value,
                "Unit": "Percent",
                "Timestamp": datetime.now(UTC) - timedelta(seconds=5),
            }
        ],
    )


def _all_three(clients: Clients) -> None:
    put(clients.cw, gpu_metric.UTILIZATION, 37.0)
    put(clients.cw, gpu_metric.MEMORY_USED, 20480.0)
    put(clients.cw, gpu_metric.MEMORY_TOTAL, 23028.0)


def test_verify_metrics_with_a_task_gpus_spec_shows_the_divisor(
    clients: Clients, capsys: pytest.CaptureFixture[str], gpu_spec: Path
) -> None:
    _all_three(clients)
    put_reservation(clients.cw, 25.0)
    code = main(["verify", "metrics", str(gpu_spec), "--timeout", "0"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert f"GPUReservation (ClusterName={NAMES.cluster})" in out
    assert "1 datapoint(s), latest 25 %" in out and "warning" not in out


def test_verify_metrics_warns_when_the_divisor_is_missing_but_exits_on_the_contract(
    clients: Clients, capsys: pytest.CaptureFixture[str], gpu_spec: Path
) -> None:
    # The agent's three series are there; ECS wrote no reservation (no running
    # task). The contract decides the exit code; the missing divisor is said.
    _all_three(clients)
    code = main(["verify", "metrics", str(gpu_spec), "--timeout", "0"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert "warning:" in out and "GPUReservation" in out and "MET004" in out
    # With --asg there is no spec, so no cluster and no divisor line.
    code = main(["verify", "metrics", "--asg", ASG, "--timeout", "0"])
    assert code == 0
    assert "GPUReservation" not in capsys.readouterr().out


# --- the concurrency signal (examples/g5-vllm.toml) ---------------------------------


def verify_conc(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["verify", "metrics", str(EXAMPLE_SPEC), "--timeout", "0"])
    captured = capsys.readouterr()
    return code, " ".join((captured.out + captured.err).split())


def test_a_concurrency_spec_also_needs_the_sidecars_series(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    _all_three(clients)  # the host agent publishes; no sidecar ever did
    code, out = verify_conc(capsys)
    assert code == EXIT_PROBLEMS
    assert "GPU series missing" not in out  # the GPU series are not blamed
    where = (
        f"{demand_metric.NAMESPACE} {demand_metric.METRIC_NAME} "
        f"(ClusterName={NAMES.cluster},ServiceName={NAMES.service})"
    )
    assert f"The concurrency series {where} has no datapoint after 0 s." in out
    assert f"{demand_metric.METRIC_NAME}: no datapoint at all" in out
    # The sidecar, what it reads and where: the vllm preset on the container port.
    assert "'demand-metric' container" in out
    assert "vllm:num_requests_running + vllm:num_requests_waiting" in out
    assert "http://127.0.0.1:8000/metrics" in out
    assert "denied cloudwatch:PutMetricData" in out

    put_concurrency(clients.cw, 14.0)
    put_concurrency(clients.cw, 18.0, age_s=25.0)
    code, out = verify_conc(capsys)
    assert code == 0, out
    assert "All 3 GPU series" in out
    assert f"The concurrency series {where} has datapoints: 2 10-s period(s)" in out
    assert "latest mean per task 14." in out
    # The divisor belongs to the task-gpus policy, which this spec does not have.
    assert "GPUReservation" not in out


def test_concurrency_under_other_dimensions_is_told_apart(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    _all_three(clients)
    put_concurrency(clients.cw, 14.0, service="vllm-g5-staging")
    code, out = verify_conc(capsys)
    assert code == EXIT_PROBLEMS
    assert f"{demand_metric.METRIC_NAME}: datapoints under other dimensions" in out
    assert f"ClusterName={NAMES.cluster},ServiceName=vllm-g5-staging" in out
    assert "no datapoint at all" not in out and "--stack" in out


def test_a_series_that_stopped_is_not_called_never_published(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    _all_three(clients)
    put_concurrency(clients.cw, 14.0, age_s=1800)  # outside the 600-s window
    code, out = verify_conc(capsys)
    assert code == EXIT_PROBLEMS
    assert "exists but has no datapoint in the window" in out and "MET005" in out
    assert "no datapoint at all" not in out


def test_verify_metrics_with_asg_only_checks_the_gpu_series(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    # --asg has no spec, so no service to read concurrency for.
    _all_three(clients)
    assert main(["verify", "metrics", "--asg", ASG, "--timeout", "0"]) == 0
    assert demand_metric.METRIC_NAME not in capsys.readouterr().out


# --- Spot: the agent's series of each group that runs a host ------------------------


def _spot_spec(tmp_path: Path, base: int = 0, extra: str = "") -> Path:
    # [capacity.spot] with on_demand_base = 0 and no instance floor: every task may
    # run on Spot, and the On-Demand group may have no host at all.
    text = EXAMPLE_SPEC.read_text(encoding="utf-8")
    text = text.replace("min_instances = 1", "min_instances = 0").replace(
        "\n[scaling]\n",
        '\n[capacity.spot]\ninstance_types = ["g5.xlarge", "g6.xlarge"]\n'
        f"on_demand_base = {base}\n{extra}\n[scaling]\n",
        1,
    )
    path = tmp_path / "spot.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _group(clients: Clients, name: str, hosts: int) -> None:
    ec2 = boto3.Session().client("ec2")
    lt = ec2.create_launch_template(
        LaunchTemplateName=f"{name}-lt", LaunchTemplateData={"ImageId": "ami-12c6146b"}
    )["LaunchTemplate"]["LaunchTemplateId"]
    clients.autoscaling.create_auto_scaling_group(
        AutoScalingGroupName=name,
        LaunchTemplate={"LaunchTemplateId": lt},
        MinSize=0,
        MaxSize=4,
        DesiredCapacity=hosts,
        AvailabilityZones=["us-east-1a"],
    )


def _all_three_for(clients: Clients, asg: str) -> None:
    for metric, value in (
        (gpu_metric.UTILIZATION, 37.0),
        (gpu_metric.MEMORY_USED, 20480.0),
        (gpu_metric.MEMORY_TOTAL, 23028.0),
    ):
        put(clients.cw, metric, value, gpu_metric.dimensions(asg))  # type: ignore[arg-type]


def test_with_spot_and_no_on_demand_host_the_spot_groups_series_is_what_must_arrive(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path)
    _group(clients, NAMES.asg, 0)  # on_demand_base = 0: no On-Demand host by design
    _group(clients, NAMES.spot_asg, 1)
    put_concurrency(clients.cw, 14.0)
    argv = ["verify", "metrics", str(spec), "--timeout", "0"]
    # The Spot host's agent has not published: that is the problem, not the empty group.
    code = main(argv)
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert f"for ASG {NAMES.spot_asg}" in err and f"ASG {NAMES.asg}" not in err
    _all_three_for(clients, NAMES.spot_asg)
    code = main(argv)
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0, out
    assert "All 3 GPU series" in out and NAMES.spot_asg in out


def test_with_spot_every_group_that_runs_a_host_must_publish(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path)
    _group(clients, NAMES.asg, 1)
    _group(clients, NAMES.spot_asg, 1)
    _all_three(clients)  # the On-Demand host publishes; the Spot host's agent does not
    put_concurrency(clients.cw, 14.0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert f"3 of 3 GPU series missing for ASG {NAMES.spot_asg}" in err


def test_with_spot_and_no_host_in_either_group_nothing_can_publish(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path)
    _group(clients, NAMES.asg, 0)
    _group(clients, NAMES.spot_asg, 0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert f"neither {NAMES.asg} nor the Spot group {NAMES.spot_asg}" in err
    assert "Fix:" in err


def test_with_spot_every_failing_group_is_named_in_one_message(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path)
    _group(clients, NAMES.asg, 1)
    _group(clients, NAMES.spot_asg, 1)
    put_concurrency(clients.cw, 14.0)
    # Neither group's agent publishes: the second group is checked too, not left out
    # behind the first one's failure.
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert f"3 of 3 GPU series missing for ASG {NAMES.asg}" in err
    assert f"3 of 3 GPU series missing for ASG {NAMES.spot_asg}" in err


def test_at_spot_percent_0_an_empty_on_demand_group_fails_without_a_base(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The first step of removing [capacity.spot]: every task goes On-Demand, so an
    # empty On-Demand group is a problem though on_demand_base is 0.
    spec = _spot_spec(tmp_path, extra="spot_percent = 0\n")
    _group(clients, NAMES.asg, 0)
    _group(clients, NAMES.spot_asg, 1)  # a Spot host still draining
    _all_three_for(clients, NAMES.spot_asg)
    put_concurrency(clients.cw, 14.0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert (
        f"{NAMES.asg} has no instance in service, yet [capacity.spot] spot_percent = 0 puts "
        "every task on it"
    ) in err


def test_with_a_base_an_empty_on_demand_group_fails_though_the_spot_group_publishes(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path, base=1)
    _group(clients, NAMES.asg, 0)  # on_demand_base = 1: it must run the base's task
    _group(clients, NAMES.spot_asg, 1)
    _all_three_for(clients, NAMES.spot_asg)
    put_concurrency(clients.cw, 14.0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert code == EXIT_PROBLEMS
    assert f"{NAMES.asg} has no instance in service, yet [capacity.spot] on_demand_base = 1" in err
    assert "Fix:" in err and "ASG001" in err
    # The Spot group, which has a host, was still checked (and carried the concurrency).
    assert "All 3 GPU series" in " ".join(captured.out.split())


@pytest.mark.parametrize("desired", [0, 1])
def test_with_a_base_the_on_demand_host_is_wanted_only_while_the_service_wants_a_task(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path, desired: int
) -> None:
    # Scaled to zero (desiredCount 0, DescribeServices) the base places no task, so the
    # empty On-Demand group is by design; with a task wanted it must run a host.
    spec = _spot_spec(tmp_path, base=1)
    make_service(clients, desired=desired)
    _group(clients, NAMES.asg, 0)
    _group(clients, NAMES.spot_asg, 1)  # a Spot host still there, publishing
    _all_three_for(clients, NAMES.spot_asg)
    put_concurrency(clients.cw, 14.0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert "All 3 GPU series" in " ".join(captured.out.split())
    if desired:
        assert code == EXIT_PROBLEMS
        assert f"{NAMES.asg} has no instance in service, yet [capacity.spot]" in err
    else:
        assert code == 0, err
        assert NAMES.asg not in err


def test_with_spot_at_zero_tasks_and_no_host_nothing_is_verified_and_it_says_so(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A healthy scale-to-zero Spot service at night: no task, no instance in either group.
    spec = _spot_spec(tmp_path, base=1)
    make_service(clients, desired=0)
    _group(clients, NAMES.asg, 0)
    _group(clients, NAMES.spot_asg, 0)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert f"note: the service {NAMES.service} runs no task (desiredCount 0)" in out
    assert "nothing was verified" in out and "once the service has a task" in out
    # A task wanted and still no host: the base's On-Demand host is missing, exit 1.
    clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=1)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == EXIT_PROBLEMS
    assert f"{NAMES.asg} has no instance in service, yet [capacity.spot] on_demand_base = 1" in err


def test_without_spot_a_service_at_zero_tasks_and_no_host_is_not_a_failure(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scale-to-zero service asleep: no task, and managed scaling took the group to zero."""
    make_service(clients, desired=0)
    _group(clients, NAMES.asg, 0)
    code = main(["verify", "metrics", str(EXAMPLE_SPEC), "--timeout", "0"])
    captured = capsys.readouterr()
    out = " ".join(captured.out.split())
    assert code == 0, captured.err
    assert (
        f"note: the service {NAMES.service} runs no task (desiredCount 0) and {NAMES.asg} has"
        in out
    )
    assert "nothing publishes the series by design, so nothing was verified" in out
    # A task wanted and still no host: nothing publishes, and that is a failure.
    clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=1)
    assert main(["verify", "metrics", str(EXAMPLE_SPEC), "--timeout", "0"]) == EXIT_PROBLEMS


@pytest.mark.parametrize("desired", [0, 1])
def test_without_spot_at_zero_tasks_only_the_hosts_series_are_waited_for(
    clients: Clients, capsys: pytest.CaptureFixture[str], desired: int
) -> None:
    """A host still in service, its agent publishing; no task, so no sidecar's concurrency."""
    make_service(clients, desired=desired)
    _group(clients, NAMES.asg, 1)
    _all_three_for(clients, NAMES.asg)
    code = main(["verify", "metrics", str(EXAMPLE_SPEC), "--timeout", "0"])
    captured = capsys.readouterr()
    out, err = " ".join(captured.out.split()), " ".join(captured.err.split())
    if desired:
        # A task wanted: its sidecar's series must arrive, and it has not.
        assert code == EXIT_PROBLEMS and demand_metric.METRIC_NAME in err
        assert f"{demand_metric.METRIC_NAME} Maximum MISSING" in out
    else:
        assert code == 0, err
        assert "All 3 GPU series" in out
        assert "runs no task (desiredCount 0), so no task publishes concurrency's series" in out


def test_with_spot_at_zero_tasks_a_host_is_verified_without_the_sidecars_series(
    clients: Clients, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = _spot_spec(tmp_path, base=1)
    make_service(clients, desired=0)
    _group(clients, NAMES.asg, 0)
    _group(clients, NAMES.spot_asg, 1)  # a Spot host still there; no task, no sidecar
    _all_three_for(clients, NAMES.spot_asg)
    code = main(["verify", "metrics", str(spec), "--timeout", "0"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "so no task publishes concurrency's series" in " ".join(captured.out.split())


def test_without_spot_a_denied_describe_services_waits_for_every_series_and_says_why(
    clients: Clients,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The old role (CloudWatch reads only): the service's desiredCount is not read."""
    from .test_failures import as_user, restricted_user

    make_service(clients, desired=0)
    _group(clients, NAMES.asg, 1)
    _all_three_for(clients, NAMES.asg)
    # moto checks CloudWatch's calls under its endpoint prefix, monitoring.
    reads = ["GetMetricData", "ListMetrics"]
    env = restricted_user([f"{p}:{a}" for p in ("cloudwatch", "monitoring") for a in reads])
    request.getfixturevalue("iam_enforced")
    as_user(monkeypatch, env)
    code = main(["verify", "metrics", str(EXAMPLE_SPEC), "--timeout", "0"])
    captured = capsys.readouterr()
    assert code == EXIT_PROBLEMS, captured.err  # the concurrency was waited for, and is missing
    out = " ".join(captured.out.split())
    assert "ecs:DescribeServices denied: whether the service runs a task was not read" in out
