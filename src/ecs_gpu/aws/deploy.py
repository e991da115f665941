"""Deploy, diff and destroy a stack through CloudFormation change sets.

I/O only: every decision about what a change set or an event stream means
lives in :mod:`ecs_gpu.aws.stack_events`. Clients are passed in (tests
point them at moto, or wrap them in a botocore Stubber); waits go through a
:class:`Waits` so tests never sleep.

Rules this module keeps:
- It never deletes a stack on its own. A failed create is left as
  CloudFormation rolled it back; the user runs ``ecs-gpu destroy``.
- A new stack is previewed from the template itself, so ``diff`` and a
  declined ``deploy`` leave nothing behind (a CREATE change set would leave
  an empty stack in REVIEW_IN_PROGRESS).
- No S3 bucket is created behind the user's back: a template over the
  TemplateBody limit is refused with the way out, unless the user names a
  bucket (``--template-bucket``); then the template is staged there as one
  object, passed as TemplateURL, and deleted once the change set has been
  executed or deleted (:class:`TemplateSource`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING, Any, Final

from botocore import exceptions as bx

from ecs_gpu.aws.errors import (
    AccessDenied,
    error_code,
    is_access_denied,
    mapped,
    translate,
)
from ecs_gpu.aws.stack_events import (
    ChangeSummary,
    StackEvent,
    changes_from_template,
    explain_stuck_delete,
    first_failure,
    is_in_progress,
    is_no_change_reason,
    is_success,
    is_terminal,
    parse_changes,
    parse_event,
    required_capabilities,
)

# The `X as X` imports re-export names that live in errors, naming and
# template for callers that still read them here (cli/operate.py, tests/operate).
from ecs_gpu.errors import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from ecs_gpu.errors import AwsRefused, BadInputError, ProblemsFound
from ecs_gpu.errors import StackInterrupted as StackInterrupted
from ecs_gpu.naming import check_stack_name as check_stack_name
from ecs_gpu.template import MAX_TEMPLATE_BODY_BYTES as MAX_TEMPLATE_BODY_BYTES
from ecs_gpu.template import MAX_TEMPLATE_URL_BYTES as MAX_TEMPLATE_URL_BYTES
from ecs_gpu.template import minified, template_size_problem

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_ecs import ECSClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_s3 import S3Client

DEFAULT_TEMPLATE_PREFIX: Final = "ecs-gpu/"
# SetInstanceProtection takes at most 50 instance ids per call.
PROTECTION_BATCH = 50
DESCRIBE_TASKS_BATCH = 100
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


def template_body(template: Mapping[str, Any]) -> str:
    """The template as minified JSON, refused if over CloudFormation's body limit."""
    body = minified(template)
    problem = template_size_problem(body)
    if problem is not None:
        raise BadInputError(problem)
    return body


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
def _refusal_is_a_problem(operation: str, stack: str, fix: str) -> Iterator[None]:
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


def stack_status(cfn: CloudFormationClient, stack_id: str) -> str:
    """The stack's status by id (a deleted stack reads DELETE_COMPLETE)."""
    return _status_by_id(cfn, stack_id)


def _status_by_id(cfn: CloudFormationClient, stack_id: str) -> str:
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
            f"{state.name}`, and deploy again."
        )
    if state.status == "DELETE_FAILED":
        raise ProblemsFound(
            f"stack {state.name} is DELETE_FAILED ({state.reason or 'no reason given'}). "
            "Fix: run `ecs-gpu destroy SPEC` again, which unprotects the instances first."
        )


# --- where CreateChangeSet reads the template -------------------------------------


@dataclass(frozen=True)
class TemplateBucket:
    """A bucket the user named (``--template-bucket``) and the key prefix to stage under.

    ``owner``: the account that must own the bucket (S3's ExpectedBucketOwner,
    the caller's own account from the CLI), so a mistyped name never puts the
    template, with its secret ARNs and network layout, in a stranger's bucket.
    """

    name: str
    prefix: str = DEFAULT_TEMPLATE_PREFIX
    owner: str | None = None

    def owner_args(self) -> dict[str, Any]:
        return {"ExpectedBucketOwner": self.owner} if self.owner else {}


# S3 answers these for a bucket in another Region when the request names this one.
_WRONG_REGION_CODES = frozenset(
    {"PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException"}
)
_DNS_SUFFIX = {"aws-cn": "amazonaws.com.cn"}


def template_key(prefix: str, stack: str, body: str) -> str:
    """The object key: prefix, stack and content hash, so no two templates share one."""
    digest = hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]
    return f"{prefix}{stack}-{digest}.json"


def template_url(bucket: str, key: str, region: str, partition: str = "aws") -> str:
    """The regional https URL CloudFormation reads TemplateURL from.

    Virtual-hosted (``https://BUCKET.s3.REGION.amazonaws.com/KEY``), the form S3
    documents; path-style for a bucket name with dots, which would not match
    S3's TLS certificate as a host name.
    """
    host = f"s3.{region}.{_DNS_SUFFIX.get(partition, 'amazonaws.com')}"
    if "." in bucket:
        return f"https://{host}/{bucket}/{key}"
    return f"https://{bucket}.{host}/{key}"


def _bucket_missing(bucket: str) -> BadInputError:
    return BadInputError(
        f"--template-bucket {bucket}: no such bucket (S3 NoSuchBucket). ecs-gpu does not "
        "create buckets. Fix: check the name, or create one in the stack's Region "
        f"(`aws s3 mb s3://{bucket}`) and rerun."
    )


def _bucket_elsewhere(bucket: str, bucket_region: str, region: str) -> BadInputError:
    return BadInputError(
        f"--template-bucket {bucket} is in {bucket_region}, the stack in {region}. ecs-gpu "
        f"stages the template under the stack's Region's S3 URL, and S3 answers a bucket in "
        'another Region with a redirect that CloudFormation does not follow ("must be '
        'addressed using the specified endpoint"). Fix: name a bucket in '
        f"{region} (e.g. `aws s3 mb s3://NAME --region {region}`), or deploy to "
        f"{bucket_region} with --region {bucket_region}."
    )


class TemplateSource:
    """The template as CreateChangeSet takes it: inline, or staged in the user's bucket.

    The size limit is checked here, before any call. With a bucket the
    object is uploaded by :meth:`stage` (the CLI calls it first, so a bad
    bucket fails before the question) or else by the first change set that
    needs it, and :meth:`remove` deletes it; the caller runs that once the
    change set has been executed or deleted.
    """

    def __init__(
        self,
        template: Mapping[str, Any],
        stack: str,
        *,
        bucket: TemplateBucket | None = None,
        s3: S3Client | None = None,
    ) -> None:
        self.body = minified(template)
        problem = template_size_problem(self.body, bucket=bucket is not None)
        if problem is not None:
            raise BadInputError(problem)
        if bucket is not None and s3 is None:
            raise ValueError("a TemplateBucket needs an S3 client")
        self.stack = stack
        self.bucket = bucket
        self.s3 = s3
        self.key = template_key(bucket.prefix, stack, self.body) if bucket else None
        self.staged = False

    def stage(self, region: str) -> None:
        """Upload now (no-op inline or once done), so a bad bucket fails before any question."""
        if self.bucket is None or self.s3 is None or self.key is None or self.staged:
            return
        self._upload(self.bucket.name, self.key, region)
        self.staged = True

    def change_set_args(self, region: str) -> dict[str, str]:
        """TemplateBody, or TemplateURL once the template is in the bucket."""
        if self.bucket is None or self.s3 is None or self.key is None:
            return {"TemplateBody": self.body}
        self.stage(region)
        return {"TemplateURL": template_url(self.bucket.name, self.key, region, _partition(region))}

    def _upload(self, bucket: str, key: str, region: str) -> None:
        assert self.s3 is not None
        assert self.bucket is not None
        owner = self.bucket.owner_args()
        where = bucket_region(self.s3, bucket, owner)
        if where is not None and where != region:
            raise _bucket_elsewhere(bucket, where, region)
        try:
            # No ACL (the object stays private to the bucket's owner) and no
            # encryption settings: the bucket's default encryption applies.
            self.s3.put_object(
                Bucket=bucket,
                Key=key,
                Body=self.body.encode("utf-8"),
                ContentType="application/json",
                **owner,
            )
        except bx.ClientError as e:
            code = error_code(e)
            if code == "NoSuchBucket":
                raise _bucket_missing(bucket) from None
            if code in _WRONG_REGION_CODES:
                raise _bucket_elsewhere(bucket, "another Region", region) from None
            if is_access_denied(e):
                also = (
                    f", or the bucket is not owned by your account {self.bucket.owner} "
                    "(ecs-gpu writes only to a bucket your account owns)"
                    if self.bucket.owner
                    else ""
                )
                raise AccessDenied(
                    "s3",
                    "PutObject",
                    f"{code}: {e.response.get('Error', {}).get('Message', '')} (on "
                    f"arn:aws:s3:::{bucket}/{key}, for --template-bucket {bucket}{also}). "
                    "Nothing was deployed",
                ) from None
            raise translate(e, "s3", "PutObject") from None
        except bx.BotoCoreError as e:
            raise translate(e, "s3", "PutObject") from None

    def remove(self) -> str | None:
        """Delete the staged object; a sentence for the user if that failed, else None."""
        if not self.staged or self.bucket is None or self.s3 is None or self.key is None:
            return None
        try:
            self.s3.delete_object(Bucket=self.bucket.name, Key=self.key, **self.bucket.owner_args())
        except (bx.ClientError, bx.BotoCoreError) as e:
            why = error_code(e) or type(e).__name__
            return (
                f"could not delete the staged template s3://{self.bucket.name}/{self.key} "
                f"({why}); the deployment is unaffected. Fix: grant s3:DeleteObject on it, "
                f"or delete it by hand: `aws s3 rm s3://{self.bucket.name}/{self.key}`."
            )
        self.staged = False
        return None


def _partition(region: str) -> str:
    return "aws-cn" if region.startswith("cn-") else "aws"


def bucket_region(s3: S3Client, bucket: str, owner: Mapping[str, str] | None = None) -> str | None:
    """The bucket's Region from HeadBucket's x-amz-bucket-region, or None if S3 did not say.

    S3 sends that header on a 403 too, so a caller without s3:ListBucket still
    learns the Region; NoSuchBucket (404) is refused here, before any upload.
    """
    try:
        resp = s3.head_bucket(Bucket=bucket, **(owner or {}))
        if resp.get("BucketRegion"):
            return resp["BucketRegion"]
        headers: Mapping[str, str] = resp.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    except bx.ClientError as e:
        status = int(e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if status == 404 or error_code(e) in ("404", "NoSuchBucket"):
            raise _bucket_missing(bucket) from None
        if not (is_access_denied(e) or status in (301, 400, 403)):
            raise translate(e, "s3", "HeadBucket") from None
        headers = e.response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    except bx.BotoCoreError as e:
        raise translate(e, "s3", "HeadBucket") from None
    return headers.get("x-amz-bucket-region")


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
    # The template's parameter values (the AMI: ecs_gpu.ami), passed to every change set.
    parameters: dict[str, str] = field(default_factory=dict)

    @property
    def new_stack(self) -> bool:
        return self.change_type == "CREATE"

    def as_dict(self) -> dict[str, Any]:
        """What ``diff --json`` writes: the stack and its change list."""
        return {
            "stack": self.stack,
            "new_stack": self.new_stack,
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
    are the template's parameter values (the AMI, :mod:`ecs_gpu.ami`).
    """
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


def _seen_event_ids(cfn: CloudFormationClient, stack: str) -> set[str]:
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
) -> tuple[str, set[str]]:
    """Run the plan. Returns the stack id and the event ids that predate this run."""
    w = waits or Waits()
    if p.new_stack:
        src = source or TemplateSource(template, p.stack)
        cs_id, stack_id = _create_change_set(
            cfn, p.stack, src, "CREATE", p.capabilities, p.tags, p.parameters
        )
        first = _wait_change_set(cfn, cs_id, w)
        if first.get("Status") == "FAILED":
            raise ProblemsFound(
                f"CloudFormation could not compute the change set for new stack {p.stack}: "
                f"{first.get('StatusReason') or 'no reason given'}. The stack stays in "
                "REVIEW_IN_PROGRESS with no resources. Fix: correct what it names and deploy "
                "again."
            )
        p.change_set_id = cs_id
        p.stack_id = stack_id or first.get("StackId") or p.stack
    if not p.change_set_id:
        raise ProblemsFound(f"nothing to execute for stack {p.stack}: it has no changes.")
    seen = _seen_event_ids(cfn, p.stack_id or p.stack)
    fix = "correct what it names and deploy again; the stack is as CloudFormation left it."
    with _refusal_is_a_problem("ExecuteChangeSet", p.stack, fix):
        cfn.execute_change_set(ChangeSetName=p.change_set_id)
    return p.stack_id or p.stack, seen


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


# --- following a stack ------------------------------------------------------------


@dataclass
class FollowResult:
    status: str
    events: list[StackEvent]
    stuck: list[str] = field(default_factory=list)
    # The stack's outputs once a deploy succeeded (read by stack_outputs).
    outputs: list[StackOutput] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return is_success(self.status)

    @property
    def failure(self) -> StackEvent | None:
        return first_failure(self.events)


def _new_events(cfn: CloudFormationClient, stack_id: str, seen: set[str]) -> list[StackEvent]:
    """Events not seen yet, oldest first. Pages are newest first: stop at a seen one."""
    fresh: list[StackEvent] = []
    with mapped("cloudformation", "DescribeStackEvents"):
        pages = cfn.get_paginator("describe_stack_events").paginate(StackName=stack_id)
        for page in pages:
            hit_seen = False
            for raw in page.get("StackEvents", []):
                if raw["EventId"] in seen:
                    hit_seen = True
                    break
                seen.add(raw["EventId"])
                fresh.append(parse_event(raw))
            if hit_seen:
                break
    fresh.reverse()
    return fresh


def follow(
    cfn: CloudFormationClient,
    stack_id: str,
    seen: set[str],
    *,
    on_event: Callable[[StackEvent], None] = lambda e: None,
    on_status: Callable[[str, float], None] = lambda s, t: None,
    waits: Waits | None = None,
    stuck_after_s: float | None = None,
) -> FollowResult:
    """Poll the stack until a terminal status, reporting each new event.

    With ``stuck_after_s``, a stack still DELETE_IN_PROGRESS after that long
    is given up on and explained (:func:`explain_stuck_delete`) instead of
    being waited on forever. KeyboardInterrupt propagates: the caller tells
    the user the stack carries on.
    """
    w = waits or Waits()
    start = w.clock()
    events: list[StackEvent] = []
    while True:
        status = _status_by_id(cfn, stack_id)
        for e in _new_events(cfn, stack_id, seen):
            events.append(e)
            on_event(e)
        elapsed = w.clock() - start
        on_status(status, elapsed)
        if is_terminal(status):
            return FollowResult(status, events)
        if (
            stuck_after_s is not None
            and status == "DELETE_IN_PROGRESS"
            and elapsed >= stuck_after_s
        ):
            lines = explain_stuck_delete(events) or [
                "no resource reported progress; CloudFormation is waiting on the services"
            ]
            return FollowResult(status, events, stuck=lines)
        w.sleep(w.poll_s)


# --- destroy ----------------------------------------------------------------------


@dataclass(frozen=True)
class StackResource:
    logical_id: str
    resource_type: str
    physical_id: str
    status: str


def stack_resources(cfn: CloudFormationClient, stack: str) -> list[StackResource]:
    out: list[StackResource] = []
    with mapped("cloudformation", "ListStackResources"):
        for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack):
            for r in page.get("StackResourceSummaries", []):
                if not r.get("LogicalResourceId"):
                    continue  # moto lists resource types it skipped with no id
                out.append(
                    StackResource(
                        logical_id=r["LogicalResourceId"],
                        resource_type=r["ResourceType"],
                        physical_id=r.get("PhysicalResourceId", ""),
                        status=r.get("ResourceStatus", ""),
                    )
                )
    return out


def physical_of(resources: list[StackResource], rtype: str) -> str | None:
    for r in resources:
        if r.resource_type == rtype and r.physical_id:
            return r.physical_id
    return None


_ECS_GONE = frozenset({"ServiceNotFoundException", "ClusterNotFoundException"})
_ECS_SCALABLE_DIMENSION: Final = "ecs:service:DesiredCount"


def hold_scaling_at_zero(appscaling: ApplicationAutoScalingClient, resource_id: str) -> bool:
    """Suspend the service's autoscaling and let it reach 0, so nothing puts tasks back.

    Only touches a scalable target that exists (RegisterScalableTarget would
    otherwise create one). Returns whether there was one.
    """
    with mapped("application-autoscaling", "DescribeScalableTargets"):
        found = appscaling.describe_scalable_targets(
            ServiceNamespace="ecs",
            ResourceIds=[resource_id],
            ScalableDimension=_ECS_SCALABLE_DIMENSION,
        ).get("ScalableTargets", [])
    if not found:
        return False
    with mapped("application-autoscaling", "RegisterScalableTarget"):
        appscaling.register_scalable_target(
            ServiceNamespace="ecs",
            ResourceId=resource_id,
            ScalableDimension=_ECS_SCALABLE_DIMENSION,
            MinCapacity=0,
            SuspendedState={
                "DynamicScalingInSuspended": True,
                "DynamicScalingOutSuspended": True,
                "ScheduledScalingSuspended": True,
            },
        )
    return True


def scale_service_to_zero(ecs: ECSClient, cluster: str, service: str) -> bool:
    """Set desiredCount 0. Returns False when the service (or cluster) is gone."""
    with mapped("ecs", "UpdateService"):
        try:
            ecs.update_service(cluster=cluster, service=service, desiredCount=0)
        except bx.ClientError as e:
            if error_code(e) in _ECS_GONE or "INACTIVE" in str(e):
                return False
            raise
    return True


def _chunks(items: list[str], n: int) -> Iterator[list[str]]:
    for i in range(0, len(items), n):
        yield items[i : i + n]


def live_tasks(ecs: ECSClient, cluster: str, service: str) -> list[str]:
    """Task ARNs of the service that have not reached STOPPED yet."""
    arns: list[str] = []
    with mapped("ecs", "ListTasks"):
        try:
            for desired in ("RUNNING", "STOPPED"):
                pages = ecs.get_paginator("list_tasks").paginate(
                    cluster=cluster, serviceName=service, desiredStatus=desired
                )
                for page in pages:
                    arns.extend(page.get("taskArns", []))
        except bx.ClientError as e:
            if error_code(e) in _ECS_GONE:
                return []
            raise
    alive: list[str] = []
    for batch in _chunks(arns, DESCRIBE_TASKS_BATCH):
        with mapped("ecs", "DescribeTasks"):
            tasks = ecs.describe_tasks(cluster=cluster, tasks=batch).get("tasks", [])
        alive.extend(t["taskArn"] for t in tasks if t.get("lastStatus") != "STOPPED")
    return alive


def wait_tasks_stopped(
    ecs: ECSClient,
    cluster: str,
    service: str,
    *,
    timeout_s: float,
    waits: Waits | None = None,
    on_poll: Callable[[int, float], None] = lambda n, t: None,
) -> list[str]:
    """Wait (bounded) until the service has no live task; return those still alive."""
    w = waits or Waits()
    start = w.clock()
    while True:
        alive = live_tasks(ecs, cluster, service)
        elapsed = w.clock() - start
        on_poll(len(alive), elapsed)
        if not alive or elapsed >= timeout_s:
            return alive
        w.sleep(w.poll_s)


def unprotect_instances(autoscaling: AutoScalingClient, asg: str) -> list[str]:
    """Remove scale-in protection from every instance of ``asg``; return their ids.

    CloudFormation will not terminate protected instances, so an ASG under
    managed termination protection hangs the delete (aws-cdk #18179).
    New instances are unprotected too, in case the ASG launches one while
    the stack is being deleted.
    """
    with mapped("autoscaling", "DescribeAutoScalingGroups"):
        groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg]).get(
            "AutoScalingGroups", []
        )
    if not groups:
        return []
    group = groups[0]
    protected = [
        i["InstanceId"] for i in group.get("Instances", []) if i.get("ProtectedFromScaleIn")
    ]
    if group.get("NewInstancesProtectedFromScaleIn"):
        with mapped("autoscaling", "UpdateAutoScalingGroup"):
            autoscaling.update_auto_scaling_group(
                AutoScalingGroupName=asg, NewInstancesProtectedFromScaleIn=False
            )
    for batch in _chunks(protected, PROTECTION_BATCH):
        with mapped("autoscaling", "SetInstanceProtection"):
            autoscaling.set_instance_protection(
                InstanceIds=batch, AutoScalingGroupName=asg, ProtectedFromScaleIn=False
            )
    return protected


def delete_stack(cfn: CloudFormationClient, stack_id: str) -> set[str]:
    """Start deleting; return the event ids that predate the delete."""
    seen = _seen_event_ids(cfn, stack_id)
    fix = "resolve what it names (or delete it by hand) and run `ecs-gpu destroy SPEC` again."
    with _refusal_is_a_problem("DeleteStack", stack_id, fix):
        cfn.delete_stack(StackName=stack_id)
    return seen
