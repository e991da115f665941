"""What doctor's checks share (checks/doctor/common.py): reading AWS's shapes out of a snapshot."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from ecs_gpu.checks.doctor.common import (
    attribute,
    gpus_per_task,
    in_service,
    in_service_counts,
    is_demand_series,
    parse_time,
    policy_metric_stats,
    probes,
    reads_demand_metric,
    resource_gpus,
    service_items,
    short_name,
)
from ecs_gpu.checks.model import Unknown
from ecs_gpu.contracts import demand_metric, gpu_metric


def test_in_service_counts_only_instances_in_service_per_group() -> None:
    groups = [
        {
            "AutoScalingGroupName": "od",
            "Instances": [
                {"InstanceId": "i-1", "LifecycleState": "InService"},
                {"InstanceId": "i-2", "LifecycleState": "Pending"},
                {"InstanceId": "i-3", "LifecycleState": "Terminating"},
            ],
        },
        {"AutoScalingGroupName": "spot", "Instances": []},
        {"AutoScalingGroupName": "other"},
    ]
    # verify metrics, MET001 (through ecs_gpu.design.spot.publishers) and ECS001 read these.
    assert in_service(groups) == {"od": ["i-1"], "spot": [], "other": []}
    assert in_service_counts(groups) == {"od": 1, "spot": 0, "other": 0}


def test_epoch_timestamps_of_aws_cli_v1_are_read() -> None:
    assert parse_time(1764435600) == datetime(2025, 11, 29, 17, 0, tzinfo=UTC)
    assert parse_time(1764435600.5) == datetime(2025, 11, 29, 17, 0, 0, 500000, tzinfo=UTC)
    assert parse_time(True) is None and parse_time(10**30) is None


def test_an_api_timestamp_is_read_in_every_form_aws_sends_it() -> None:
    at = datetime(2026, 11, 29, 16, 0, tzinfo=UTC)
    assert parse_time("2026-11-29T16:00:00Z") == at
    assert parse_time("2026-11-29T16:00:00+00:00") == at
    assert parse_time("2026-11-29T16:00:00") == at  # naive: UTC
    assert parse_time(datetime(2026, 11, 29, 16, 0)) == at
    assert parse_time("yesterday") is None and parse_time(None) is None


def test_the_short_name_is_the_arns_last_part() -> None:
    assert short_name("arn:aws:ecs:us-east-1:123456789012:cluster/vllm-g5") == "vllm-g5"
    assert short_name("") == ""


def test_gpus_are_counted_in_either_resource_form() -> None:
    uuids = {"name": "GPU", "type": "STRINGSET", "stringSetValue": ["GPU-a", "GPU-b"]}
    count = {"name": "GPU", "type": "INTEGER", "integerValue": 4}
    cpu = {"name": "CPU", "type": "INTEGER", "integerValue": 4096}
    assert resource_gpus([uuids, cpu]) == 2
    assert resource_gpus([count]) == 4
    assert resource_gpus([cpu]) == 0


def test_an_attribute_is_read_by_name() -> None:
    ci = {"attributes": [{"name": "ecs.instance-type", "value": "g5.xlarge"}]}
    assert attribute(ci, "ecs.instance-type") == "g5.xlarge"
    assert attribute(ci, "ecs.os-type") is None and attribute({}, "x") is None


def test_a_task_definitions_gpus_add_up_and_all_counts_as_one() -> None:
    def container(*values: str) -> dict[str, Any]:
        return {"resourceRequirements": [{"type": "GPU", "value": v} for v in values]}

    td = {"containerDefinitions": [container("2"), container(), container("ALL")]}
    assert gpus_per_task(td) == 3
    assert gpus_per_task({}) == 0


def test_no_service_is_unknown_not_healthy() -> None:
    with pytest.raises(Unknown, match="SVC000"):
        service_items({"services": []})
    assert service_items({"services": [{"serviceName": "s"}]}) == [{"serviceName": "s"}]


def test_no_successful_host_probe_is_unknown() -> None:
    failed = {"i-1": {"Status": "Failed"}, "i-2": "not an invocation"}
    with pytest.raises(Unknown, match="HOST000"):
        probes({"host_probes": failed})


def _policy(cms: dict[str, Any]) -> dict[str, Any]:
    return {"TargetTrackingScalingPolicyConfiguration": {"CustomizedMetricSpecification": cms}}


def test_a_policys_metrics_are_read_in_the_plain_and_the_math_form() -> None:
    base = "TargetTrackingScalingPolicyConfiguration.CustomizedMetricSpecification"
    plain = {
        "Namespace": demand_metric.NAMESPACE,
        "MetricName": demand_metric.METRIC_NAME,
        "Statistic": "Average",
    }
    assert policy_metric_stats(_policy(plain)) == [(base, plain, "Average")]
    assert reads_demand_metric(_policy(plain))
    gpu = {"Namespace": gpu_metric.NAMESPACE, "MetricName": gpu_metric.UTILIZATION}
    math = {
        "Metrics": [
            {"Id": "u", "MetricStat": {"Metric": gpu, "Stat": "Sum"}},
            {"Id": "e", "Expression": "u / 2"},
        ]
    }
    assert policy_metric_stats(_policy(math)) == [
        (f"{base}.Metrics[0].MetricStat.Metric", gpu, "Sum")
    ]
    assert not reads_demand_metric(_policy(math))
    assert policy_metric_stats({"PolicyType": "StepScaling"}) == []
    assert is_demand_series(plain) and not is_demand_series(gpu)
