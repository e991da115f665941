"""The spec: one bad-spec test per rule, and a fuzz test that nothing else ever escapes.

Every failing case asserts that the message names the file, the key and the
value and says how to fix it ("Fix:"), which is the project's error contract.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ecs_gpu import catalog
from ecs_gpu.errors import EXIT_BAD_INPUT, BadInputError, SpecError
from ecs_gpu.spec import (
    NOTES,
    RULES,
    AlertsSpec,
    CapacitySpec,
    LoadBalancerSpec,
    NetworkSpec,
    Problem,
    ScalingSpec,
    ServiceMetricsSpec,
    ServiceSpec,
    SimulationSpec,
    Spec,
    WarmPoolSpec,
    cross_field_problems,
    load_spec,
    parse_spec,
    shm_limit_mib,
    shm_memory_needed_mib,
    spec_warnings,
)

PATH = "specs/bad.toml"

SECTIONS: dict[str, type[Any]] = {
    "service": ServiceSpec,
    "capacity": CapacitySpec,
    "scaling": ScalingSpec,
    "network": NetworkSpec,
    "load_balancer": LoadBalancerSpec,
    "alerts": AlertsSpec,
    "simulation": SimulationSpec,
}
# Tables inside sections: [service.metrics], [capacity.warm_pool].
TABLES: dict[str, type[Any]] = {
    **SECTIONS,
    "service.metrics": ServiceMetricsSpec,
    "capacity.warm_pool": WarmPoolSpec,
}

# A spec that sets every key of every section, so each test breaks exactly one rule.
FULL: dict[str, Any] = {
    "service": {
        "name": "vllm-g5",
        "image": "vllm/vllm-openai:v0.11.0",
        "gpus_per_task": 1,
        "cpu_units": 3072,
        "memory_mib": 12288,
        "container_port": 8000,
        "environment": {"HF_HOME": "/root/.cache/huggingface"},
        "command": ["--model", "Qwen/Qwen2.5-7B-Instruct-AWQ"],
        "nvidia_driver_capabilities": "utility,compute",
        "log_retention_days": 30,
    },
    "capacity": {
        "instance_type": "g5.xlarge",
        "min_instances": 2,
        "max_instances": 4,
        "target_capacity_percent": 100,
        "capacity_reservation_id": "cr-0123456789abcdef0",
        "reserved_instances": 2,
        "ami_id": "ami-0123456789abcdef0",
        "root_volume_gib": 200,
    },
    "scaling": {
        "min_tasks": 1,
        "max_tasks": 4,
        "gpu_target_percent": 70.0,
        "cpu_target_percent": 70.0,
        "scale_in_cooldown_s": 300,
        "scale_out_cooldown_s": 60,
    },
    "network": {
        "vpc_id": "vpc-0123456789abcdef0",
        "subnet_ids": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
        "public_subnet_ids": ["subnet-0123456789abcdef2", "subnet-0123456789abcdef3"],
    },
    "load_balancer": {
        "scheme": "internal",
        "health_check_path": "/health",
        "certificate_arn": "arn:aws:acm:us-east-1:123456789012:certificate/abc-123",
        "ingress_cidrs": ["10.0.0.0/16"],
        "request_count_target": 100,
    },
    # email is the alternative to a topic ARN (never both): tests below.
    "alerts": {"sns_topic_arn": "arn:aws:sns:us-east-1:123456789012:gpu-alerts"},
    "simulation": {},
}

# FULL scaling on concurrency: the image serves metrics and the target is set.
CONC: dict[str, Any] = copy.deepcopy(FULL)
CONC["service"]["metrics"] = {"preset": "vllm"}
CONC["scaling"].update(signal="concurrency", target_concurrency_per_task=10.0)
# Written out without gpu_guard it drives no policy, which is a note (_unused_gpu_target).
del CONC["scaling"]["gpu_target_percent"]

MINIMAL = """\
[service]
name = "svc"
image = "nginx"
cpu_units = 1024
memory_mib = 2048

[capacity]
instance_type = "g5.xlarge"
max_instances = 2

[scaling]
max_tasks = 2
"""


# --- a small TOML writer (tomllib reads only) --------------------------------------


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        # JSON string escapes are valid TOML basic-string escapes; TOML also bans raw DEL.
        return json.dumps(v, ensure_ascii=False).replace("\x7f", "\\u007f")
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def _toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else _toml_value(k)


def dumps(doc: dict[str, Any]) -> str:
    head = [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    body = []
    for k, v in doc.items():
        if isinstance(v, dict):
            body.append(f"[{_toml_key(k)}]")
            body.extend(f"{_toml_key(kk)} = {_toml_value(vv)}" for kk, vv in v.items())
            body.append("")
    return "\n".join([*head, "", *body])


def with_(section: str, **changes: Any) -> str:
    """FULL with keys of one section changed; a value of ... deletes the key."""
    doc = copy.deepcopy(FULL)
    for k, v in changes.items():
        if v is ...:
            doc[section].pop(k, None)
        else:
            doc[section][k] = v
    return dumps(doc)


def without(section: str) -> str:
    doc = copy.deepcopy(FULL)
    del doc[section]
    return dumps(doc)


def problems(text: str) -> list[str]:
    with pytest.raises(SpecError) as exc:
        parse_spec(text, PATH)
    err = exc.value
    assert err.path == PATH
    assert err.exit_code == EXIT_BAD_INPUT
    assert err.problems
    for line in err.problems:
        assert line.startswith(f"{PATH}: "), line
        assert ". Fix: " in line, line
    return err.problems


def one_problem(text: str, key: str, value: str | None = None) -> str:
    """The single problem ``text`` has; it must name ``key`` and show ``value``."""
    found = problems(text)
    assert len(found) == 1, found
    line = found[0]
    assert line.startswith(f"{PATH}: {key}"), line
    if value is not None:
        assert f"{key} = {value}" in line or value in line, line
    return line


# --- the valid baselines ------------------------------------------------------------


def test_full_spec_is_valid() -> None:
    spec = parse_spec(dumps(FULL), PATH)
    assert spec.capacity.reserved_instances == 2
    assert spec.load_balancer is not None and spec.load_balancer.scheme == "internal"
    assert spec.tasks_per_instance == 1


def test_minimal_spec_takes_the_documented_defaults() -> None:
    spec = parse_spec(MINIMAL, PATH)
    assert spec.service.gpus_per_task == 1
    assert spec.service.container_port == 8000
    assert spec.service.nvidia_driver_capabilities == "utility,compute"
    assert spec.service.log_retention_days == 30
    assert spec.capacity.min_instances == 0
    assert spec.capacity.target_capacity_percent == 100
    assert spec.capacity.root_volume_gib == 200
    assert spec.scaling.min_tasks == 1
    assert spec.scaling.gpu_target_percent == spec.scaling.cpu_target_percent == 70.0
    assert (spec.scaling.scale_in_cooldown_s, spec.scaling.scale_out_cooldown_s) == (300, 60)
    assert spec.network is None and spec.load_balancer is None


def test_example_spec_is_valid() -> None:
    spec = load_spec(Path(__file__).parents[1] / "examples" / "g5-vllm.toml")
    assert spec.instance.name == "g5.xlarge"


# --- structure: missing, unknown, wrong type ----------------------------------------


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


# --- every constraint pydantic enforces, generated from the schema ------------------


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in prop:
        return dict(defs[prop["$ref"].rsplit("/", 1)[1]])
    if "anyOf" in prop:
        others = [p for p in prop["anyOf"] if p.get("type") != "null"]
        assert len(others) == 1, prop
        return _resolve(others[0], defs)
    return prop


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


def _table_props(schema: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(dotted key, resolved property) for every key of every table, nested tables included."""
    defs = schema["$defs"]
    out: list[tuple[str, dict[str, Any]]] = []

    def walk(prefix: str, model: dict[str, Any]) -> None:
        for key, prop in model["properties"].items():
            resolved = _resolve(prop, defs)
            out.append((f"{prefix}.{key}", resolved))
            if "properties" in resolved:  # a nested [a.b] table: its own keys too
                walk(f"{prefix}.{key}", resolved)

    for section, ref in schema["properties"].items():
        walk(section, _resolve(ref, defs))
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
    for t in tables:
        cur = cur.setdefault(t, {})
    cur[key] = value
    return dumps(doc)


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


# --- field rules beyond the schema --------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["VLLM", "9lives", "ends-", "a--b", "x", "a" * 33, "under_score", "dot.name", "spa ce"],
)
def test_bad_service_name(name: str) -> None:
    line = one_problem(with_("service", name=name), "service.name", repr(name))
    assert "lowercase letters, digits and single hyphens" in line
    assert 'Fix: rename it, e.g. name = "vllm-g5"' in line


@pytest.mark.parametrize("name", ["ab", "a" * 32, "vllm-g5", "a1-b2-c3"])
def test_good_service_names(name: str) -> None:
    assert parse_spec(with_("service", name=name), PATH).service.name == name


def test_image_with_spaces() -> None:
    line = one_problem(with_("service", image="vllm/vllm openai"), "service.image")
    assert "'vllm/vllm openai'" in line and "no spaces" in line


def test_empty_image() -> None:
    line = one_problem(with_("service", image=""), "service.image", "''")
    assert "Fix: give a non-empty value" in line


def test_nvidia_visible_devices_is_refused() -> None:
    env = {"HF_HOME": "/x", "NVIDIA_VISIBLE_DEVICES": "all"}
    line = one_problem(with_("service", environment=env), "service.environment")
    assert "NVIDIA_VISIBLE_DEVICES = 'all' must not be set" in line
    assert "ECS sets it to the GPUs it assigned" in line
    assert "Fix: remove NVIDIA_VISIBLE_DEVICES from [service] environment" in line


def test_nvidia_driver_capabilities_belongs_to_its_own_key() -> None:
    env = {"NVIDIA_DRIVER_CAPABILITIES": "all"}
    line = one_problem(with_("service", environment=env), "service.environment")
    assert "NVIDIA_DRIVER_CAPABILITIES = 'all'" in line
    assert "write nvidia_driver_capabilities = 'all' under [service]" in line


@pytest.mark.parametrize("var", ["1X", "A-B", "A B", ""])
def test_bad_environment_variable_name(var: str) -> None:
    line = one_problem(with_("service", environment={var: "v"}), "service.environment")
    assert f"{var!r} is not a valid environment variable name" in line


@pytest.mark.parametrize(
    ("caps", "bad"), [("utility,gpu", "'gpu'"), ("", "''"), ("compute,,utility", "''")]
)
def test_unknown_driver_capability(caps: str, bad: str) -> None:
    line = one_problem(
        with_("service", nvidia_driver_capabilities=caps), "service.nvidia_driver_capabilities"
    )
    assert f"unknown capability {bad}" in line
    assert "utility,compute" in line


def test_driver_capabilities_are_normalised() -> None:
    spec = parse_spec(with_("service", nvidia_driver_capabilities=" compute , utility"), PATH)
    assert spec.service.nvidia_driver_capabilities == "compute,utility"


@pytest.mark.parametrize(
    ("itype", "why"),
    [
        ("p2.xlarge", "20230912"),
        ("g3.4xlarge", "previous-generation"),
        ("g2.2xlarge", "deprecated"),
        ("g6f.large", "fractions of an L4"),
        ("fargate", "Fargate has no GPU support"),
        ("windows", "Windows containers"),
        ("m5.large", "not an ECS-supported GPU instance type"),
        ("G5.XLARGE", "use 'g5.xlarge'"),
    ],
)
def test_refused_instance_type(itype: str, why: str) -> None:
    line = one_problem(with_("capacity", instance_type=itype), "capacity.instance_type")
    assert repr(itype) in line and why in line
    assert "Fix: pick a type that `ecs-gpu catalog` lists" in line


@pytest.mark.parametrize(
    ("cidr", "what"),
    [
        ("not-a-cidr", "is not an IPv4 CIDR"),
        ("10.0.0.0/33", "is not an IPv4 CIDR"),
        ("2001:db8::/32", "is not an IPv4 CIDR"),
        ("10.0.0.1/16", "host bits set"),
        ("10.0.0.0", "prefix missing"),
    ],
)
def test_bad_ingress_cidr(cidr: str, what: str) -> None:
    line = one_problem(with_("load_balancer", ingress_cidrs=[cidr]), "load_balancer.ingress_cidrs")
    assert repr(cidr) in line and what in line


def test_ingress_cidr_with_host_bits_suggests_the_network() -> None:
    line = one_problem(
        with_("load_balancer", ingress_cidrs=["10.0.0.1/16"]), "load_balancer.ingress_cidrs"
    )
    assert "Fix: write '10.0.0.0/16'" in line


# --- cross-field rules --------------------------------------------------------------


def test_gpus_per_task_beyond_the_instance() -> None:
    line = one_problem(with_("service", gpus_per_task=2), "service.gpus_per_task", "2")
    assert "g5.xlarge has only 1 GPU(s)" in line
    assert "request at most 1" in line


def test_gpus_per_task_fits_a_multi_gpu_instance() -> None:
    text = with_("service", gpus_per_task=4)
    text = text.replace('"g5.xlarge"', '"g5.12xlarge"')
    assert parse_spec(text, PATH).tasks_per_instance == 1


def test_cpu_beyond_the_instance() -> None:
    line = one_problem(with_("service", cpu_units=4097), "service.cpu_units", "4097")
    assert "registers 4096 CPU units" in line and "request at most 4096" in line


def test_cpu_exactly_the_instance_fits() -> None:
    assert parse_spec(with_("service", cpu_units=4096), PATH).service.cpu_units == 4096


def test_memory_must_fit_after_the_ecs_reserve() -> None:
    sched = catalog.lookup("g5.xlarge").schedulable_memory_mib
    assert parse_spec(with_("service", memory_mib=sched), PATH).service.memory_mib == sched
    line = one_problem(with_("service", memory_mib=sched + 1), "service.memory_mib", str(sched + 1))
    assert f"about {sched} MiB is left for tasks" in line
    assert f"{catalog.ECS_RESERVED_MEMORY_MIB} MiB" in line
    assert f"request at most {sched}" in line


def test_nominal_memory_is_refused() -> None:
    one_problem(with_("service", memory_mib=16384), "service.memory_mib", "16384")


def test_min_instances_above_max() -> None:
    text = with_("capacity", min_instances=5, capacity_reservation_id=..., reserved_instances=...)
    line = one_problem(text, "capacity.min_instances", "5")
    assert "greater than capacity.max_instances (4)" in line


def test_min_tasks_above_max() -> None:
    line = one_problem(with_("scaling", min_tasks=4, max_tasks=3), "scaling.min_tasks", "4")
    assert "greater than scaling.max_tasks (3)" in line


def test_min_tasks_zero_says_why_there_is_no_scale_to_zero() -> None:
    line = one_problem(with_("scaling", min_tasks=0), "scaling.min_tasks", "0")
    assert "INSUFFICIENT_DATA" in line and "does not scale to zero" in line


def test_reserved_instances_needs_a_reservation_id() -> None:
    text = with_("capacity", capacity_reservation_id=...)
    line = one_problem(text, "capacity.reserved_instances", "2")
    assert "without capacity.capacity_reservation_id" in line


def test_reservation_id_needs_reserved_instances() -> None:
    text = with_("capacity", reserved_instances=...)
    line = one_problem(text, "capacity.capacity_reservation_id", "'cr-0123456789abcdef0'")
    assert "add `reserved_instances = N` under [capacity]" in line


@pytest.mark.parametrize("good", ["ami-12c6146b", "ami-0123456789abcdef0"])
def test_ami_id_takes_both_ec2_id_lengths(good: str) -> None:
    assert parse_spec(with_("capacity", ami_id=good), PATH).capacity.ami_id == good


@pytest.mark.parametrize("bad", ["ami-0123", "AMI-0123456789ABCDEF0", "i-0123456789abcdef0"])
def test_ami_id_that_is_no_image_id_says_where_to_read_one(bad: str) -> None:
    line = one_problem(with_("capacity", ami_id=bad), "capacity.ami_id", repr(bad))
    assert "aws ssm get-parameter --name /aws/service/ecs/optimized-ami/" in line


def test_reserved_instances_above_min_instances() -> None:
    text = with_("capacity", min_instances=1, reserved_instances=2)
    line = one_problem(text, "capacity.reserved_instances", "2")
    assert "greater than capacity.min_instances (1)" in line
    assert "set min_instances to at least 2" in line


def test_reserved_instances_above_max_instances() -> None:
    found = problems(with_("capacity", min_instances=6, reserved_instances=6))
    assert any(
        line.startswith(f"{PATH}: capacity.reserved_instances = 6")
        and "greater than capacity.max_instances (4)" in line
        for line in found
    ), found


def test_max_tasks_must_be_reachable() -> None:
    line = one_problem(with_("scaling", max_tasks=5), "scaling.max_tasks", "5")
    assert "4 x g5.xlarge fit only 4 tasks (1 per instance)" in line
    assert "raise capacity.max_instances to 5, or lower max_tasks to 4" in line


def test_max_tasks_reachable_counts_tasks_per_instance() -> None:
    # g6.48xlarge: 8 GPUs and 15 network interfaces, so the GPUs bind (g5.48xlarge's 7
    # interfaces would, see the ENI test below).
    text = with_("scaling", max_tasks=16).replace('"g5.xlarge"', '"g6.48xlarge"')
    spec = parse_spec(text.replace("memory_mib = 12288", "memory_mib = 4096"), PATH)
    assert spec.tasks_per_instance == 8
    line = one_problem(
        with_("scaling", max_tasks=33)
        .replace('"g5.xlarge"', '"g6.48xlarge"')
        .replace("memory_mib = 12288", "memory_mib = 4096"),
        "scaling.max_tasks",
        "33",
    )
    assert "raise capacity.max_instances to 5, or lower max_tasks to 32" in line


def _fit_spec(
    instance: str, gpus: int, cpu: int, mem: int, max_instances: int, max_tasks: int
) -> str:
    doc = copy.deepcopy(FULL)
    doc["service"].update(gpus_per_task=gpus, cpu_units=cpu, memory_mib=mem)
    doc["capacity"].update(instance_type=instance, max_instances=max_instances)
    doc["scaling"]["max_tasks"] = max_tasks
    return dumps(doc)


# One case per resource that can bind tasks per instance: (instance, GPUs, CPU units,
# MiB per task) -> per instance, and what the message must say about it.
RESOURCES = ("GPUs:", "CPU:", "memory:", "network interfaces:")
BINDING_CASES = [
    pytest.param(
        ("g6.48xlarge", 2, 1024, 4096), 4, "GPUs: 8 on the instance, 2 per task", id="GPU"
    ),
    pytest.param(
        ("g4dn.12xlarge", 1, 16384, 4096), 3, "CPU: 49152 units on the instance", id="CPU"
    ),
    pytest.param(
        ("g6.12xlarge", 1, 1024, 92149),
        2,
        "memory: about 184299 MiB left for tasks, 92149 per task",
        id="memory",
    ),
    pytest.param(
        ("g5.48xlarge", 1, 1024, 4096),
        6,
        "network interfaces: every task (awsvpc network mode) needs its own ENI and "
        "g5.48xlarge takes 7",
        id="ENI",
    ),
]


@pytest.mark.parametrize(("task", "per", "why"), BINDING_CASES)
def test_max_tasks_message_names_the_binding_resource(
    task: tuple[str, int, int, int], per: int, why: str
) -> None:
    instance = task[0]
    # Exactly what 2 instances hold is valid; one more task is not.
    assert parse_spec(_fit_spec(*task, 2, 2 * per), PATH).tasks_per_instance == per
    line = one_problem(_fit_spec(*task, 2, 2 * per + 1), "scaling.max_tasks", str(2 * per + 1))
    assert f"2 x {instance} fit only {2 * per} tasks ({per} per instance); limited by " in line
    assert why in line
    assert f"raise capacity.max_instances to 3, or lower max_tasks to {2 * per}" in line
    # Only the binding resource is named; the ENI fix appears only when ENIs bind.
    assert [r for r in RESOURCES if r in line] == [r for r in RESOURCES if why.startswith(r)]
    eni_bound = why.startswith("network interfaces")
    assert ("more network interfaces (`ecs-gpu catalog`" in line) is eni_bound
    assert ("awsvpcTrunking" in line) is eni_bound


def test_eight_one_gpu_tasks_never_fit_one_g5_48xlarge() -> None:
    # The case: 8 GPUs, but 7 network interfaces, one of them the instance's.
    text = _fit_spec("g5.48xlarge", 1, 1024, 4096, 2, 16)
    line = one_problem(text, "scaling.max_tasks", "16")
    assert "2 x g5.48xlarge fit only 12 tasks (6 per instance)" in line
    assert "raise capacity.max_instances to 3, or lower max_tasks to 12" in line
    # Two GPUs per task: four tasks need four ENIs, so the GPUs bind again.
    assert parse_spec(_fit_spec("g5.48xlarge", 2, 1024, 4096, 2, 8), PATH).tasks_per_instance == 4


def test_tied_resources_are_all_named() -> None:
    # g5.xlarge with FULL's task: one GPU, 4096 // 3072 CPU and 14888 // 12288 MiB: all 1.
    line = one_problem(with_("scaling", max_tasks=5), "scaling.max_tasks", "5")
    assert "limited by GPUs: 1 on the instance, 1 per task and by CPU: " in line
    assert "and by memory: about 14888 MiB" in line
    assert "network interfaces" not in line


def test_huge_max_tasks_does_not_overflow() -> None:
    line = one_problem(with_("scaling", max_tasks=10**400), "scaling.max_tasks")
    assert "is larger than 2,147,483,647" in line


def test_min_tasks_must_be_reachable() -> None:
    found = problems(with_("scaling", min_tasks=5, max_tasks=5))
    assert any(line.startswith(f"{PATH}: scaling.min_tasks = 5") for line in found), found


def test_load_balancer_needs_two_subnets() -> None:
    text = with_("network", subnet_ids=["subnet-0123456789abcdef0"])
    line = one_problem(text, "network.subnet_ids", "['subnet-0123456789abcdef0']")
    assert "at least two Availability Zones" in line


def test_one_subnet_is_fine_without_a_load_balancer() -> None:
    doc = copy.deepcopy(FULL)
    del doc["load_balancer"]
    doc["network"]["subnet_ids"] = ["subnet-0123456789abcdef0"]
    assert parse_spec(dumps(doc), PATH).load_balancer is None


@pytest.mark.parametrize("public", [..., ["subnet-0123456789abcdef2"]])
def test_internet_facing_needs_two_public_subnets(public: Any) -> None:
    doc = copy.deepcopy(FULL)
    doc["load_balancer"]["scheme"] = "internet-facing"
    if public is ...:
        del doc["network"]["public_subnet_ids"]
    else:
        doc["network"]["public_subnet_ids"] = public
    line = one_problem(dumps(doc), "load_balancer.scheme", "'internet-facing'")
    assert "public_subnet_ids" in line and 'scheme = "internal"' in line


def test_internet_facing_without_network_uses_the_stack_vpc() -> None:
    doc = copy.deepcopy(FULL)
    del doc["network"]
    doc["load_balancer"]["scheme"] = "internet-facing"
    assert parse_spec(dumps(doc), PATH).network is None


def test_duplicate_subnets() -> None:
    dup = ["subnet-0123456789abcdef0", "subnet-0123456789abcdef0"]
    line = one_problem(with_("network", subnet_ids=dup), "network.subnet_ids")
    assert "subnet-0123456789abcdef0 more than once" in line


@pytest.mark.parametrize(
    ("section", "key", "bad", "fix"),
    [
        ("scaling", "gpu_target_percent", 0.0, "raise it"),
        ("scaling", "gpu_target_percent", 100.5, "lower it"),
        ("scaling", "cpu_target_percent", -1.0, "raise it"),
        ("scaling", "cpu_target_percent", 101.0, "lower it"),
        ("capacity", "target_capacity_percent", 0, "raise it"),
        ("capacity", "target_capacity_percent", 101, "lower it"),
    ],
)
def test_targets_in_zero_to_hundred(section: str, key: str, bad: Any, fix: str) -> None:
    line = one_problem(with_(section, **{key: bad}), f"{section}.{key}", repr(bad))
    assert f"Fix: {fix}" in line


@pytest.mark.parametrize("good", [100, 1])
def test_target_bounds_are_inclusive_at_100(good: int) -> None:
    spec = parse_spec(with_("capacity", target_capacity_percent=good), PATH)
    assert spec.capacity.target_capacity_percent == good
    assert parse_spec(with_("scaling", gpu_target_percent=100.0), PATH).scaling.gpu_target_percent


def test_all_problems_are_reported_at_once() -> None:
    text = with_("scaling", min_tasks=5, max_tasks=4).replace(
        "gpus_per_task = 1", "gpus_per_task = 2"
    )
    found = problems(text)
    keys = {line.split(" = ")[0].removeprefix(f"{PATH}: ") for line in found}
    assert {"service.gpus_per_task", "scaling.min_tasks"} <= keys


# --- files ---------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(BadInputError) as exc:
        load_spec(path)
    assert str(path) in exc.value.message and "Fix: check the path" in exc.value.message
    assert exc.value.exit_code == EXIT_BAD_INPUT


def test_directory_instead_of_file(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match=r"SPEC .*: is a folder, not a spec file") as exc:
        load_spec(tmp_path)
    assert "Fix:" in exc.value.message


def test_nul_in_path() -> None:
    with pytest.raises(BadInputError, match="Fix: check the path"):
        load_spec("spec\0.toml")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(MINIMAL.replace('"nginx"', '"ngi\xf1x"').encode("latin-1"))
    with pytest.raises(BadInputError) as exc:
        load_spec(path)
    assert exc.value.exit_code == EXIT_BAD_INPUT
    at = MINIMAL.index("ngi") + 3
    line = MINIMAL[:at].count("\n") + 1
    assert exc.value.message.startswith(
        f"SPEC {path}: not UTF-8 text: byte {at} (line {line}) is 0xf1. "
    )
    assert "Fix: save the spec as UTF-8" in exc.value.message


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text(MINIMAL + "\n[scaling\n", encoding="utf-8")
    with pytest.raises(SpecError) as exc:
        load_spec(path)
    line = exc.value.problems[0]
    assert line.startswith(f"{path}: not valid TOML") and "line 14" in line and "Fix:" in line


def test_load_spec_names_the_file_in_rule_errors(tmp_path: Path) -> None:
    path = tmp_path / "rules.toml"
    path.write_text(MINIMAL.replace("max_tasks = 2", "max_tasks = 3"), encoding="utf-8")
    with pytest.raises(SpecError) as exc:
        load_spec(path)
    assert exc.value.problems[0].startswith(f"{path}: scaling.max_tasks = 3")


# --- the CLI -------------------------------------------------------------------------


def test_cli_validate_bad_spec_exits_2_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ecs_gpu import cli

    path = tmp_path / "bad.toml"
    path.write_text(with_("service", gpus_per_task=2), encoding="utf-8")
    assert cli.main(["validate", str(path)]) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "Traceback" not in out
    assert "service.gpus_per_task" in out and "Fix:" in out


# --- fuzz: nothing but a Spec or a SpecError/BadInputError naming the file ------------

FUZZ_PATH = "fuzz/spec.toml"

_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
# Edge values a user could type: boundaries, TOML's unbounded integers, nan/inf, ids.
_edges = st.sampled_from(
    [
        *(0, -1, 1, 2, 100, 101, 65536, 2**63, 10**400, -(10**400), 0.0, -0.0, 1e308, 0.5),
        *(5e-324, -1e308, True, "0.0.0.0/0", "concurrency", "triton", "Hibernated"),
        *("", "-", "g5.xlarge", "g5.48xlarge", "p2.xlarge", "cr-0123456789abcdef0", "/health"),
        *("internet-facing", "subnet-0123456789abcdef9", "10.0.0.0/8", "all"),
    ]
)
_scalars = st.one_of(
    _edges,
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    _text,
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=8,
)


@st.composite
def _mutated_specs(draw: st.DrawFn) -> str:
    """FULL with 1-3 random edits, mostly to real keys so most reach the rules."""
    doc: dict[str, Any] = copy.deepcopy(FULL)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        section = draw(st.sampled_from([*SECTIONS] * 3 + ["sevrice", "extra"]))
        action = draw(st.sampled_from(["set"] * 6 + ["delete", "replace-section", "drop-section"]))
        if action == "drop-section":
            doc.pop(section, None)
        elif action == "replace-section":
            doc[section] = draw(_values)
        else:
            table = doc.setdefault(section, {})
            if not isinstance(table, dict):
                continue
            known = list(SECTIONS[section].model_fields) if section in SECTIONS else ["x"]
            key = draw(
                st.one_of(st.sampled_from(known), _text)
                if draw(st.booleans())
                else st.sampled_from(known)
            )
            if action == "delete":
                table.pop(key, None)
            else:
                table[key] = draw(_values)
    return dumps(doc)


_INT_EDGES = st.sampled_from([0, -1, 1, 2, 3, 8, 64, 127, 128, 4096, 65535, 65536, 10**400])
# Floats that break arithmetic downstream (the simulator multiplies and divides them):
# overflow to inf, underflow to 0, a signed zero.
_FLOAT_EDGES = st.sampled_from([1e308, -1e308, 5e-324, -0.0, 0.0, 1e-300, 86400.5, 1e6])
_SECRET_ARNS = st.sampled_from(
    [
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:hf-token-AbCdEf",
        "arn:aws:ssm:us-east-1:123456789012:parameter/hf-token",
    ]
)
_ENV_NAMES = st.one_of(st.sampled_from(["HF_TOKEN", "HF_HOME", "NVIDIA_VISIBLE_DEVICES"]), _text)
# Every key of every table (nested [service.metrics] and [capacity.warm_pool] included),
# by its JSON-schema type.
_FIELD_TYPES = {
    loc: prop.get("type", "string")
    for loc, prop in _table_props(Spec.model_json_schema())
    if "properties" not in prop  # a nested table is reached through its own keys
}
_TYPED: dict[str, st.SearchStrategy[Any]] = {
    "integer": st.one_of(_INT_EDGES, st.integers()),
    "number": st.one_of(
        _INT_EDGES,
        _FLOAT_EDGES,
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(-5, 200),
    ),
    "boolean": st.booleans(),
    "string": st.one_of(_edges.filter(lambda v: isinstance(v, str)), _text),
    "array": st.lists(st.one_of(_edges.filter(lambda v: isinstance(v, str)), _text), max_size=3),
    "object": st.dictionaries(_ENV_NAMES, st.one_of(_SECRET_ARNS, _text), max_size=3),
}


def test_typed_fuzz_reaches_every_key() -> None:
    for table, model in TABLES.items():
        for key, field in model.model_fields.items():
            if table + "." + key not in TABLES:
                assert (table + "." + key) in _FIELD_TYPES, (table, key, field)
    assert set(_FIELD_TYPES.values()) <= set(_TYPED)


@st.composite
def _typed_mutations(draw: st.DrawFn) -> str:
    """FULL with 1-3 keys set to values of the key's own type, to reach the cross-field rules."""
    # Both baselines: the GPU signal (FULL) and concurrency (CONC), so the rules of
    # either reach their edges.
    doc: dict[str, Any] = copy.deepcopy(draw(st.sampled_from([FULL, CONC])))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        loc = draw(st.sampled_from(sorted(_FIELD_TYPES)))
        *tables, key = loc.split(".")
        cur = doc
        for t in tables:
            cur = cur.setdefault(t, {})
        cur[key] = draw(_TYPED[_FIELD_TYPES[loc]])
    return dumps(doc)


def _check_outcome(run: Callable[[], Spec], path: str) -> None:
    try:
        spec = run()
    except SpecError as e:
        assert e.path == path
        assert e.problems
        for line in e.problems:
            assert line.startswith(f"{path}: "), line
            assert "Fix: " in line, line
            assert "Fix: correct the value" not in line, line  # every rule says how
    except BadInputError as e:
        assert path in e.message
    else:
        assert isinstance(spec, Spec)
        # A valid spec is one whose service can run: at least one task fits an instance.
        assert spec.tasks_per_instance >= 1
        for line in spec.warnings(path):
            assert line.startswith(f"{path}: ") and ". Fix: " in line, line
        # Its numbers reach the simulator finite.
        from ecs_gpu.sim.params import from_spec

        for name, v in vars_of(from_spec(spec)).items():
            if isinstance(v, float):
                assert math.isfinite(v), (name, v)


def vars_of(obj: Any) -> dict[str, Any]:
    """A slotted dataclass's fields by name."""
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


_FUZZ = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@_FUZZ
@given(_mutated_specs())
def test_fuzz_structurally_mutated_specs(text: str) -> None:
    _check_outcome(lambda: parse_spec(text, FUZZ_PATH), FUZZ_PATH)


@_FUZZ
@given(_typed_mutations())
def test_fuzz_well_typed_values(text: str) -> None:
    _check_outcome(lambda: parse_spec(text, FUZZ_PATH), FUZZ_PATH)


@_FUZZ
@given(st.text(max_size=300))
def test_fuzz_random_text(text: str) -> None:
    _check_outcome(lambda: parse_spec(text, FUZZ_PATH), FUZZ_PATH)


@_FUZZ
@given(st.binary(max_size=300))
def test_fuzz_random_bytes(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "spec.toml"
    path.write_bytes(data)
    _check_outcome(lambda: load_spec(path), str(path))


@_FUZZ
@given(st.binary(max_size=200))
def test_fuzz_bytes_spliced_into_a_valid_spec(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    raw = dumps(FULL).encode()
    cut = len(data) % (len(raw) + 1)
    path = tmp_path_factory.mktemp("splice") / "spec.toml"
    path.write_bytes(raw[:cut] + data + raw[cut:])
    _check_outcome(lambda: load_spec(path), str(path))


# --- docs/spec.md stays the reference of the code -------------------------------------


def _doc_rows() -> dict[str, dict[str, list[str]]]:
    doc = (Path(__file__).parents[1] / "docs" / "spec.md").read_text(encoding="utf-8")
    rows: dict[str, dict[str, list[str]]] = {}
    section = ""
    for line in doc.splitlines():
        if line.startswith("## ") or line.startswith("### "):
            heading = re.match(r"#{2,3} `\[([\w.]+)\]`", line)
            section = heading.group(1) if heading else ""
            if section:
                rows[section] = {}
        elif line.startswith("| `") and section:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[section][cells[0].strip("`")] = cells
    return rows


# Keys whose default Spec derives from other keys: the cell starts with what the
# model says and goes on to say what is filled in, e.g. "required, or ...".
_DERIVED_DEFAULTS = {"service.cpu_units", "service.memory_mib", "scaling.signal"}


def _doc_default(field: Any) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, int | float):
        return f"`{value:g}`"
    return f"`{value}`"


def test_docs_spec_documents_every_key_with_its_default() -> None:
    rows = _doc_rows()
    assert set(rows) == set(TABLES)
    for section, model in TABLES.items():
        missing = set(model.model_fields) - set(rows[section])
        assert not missing, f"document [{section}] {sorted(missing)} in docs/spec.md"
        assert set(rows[section]) <= set(model.model_fields), f"docs/spec.md [{section}] is stale"
        for key, field in model.model_fields.items():
            default = rows[section][key][2]
            expected = _doc_default(field)
            if f"{section}.{key}" in _DERIVED_DEFAULTS:
                expected = {"required": "the task's share"}.get(expected, expected)
                assert default.startswith((expected + " ", expected + ",")), (section, key, default)
            elif expected == "none":
                # Unset keys may say what "none" means, e.g. "none (the image's)".
                assert default.startswith("none"), (section, key, default)
            else:
                assert default == expected, (section, key, default)


def test_integer_too_long_to_read() -> None:
    # tomllib raises a plain ValueError (Python's int() digit limit) for this.
    found = problems(MINIMAL.replace("max_instances = 2", "max_instances = 1" + "0" * 5000))
    assert found == [
        f"{PATH}: has an integer too long to read. Fix: write numbers with fewer digits."
    ]


def test_huge_integer_for_a_literal_key() -> None:
    line = one_problem(with_("service", log_retention_days=10**400), "service.log_retention_days")
    assert "Fix: write a much smaller whole number" in line


# --- [alerts] -----------------------------------------------------------------------


def test_alerts_are_optional_and_off_by_default() -> None:
    assert parse_spec(MINIMAL, PATH).alerts is None


def test_alerts_topic_arn_is_kept() -> None:
    spec = parse_spec(dumps(FULL), PATH)
    assert spec.alerts is not None
    assert spec.alerts.sns_topic_arn == "arn:aws:sns:us-east-1:123456789012:gpu-alerts"
    assert spec.alerts.email is None


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sns:us-gov-west-1:123456789012:alerts",
        "arn:aws-cn:sns:cn-north-1:123456789012:my_alerts-2",
    ],
)
def test_alerts_topic_arn_in_other_partitions(arn: str) -> None:
    spec = parse_spec(with_("alerts", sns_topic_arn=arn), PATH)
    assert spec.alerts is not None and spec.alerts.sns_topic_arn == arn


@pytest.mark.parametrize(
    "arn",
    [
        "arn:aws:sns:us-east-1:12345678901:alerts",  # 11-digit account
        "arn:aws:sqs:us-east-1:123456789012:alerts",  # a queue, not a topic
        "arn:aws:sns:us-east-1:123456789012:alerts.fifo",  # alarms cannot publish to FIFO
        "arn:aws:sns:us-east-1:123456789012:alerts:0b1c2d3e",  # a subscription ARN
        "gpu-alerts",  # a bare name
    ],
)
def test_bad_alerts_topic_arn_names_an_example(arn: str) -> None:
    line = one_problem(with_("alerts", sns_topic_arn=arn), "alerts.sns_topic_arn", repr(arn))
    assert '"arn:aws:sns:us-east-1:123456789012:gpu-alerts"' in line
    assert "not FIFO" in line


def test_alerts_email_creates_a_topic_of_its_own() -> None:
    spec = parse_spec(
        with_("alerts", sns_topic_arn=..., email=["oncall@example.com", "ml@example.com"]), PATH
    )
    assert spec.alerts is not None
    assert spec.alerts.email == ["oncall@example.com", "ml@example.com"]
    assert spec.alerts.sns_topic_arn is None


def test_alerts_email_must_be_an_address() -> None:
    line = one_problem(
        with_("alerts", sns_topic_arn=..., email=["oncall@example.com", "oncall"]),
        "alerts.email[1]",
        "'oncall'",
    )
    assert '"oncall@example.com"' in line


def test_alerts_email_listed_twice() -> None:
    line = one_problem(
        with_("alerts", sns_topic_arn=..., email=["a@example.com", "A@example.com"]),
        "alerts.email",
    )
    assert "a@example.com more than once" in line and "Fix: list each address once" in line


def test_alerts_topic_and_email_together_are_refused() -> None:
    line = one_problem(with_("alerts", email=["a@example.com"]), "alerts.email")
    assert "sns_topic_arn" in line and "not both" in line


def test_empty_alerts_section_is_refused() -> None:
    line = one_problem(with_("alerts", sns_topic_arn=...), "alerts")
    assert "nobody would be told" in line
    assert "sns_topic_arn" in line and "email" in line


def test_unknown_alerts_key_suggests_the_nearest() -> None:
    line = one_problem(with_("alerts", emails=["a@example.com"]), "alerts.emails")
    assert "did you mean 'email'?" in line
    assert "known keys here: sns_topic_arn, email" in line


# --- keys added for issues 8 and 9 ------------------------------------------------


def test_task_size_defaults_to_its_share_of_the_instance() -> None:
    doc = copy.deepcopy(FULL)
    doc["service"].pop("cpu_units")
    doc["service"].pop("memory_mib")
    spec = parse_spec(dumps(doc), PATH)
    it = spec.instance
    share = spec.service.gpus_per_task / it.gpus
    assert spec.service.cpu_units == int(it.cpu_units * share)
    assert spec.service.memory_mib == int(it.schedulable_memory_mib * share)
    assert (spec.service.cpu_units, spec.service.memory_mib) == (4096, 14888)  # g5.xlarge
    assert spec.tasks_per_instance == 1


def test_task_size_not_guessed_for_unknown_instance_type() -> None:
    doc = copy.deepcopy(FULL)
    doc["service"].pop("cpu_units")
    doc["capacity"]["instance_type"] = "g5.bogus"
    lines = problems(dumps(doc))
    assert any("capacity.instance_type" in line for line in lines)


def test_signal_defaults_to_concurrency_when_the_image_serves_metrics() -> None:
    doc = copy.deepcopy(FULL)
    assert parse_spec(dumps(doc), PATH).scaling.signal == "task-gpus"
    doc["service"]["metrics"] = {"preset": "tgi"}
    doc["scaling"]["target_concurrency_per_task"] = 10.0
    spec = parse_spec(dumps(doc), PATH)
    assert spec.scaling.signal == "concurrency"
    assert spec.scaling.fast_scale_out_enabled
    assert spec.service.metrics is not None
    assert spec.service.metrics.names == ("tgi_batch_current_size", "tgi_queue_size")


def test_old_gpu_metric_key_is_read_as_signal() -> None:
    spec = parse_spec(with_("scaling", gpu_metric="asg-average"), PATH)
    assert spec.scaling.signal == "asg-average"
    assert spec.scaling.gpu_metric == "asg-average"
    (line,) = problems(with_("scaling", gpu_metric="asg-average", signal="task-gpus"))
    assert "scaling" in line and "Fix: remove gpu_metric" in line


@pytest.mark.parametrize("field", ["name"])
def test_trailing_newline_in_a_name_is_refused(field: str) -> None:
    (line,) = problems(with_("service", **{field: "vllm-g5\n"}))
    assert "service.name" in line


def test_trailing_newline_in_an_env_key_is_refused() -> None:
    (line,) = problems(with_("service", environment={"HF_HOME\n": "/x"}))
    assert "HF_HOME" in line and "environment" in line


def test_secret_must_be_an_arn_and_the_fix_shows_one() -> None:
    (line,) = problems(with_("service", secrets={"HF_TOKEN": "hf_abc"}))
    assert "service.secrets.HF_TOKEN = 'hf_abc'" in line
    assert "arn:aws:secretsmanager:" in line.split("Fix:")[1]
    ok = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hf-token-AbCdEf:token::"
    assert parse_spec(with_("service", secrets={"HF_TOKEN": ok}), PATH).service.secrets


def test_shared_memory_is_automatic_for_multi_gpu_tasks_only() -> None:
    one = parse_spec(with_("service", gpus_per_task=1), PATH)
    assert one.service.shm_mib is None
    doc = copy.deepcopy(FULL)
    doc["service"]["shared_memory_mib"] = 2048
    assert parse_spec(dumps(doc), PATH).service.shm_mib == 2048
    p5 = (Path(__file__).parent.parent / "examples" / "p5-8gpu.toml").read_text()
    assert parse_spec(p5, PATH).service.shm_mib == 16384


# --- issue 9: rules as functions, bad input, the new keys' cross-field rules ----------


def edited(base: dict[str, Any], **changes: dict[str, Any]) -> str:
    """``base`` with keys changed per section (a value of ... deletes the key)."""
    doc = copy.deepcopy(base)
    for section, keys in changes.items():
        table = doc.setdefault(section, {})
        for k, v in keys.items():
            if v is ...:
                table.pop(k, None)
            else:
                table[k] = v
    return dumps(doc)


def test_problem_formats_to_the_one_line_shape() -> None:
    p = Problem("scaling.max_tasks", 5, "too many", "lower it")
    assert p.format("a.toml") == "a.toml: scaling.max_tasks = 5: too many. Fix: lower it."


def test_full_and_concurrency_baselines_are_valid_without_notes() -> None:
    for base in (FULL, CONC):
        spec = parse_spec(dumps(base), PATH)
        assert spec.warnings(PATH) == []
        assert spec_warnings(spec, PATH) == []
    assert parse_spec(dumps(CONC), PATH).scaling.fast_scale_out_enabled


# One spec per rule that breaks exactly that rule: the registry cannot grow a rule
# without a bad-spec case here (test_every_rule_has_a_bad_spec).
RULE_CASES: dict[str, str] = {
    "_task_gpus": with_("service", gpus_per_task=2),
    "_task_cpu": with_("service", cpu_units=4097),
    "_task_memory": with_("service", memory_mib=16384),
    "_instance_bounds": with_(
        "capacity", min_instances=5, capacity_reservation_id=..., reserved_instances=...
    ),
    "_task_bounds": with_("scaling", min_tasks=4, max_tasks=3),
    "_reservation_pair": with_("capacity", reserved_instances=...),
    "_reservation_floor": with_("capacity", min_instances=1, reserved_instances=2),
    "_max_tasks_reachable": with_("scaling", max_tasks=5),
    "_min_tasks_reachable": with_("scaling", min_tasks=5, max_tasks=5),
    "_signal_needs_metrics": edited(CONC, service={"metrics": ...}),
    "_signal_needs_target": edited(CONC, scaling={"target_concurrency_per_task": ...}),
    "_fast_path_needs_concurrency": with_("scaling", fast_scale_out=True),
    "_guard_needs_concurrency": with_("scaling", gpu_guard=True),
    "_shm_fits_memory": with_("service", shared_memory_mib=9217),
    # 128 units are the sidecar's, leaving the server none.
    "_sidecar_room": edited(CONC, service={"cpu_units": 128}),
    # 500 GiB of weights on one A10G (22,888 MiB usable).
    "_model_fits_gpu_memory": with_("service", model_size_gib=500.0),
    # 200 GiB of weights on the smallest root volume.
    "_root_volume_holds_the_model": edited(
        FULL, service={"model_size_gib": 20.0}, capacity={"root_volume_gib": 30}
    ),
    "_ingress_rules_quota": with_(
        "load_balancer", ingress_cidrs=[f"10.0.{i}.0/24" for i in range(61)]
    ),
    "_control_characters": with_("service", environment={"A": "x\0y"}),
    "_cdk_tokens": with_("service", environment={"A": "${Token[TOKEN.1]}"}),
    # 70 KB of environment: over ECS's 64 KiB task definition.
    "_task_definition_size": with_("service", environment={"BIG": "x" * 70_000}),
    "_secret_not_also_plain": with_(
        "service",
        secrets={"HF_HOME": "arn:aws:ssm:us-east-1:123456789012:parameter/hf-home"},
    ),
    "_metrics_port": edited(CONC, service={"metrics": {"preset": "triton"}}),
    # gp3's baseline 3,000 IOPS carry at most 750 MiB/s.
    "_gp3_ratios": with_("capacity", root_volume_throughput_mibps=1000),
    "_warm_pool": with_("capacity", warm_pool={"min_size": 5}),
    "_duplicate_subnets": with_(
        "network", subnet_ids=["subnet-0123456789abcdef0", "subnet-0123456789abcdef0"]
    ),
    "_load_balancer_subnets": with_("network", subnet_ids=["subnet-0123456789abcdef0"]),
    "_public_listener_needs_cidrs": with_(
        "load_balancer", scheme="internet-facing", ingress_cidrs=...
    ),
    "_alerts": with_("alerts", sns_topic_arn=...),
}

NOTE_CASES: dict[str, str] = {
    "_open_to_the_internet": with_(
        "load_balancer", scheme="internet-facing", ingress_cidrs=["0.0.0.0/0"]
    ),
    "_plain_http_on_the_internet": with_(
        "load_balancer", scheme="internet-facing", certificate_arn=..., ingress_cidrs=["10.0.0.0/8"]
    ),
    "_unused_concurrency_target": with_("scaling", target_concurrency_per_task=8.0),
    "_running_warm_pool": with_("capacity", warm_pool={"pool_state": "Running"}),
    "_unused_gpu_target": edited(CONC, scaling={"gpu_target_percent": 70.0}),
    "_unused_panic_threshold": with_("scaling", panic_threshold_percent=150.0),
    # 2 req/s x 8 s per request (the simulation defaults): a task holds 16.
    "_target_above_simulated_capacity": edited(CONC, scaling={"target_concurrency_per_task": 17.0}),
}


def _unchecked(text: str) -> Spec:
    """A spec that passes field validation, before the cross-field rules run."""
    return Spec.model_validate(tomllib.loads(text))


def test_every_rule_has_a_bad_spec() -> None:
    assert set(RULE_CASES) == {r.__name__ for r in RULES}
    assert set(NOTE_CASES) == {n.__name__ for n in NOTES}


@pytest.mark.parametrize("name", sorted(RULE_CASES))
def test_each_rule_refuses_its_bad_spec(name: str) -> None:
    (rule,) = [r for r in RULES if r.__name__ == name]
    text = RULE_CASES[name]
    mine = [p.format(PATH) for p in rule(_unchecked(text))]
    assert mine, name
    found = problems(text)
    # The rule's own lines are what the loader reports (others may add theirs).
    assert set(mine) <= set(found), (mine, found)
    for p in rule(_unchecked(text)):
        assert p.key and p.what and p.fix and not p.fix.endswith(".")


@pytest.mark.parametrize("name", sorted(NOTE_CASES))
def test_each_note_is_raised_on_a_valid_spec(name: str) -> None:
    (note,) = [n for n in NOTES if n.__name__ == name]
    spec = parse_spec(NOTE_CASES[name], PATH)  # notes never refuse a spec
    mine = [p.format(PATH) for p in note(spec)]
    assert mine and set(mine) <= set(spec.warnings(PATH))
    for line in mine:
        assert line.startswith(f"{PATH}: ") and ". Fix: " in line


def test_cross_field_problems_keeps_its_signature_for_validate() -> None:
    spec = _unchecked(with_("scaling", max_tasks=5))
    (line,) = cross_field_problems(spec, PATH)
    assert line.startswith(f"{PATH}: scaling.max_tasks = 5: ")
    assert cross_field_problems(parse_spec(dumps(FULL), PATH)) == []


# --- the signal and its companions --------------------------------------------------


def test_concurrency_without_metrics_says_to_add_the_table() -> None:
    line = one_problem(edited(CONC, service={"metrics": ...}), "scaling.signal", "'concurrency'")
    assert "[service.metrics]" in line and 'preset = "vllm"' in line.split("Fix:")[1]
    assert 'signal = "task-gpus"' in line


def test_concurrency_without_a_target_suggests_one() -> None:
    line = one_problem(
        edited(CONC, scaling={"target_concurrency_per_task": ..., "signal": ...}),
        "scaling.signal",
        "'concurrency'",
    )
    # Defaults: 2 req/s x 8 s per request = 16 at full load; 70 % of it keeps headroom.
    assert "target_concurrency_per_task = N" in line and "holds 16" in line
    assert "about 11.2" in line and "by default when [service.metrics] is present" in line


def test_explicit_concurrency_without_metrics_or_target_reports_both() -> None:
    found = problems(with_("scaling", signal="concurrency"))
    assert len(found) == 2
    assert all(line.startswith(f"{PATH}: scaling.signal = 'concurrency'") for line in found)


def test_fast_scale_out_needs_the_concurrency_signal() -> None:
    line = one_problem(with_("scaling", fast_scale_out=True), "scaling.fast_scale_out", "True")
    assert "'task-gpus'" in line and "10-second" in line
    assert parse_spec(with_("scaling", fast_scale_out=False), PATH).scaling.fast_scale_out is False
    spec = parse_spec(edited(CONC, scaling={"fast_scale_out": False}), PATH)
    assert not spec.scaling.fast_scale_out_enabled


@pytest.mark.parametrize("signal", ["task-gpus", "asg-average"])
def test_gpu_guard_needs_the_concurrency_signal(signal: str) -> None:
    line = one_problem(with_("scaling", gpu_guard=True, signal=signal), "scaling.gpu_guard")
    assert "already the signal" in line and "Fix: remove gpu_guard" in line
    spec = parse_spec(edited(CONC, scaling={"gpu_guard": True}), PATH)
    assert spec.scaling.gpu_guard and spec.scaling.gpu_metric == "task-gpus"


def test_an_unused_concurrency_target_is_a_note_not_an_error() -> None:
    spec = parse_spec(with_("scaling", target_concurrency_per_task=8.0), PATH)
    (note,) = spec.warnings(PATH)
    assert note.startswith(f"{PATH}: scaling.target_concurrency_per_task = 8.0: is not used")


def test_a_gpu_target_without_a_gpu_policy_is_a_note() -> None:
    spec = parse_spec(edited(CONC, scaling={"gpu_target_percent": 80}), PATH)
    (note,) = spec.warnings(PATH)
    assert note.startswith(f"{PATH}: scaling.gpu_target_percent = 80.0: is not used")
    assert "gpu_guard = true" in note.split("Fix:")[1]
    # With the guard, or on a GPU signal (FULL writes it too), it sets a policy's target.
    guarded = edited(CONC, scaling={"gpu_target_percent": 80, "gpu_guard": True})
    assert parse_spec(guarded, PATH).warnings(PATH) == []
    assert parse_spec(dumps(FULL), PATH).warnings(PATH) == []


@pytest.mark.parametrize(
    ("base", "scaling", "why"),
    [
        (FULL, {}, "signal = 'task-gpus' has no 10-second series"),
        (FULL, {"signal": "asg-average"}, "signal = 'asg-average'"),
        (CONC, {"fast_scale_out": False}, "fast_scale_out = false"),
    ],
)
def test_a_panic_threshold_with_the_fast_path_off_is_a_note(
    base: dict[str, Any], scaling: dict[str, Any], why: str
) -> None:
    spec = parse_spec(edited(base, scaling={**scaling, "panic_threshold_percent": 150}), PATH)
    (note,) = spec.warnings(PATH)
    assert note.startswith(f"{PATH}: scaling.panic_threshold_percent = 150.0: is not used")
    assert why in note
    # Left at its default it is no note, and with the fast path on it is used.
    assert parse_spec(edited(base, scaling=scaling), PATH).warnings(PATH) == []
    on = parse_spec(edited(CONC, scaling={"panic_threshold_percent": 150}), PATH)
    assert on.scaling.fast_scale_out_enabled and on.warnings(PATH) == []


# --- shared memory ------------------------------------------------------------------


def test_shared_memory_leaves_a_quarter_of_the_task_to_the_server() -> None:
    # 12288 MiB: a quarter (3072) stays for the server, so 9216 is the most.
    assert shm_limit_mib(12288) == 9216
    assert parse_spec(with_("service", shared_memory_mib=9216), PATH).service.shm_mib == 9216
    line = one_problem(
        with_("service", shared_memory_mib=9217), "service.shared_memory_mib", "9217"
    )
    assert "counts inside the task's memory_mib (12288)" in line
    assert "lower it to at most 9216, or raise memory_mib to at least 12290" in line


def test_shared_memory_on_a_small_task_keeps_one_gib() -> None:
    assert shm_limit_mib(2048) == 1024  # 1 GiB, not a quarter, binds here
    line = one_problem(
        with_("service", memory_mib=1024, shared_memory_mib=512), "service.shared_memory_mib"
    )
    assert "lower it" not in line and "raise memory_mib to at least 1536" in line
    # The suggested size is enough.
    ok = with_("service", memory_mib=1536, shared_memory_mib=512)
    assert parse_spec(ok, PATH).service.shm_mib == 512


@pytest.mark.parametrize("shm", [1, 64, 1000, 4096, 16384, 10**6])
def test_shared_memory_fix_always_names_a_memory_that_fits(shm: int) -> None:
    need = shm_memory_needed_mib(shm)
    assert shm_limit_mib(need) >= shm and shm_limit_mib(need - 1) < shm


# --- secrets ------------------------------------------------------------------------

_SSM = "arn:aws:ssm:us-east-1:123456789012:parameter/hf-token"


def test_secret_also_in_environment_is_refused() -> None:
    line = one_problem(
        with_("service", secrets={"HF_HOME": _SSM, "HF_TOKEN": _SSM}), "service.secrets"
    )
    assert "service.secrets = ['HF_HOME']" in line
    assert "Fix: remove HF_HOME from environment" in line


@pytest.mark.parametrize("name", ["1X", "A-B", "HF_TOKEN\n", "", "HF TOKEN"])
def test_bad_secret_name(name: str) -> None:
    line = one_problem(with_("service", secrets={name: _SSM}), "service.secrets")
    assert f"{name!r} is not a valid environment variable name" in line
    assert "HF_TOKEN = " in line.split("Fix:")[1]


@pytest.mark.parametrize("name", ["NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"])
def test_reserved_secret_name(name: str) -> None:
    line = one_problem(with_("service", secrets={name: _SSM}), "service.secrets")
    assert f"{name} must not be set" in line
    assert f"Fix: remove {name} from [service] secrets" in line


# --- [service.metrics] --------------------------------------------------------------


def test_triton_needs_its_metrics_port() -> None:
    text = edited(CONC, service={"metrics": {"preset": "triton"}})
    line = one_problem(text, "service.metrics.preset", "'triton'")
    assert "not on container_port (8000)" in line and "add `port = 8002`" in line
    spec = parse_spec(edited(CONC, service={"metrics": {"preset": "triton", "port": 8002}}), PATH)
    assert spec.service.metrics is not None
    # Triton publishes no running series: only the queue counts unless one is named.
    assert spec.service.metrics.names == ("nv_inference_pending_request_count",)


def test_metrics_on_another_port_is_fine() -> None:
    spec = parse_spec(edited(CONC, service={"metrics": {"port": 9090}}), PATH)
    assert spec.service.metrics is not None and spec.service.metrics.port == 9090


# --- [capacity.warm_pool] -----------------------------------------------------------


def test_warm_pool_defaults_and_a_reservation_together() -> None:
    # Allowed with an ODCR: a stopped pool instance holds no reserved capacity and
    # starts On-Demand like any launch beyond the reservation (docs/spec.md).
    spec = parse_spec(with_("capacity", warm_pool={}), PATH)
    wp = spec.capacity.warm_pool
    assert wp is not None and spec.capacity.capacity_reservation_id is not None
    assert (wp.min_size, wp.max_prepared, wp.pool_state) == (1, None, "Stopped")
    assert spec.warnings(PATH) == []


@pytest.mark.parametrize(
    ("pool", "prepared"),
    [
        # Unset: min_size, so the pool holds exactly min_size instances ...
        ({}, 1),
        ({"min_size": 3}, 3),
        # ... and at least one, which waits while the group has none.
        ({"min_size": 0}, 1),
        # Set: what the spec says.
        ({"min_size": 1, "max_prepared": 4}, 4),
        ({"min_size": 0, "max_prepared": 0}, 0),
    ],
)
def test_warm_pool_prepared_capacity(pool: dict[str, Any], prepared: int) -> None:
    wp = parse_spec(with_("capacity", warm_pool=pool), PATH).capacity.warm_pool
    assert wp is not None and wp.prepared_capacity == prepared


@pytest.mark.parametrize(
    ("pool", "key", "what", "fix"),
    [
        ({"min_size": 5}, "min_size", "greater than capacity.max_instances (4)", "at most 4"),
        ({"min_size": 2, "max_prepared": 1}, "max_prepared", "less than", "at least 2"),
        (
            {"max_prepared": 5},
            "max_prepared",
            "greater than capacity.max_instances (4): the group never holds more than 4, "
            "so 1 prepared instance(s) can never join it",
            "set max_prepared to at most 4, or remove it",
        ),
        ({"pool_state": "Hibernated"}, "pool_state", "cannot hibernate", '"Stopped"'),
        ({"reuse_on_scale_in": True}, "reuse_on_scale_in", "capacity providers", "remove"),
    ],
)
def test_warm_pool_rules(pool: dict[str, Any], key: str, what: str, fix: str) -> None:
    line = one_problem(with_("capacity", warm_pool=pool), f"capacity.warm_pool.{key}")
    assert what in line and fix in line.split("Fix:")[1]


def test_warm_pool_min_size_equal_to_max_instances_is_fine() -> None:
    spec = parse_spec(with_("capacity", warm_pool={"min_size": 4, "max_prepared": 4}), PATH)
    assert spec.capacity.warm_pool is not None


# --- the gp3 root volume ------------------------------------------------------------


@pytest.mark.parametrize(
    ("capacity", "shown", "what", "fix"),
    [
        # No IOPS set: gp3's baseline 3,000 IOPS carry 750 MiB/s at most.
        (
            {"root_volume_throughput_mibps": 1000},
            "1000",
            "3000 IOPS (gp3's baseline without root_volume_iops) carry at most 750 MiB/s",
            "set root_volume_iops to at least 4000 (4 x throughput), or lower "
            "root_volume_throughput_mibps to at most 750",
        ),
        (
            {"root_volume_iops": 3000, "root_volume_throughput_mibps": 2000},
            "2000",
            "3000 IOPS (root_volume_iops) carry at most 750 MiB/s",
            "set root_volume_iops to at least 8000",
        ),
    ],
)
def test_gp3_throughput_needs_four_iops_per_mibps(
    capacity: dict[str, Any], shown: str, what: str, fix: str
) -> None:
    line = one_problem(
        with_("capacity", **capacity), "capacity.root_volume_throughput_mibps", shown
    )
    assert what in line and "EC2 refuses" in line and fix in line.split("Fix:")[1]


def test_gp3_iops_need_a_gib_per_500() -> None:
    text = with_("capacity", root_volume_gib=30, root_volume_iops=80000)
    line = one_problem(text, "capacity.root_volume_iops", "80000")
    assert "at most 500 IOPS per GiB, so a 30-GiB root volume takes at most 15000" in line
    fix = line.split("Fix:")[1]
    assert "raise root_volume_gib to at least 160" in fix and "at most 15000" in fix


@pytest.mark.parametrize(
    "capacity",
    [
        {"root_volume_iops": 4000, "root_volume_throughput_mibps": 1000},  # exactly 0.25
        {"root_volume_throughput_mibps": 750},  # the baseline's 3,000 IOPS / 4
        {"root_volume_gib": 30, "root_volume_iops": 15000},  # exactly 500 per GiB
        {"root_volume_gib": 160, "root_volume_iops": 80000, "root_volume_throughput_mibps": 2000},
        {"root_volume_gib": 65536},  # the largest gp3 volume
    ],
)
def test_gp3_limits_are_inclusive(capacity: dict[str, Any]) -> None:
    spec = parse_spec(with_("capacity", **capacity), PATH)
    for key, value in capacity.items():
        assert getattr(spec.capacity, key) == value


# --- who may reach an internet-facing endpoint ----------------------------------------


def test_internet_facing_needs_ingress_cidrs() -> None:
    text = with_("load_balancer", scheme="internet-facing", ingress_cidrs=...)
    line = one_problem(text, "load_balancer.scheme", "'internet-facing'")
    assert "needs load_balancer.ingress_cidrs" in line and "checks no credentials" in line
    assert 'ingress_cidrs = ["0.0.0.0/0"]' in line.split("Fix:")[1]


def test_internal_load_balancer_needs_no_cidrs() -> None:
    spec = parse_spec(with_("load_balancer", ingress_cidrs=...), PATH)
    assert spec.load_balancer is not None and spec.load_balancer.ingress_cidrs is None


def test_open_to_everyone_on_purpose_is_accepted_with_a_note() -> None:
    text = with_("load_balancer", scheme="internet-facing", ingress_cidrs=["0.0.0.0/0"])
    spec = parse_spec(text, PATH)
    (note,) = spec.warnings(PATH)
    assert note.startswith(f"{PATH}: load_balancer.ingress_cidrs = ['0.0.0.0/0']: ")
    assert "the endpoint is unauthenticated: anyone on the internet can call the model" in note
    # Internal: reachable only inside the VPC, so no note.
    internal = parse_spec(with_("load_balancer", ingress_cidrs=["0.0.0.0/0"]), PATH)
    assert internal.warnings(PATH) == []


def test_plain_http_on_the_internet_is_a_note() -> None:
    text = with_(
        "load_balancer", scheme="internet-facing", certificate_arn=..., ingress_cidrs=["0.0.0.0/0"]
    )
    notes = parse_spec(text, PATH).warnings(PATH)
    assert len(notes) == 2 and any("plain HTTP" in n for n in notes)


# --- task size: defaults and explicit values above the instance ------------------------


@pytest.mark.parametrize(
    ("explicit", "default", "value", "message"),
    [
        ("cpu_units", "memory_mib", 8192, "registers 4096 CPU units"),
        ("memory_mib", "cpu_units", 16384, "about 14888 MiB is left for tasks"),
    ],
)
def test_explicit_task_size_above_the_instance_keeps_its_message(
    explicit: str, default: str, value: int, message: str
) -> None:
    line = one_problem(
        with_("service", **{explicit: value, default: ...}), f"service.{explicit}", str(value)
    )
    assert message in line


def test_defaults_for_a_multi_gpu_task_share_the_instance() -> None:
    text = with_("service", gpus_per_task=2, cpu_units=..., memory_mib=...).replace(
        '"g5.xlarge"', '"g5.12xlarge"'
    )
    spec = parse_spec(text, PATH)
    it = spec.instance
    assert spec.service.cpu_units == it.cpu_units // 2
    assert spec.service.memory_mib == it.schedulable_memory_mib // 2
    assert spec.tasks_per_instance == 2
    # The automatic /dev/shm of a multi-GPU task respects the server's share.
    shm = spec.service.shm_mib
    assert shm is not None and shm <= shm_limit_mib(spec.service.memory_mib)


# --- extreme floats: refused with a message, or harmless downstream ---------------------

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


# --- specs that can never work (the first hour) ---------------------------------------


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


def test_a_float_in_an_integer_key_says_so() -> None:
    line = one_problem(with_("capacity", max_instances=3e9), "capacity.max_instances")
    assert "without a decimal point or exponent" in line


def test_request_count_target_is_bounded_by_target_value() -> None:
    line = one_problem(
        with_("load_balancer", request_count_target=10**120), "load_balancer.request_count_target"
    )
    assert "above 2^360, the largest TargetValue" in line
    ok = parse_spec(with_("load_balancer", request_count_target=2**360), PATH)
    assert ok.load_balancer is not None and ok.load_balancer.request_count_target == 2**360
    one_problem(with_("load_balancer", request_count_target=1e120), "load_balancer")


def test_a_model_larger_than_the_gpus_is_refused_with_the_numbers() -> None:
    line = one_problem(with_("service", model_size_gib=500.0), "service.model_size_gib", "500.0")
    assert "1 x NVIDIA A10G has 22888 MiB" in line and "21864 MiB left" in line
    assert "quantized model of at most 21.4 GiB" in line
    # 21 GiB of weights fit: 21,504 MiB <= 22,888 - 1,024.
    assert parse_spec(with_("service", model_size_gib=21.0), PATH).service.model_size_gib == 21.0


def test_a_model_that_needs_more_gpus_says_how_many() -> None:
    text = edited(
        FULL,
        service={"model_size_gib": 60.0, "cpu_units": ..., "memory_mib": ...},
        capacity={"instance_type": "g5.12xlarge"},
    )
    line = next(line for line in problems(text) if "model_size_gib" in line)
    assert "give the task 3 GPUs (gpus_per_task)" in line


def test_root_volume_must_hold_os_image_and_each_tasks_model() -> None:
    text = edited(FULL, service={"model_size_gib": 20.0}, capacity={"root_volume_gib": 30})
    line = one_problem(text, "capacity.root_volume_gib", "30")
    # 30 (OS) + 20 (image) + 20 x 1 task per instance.
    assert "70 GiB at least" in line and "Fix: set root_volume_gib to at least 70" in line
    ok = edited(FULL, service={"model_size_gib": 20.0}, capacity={"root_volume_gib": 70})
    assert parse_spec(ok, PATH).capacity.root_volume_gib == 70
    # Four one-GPU tasks on a g5.12xlarge download the model four times.
    four = edited(
        FULL,
        service={"model_size_gib": 20.0, "cpu_units": ..., "memory_mib": ...},
        capacity={"instance_type": "g5.12xlarge", "root_volume_gib": 100},
    )
    assert any("130 GiB at least" in line for line in problems(four))


def test_ingress_cidrs_fit_the_security_group_quota() -> None:
    cidrs = [f"10.0.{i}.0/24" for i in range(60)]
    line = one_problem(with_("load_balancer", ingress_cidrs=cidrs), "load_balancer.ingress_cidrs")
    assert "'60 CIDRs'" in line and "at most 60 inbound rules" in line
    assert "list at most 59" in line
    ok = parse_spec(with_("load_balancer", ingress_cidrs=cidrs[:59]), PATH)
    assert ok.load_balancer is not None and len(ok.load_balancer.ingress_cidrs or []) == 59


@pytest.mark.parametrize("char", ["\0", "\r", "\x1b", "\x7f", "\x85"])
@pytest.mark.parametrize("where", ["environment", "command"])
def test_control_characters_are_refused_in_environment_and_command(char: str, where: str) -> None:
    value = f"a{char}b"
    if where == "environment":
        key, text = "service.environment.MODEL", with_("service", environment={"MODEL": value})
    else:
        key, text = "service.command[1]", with_("service", command=["--model", value])
    line = one_problem(text, key)
    assert f"U+{ord(char):04X} at character 1" in line


def test_control_characters_are_refused_in_a_secret_arn_tail() -> None:
    arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:hf:key\0::"
    line = one_problem(with_("service", secrets={"HF_TOKEN": arn}), "service.secrets.HF_TOKEN")
    assert "U+0000" in line


def test_a_long_value_is_shortened_in_the_message() -> None:
    line = one_problem(with_("service", environment={"A": "x" * 5000 + "\0"}), "service")
    assert len(line) < 600 and "U+0000 at character 5000" in line


def test_tabs_and_newlines_are_allowed() -> None:
    spec = parse_spec(with_("service", command=["-c", "a\tb\nc"], environment={"A": "x\ty"}), PATH)
    assert spec.service.command == ["-c", "a\tb\nc"]


def test_task_definition_size_is_estimated_against_64_kib() -> None:
    from ecs_gpu.spec import TASK_DEFINITION_MAX_BYTES, task_definition_bytes

    line = one_problem(with_("service", environment={"BIG": "x" * 70_000}), "service.environment")
    assert "about 76," in line and "at most 65,536 (64 KiB" in line
    small = parse_spec(dumps(FULL), PATH)
    assert task_definition_bytes(small.service) < TASK_DEFINITION_MAX_BYTES // 8
    # The sidecar's script counts: the concurrency baseline is larger by its base64.
    assert task_definition_bytes(parse_spec(dumps(CONC), PATH).service) > task_definition_bytes(
        small.service
    )


# --- what reaches CDK: ECS's image rule and CDK's token markers -------------------------


@pytest.mark.parametrize(
    ("image", "needle"),
    [
        ("$(reboot)", "only letters, digits"),
        ('vllm/vllm-openai:"v1"', "only letters, digits"),
        ("vllm/vllm-openai:v1;rm", "only letters, digits"),
        ("a/" + "b" * 300, "ECS allows at most 255"),
        ("vllm/vllm-openai@sha256:abc", "64 hex digits"),
        ("$(x)@sha256:" + "a" * 64, "only letters, digits"),
    ],
)
def test_the_spec_refuses_images_ecs_refuses(image: str, needle: str) -> None:
    line = one_problem(with_("service", image=image), "service.image")
    assert needle in line


def test_images_ecs_takes_are_accepted() -> None:
    for image in (
        "vllm/vllm-openai:v0.11.0",
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/vllm:v1",
        "public.ecr.aws/a/b@sha256:" + "0F" * 32,
    ):
        assert parse_spec(with_("service", image=image), PATH).service.image == image


TOKENS = ["${Token[TOKEN.1]}", "${Token[AWS.AccountId.5]}", "#{Token[TOKEN.12]}", "x${Token[a]}y"]


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize(
    ("loc", "key"),
    [
        ("environment", "service.environment.HF_HOME"),
        ("command", "service.command[1]"),
        ("health_check_path", "service.health_check_path"),
        ("lb_health", "load_balancer.health_check_path"),
        ("cert", "load_balancer.certificate_arn"),
        ("secret_tail", "service.secrets.HF_TOKEN"),
    ],
)
def test_cdk_token_markers_are_refused_naming_the_key(token: str, loc: str, key: str) -> None:
    text = {
        "environment": lambda: with_("service", environment={"HF_HOME": token}),
        "command": lambda: with_("service", command=["--model", token]),
        "health_check_path": lambda: with_("service", health_check_path="/" + token),
        "lb_health": lambda: with_("load_balancer", health_check_path="/" + token),
        "cert": lambda: with_(
            "load_balancer",
            certificate_arn="arn:aws:acm:us-east-1:123456789012:certificate/" + token,
        ),
        "secret_tail": lambda: with_(
            "service",
            secrets={
                "HF_TOKEN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:hf:" + token
            },
        ),
    }[loc]()
    line = one_problem(text, key)
    assert "CDK token marker" in line


@pytest.mark.parametrize(
    "ref", ["{{resolve:ssm:/prod/db-password}}", "x{{resolve:secretsmanager:db:SecretString}}"]
)
def test_cloudformation_dynamic_references_are_refused(ref: str) -> None:
    line = one_problem(with_("service", environment={"DB": ref}), "service.environment.DB")
    assert "dynamic reference" in line and "[service] secrets" in line


def test_a_dollar_brace_that_is_no_token_is_kept() -> None:
    spec = parse_spec(with_("service", environment={"A": "${HOME}/x", "B": "{Token[1]}"}), PATH)
    assert spec.service.environment["A"] == "${HOME}/x"
