"""Turn botocore errors into ecs-gpu errors that name the call and the permission.

The httpx pattern: one small mapping from low-level codes to domain errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore import exceptions as bx

from ecs_gpu.errors import AwsError, AwsRefused, BadInputError

ACCESS_DENIED_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "UnauthorizedAccess",
        "AuthorizationError",
        "AuthFailure",
        "InvalidClientTokenId",
        "UnrecognizedClientException",
        "ExpiredToken",
        "ExpiredTokenException",
        "SignatureDoesNotMatch",
        "MissingAuthenticationToken",
    }
)

THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "RequestThrottled",
        "RequestThrottledException",
        "SlowDown",
        "Rate exceeded",
    }
)

# boto3 service name -> IAM action prefix where they differ.
_IAM_PREFIX = {
    "monitoring": "cloudwatch",
    "cloudwatch": "cloudwatch",
    "service-quotas": "servicequotas",
}


def iam_action(service: str, operation: str) -> str:
    """The IAM action a call needs, e.g. ("ecs", "DescribeServices") -> "ecs:DescribeServices"."""
    return f"{_IAM_PREFIX.get(service, service)}:{operation}"


class AccessDenied(AwsError):
    """AWS denied a call; carries the call and the IAM permission it needs."""

    def __init__(self, service: str | None, operation: str, detail: str) -> None:
        self.service = service
        self.operation = operation
        # A botocore error that escaped to the CLI names its operation but not
        # its service; the permission is then "the one for <operation>".
        self.permission = (
            iam_action(service, operation) if service else f"the permission for {operation}"
        )
        call = f"{service} {operation}" if service else operation
        super().__init__(
            f"AWS denied {call}: {detail}. Fix: grant {self.permission} to "
            "the identity you run as (check AWS_PROFILE / credentials)."
        )


class Unreachable(AwsError):
    """AWS (or the endpoint in AWS_ENDPOINT_URL) could not be reached."""


class NotAwsResponse(bx.BotoCoreError):
    """The endpoint answered, but not as an AWS API does (aws.clients' response guard).

    A captive portal's HTML page or binary junk would otherwise parse as an
    empty answer ("no datapoint ever published") or crash the parser.
    """

    fmt = "{endpoint} answered {operation} with {what}, which no AWS API sends"


def error_code(exc: BaseException) -> str:
    if isinstance(exc, bx.ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def is_access_denied(exc: BaseException) -> bool:
    # "403": botocore's fallback code when it cannot parse the error body (a
    # proxy, an emulator); a 403 is still a refusal.
    code = error_code(exc)
    return code in ACCESS_DENIED_CODES or code == "403"


def http_status(exc: BaseException) -> int:
    """The HTTP status of a ClientError's response (0 when it has none)."""
    if not isinstance(exc, bx.ClientError):
        return 0
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)


def is_throttling(exc: BaseException) -> bool:
    return error_code(exc) in THROTTLING_CODES


def _one_line(msg: str) -> str:
    """A body that is no AWS message (a proxy's or emulator's HTML page) as one short line."""
    return " ".join(msg.split())[:300]


def translate(exc: BaseException, service: str | None = None, operation: str = "") -> Exception:
    """The ecs-gpu error for a botocore exception raised by ``service.operation``.

    Denied: :class:`AccessDenied` (exit 3); throttled or a 5xx: :class:`AwsError`
    (exit 3); any other refusal (a ValidationError, a resource not found):
    :class:`AwsRefused`, a failed operation (exit 1). The one mapping from
    botocore to exit codes: :func:`mapped` uses it around each call, and the
    CLI's last line of defence for anything that escaped (then only the
    operation is known, from the ClientError itself).
    """
    if isinstance(exc, bx.ClientError):
        operation = operation or str(getattr(exc, "operation_name", "") or "an AWS call")
        code = error_code(exc)
        msg = str(exc.response.get("Error", {}).get("Message", "")) or code
        if code == "403":
            return AccessDenied(service, operation, f"HTTP 403: {_one_line(msg)}")
        if is_access_denied(exc):
            return AccessDenied(service, operation, f"{code}: {msg}")
        if is_throttling(exc) or http_status(exc) >= 500:
            # Still throttled after the retries, or AWS failing: unavailable now (exit 3).
            return AwsError(
                f"AWS {_call(service, operation)} failed: {code}: {_one_line(msg)}. Fix: AWS is "
                "not answering this call now; run the command again in a few minutes."
            )
        # AWS answered and refused what was asked: the operation failed (exit 1).
        return AwsRefused(
            f"AWS refused {_call(service, operation)}: {code}: {msg}. Fix: correct what the "
            "message names (a resource that no longer exists, a state or value AWS does not "
            "accept), then run the command again."
        )
    call = _call(service, operation or "an AWS call")
    if isinstance(exc, bx.ParamValidationError):
        # Raised before anything is sent: a value we were given, not AWS, is wrong.
        report = " ".join(str(exc.kwargs.get("report", exc)).split())
        return BadInputError(
            f"{call} refuses a parameter before it is sent: {report}. Fix: the value comes "
            "from a flag or the spec; pass a valid name (not empty, within AWS's length "
            "limits)."
        )
    if isinstance(exc, NotAwsResponse):
        return Unreachable(
            f"cannot reach AWS for {call}: {exc}. Fix: a captive portal, proxy or other "
            "server answers in AWS's place; check the network, and AWS_ENDPOINT_URL if it "
            "is set."
        )
    if isinstance(exc, bx.NoCredentialsError | bx.PartialCredentialsError):
        return AwsError(
            f"no AWS credentials for {call}. Fix: set AWS_PROFILE, or "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run `aws configure`."
        )
    if isinstance(exc, bx.NoRegionError):
        return BadInputError("no AWS region configured. Fix: set AWS_REGION or pass --region.")
    if isinstance(
        exc,
        bx.EndpointConnectionError | bx.ConnectTimeoutError | bx.ReadTimeoutError,
    ):
        return Unreachable(
            f"cannot reach AWS for {call}: {exc}. Fix: check the network and "
            "region, and AWS_ENDPOINT_URL if it is set."
        )
    if isinstance(exc, bx.BotoCoreError):
        return AwsError(f"AWS SDK error in {call}: {exc}")
    return exc if isinstance(exc, Exception) else RuntimeError(str(exc))


def _call(service: str | None, operation: str) -> str:
    return f"{service} {operation}" if service else operation


@contextmanager
def mapped(service: str, operation: str) -> Iterator[None]:
    """Run AWS calls, re-raising botocore errors as ecs-gpu errors.

    >>> with mapped("ecs", "DescribeServices"):
    ...     pass
    """
    try:
        yield
    except (bx.ClientError, bx.BotoCoreError) as e:
        raise translate(e, service, operation) from None
