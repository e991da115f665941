"""diff and deploy: which GPU AMI the change set gets, and the note when a newer one is out.

Thin: :func:`ecs_gpu.aws.ami.choose_ami` reads and decides; this renders,
on standard error (diagnostics, so standard output stays the diff itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from ecs_gpu.aws import ami as aws_ami
from ecs_gpu.cli.terminal import err_console

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_ssm import SSMClient

UpdateAmiOpt = Annotated[
    bool,
    typer.Option(
        "--update-ami",
        help="Move the GPU fleet to the recommended ECS GPU AMI. Without it an existing "
        "stack keeps the AMI it runs; with it the instance refresh replaces every GPU "
        "instance, one at a time, each replacement an extra GPU instance while it starts.",
    ),
]

ROLL: str = (
    "the instance refresh replaces every GPU instance with one on the new AMI, one at a "
    "time, and each replacement needs an extra GPU instance while it starts (instance "
    "quota, InsufficientInstanceCapacity)"
)


def choose(
    cfn: CloudFormationClient,
    ssm: SSMClient,
    ec2: EC2Client,
    stack: str,
    *,
    spec_ami: str | None,
    update_ami: bool,
) -> aws_ami.AmiChoice:
    """Decide the AMI for this diff or deploy and say what it means."""
    choice = aws_ami.choose_ami(cfn, ssm, ec2, stack, spec_ami=spec_ami, update_ami=update_ami)
    for line in lines(choice):
        err_console.print(escape(line), soft_wrap=True)
    return choice


def lines(choice: aws_ami.AmiChoice) -> list[str]:
    """What the user reads about the AMI: the one passed, why, and any newer one."""
    d, chosen = choice.decision, choice.chosen.line()
    was = choice.current.line() if choice.current else "an AMI ecs-gpu could not read"
    source = "pinned by [capacity] ami_id" if d.pinned else "the recommended ECS GPU AMI"
    out = [
        {
            "new-stack": f"AMI: {chosen}, {source} (new stack).",
            "kept": f"AMI: {chosen}, the one the stack runs"
            + (", pinned by [capacity] ami_id." if d.pinned else " (kept)."),
            "update-ami": f"AMI: {was} -> {chosen} (--update-ami): {ROLL}.",
            "spec": f"AMI: {was} -> {chosen} ([capacity] ami_id): {ROLL}.",
        }[d.why]
    ]
    if d.newer is not None and choice.recommended is not None:
        how = (
            "Change [capacity] ami_id to it" if d.pinned else "`--update-ami` moves the fleet to it"
        )
        gets = {"new-stack": "the new stack gets", "spec": "the stack moves to"}.get(
            d.why, "the stack stays on"
        )
        out.append(
            f"Note: a {_newer_word(choice)} ECS GPU AMI is published: "
            f"{choice.recommended.line()}; {gets} {chosen}. {how}: {ROLL}."
        )
    if choice.unchecked:
        out.append(
            f"Note: {' and '.join(choice.unchecked)} denied: "
            + (
                "ecs-gpu could not look for a newer ECS GPU AMI"
                if any("GetParameter" in p for p in choice.unchecked)
                else "AMI names and dates are not shown"
            )
            + " (the AMI passed does not depend on it). Allow it to see them."
        )
    return out


def _newer_word(choice: aws_ami.AmiChoice) -> str:
    rec, ours = choice.recommended, choice.chosen
    if rec is not None and rec.created and ours.created and rec.created < ours.created:
        return "different recommended"
    return "newer"
