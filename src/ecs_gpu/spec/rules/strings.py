"""Every string of the spec: no control characters, CDK tokens or CloudFormation references."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pydantic import BaseModel

from ecs_gpu.spec.messages import Problem, shorten
from ecs_gpu.spec.sections.base import CDK_TOKEN_RE

if TYPE_CHECKING:
    from ecs_gpu.spec.model import Spec


def _control_character(text: str) -> int | None:
    """Index of the first control character other than tab and newline, or None."""
    for i, c in enumerate(text):
        if unicodedata.category(c) == "Cc" and c not in "\t\n":
            return i
    return None


def _control_characters(spec: Spec) -> Iterator[Problem]:
    # A NUL ends the string in the container's C runtime (execve, getenv), and
    # the other control characters are a mistake (a pasted escape, \r from a
    # Windows file): refuse them here rather than hand ECS a value it mangles.
    # Every string is checked; most keys' patterns refuse them already.
    for key, value in _strings(spec, ""):
        at = _control_character(value)
        if at is not None:
            yield Problem(
                key,
                shorten(value),
                f"holds the control character U+{ord(value[at]):04X} at character {at}; "
                "containers take no NUL in a variable or argument, and other control "
                "characters are almost always a paste mistake",
                "remove it (tabs and newlines are allowed)",
            )


# CDK's token markers: "${Token[...]}" (strings), "#{Token[...]}" (lists). A user
# string holding one is read by CDK as a reference to an object it does not have
# (UnrecognizedTokenKey) or, worse, to one it has. CDK has no escape for a literal
# marker and no serving setting needs one, so they are refused, naming the key.
# CDK's number tokens are doubles near -1.9e289, below every numeric key's range.
# CloudFormation's dynamic references ("{{resolve:ssm:...}}") are resolved in
# any property at deploy time, so they are no literal text either.
CFN_DYNAMIC_REF_RE = re.compile(r"\{\{resolve:")


def _strings(value: object, key: str) -> Iterator[tuple[str, str]]:
    """(dotted key, string) for every string in a spec value, table keys included."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _strings(getattr(value, name), f"{key}.{name}" if key else name)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k, f"{key} (a name)")
            yield from _strings(v, f"{key}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _strings(v, f"{key}[{i}]")


def _cdk_tokens(spec: Spec) -> Iterator[Problem]:
    for key, text in _strings(spec, ""):
        if CFN_DYNAMIC_REF_RE.search(text):
            yield Problem(
                key,
                shorten(text),
                "holds a CloudFormation dynamic reference ({{resolve:...}}), which "
                "CloudFormation replaces at deploy time, and the value lands in the task "
                "definition in plain text",
                "put the secret or parameter's ARN under [service] secrets instead",
            )
        elif CDK_TOKEN_RE.search(text):
            yield Problem(
                key,
                shorten(text),
                "holds a CDK token marker (${Token[...]} or #{Token[...]}), which the "
                "template generator would read as a reference instead of your text",
                "write the value without it; a value from elsewhere belongs in [service] "
                "secrets (an ARN) rather than in the spec",
            )


# "${NAME}" or "$NAME" in a value the task or the load balancer uses as is: ECS
# passes a container's environment values and command arguments to the runtime
# verbatim, and the ALB requests the health-check path as written, so nothing
# expands the variable (a shell the entrypoint runs expands the command only).
_VARIABLE_RE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_:]*\}|\$[A-Za-z_][A-Za-z0-9_]*")
_LITERAL_KEYS = ("service.environment.", "service.command[", "load_balancer.health_check_path")
# Written to stay as they are: the dynamic linker expands these itself (ld.so(8)).
_KEPT_AS_WRITTEN = frozenset({"$ORIGIN", "${ORIGIN}", "$LIB", "${LIB}", "$PLATFORM", "${PLATFORM}"})


def _unexpanded_variables(spec: Spec) -> Iterator[Problem]:
    for key, text in _strings(spec, ""):
        if not key.startswith(_LITERAL_KEYS) and key != "service.metrics.path":
            continue
        found = next(
            (m for m in _VARIABLE_RE.finditer(text) if m.group(0) not in _KEPT_AS_WRITTEN),
            None,
        )
        if found is None or CDK_TOKEN_RE.search(text):
            continue
        shell = (
            " unless the image's entrypoint runs it through a shell"
            if key.startswith("service.command[")
            else ""
        )
        yield Problem(
            key,
            shorten(text),
            f"{found.group(0)} stays as written, if it was meant to expand: ECS and the load "
            f"balancer expand no variables{shell}",
            'write the literal value (e.g. HF_HOME = "/root/.cache/huggingface")',
        )
