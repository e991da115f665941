"""aws/target.py: what doctor collects for, from a spec or from names alone."""

from __future__ import annotations

import boto3

from ecs_gpu import fast_path
from ecs_gpu.aws.facts import Collector
from ecs_gpu.aws.target import Target
from ecs_gpu.naming import Names
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
