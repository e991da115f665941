"""boto3 sessions and clients, configured once.

Region and credentials come from the standard AWS sources (profile,
environment, instance role). boto3 itself honours the standard
``AWS_ENDPOINT_URL`` (and per-service ``AWS_ENDPOINT_URL_<SERVICE>``), which
is how the tests point every call at a local moto server. Throttling is
retried by botocore's standard retry mode with backoff, so a throttled API
is never reported as broken. A check that runs once (``fail_fast``) waits
seconds, not minutes, on an endpoint that accepts and never answers; and a
response no AWS API sends (a captive portal's HTML, binary junk) is refused
before botocore parses it (:func:`refuse_non_aws`).
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from functools import cache, partial
from typing import Any, Final

import boto3
from botocore import exceptions as bx
from botocore.config import Config
from botocore.exceptions import ProfileNotFound
from botocore.loaders import create_loader

from ecs_gpu.aws.errors import NotAwsResponse, translate
from ecs_gpu.errors import BadInputError

# "standard" mode retries throttling and transient errors with exponential
# backoff and jitter; 8 attempts ride out a burst of Describe* throttling.
RETRY_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 8},
    connect_timeout=5,
    read_timeout=30,
    user_agent_extra="ecs-gpu",
)
# A check run once (verify metrics --timeout 0): two attempts of 5 s each, so
# a black-holed endpoint (accepts, never answers) fails in seconds, not after
# 8 attempts of 30 s.
FAIL_FAST_CONFIG: Final = Config(
    # total_max_attempts counts the first try (Config's max_attempts counts retries).
    retries={"mode": "standard", "total_max_attempts": 2},
    connect_timeout=5,
    read_timeout=5,
)
# Seconds for every call's connect and read timeout, overriding both configs
# (a slow link; the tests' black-holed endpoint).
TIMEOUT_ENV: Final = "ECS_GPU_AWS_TIMEOUT"
# Protocols whose responses are text (JSON or XML); CBOR is binary by design.
_JSON_PROTOCOLS: Final = frozenset({"json", "rest-json"})
_XML_PROTOCOLS: Final = frozenset({"query", "ec2", "rest-xml"})


def make_session(profile: str | None = None, region: str | None = None) -> boto3.Session:
    """A boto3 session from the standard sources, with optional overrides.

    botocore reads only AWS_DEFAULT_REGION, but AWS_REGION is the variable
    the AWS CLI v2 and the other SDKs read first (and what our messages tell
    users to set), so it is honoured here too, after --region.
    """
    env = os.environ.get("AWS_REGION") or None
    chosen = region if region is not None else env
    if chosen is not None:
        check_region(
            chosen, f"--region {chosen!r}" if region is not None else f"AWS_REGION={chosen!r}"
        )
    try:
        session = boto3.Session(profile_name=profile, region_name=chosen)
    except bx.ConfigParseError as e:
        raise _config_file_error(e) from None
    except ProfileNotFound:
        source = (
            f"--profile {profile}" if profile else f"AWS_PROFILE={os.environ.get('AWS_PROFILE')}"
        )
        raise BadInputError(
            f"{source}: no such AWS profile. Fix: pick one from "
            "`aws configure list-profiles`, or set AWS_PROFILE."
        ) from None
    if chosen is None and session.region_name:
        # From AWS_DEFAULT_REGION or the profile's config.
        got = session.region_name
        from_env = os.environ.get("AWS_DEFAULT_REGION") == got
        check_region(
            got, f"AWS_DEFAULT_REGION={got}" if from_env else f"the profile's region {got}"
        )
    return session


def check_ready(session: boto3.Session) -> None:
    """Refuse a session with no region (exit 2) or no credentials (exit 3), before slow work.

    botocore finds both only at the first call; a command that synthesizes
    first would spend its 10-30 s of CDK before saying so.
    """
    if not session.region_name:
        raise BadInputError(
            "no AWS region configured (none of --region, AWS_REGION, AWS_DEFAULT_REGION or "
            "the profile's region is set). Fix: pass --region, e.g. --region us-east-1, or "
            "set AWS_REGION."
        )
    try:
        credentials = session.get_credentials()
    except bx.ConfigParseError as e:
        raise _config_file_error(e) from None
    except bx.CredentialRetrievalError as e:
        if e.kwargs.get("provider") != "custom-process":
            raise translate(e, None, "resolving credentials") from None
        # The profile's credential_process exited non-zero: a local setting, not AWS.
        raise BadInputError(
            f"{_credential_source(session)}: cannot get AWS credentials: "
            f"{e.kwargs.get('error_msg') or e}. Fix: run that credential_process by hand "
            "to see its error, or choose another profile."
        ) from None
    except bx.BotoCoreError as e:  # e.g. a profile's SSO token has expired
        raise translate(e, None, "resolving credentials") from None
    except (OSError, ValueError) as e:
        # botocore lets these through: a credential_process that is missing or
        # prints no JSON, or a setting such as AWS_METADATA_SERVICE_TIMEOUT=abc.
        raise BadInputError(
            f"{_credential_source(session)}: cannot get AWS credentials: "
            f"{type(e).__name__}: {e}. Fix: correct that setting (run the profile's "
            "credential_process by hand to see its error), or choose another profile."
        ) from None
    if credentials is None:
        raise translate(bx.NoCredentialsError(), None, "resolving credentials")


def _check_endpoint_env(service: str) -> None:
    """Refuse (exit 2) an AWS_ENDPOINT_URL[_SERVICE] botocore would take and then fail
    on at the first request (a port that is no number), naming the variable."""
    for var in (f"AWS_ENDPOINT_URL_{service.upper().replace('-', '_')}", "AWS_ENDPOINT_URL"):
        url = os.environ.get(var)
        if not url:
            continue
        try:
            parts = urllib.parse.urlsplit(url)
            parts.port  # noqa: B018  (raises ValueError for a port that is no number)
        except ValueError as e:
            raise BadInputError(
                f"{var}={url!r}: {e}. Fix: give a full URL such as http://127.0.0.1:5000, or "
                "unset it."
            ) from None
        return


def _config_file_error(e: bx.ConfigParseError) -> BadInputError:
    path = str(e.kwargs.get("path") or os.environ.get("AWS_CONFIG_FILE") or "~/.aws/config")
    shared = os.environ.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials"
    is_credentials = os.path.expanduser(path) == os.path.expanduser(shared)
    kind, var, section = (
        ("credentials file", "AWS_SHARED_CREDENTIALS_FILE", "[NAME]")
        if is_credentials
        else ("config file", "AWS_CONFIG_FILE", "[profile NAME]")
    )
    return BadInputError(
        f"AWS {kind} {path}: cannot be parsed ({e}). Fix: correct its INI syntax "
        f"({section} sections of key = value lines), or point {var} elsewhere."
    )


def _credential_source(session: boto3.Session) -> str:
    """The profile (and its credential_process, if any) credentials came from, in words."""
    name = session.profile_name
    try:
        process = session._session.get_scoped_config().get("credential_process")
    except bx.BotoCoreError:
        process = None
    where = f"AWS profile {name!r}"
    if not process:
        return where
    # The program only: its arguments may carry a secret that must not reach a log.
    program = str(process).split(maxsplit=1)[0]
    return f"{where} (credential_process runs {program})"


@cache
def region_patterns() -> tuple[tuple[str, str], ...]:
    """(partition, regionRegex) of every AWS partition, from botocore's own partitions data."""
    data = create_loader().load_data("partitions")
    return tuple((p["id"], p["regionRegex"]) for p in data["partitions"])


def check_region(region: str, source: str) -> None:
    """Refuse a value that is no Region name in any partition (exit 2), before any call.

    Without this a typo ("us-east-9x", "US_EAST_1") becomes a DNS failure
    for a made-up endpoint and reads as "AWS unreachable" (exit 3). A name
    that fits a partition's pattern passes even if this botocore does not
    list it yet: Regions newer than the installed SDK still work.
    """
    if any(re.fullmatch(rx.strip("^$"), region) for _, rx in region_patterns()):
        return
    patterns = "; ".join(f"{pid}: {rx}" for pid, rx in region_patterns())
    raise BadInputError(
        f"{source}: not an AWS Region name. Region names are lower case, e.g. us-east-1 or "
        f"eu-west-2, and match one partition's pattern ({patterns}). Fix: pass a Region "
        "name such as us-east-1 (`aws ec2 describe-regions` lists yours)."
    )


def _not_aws(response: dict[str, Any], protocol: str) -> str | None:
    """What a response is, when it is nothing an AWS API of ``protocol`` sends; else None."""
    body = response.get("body")
    if not isinstance(body, bytes):
        return None  # streamed: botocore does not parse it here
    status = int(response.get("status_code") or 0)
    ctype = str((response.get("headers") or {}).get("content-type", "")).lower()
    head = body.lstrip()[:1024].lower()
    ok = 200 <= status < 300
    # By the body, not the Content-Type: some endpoints (moto among them) label
    # JSON text/html. An HTML error page (a proxy's 403 or 502) still parses as
    # that status code, so only a successful one is refused here.
    if ok and (head.startswith(b"<!doctype html") or b"<html" in head):
        return f"an HTML page (HTTP {status}, {ctype or 'no Content-Type'})"
    if protocol not in _JSON_PROTOCOLS | _XML_PROTOCOLS:
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return f"{len(body)} bytes that are not text (HTTP {status})"
    if not ok or not text.strip():
        return None
    if protocol in _JSON_PROTOCOLS:
        try:
            parsed = json.loads(text)
        except ValueError:
            return f"a body that is not JSON (HTTP {status})"
        return None if isinstance(parsed, dict) else f"JSON that is no object (HTTP {status})"
    return None if text.lstrip().startswith("<") else f"a body that is not XML (HTTP {status})"


def refuse_non_aws(
    endpoint: str, operation_model: Any, response_dict: dict[str, Any], **_: Any
) -> None:
    """botocore's before-parse hook: raise NotAwsResponse for a response no AWS API sends.

    Without it a 200 HTML page parses as an empty answer (botocore keeps a
    body it cannot read as ``{"message": ...}``) and binary junk ends in a
    UnicodeDecodeError inside the parser.
    """
    what = _not_aws(response_dict, operation_model.service_model.resolved_protocol)
    if what is not None:
        raise NotAwsResponse(endpoint=endpoint, operation=operation_model.name, what=what)


def _timeout_config() -> Config | None:
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < 3600:
        raise BadInputError(
            f"{TIMEOUT_ENV}={raw!r}: not a number of seconds between 0 and 3600. Fix: e.g. "
            f"{TIMEOUT_ENV}=10, or unset it (connect 5 s, read 30 s)."
        )
    return Config(connect_timeout=seconds, read_timeout=seconds)


def client(
    session: boto3.Session,
    service: str,
    *,
    config: Config | None = None,
    fail_fast: bool = False,
) -> Any:
    """A client for ``service`` with our retry configuration.

    ``fail_fast``: for a check made once, bounded retries and timeouts
    (:data:`FAIL_FAST_CONFIG`). Typed as ``Any`` here; callers annotate with
    the mypy_boto3 client type under ``TYPE_CHECKING`` (the Powertools pattern).
    """
    cfg = RETRY_CONFIG.merge(FAIL_FAST_CONFIG) if fail_fast else RETRY_CONFIG
    if config is not None:
        cfg = cfg.merge(config)
    attempts = os.environ.get("AWS_MAX_ATTEMPTS", "")
    if attempts.isdigit() and int(attempts) > 0:
        # The standard AWS_MAX_ATTEMPTS setting is the user's explicit choice
        # (e.g. fail fast on an unreachable endpoint); a Config object would
        # otherwise silently override it.
        cfg = cfg.merge(Config(retries={"mode": "standard", "max_attempts": int(attempts)}))
    timeouts = _timeout_config()
    if timeouts is not None:
        cfg = cfg.merge(timeouts)
    _check_endpoint_env(service)
    try:
        made = session.client(service, config=cfg)  # type: ignore[call-overload]
    except ValueError as e:
        if not str(e).startswith(("Invalid endpoint", "Invalid IPv6 URL")):
            raise  # a credential or other setting: not the endpoint's
        raise BadInputError(
            f"AWS endpoint for {service}: {e} (from AWS_ENDPOINT_URL or the profile's "
            "endpoint_url). Fix: give a full URL such as http://127.0.0.1:5000, or unset it."
        ) from None
    made.meta.events.register("before-parse", partial(refuse_non_aws, made.meta.endpoint_url))
    return made
