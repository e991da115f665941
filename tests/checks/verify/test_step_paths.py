"""checks/verify/step_paths: each step path of the spec, judged on the deployed policies."""

from __future__ import annotations

from typing import Any

from ecs_gpu.checks.verify import step_paths as vsp
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.design.paths import sleep
from ecs_gpu.spec import load_spec
from example_specs import G5_PATH as EXAMPLE_SPEC
from support.zero_alarms import sleep_metrics

NAMES = Names("vllm-g5")

SLEEP_POLICIES = [vsp.StepPolicy("sleep", ("sleep-alarm",), "sleep")]
WHERE = {"resource_id": "service/c/s", "cluster": NAMES.cluster, "service": NAMES.service}


def _sleep_alarm() -> dict[str, Any]:
    """The sleep alarm as a ten-minute window deploys it."""
    return {
        "AlarmName": "sleep-alarm",
        "Metrics": sleep_metrics("app/lb/1", NAMES.cluster, NAMES.service),
        "EvaluationPeriods": 10,
        "DatapointsToAlarm": 10,
        "Threshold": sleep.THRESHOLD,
        "ComparisonOperator": sleep.COMPARISON,
        "TreatMissingData": sleep.TREAT_MISSING_DATA,
    }


def test_the_fast_path_is_judged_only_on_policies_of_its_shape() -> None:
    # The wake and sleep policies add or set tasks too: their alarms are no stale fast path.
    fast = fp.fast_path(load_spec(EXAMPLE_SPEC))
    assert fast is not None
    others = [
        vsp.StepPolicy("wake", ("wake-alarm",), shape="wake"),
        vsp.StepPolicy("sleep", ("sleep-alarm",), shape="sleep"),
    ]
    said = vsp.explain_missing_fast_path(
        others, [], fast, resource_id="r", cluster="c", service="s"
    )
    assert said is not None and said.endswith("but r has no StepScaling policy")
    stale = vsp.explain_missing_fast_path(
        [*others, vsp.StepPolicy("out", ("out-alarm",))],
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
    alarm = _sleep_alarm()
    msg = vsp.explain_missing_sleep(SLEEP_POLICIES, [alarm], **WHERE, minutes=13)
    assert msg is not None and "invoked after 13 quiet minutes" in msg
    assert "10 periods (want 13 of 13)" in msg
    assert vsp.explain_missing_sleep(SLEEP_POLICIES, [alarm], **WHERE, minutes=10) is None
    # Without the spec's window: any of at least ten.
    assert vsp.explain_missing_sleep(SLEEP_POLICIES, [alarm], **WHERE) is None
    short = {**alarm, "EvaluationPeriods": 9, "DatapointsToAlarm": 9}
    msg = vsp.explain_missing_sleep(SLEEP_POLICIES, [short], **WHERE)
    assert msg is not None and "after at least 10 quiet minutes" in msg


def test_an_alarm_with_its_actions_disabled_deploys_no_step_path() -> None:
    # The sleep alarm as the spec deploys it, but left disabled (DisableAlarmActions after
    # maintenance): it goes to ALARM and invokes nothing, so the path is not deployed.
    alarm = {**_sleep_alarm(), "ActionsEnabled": False}
    msg = vsp.explain_missing_sleep(SLEEP_POLICIES, [alarm], **WHERE, minutes=10)
    assert msg is not None
    assert "alarm sleep-alarm: its actions are disabled" in msg
    assert "aws cloudwatch enable-alarm-actions --alarm-names sleep-alarm" in msg
    assert (
        vsp.judge_alarms(SLEEP_POLICIES, [{**alarm, "ActionsEnabled": True}], lambda a: []) is None
    )
    # Absent (an older reader's fixture): AWS's default, enabled.
    del alarm["ActionsEnabled"]
    assert vsp.explain_missing_sleep(SLEEP_POLICIES, [alarm], **WHERE, minutes=10) is None
