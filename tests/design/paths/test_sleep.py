"""sleep.py: which specs get the sleep path, how long it waits, and what it reads."""

from __future__ import annotations

from typing import Any

from ecs_gpu.contracts import demand_metric
from ecs_gpu.design import startup
from ecs_gpu.design.paths import sleep, wake
from ecs_gpu.infra import loadbalancer
from ecs_gpu.spec import Spec, parse_spec
from example_specs import G5, G6E, INTERNAL_LB, P5, scaled_to_zero
from support.zero_alarms import metric_query, sleep_metrics


def _spec(text: str) -> Spec:
    return parse_spec(text, "s.toml")


def test_the_sleep_path_goes_where_the_wake_path_does() -> None:
    night = '\n[[scaling.schedule]]\ncron = "0 8 ? * MON-FRI *"\nmin_tasks = 1\nmax_tasks = 4\n'
    # Kept tasks; zero woken by a schedule only; zero with a load balancer.
    for text in (G5 + INTERNAL_LB, scaled_to_zero() + night, scaled_to_zero() + INTERNAL_LB):
        spec = _spec(text)
        assert (sleep.sleep_path(spec) is None) is (wake.wake_path(spec) is None), text[-40:]
    spec = _spec(scaled_to_zero() + INTERNAL_LB)
    sp = sleep.sleep_path(spec)
    assert sp is not None and sp.tasks == 0 and sp.threshold == 0.0
    assert sp.minutes == sleep.quiet_minutes(spec) and sp.cooldown_s == sleep.PERIOD_S


def test_it_waits_out_the_longest_request_the_load_balancer_lets_stand() -> None:
    # One number: the ALB idle timeout the template sets is the request bound here.
    assert sleep.LONGEST_REQUEST_S == loadbalancer.IDLE_TIMEOUT_S
    n = sleep.MIN_QUIET_MINUTES
    assert n * sleep.PERIOD_S >= sleep.LONGEST_REQUEST_S > (n - 1) * sleep.PERIOD_S
    assert wake.request_minutes(61) == 2 and wake.request_minutes(1) == 1
    # A small model loads well within it: g5's 60 s keeps the ten minutes.
    assert sleep.quiet_minutes(_spec(scaled_to_zero() + INTERNAL_LB)) == n == 10


def test_the_quiet_window_outlasts_the_load_of_a_task_the_wake_started() -> None:
    # The task is RUNNING (its CPU datapoint, the gate) from its containers' start, while
    # its model loads: the window, from its first RUNNING minute (which may begin up to
    # a minute before it), covers a load as slow as the grace period allows and the
    # ALB's two 30-s checks, or a lone request's task is stopped before it serves.
    for text, minutes in ((G6E, 13), (P5, 62)):
        spec = _spec(scaled_to_zero(text).replace("min_tasks = 2", "min_tasks = 0"))
        sp = sleep.sleep_path(spec)
        assert sp is not None and sp.minutes == sleep.quiet_minutes(spec) == minutes
        load_s = startup.model_ready_s(spec) * startup.GRACE_FACTOR + startup.GRACE_MARGIN_S
        assert startup.running_to_healthy_s(spec) == load_s
        assert (minutes - 1) * sleep.PERIOD_S >= load_s > (minutes - 2) * sleep.PERIOD_S
        # The image pull comes before RUNNING (PENDING): a longer one changes nothing.
        slower = spec.model_copy(
            update={"simulation": spec.simulation.model_copy(update={"image_pull_s": 900.0})}
        )
        assert sleep.quiet_minutes(slower) == minutes
    # p5's 40-minute (2,398-s) model: over an hour, where ten minutes stopped every woken task.
    assert startup.model_ready_s(_spec(P5)) > 39 * 60 > sleep.MIN_QUIET_MINUTES * 60


def test_only_the_in_flight_series_joins_the_expression() -> None:
    # The g5 example has [service.metrics] and the default arrival-rate estimate.
    estimate = sleep.sleep_path(_spec(scaled_to_zero() + INTERNAL_LB))
    assert estimate is not None and not estimate.in_flight  # arrivals only: the ALB has them
    in_flight = scaled_to_zero().replace(
        "[scaling]\n", '[scaling]\ndemand_estimate = "in-flight"\n'
    )
    sp = sleep.sleep_path(_spec(in_flight + INTERNAL_LB))
    assert sp is not None and sp.in_flight
    assert (
        sp.expression == f"IF(FILL(c, 0) > 0, {sleep.ACTIVITY} + FILL({sleep.IN_FLIGHT_ID}, 0), 1)"
    )


def test_the_deployed_policy_shape_is_told_from_the_other_step_policies() -> None:
    def policy(kind: str, *adjustments: int) -> dict[str, object]:
        steps = [{"ScalingAdjustment": a} for a in adjustments]
        return {
            "StepScalingPolicyConfiguration": {"AdjustmentType": kind, "StepAdjustments": steps}
        }

    assert sleep.is_sleep_policy(policy("ExactCapacity", 0))
    assert not sleep.is_sleep_policy(policy("ExactCapacity", 1))  # someone else's floor
    assert not sleep.is_sleep_policy(policy("ChangeInCapacity", 1))  # the wake's
    assert not sleep.is_sleep_policy(policy("PercentChangeInCapacity", -1, -10))
    assert not sleep.is_sleep_policy(policy("ExactCapacity"))
    assert not wake.is_wake_policy(policy("ExactCapacity", 0))


LB = "app/vllm-g5/0123456789abcdef"


def _alarm(in_flight: bool = False, n: int = sleep.MIN_QUIET_MINUTES) -> dict[str, Any]:
    """The sleep alarm as DescribeAlarms returns what infra/scaling.py writes."""
    metrics = sleep_metrics(LB, "c", "s")
    if in_flight:
        metrics[0] = {**metrics[0], "Expression": sleep.IN_FLIGHT_EXPRESSION}
        dims = {d["Name"]: d["Value"] for d in demand_metric.dimensions("c", "s")}
        metrics.append(
            metric_query(
                sleep.IN_FLIGHT_ID,
                demand_metric.NAMESPACE,
                demand_metric.METRIC_NAME,
                dims,
                sleep.IN_FLIGHT_STATISTIC,
            )
        )
    return {
        "Metrics": metrics,
        "ComparisonOperator": sleep.COMPARISON,
        "Threshold": sleep.THRESHOLD,
        "EvaluationPeriods": n,
        "DatapointsToAlarm": n,
        "TreatMissingData": sleep.TREAT_MISSING_DATA,
    }


def _metric(alarm: dict[str, Any], qid: str) -> dict[str, Any]:
    found: dict[str, Any] = next(q for q in alarm["Metrics"] if q.get("Id") == qid)
    metric: dict[str, Any] = found["MetricStat"]["Metric"]
    return metric


def test_a_deployed_sleep_alarm_is_compared_query_by_query() -> None:
    assert sleep.alarm_differences(_alarm(), "c", "s") == []
    assert sleep.alarm_differences(_alarm(), "c", "s", LB) == []
    assert sleep.alarm_differences(_alarm(in_flight=True), "c", "s", LB) == []
    # The requests query on another metric: the expression and thresholds all match.
    wrong = _alarm()
    _metric(wrong, wake.REQUESTS_ID)["MetricName"] = "RequestCountPerTarget"
    (diff,) = sleep.alarm_differences(wrong, "c", "s")
    assert diff[0] == "Metrics.r" and "RequestCountPerTarget" in str(diff[1])
    # The gate on another service's CPU: it would read "a task runs" for the wrong one.
    (diff,) = sleep.alarm_differences(_alarm(), "c", "other")
    assert diff[0] == "Metrics.c.Dimensions"
    # The in-flight series at Average, not the most any task has.
    averaged = _alarm(in_flight=True)
    next(q for q in averaged["Metrics"] if q["Id"] == sleep.IN_FLIGHT_ID)["MetricStat"]["Stat"] = (
        "Average"
    )
    (diff,) = sleep.alarm_differences(averaged, "c", "s")
    assert diff[0] == "Metrics.q" and "Average" in str(diff[1])


def test_the_window_is_the_specs_where_known_else_at_least_the_longest_request() -> None:
    # verify scaling and doctor with the spec hold the alarm to the spec's window: the
    # ten minutes of an alarm deployed before it knew the model's load are too short.
    (diff,) = sleep.alarm_differences(_alarm(), "c", "s", LB, minutes=62)
    assert diff[:2] == ("EvaluationPeriods", (10, 10)) and "(want 62 of 62)" in diff[2]
    assert sleep.alarm_differences(_alarm(n=62), "c", "s", LB, minutes=62) == []
    # Without the spec the model is unknown: any window of at least ten, all of it.
    assert sleep.alarm_differences(_alarm(n=62), "c", "s", LB) == []
    assert sleep.alarm_differences(_alarm(n=10), "c", "s", LB) == []
    (diff,) = sleep.alarm_differences(_alarm(n=9), "c", "s", LB)
    assert diff[:2] == ("EvaluationPeriods", (9, 9)) and "at least 10" in diff[2]
    (diff,) = sleep.alarm_differences({**_alarm(n=13), "DatapointsToAlarm": 12}, "c", "s")
    assert diff[:2] == ("EvaluationPeriods", (13, 12))


def test_the_sleep_alarm_reads_one_load_balancer_the_given_one() -> None:
    # The open connections of another load balancer: one query off the others.
    stray = _alarm()
    _metric(stray, sleep.CONNECTIONS_ID)["Dimensions"][0]["Value"] = "app/other/1"
    (diff,) = sleep.alarm_differences(stray, "c", "s")
    assert diff[0] == "Metrics.a.Dimensions" and f"(want {LB})" in diff[2]
    # All three on another load balancer than the wake alarm's: consistent, still wrong.
    fields = [d[0] for d in sleep.alarm_differences(_alarm(), "c", "s", "app/other/1")]
    assert fields == ["Metrics.r.Dimensions", "Metrics.e.Dimensions", "Metrics.a.Dimensions"]
    # By the target group too: not the LoadBalancer dimension alone.
    grouped = _alarm()
    _metric(grouped, wake.REQUESTS_ID)["Dimensions"].append(
        {"Name": "TargetGroup", "Value": "targetgroup/x/1"}
    )
    (diff,) = sleep.alarm_differences(grouped, "c", "s")
    assert diff[0] == "Metrics.r.Dimensions" and "TargetGroup" in diff[2]
