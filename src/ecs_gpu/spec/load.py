"""Reading a spec: TOML text or a file to a validated Spec, or a SpecError with every problem."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import ValidationError

from ecs_gpu.errors import SpecError
from ecs_gpu.inputs import read_text
from ecs_gpu.spec.field_errors import _format_pydantic
from ecs_gpu.spec.model import Spec
from ecs_gpu.spec.rules import cross_field_problems

# A spec is a few kilobytes; ECS takes at most 64 KiB of container definitions.
MAX_SPEC_BYTES = 1024 * 1024


def parse_spec(text: str, path: str = "spec") -> Spec:
    """Parse and validate spec text; ``path`` names the source in errors."""
    try:
        return _parse_spec(text, path)
    except RecursionError:
        # tomllib (and reporting on the value) recurse once per nesting level.
        raise SpecError(
            path,
            [
                f"{path}: arrays or inline tables nested too deeply to read (a spec nests "
                "a few levels). Fix: write the values flat, as docs/spec.md shows."
            ],
        ) from None


def _parse_spec(text: str, path: str) -> Spec:
    # A byte-order mark is no part of the text (editors on Windows write one).
    text = text.removeprefix("\ufeff")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(
            path, [f"{path}: not valid TOML: {e}. Fix: correct the syntax there."]
        ) from None
    except ValueError:
        # tomllib lets Python's int() limit escape: an integer over 4300 digits.
        raise SpecError(
            path,
            [f"{path}: has an integer too long to read. Fix: write numbers with fewer digits."],
        ) from None
    try:
        spec = Spec.model_validate(data)
    except ValidationError as e:
        raise SpecError(path, _format_pydantic(path, data, e)) from None
    problems = cross_field_problems(spec, path)
    if problems:
        raise SpecError(path, problems)
    return spec


def load_spec(path: str | Path) -> Spec:
    """Read and validate the spec file at ``path`` (SPEC on the command line)."""
    text = read_text(
        path,
        option="SPEC",
        kind="spec",
        limit=MAX_SPEC_BYTES,
        fix="pass the TOML spec (docs/spec.md): a spec is a few kilobytes",
    )
    return parse_spec(text, str(path))
