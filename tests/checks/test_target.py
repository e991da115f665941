"""checks/target.py: what doctor collects for, from a spec or from names alone."""

from __future__ import annotations

import boto3

from ecs_gpu.aws.facts import Collector
from ecs_gpu.checks.target import Target
from ecs_gpu.contracts.naming import Names
from ecs_gpu.design.paths import fast_path, sleep
from ecs_gpu.spec import parse_spec

SPEC = """
[service]
name = "target-test"
image = "nginx"
cpu_units = 3072
memory_mib = 12288

[service.metrics]
preset = "vllm"

[capacity]
instance_type = "g5.xlarge"
max_instances = 4
{extra}

[scaling]
max_tasks = 4
target_concurrency_per_task = 11
"""


def test_from_a_spec_the_target_carries_its_plan_pool_and_spot() -> None:
    extra = (
        '\n[capacity.warm_pool]\nmin_size = 1\n\n[capacity.spot]\ninstance_types = ["g5.xlarge"]\n'
    )
    spec = parse_spec(SPEC.format(extra=extra), "t.toml")
    names = Names(spec.service.name)
    target = Target.from_spec(spec, names)
    assert target.signal == "concurrency"
    fp = fast_path.fast_path(spec)
    assert fp is not None and target.fast_path_threshold == fp.threshold
    assert target.warm_pool is not None and target.warm_pool.min_size == 1
    assert target.spot is not None
    assert (target.spot.asg, target.spot.capacity_provider) == (
        names.spot_asg,
        names.spot_capacity_provider,
    )
    # The Spot group's alarms, which doctor collects by name (ALM003).
    spot_alarms = [names.spot_gpu_metric_missing_alarm, names.spot_capacity_shortfall_alarm]
    assert [target.spot.gpu_missing_alarm, target.spot.shortfall_alarm] == spot_alarms
    collector = Collector(session=boto3.Session(region_name="us-east-1"), target=target)
    assert collector.alarm_names() == [names.gpu_metric_missing_alarm, *spot_alarms]


def test_without_pool_or_spot_they_are_absent_and_names_alone_know_no_spec() -> None:
    spec = parse_spec(SPEC.format(extra=""), "t.toml")
    target = Target.from_spec(spec, Names(spec.service.name))
    assert target.warm_pool is None and target.spot is None
    bare = Target.from_cluster_service("c", "s")
    assert (bare.cluster, bare.service) == ("c", "s")
    assert bare.signal is None and bare.fast_path_threshold is None


def test_the_schedule_is_each_entrys_expression_and_bounds_from_schedule_py() -> None:
    from ecs_gpu.contracts import schedule

    entries = (
        '\n[[scaling.schedule]]\ncron = "0  8 ? * MON-FRI *"\nmin_tasks = 1\nmax_tasks = 4\n'
        '\n[[scaling.schedule]]\ncron = "cron(0 20 ? * MON-FRI *)"\nmin_tasks = 1\nmax_tasks = 1\n'
    )
    spec = parse_spec(SPEC.format(extra="") + entries, "t.toml")
    target = Target.from_spec(spec, Names(spec.service.name)).as_dict()
    # The Schedule the template writes: schedule.Cron.expression of each entry.
    assert target["schedule"] == [
        {"schedule": "cron(0 8 ? * MON-FRI *)", "min_tasks": 1, "max_tasks": 4},
        {"schedule": "cron(0 20 ? * MON-FRI *)", "min_tasks": 1, "max_tasks": 1},
    ]
    assert (
        target["schedule"][0]["schedule"]
        == schedule.parse(spec.scaling.schedule[0].cron).expression
    )
    # Without a spec there is nothing to compare with; a spec without entries has none.
    assert Target.from_cluster_service("c", "s").schedule is None
    plain = parse_spec(SPEC.format(extra=""), "t.toml")
    assert Target.from_spec(plain, Names(plain.service.name)).schedule == []


def test_the_sleep_path_is_recorded_with_its_window() -> None:
    # The window is the spec's (sleep.quiet_minutes: longer than the model's load), so
    # doctor holds the deployed alarm to it; without a sleep path, no window.
    zero = SPEC.format(extra="").replace("max_tasks = 4\n", "max_tasks = 4\nmin_tasks = 0\n")
    lb = '\n[load_balancer]\nscheme = "internal"\n'
    # A 15-minute load: 900 x 1.5 + the ALB's 60 s, in minutes, plus the first one.
    slow = "\n[simulation]\nmodel_load_s = 900\n"
    for text, minutes in ((zero + lb, 10), (zero + lb + slow, 25)):
        spec = parse_spec(text, "t.toml")
        assert sleep.quiet_minutes(spec) == minutes
        target = Target.from_spec(spec, Names(spec.service.name))
        assert target.sleep_path is True and target.sleep_minutes == minutes
    kept = parse_spec(SPEC.format(extra="") + lb, "t.toml")
    target = Target.from_spec(kept, Names(kept.service.name))
    assert target.sleep_path is False and target.sleep_minutes is None
    assert Target.from_cluster_service("c", "s").sleep_minutes is None
