"""The GPU metric contract: the one source of truth for the GPU series.

The reference module's 8.3.0 release scaled on a metric nobody wrote: the
agent config, the IAM condition and the policy each spelled the series on
their own. Here the host agent config, the IAM namespace condition, the
scaling policy, the dashboard, the missing-metric alarm, the simulator,
``verify`` and ``doctor`` all read these names; the contract's tests assert
that every consumer agrees.
"""

from __future__ import annotations

from typing import Any, Final

# CloudWatch agent default namespace for nvidia_gpu metrics
# (aws-semantics.md §5: "Namespace. Default CWAgent").
NAMESPACE: Final = "CWAgent"

# The agent adds this dimension from instance metadata (append_dimensions) and
# rolls every GPU of every instance up into one series per ASG
# (aggregation_dimensions [["AutoScalingGroupName"]]); aws-semantics.md §5.
DIMENSION: Final = "AutoScalingGroupName"
APPEND_DIMENSION_VALUE: Final = "${aws:AutoScalingGroupName}"

# nvidia_gpu measurements we collect. The agent publishes each as
# ``nvidia_smi_<measurement>`` (aws-semantics.md §5).
MEASUREMENTS: Final = ("utilization_gpu", "memory_used", "memory_total")
METRIC_PREFIX: Final = "nvidia_smi_"


def metric_name(measurement: str) -> str:
    """CloudWatch metric name the agent emits for an ``nvidia_gpu`` measurement."""
    if measurement not in MEASUREMENTS:
        raise ValueError(f"{measurement!r} is not in the GPU metric contract {MEASUREMENTS}")
    return METRIC_PREFIX + measurement


UTILIZATION: Final = METRIC_PREFIX + "utilization_gpu"
MEMORY_USED: Final = METRIC_PREFIX + "memory_used"
MEMORY_TOTAL: Final = METRIC_PREFIX + "memory_total"
METRIC_NAMES: Final = (UTILIZATION, MEMORY_USED, MEMORY_TOTAL)

# One sample a minute: below 60 s the agent publishes high-resolution metrics,
# which cost more and do not speed up ECS target tracking, since Application
# Auto Scaling has no Period field (aws-semantics.md §1 "High resolution").
COLLECTION_INTERVAL_S: Final = 60
# Agent buffer flush, default 60 s (aws-semantics.md §5 "Flush").
FORCE_FLUSH_INTERVAL_S: Final = 60
# Target tracking on a custom metric evaluates one-minute Average datapoints.
PERIOD_S: Final = 60
STATISTIC: Final = "Average"

# Where the host agent's config lives. fetch-config owns
# /opt/aws/amazon-cloudwatch-agent/etc/ (it turned a second agent's file there
# into an empty directory in the reference module: docs/host.md "Lessons from
# the field reports"), so our one config file sits outside it and nothing else
# writes there.
AGENT_CONFIG_PATH: Final = "/etc/ecs-gpu/amazon-cloudwatch-agent.json"


def dimensions(asg_name: str) -> list[dict[str, str]]:
    """The dimension list for a GPU series of one ASG, as CloudWatch APIs take it."""
    return [{"Name": DIMENSION, "Value": asg_name}]


# --- the "task-gpus" signal ([scaling] gpu_metric = "task-gpus", the default) ---
# The agent's ASG average counts every GPU, including those no task holds,
# which sit near 0 %: a 4-GPU instance running one busy 1-GPU task reads 25 %,
# and instances emptied by a scale-in keep diluting the signal until managed
# scaling removes them 15 minutes later. ECS publishes the share of the
# cluster's GPUs that running tasks reserve (AWS/ECS GPUReservation, percent,
# dimension ClusterName; aws-semantics.md §3 "Reserved-GPU metric"), so
# utilization of the GPUs tasks hold = ASG average x 100 / GPUReservation.
RESERVATION_NAMESPACE: Final = "AWS/ECS"
RESERVATION_METRIC: Final = "GPUReservation"
RESERVATION_DIMENSION: Final = "ClusterName"
# Metric-math ids and the expression target tracking evaluates. With no GPU
# reserved (no running task) it falls back to the raw average rather than
# dividing by zero.
UTILIZATION_ID: Final = "util"
RESERVATION_ID: Final = "reserved"
TASK_GPU_EXPRESSION: Final = (
    f"IF({RESERVATION_ID} > 0, {UTILIZATION_ID} * 100 / {RESERVATION_ID}, {UTILIZATION_ID})"
)
TASK_GPU_EXPRESSION_ID: Final = "task_gpu_utilization"
TASK_GPU_LABEL: Final = "GPU utilization of task-held GPUs (%)"


def reservation_dimensions(cluster_name: str) -> list[dict[str, str]]:
    """The dimension list of AWS/ECS GPUReservation for one cluster."""
    return [{"Name": RESERVATION_DIMENSION, "Value": cluster_name}]


def reservation_query(cluster: str) -> dict[str, Any]:
    """The GetMetricData query for AWS/ECS GPUReservation of ``cluster``.

    Labelled with the metric name, as the contract's series are; Average, the
    statistic the task-gpus policy divides by (infra/scaling.py).
    """
    return {
        "Id": RESERVATION_ID,
        "Label": RESERVATION_METRIC,
        "MetricStat": {
            "Metric": {
                "Namespace": RESERVATION_NAMESPACE,
                "MetricName": RESERVATION_METRIC,
                "Dimensions": reservation_dimensions(cluster),
            },
            "Period": PERIOD_S,
            "Stat": "Average",
        },
        "ReturnData": True,
    }


def metric_data_queries(asg_name: str) -> list[dict[str, Any]]:
    """GetMetricData queries for every series of the contract, ids ``m0``, ``m1``, ...

    ``verify metrics`` and the doctor's collector both read the series
    through these, in the order of :data:`METRIC_NAMES`.
    """
    return [
        {
            "Id": f"m{i}",
            "Label": name,
            "MetricStat": {
                "Metric": {
                    "Namespace": NAMESPACE,
                    "MetricName": name,
                    "Dimensions": dimensions(asg_name),
                },
                "Period": PERIOD_S,
                "Stat": STATISTIC,
            },
            "ReturnData": True,
        }
        for i, name in enumerate(METRIC_NAMES)
    ]


# --- the missing-metric alarm's facts (infra/observability.py) -------------------
# The alarm's construct id (its logical id derives from it) and the first
# datapoint's wait after the host setup: one collection interval, one flush.
MISSING_ALARM_ID: Final = "GpuMetricMissing"
FIRST_DATAPOINT_DELAY_S: Final = COLLECTION_INTERVAL_S + FORCE_FLUSH_INTERVAL_S
