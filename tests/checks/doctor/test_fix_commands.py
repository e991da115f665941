"""Every `aws ...` command a finding's fix quotes runs as quoted (tests/support/aws_cli_model.py).

The conftest's autouse fixture checks each finding any doctor test renders; this
file renders the breakage of every check (tests/support/doctor_cases.py) on its own, and holds
the helper itself to what the AWS CLI refuses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ecs_gpu.checks.doctor import run_checks
from support.aws_cli_model import commands, problems
from support.doctor_cases import CASES

Snap = dict[str, Any]


def test_every_case_quotes_only_commands_the_cli_accepts(healthy: Callable[[], Snap]) -> None:
    quoted = {}
    for check_id, breakage, *_ in CASES:
        s = healthy()
        breakage(s)
        for f in run_checks(s).findings:
            assert problems(f.fix) == [], (check_id, f.id, f.fix)
            for c in commands(f.fix):
                quoted[c.split()[2]] = f.id
    # The helper found the commands the fixes quote (not an empty pass).
    assert {"update-capacity-provider", "set-instance-protection", "start-instance-refresh"} <= (
        set(quoted)
    )


@pytest.mark.parametrize(
    ("text", "wrong"),
    [
        ("Run aws ecs frobnicate --cluster c.", "ecs has no command 'frobnicate'"),
        ("Run aws ecz list-clusters.", "no service 'ecz'"),
        (
            "Run `aws autoscaling delete-policy --policy-name p --asg g`.",
            "has no option --asg",
        ),
        (
            "Run aws autoscaling delete-policy --auto-scaling-group-name g.",
            "--policy-name is missing",
        ),
        ("Run aws cloudwatch enable-alarm-actions --alarm-names ....", "elided"),
        ("Run aws ecs update-service --cluster c --no-service s.", "no boolean"),
        ("Run aws ecs update-service --cluster c --service s --force-new-deployment true.", "flag"),
        ("Run aws ecs update-service --cluster c --service.", "--service needs a value"),
        ("Run aws ecs update-service c s.", "no option's value"),
        ("aws ecs list-clusters and aws ecs list-services --cluster c", "'and' is no option's"),
        (
            "aws autoscaling start-instance-refresh --auto-scaling-group-name g "
            """--preferences '{"SkipMatching": "yes", "Bogus": 1}'""",
            'Unknown parameter in Preferences: "Bogus"',
        ),
        (
            "aws autoscaling start-instance-refresh --auto-scaling-group-name g "
            "--preferences '{SkipMatching: true}'",
            "is not JSON",
        ),
        (
            "aws cloudwatch set-alarm-state --alarm-name a --state-value ALRM --state-reason r",
            "'ALRM' is not one of OK, ALARM, INSUFFICIENT_DATA",
        ),
        (
            "aws cloudformation create-change-set --stack-name s --change-set-name c "
            "--deployment-mode REVERT_DRIFTX",
            "'REVERT_DRIFTX' is not one of REVERT_DRIFT",
        ),
    ],
)
def test_the_helper_refuses_what_the_cli_refuses(text: str, wrong: str) -> None:
    found = problems(text)
    assert any(wrong in p for p in found), found


def test_the_helper_accepts_global_options_and_whole_input() -> None:
    assert commands("(aws ssm start-session --target i-1); then") == [
        "aws ssm start-session --target i-1"
    ]
    assert (
        problems(
            "Fix: aws autoscaling set-instance-protection --auto-scaling-group-name g "
            "--instance-ids i-1 i-2 --no-protected-from-scale-in --region us-east-1; ok"
        )
        == []
    )
    assert problems("aws ecs update-service --cli-input-json file://in.json") == []
    # A word in prose is no command: `aws` must start one.
    assert commands("see aws-semantics.md and the aws docs") == []
