"""Deploy and diff a stack through CloudFormation change sets.

I/O only: every decision about what a change set or an event stream means
lives in :mod:`ecs_gpu.checks.stack_events`. Clients are passed in (tests
point them at moto, or wrap them in a botocore Stubber); waits go through a
:class:`Waits` so tests never sleep. Where CreateChangeSet reads the
template (inline or the user's bucket) is :mod:`ecs_gpu.aws.staging`; the
steps before a delete are :mod:`ecs_gpu.aws.destroy`. It never deletes a
stack on its own (a failed create is left as CloudFormation rolled it back;
the user runs ``ecs-gpu destroy``), previews a new stack from the template
itself, so ``diff`` and a declined ``deploy`` leave nothing behind (a CREATE
change set would leave an empty stack in REVIEW_IN_PROGRESS), and creates no
S3 bucket behind the user's back (:mod:`ecs_gpu.aws.staging`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING, Any, Final

from botocore import exceptions as bx

from ecs_gpu.aws.errors import (
    AccessDenied,
    error_code,
    mapped,
    translate,
)
from ecs_gpu.aws.staging import TemplateSource
from ecs_gpu.checks.stack_events import (
    ChangeSummary,
    changes_from_template,
    is_in_progress,
    is_no_change_reason,
    parse_changes,
    required_capabilities,
)
from ecs_gpu.design import redeploy
from ecs_gpu.errors import (
    AwsRefused,
    BadInputError,
    EcsGpuError,
    ProblemsFound,
    StackInterrupted,
)

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_iam import IAMClient

    from ecs_gpu.design import Design

_PENDING_CHANGE_SET = frozenset({"CREATE_PENDING", "CREATE_IN_PROGRESS"})
# Stack tags deploy sets; destroy (and deploy onto an existing stack) only
# touch a stack that carries them, so a typo in --stack cannot delete or
# overwrite someone else's stack.
TAG_SPEC: Final = "ecs-gpu:spec"
TAG_VERSION: Final = "ecs-gpu:version"
# Stacks deployed before the tags existed are known by the template's Description.
DESCRIPTION_PREFIX: Final = "ecs-gpu:"
ECS_SERVICE_PRINCIPAL: Final = "ecs.amazonaws.com"


@dataclass(frozen=True)
class Waits:
    """How long and how often to poll. Tests pass a no-op ``sleep``."""

    poll_s: float = 5.0
    change_set_timeout_s: float = 600.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic


def follow_hint(stack: str, region: str | None) -> str:
    reg = f" --region {region}" if region else ""
    return (
        f"follow it with `aws cloudformation describe-stack-events --stack-name {stack}{reg}` "
        f"or `aws cloudformation describe-stacks --stack-name {stack}{reg}`"
    )


def ecs_gpu_version() -> str:
    """The installed ecs-gpu version (``--version`` and the stack's version tag)."""
    try:
        return metadata.version("ecs-gpu")
    except metadata.PackageNotFoundError:  # a source tree run without installing
        return "unknown"


def stack_tags(service_name: str) -> list[dict[str, str]]:
    """The tags deploy puts on the stack: which spec made it, and which ecs-gpu."""
    return [
        {"Key": TAG_SPEC, "Value": service_name},
        {"Key": TAG_VERSION, "Value": ecs_gpu_version()},
    ]


# --- stack state ------------------------------------------------------------------


@dataclass(frozen=True)
class StackState:
    stack_id: str
    name: str
    status: str
    reason: str
    tags: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    # DescribeStacks' Parameters, each as strings (ParameterKey, ParameterValue,
    # and ResolvedValue for an SSM-typed one): where the running AMI is read.
    parameters: tuple[Mapping[str, str], ...] = ()
    # EnableTerminationProtection: DeleteStack then fails (destroy refuses first).
    termination_protection: bool = False

    @property
    def made_by_ecs_gpu(self) -> bool:
        return TAG_SPEC in self.tags or self.description.startswith(DESCRIPTION_PREFIX)


def check_owned(state: StackState, service_name: str, *, action: str) -> None:
    """Refuse (exit 2) to ``action`` a stack ecs-gpu did not make, or made from another spec."""
    if not state.made_by_ecs_gpu:
        raise BadInputError(
            f"stack {state.name}: not made by ecs-gpu (it has no {TAG_SPEC} tag and its "
            f"description does not start with {DESCRIPTION_PREFIX!r}), so ecs-gpu will not "
            f"{action} it. Fix: check --stack (default: the spec's service.name); if you do "
            f"mean this stack, use `aws cloudformation` directly."
        )
    owner = state.tags.get(TAG_SPEC)
    if owner is not None and owner != service_name:
        raise BadInputError(
            f"stack {state.name}: deployed by ecs-gpu from a spec whose service.name is "
            f"{owner!r}, not {service_name!r}, so ecs-gpu will not {action} it with this spec. "
            f"Fix: pass the spec of {owner!r}, or pick this spec's own stack with --stack."
        )


def _is_missing_stack(exc: BaseException) -> bool:
    return error_code(exc) == "ValidationError" and "does not exist" in str(exc)


@contextmanager
def refusal_is_a_problem(operation: str, stack: str, fix: str) -> Iterator[None]:
    """CloudFormation refusing a write (a 4xx other than auth/throttling) is exit 1,
    as :func:`translate` has it, with the way on for this write."""
    try:
        yield
    except (bx.ClientError, bx.BotoCoreError) as e:
        err = translate(e, "cloudformation", operation)
        if isinstance(err, AwsRefused) and isinstance(e, bx.ClientError):
            msg = e.response.get("Error", {}).get("Message", str(e))
            err = AwsRefused(
                f"CloudFormation refused {operation} for stack {stack}: {error_code(e)}: "
                f"{msg}. Fix: {fix}"
            )
        raise err from None


def stack_state(cfn: CloudFormationClient, stack: str) -> StackState | None:
    """The stack's id and status, or None when it does not exist (or was deleted)."""
    with mapped("cloudformation", "DescribeStacks"):
        try:
            resp = cfn.describe_stacks(StackName=stack)
        except bx.ClientError as e:
            if _is_missing_stack(e):
                return None
            raise
    stacks = resp.get("Stacks", [])
    if not stacks:
        return None
    s = stacks[0]
    if s["StackStatus"] == "DELETE_COMPLETE":
        return None
    return StackState(
        stack_id=s["StackId"],
        name=s["StackName"],
        status=s["StackStatus"],
        reason=s.get("StackStatusReason", ""),
        tags={t["Key"]: t["Value"] for t in s.get("Tags", [])},
        description=s.get("Description", ""),
        parameters=tuple({k: str(v) for k, v in p.items()} for p in s.get("Parameters", [])),
        termination_protection=bool(s.get("EnableTerminationProtection", False)),
    )


@dataclass(frozen=True)
class StackOutput:
    """One output of a deployed stack, as DescribeStacks lists it."""

    key: str
    value: str
    description: str = ""
    export_name: str | None = None


def stack_outputs(cfn: CloudFormationClient, stack: str) -> tuple[str, list[StackOutput]]:
    """The stack's status and outputs (by name or id), in the order CloudFormation lists
    them: one DescribeStacks call."""
    with mapped("cloudformation", "DescribeStacks"):
        stacks = cfn.describe_stacks(StackName=stack).get("Stacks", [])
    if not stacks:
        return "DELETE_COMPLETE", []
    outs = [
        StackOutput(
            key=o.get("OutputKey", ""),
            value=o.get("OutputValue", ""),
            description=o.get("Description", ""),
            export_name=o.get("ExportName"),
        )
        for o in stacks[0].get("Outputs", [])
    ]
    return stacks[0]["StackStatus"], outs


def deployed_template(cfn: CloudFormationClient, state: StackState) -> dict[str, Any] | str:
    """The template the stack ``state`` runs (GetTemplate), or what could not be read.

    A YAML body (not a template ecs-gpu wrote) is not parsed: CloudFormation's
    short-form tags need their own loader, and the caller only warns.
    """
    with mapped("cloudformation", "GetTemplate"):
        body: Any = cfn.get_template(StackName=state.stack_id).get("TemplateBody")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError:
            return "its template body is not JSON (YAML?)"
    return dict(body) if isinstance(body, Mapping) else "its template body is not a JSON object"


def forced_deployment(
    cfn: CloudFormationClient,
    design: Design,
    spec_path: str,
    stack: str,
    region: str | None,
) -> redeploy.Decision:
    """Whether deploying ``design`` onto ``stack`` forces the service's new deployment.

    The stack's owner and state are checked first (as :func:`plan` does), so a
    stack deploy would refuse is refused before its template is read; then
    :func:`ecs_gpu.design.redeploy.decide` compares the strategies (GetTemplate only
    for a stack that exists).
    """
    state = stack_state(cfn, stack)
    if state is None or state.status == "REVIEW_IN_PROGRESS":
        return redeploy.decide(design, spec_path, stack, None)
    check_owned(state, design.spec.service.name, action="update")
    _refuse_busy(state, region)
    return redeploy.decide(design, spec_path, stack, deployed_template(cfn, state))


def stack_status(cfn: CloudFormationClient, stack_id: str) -> str:
    """The stack's status by id (a deleted stack reads DELETE_COMPLETE)."""
    return status_by_id(cfn, stack_id)


def status_by_id(cfn: CloudFormationClient, stack_id: str) -> str:
    # By id, a deleted stack still answers (DELETE_COMPLETE); by name it is gone.
    with mapped("cloudformation", "DescribeStacks"):
        try:
            resp = cfn.describe_stacks(StackName=stack_id)
        except bx.ClientError as e:
            if _is_missing_stack(e):
                return "DELETE_COMPLETE"
            raise
    stacks = resp.get("Stacks", [])
    return stacks[0]["StackStatus"] if stacks else "DELETE_COMPLETE"


# The way out of a rollback that ECS refused: after a forced update (a new
# strategy) the rollback reapplies the old strategy without forcing a new
# deployment (aws-semantics §11 [gap]).
SKIP_SERVICE: Final = (
    "If the resource that failed to roll back is the ECS service (a capacity-provider strategy "
    "change, which ECS takes only with a forced deployment), skip it: `aws cloudformation "
    "continue-update-rollback --stack-name {stack} --resources-to-skip {service}`, and deploy "
    "again (the service keeps the new strategy until then)."
)


def _refuse_busy(state: StackState, region: str | None) -> None:
    if is_in_progress(state.status):
        raise ProblemsFound(
            f"stack {state.name} is {state.status}: another operation owns it and "
            f"CloudFormation accepts no change until it ends. Fix: wait for it; "
            + follow_hint(state.name, region)
            + "."
        )
    if state.status in ("ROLLBACK_COMPLETE", "ROLLBACK_FAILED"):
        raise ProblemsFound(
            f"stack {state.name} is {state.status}: its creation failed and CloudFormation "
            "can only delete it, not update it. ecs-gpu does not delete stacks on its own. "
            "Fix: `ecs-gpu destroy SPEC`, then deploy again."
        )
    if state.status == "UPDATE_ROLLBACK_FAILED":
        raise ProblemsFound(
            f"stack {state.name} is UPDATE_ROLLBACK_FAILED ({state.reason or 'no reason given'}): "
            "CloudFormation accepts no update until the rollback is finished. Fix: resolve the "
            "resource it names, then `aws cloudformation continue-update-rollback --stack-name "
            f"{state.name}`, and deploy again. "
            + SKIP_SERVICE.format(stack=state.name, service="<the service's logical id>")
        )
    if state.status == "DELETE_FAILED":
        raise ProblemsFound(
            f"stack {state.name} is DELETE_FAILED ({state.reason or 'no reason given'}). "
            "Fix: run `ecs-gpu destroy SPEC` again, which unprotects the instances first."
        )


# --- change sets ------------------------------------------------------------------


@dataclass
class Plan:
    """What a deploy would do. ``change_set_id`` is set for an existing stack."""

    stack: str
    change_type: str  # "CREATE" | "UPDATE"
    summary: ChangeSummary
    stack_id: str | None = None
    change_set_id: str | None = None
    capabilities: list[str] = field(default_factory=list)
    tags: list[dict[str, str]] = field(default_factory=list)
    # The template's parameter values (the AMI: ecs_gpu.contracts.ami), passed to every change set.
    parameters: dict[str, str] = field(default_factory=dict)
    # The update forces the ECS service's new deployment (ecs_gpu.design.redeploy).
    forces_new_deployment: bool = False

    @property
    def new_stack(self) -> bool:
        return self.change_type == "CREATE"

    def as_dict(self) -> dict[str, Any]:
        """What ``diff --json`` writes: the stack and its change list."""
        return {
            "stack": self.stack,
            "new_stack": self.new_stack,
            "forces_new_deployment": self.forces_new_deployment,
            "changes": self.summary.as_list(),
        }


def _change_set_name() -> str:
    return "ecs-gpu-" + datetime.now(UTC).strftime("%Y%m%d-%H%M%S-%f")


def _create_change_set(
    cfn: CloudFormationClient,
    stack: str,
    source: TemplateSource,
    change_type: str,
    capabilities: list[str],
    tags: list[dict[str, str]],
    parameters: Mapping[str, str] | None = None,
) -> tuple[str, str]:
    name = _change_set_name()
    kwargs: dict[str, Any] = {
        "StackName": stack,
        "ChangeSetName": name,
        **source.change_set_args(cfn.meta.region_name),
        "ChangeSetType": change_type,
        "Description": "created by ecs-gpu",
    }
    if capabilities:
        kwargs["Capabilities"] = capabilities
    if tags:
        kwargs["Tags"] = tags
    if parameters:
        kwargs["Parameters"] = [
            {"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()
        ]
    with mapped("cloudformation", "CreateChangeSet"):
        try:
            resp = cfn.create_change_set(**kwargs)
        except bx.ClientError as e:
            # The template itself was refused: that is a problem in what we
            # synthesized from the spec, not an AWS outage or a permission.
            if error_code(e) in ("ValidationError", "InsufficientCapabilitiesException"):
                msg = e.response.get("Error", {}).get("Message", str(e))
                if change_type == "UPDATE" and is_no_change_reason(msg):
                    # moto refuses a change set with parameters and nothing new
                    # the way UpdateStack does ("No updates are to be
                    # performed."); AWS makes a FAILED change set instead
                    # (plan handles both as no changes).
                    raise _NoChanges(msg) from None
                raise ProblemsFound(
                    f"CloudFormation refused the change set for stack {stack}: {msg}. "
                    "Fix: check the spec values it names; if the spec is valid this is a bug "
                    "in ecs-gpu's template (run `ecs-gpu validate SPEC` and report it)."
                ) from None
            raise
    return resp["Id"], resp.get("StackId", "")


class _NoChanges(Exception):
    """CreateChangeSet itself answered that the update changes nothing."""


def _wait_change_set(cfn: CloudFormationClient, cs_id: str, waits: Waits) -> dict[str, Any]:
    """Poll until the change set is computed; return its first page."""
    deadline = waits.clock() + waits.change_set_timeout_s
    while True:
        with mapped("cloudformation", "DescribeChangeSet"):
            resp: dict[str, Any] = dict(cfn.describe_change_set(ChangeSetName=cs_id))
        if resp.get("Status") not in _PENDING_CHANGE_SET:
            return resp
        if waits.clock() > deadline:
            raise ProblemsFound(
                f"change set {cs_id} was still {resp.get('Status')} after "
                f"{waits.change_set_timeout_s:.0f} s. Fix: look at it in the CloudFormation "
                "console, or rerun."
            )
        waits.sleep(waits.poll_s)


def _all_changes(cfn: CloudFormationClient, cs_id: str) -> list[dict[str, Any]]:
    changes: list[dict[str, Any]] = []
    with mapped("cloudformation", "DescribeChangeSet"):
        for page in cfn.get_paginator("describe_change_set").paginate(ChangeSetName=cs_id):
            changes.extend(dict(c) for c in page.get("Changes", []))
    return changes


def _delete_change_set(cfn: CloudFormationClient, cs_id: str) -> None:
    with mapped("cloudformation", "DeleteChangeSet"):
        cfn.delete_change_set(ChangeSetName=cs_id)


def plan(
    cfn: CloudFormationClient,
    stack: str,
    template: Mapping[str, Any],
    *,
    waits: Waits | None = None,
    region: str | None = None,
    service_name: str | None = None,
    source: TemplateSource | None = None,
    parameters: Mapping[str, str] | None = None,
) -> Plan:
    """Compute what deploying ``template`` as ``stack`` would change.

    For an existing stack this creates a change set and leaves it in place
    (``plan.change_set_id``): :func:`execute` runs it, :func:`discard`
    deletes it. For a new stack it creates nothing. With ``service_name``
    the stack is tagged as made from that spec, and an existing stack must
    carry the same tag (:func:`check_owned`). ``source`` says how the
    template travels (default: inline, size-checked here); ``parameters``
    are the template's parameter values (the AMI, :mod:`ecs_gpu.contracts.ami`).
    """
    p = _plan(cfn, stack, template, waits, region, service_name, source, parameters)
    p.forces_new_deployment = not p.new_stack and redeploy.forces(template)
    return p


def _plan(
    cfn: CloudFormationClient,
    stack: str,
    template: Mapping[str, Any],
    waits: Waits | None,
    region: str | None,
    service_name: str | None,
    source: TemplateSource | None,
    parameters: Mapping[str, str] | None,
) -> Plan:
    w = waits or Waits()
    params = dict(parameters or {})
    src = source or TemplateSource(template, stack)
    caps = required_capabilities(template)
    tags = stack_tags(service_name) if service_name is not None else []
    state = stack_state(cfn, stack)
    if state is None or state.status == "REVIEW_IN_PROGRESS":
        return Plan(
            stack=stack,
            change_type="CREATE",
            summary=ChangeSummary(tuple(changes_from_template(template))),
            stack_id=state.stack_id if state else None,
            capabilities=caps,
            tags=tags,
            parameters=params,
        )
    if service_name is not None:
        check_owned(state, service_name, action="update")
    _refuse_busy(state, region)
    try:
        cs_id, _ = _create_change_set(cfn, stack, src, "UPDATE", caps, tags, params)
    except _NoChanges:
        no_changes = ChangeSummary(())
        return Plan(
            stack, "UPDATE", no_changes, stack_id=state.stack_id, tags=tags, parameters=params
        )
    try:
        first = _wait_change_set(cfn, cs_id, w)
        if first.get("Status") == "FAILED":
            reason = str(first.get("StatusReason", ""))
            if is_no_change_reason(reason):
                _delete_change_set(cfn, cs_id)
                return Plan(
                    stack,
                    "UPDATE",
                    ChangeSummary(()),
                    stack_id=state.stack_id,
                    tags=tags,
                    parameters=params,
                )
            raise ProblemsFound(
                f"CloudFormation could not compute the change set for stack {stack}: "
                f"{reason or 'no reason given'}. Fix: correct what it names and rerun."
            )
        changes = parse_changes(_all_changes(cfn, cs_id))
    except BaseException:
        _delete_change_set(cfn, cs_id)
        raise
    return Plan(
        stack=stack,
        change_type="UPDATE",
        summary=ChangeSummary(tuple(changes)),
        stack_id=state.stack_id,
        change_set_id=cs_id,
        capabilities=caps,
        tags=tags,
        parameters=params,
    )


def deploy_document(p: Plan, status: str | None, outs: Sequence[StackOutput]) -> dict[str, Any]:
    """What ``deploy --json`` writes: the change list, the final status and the outputs.

    ``status`` is None when nothing was executed (cancelled at the question).
    """
    return {**p.as_dict(), "status": status, "outputs": {o.key: o.value for o in outs}}


def discard(cfn: CloudFormationClient, p: Plan) -> None:
    """Delete the plan's change set, if it made one. The stack is untouched."""
    if p.change_set_id:
        _delete_change_set(cfn, p.change_set_id)
        p.change_set_id = None


def diff(
    cfn: CloudFormationClient,
    stack: str,
    template: Mapping[str, Any],
    *,
    waits: Waits | None = None,
    region: str | None = None,
    service_name: str | None = None,
    source: TemplateSource | None = None,
    parameters: Mapping[str, str] | None = None,
) -> Plan:
    """:func:`plan`, then delete the change set: a read-only preview.

    A ``source`` the caller passes is the caller's to :meth:`TemplateSource.remove`.
    """
    p = plan(
        cfn,
        stack,
        template,
        waits=waits,
        region=region,
        service_name=service_name,
        source=source,
        parameters=parameters,
    )
    discard(cfn, p)
    return p


def seen_event_ids(cfn: CloudFormationClient, stack: str) -> set[str]:
    with mapped("cloudformation", "DescribeStackEvents"):
        try:
            pages = cfn.get_paginator("describe_stack_events").paginate(StackName=stack)
            return {e["EventId"] for page in pages for e in page.get("StackEvents", [])}
        except bx.ClientError as e:
            if _is_missing_stack(e):
                return set()
            raise


def execute(
    cfn: CloudFormationClient,
    p: Plan,
    template: Mapping[str, Any],
    *,
    waits: Waits | None = None,
    source: TemplateSource | None = None,
    region: str | None = None,
) -> tuple[str, set[str]]:
    """Run the plan. Returns the stack id and the event ids that predate this run.

    Ctrl-C before ExecuteChangeSet is sent deletes the change set and says
    nothing was deployed; Ctrl-C while it is in flight says the deployment
    may have started and how to follow it. Both exit 130.
    """
    w = waits or Waits()
    try:
        if p.new_stack:
            src = source or TemplateSource(template, p.stack)
            cs_id, stack_id = _create_change_set(
                cfn, p.stack, src, "CREATE", p.capabilities, p.tags, p.parameters
            )
            p.change_set_id = cs_id
            p.stack_id = stack_id or p.stack_id
            first = _wait_change_set(cfn, cs_id, w)
            if first.get("Status") == "FAILED":
                raise ProblemsFound(
                    f"CloudFormation could not compute the change set for new stack {p.stack}: "
                    f"{first.get('StatusReason') or 'no reason given'}. The stack stays in "
                    "REVIEW_IN_PROGRESS with no resources. Fix: correct what it names and "
                    "deploy again."
                )
            p.stack_id = stack_id or first.get("StackId") or p.stack
        if not p.change_set_id:
            raise ProblemsFound(f"nothing to execute for stack {p.stack}: it has no changes.")
        seen = seen_event_ids(cfn, p.stack_id or p.stack)
    except KeyboardInterrupt:
        raise _interrupted_before_execute(cfn, p) from None
    fix = "correct what it names and deploy again; the stack is as CloudFormation left it."
    try:
        with refusal_is_a_problem("ExecuteChangeSet", p.stack, fix):
            cfn.execute_change_set(ChangeSetName=p.change_set_id)
    except KeyboardInterrupt:
        raise StackInterrupted(
            f"interrupted while asking CloudFormation to run the change set for stack "
            f"{p.stack}: the deployment may have started. "
            + follow_hint(p.stack, region).capitalize()
            + ", and run ecs-gpu again once it has finished."
        ) from None
    return p.stack_id or p.stack, seen


def _interrupted_before_execute(cfn: CloudFormationClient, p: Plan) -> StackInterrupted:
    """Ctrl-C after the question but before ExecuteChangeSet: drop the change set."""
    left = (
        f"stack {p.stack} stays in REVIEW_IN_PROGRESS with no resources (the next deploy "
        "uses it; `ecs-gpu destroy SPEC` deletes it)"
        if p.new_stack and p.stack_id
        else f"stack {p.stack} is unchanged"
    )
    cs_id, p.change_set_id = p.change_set_id, None
    if cs_id is None:
        return StackInterrupted(f"interrupted before the deployment started: {left}.")
    try:
        _delete_change_set(cfn, cs_id)
    except (EcsGpuError, bx.BotoCoreError, bx.ClientError, KeyboardInterrupt):
        return StackInterrupted(
            f"interrupted before the deployment started: {left}, but its change set could "
            f"not be deleted. Fix: `aws cloudformation delete-change-set --change-set-name "
            f"{cs_id}`."
        )
    return StackInterrupted(
        f"interrupted before the deployment started: nothing was deployed and the change "
        f"set is deleted; {left}."
    )


def ensure_ecs_service_linked_role(iam: IAMClient) -> bool:
    """Create ECS's service-linked role if the account lacks it; True when created.

    A fresh account has no AWSServiceRoleForECS until ECS is first used
    through the console or API, and a stack's cluster or capacity provider
    then fails with "Unable to assume the service linked role". IAM answers
    an existing role with InvalidInput "... has been taken in this account"
    (AWS) or EntityAlreadyExists (moto); both mean it is there.
    """
    with mapped("iam", "CreateServiceLinkedRole"):
        try:
            iam.create_service_linked_role(AWSServiceName=ECS_SERVICE_PRINCIPAL)
        except bx.ClientError as e:
            code = error_code(e)
            if code == "EntityAlreadyExists" or (
                code == "InvalidInput" and "has been taken" in str(e)
            ):
                return False
            raise
    return True


def ensure_service_linked_role(iam: IAMClient) -> bool:
    """:func:`ensure_ecs_service_linked_role`; a denial says who can do it instead."""
    try:
        return ensure_ecs_service_linked_role(iam)
    except AccessDenied as e:
        e.message += (
            " Or have an administrator create the role once for the account: `aws iam "
            f"create-service-linked-role --aws-service-name {ECS_SERVICE_PRINCIPAL}`. "
            "Nothing was deployed."
        )
        e.args = (e.message,)
        raise
