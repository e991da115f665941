"""``verify wake``: prove live that one request at zero tasks starts a task.

``verify scaling`` checks the wake path's configuration (the step policy and
its alarm, :func:`ecs_gpu.checks.verify.step_paths.explain_missing_wake`); nothing
there proves that the alarm fires. This does, on a service at zero: one HTTP
request to the load balancer (503: no registered target, aws-semantics §10),
then desiredCount polled until the wake policy raises it, the first scaling
activity since the request read for the policy that decided, and the rise
held against :func:`ecs_gpu.design.paths.wake.detection_s`. Nothing here changes the
service: the request is what a user would send. These are the reads and the
request; every verdict and sentence is :mod:`ecs_gpu.checks.verify.wake`'s, and
the CLI renders.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final

from ecs_gpu.aws import verify_decision as vdec
from ecs_gpu.aws import verify_scaling as vs
from ecs_gpu.aws import verify_step_paths as vsp
from ecs_gpu.aws.deploy import stack_outputs
from ecs_gpu.checks.verify.wake import (
    Counts,
    WakeConfig,
    WakeDecision,
    deployed_wake,
    unreachable,
    url_from_outputs,
    wake_decision,
)
from ecs_gpu.contracts.naming import Names
from ecs_gpu.errors import AwsRefused
from ecs_gpu.spec import Spec

if TYPE_CHECKING:
    from mypy_boto3_application_autoscaling import ApplicationAutoScalingClient
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_ecs import ECSClient

REQUEST_TIMEOUT_S: Final = 10.0

# url, timeout -> the HTTP status the load balancer answered.
Opener = Callable[[str, float], int]


def check_deployed(
    appscaling: ApplicationAutoScalingClient, cw: CloudWatchClient, names: Names
) -> WakeConfig:
    """Read the service's step policies and their alarms; verify scaling's wake check on
    them (:func:`ecs_gpu.checks.verify.wake.deployed_wake`)."""
    policies, alarms = vsp.read_step_path(appscaling, cw, names.scalable_target_resource_id)
    return deployed_wake(policies, alarms, names)


def service_counts(ecs: ECSClient, names: Names) -> Counts:
    s = vs.describe_service(ecs, names.cluster, names.service)
    return Counts(int(s["desiredCount"]), int(s.get("runningCount", 0)))


def stack_url(cfn: CloudFormationClient, spec: Spec, stack: str) -> str:
    """The load balancer's URL from the stack's outputs: its DNS name, the spec's
    health_check_path, https with a certificate."""
    try:
        status, outputs = stack_outputs(cfn, stack)
    except AwsRefused as e:
        # DescribeStacks by name refuses a stack that is not there (ValidationError).
        if "does not exist" not in e.message:
            raise
        status, outputs = "DELETE_COMPLETE", []
    return url_from_outputs(spec, outputs, stack=stack, status=status)


def http_status(url: str, timeout_s: float) -> int:
    """One GET; the status the server answered (an error status is an answer too)."""
    # The certificate names the service's domain, not the ALB's DNS name; the
    # request carries nothing secret and only has to reach the listener.
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(url, headers={"User-Agent": "ecs-gpu verify wake"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s, context=ctx) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def send_request(url: str, *, internal: bool, opener: Opener = http_status) -> int:
    """Send the one request; exit 3 when it never reached the load balancer."""
    try:
        return opener(url, REQUEST_TIMEOUT_S)
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        raise unreachable(url, reason, internal=internal) from None


def first_activity(
    appscaling: ApplicationAutoScalingClient,
    resource_id: str,
    *,
    since: datetime,
    wake_policies: Sequence[str],
) -> WakeDecision | None:
    """The first scaling activity at or after ``since``, as
    :func:`ecs_gpu.checks.verify.wake.wake_decision` reads it."""
    found = vdec.activities_since(appscaling, resource_id, since=since)
    return wake_decision(found[0], wake_policies) if found else None
