"""The whole spec (spec/model.py): the defaults one section takes from another, and
docs/spec.md's key tables against the model."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from ecs_gpu.spec import (
    parse_spec,
)

from .specdata import (
    FULL,
    PATH,
    TABLES,
    dumps,
    problems,
)


def _doc_rows() -> dict[str, dict[str, list[str]]]:
    doc = (Path(__file__).parents[2] / "docs" / "spec.md").read_text(encoding="utf-8")
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
