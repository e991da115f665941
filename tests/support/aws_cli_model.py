"""The `aws <service> <command> --opt ...` commands a text quotes, checked against botocore.

A doctor finding's fix often quotes an AWS CLI command for the user to run. The
CLI builds each command from botocore's service model: the service's name
(``ecs``, ``autoscaling``, ``application-autoscaling``), the operation's name in
kebab case (``UpdateCapacityProvider`` -> ``update-capacity-provider``) and one
option per member of its input shape, kebab case too (``--auto-scaling-group-name``;
a boolean member also as ``--no-...``). ``problems`` finds every such command in
a text and says what the CLI would refuse: a service or command that does not
exist, an option the operation does not have, an option without the value its
member needs, a JSON value its member's shape refuses (botocore's own parameter
validator), a required member left out, or an elided command (``...``), which
the user cannot run as quoted. The CLI's own global options (``--region``,
``--cli-input-json``, the pagination options, ...) are accepted everywhere, and
``--cli-input-json``/``--cli-input-yaml`` may carry the required members.
"""

from __future__ import annotations

import json
import re
import shlex
from functools import cache
from typing import Final

import botocore.session
from botocore import xform_name
from botocore.model import OperationModel, ServiceModel, Shape
from botocore.validate import ParamValidator

# The AWS CLI's options that are no model member (`aws help`, and the pagination
# options the CLI adds to a paginated operation).
GLOBAL_OPTIONS: Final = frozenset(
    {
        "--region",
        "--profile",
        "--output",
        "--query",
        "--endpoint-url",
        "--debug",
        "--no-verify-ssl",
        "--no-paginate",
        "--no-cli-pager",
        "--cli-binary-format",
        "--cli-read-timeout",
        "--cli-connect-timeout",
        "--color",
        "--no-sign-request",
        "--ca-bundle",
        "--max-items",
        "--page-size",
        "--starting-token",
        "--generate-cli-skeleton",
        "--cli-input-json",
        "--cli-input-yaml",
    }
)
# Options that stand for the whole input, required members included.
_WHOLE_INPUT: Final = frozenset({"--cli-input-json", "--cli-input-yaml"})

# Where a quoted command starts: `aws` as a word, then a service and a command.
_START: Final = re.compile(r"(?<![\w./-])aws ([a-z0-9][a-z0-9-]*) ([a-z0-9][a-z0-9-]*)")

_SESSION = botocore.session.get_session()


@cache
def _services() -> frozenset[str]:
    return frozenset(_SESSION.get_available_services())


@cache
def _service(name: str) -> ServiceModel:
    return _SESSION.get_service_model(name)


@cache
def _operations(name: str) -> dict[str, str]:
    """CLI command name -> operation name, for one service."""
    return {xform_name(op, "-"): op for op in _service(name).operation_names}


def _span(text: str, start: int) -> str:
    """The command from ``start`` to where the prose resumes: outside quotes, a
    backtick, a semicolon, a ``(`` after a space or an unbalanced ``)``, or ``.``/``,``
    before a space or the end."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "`;\n":
            break
        elif ch == "(" and text[i - 1].isspace():
            break  # prose in parentheses after the command
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch in ".," and (i + 1 == len(text) or text[i + 1].isspace()):
            break
        i += 1
    return text[start:i]


def commands(text: str) -> list[str]:
    """Every `aws ...` command the text quotes, as it quotes it."""
    starts = [m.start() for m in _START.finditer(text)]
    # A command ends where the next one starts, at the latest (prose joins them).
    ends = [*starts[1:], len(text)] if starts else []
    return [_span(text[:end], start) for start, end in zip(starts, ends, strict=True)]


def _json_value(name: str, member: Shape, values: list[str], shape: Shape) -> list[str]:
    """What botocore's parameter validator says of a JSON value given for a structure,
    list or map member ``name`` of the input ``shape`` (shorthand syntax, ``a=1,b=2``, is
    not checked; the input's own required members are _check's)."""
    if member.type_name not in ("structure", "list", "map") or len(values) != 1:
        return []
    if not values[0].lstrip().startswith(("{", "[")):
        return []
    try:
        value = json.loads(values[0])
    except ValueError as e:
        return [f"is not JSON ({e})"]
    report = ParamValidator().validate({name: value}, shape)
    return [
        line
        for line in report.generate_report().splitlines()
        if line and not line.startswith("Missing required parameter in input:")
    ]


def _check(command: str) -> list[str]:
    try:
        words = shlex.split(command)
    except ValueError as e:
        return [f"{command!r}: cannot be split as a shell command ({e})"]
    _, service, name, *rest = words
    if service not in _services():
        return [f"{command!r}: botocore has no service {service!r}"]
    ops = _operations(service)
    if name not in ops:
        return [f"{command!r}: {service} has no command {name!r}"]
    op: OperationModel = _service(service).operation_model(ops[name])
    shape = op.input_shape
    members = dict(shape.members) if shape is not None else {}
    by_option = {"--" + xform_name(m, "-"): m for m in members}
    out: list[str] = []
    given: set[str] = set()
    option: str | None = None
    values: list[str] = []
    # A trailing sentinel closes the last option.
    for word in [*rest, "--"]:
        if word == "..." or "..." in word:
            out.append(f"{command!r}: elided ({word!r}); quote the whole command")
            continue
        if not word.startswith("--"):
            if option is None:
                out.append(f"{command!r}: {word!r} is no option's value")
            values.append(word)
            continue
        if option is not None and option in by_option:
            member = members[by_option[option]]
            if member.type_name != "boolean" and not values:
                out.append(f"{command!r}: {option} needs a value ({member.type_name})")
            elif member.type_name == "boolean" and values:
                out.append(f"{command!r}: {option} is a flag and takes no value")
            elif member.type_name == "string" and member.enum and len(values) == 1:
                # The CLI passes a string as is and the service refuses one outside
                # its enum (no placeholder stands for an enum value in a fix).
                value = values[0]
                if value not in member.enum:
                    allowed = ", ".join(member.enum)
                    out.append(f"{command!r}: {option} {value!r} is not one of {allowed}")
            elif shape is not None:
                out += [
                    f"{command!r}: {option} {p}"
                    for p in _json_value(by_option[option], member, values, shape)
                ]
        option, values = word, []
        if word == "--":
            break
        if word in GLOBAL_OPTIONS:
            given.add(word)
            continue
        if word in by_option:
            given.add(by_option[word])
            continue
        positive = "--" + word.removeprefix("--no-")
        if word.startswith("--no-") and positive in by_option:
            if members[by_option[positive]].type_name != "boolean":
                out.append(f"{command!r}: {word} negates {positive}, which is no boolean")
            given.add(by_option[positive])
            option = None  # a negation takes no value
            continue
        out.append(f"{command!r}: {service} {name} has no option {word}")
    if shape is not None and not given & _WHOLE_INPUT:
        for m in shape.required_members:
            if m not in given:
                out.append(f"{command!r}: the required --{xform_name(m, '-')} is missing")
    return out


def problems(text: str) -> list[str]:
    """What the AWS CLI would refuse in each command the text quotes ([] when none)."""
    return [p for c in commands(text) for p in _check(c)]
