"""Which [simulation] keys reach the deployed stack, and what a redeploy that changes one replaces.

Each key is changed in turn on a few spec shapes and the template diffed
against the unchanged one. The resources and properties each key touches
are pinned here, and what CloudFormation does with them is read as
``ecs-gpu diff`` reads a change set (``stack_events.ResourceChange.disruption``,
a property in the resource schema's ``createOnlyProperties`` being a
replacement). docs/spec.md's table "What reaches the deployed stack" is
checked against the same result, so it cannot go stale.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ecs_gpu.checks.stack_events import ResourceChange
from ecs_gpu.spec import Spec, parse_spec
from ecs_gpu.spec.sections.simulation import SimulationSpec
from ecs_gpu.template.synth import synth_template
from example_specs import G5_GPU, G5_PATH

from .conftest import EXAMPLES_DIR

# The g5 example as it is: the concurrency signal, the demand sidecar, no model_size_gib.
G5 = G5_PATH.read_text(encoding="utf-8")

# The g5 example with a warm pool that holds every instance the group can add
# (max_prepared = max_instances): its instances start warm, without the pull.
WARM = G5.replace(
    "\n[scaling]\n", "\n[capacity.warm_pool]\nmin_size = 1\nmax_prepared = 4\n\n[scaling]\n", 1
)
SHAPES = {
    "g5": G5,
    "g5-gpu": G5_GPU,  # the same service on the GPU signal: no sidecar
    "g5-warm-pool": WARM,
    "g6e": (EXAMPLES_DIR / "g6e-alb-odcr.toml").read_text(encoding="utf-8"),  # model_size_gib
}
# Two values per key: the test takes the first that differs from the shape's.
# The *_s values cross the template's whole-minute roundings.
VALUES: dict[str, tuple[Any, Any]] = {
    "task_capacity_rps": (3.0, 4.0),
    "instance_boot_s": (400.0, 600.0),
    "image_pull_s": (600.0, 900.0),
    "model_load_s": (180.0, 300.0),
    "cpu_idle_percent": (7.0, 9.0),
    "cpu_percent_at_full_load": (50.0, 60.0),
    "max_queue_s": (45.0, 60.0),
    "mean_request_s": (9.0, 10.0),
    "warm_start_s": (200.0, 300.0),
    "host_cpu_policy_target_percent": (60.0, 70.0),
    "spot_interruption_band": ("10-15%", ">20%"),
    "spot_interruptions_per_instance_hour": (0.01, 0.02),
    "spot_discount_percent": (50.0, 40.0),
}

ASG = "AWS::AutoScaling::AutoScalingGroup"
CP = "AWS::ECS::CapacityProvider"
STEP = "AWS::ApplicationAutoScaling::ScalingPolicy"
ALARM = "AWS::CloudWatch::Alarm"
SERVICE = "AWS::ECS::Service"
TASK_DEF = "AWS::ECS::TaskDefinition"
LT = "AWS::EC2::LaunchTemplate"

# The instance warm-up: the group's (and its refresh's), the capacity provider's.
WARMUP = {
    (ASG, "Cooldown"),
    (ASG, "DefaultInstanceWarmup"),
    (ASG, "UpdatePolicy"),
    (CP, "AutoScalingGroupProvider"),
}
# The concurrency fast path's cooldown (the launch-to-serving time).
FAST_PATH = {(STEP, "StepScalingPolicyConfiguration")}
# The missing-metric alarms' evaluation periods.
ALARMS = {(ALARM, "DatapointsToAlarm"), (ALARM, "EvaluationPeriods")}
GRACE = {(SERVICE, "HealthCheckGracePeriodSeconds")}
# The container health check, or the demand sidecar's start deadline.
TASK = {(TASK_DEF, "ContainerDefinitions")}
# The warm-pool script's pull budget (user data) and its launch hook's heartbeat.
POOL_PULL = {(ASG, "LifecycleHookSpecificationList"), (LT, "LaunchTemplateData")}

# shape -> key -> the (resource type, attribute) pairs the key changes. A key
# not listed changes nothing on that shape.
REACH: dict[str, dict[str, set[tuple[str, str]]]] = {
    "g5": {
        "instance_boot_s": WARMUP | FAST_PATH | ALARMS,
        "image_pull_s": WARMUP | FAST_PATH | ALARMS | GRACE | TASK,
        "model_load_s": WARMUP | FAST_PATH | ALARMS | GRACE | TASK,
    },
    "g5-gpu": {
        "instance_boot_s": WARMUP | ALARMS,
        "image_pull_s": WARMUP | GRACE,
        "model_load_s": WARMUP | GRACE | TASK,
    },
    "g5-warm-pool": {
        # The pool covers every scale-out: its warm-up is warm start + model.
        "instance_boot_s": ALARMS,
        "image_pull_s": POOL_PULL | ALARMS | GRACE | TASK,
        "model_load_s": WARMUP | FAST_PATH | ALARMS | GRACE | TASK,
        "warm_start_s": WARMUP | FAST_PATH,
    },
    # model_size_gib sets the model's time: model_load_s is not read.
    "g6e": {
        "instance_boot_s": WARMUP | ALARMS,
        "image_pull_s": WARMUP | GRACE,
    },
}
# shape -> key -> what a redeploy with the change does to running tasks and
# instances (stack_events.Disruption); a key not listed disrupts nothing.
DISRUPTS: dict[str, dict[str, set[str]]] = {
    "g5": {"image_pull_s": {"tasks-replaced"}, "model_load_s": {"tasks-replaced"}},
    "g5-gpu": {"model_load_s": {"tasks-replaced"}},
    "g5-warm-pool": {
        "image_pull_s": {"tasks-replaced", "fleet-refreshed"},
        "model_load_s": {"tasks-replaced"},
    },
    "g6e": {},
}

SPEC_DOC = Path(__file__).resolve().parents[2] / "docs" / "spec.md"


def _changed(spec: Spec, key: str) -> Spec:
    base = getattr(spec.simulation, key)
    value = next(v for v in VALUES[key] if v != base)
    return spec.model_copy(update={"simulation": spec.simulation.model_copy(update={key: value})})


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """JSON pointers to the values under ``path`` (a list is one value)."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, f"{path}/{k}")
    else:
        yield path, value


def _create_only(rtype: str) -> list[str]:
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", rtype).schema
    return list(schema.get("createOnlyProperties", []))


# A modified resource as a change set names it, and its changed top-level attributes.
Change = tuple[ResourceChange, set[str]]


def _changes(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    """Each modified resource as a change-set entry, with its changed top-level attributes."""
    assert set(before["Resources"]) == set(after["Resources"])  # nothing added or removed
    for section in ("Parameters", "Outputs", "Conditions"):
        assert before.get(section) == after.get(section), section
    out = []
    for lid, old in before["Resources"].items():
        new = after["Resources"][lid]
        if old == new:
            continue
        keys = {
            k for k in old.keys() | new.keys() if k != "Properties" and old.get(k) != new.get(k)
        }
        old_p, new_p = old.get("Properties", {}), new.get("Properties", {})
        props = {k for k in old_p.keys() | new_p.keys() if old_p.get(k) != new_p.get(k)}
        a, b = dict(_leaves(old_p, "/properties")), dict(_leaves(new_p, "/properties"))
        paths = {p for p in a.keys() | b.keys() if a.get(p) != b.get(p)}
        replaces = any(
            path == c or path.startswith(c + "/") or c.startswith(path + "/")
            for path in paths
            for c in _create_only(old["Type"])
        )
        change = ResourceChange(
            action="Modify",
            logical_id=lid,
            resource_type=old["Type"],
            replacement="True" if replaces else "False",
            properties=tuple(sorted(props)),
        )
        out.append((change, props | keys))
    return out


@pytest.fixture(scope="module")
def observed() -> dict[str, dict[str, list[Change]]]:
    """shape -> key -> the changes a deploy of the key's new value makes."""
    assert set(VALUES) == set(SimulationSpec.model_fields)  # every key is tried
    out: dict[str, dict[str, list[Change]]] = {}
    for shape, text in SHAPES.items():
        spec = parse_spec(text, shape)
        base = synth_template(spec)
        out[shape] = {key: _changes(base, synth_template(_changed(spec, key))) for key in VALUES}
    return out


def test_which_simulation_keys_reach_the_template(observed: Any) -> None:
    for shape, by_key in observed.items():
        got = {
            key: {(c.resource_type, attr) for c, attrs in changes for attr in attrs}
            for key, changes in by_key.items()
            if changes
        }
        assert got == REACH[shape], shape


def test_what_a_redeploy_with_each_key_changed_replaces(observed: Any) -> None:
    for shape, by_key in observed.items():
        got = {
            key: {c.disruption for c, _ in changes if c.disruption is not None}
            for key, changes in by_key.items()
        }
        assert {k: v for k, v in got.items() if v} == DISRUPTS[shape], shape


def _doc_rows() -> dict[str, str]:
    """docs/spec.md's "What reaches the deployed stack" table: key -> its row."""
    text = SPEC_DOC.read_text(encoding="utf-8")
    section = text.split("### What reaches the deployed stack", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {re.match(r"\| `(\w+)`", row).group(1): row for row in rows}  # type: ignore[union-attr]


def test_the_spec_docs_list_the_keys_that_reach_the_stack() -> None:
    rows = _doc_rows()
    reach = {key for by_key in REACH.values() for key in by_key}
    assert set(rows) == reach
    for key, row in rows.items():
        disruptions = {d for by_key in DISRUPTS.values() for d in by_key.get(key, set())}
        assert ("restarts every task" in row) == ("tasks-replaced" in disruptions), key
        assert ("refreshes every GPU instance" in row) == ("fleet-refreshed" in disruptions), key
        in_place = any(key in REACH[shape] and not DISRUPTS[shape].get(key) for shape in SHAPES)
        assert ("in place" in row) == in_place, key
