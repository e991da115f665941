"""The GPU fleet's AMI: the template's parameter, and which AMI a deploy passes to it.

The template takes an explicit AMI id (a CloudFormation parameter of type
``AWS::EC2::Image::Id``) instead of resolving the public SSM parameter at
every deploy: with the group's instance-refresh update policy, a re-resolved
AMI would make the first deploy after AWS publishes a new GPU AMI replace the
whole GPU fleet, whatever the deploy was for. :func:`choose` decides the id;
``aws/ami.py`` reads what it needs from AWS. Pure: no AWS call here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, Literal

from ecs_gpu.errors import BadInputError, ProblemsFound

# The template's AMI parameter: its logical id, the key deploy passes, and
# what a template deployed without ecs-gpu must be given.
PARAMETER: Final = "GpuAmiId"
# The public parameter AWS updates with each ECS GPU AMI release (AL2023).
RECOMMENDED_SSM_PARAMETER: Final = (
    "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id"
)
# What a stack made by an older ecs-gpu has instead: CDK's
# EcsOptimizedImage parameter, of type AWS::SSM::Parameter::Value<...>, whose
# DescribeStacks ResolvedValue is the AMI the stack runs.
LEGACY_PARAMETER: Final = (
    "SsmParameterValueawsserviceecsoptimizedamiamazonlinux2023gpurecommendedimageid"
    "C96584B6F00A464EAD1953AFF4B05118Parameter"
)
# EC2's image id: "ami-" and 8 or 17 hex digits ([capacity] ami_id).
AMI_ID_PATTERN: Final = r"^ami-[0-9a-f]{8,17}$"
AMI_ID_RE: Final = re.compile(r"ami-[0-9a-f]{8,17}")
RECOMMENDED_COMMAND: Final = (
    f"aws ssm get-parameter --name {RECOMMENDED_SSM_PARAMETER} "
    "--query Parameter.Value --output text"
)

Why = Literal["new-stack", "kept", "update-ami", "spec"]


@dataclass(frozen=True)
class Decision:
    """The AMI a deploy passes, and why.

    ``newer``: the published recommended AMI when the deploy does not take it
    (the note that ``--update-ami``, or a new pin, would), else None.
    ``pinned``: the id is the spec's ``[capacity] ami_id``.
    """

    image_id: str
    why: Why
    newer: str | None = None
    pinned: bool = False

    @property
    def changes(self) -> bool:
        """Whether this deploy moves the fleet to another AMI than it runs."""
        return self.why in ("update-ami", "spec")


def choose(
    *,
    spec_ami: str | None,
    current: str | None,
    recommended: str | None,
    update_ami: bool,
    exists: bool,
) -> Decision:
    """The AMI for a deploy of a stack that ``exists`` (or not) and runs ``current``.

    - ``[capacity] ami_id`` pins the AMI: it is passed (a change only when it
      differs from the running one); ``--update-ami`` with a pin is refused.
    - A new stack gets the recommended AMI.
    - An existing stack keeps the AMI it runs, unless ``--update-ami``.
    ``current`` is None when the stack does not exist or its AMI could not
    be read; ``recommended`` None when it was not looked up.
    """
    if spec_ami is not None:
        if update_ami:
            raise BadInputError(
                f"--update-ami: the spec pins the AMI ([capacity] ami_id = {spec_ami!r}), so "
                "there is no recommended AMI to move to. Fix: drop --update-ami, or change "
                "or remove [capacity] ami_id in the spec."
            )
        why: Why = "spec" if exists and current != spec_ami else "kept"
        if not exists:
            why = "new-stack"
        return Decision(spec_ami, why, _newer(spec_ami, recommended), pinned=True)
    if not exists:
        if recommended is None:
            raise ProblemsFound(
                "no recommended ECS GPU AMI to create the stack with "
                f"({RECOMMENDED_SSM_PARAMETER} was not read). Fix: pin one with "
                "[capacity] ami_id in the spec."
            )
        return Decision(recommended, "new-stack")
    if update_ami:
        if recommended is None:
            raise ProblemsFound(
                f"--update-ami: {RECOMMENDED_SSM_PARAMETER} was not read, so there is no AMI "
                "to move to. Fix: rerun, or pin one with [capacity] ami_id."
            )
        why = "update-ami" if recommended != current else "kept"
        return Decision(recommended, why)
    if current is None:
        raise ProblemsFound(
            "the stack's current AMI could not be read (it has neither the "
            f"{PARAMETER} parameter nor an older ecs-gpu's SSM AMI parameter), so ecs-gpu "
            "cannot keep it. Fix: pass --update-ami to take the recommended ECS GPU AMI "
            "(the instance refresh replaces every GPU instance, one at a time), or pin the "
            "AMI the fleet runs with [capacity] ami_id."
        )
    return Decision(current, "kept", _newer(current, recommended))


def _newer(chosen: str, recommended: str | None) -> str | None:
    return recommended if recommended is not None and recommended != chosen else None


def current_from_parameters(parameters: Iterable[Mapping[str, str]]) -> str | None:
    """The AMI a stack runs, from its DescribeStacks ``Parameters``.

    This ecs-gpu's parameter holds the id itself; an older ecs-gpu's
    SSM-typed one holds the SSM path, and ``ResolvedValue`` the id.
    """
    by_key = {p.get("ParameterKey"): p for p in parameters}
    ours = by_key.get(PARAMETER)
    if ours is not None and AMI_ID_RE.fullmatch(ours.get("ParameterValue", "")):
        return ours["ParameterValue"]
    legacy = by_key.get(LEGACY_PARAMETER)
    if legacy is not None and AMI_ID_RE.fullmatch(legacy.get("ResolvedValue", "")):
        return legacy["ResolvedValue"]
    return None
