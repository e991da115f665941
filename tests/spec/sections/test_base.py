"""What every section shares (spec/sections/base.py): every schema constraint enforced, floats
finite, integers within 32 bits."""

from __future__ import annotations

import copy
import math
import re
from typing import Any

import numpy as np
import pytest

from ecs_gpu.errors import SpecError
from ecs_gpu.spec import (
    Spec,
    parse_spec,
)

from ..specdata import (
    _FIELD_TYPES,
    _SSM,
    CONC,
    FULL,
    PATH,
    SECTIONS,
    TABLES,
    _table_props,
    dumps,
    one_problem,
    problems,
    with_,
)


def _violations(prop: dict[str, Any]) -> list[tuple[str, Any]]:
    """Values that break each constraint of one schema property, named by constraint."""
    out: list[tuple[str, Any]] = []
    kind = prop.get("type")
    step: int | float = 1 if kind == "integer" else 0.5
    if "minimum" in prop:
        out.append(("minimum", prop["minimum"] - step))
    if "exclusiveMinimum" in prop:
        out.append(("exclusiveMinimum", prop["exclusiveMinimum"]))
    if "maximum" in prop:
        out.append(("maximum", prop["maximum"] + step))
    if "exclusiveMaximum" in prop:
        out.append(("exclusiveMaximum", prop["exclusiveMaximum"]))
    if "pattern" in prop:
        out.append(("pattern", "not valid!"))
    if prop.get("minLength"):
        out.append(("minLength", ""))
    if "maxLength" in prop:
        out.append(("maxLength", "/" + "a" * prop["maxLength"]))
    if "enum" in prop:
        out.append(("enum", 2 if all(isinstance(e, int) for e in prop["enum"]) else "nope"))
    if kind == "array":
        if prop.get("minItems"):
            out.append(("minItems", []))
        if "pattern" in prop.get("items", {}):
            out.append(("items.pattern", ["not valid!"]))
    values = prop.get("additionalProperties")
    if kind == "object" and isinstance(values, dict) and "pattern" in values:
        out.append(("values.pattern", {"HF_TOKEN": "not valid!"}))
    if kind in ("number", "integer"):
        out.append(("type", "1"))
        if kind == "number":
            out.append(("finite", math.nan))
            out.append(("finite", math.inf))
    elif kind == "string":
        out.append(("type", 1))
    elif kind == "boolean":
        # TOML has real booleans; a quoted "true" or a 1 is not one.
        out.append(("type", "true"))
        out.append(("type", 1))
    elif kind in ("array", "object"):
        out.append(("type", "x"))
    return out


def _schema_cases() -> list[Any]:
    cases = []
    for loc, prop in _table_props(Spec.model_json_schema()):
        for constraint, bad in _violations(prop):
            cases.append(pytest.param(loc, bad, id=f"{loc}-{constraint}"))
    return cases


SCHEMA_CASES = _schema_cases()


def with_at(loc: str, value: Any, base: dict[str, Any] = FULL) -> str:
    """``base`` with the key at dotted ``loc`` set, creating nested tables on the way."""
    doc: dict[str, Any] = copy.deepcopy(base)
    *tables, key = loc.split(".")
    cur = doc
    for j, t in enumerate(tables):
        # A new table starts with its required keys, so only ``loc`` is wrong.
        seed = TABLE_REQUIRED.get(".".join(tables[: j + 1]), {})
        cur = cur.setdefault(t, copy.deepcopy(seed))
    cur[key] = value
    return dumps(doc)


# The required keys of the optional tables FULL leaves out.
TABLE_REQUIRED: dict[str, dict[str, Any]] = {"capacity.spot": {"instance_types": ["g5.xlarge"]}}


def test_schema_cases_cover_every_key_of_every_section() -> None:
    assert set(SECTIONS) == set(Spec.model_fields)
    keys = {c.values[0] for c in SCHEMA_CASES}
    for table, model in TABLES.items():
        for key in model.model_fields:
            assert f"{table}.{key}" in keys, f"{table}.{key} has no bad-value case"
    # Spot-check that each constraint class is generated at least once.
    ids = {c.id.rsplit("-", 1)[1] for c in SCHEMA_CASES}
    assert {"minimum", "exclusiveMinimum", "maximum", "pattern", "minLength"} <= ids
    assert {"maxLength", "enum", "minItems", "items.pattern", "type", "finite"} <= ids
    assert "values.pattern" in ids


@pytest.mark.parametrize(("loc", "bad"), SCHEMA_CASES)
def test_every_schema_constraint_is_enforced(loc: str, bad: Any) -> None:
    found = problems(with_at(loc, bad))
    assert len(found) == 1, found
    line = found[0]
    assert line.startswith(f"{PATH}: {loc}"), line
    if not isinstance(bad, list | dict) or bad:
        # The value is echoed back (repr, shortened if long); in a list or table, the bad item.
        if isinstance(bad, list):
            shown = repr(bad[0])
        elif isinstance(bad, dict):
            shown = repr(next(iter(bad.values())))
        else:
            shown = repr(bad)
        assert shown[:40] in line, line  # long values are shortened with "..."
    assert "Fix: correct the value" not in line, line


_FLOAT_KEYS = sorted(loc for loc, t in _FIELD_TYPES.items() if t == "number")
_EXTREMES = [1e308, -1e308, 5e-324, -5e-324, -0.0, 1e-300]


def test_every_float_key_has_a_finite_range() -> None:
    props = dict(_table_props(Spec.model_json_schema()))
    assert _FLOAT_KEYS
    for loc in _FLOAT_KEYS:
        prop = props[loc]
        assert "minimum" in prop or "exclusiveMinimum" in prop, loc
        assert "maximum" in prop or "exclusiveMaximum" in prop, loc
        # Upper bounds at most 1e7: products of two keys stay far from overflow.
        high = prop.get("maximum", prop.get("exclusiveMaximum"))
        assert high is not None and high <= 1e7, loc


@pytest.mark.parametrize("loc", _FLOAT_KEYS)
@pytest.mark.parametrize("value", _EXTREMES, ids=repr)
def test_extreme_float_is_refused_or_harmless(loc: str, value: float) -> None:
    from ecs_gpu.sim.engine import simulate
    from ecs_gpu.sim.params import from_spec

    base = CONC if loc.startswith("scaling.") else FULL
    doc = copy.deepcopy(base)
    *tables, key = loc.split(".")
    cur = doc
    for t in tables:
        cur = cur.setdefault(t, {})
    cur[key] = value
    try:
        spec = parse_spec(dumps(doc), PATH)
    except SpecError as e:
        (line,) = e.problems
        assert line.startswith(f"{PATH}: {loc} = ") and (
            " Fix: raise it" in line or "lower it" in line
        )
        return
    # Accepted: only zeros and tiny positives of ge=0 keys, which are only ever
    # added or multiplied. -0.0 is read as +0.0.
    got: Any = spec.model_dump()
    for part in loc.split("."):
        got = got[part]
    assert isinstance(got, float) and 0.0 <= got < 1e-200, (loc, got)
    assert math.copysign(1.0, got) == 1.0, (loc, got)
    load = np.concatenate([np.full(30, 0.5), np.full(60, 6.0), np.full(30, 0.5)])
    result = simulate(from_spec(spec), load, step_s=10.0)
    for name, v in result.summary.items():
        if isinstance(v, float):
            assert math.isfinite(v), (loc, value, name, v)


@pytest.mark.parametrize(
    ("loc", "good"),
    [
        ("capacity.capacity_reservation_id", "cr-0123456789abcdef0"),
        ("capacity.ami_id", "ami-0123456789abcdef0"),
        ("network.vpc_id", "vpc-0123456789abcdef0"),
        ("alerts.sns_topic_arn", "arn:aws:sns:us-east-1:123456789012:gpu-alerts"),
        ("service.health_check_path", "/health"),
        ("service.metrics.running_metric", "vllm:num_requests_running"),
    ],
)
def test_trailing_newline_in_a_pattern_key_is_refused(loc: str, good: str) -> None:
    # Patterns are anchored at the very end: "$" does not match before a final newline.
    base = CONC if loc.startswith("service.metrics") else FULL
    assert parse_spec(with_at(loc, good, base), PATH)
    line = one_problem(with_at(loc, good + "\n", base), loc)
    assert repr(good + "\n") in line


def test_trailing_newline_in_a_secret_arn_is_refused() -> None:
    line = one_problem(with_("service", secrets={"HF_TOKEN": _SSM + "\n"}), "service.secrets")
    assert "service.secrets.HF_TOKEN" in line


def _int_keys() -> list[str]:
    """Every integer key of every table (the int32 bound applies to each)."""
    out = []
    for table, model in TABLES.items():
        for key, field in model.model_fields.items():
            if int in (field.annotation, *_flat_args(field.annotation)):
                out.append(f"{table}.{key}")
    return out


def _flat_args(annotation: Any) -> list[Any]:
    from typing import get_args

    out: list[Any] = []
    for a in get_args(annotation):
        out += [a, *_flat_args(a)]
    return out


def test_int_keys_are_found() -> None:
    keys = _int_keys()
    assert {"capacity.max_instances", "scaling.max_tasks", "capacity.warm_pool.min_size"} <= set(
        keys
    )
    assert "load_balancer.request_count_target" in keys and len(keys) >= 15


@pytest.mark.parametrize(
    "loc", [k for k in _int_keys() if k != "load_balancer.request_count_target"]
)
def test_every_integer_key_is_bounded_by_int32(loc: str) -> None:
    # 3,000,000,000 passes every ge bound, and AWS's integer fields are 32-bit.
    found = problems(with_at(loc, 3_000_000_000))
    line = next(line for line in found if line.startswith(f"{PATH}: {loc} = 3000000000: "))
    # Keys with a bound of their own (ports, percentages, gp3 sizes) report that one.
    own = re.search(r"less than or equal to (\d+)", line)
    assert ("larger than 2,147,483,647" in line and "32-bit" in line) or (
        own is not None and int(own[1]) <= 2**31 - 1
    ), line


def test_int32_itself_passes_the_bound() -> None:
    # The bound is AWS's, not lower: 2**31 - 1 is refused only by the rules that span keys.
    found = problems(with_("scaling", max_tasks=2**31 - 1))
    assert not any("32-bit" in line for line in found), found


def test_request_count_target_is_bounded_by_target_value() -> None:
    line = one_problem(
        with_("load_balancer", request_count_target=10**120), "load_balancer.request_count_target"
    )
    assert "above 2^360, the largest TargetValue" in line
    ok = parse_spec(with_("load_balancer", request_count_target=2**360), PATH)
    assert ok.load_balancer is not None and ok.load_balancer.request_count_target == 2**360
    one_problem(with_("load_balancer", request_count_target=1e120), "load_balancer")
