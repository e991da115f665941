"""The spec tests' shared data: a spec setting every key (FULL, CONC), a small TOML writer,
and helpers that run the loader and pick out one message."""

from __future__ import annotations

import copy
import json
import math
import re
from typing import Any

import pytest

from ecs_gpu.errors import EXIT_BAD_INPUT, SpecError
from ecs_gpu.spec import (
    AlertsSpec,
    CapacitySpec,
    LoadBalancerSpec,
    NetworkSpec,
    ScalingSpec,
    ServiceMetricsSpec,
    ServiceSpec,
    SimulationSpec,
    Spec,
    SpotSpec,
    WarmPoolSpec,
    parse_spec,
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
# Tables inside sections: [service.metrics], [capacity.warm_pool], [capacity.spot].
TABLES: dict[str, type[Any]] = {
    **SECTIONS,
    "service.metrics": ServiceMetricsSpec,
    "capacity.warm_pool": WarmPoolSpec,
    "capacity.spot": SpotSpec,
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


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in prop:
        return dict(defs[prop["$ref"].rsplit("/", 1)[1]])
    if "anyOf" in prop:
        others = [p for p in prop["anyOf"] if p.get("type") != "null"]
        assert len(others) == 1, prop
        return _resolve(others[0], defs)
    return prop


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


# Every key of every table (nested [service.metrics] and [capacity.warm_pool] included),
# by its JSON-schema type.
_FIELD_TYPES = {
    loc: prop.get("type", "string")
    for loc, prop in _table_props(Spec.model_json_schema())
    if "properties" not in prop  # a nested table is reached through its own keys
}


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


_SSM = "arn:aws:ssm:us-east-1:123456789012:parameter/hf-token"
