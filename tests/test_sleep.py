"""sleep.py: which specs get the sleep path, how long it waits, and what it reads."""

from __future__ import annotations

from ecs_gpu import sleep, wake
from ecs_gpu.infra import loadbalancer
from ecs_gpu.spec import Spec, parse_spec
from example_specs import G5, INTERNAL_LB, scaled_to_zero


def _spec(text: str) -> Spec:
    return parse_spec(text, "s.toml")


def test_the_sleep_path_goes_where_the_wake_path_does() -> None:
    night = '\n[[scaling.schedule]]\ncron = "0 8 ? * MON-FRI *"\nmin_tasks = 1\nmax_tasks = 4\n'
    # Kept tasks; zero woken by a schedule only; zero with a load balancer.
    for text in (G5 + INTERNAL_LB, scaled_to_zero() + night, scaled_to_zero() + INTERNAL_LB):
        spec = _spec(text)
        assert (sleep.sleep_path(spec) is None) is (wake.wake_path(spec) is None), text[-40:]
    sp = sleep.sleep_path(_spec(scaled_to_zero() + INTERNAL_LB))
    assert sp is not None and sp.tasks == 0 and sp.threshold == 0.0
    assert sp.minutes == sleep.quiet_minutes() and sp.cooldown_s == sleep.PERIOD_S


def test_it_waits_out_the_longest_request_the_load_balancer_lets_stand() -> None:
    # One number: the ALB idle timeout the template sets is the request bound here.
    assert sleep.LONGEST_REQUEST_S == loadbalancer.IDLE_TIMEOUT_S
    n = sleep.quiet_minutes()
    assert n * sleep.PERIOD_S >= sleep.LONGEST_REQUEST_S > (n - 1) * sleep.PERIOD_S
    assert sleep.quiet_minutes(61) == 2 and sleep.quiet_minutes(1) == 1


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
