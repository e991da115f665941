"""verify wake on moto (server mode), with a local server standing in for the ALB.

moto never scales and has no load balancer answering HTTP, so each test plays
AWS itself: a server on 127.0.0.1 answers 503 (the ALB with no registered
target, aws-semantics §10) and records the request; once it has one and the
fake clock has advanced, the test's ``sleep`` sets desiredCount 1 with
UpdateService, as the wake policy would. moto lists no StepScaling policy's
alarms and has no DescribeScalingActivities: those answers are AWS-shaped
and checked against botocore's output shapes (test_verify's hooks);
DescribeServices, DescribeAlarms and DescribeStacks go to moto. No real
time passes: the clock is the test's.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.checks.verify import wake as vwake
from ecs_gpu.cli import main
from ecs_gpu.cli import verify_wake as cli
from ecs_gpu.contracts.naming import stack_name_of
from ecs_gpu.design import Design
from ecs_gpu.design.paths import wake
from ecs_gpu.errors import EXIT_AWS, EXIT_BAD_INPUT, EXIT_PROBLEMS, EcsGpuError
from ecs_gpu.spec import Spec, load_spec
from example_specs import G5, G5_PATH, INTERNAL_LB, scaled_to_zero

from .conftest import NAMES, Clients
from .verify_helpers import (
    T0,
    WAKE_ALARM,
    WAKE_POLICY,
    activities_hook,
    activity,
    make_service,
    policies_hook,
    put_wake_alarm,
    wake_policy,
)


class FakeAlb:
    """Answers every GET 503 and records its paths: the ALB of a service at zero."""

    def __init__(self) -> None:
        paths: list[str] = []
        self.paths = paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                self.send_response(vwake.AT_ZERO_STATUS)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                """Quiet: the test reads ``paths``."""

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.host = f"127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)


@pytest.fixture
def alb() -> Iterator[FakeAlb]:
    a = FakeAlb()
    try:
        yield a
    finally:
        a.close()


@pytest.fixture
def zero_spec(tmp_path: Path) -> Path:
    """The example at min_tasks 0 with an internal load balancer: it has a wake path."""
    path = tmp_path / "g5-vllm-zero.toml"
    path.write_text(scaled_to_zero() + INTERNAL_LB, encoding="utf-8")
    assert wake.wake_path(load_spec(path)) is not None
    return path


def deploy_wake(c: Clients, *, policy_alarms: list[str] | None = None) -> None:
    """The wake policy and alarm as the stack deploys them (moto's CloudFormation skips both)."""
    put_wake_alarm(c)
    policies_hook(
        c.appscaling, [wake_policy([WAKE_ALARM] if policy_alarms is None else policy_alarms)]
    )


def run(
    c: Clients,
    spec_path: Path,
    alb: FakeAlb,
    *,
    rise_at_s: float | None = 120.0,
    from_stack: bool = False,
    yes: bool = True,
    **options: Any,
) -> float:
    """run_verify_wake on moto with the fake clock; ``rise_at_s``: when the test, as
    the wake policy, sets desiredCount 1 after the ALB got the request (None: never);
    ``from_stack``: no --url, the address is the stack's output."""
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s
        if rise_at_s is not None and alb.paths and now[0] >= rise_at_s:
            svc = c.ecs.describe_services(cluster=NAMES.cluster, services=[NAMES.service])
            if svc["services"][0]["desiredCount"] == 0:
                c.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=1)

    return cli.run_verify_wake(
        Design.of(load_spec(spec_path)),
        spec_path,
        cw=c.cw,
        ecs=c.ecs,
        appscaling=c.appscaling,
        cfn=c.cfn,
        url=None if from_stack else f"http://{alb.host}/health",
        yes=yes,
        poll_s=10.0,
        sleep=sleep,
        clock=lambda: now[0],
        wall_clock=lambda: T0,
        **options,
    )


def outputs_stack(c: Clients, spec: Spec, dns: str) -> None:
    """A stack with the LoadBalancerDnsName output the real one has (here: the fake ALB)."""
    c.cfn.create_stack(
        StackName=stack_name_of(spec),
        TemplateBody=(
            '{"Resources": {"H": {"Type": "AWS::SNS::Topic"}}, '
            f'"Outputs": {{"{vwake.LB_DNS_OUTPUT}": {{"Value": "{dns}"}}}}}}'
        ),
    )


def said(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().out.split())


def test_a_request_at_zero_wakes_the_service_and_names_the_wake_policy(
    clients: Clients, zero_spec: Path, alb: FakeAlb, capsys: pytest.CaptureFixture[str]
) -> None:
    make_service(clients, desired=0)
    deploy_wake(clients)
    calls = activities_hook(
        clients.appscaling,
        [
            activity("vllm-g5-Sleep-5B4A", T0 - timedelta(hours=1), 1, 0),  # before: ignored
            activity(WAKE_POLICY, T0 + timedelta(seconds=115), 0, 1),
        ],
    )
    spec = load_spec(zero_spec)
    outputs_stack(clients, spec, alb.host)
    # No --url: the address is the stack's output, the path the spec's health check.
    rise = run(clients, zero_spec, alb, from_stack=True, running_timeout_s=600)
    out = said(capsys)
    assert spec.load_balancer is not None
    assert alb.paths == [spec.load_balancer.health_check_path]
    assert rise == 120.0
    assert calls and calls[0]["ResourceId"] == NAMES.scalable_target_resource_id
    bound = wake.detection_s(wake.WakePath(cooldown_s=0))
    assert f"answered {vwake.AT_ZERO_STATUS}." in out
    assert f"Wake path works: the wake policy {WAKE_POLICY} set desiredCount 1 120 s" in out
    assert f"(expected within {bound} s)" in out
    assert "First task RUNNING 120 s after the request" in out  # moto runs it at once


def test_a_service_not_at_zero_is_refused_and_told_when_it_sleeps(
    clients: Clients, zero_spec: Path, alb: FakeAlb
) -> None:
    make_service(clients, desired=1)
    deploy_wake(clients)
    with pytest.raises(EcsGpuError) as exc:
        run(clients, zero_spec, alb)
    msg = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "(desiredCount 1): the proof needs it at zero" in msg
    assert "after 10 one-minute periods without a request" in msg
    assert "changes nothing to force it" in msg
    assert alb.paths == []  # nothing sent


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (G5 + INTERNAL_LB, "keeps at least one task ([scaling] min_tasks = 1), so"),
        (G5, "min_tasks = 1) and has no [load_balancer], so"),
    ],
    # (min_tasks 0 without a load balancer needs a schedule: the scheduled service has none)
    ids=["min-tasks-1", "neither"],
)
def test_a_spec_without_a_wake_path_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    path = tmp_path / G5_PATH.name
    path.write_text(text, encoding="utf-8")
    assert main(["verify", "wake", str(path), "--yes"]) == EXIT_BAD_INPUT
    err = " ".join(capsys.readouterr().err.split())
    assert says in err and "has no wake path" in err and "Fix:" in err


def test_without_yes_nothing_is_sent(clients: Clients, zero_spec: Path, alb: FakeAlb) -> None:
    make_service(clients, desired=0)
    with pytest.raises(EcsGpuError) as exc:
        run(clients, zero_spec, alb, yes=False)
    assert exc.value.exit_code == EXIT_BAD_INPUT and "--yes" in exc.value.message
    assert alb.paths == []


def test_an_unreachable_load_balancer_is_exit_3_with_the_vpc_fix(
    clients: Clients, zero_spec: Path, alb: FakeAlb
) -> None:
    make_service(clients, desired=0)
    deploy_wake(clients)
    alb.close()  # nothing listens on its port now: connection refused
    with pytest.raises(EcsGpuError) as exc:
        run(clients, zero_spec, alb)
    msg = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_AWS
    assert f"http://{alb.host}/health: unreachable" in msg
    assert 'scheme = "internal"' in msg and "from a host in the VPC" in msg and "--url" in msg


def test_a_wake_path_not_deployed_is_the_config_checks_exit_1(
    clients: Clients, zero_spec: Path, alb: FakeAlb
) -> None:
    make_service(clients, desired=0)
    deploy_wake(clients, policy_alarms=[])  # the policy, no alarm invoking it
    with pytest.raises(EcsGpuError) as exc:
        run(clients, zero_spec, alb)
    msg = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "has no such alarm: at zero tasks nothing starts one again" in msg
    assert "SCL008" in msg and "`ecs-gpu deploy SPEC`" in msg
    assert alb.paths == []


def test_desired_never_rising_is_exit_1_with_the_likely_causes(
    clients: Clients, zero_spec: Path, alb: FakeAlb
) -> None:
    make_service(clients, desired=0)
    deploy_wake(clients)
    with pytest.raises(EcsGpuError) as exc:
        run(clients, zero_spec, alb, rise_at_s=None, timeout_s=240)
    msg = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert f"desiredCount stayed 0 for 240 s after the request to http://{alb.host}" in msg
    assert f"should have invoked {WAKE_POLICY} within 180 s" in msg
    assert "SCL008" in msg and "longer --timeout" in msg
    assert "has its actions disabled" not in msg
    assert alb.paths == ["/health"]  # one request, never more


def test_a_wake_alarm_with_its_actions_disabled_is_refused_before_the_request(
    clients: Clients, zero_spec: Path, alb: FakeAlb
) -> None:
    # Left disabled (DisableAlarmActions): it would go to ALARM and invoke nothing, so the
    # check before the test says so, with the command, and sends no request.
    make_service(clients, desired=0)
    deploy_wake(clients)
    clients.cw.disable_alarm_actions(AlarmNames=[WAKE_ALARM])
    with pytest.raises(EcsGpuError) as exc:
        run(clients, zero_spec, alb, rise_at_s=None, timeout_s=240)
    msg = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert f"alarm {WAKE_ALARM}: its actions are disabled" in msg
    assert f"Fix: aws cloudwatch enable-alarm-actions --alarm-names {WAKE_ALARM} (" in msg
    assert "redeploy the spec" not in msg
    assert alb.paths == []  # nothing was sent


def test_a_rise_another_policy_made_is_not_a_proof(
    clients: Clients, zero_spec: Path, alb: FakeAlb
) -> None:
    make_service(clients, desired=0)
    deploy_wake(clients)
    activities_hook(
        clients.appscaling, [activity("vllm-g5-Scheduled-1A", T0 + timedelta(seconds=100), 0, 1)]
    )
    with pytest.raises(EcsGpuError) as exc:
        run(clients, zero_spec, alb)
    msg = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert f"was not the wake policy's ({WAKE_POLICY})" in msg and "vllm-g5-Scheduled-1A" in msg


def test_the_command_refuses_without_yes_after_the_spec_and_before_the_request(
    clients: Clients, zero_spec: Path, alb: FakeAlb, capsys: pytest.CaptureFixture[str]
) -> None:
    make_service(clients, desired=0)
    url = f"http://{alb.host}/health"
    assert main(["verify", "wake", str(zero_spec), "--url", url]) == EXIT_BAD_INPUT
    assert "Fix: rerun with --yes" in " ".join(capsys.readouterr().err.split())
    assert alb.paths == []


def test_the_timeout_help_states_the_default_the_code_waits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ecs_gpu.checks.verify import wake as vwake
    from ecs_gpu.cli import main
    from ecs_gpu.design.paths import wake

    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
    minutes = words[int(vwake.DESIRED_MARGIN_S // wake.PERIOD_S)]
    assert main(["verify", "wake", "--help"]) == 0
    shown = " ".join(capsys.readouterr().out.replace("│", " ").split())  # the options' box
    assert f"detection bound plus {minutes} minutes" in shown
