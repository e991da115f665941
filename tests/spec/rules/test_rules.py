"""The rule registry (spec/rules/__init__.py): one bad spec per rule and one valid spec per note,
all problems at once (the one-line form they share: tests/spec/test_messages.py)."""

from __future__ import annotations

import tomllib

import pytest

from ecs_gpu.spec import Spec, parse_spec
from ecs_gpu.spec.rules import NOTES, RULES, cross_field_problems, spec_warnings

from ..specdata import (
    CONC,
    FULL,
    PATH,
    dumps,
    edited,
    problems,
    with_,
)


def test_all_problems_are_reported_at_once() -> None:
    text = with_("scaling", min_tasks=5, max_tasks=4).replace(
        "gpus_per_task = 1", "gpus_per_task = 2"
    )
    found = problems(text)
    keys = {line.split(" = ")[0].removeprefix(f"{PATH}: ") for line in found}
    assert {"service.gpus_per_task", "scaling.min_tasks"} <= keys


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
    "_zero_needs_wake": dumps(
        {
            **{k: v for k, v in FULL.items() if k != "load_balancer"},
            "scaling": {**FULL["scaling"], "min_tasks": 0},
        }
    ),
    "_schedule_within_max": with_(
        "scaling", schedule=[{"cron": "0 8 ? * MON-FRI *", "min_tasks": 1, "max_tasks": 5}]
    ),
    # One schedule written twice: MON-FRI and 2-6 are the same days.
    "_duplicate_schedules": with_(
        "scaling",
        schedule=[
            {"cron": "0 8 ? * MON-FRI *", "min_tasks": 1, "max_tasks": 2},
            {"cron": "cron(0 8 ? * 2-6 *)", "min_tasks": 2, "max_tasks": 3},
        ],
    ),
    "_signal_needs_metrics": edited(CONC, service={"metrics": ...}),
    "_signal_needs_target": edited(CONC, scaling={"target_concurrency_per_task": ...}),
    "_fast_path_needs_concurrency": with_("scaling", fast_scale_out=True),
    "_fast_scale_in_needs_concurrency": with_("scaling", fast_scale_in=True),
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
    # Four GPUs where g5.xlarge has one: not interchangeable.
    "_spot": edited(CONC, capacity={"spot": {"instance_types": ["g5.12xlarge"]}}),
    "_duplicate_subnets": with_(
        "network", subnet_ids=["subnet-0123456789abcdef0", "subnet-0123456789abcdef0"]
    ),
    "_load_balancer_subnets": with_("network", subnet_ids=["subnet-0123456789abcdef0"]),
    "_public_listener_needs_cidrs": with_(
        "load_balancer", scheme="internet-facing", ingress_cidrs=...
    ),
    "_alerts": with_("alerts", sns_topic_arn=...),
    "_cpu_idle_within_full_load": with_("simulation", cpu_idle_percent=50.0),
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
    "_spot_unpriced": edited(CONC, capacity={"spot": {"instance_types": ["g6e.xlarge"]}}),
    "_all_on_spot": edited(
        CONC,
        capacity={
            "spot": {"instance_types": ["g5.xlarge"], "on_demand_base": 0, "spot_percent": 100}
        },
    ),
    "_unused_gpu_target": edited(CONC, scaling={"gpu_target_percent": 70.0}),
    "_unused_panic_threshold": with_("scaling", panic_threshold_percent=150.0),
    # 2 req/s x 8 s per request (the simulation defaults): a task holds 16.
    "_target_above_simulated_capacity": edited(CONC, scaling={"target_concurrency_per_task": 17.0}),
    "_unused_spot_simulation": with_("simulation", spot_discount_percent=60.0),
    # A fleet that holds 5,001 tasks: past ECS's default 'Tasks per service'.
    "_max_tasks_above_service_quota": edited(
        FULL, capacity={"max_instances": 5001}, scaling={"max_tasks": 5001}
    ),
    "_unexpanded_variables": with_("service", environment={"HF_HOME": "${HOME}/.cache"}),
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


def test_a_variable_nothing_expands_is_named_in_each_literal_value() -> None:
    from ecs_gpu.spec.rules.strings import _unexpanded_variables

    spec = parse_spec(
        edited(
            CONC,
            service={
                "environment": {
                    "HF_HOME": "${HOME}/.cache",
                    "PLAIN": "/opt/x$",
                    "LD_LIBRARY_PATH": "$ORIGIN/../lib",  # the dynamic linker's own
                },
                "command": ["--download-dir", "$HF_HOME"],
                "metrics": {"path": "/${PREFIX}/metrics"},
            },
        ),
        PATH,
    )
    found = {p.key: p.what for p in _unexpanded_variables(spec)}
    assert set(found) == {
        "service.environment.HF_HOME",
        "service.command[1]",
        "service.metrics.path",
    }
    assert found["service.environment.HF_HOME"].startswith("${HOME} stays as written")
    assert "unless the image's entrypoint runs it through a shell" in found["service.command[1]"]
