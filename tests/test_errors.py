"""The error hierarchy (errors.py): each error carries the exit code README.md documents."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ecs_gpu import errors
from ecs_gpu.errors import (
    AwsError,
    AwsRefused,
    BadInputError,
    EcsGpuError,
    ProblemsFound,
    SpecError,
    StackInterrupted,
)

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_exit_codes_are_the_ones_readme_documents() -> None:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("## Exit codes") :].split("\n## ", 1)[0]
    documented = {int(c) for c in re.findall(r"^\| (\d+) \|", table, re.M)}
    codes = {getattr(errors, n) for n in errors.__all__ if n.startswith("EXIT_")}
    assert documented == codes == {0, 1, 2, 3, 130, 141}
    assert errors.EXIT_INTERRUPTED == 128 + 2 and errors.EXIT_BROKEN_PIPE == 128 + 13


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (EcsGpuError, errors.EXIT_PROBLEMS),
        (ProblemsFound, errors.EXIT_PROBLEMS),
        (AwsRefused, errors.EXIT_PROBLEMS),
        (BadInputError, errors.EXIT_BAD_INPUT),
        (AwsError, errors.EXIT_AWS),
        (StackInterrupted, errors.EXIT_INTERRUPTED),
    ],
)
def test_each_error_carries_its_exit_code_and_its_message(
    error: type[EcsGpuError], code: int
) -> None:
    e = error("what went wrong")
    assert (e.exit_code, e.message, str(e)) == (code, "what went wrong", "what went wrong")


def test_an_aws_refusal_is_a_failed_operation_not_an_outage() -> None:
    assert issubclass(AwsRefused, ProblemsFound) and not issubclass(AwsRefused, AwsError)


def test_one_error_may_carry_another_code_without_changing_its_kind() -> None:
    e = ProblemsFound("nothing could be checked", exit_code=errors.EXIT_AWS)
    assert e.exit_code == errors.EXIT_AWS
    assert ProblemsFound("x").exit_code == errors.EXIT_PROBLEMS


def test_a_spec_error_is_bad_input_listing_each_problem_on_its_line() -> None:
    line = "g5.toml: scaling.max_tasks = 0: too few. Fix: raise it."
    one = SpecError("g5.toml", [line])
    assert isinstance(one, BadInputError) and one.exit_code == errors.EXIT_BAD_INPUT
    assert one.message == f"g5.toml: 1 problem in the spec:\n  - {line}"
    two = SpecError("g5.toml", ["a", "b"])
    assert (two.path, two.problems) == ("g5.toml", ["a", "b"])
    assert two.message == "g5.toml: 2 problems in the spec:\n  - a\n  - b"
