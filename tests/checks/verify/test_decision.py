"""checks/verify/decision: the verdict on the first scale-out, the policy its cause names."""

from __future__ import annotations

from ecs_gpu.checks.verify import decision as vdec


def test_the_verdict_on_the_first_decision() -> None:
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def decision(policy: str | None, steps: tuple[str, ...]) -> vdec.Decision:
        return vdec.Decision(t0 + timedelta(seconds=25), "cause", "", "Successful", policy, steps)

    v = vdec.judge(decision("fast", ("fast",)), since=t0)
    assert (v.by, v.after_s) == ("fast_path", 25.0)
    assert vdec.judge(decision(None, ()), since=t0, missing="no policy").by == "lacking"
    assert vdec.judge(decision(None, ()), since=t0).by == "not_deployed"
    assert vdec.judge(decision(None, ("fast",)), since=t0).by == "too_slow"


def test_the_policy_is_read_off_the_cause_as_aws_writes_it() -> None:
    # The user guide's example activity: "... triggered policy NAME".
    cause = "monitor alarm web-app-cpu-lt-25 in state ALARM triggered policy web-app-cpu-lt-25"
    assert vdec.policy_in_cause(["web-app-cpu-lt-25"], cause) == "web-app-cpu-lt-25"
    # A name that is a word of the cause ("in state"), or inside another name, is not taken.
    assert vdec.policy_in_cause(["in", "ALARM"], cause) is None
    assert vdec.policy_in_cause(["web-app", "web-app-cpu-lt-25"], cause) == "web-app-cpu-lt-25"
