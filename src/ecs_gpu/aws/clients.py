"""boto3 sessions and clients, configured once.

Region and credentials come from the standard AWS sources (profile,
environment, instance role). boto3 itself honours the standard
``AWS_ENDPOINT_URL`` (and per-service ``AWS_ENDPOINT_URL_<SERVICE>``), which
is how the tests point every call at a local moto server. Throttling is
retried by botocore's standard retry mode with backoff, so a throttled API
is never reported as broken.
"""

from __future__ import annotations

import os
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ProfileNotFound

from ecs_gpu.errors import BadInputError

# "standard" mode retries throttling and transient errors with exponential
# backoff and jitter; 8 attempts ride out a burst of Describe* throttling.
RETRY_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 8},
    connect_timeout=5,
    read_timeout=30,
    user_agent_extra="ecs-gpu",
)


def make_session(profile: str | None = None, region: str | None = None) -> boto3.Session:
    """A boto3 session from the standard sources, with optional overrides.

    botocore reads only AWS_DEFAULT_REGION, but AWS_REGION is the variable
    the AWS CLI v2 and the other SDKs read first (and what our messages tell
    users to set), so it is honoured here too, after --region.
    """
    try:
        return boto3.Session(
            profile_name=profile, region_name=region or os.environ.get("AWS_REGION") or None
        )
    except ProfileNotFound:
        source = (
            f"--profile {profile}" if profile else f"AWS_PROFILE={os.environ.get('AWS_PROFILE')}"
        )
        raise BadInputError(
            f"{source}: no such AWS profile. Fix: pick one from "
            "`aws configure list-profiles`, or set AWS_PROFILE."
        ) from None


def client(session: boto3.Session, service: str, *, config: Config | None = None) -> Any:
    """A client for ``service`` with our retry configuration.

    Typed as ``Any`` here; callers annotate with the mypy_boto3 client type
    under ``TYPE_CHECKING`` (the Powertools pattern).
    """
    cfg = RETRY_CONFIG.merge(config) if config is not None else RETRY_CONFIG
    attempts = os.environ.get("AWS_MAX_ATTEMPTS", "")
    if attempts.isdigit() and int(attempts) > 0:
        # The standard AWS_MAX_ATTEMPTS setting is the user's explicit choice
        # (e.g. fail fast on an unreachable endpoint); a Config object would
        # otherwise silently override it.
        cfg = cfg.merge(Config(retries={"mode": "standard", "max_attempts": int(attempts)}))
    return session.client(service, config=cfg)  # type: ignore[call-overload]
