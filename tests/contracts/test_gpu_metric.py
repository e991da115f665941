"""The metric contract itself: names are what the CloudWatch agent emits."""

from __future__ import annotations

import pytest

from ecs_gpu.contracts import gpu_metric


def test_emitted_names_follow_agent_prefix() -> None:
    # The agent publishes nvidia_gpu measurement m as nvidia_smi_<m> (aws-semantics.md §5).
    assert gpu_metric.METRIC_NAMES == tuple(
        gpu_metric.metric_name(m) for m in gpu_metric.MEASUREMENTS
    )
    assert gpu_metric.UTILIZATION == "nvidia_smi_utilization_gpu"


def test_unknown_measurement_rejected() -> None:
    with pytest.raises(ValueError, match="contract"):
        gpu_metric.metric_name("power_draw")


def test_config_path_outside_agent_owned_directory() -> None:
    # fetch-config owns /opt/aws/amazon-cloudwatch-agent/etc/ (reference commit 74c62f0).
    assert not gpu_metric.AGENT_CONFIG_PATH.startswith("/opt/aws/amazon-cloudwatch-agent/etc")


def test_dimensions_shape() -> None:
    assert gpu_metric.dimensions("a") == [{"Name": "AutoScalingGroupName", "Value": "a"}]


def test_metric_data_queries_are_valid_get_metric_data_input() -> None:
    """verify and doctor read the series through these; botocore's model must accept them."""
    from datetime import UTC, datetime, timedelta

    import boto3
    from botocore.stub import Stubber

    cw = boto3.client(
        "cloudwatch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    queries = gpu_metric.metric_data_queries("my-asg")
    end = datetime.now(UTC)
    params = {
        "MetricDataQueries": queries,
        "StartTime": end - timedelta(minutes=10),
        "EndTime": end,
    }
    with Stubber(cw) as stub:
        stub.add_response("get_metric_data", {"MetricDataResults": []}, params)
        cw.get_metric_data(**params)  # the Stubber validates the request against the model
    assert [q["MetricStat"]["Metric"]["MetricName"] for q in queries] == list(
        gpu_metric.METRIC_NAMES
    )
    assert {q["MetricStat"]["Metric"]["Namespace"] for q in queries} == {gpu_metric.NAMESPACE}
    assert all(
        q["MetricStat"]["Metric"]["Dimensions"] == gpu_metric.dimensions("my-asg") for q in queries
    )
