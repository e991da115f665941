"""pydantic's per-key errors as spec messages.

Each names the key, shows the value (shortened), and gives a fix by error type,
by key, or the validator's own; an unknown key gets the nearest known one.
"""

from __future__ import annotations

import difflib
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from ecs_gpu.contracts.ami import RECOMMENDED_COMMAND
from ecs_gpu.spec.messages import RuleError, shorten
from ecs_gpu.spec.model import Spec

_FIX_BY_TYPE = {
    "missing": "add it",
    "extra_forbidden": "remove it, or check its spelling",
    "int_type": "write a whole number without quotes, e.g. 4",
    "float_type": "write a number without quotes, e.g. 70",
    "string_type": "write a quoted string",
    "bool_type": "write true or false",
    "list_type": 'write a list, e.g. ["a", "b"]',
    "tuple_type": 'write a list, e.g. ["a", "b"]',
    "dict_type": 'write a table, e.g. { KEY = "value" }',
    "model_type": "write it as a [section] table",
    "greater_than": "raise it",
    "greater_than_equal": "raise it",
    "less_than": "lower it",
    "less_than_equal": "lower it",
    "string_pattern_mismatch": "correct its format",
    "too_short": "add at least one entry",
    "literal_error": "use one of the allowed values",
    "string_too_short": "give a non-empty value",
    "string_too_long": "shorten it",
    "finite_number": "write a finite number (nan and inf are not allowed)",
    # TOML integers are unbounded; pydantic stops reading past 4300 digits.
    "int_parsing_size": "write a much smaller whole number",
}

# Fixes for format errors, by key (list indices dropped): an example beats a regex.
_FIX_BY_KEY = {
    "capacity.capacity_reservation_id": "use the id EC2 shows for the On-Demand Capacity "
    'Reservation: "cr-" and 17 hex digits, e.g. "cr-0123456789abcdef0"',
    "capacity.ami_id": 'use an EC2 image id, "ami-" and 8 or 17 hex digits, e.g. the '
    f"recommended ECS GPU AMI that `{RECOMMENDED_COMMAND}` prints",
    "network.vpc_id": 'use the VPC id, e.g. "vpc-0123456789abcdef0"',
    "network.subnet_ids": 'use subnet ids, e.g. "subnet-0123456789abcdef0"',
    "network.public_subnet_ids": 'use subnet ids, e.g. "subnet-0123456789abcdef0"',
    "load_balancer.health_check_path": 'start it with "/" and use no spaces, e.g. "/health"',
    "alerts.sns_topic_arn": "use the ARN of an existing standard (not FIFO) SNS topic, e.g. "
    '"arn:aws:sns:us-east-1:123456789012:gpu-alerts" (`aws sns list-topics` shows them)',
    "alerts.email": 'write each as a full address, e.g. "oncall@example.com"',
    "service.secrets": "use the full ARN of a Secrets Manager secret, e.g. "
    '"arn:aws:secretsmanager:us-east-1:123456789012:secret:hf-token-AbCdEf" (optionally with '
    '":json-key::" after it), or of an SSM parameter, e.g. '
    '"arn:aws:ssm:us-east-1:123456789012:parameter/hf-token"',
    "service.health_check_path": 'start it with "/" and use no spaces, e.g. "/health"',
    "service.metrics.path": 'start it with "/" and use no spaces, e.g. "/metrics"',
    "service.metrics.running_metric": "use a Prometheus metric name as the server's /metrics "
    'page shows it, e.g. "vllm:num_requests_running"',
    "service.metrics.waiting_metric": "use a Prometheus metric name as the server's /metrics "
    'page shows it, e.g. "vllm:num_requests_waiting"',
}

# Fixes that say why a bound exists, by (key, error type).
_FIX_BY_KEY_AND_TYPE = {
    ("scaling.min_tasks", "greater_than_equal"): "raise it to 0 or more: 0 scales to zero "
    "(with a [load_balancer] or a [[scaling.schedule]] to wake it), 1 keeps a task serving",
    ("scaling.schedule", "tuple_type"): "write [[scaling.schedule]] tables, each with cron, "
    "min_tasks and max_tasks",
}


def _section_model(annotation: Any) -> type[BaseModel]:
    """The model of a [section] field, unwrapping ``X | None``."""
    for t in (annotation, *get_args(annotation)):
        if isinstance(t, type) and issubclass(t, BaseModel):
            return t
    raise TypeError(f"{annotation!r} is not a spec section")


# Derived from Spec, so a new section is known to the "did you mean" hints at once.
_SECTION_MODELS: dict[str, type[BaseModel]] = {
    name: _section_model(field.annotation) for name, field in Spec.model_fields.items()
}


def _key(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


def _lookup(data: Any, loc: tuple[int | str, ...]) -> tuple[bool, Any]:
    cur = data
    for part in loc:
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            return False, None
    return True, cur


def _suggest(loc: tuple[int | str, ...]) -> str:
    """For an unknown key, the nearest known one."""
    if len(loc) == 1:
        known = list(_SECTION_MODELS)
    elif len(loc) == 2 and isinstance(loc[0], str) and loc[0] in _SECTION_MODELS:
        known = list(_SECTION_MODELS[loc[0]].model_fields)
    else:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{hint}; known keys here: {', '.join(known)}"


# Keys Spec fills in from the instance (_default_task_size). They are missing
# only when the instance type or gpus_per_task is itself wrong, which has its
# own error: "Field required" beside it would send the user the wrong way.
_DERIVED_KEYS = {("service", "cpu_units"), ("service", "memory_mib")}


def _format_pydantic(path: str, data: dict[str, Any], err: ValidationError) -> list[str]:
    problems = []
    errors = err.errors(include_url=False)
    other = any(tuple(e["loc"]) not in _DERIVED_KEYS for e in errors)
    for e in errors:
        loc = tuple(e["loc"])
        if e["type"] == "missing" and loc in _DERIVED_KEYS and other:
            continue
        key = _key(loc)
        found, value = _lookup(data, loc)
        shown = ""
        if found and not isinstance(value, dict):
            text = repr(value)
            shown = f" = {shorten(text)}"
        msg = e["msg"].removeprefix("Value error, ")
        fix = _FIX_BY_TYPE.get(e["type"], "correct the value")
        cause = e.get("ctx", {}).get("error")
        if isinstance(cause, RuleError):
            fix = cause.fix
        fix = _FIX_BY_KEY_AND_TYPE.get((key, e["type"]), fix)
        if e["type"] == "string_pattern_mismatch":
            # Longest known prefix: a table's own keys (secrets.HF_TOKEN) share its fix.
            names = tuple(x for x in loc if isinstance(x, str))
            for n in range(len(names), 0, -1):
                if _key(names[:n]) in _FIX_BY_KEY:
                    fix = _FIX_BY_KEY[_key(names[:n])]
                    break
        if e["type"] == "int_type" and type(e.get("input")) is float:
            # 3e9 or 1.0 is a TOML float: quotes are not the problem.
            fix = "write a whole number without a decimal point or exponent, e.g. 4"
        if e["type"] == "float_type" and type(e.get("input")) is int:
            # A whole number past float range (TOML ints are unbounded): not a quoting problem.
            msg = "is too large to be read as a number"
            fix = "write a much smaller number"
        if e["type"] == "extra_forbidden":
            fix += _suggest(loc)
        if e["type"] == "missing" and len(loc) >= 2:
            fix = f"add `{loc[-1]} = ...` under [{_key(loc[:-1])}]"
        elif e["type"] == "missing":
            fix = f"add a [{loc[-1]}] section"
        problems.append(f"{path}: {key}{shown}: {msg}. Fix: {fix}.")
    return problems
