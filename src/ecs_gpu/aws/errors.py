"""Turn botocore errors into ecs-gpu errors that name the call and the permission.

The httpx pattern: one small mapping from low-level codes to domain errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore import exceptions as bx

from ecs_gpu.errors import AwsError, BadInputError

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
_IAM_PREFIX = {"monitoring": "cloudwatch", "cloudwatch": "cloudwatch"}


def iam_action(service: str, operation: str) -> str:
    """The IAM action a call needs, e.g. ("ecs", "DescribeServices") -> "ecs:DescribeServices"."""
    return f"{_IAM_PREFIX.get(service, service)}:{operation}"


class AccessDenied(AwsError):
    """AWS denied a call; carries the call and the IAM permission it needs."""

    def __init__(self, service: str, operation: str, detail: str) -> None:
        self.service = service
        self.operation = operation
        self.permission = iam_action(service, operation)
        super().__init__(
            f"AWS denied {service} {operation}: {detail}. Fix: grant {self.permission} to "
            "the identity you run as (check AWS_PROFILE / credentials)."
        )


class Unreachable(AwsError):
    """AWS (or the endpoint in AWS_ENDPOINT_URL) could not be reached."""


def error_code(exc: BaseException) -> str:
    if isinstance(exc, bx.ClientError):
        return str(exc.response.get("Error", {}).get("Code", ""))
    return ""


def is_access_denied(exc: BaseException) -> bool:
    # "403": botocore's fallback code when it cannot parse the error body (a
    # proxy, an emulator); a 403 is still a refusal.
    code = error_code(exc)
    return code in ACCESS_DENIED_CODES or code == "403"


def is_throttling(exc: BaseException) -> bool:
    return error_code(exc) in THROTTLING_CODES


def translate(exc: BaseException, service: str, operation: str) -> Exception:
    """The ecs-gpu error for a botocore exception raised by ``service.operation``."""
    if isinstance(exc, bx.ClientError):
        code = error_code(exc)
        msg = str(exc.response.get("Error", {}).get("Message", "")) or code
        if code == "403":
            return AccessDenied(service, operation, f"HTTP 403: {' '.join(msg.split())[:300]}")
        if is_access_denied(exc):
            return AccessDenied(service, operation, f"{code}: {msg}")
        return AwsError(f"AWS {service} {operation} failed: {code}: {msg}")
    if isinstance(exc, bx.NoCredentialsError | bx.PartialCredentialsError):
        return AwsError(
            f"no AWS credentials for {service} {operation}. Fix: set AWS_PROFILE, or "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY."
        )
    if isinstance(exc, bx.NoRegionError):
        return BadInputError("no AWS region configured. Fix: set AWS_REGION or pass --region.")
    if isinstance(
        exc,
        bx.EndpointConnectionError | bx.ConnectTimeoutError | bx.ReadTimeoutError,
    ):
        return Unreachable(
            f"cannot reach AWS for {service} {operation}: {exc}. Fix: check the network and "
            "region, and AWS_ENDPOINT_URL if it is set."
        )
    if isinstance(exc, bx.BotoCoreError):
        return AwsError(f"AWS SDK error in {service} {operation}: {exc}")
    return exc if isinstance(exc, Exception) else RuntimeError(str(exc))


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
