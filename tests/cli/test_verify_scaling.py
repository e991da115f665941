"""verify scaling (cli/verify_scaling.py) against moto in server mode.

moto never scales anything (its target tracking creates inert alarms), so the
scaling tests raise and lower desiredCount themselves with UpdateService
while the tool publishes; what they prove is the tool's side: it publishes
the contract metric, detects both moves, and stops publishing on every exit.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.stub import Stubber

from ecs_gpu.aws import verify_scaling as vs
from ecs_gpu.checks.verify import scaling as vscaling
from ecs_gpu.cli import main
from ecs_gpu.cli import verify_scaling as verify_cli
from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.errors import EXIT_BAD_INPUT, EXIT_PROBLEMS, EcsGpuError, ProblemsFound
from ecs_gpu.spec import load_spec
from support.stubbed import offline_client
from support.zero_alarms import sleep_metrics

from .conftest import EXAMPLE_SPEC, NAMES, Clients, Lockstep
from .verify_helpers import (
    ALB,
    ASG,
    FAST_ALARM,
    FAST_POLICY,
    SLEEP_ALARM,
    T0,
    WAKE_ALARM,
    activity,
    count_puts,
    desired,
    drive,
    fast_policy,
    make_service,
    put_sleep_alarm,
    put_wake_alarm,
    run_faked,
    sleep_policy,
    wake_policy,
)

# The example's fast-path threshold (panic_threshold_percent of its target).
EXAMPLE_THRESHOLD = fp.threshold(load_spec(EXAMPLE_SPEC))


def test_verify_scaling_refuses_without_yes_before_touching_aws(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    sent = count_puts(clients.cw)
    with pytest.raises(EcsGpuError) as exc:
        verify_cli.run_verify_scaling(
            clients.cw,
            clients.ecs,
            clients.appscaling,
            NAMES,
            yes=False,
            publish_interval_s=0.01,
            poll_s=0,
            scale_out_timeout_s=1,
            scale_in_timeout_s=1,
        )
    assert exc.value.exit_code == EXIT_BAD_INPUT
    assert "changes the live service's task count" in exc.value.message
    assert sent == []


def test_verify_scaling_measures_scale_out_and_scale_in(clients: Clients) -> None:
    make_service(clients, desired=1)
    sent = count_puts(clients.cw)
    now = [0.0]
    pace = Lockstep()
    pub = vs.Publisher(clients.cw, ASG, 0.0, interval_s=0.01, pace=pace)

    def sleep(_: float) -> None:
        # Stand-in for Application Auto Scaling, which moto does not run: once
        # the tool has published, move desiredCount the way the policy would.
        now[0] += 15.0
        pace.tick()
        if pub.value >= 70 and desired(clients) == 1 and now[0] >= 60:
            clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=2)
        elif pub.value < 70 and desired(clients) == 2 and now[0] >= 150:
            clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=1)

    result = run_faked(clients, sleep=sleep, publisher=pub, now=now, poll_s=15)
    assert (result.initial, result.peak, result.final) == (1, 2, 1)
    assert result.scale_out_s == 60.0 and result.scale_in_s == 90.0
    assert not pub.running
    # One datapoint at the start and one per 15-s poll: 4 polls out, 6 in.
    assert len(sent) == result.published == 1 + 4 + 6
    data = [p["MetricData"][0] for p in sent]
    assert all(d["MetricName"] == gpu_metric.UTILIZATION for d in data)
    assert all(d["Dimensions"] == gpu_metric.dimensions(ASG) for d in data)
    assert all(d["Counts"] == [1000.0] for d in data)
    values = [d["Values"][0] for d in data]
    assert values[0] == 100.0 and values[-1] == 0.0  # high first, then low


def test_verify_scaling_stops_publishing_when_interrupted(clients: Clients) -> None:
    make_service(clients, desired=1)
    sent = count_puts(clients.cw)
    pace = Lockstep()
    pub = vs.Publisher(clients.cw, ASG, 0.0, interval_s=0.01, pace=pace)

    def ctrl_c(_: float) -> None:
        pace.tick()
        pace.tick()
        raise KeyboardInterrupt

    with pytest.raises(EcsGpuError) as exc:
        run_faked(clients, sleep=ctrl_c, publisher=pub, poll_s=15)
    assert exc.value.exit_code == 130 and "stopped publishing" in exc.value.message
    assert len(sent) == 3
    for _ in range(30):  # thirty more publish intervals
        pace.tick()
    assert len(sent) == 3, "PutMetricData continued after Ctrl-C"
    assert not pub.running
    assert not any(t.name == "ecs-gpu-publisher" and t.is_alive() for t in threading.enumerate())


def test_verify_scaling_refuses_a_test_that_cannot_pass(clients: Clients) -> None:
    make_service(clients, desired=4, max_tasks=4)
    with pytest.raises(ProblemsFound, match="its maximum"):
        verify_cli.run_verify_scaling(
            clients.cw,
            clients.ecs,
            clients.appscaling,
            NAMES,
            yes=True,
            publish_interval_s=0.01,
            poll_s=0,
            scale_out_timeout_s=1,
            scale_in_timeout_s=1,
        )
    with pytest.raises(ProblemsFound, match="no Application Auto Scaling target"):
        vscaling.check_can_scale(None, NAMES.scalable_target_resource_id, 1)


def test_verify_scaling_on_concurrency_publishes_past_the_fast_path_and_names_its_decision(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    earlier = activity("vllm-g5-Cpu-9Z", T0 - timedelta(hours=2), 2, 1)  # before the test
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    result, sent, out, fast = drive(clients, [earlier, first], capsys)
    assert (result.initial, result.peak, result.final) == (1, 2, 1)
    assert all(p["Namespace"] == demand_metric.NAMESPACE for p in sent)
    data = [p["MetricData"][0] for p in sent]
    assert all(d["MetricName"] == demand_metric.METRIC_NAME for d in data)
    assert all(
        d["Dimensions"] == demand_metric.dimensions(NAMES.cluster, NAMES.service) for d in data
    )
    assert all(d["StorageResolution"] == 1 and d["Counts"] == [1000.0] for d in data)
    high, low = data[0]["Values"][0], data[-1]["Values"][0]
    # Inside the fast path's first step (the smallest), then below the target.
    assert fast.step_for(high) == fast.steps[0] and low < fast.target
    assert f"First decision: the fast path (step policy {FAST_POLICY}) 31 s after" in out
    assert "changing the desired capacity from 1 to 2" in out
    assert "warning" not in out  # the deployed fast path matches the spec's


def test_verify_scaling_says_when_target_tracking_decided_first(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    tracking = activity("vllm-g5-Concurrency-7Q", T0 + timedelta(seconds=200), 1, 2)
    _, _, out, fast = drive(clients, [tracking], capsys)
    assert "First decision: not the fast path" in out
    assert f"{fast.datapoints_to_alarm} x {fast.period_s}-s periods" in out
    assert "vllm-g5-Concurrency-7Q" in out and "Scaling loop works" in out


@pytest.mark.parametrize(
    ("policies", "alarm_threshold", "says"),
    [
        ([], None, "has no StepScaling policy"),
        ([fast_policy([])], None, f"has StepScaling policy {FAST_POLICY} with no alarm"),
        (
            [fast_policy(["vllm-g5-Gone-5E"])],
            None,
            "whose alarm does not match it (alarm vllm-g5-Gone-5E does not exist)",
        ),
        (
            [fast_policy([FAST_ALARM])],
            40.0,
            f"alarm {FAST_ALARM}: it reads threshold 40 (want {EXAMPLE_THRESHOLD:g})",
        ),
    ],
    ids=["no-step-policy", "no-alarm", "alarm-deleted", "stale-threshold"],
)
def test_verify_scaling_says_when_the_service_lacks_the_specs_fast_path(
    clients: Clients,
    capsys: pytest.CaptureFixture[str],
    policies: list[dict[str, Any]],
    alarm_threshold: float | None,
    says: str,
) -> None:
    # The scale-out comes from target tracking (the policy in the cause), as
    # it would with no fast path: the test still runs, then exits 1.
    tracking = activity("vllm-g5-Concurrency-7Q", T0 + timedelta(seconds=200), 1, 2)
    with pytest.raises(ProblemsFound) as exc:
        drive(clients, [tracking], capsys, policies=policies, alarm_threshold=alarm_threshold)
    out = " ".join(capsys.readouterr().out.split())
    message = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "the spec has a fast path (a StepScaling policy invoked by an alarm on" in message
    assert (
        f"at or above {EXAMPLE_THRESHOLD:g} over 10-s periods), but service/vllm-g5/vllm-g5 has"
        in message
    )
    assert says in message and says in out
    assert "`ecs-gpu deploy SPEC`" in message and "`ecs-gpu diff SPEC`" in message
    assert out.index("warning:") < out.index("Scaling loop works")  # told before the wait
    assert "First decision: not the fast path, which the service lacks" in out


def test_the_first_decision_names_a_missing_step_policy(capsys: pytest.CaptureFixture[str]) -> None:
    """Called on its own (no check before it), the report still says no step policy exists."""
    c = offline_client("application-autoscaling")
    tracking = activity("vllm-g5-Concurrency-7Q", T0 + timedelta(seconds=200), 1, 2)
    with Stubber(c) as st:
        st.add_response("describe_scaling_policies", {"ScalingPolicies": []})
        st.add_response("describe_scaling_activities", {"ScalingActivities": [tracking]})
        fast = fp.fast_path(load_spec(EXAMPLE_SPEC))
        assert fast is not None
        d = verify_cli.report_first_decision(
            c, NAMES.scalable_target_resource_id, since=T0, fast=fast
        )
    assert d is not None and d.fast_path_policy is None and d.step_policies == ()
    out = " ".join(capsys.readouterr().out.split())
    assert f"{NAMES.scalable_target_resource_id} has no StepScaling policy" in out
    assert "its alarm needs" not in out


@pytest.fixture
def nofast_spec(tmp_path: Path) -> Path:
    """The concurrency example with the fast path off (the service name kept)."""
    text = EXAMPLE_SPEC.read_text(encoding="utf-8")
    off = text.replace("\n[scaling]\n", "\n[scaling]\nfast_scale_out = false\n", 1)
    assert off != text
    path = tmp_path / "g5-vllm-nofast.toml"
    path.write_text(off, encoding="utf-8")
    spec = load_spec(path)
    assert spec.scaling.signal == "concurrency" and fp.fast_path(spec) is None
    return path


def test_verify_scaling_without_the_fast_path_drives_concurrency_for_target_tracking(
    clients: Clients,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    nofast_spec: Path,
) -> None:
    make_service(clients, desired=1)
    target = load_spec(nofast_spec).scaling.target_concurrency_per_task
    assert target is not None
    made: list[vs.Publisher] = []
    values: list[float] = []
    concurrency_publisher = vs.ConcurrencyPublisher

    class Recording(concurrency_publisher):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

        def put(self, value: float) -> None:
            values.append(value)
            super().put(value)

    class RecordingGpu(vs.Publisher):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(vs, "ConcurrencyPublisher", Recording)
    monkeypatch.setattr(vs, "Publisher", RecordingGpu)
    now = [0.0]
    pace = Lockstep()

    def sleep(_: float) -> None:
        # Stand-in for target tracking (moto runs none): three one-minute
        # datapoints above the target, then back in once the value is low.
        now[0] += 10.0
        pace.tick()  # react to what was published, not to what is about to be
        pub = made[0]
        if pub.value > target and desired(clients) == 1 and now[0] >= 200:
            clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=2)
        elif pub.value < target and desired(clients) == 2:
            clients.ecs.update_service(cluster=NAMES.cluster, service=NAMES.service, desiredCount=1)

    real = verify_cli.run_verify_scaling

    def quick(*args: Any, **kwargs: Any) -> vscaling.ScalingResult:
        kwargs.update(sleep=sleep, clock=lambda: now[0], publish_interval_s=0.01, pace=pace)
        return real(*args, **kwargs)

    monkeypatch.setattr(verify_cli, "run_verify_scaling", quick)
    code = main(["verify", "scaling", str(nofast_spec), "--yes"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0, out
    assert len(made) == 1 and isinstance(made[0], concurrency_publisher)
    assert not made[0].running
    assert values[0] == 2 * target and values[-1] == 0.0  # above the target, then below
    # One datapoint at the start and one per 10-s poll (20 out, 1 in): bounded by
    # the fake clock, not by how fast this machine publishes.
    assert len(values) == made[0].published == 1 + 20 + 1
    assert "fast path is off ([scaling] fast_scale_out = false)" in out
    assert f"publishing {2 * target:g}, twice the target" in out and "3-4 minutes" in out
    assert "First decision" not in out
    assert "Scaling loop works: desiredCount 1 -> 2" in out
    # What reached CloudWatch: the sidecars' series, no GPU utilization. Read
    # back by GetMetricStatistics, not ListMetrics: moto stores each of the
    # Counts as a datapoint and its ListMetrics is quadratic in them (22 puts
    # x 1000 took minutes).
    stats = clients.cw.get_metric_statistics(
        Namespace=demand_metric.NAMESPACE,
        MetricName=demand_metric.METRIC_NAME,
        Dimensions=demand_metric.dimensions(NAMES.cluster, NAMES.service),  # type: ignore[arg-type]
        StartTime=datetime.now(UTC) - timedelta(hours=1),
        EndTime=datetime.now(UTC) + timedelta(minutes=1),
        Period=3600,
        Statistics=["SampleCount"],
    )["Datapoints"]
    assert sum(d["SampleCount"] for d in stats) == 1000 * len(values)
    assert clients.cw.list_metrics(Namespace=gpu_metric.NAMESPACE)["Metrics"] == []


@pytest.mark.parametrize(
    ("running_stat", "says"),
    [
        (None, "has no such alarm: at zero tasks nothing starts one again"),
        ("Average", "has a wake alarm that does not match it (alarm vllm-g5-WakeAlarm-7D6C"),
    ],
    ids=["no-wake-alarm", "stale-wake-alarm"],
)
def test_verify_scaling_says_when_the_service_lacks_the_specs_wake_path(
    clients: Clients, capsys: pytest.CaptureFixture[str], running_stat: str | None, says: str
) -> None:
    if running_stat is not None:
        put_wake_alarm(clients, running_stat)
    policies = [fast_policy([FAST_ALARM]), wake_policy([WAKE_ALARM] if running_stat else [])]
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    with pytest.raises(ProblemsFound) as exc:
        drive(clients, [first], capsys, policies=policies, wake_path=True)
    out = " ".join(capsys.readouterr().out.split())
    message = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "the spec scales to zero with a load balancer, so it has a wake path" in message
    assert says in message and says in out
    assert out.index("warning:") < out.index("Scaling loop works")  # told before the wait
    assert "First decision: the fast path" in out  # the fast path itself was fine


@pytest.mark.parametrize(
    ("missing", "step", "says"),
    [
        # Missing data breaching: every quiet minute at zero reads as a request and wakes it.
        ("breaching", 1, "has a wake alarm that does not match it"),
        # The alarm as deployed, the policy's step edited to start two tasks.
        ("notBreaching", 2, "has a wake policy that does not match it (steps (lower, upper, "),
    ],
    ids=["missing-data-breaching", "two-task-step"],
)
def test_verify_scaling_holds_the_wake_alarm_and_step_to_the_templates(
    clients: Clients, capsys: pytest.CaptureFixture[str], missing: str, step: int, says: str
) -> None:
    put_wake_alarm(clients, missing=missing)
    policy = wake_policy([WAKE_ALARM])
    policy["StepScalingPolicyConfiguration"]["StepAdjustments"][0]["ScalingAdjustment"] = step
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    with pytest.raises(ProblemsFound) as exc:
        drive(
            clients, [first], capsys, policies=[fast_policy([FAST_ALARM]), policy], wake_path=True
        )
    message = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert says in message
    want = "missing data breaching (want notBreaching)" if step == 1 else "(want [(0, None, 1)])"
    assert want in message


@pytest.mark.parametrize("wake_alarm", [False, True], ids=["no-wake-alarm", "wake-alarm"])
def test_verify_scaling_judges_only_the_wake_policys_alarm_as_the_wake_alarm(
    clients: Clients, capsys: pytest.CaptureFixture[str], wake_alarm: bool
) -> None:
    # The sleep alarm reads the same RequestCount query r: it is not a stale wake alarm.
    put_sleep_alarm(clients)
    if wake_alarm:
        put_wake_alarm(clients, "Average")
    policies = [
        fast_policy([FAST_ALARM]),
        wake_policy([WAKE_ALARM] if wake_alarm else []),
        sleep_policy([SLEEP_ALARM]),
    ]
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    with pytest.raises(ProblemsFound) as exc:
        drive(clients, [first], capsys, policies=policies, wake_path=True)
    message = " ".join(exc.value.message.split())
    assert SLEEP_ALARM not in message
    if wake_alarm:
        assert f"has a wake alarm that does not match it (alarm {WAKE_ALARM}: it reads" in message
    else:
        assert "has no such alarm: at zero tasks nothing starts one again" in message


def test_verify_scaling_passes_with_the_wake_and_sleep_paths_deployed(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    put_wake_alarm(clients)
    put_sleep_alarm(clients)
    policies = [
        fast_policy([FAST_ALARM]),
        wake_policy([WAKE_ALARM]),
        sleep_policy([SLEEP_ALARM]),
    ]
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    result, _, out, _ = drive(clients, [first], capsys, policies=policies, wake_path=True)
    assert (result.initial, result.peak, result.final) == (1, 2, 1)
    assert "warning" not in out and "Scaling loop works" in out


@pytest.mark.parametrize(
    ("sleep_alarm", "says"),
    [
        (None, f"but {NAMES.scalable_target_resource_id} has no sleep policy"),
        ("wrong-metric", "whose alarm does not match it (alarm vllm-g5-SleepAlarm"),
        ("other-alb", "whose alarm does not match it (alarm vllm-g5-SleepAlarm"),
    ],
    ids=["no-sleep-policy", "sleep-alarm-on-another-metric", "sleep-alarm-on-another-alb"],
)
def test_verify_scaling_says_when_the_service_lacks_the_specs_sleep_path(
    clients: Clients, capsys: pytest.CaptureFixture[str], sleep_alarm: str | None, says: str
) -> None:
    # Without the sleep path an idle service keeps its last task and instance.
    put_wake_alarm(clients)
    policies = [fast_policy([FAST_ALARM]), wake_policy([WAKE_ALARM])]
    if sleep_alarm is not None:
        metrics = sleep_metrics(ALB, NAMES.cluster, NAMES.service)
        for q in metrics:
            stat = q.get("MetricStat")
            if stat and q["Id"] == "r" and sleep_alarm == "wrong-metric":
                stat["Metric"]["MetricName"] = "RequestCountPerTarget"
            if stat and q["Id"] == "a" and sleep_alarm == "other-alb":
                stat["Metric"]["Dimensions"] = [
                    {"Name": "LoadBalancer", "Value": "app/other/0123456789abcdef"}
                ]
        put_sleep_alarm(clients, metrics)
        policies.append(sleep_policy([SLEEP_ALARM]))
    first = activity(FAST_POLICY, T0 + timedelta(seconds=31), 1, 2)
    with pytest.raises(ProblemsFound) as exc:
        drive(clients, [first], capsys, policies=policies, wake_path=True)
    message = " ".join(exc.value.message.split())
    out = " ".join(capsys.readouterr().out.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "so it has a sleep path (an ExactCapacity 0 StepScaling policy" in message
    assert says in message and says in out
    assert "wake path" not in message  # the wake path itself was fine
