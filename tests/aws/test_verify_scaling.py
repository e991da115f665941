"""aws/verify_scaling: the scaling test itself, against moto."""

from __future__ import annotations

import pytest

from cli.conftest import EXAMPLE_SPEC, NAMES, Clients, Lockstep
from cli.test_verify import ASG, make_service
from ecs_gpu import fast_path as fp
from ecs_gpu import sleep
from ecs_gpu.aws import verify_scaling as vs
from ecs_gpu.errors import ProblemsFound
from ecs_gpu.spec import load_spec
from zero_alarms import sleep_metrics


def test_verify_scaling_times_out_naming_what_did_not_happen(clients: Clients) -> None:
    make_service(clients, desired=1)
    now = [0.0]
    pace = Lockstep()
    pub = vs.Publisher(clients.cw, ASG, 0.0, interval_s=0.01, pace=pace)

    def tick(_: float) -> None:
        now[0] += 15.0
        pace.tick()

    with pytest.raises(ProblemsFound) as exc:
        vs.run_scaling_test(
            clients.cw,
            clients.ecs,
            cluster=NAMES.cluster,
            service=NAMES.service,
            asg=ASG,
            poll_s=15,
            scale_out_timeout_s=60,
            sleep=tick,
            clock=lambda: now[0],
            publisher=pub,
        )
    assert "never rose above 1 within 60 s" in exc.value.message
    assert "target-tracking policy" in exc.value.message
    assert not pub.running


def test_the_levels_follow_the_specs_signal() -> None:
    from cli.conftest import EXAMPLE_SPEC
    from ecs_gpu import fast_path as fp
    from ecs_gpu.spec import load_spec

    fast = fp.fast_path(load_spec(EXAMPLE_SPEC))
    assert fast is not None
    first = fast.steps[0]
    upper = first.upper if first.upper is not None else fast.threshold
    # Inside the fast path's first step: the alarm breaches and the smallest step fires.
    assert vs.levels(fast, fast.target) == {"high": fast.threshold + upper / 2, "low": 0.0}
    assert fast.step_for(vs.levels(fast, fast.target)["high"]) == first
    # Target tracking alone: twice the target adds a task; a GPU signal keeps the defaults.
    assert vs.levels(None, 11.0) == {"high": 22.0, "low": 0.0}
    assert vs.levels(None, None) == {}


def test_the_verdict_on_the_first_decision() -> None:
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def decision(policy: str | None, steps: tuple[str, ...]) -> vs.Decision:
        return vs.Decision(t0 + timedelta(seconds=25), "cause", "", "Successful", policy, steps)

    v = vs.judge(decision("fast", ("fast",)), since=t0)
    assert (v.by, v.after_s) == ("fast_path", 25.0)
    assert vs.judge(decision(None, ()), since=t0, missing="no policy").by == "lacking"
    assert vs.judge(decision(None, ()), since=t0).by == "not_deployed"
    assert vs.judge(decision(None, ("fast",)), since=t0).by == "too_slow"


def test_the_policy_is_read_off_the_cause_as_aws_writes_it() -> None:
    # The user guide's example activity: "... triggered policy NAME".
    cause = "monitor alarm web-app-cpu-lt-25 in state ALARM triggered policy web-app-cpu-lt-25"
    assert vs.policy_in_cause(["web-app-cpu-lt-25"], cause) == "web-app-cpu-lt-25"
    # A name that is a word of the cause ("in state"), or inside another name, is not taken.
    assert vs.policy_in_cause(["in", "ALARM"], cause) is None
    assert vs.policy_in_cause(["web-app", "web-app-cpu-lt-25"], cause) == "web-app-cpu-lt-25"


def test_the_fast_path_is_judged_only_on_policies_of_its_shape() -> None:
    # The wake and sleep policies add or set tasks too: their alarms are no stale fast path.
    fast = fp.fast_path(load_spec(EXAMPLE_SPEC))
    assert fast is not None
    others = [
        vs.StepPolicy("wake", ("wake-alarm",), shape="wake"),
        vs.StepPolicy("sleep", ("sleep-alarm",), shape="sleep"),
    ]
    said = vs.explain_missing_fast_path(others, [], fast, resource_id="r", cluster="c", service="s")
    assert said is not None and said.endswith("but r has no StepScaling policy")
    stale = vs.explain_missing_fast_path(
        [*others, vs.StepPolicy("out", ("out-alarm",))],
        [],
        fast,
        resource_id="r",
        cluster="c",
        service="s",
    )
    assert stale is not None and "policy out whose alarm does not match it" in stale
    assert "wake-alarm" not in stale and "sleep-alarm" not in stale


def test_the_sleep_alarm_is_held_to_the_specs_window() -> None:
    # A spec whose model loads for 12 minutes has a 13-minute window: an alarm of ten
    # (deployed before the window knew the load) would stop a woken task mid-load.
    alarm = {
        "AlarmName": "sleep-alarm",
        "Metrics": sleep_metrics("app/lb/1", NAMES.cluster, NAMES.service),
        "EvaluationPeriods": 10,
        "DatapointsToAlarm": 10,
        "Threshold": sleep.THRESHOLD,
        "ComparisonOperator": sleep.COMPARISON,
        "TreatMissingData": sleep.TREAT_MISSING_DATA,
    }
    policies = [vs.StepPolicy("sleep", ("sleep-alarm",), "sleep")]
    where = {"resource_id": "service/c/s", "cluster": NAMES.cluster, "service": NAMES.service}
    msg = vs.explain_missing_sleep(policies, [alarm], **where, minutes=13)
    assert msg is not None and "invoked after 13 quiet minutes" in msg
    assert "10 periods (want 13 of 13)" in msg
    assert vs.explain_missing_sleep(policies, [alarm], **where, minutes=10) is None
    # Without the spec's window: any of at least ten.
    assert vs.explain_missing_sleep(policies, [alarm], **where) is None
    short = {**alarm, "EvaluationPeriods": 9, "DatapointsToAlarm": 9}
    msg = vs.explain_missing_sleep(policies, [short], **where)
    assert msg is not None and "after at least 10 quiet minutes" in msg
