"""What deploy, diff, destroy and verify print (cli/render.py): a change set and what it does
to the running fleet, the outputs, destroy's steps, and verify scaling's first decision."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from rich.console import Console

from ecs_gpu.aws import deploy as dp
from ecs_gpu.aws import destroy as ds
from ecs_gpu.checks.stack_events import ChangeSummary, parse_changes
from ecs_gpu.checks.verify.decision import Decision, Verdict
from ecs_gpu.cli import render
from ecs_gpu.design.paths import fast_path as fp
from ecs_gpu.spec import load_spec
from example_specs import G5_PATH

T0 = datetime(2026, 12, 1, 4, 0, tzinfo=UTC)


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """What render prints, on a console 120 columns wide without colour."""
    out = io.StringIO()
    monkeypatch.setattr(render, "console", Console(file=out, width=120, color_system=None))
    yield out


def _said(out: io.StringIO) -> str:
    return " ".join(out.getvalue().split())


def _change(action: str, logical: str, rtype: str, replacement: str = "") -> dict[str, object]:
    rc: dict[str, object] = {"Action": action, "LogicalResourceId": logical, "ResourceType": rtype}
    if replacement:
        rc["Replacement"] = replacement
    return {"Type": "Resource", "ResourceChange": rc}


def test_no_change_is_said_in_one_line(shown: io.StringIO) -> None:
    render.render_summary("vllm-g5", ChangeSummary(()), new_stack=False)
    assert _said(shown) == "Stack vllm-g5: no changes."


def test_a_change_set_is_counted_listed_and_its_disruption_called_out(shown: io.StringIO) -> None:
    summary = ChangeSummary(
        tuple(
            parse_changes(
                [
                    _change("Add", "Topic", "AWS::SNS::Topic"),
                    _change("Modify", "Asg", "AWS::AutoScaling::AutoScalingGroup", "True"),
                    _change("Remove", "Old", "AWS::Logs::LogGroup"),
                ]
            )
        )
    )
    render.render_summary("vllm-g5", summary, new_stack=False)
    text = _said(shown)
    assert text.startswith("Stack vllm-g5 (existing stack): 1 to add, 1 to modify, 1 to remove")
    assert "+ AWS::SNS::Topic Topic" in text and "- AWS::Logs::LogGroup Old" in text
    assert "~ AWS::AutoScaling::AutoScalingGroup Asg True" in text
    assert "REPLACEMENT: Asg (AWS::AutoScaling::AutoScalingGroup): replaced: a new GPU fleet" in (
        text
    )


def test_the_outputs_are_listed_as_cdk_deploy_lists_them(shown: io.StringIO) -> None:
    render.render_outputs("vllm-g5", [])
    assert shown.getvalue() == ""
    url = "http://vllm-g5-alb-123.us-east-1.elb.amazonaws.com"
    render.render_outputs("vllm-g5", [dp.StackOutput("Endpoint", url)])
    assert shown.getvalue().splitlines() == ["Outputs of stack vllm-g5:", f"  Endpoint = {url}"]


def test_each_destroy_step_says_what_was_done(shown: io.StringIO) -> None:
    d = ds.Deployed(cluster="c", service="svc", asg="vllm-g5-asg")
    for step in (
        ds.Step("held_scaling", d),
        ds.Step("scaled_to_zero", d),
        ds.Step("tasks_still_stopping", d, count=2, timeout_s=300.4),
        ds.Step("unprotected", d, count=3),
    ):
        render.render_destroy_step(step)
    assert shown.getvalue().splitlines() == [
        "Suspended the service's autoscaling and set its minimum to 0.",
        "Scaled service svc to 0 tasks; waiting for them.",
        "2 task(s) still stopping after 300 s; deleting anyway (CloudFormation waits for them).",
        "Removed scale-in protection from 3 instance(s) of vllm-g5-asg, so CloudFormation can "
        "terminate them.",
    ]


@pytest.mark.parametrize(
    ("by", "says"),
    [
        ("fast_path", "First decision: the fast path (step policy fast-1) 30 s after the first"),
        ("lacking", "not the fast path, which the service lacks (the warning above). 30 s after"),
        ("not_deployed", "service/c/s has no StepScaling policy: the spec's fast path is not"),
        ("too_slow", "First decision: not the fast path (its alarm needs {n} x {period}-s periods"),
    ],
)
def test_the_first_decision_names_who_made_it(shown: io.StringIO, by: str, says: str) -> None:
    fast = fp.fast_path(load_spec(G5_PATH))
    assert fast is not None
    d = Decision(T0, "monitor alarm a triggered policy fast-1", "", "Successful", "fast-1")
    render.render_verdict(Verdict(d, 30.2, by), "service/c/s", fast)  # type: ignore[arg-type]
    text = _said(shown)
    assert says.format(n=fast.datapoints_to_alarm, period=fast.period_s) in text
    assert text.endswith("Successful: monitor alarm a triggered policy fast-1")


def test_no_decision_says_why(shown: io.StringIO) -> None:
    render.render_no_decision("service/c/s", "AccessDenied")
    render.render_no_decision("service/c/s")
    lines = shown.getvalue().splitlines()
    assert lines[0] == "note: could not read the scaling activities: AccessDenied"
    assert " ".join(lines[1:]).startswith("note: no scaling activity on service/c/s since the")
