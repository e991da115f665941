"""What deploy and diff read to decide the GPU AMI: the stack's, and the published one.

I/O only; the decision is :func:`ecs_gpu.contracts.ami.choose`. Calls: CloudFormation
DescribeStacks (the stack's AMI parameter), SSM GetParameter on the public
recommended-AMI parameter, EC2 DescribeImages (name and creation date, for
the newer-AMI note).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore import exceptions as bx

from ecs_gpu.aws.deploy import stack_state
from ecs_gpu.aws.errors import AccessDenied, error_code, mapped
from ecs_gpu.contracts import ami

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_ec2 import EC2Client
    from mypy_boto3_ssm import SSMClient

# DescribeImages answers these for an id it does not know (deregistered, a
# typo in a pin, another Region's id). A recently deregistered id may instead
# come back in the results for a while (State "deregistered"), then as no
# result at all (the DescribeImages API reference; docs/aws-semantics.md
# "A pinned AMI"): :func:`describe` leaves out every id it did not find.
_UNKNOWN_IMAGE_CODES = frozenset({"InvalidAMIID.NotFound", "InvalidAMIID.Malformed"})


@dataclass(frozen=True)
class Image:
    """An AMI as the note shows it; name and date None when EC2 did not say."""

    image_id: str
    name: str | None = None
    created: str | None = None
    # DescribeImages' State ("available" launches; "deregistered" for a while
    # after a deregistration); None when not read.
    state: str | None = None

    def line(self) -> str:
        extra = ", ".join(x for x in (self.name, self.created) if x)
        return f"{self.image_id} ({extra})" if extra else self.image_id


@dataclass(frozen=True)
class AmiChoice:
    """The decision with the images it names, and the change set's parameters."""

    decision: ami.Decision
    chosen: Image
    current: Image | None
    recommended: Image | None
    # Permissions denied for what only the note and the names need: the
    # decision did not depend on them, so the deploy goes on without them.
    unchecked: tuple[str, ...] = ()

    @property
    def parameters(self) -> dict[str, str]:
        return {ami.PARAMETER: self.decision.image_id}


def recommended_id(ssm: SSMClient) -> str | None:
    """The public recommended ECS GPU AMI id; None where the Region does not publish it."""
    with mapped("ssm", "GetParameter"):
        try:
            value = ssm.get_parameter(Name=ami.RECOMMENDED_SSM_PARAMETER)["Parameter"]["Value"]
        except bx.ClientError as e:
            if error_code(e) == "ParameterNotFound":
                return None
            raise
    return value if ami.AMI_ID_RE.fullmatch(value) else None


def describe(ec2: EC2Client, image_ids: list[str]) -> dict[str, Image]:
    """Name, creation date and state of each id EC2 found (deprecated ones included).

    An id EC2 does not know is absent from the answer, whether DescribeImages
    failed with InvalidAMIID.NotFound (or .Malformed) or returned no image for it.
    """
    ids = sorted(set(image_ids))
    if not ids:
        return {}
    found: list[Any] = []
    with mapped("ec2", "DescribeImages"):
        try:
            found = list(
                ec2.describe_images(ImageIds=ids, IncludeDeprecated=True).get("Images", [])
            )
        except bx.ClientError as e:
            if error_code(e) not in _UNKNOWN_IMAGE_CODES:
                raise
            # One unknown id fails the whole call: ask for each alone.
            for one in ids:
                try:
                    found += ec2.describe_images(ImageIds=[one], IncludeDeprecated=True).get(
                        "Images", []
                    )
                except bx.ClientError as e1:
                    if error_code(e1) not in _UNKNOWN_IMAGE_CODES:
                        raise
    return {
        img["ImageId"]: Image(
            img["ImageId"], img.get("Name"), img.get("CreationDate"), img.get("State")
        )
        for img in found
        if img.get("ImageId") in ids
    }


def choose_ami(
    cfn: CloudFormationClient,
    ssm: SSMClient,
    ec2: EC2Client,
    stack: str,
    *,
    spec_ami: str | None,
    update_ami: bool,
) -> AmiChoice:
    """Read the stack's AMI and the recommended one, decide (:func:`ami.choose`), describe."""
    # One DescribeStacks for both: does the stack exist, and which AMI it runs.
    # DELETE_COMPLETE and REVIEW_IN_PROGRESS count as no stack, as deploy then
    # creates it anew.
    state = stack_state(cfn, stack)
    exists = state is not None and state.status != "REVIEW_IN_PROGRESS"
    current = ami.current_from_parameters(state.parameters) if state and exists else None
    unchecked: list[str] = []
    # The recommended AMI decides only a new unpinned stack and --update-ami;
    # otherwise it feeds the newer-AMI note, and a role that may not read it
    # (a stack with its AMI already chosen needs no ssm:GetParameter) still deploys.
    needed = update_ami or (not exists and spec_ami is None)
    try:
        recommended = recommended_id(ssm)
    except AccessDenied as e:
        if needed:
            raise
        recommended = None
        unchecked.append(e.permission or "ssm:GetParameter")
    decision = ami.choose(
        spec_ami=spec_ami,
        current=current,
        recommended=recommended,
        update_ami=update_ami,
        exists=exists,
    )
    ids = [x for x in (decision.image_id, current, recommended) if x]
    try:
        found = describe(ec2, ids)
    except AccessDenied as e:  # names and dates only: the ids alone
        found = {}
        unchecked.append(e.permission or "ec2:DescribeImages")
    # An image EC2 did not find is shown by its id alone.
    images = {i: found.get(i, Image(i)) for i in ids}
    return AmiChoice(
        decision=decision,
        chosen=images[decision.image_id],
        current=images[current] if current else None,
        recommended=images[recommended] if recommended else None,
        unchecked=tuple(unchecked),
    )
