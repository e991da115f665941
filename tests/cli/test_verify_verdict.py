"""verify scaling on the fast scale-in ([scaling] fast_scale_in = true), against moto in
server mode.

moto runs no alarm and no scaling policy (it evaluates no step-scaling alarm,
so nothing ever removes a task), lists no StepScaling policy's Alarms and has
no DescribeScalingActivities. So, as in test_verify.py: the test's fake
clock moves desiredCount the way the policies would, DescribeScalingPolicies
and DescribeScalingActivities are answered with AWS-shaped responses checked
against botocore's output shapes, and the alarms themselves (DescribeAlarms)
are moto's, put as infra/scaling.py writes them.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.checks.verify import scaling as vscaling
from ecs_gpu.cli import main
from ecs_gpu.cli import verify_scaling as verify_cli
from ecs_gpu.contracts import demand_metric
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.design.paths import fast_scale_in as fsi
from ecs_gpu.design.paths import sleep
from ecs_gpu.errors import EXIT_PROBLEMS, ProblemsFound
from ecs_gpu.spec import load_spec

from .conftest import EXAMPLE_SPEC, NAMES, Clients
from .verify_helpers import (
    FAST_ALARM,
    FAST_POLICY,
    SLEEP_POLICY,
    T0,
    activities_hook,
    count_puts,
    desired,
    fast_policy,
    lockstep_publisher,
    make_service,
    path_policy,
    policies_hook,
    put_fast_alarm,
    run_faked,
    sleep_policy,
)

IN_POLICY = "vllm-g5-FastScaleIn-5G6H"
IN_ALARM = "vllm-g5-FastScaleInAlarm-7J8K"
TRACKING = "vllm-g5-Concurrency-7Q"


@pytest.fixture(scope="module")
def fsi_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The concurrency example with the fast scale-in on (the service name kept)."""
    text = EXAMPLE_SPEC.read_text(encoding="utf-8")
    on = text.replace("\n[scaling]\n", "\n[scaling]\nfast_scale_in = true\n", 1)
    assert on != text
    path = tmp_path_factory.mktemp("spec") / "g5-vllm-fsi.toml"
    path.write_text(on, encoding="utf-8")
    return path


def fast_in_of(path: Path) -> fsi.FastScaleIn:
    f = fsi.fast_scale_in(load_spec(path))
    assert f is not None
    return f


def in_policy(fast_in: fsi.FastScaleIn, alarms: list[str]) -> dict[str, Any]:
    """The fast scale-in's StepScaling policy as DescribeScalingPolicies lists it."""
    steps: list[dict[str, Any]] = []
    for s in fast_in.steps:
        step: dict[str, Any] = {
            "MetricIntervalUpperBound": s.upper,
            "ScalingAdjustment": -s.percent,
        }
        if s.lower is not None:
            step["MetricIntervalLowerBound"] = s.lower
        steps.append(step)
    return path_policy(
        IN_POLICY,
        alarms,
        {
            "AdjustmentType": fsi.ADJUSTMENT_TYPE,
            "StepAdjustments": steps,
            "MinAdjustmentMagnitude": fast_in.min_adjustment,
            "Cooldown": fast_in.cooldown_s,
            "MetricAggregationType": fsi.METRIC_AGGREGATION,
        },
    )


def put_in_alarm(c: Clients, fast_in: fsi.FastScaleIn, threshold: float | None = None) -> None:
    """The fast scale-in's alarm as infra/scaling.py writes it (moto's CloudFormation skips
    alarms): metric math over the series' Sum and SampleCount at 10 s."""

    def stat(qid: str, st: str) -> dict[str, Any]:
        metric = {
            "Namespace": demand_metric.NAMESPACE,
            "MetricName": demand_metric.METRIC_NAME,
            "Dimensions": demand_metric.dimensions(NAMES.cluster, NAMES.service),
        }
        return {
            "Id": qid,
            "MetricStat": {"Metric": metric, "Period": fast_in.period_s, "Stat": st},
            "ReturnData": False,
        }

    thr = fast_in.threshold if threshold is None else threshold
    c.cw.put_metric_alarm(
        AlarmName=IN_ALARM,
        Metrics=[
            {
                "Id": "expr_1",
                "Expression": fsi.expression(thr, fast_in.period_s),
                "Label": fsi.EXPRESSION_LABEL,
                "ReturnData": True,
            },
            stat(fsi.SUM_ID, "Sum"),
            stat(fsi.COUNT_ID, "SampleCount"),
        ],
        EvaluationPeriods=fast_in.evaluation_periods,
        DatapointsToAlarm=fast_in.datapoints_to_alarm,
        Threshold=thr,
        ComparisonOperator=fsi.COMPARISON,
        TreatMissingData="notBreaching",
        AlarmActions=[in_policy(fast_in, [])["PolicyARN"]],
    )


def activity(policy: str, at_s: float, to: int) -> dict[str, Any]:
    """An activity as the Application Auto Scaling user guide shows one: the cause names
    the alarm and the policy, the description the count it set."""
    start = T0 + timedelta(seconds=at_s)
    return {
        "ActivityId": f"act-{policy}-{at_s:.0f}",
        "ServiceNamespace": "ecs",
        "ResourceId": NAMES.scalable_target_resource_id,
        "ScalableDimension": "ecs:service:DesiredCount",
        "Description": f"Setting desired count to {to}.",
        "Cause": f"monitor alarm {policy}-alarm in state ALARM triggered policy {policy}",
        "StartTime": start,
        "EndTime": start + timedelta(seconds=5),
        "StatusCode": "Successful",
    }


def drive(
    clients: Clients,
    fast_in: fsi.FastScaleIn,
    scale_in: dict[str, Any],
    *,
    peak: int = 2,
    policies: list[dict[str, Any]] | None = None,
    in_threshold: float | None = None,
    initial: int = 1,
) -> tuple[vscaling.ScalingResult, list[dict[str, Any]]]:
    """verify scaling on the example's fast path and fast scale-in, both deployed by default.

    The stand-in adds ``peak - initial`` tasks at 30 s (the fast path's decision at
    31 s) and removes them at 150 s; ``scale_in`` is the activity that says
    who removed them. ``policies``: what DescribeScalingPolicies lists instead.
    """
    make_service(clients, desired=initial, max_tasks=8)
    fast = fp.fast_path(load_spec(EXAMPLE_SPEC))
    assert fast is not None
    put_fast_alarm(clients, fast)
    put_in_alarm(clients, fast_in, in_threshold)
    if policies is None:
        policies = [fast_policy([FAST_ALARM]), in_policy(fast_in, [IN_ALARM])]
    policies_hook(clients.appscaling, policies)
    scale_out = activity(FAST_POLICY, 31, peak)
    calls = activities_hook(clients.appscaling, [scale_out, scale_in])
    sent = count_puts(clients.cw)
    now = [0.0]
    pub, pace = lockstep_publisher(clients)

    def sleep(_: float) -> None:
        now[0] += 10.0
        pace.tick()
        d = desired(clients)
        if pub.value >= fast.threshold and d == initial and now[0] >= 30:
            clients.ecs.update_service(
                cluster=NAMES.cluster, service=NAMES.service, desiredCount=peak
            )
        elif pub.value < fast_in.threshold and d == peak and now[0] >= 150:
            clients.ecs.update_service(
                cluster=NAMES.cluster, service=NAMES.service, desiredCount=initial
            )

    result = run_faked(
        clients,
        sleep=sleep,
        publisher=pub,
        now=now,
        fast=fast,
        fast_in=fast_in,
        wall_clock=lambda: T0,
        pace=pace,
    )
    assert not pub.running
    # Read twice: the scale-out's decision, then the scale-in's.
    assert len(calls) == 2
    assert all(c["ResourceId"] == NAMES.scalable_target_resource_id for c in calls)
    return result, sent


def said(capsys: pytest.CaptureFixture[str]) -> str:
    return " ".join(capsys.readouterr().out.split())


def test_the_fast_scale_in_removing_the_first_task_passes(
    clients: Clients, capsys: pytest.CaptureFixture[str], fsi_spec: Path
) -> None:
    fast_in = fast_in_of(fsi_spec)
    result, sent = drive(clients, fast_in, activity(IN_POLICY, 160, 1))
    out = said(capsys)
    assert (result.initial, result.peak, result.final) == (1, 2, 1)
    assert result.scale_out_s == 30.0
    # The low phase published below the fast scale-in's threshold, as its alarm reads.
    assert sent[-1]["MetricData"][0]["Values"] == [0.0] and 0.0 < fast_in.threshold
    # 160 s after the test began is 130 s after the low datapoints did (at 30 s).
    assert (
        f"First scale-in: the fast scale-in (step policy {IN_POLICY}, 2 -> 1, at most 1 "
        "allowed) 130 s after the low datapoints began" in out
    )
    assert f"triggered policy {IN_POLICY}" in out
    assert f"First decision: the fast path (step policy {FAST_POLICY})" in out
    assert "warning" not in out and "Scaling loop works" in out


def test_target_tracking_removing_the_first_task_is_a_problem(
    clients: Clients, capsys: pytest.CaptureFixture[str], fsi_spec: Path
) -> None:
    fast_in = fast_in_of(fsi_spec)
    with pytest.raises(ProblemsFound) as exc:
        drive(clients, fast_in, activity(TRACKING, 30 + 960, 1))
    out = said(capsys)
    message = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "First scale-in: not the fast scale-in. 960 s after the low datapoints began" in out
    assert (
        f"the first scale-in on {NAMES.scalable_target_resource_id}, 960 s after the low "
        f"datapoints began, was not the fast scale-in's step policy ({IN_POLICY}): monitor "
        f"alarm {TRACKING}-alarm in state ALARM triggered policy {TRACKING}." in message
    )
    assert "15 one-minute datapoints" in message
    assert f"{fast_in.datapoints_to_alarm} x {fast_in.period_s}-s datapoints below" in message
    assert "SCL007" in message and "`ecs-gpu deploy SPEC`" in message
    assert "Scaling loop works" in out  # the loop moved; the verdict is the exit code


def test_the_sleep_path_setting_zero_at_a_peak_of_one_is_a_note(
    clients: Clients, capsys: pytest.CaptureFixture[str], fsi_spec: Path
) -> None:
    # A scale-to-zero service: the fast path starts its one task, the fast scale-in never
    # removes the last, and the sleep path's ExactCapacity 0 sets 0 after its quiet
    # minutes (the load balancer saw no request: verify publishes only the series).
    fast_in = fast_in_of(fsi_spec)
    assert fast_in.tasks_to_remove(0.0, 1) == 0
    policies = [fast_policy([FAST_ALARM]), in_policy(fast_in, [IN_ALARM]), sleep_policy([])]
    at = 30 + 60 * sleep.MIN_QUIET_MINUTES + 40
    result, _ = drive(
        clients, fast_in, activity(SLEEP_POLICY, at, 0), peak=1, initial=0, policies=policies
    )
    out = said(capsys)
    assert (result.initial, result.peak, result.final) == (0, 1, 0)
    assert (
        f"First scale-in: the sleep path (step policy {SLEEP_POLICY}, 1 -> 0) after its quiet "
        "minutes, as designed; the fast scale-in's step allows none of 1" in out
    )
    assert "target tracking" not in out.lower() and "Scaling loop works" in out


def test_the_sleep_path_before_a_fast_scale_in_that_could_act_is_a_problem(
    clients: Clients, capsys: pytest.CaptureFixture[str], fsi_spec: Path
) -> None:
    # From 2 tasks the fast scale-in's step removes one within a minute or so: the sleep
    # coming first means its alarm never breached. Named as the sleep, not target tracking.
    fast_in = fast_in_of(fsi_spec)
    policies = [fast_policy([FAST_ALARM]), in_policy(fast_in, [IN_ALARM]), sleep_policy([])]
    with pytest.raises(ProblemsFound) as exc:
        drive(clients, fast_in, activity(SLEEP_POLICY, 30 + 640, 1), policies=policies)
    out = said(capsys)
    message = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "First scale-in: the sleep path, not the fast scale-in. 640 s after" in out
    assert f"was the sleep path's policy {SLEEP_POLICY} (ExactCapacity 0 after" in message
    assert f"not the fast scale-in's step policy ({IN_POLICY}), whose step allowed 1 of 2" in (
        message
    )
    assert "Target tracking" not in message and "SCL007" in message


def test_the_fast_scale_in_removing_more_than_its_step_is_a_problem(
    clients: Clients, capsys: pytest.CaptureFixture[str], fsi_spec: Path
) -> None:
    fast_in = fast_in_of(fsi_spec)
    # From 4 tasks its step at the published 0 removes 25 % (one task); all three at once
    # is what a hand-edited step adjustment would do.
    assert fast_in.tasks_to_remove(0.0, 4) == 1
    with pytest.raises(ProblemsFound) as exc:
        drive(clients, fast_in, activity(IN_POLICY, 160, 1), peak=4)
    out = said(capsys)
    message = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "First scale-in: more than its step allows. 130 s after" in out
    assert (
        f"the fast scale-in's step policy {IN_POLICY} on {NAMES.scalable_target_resource_id} "
        "removed 3 task(s) at once (4 -> 1)" in message
    )
    assert "its step allows at most 1 of 4" in message and "`ecs-gpu diff SPEC`" in message


@pytest.mark.parametrize(
    ("lists", "in_threshold", "says"),
    [
        ("fast-path-only", None, "has no StepScaling policy that removes tasks"),
        (
            "both",
            7.0,
            f"has StepScaling policy that removes tasks {IN_POLICY} whose alarm does not match",
        ),
    ],
    ids=["no-fast-scale-in", "stale-threshold"],
)
def test_a_service_without_the_specs_fast_scale_in_is_told_and_exits_1(
    clients: Clients,
    capsys: pytest.CaptureFixture[str],
    fsi_spec: Path,
    lists: str,
    in_threshold: float | None,
    says: str,
) -> None:
    fast_in = fast_in_of(fsi_spec)
    policies = [fast_policy([FAST_ALARM])]
    if lists == "both":
        policies.append(in_policy(fast_in, [IN_ALARM]))
    with pytest.raises(ProblemsFound) as exc:
        drive(
            clients,
            fast_in,
            activity(TRACKING, 30 + 960, 1),
            policies=policies,
            in_threshold=in_threshold,
        )
    out = said(capsys)
    message = " ".join(exc.value.message.split())
    assert exc.value.exit_code == EXIT_PROBLEMS
    assert "the spec has a fast scale-in (a StepScaling policy that removes tasks" in message
    assert f"below {fast_in.threshold:g} over 10-s periods), but" in message
    assert says in message and says in out
    if in_threshold is not None:
        assert f"threshold {in_threshold:g} (want {fast_in.threshold:g})" in message
    assert out.index("warning:") < out.index("Scaling loop works")  # told before the wait
    assert "First scale-in: not the fast scale-in, which the service lacks" in out
    # Only the lack is the problem: target tracking did what it does without one.
    assert "was not the fast scale-in's step policy" not in message
    # The fast path's check is not confused by the fast scale-in's policy, nor by its absence.
    assert "the spec has a fast path" not in message


def test_verify_scaling_passes_the_specs_fast_scale_in(
    aws: str, monkeypatch: pytest.MonkeyPatch, fsi_spec: Path
) -> None:
    seen: dict[str, Any] = {}

    def record(*args: Any, **kwargs: Any) -> None:
        seen.update(kwargs)

    monkeypatch.setattr(verify_cli, "run_verify_scaling", record)
    assert main(["verify", "scaling", str(fsi_spec), "--yes"]) == 0
    assert seen["fast_in"] == fast_in_of(fsi_spec)
    assert main(["verify", "scaling", str(EXAMPLE_SPEC), "--yes"]) == 0
    assert seen["fast_in"] is None  # off by default
