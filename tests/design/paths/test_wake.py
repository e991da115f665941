"""wake.py: which specs get the wake path, and what a task takes to serve after zero."""

from __future__ import annotations

from ecs_gpu.design import managed_scaling, startup
from ecs_gpu.design.paths import sleep, wake
from ecs_gpu.design.paths.wake import WakePath
from ecs_gpu.spec import Spec, parse_spec
from example_specs import G5, G5_GPU, G6E, INTERNAL_LB, P5, scaled_to_zero

POOL = "\n[capacity.warm_pool]\nmin_size = 1\n"


def _spec(text: str) -> Spec:
    return parse_spec(text, "s.toml")


def test_the_wake_path_needs_zero_and_a_load_balancer() -> None:
    assert wake.wake_path(_spec(G5 + INTERNAL_LB)) is None  # min_tasks 1: no wake needed
    wp = wake.wake_path(_spec(scaled_to_zero() + INTERNAL_LB))
    assert wp is not None and wp.tasks == 1 and wp.threshold == 1.0
    warmup = managed_scaling.instance_warmup_s(_spec(scaled_to_zero() + INTERNAL_LB))
    assert wp.cooldown_s == min(warmup + wake.DETECTION_MARGIN_S, 10 * 60)


def test_the_cooldown_ends_before_the_sleep_can_stop_the_task() -> None:
    # The sleep needs its quiet minutes with a RUNNING task, which a wake onto an
    # instance still there may have at once: the cooldown is over by then (§10).
    quiet_s = sleep.MIN_QUIET_MINUTES * sleep.PERIOD_S
    kept = scaled_to_zero().replace("min_instances = 0", "min_instances = 1")
    for text in (scaled_to_zero(), scaled_to_zero() + POOL, kept):
        spec = _spec(text + INTERNAL_LB)
        assert sleep.quiet_minutes(spec) * sleep.PERIOD_S == quiet_s  # g5's 60-s model
        warmup = managed_scaling.instance_warmup_s(spec) + wake.DETECTION_MARGIN_S
        assert wake.cooldown_s(spec) == min(warmup, quiet_s) == quiet_s
    # A pool that covers every scale-out starts in minutes: its warm-up's cooldown
    # is under the window and stays.
    quick = _spec(scaled_to_zero() + INTERNAL_LB + "\n[capacity.warm_pool]\nmin_size = 4\n")
    warmup = managed_scaling.instance_warmup_s(quick) + wake.DETECTION_MARGIN_S
    assert warmup < quiet_s and wake.cooldown_s(quick) == warmup


def test_the_cooldown_bound_is_the_specs_own_quiet_window() -> None:
    # A big model lengthens the sleep's window (wake.quiet_minutes), and with it the
    # bound: g6e's kept instances (900-s warm-up) now get 13 minutes, not 10; p5's
    # 62-minute window is past its warm-up + 300 s, which stays.
    g6e = _spec(scaled_to_zero(G6E).replace("min_tasks = 2", "min_tasks = 0"))
    assert wake.quiet_minutes(g6e) == 13 and wake.load_minutes(g6e) == 13
    assert wake.cooldown_s(g6e) == 13 * wake.PERIOD_S
    assert managed_scaling.instance_warmup_s(g6e) + wake.DETECTION_MARGIN_S > 13 * 60
    p5 = _spec(scaled_to_zero(P5))
    warmup = managed_scaling.instance_warmup_s(p5) + wake.DETECTION_MARGIN_S
    assert wake.quiet_minutes(p5) == 62 and wake.cooldown_s(p5) == warmup < 62 * 60


def test_a_schedule_that_sets_zero_scales_to_zero() -> None:
    night = '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 0\n'
    spec = _spec(G5 + INTERNAL_LB + night)
    assert spec.scaling.min_tasks == 1 and wake.scales_to_zero(spec)
    assert wake.wake_path(spec) is not None


def test_the_expression_reads_requests_only_without_a_cpu_datapoint() -> None:
    e = wake.EXPRESSION
    assert e.startswith(f"IF(FILL({wake.RUNNING_ID}, 0) == 0,")
    assert f"FILL({wake.REQUESTS_ID}, 0) + FILL({wake.REJECTED_ID}, 0)" in e


def test_start_after_zero_is_cold_pooled_or_on_a_kept_instance() -> None:
    cold = _spec(scaled_to_zero() + INTERNAL_LB)
    assert wake.start_s(cold) == managed_scaling.cold_start_s(cold)
    pooled = _spec(scaled_to_zero() + INTERNAL_LB + POOL)
    assert wake.pooled_wake(pooled) and not wake.pooled_wake(cold)
    assert wake.start_s(pooled) == managed_scaling.pooled_start_s(pooled) < wake.start_s(cold)
    kept = _spec(G5.replace("min_tasks = 1", "min_tasks = 0") + INTERNAL_LB)  # min_instances 1
    assert wake.start_s(kept) == startup.task_ready_s(kept) < wake.start_s(cold)


def _alarm(**changes: object) -> dict[str, object]:
    def q(qid: str, ns: str, name: str, dims: dict[str, str], stat: str) -> dict[str, object]:
        metric = {
            "Namespace": ns,
            "MetricName": name,
            "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
        }
        return {"Id": qid, "MetricStat": {"Metric": metric, "Period": 60, "Stat": stat}}

    lb = {"LoadBalancer": "app/x/1"}
    svc = {"ClusterName": "c", "ServiceName": "s"}
    alarm: dict[str, object] = {
        "Metrics": [
            {"Id": "expr_1", "Expression": wake.EXPRESSION},
            q("r", wake.ELB_NAMESPACE, wake.REQUESTS_METRIC, lb, "Sum"),
            q("e", wake.ELB_NAMESPACE, wake.REJECTED_METRIC, lb, "Sum"),
            q("c", wake.RUNNING_NAMESPACE, wake.RUNNING_METRIC, svc, "SampleCount"),
        ],
        "ComparisonOperator": wake.COMPARISON,
        "Threshold": wake.THRESHOLD,
        "EvaluationPeriods": wake.EVALUATION_PERIODS,
        "DatapointsToAlarm": wake.DATAPOINTS_TO_ALARM,
        "TreatMissingData": "notBreaching",
    }
    return {**alarm, **changes}


def test_a_deployed_wake_alarm_is_compared_field_by_field() -> None:
    assert wake.alarm_differences(_alarm(), "c", "s") == []
    # Another service's CPU: it would read "no task" for ever and wake on every request.
    (diff,) = wake.alarm_differences(_alarm(), "c", "other")
    assert diff[0] == "Metrics.c.Dimensions" and "other" not in str(diff[1])
    (diff,) = wake.alarm_differences(_alarm(Threshold=5.0), "c", "s")
    assert diff[0] == "Threshold" and "(want GreaterThanOrEqualToThreshold 1)" in diff[2]
    (diff,) = wake.alarm_differences(_alarm(Metrics=[]), "c", "s")
    assert diff[0] == "Expression"


def test_the_wake_alarms_periods_and_missing_data_are_compared() -> None:
    # Missing data breaching: every quiet minute at zero reads as a request.
    (diff,) = wake.alarm_differences(_alarm(TreatMissingData="breaching"), "c", "s")
    assert diff[:2] == ("TreatMissingData", "breaching") and "want notBreaching" in diff[2]
    (diff,) = wake.alarm_differences(_alarm(TreatMissingData=None), "c", "s")
    assert diff[0] == "TreatMissingData"  # absent: CloudWatch's default, missing
    # Three minutes of requests before a wake: the first request's client gives up.
    (diff,) = wake.alarm_differences(_alarm(EvaluationPeriods=3, DatapointsToAlarm=3), "c", "s")
    assert diff[:2] == ("EvaluationPeriods", (3, 3)) and "(want 1 of 1)" in diff[2]


def _policy(*steps: dict[str, object]) -> dict[str, object]:
    return {
        "StepScalingPolicyConfiguration": {
            "AdjustmentType": wake.ADJUSTMENT_TYPE,
            "StepAdjustments": list(steps),
            "Cooldown": 600,
        }
    }


def test_the_wake_policys_step_is_one_task_from_zero() -> None:
    one = _policy({"MetricIntervalLowerBound": 0.0, "ScalingAdjustment": 1})
    assert wake.is_wake_policy(one) and wake.policy_differences(one) == []
    # Two tasks per request at zero: still a wake policy, but not the template's step.
    two = _policy({"MetricIntervalLowerBound": 0.0, "ScalingAdjustment": 2})
    assert wake.is_wake_policy(two)
    (diff,) = wake.policy_differences(two)
    assert diff[1] == [(0.0, None, 2)] and "(want [(0, None, 1)])" in diff[2]
    bounded = _policy({"MetricIntervalLowerBound": 0.0, "MetricIntervalUpperBound": 5.0,
                       "ScalingAdjustment": 1})  # fmt: skip
    assert wake.policy_differences(bounded)


def test_the_wake_alarms_counts_are_of_one_load_balancer() -> None:
    alarm = _alarm()
    assert wake.load_balancer_of(alarm) == "app/x/1"
    # The 503s of another load balancer: requests at zero here would not wake it.
    metrics = alarm["Metrics"]
    assert isinstance(metrics, list)
    rejected = next(q for q in metrics if q["Id"] == wake.REJECTED_ID)
    rejected["MetricStat"]["Metric"]["Dimensions"] = [
        {"Name": wake.ELB_DIMENSION, "Value": "app/y/2"}
    ]
    (diff,) = wake.alarm_differences(alarm, "c", "s")
    assert diff[0] == "Metrics.e.Dimensions" and "app/y/2" in diff[2] and "app/x/1" in diff[2]


def test_the_detection_bound_is_a_minute_its_lag_and_the_alarms_evaluation() -> None:
    wp = wake.wake_path(_spec(scaled_to_zero() + INTERNAL_LB))
    assert wp is not None
    # The request's ALB minute closes, its datapoint lags one period (§10's gap),
    # the 1-of-1 alarm evaluates it: three one-minute periods.
    assert wake.ALB_LAG_S == wake.PERIOD_S == 60
    assert wake.detection_s(wp) == 180
    assert wake.detection_s(WakePath(cooldown_s=0, datapoints_to_alarm=2)) == 240


# --- The woken task: target tracking must not stop it before it serves (§1, §10) -------


def test_a_gpu_signal_at_zero_needs_the_request_count_policy() -> None:
    # The idle hosts read 0 %: the GPU policy's low alarm is in ALARM when the wake acts.
    gpu = _spec(scaled_to_zero(G5_GPU) + INTERNAL_LB)
    (problem,) = wake.unprotected_wake(gpu)
    assert (problem.key, problem.value) == ("scaling.min_tasks", 0)
    assert "publish 0 % GPU utilization" in problem.what
    assert "request_count_target" in problem.fix and "min_tasks = 1" in problem.fix
    # The request count has no datapoint until a task serves: it holds every scale-in.
    held = _spec(scaled_to_zero(G5_GPU) + INTERNAL_LB + "request_count_target = 60\n")
    assert wake.unprotected_wake(held) == []
    # No wake path (min_tasks 1, or no load balancer): nothing to protect.
    assert wake.unprotected_wake(_spec(G5_GPU + INTERNAL_LB)) == []


def test_a_schedule_to_zero_is_named_by_its_key() -> None:
    night = '\n[[scaling.schedule]]\ncron = "0 20 * * ? *"\nmin_tasks = 0\nmax_tasks = 0\n'
    (problem,) = wake.unprotected_wake(_spec(G5_GPU + INTERNAL_LB + night))
    assert (problem.key, problem.value) == ("scaling.schedule", "an entry with min_tasks = 0")


def test_concurrency_at_zero_holds_a_model_that_is_ready_within_the_low_minutes() -> None:
    quick = _spec(scaled_to_zero() + INTERNAL_LB)
    assert startup.model_ready_s(quick) == 60.0 and wake.unprotected_wake(quick) == []
    # The sidecar publishes 0 until the task serves: 13 minutes from its start is the
    # last safe one, for a model as slow as the grace allows (x 1.5) and 60 s of health
    # checks, the figure the sleep window outlasts: a 480-s model.
    for load_s, refused in ((479.0, False), (480.0, True), (2400.0, True)):
        text = scaled_to_zero() + INTERNAL_LB
        spec = _spec(text.replace("\n[simulation]\n", f"\n[simulation]\nmodel_load_s = {load_s}\n"))
        assert startup.model_ready_s(spec) == load_s
        assert startup.running_to_healthy_s(spec) == load_s * 1.5 + 60
        problems = wake.unprotected_wake(spec)
        assert bool(problems) is refused, load_s
        if refused:
            minutes = (load_s * 1.5 + 60) / 60
            assert f"about {minutes:.0f} min to serve" in problems[0].what
            assert "15 low minutes" in problems[0].what


def test_a_spot_base_of_zero_wakes_cold_on_spot() -> None:
    # The one woken task is the Spot provider's (spot.split): its group has no pool
    # and no floor, so the kept On-Demand instance and its warm pool do not help.
    spot = '\n[capacity.spot]\ninstance_types = ["g5.xlarge"]\non_demand_base = 0\n'
    kept = G5.replace("min_tasks = 1", "min_tasks = 0") + INTERNAL_LB  # min_instances 1
    od, cold = _spec(kept + POOL), _spec(kept + POOL + spot)
    assert not wake.wakes_on_spot(od) and wake.wakes_on_spot(cold)
    assert wake.start_s(od) == startup.task_ready_s(od)
    assert not wake.pooled_wake(cold)
    assert wake.start_s(cold) == managed_scaling.cold_start_s(cold) > wake.start_s(od)
    based = _spec(kept + POOL + spot.replace("on_demand_base = 0", "on_demand_base = 1"))
    assert not wake.wakes_on_spot(based) and wake.start_s(based) == wake.start_s(od)
