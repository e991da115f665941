"""How a spec message reads (spec/messages.py): FILE: KEY = VALUE: what. Fix: fix."""

from __future__ import annotations

import pytest

from ecs_gpu.spec.messages import Problem, RuleError

from .specdata import PATH, one_problem, with_


def test_problem_formats_to_the_one_line_shape() -> None:
    p = Problem("scaling.max_tasks", 5, "too many", "lower it")
    assert p.format("a.toml") == "a.toml: scaling.max_tasks = 5: too many. Fix: lower it."


def test_a_problem_shows_a_string_value_quoted_as_the_file_has_it() -> None:
    p = Problem("service.name", "VLLM", "must be lowercase", 'write name = "vllm"')
    assert p.format(PATH) == (
        f"{PATH}: service.name = 'VLLM': must be lowercase. Fix: write name = \"vllm\"."
    )


def test_a_rule_error_is_a_value_error_that_carries_its_fix() -> None:
    with pytest.raises(ValueError) as exc:
        raise RuleError("is wrong", "write it right")
    assert isinstance(exc.value, RuleError)
    assert (str(exc.value), exc.value.fix) == ("is wrong", "write it right")


def test_a_section_validators_rule_error_reaches_the_user_with_its_own_fix() -> None:
    # service.log_retention_days refuses `true` with a RuleError: its text is the "what",
    # its fix follows "Fix:" in the one line the user reads.
    line = one_problem(with_("service", log_retention_days=True), "service.log_retention_days")
    assert line == (
        f"{PATH}: service.log_retention_days = True: must be a whole number of days, not True. "
        "Fix: write one of CloudWatch Logs' retention periods, e.g. log_retention_days = 30."
    )
