"""pydantic's errors as spec messages: missing, unknown and mistyped keys, each naming the file,
the key and the value and saying how to fix it (spec/field_errors.py)."""

from __future__ import annotations

import copy
import tomllib
from typing import Any

import pytest

from .specdata import (
    FULL,
    dumps,
    one_problem,
    with_,
)


def without(section: str) -> str:
    doc = copy.deepcopy(FULL)
    del doc[section]
    return dumps(doc)


@pytest.mark.parametrize("section", ["service", "capacity", "scaling"])
def test_missing_required_section(section: str) -> None:
    line = one_problem(without(section), section)
    assert "Field required" in line
    assert f"Fix: add a [{section}] section" in line


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("service", "name"),
        ("service", "image"),
        ("capacity", "instance_type"),
        ("capacity", "max_instances"),
        ("scaling", "max_tasks"),
        ("network", "vpc_id"),
        ("network", "subnet_ids"),
    ],
)
def test_missing_required_key(section: str, key: str) -> None:
    line = one_problem(with_(section, **{key: ...}), f"{section}.{key}")
    assert "Field required" in line
    assert f"Fix: add `{key} = ...` under [{section}]" in line


@pytest.mark.parametrize(
    ("key", "value", "expect"),
    [
        ("gpus_per_task", 0, "service.gpus_per_task = 0: Input should be greater than or equal"),
        ("gpus_per_task", "1", "service.gpus_per_task = '1': Input should be a valid integer"),
    ],
)
def test_a_bad_gpu_count_is_reported_alone(key: str, value: object, expect: str) -> None:
    # cpu_units/memory_mib default from the instance: unset, they are not "required".
    line = one_problem(with_("service", cpu_units=..., memory_mib=..., **{key: value}), "service")
    assert expect in line


@pytest.mark.parametrize("itype", ["g5.xlarge2", "g9.xlarge", "G5.XLARGE", "m5.large"])
def test_a_bad_instance_type_is_reported_alone(itype: str) -> None:
    text = with_("service", cpu_units=..., memory_mib=...)
    doc = tomllib.loads(text)
    doc["capacity"]["instance_type"] = itype
    line = one_problem(dumps(doc), "capacity.instance_type", repr(itype))
    assert "Field required" not in line


def test_missing_capacity_is_reported_alone_when_task_size_is_derived() -> None:
    doc = copy.deepcopy(FULL)
    del doc["capacity"]
    del doc["service"]["cpu_units"], doc["service"]["memory_mib"]
    one_problem(dumps(doc), "capacity")


def test_unknown_key_suggests_the_nearest() -> None:
    line = one_problem(with_("service", gpu_per_task=1), "service.gpu_per_task", "1")
    assert "did you mean 'gpus_per_task'?" in line
    assert "known keys here:" in line


def test_unknown_section_suggests_the_nearest() -> None:
    doc = copy.deepcopy(FULL)
    doc["sevrice"] = {"x": 1}
    line = one_problem(dumps(doc), "sevrice")
    assert "did you mean 'service'?" in line


def test_section_that_is_not_a_table() -> None:
    doc: dict[str, Any] = copy.deepcopy(FULL)
    doc["scaling"] = 3
    line = one_problem(dumps(doc), "scaling", "3")
    assert "Fix: write it as a [section] table" in line


@pytest.mark.parametrize(
    ("section", "key", "value", "fix"),
    [
        ("service", "cpu_units", "3072", "whole number without quotes"),
        ("service", "cpu_units", 3072.0, "without a decimal point or exponent"),
        ("service", "cpu_units", True, "whole number without quotes"),
        ("scaling", "gpu_target_percent", "70", "number without quotes"),
        ("service", "image", 7, "quoted string"),
        ("service", "command", "serve --model x", "write a list"),
        ("service", "command", [1], "quoted string"),
        ("service", "environment", ["A=1"], "write a table"),
        ("service", "environment", {"A": 1}, "quoted string"),
        ("network", "subnet_ids", "subnet-0123456789abcdef0", "write a list"),
    ],
)
def test_wrong_type(section: str, key: str, value: Any, fix: str) -> None:
    line = one_problem(with_(section, **{key: value}), f"{section}.{key}")
    assert fix in line


def test_long_values_are_shortened_in_messages() -> None:
    doc: dict[str, Any] = copy.deepcopy(FULL)
    doc["scaling"] = ["x" * 500]
    line = one_problem(dumps(doc), "scaling")
    assert "..." in line and len(line) < 300


def test_huge_integer_for_a_literal_key() -> None:
    line = one_problem(with_("service", log_retention_days=10**400), "service.log_retention_days")
    assert "Fix: write a much smaller whole number" in line


def test_a_float_in_an_integer_key_says_so() -> None:
    line = one_problem(with_("capacity", max_instances=3e9), "capacity.max_instances")
    assert "without a decimal point or exponent" in line
