"""The concurrency metric contract: the one source of truth for the demand series.

Like :mod:`ecs_gpu.contracts.gpu_metric`, every consumer reads these names: the
sidecar's environment and the task role's namespace condition
(``infra/task.py``, ``infra/iam.py``), the target-tracking policy and the
fast-path alarm (``infra/scaling.py``, ``design/paths/fast_path.py``), the
dashboard and the missing-metric alarm (``infra/observability.py``), ``verify``
and ``doctor``; the contract's tests assert that they agree.

A sidecar in each task (``data/demand-sidecar.sh``, bash + the AWS CLI) calls
``PutMetricData`` with ``StorageResolution`` 1: a 10-second alarm period needs a
high-resolution metric, which the CloudWatch agent cannot write (docs/template.md
"Demand sidecar").
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.resources import files
from typing import Any, Final

# Custom namespaces may not start with "AWS/" (botocore cloudwatch
# PutMetricData.Namespace).
NAMESPACE: Final = "EcsGpu/Serving"
METRIC_NAME: Final = "ConcurrentRequestsPerTask"
# Cluster and service, not the task: every task writes to the same series,
# so CloudWatch's Average over a period is the mean over the tasks'
# datapoints, i.e. the mean concurrency per task, which is what target
# tracking holds at the target (and Maximum is the busiest task).
CLUSTER_DIMENSION: Final = "ClusterName"
SERVICE_DIMENSION: Final = "ServiceName"
DIMENSION_NAMES: Final = (CLUSTER_DIMENSION, SERVICE_DIMENSION)
UNIT: Final = "Count"
# 1 = high resolution: CloudWatch keeps 1-second granularity, so 10-second
# periods see each datapoint (botocore cloudwatch MetricDatum.StorageResolution).
STORAGE_RESOLUTION: Final = 1
# The sidecar scrapes and publishes once per interval.
PUBLISH_INTERVAL_S: Final = 10
# Period of the fast-path alarm: one publish interval (alarm periods of 10 s
# need a high-resolution metric).
ALARM_PERIOD_S: Final = 10
# Target tracking on a custom metric evaluates one-minute datapoints
# (aws-semantics.md §1).
TRACKING_PERIOD_S: Final = 60
STATISTIC: Final = "Average"

# IAM: the task role may publish only into this namespace.
PUBLISH_ACTIONS: Final = ("cloudwatch:PutMetricData",)
NAMESPACE_CONDITION_KEY: Final = "cloudwatch:namespace"

# --- the sidecar ---
SIDECAR_NAME: Final = "demand-metric"
# Pinned AWS CLI v2 image (Amazon Linux 2 + the CLI; aws/aws-cli
# docker/Dockerfile). Its entry point is `aws`, so the task overrides it.
SIDECAR_IMAGE: Final = "public.ecr.aws/aws-cli/aws-cli:2.27.49"
SIDECAR_ENTRY_POINT: Final = ("bash", "-c")
# The script travels in this variable as the body of an Fn::Sub whose every
# "${" is written "${!" (script_sub_body): CloudFormation resolves "${!x}" to
# the literal "${x}" ("To write a dollar sign and curly braces (${})
# literally, add an exclamation point (!) after the open curly brace",
# Fn::Sub in the CloudFormation template reference), so the task definition
# holds the script itself, and CloudFormation tools do not read its bash
# expansions as unsubstituted parameters. Base64 would be a third larger,
# room the inline template limit (51,200 bytes, template/limits.py) needs.
SCRIPT_ENV: Final = "SIDECAR_SCRIPT"
SIDECAR_COMMAND: Final = (f'exec bash -c "${SCRIPT_ENV}" {SIDECAR_NAME}',)
# Carved out of the task's cpu_units and memory_mib. One `aws` call every
# 10 s is a short Python process; 256 MiB leaves room above its resident
# size (a named guess: AWS publishes no figure).
SIDECAR_CPU_UNITS: Final = 128
SIDECAR_MEMORY_MIB: Final = 256
SIDECAR_SCRIPT_RESOURCE: Final = "data/demand-sidecar.sh"

# --- the estimate ---
# What each datapoint is, by default (``[scaling] demand_estimate =
# "arrival-rate"``): ``W x (A / dt + Q / T)``, the requests that arrived since
# the last scrape (A: the completed-requests counter's increase plus the change
# in running + waiting) over the interval, times W, the mean time a request
# runs (Little's law: the running count's time-integral over the completions,
# both summed with a decay of 1 / ESTIMATE_WINDOW a scrape, about the last
# minute), plus the Q waiting requests drained
# over T = ``backlog_drain_s``. In steady state arrivals equal completions and
# the value is the running count, the in-flight value's; under a backlog the
# in-flight value (running + waiting) grows by every queued request, which
# target tracking and the fast path would read as standing load, far above
# the target in a flash crowd. The estimate counts the backlog as the extra
# rate that clears it within T. The default T is the one chosen among the
# settings of ``benchmarks/stress.py --sweep`` on six loads (docs/benchmarks.md
# "Pay for what you serve: the concurrency designs on every load"): a shorter
# T overshoots nearly as the in-flight value does, a longer one leaves more
# overload.
DEFAULT_BACKLOG_DRAIN_S: Final = 300
ESTIMATE_WINDOW: Final = 6


def sidecar_script() -> str:
    """The sidecar's bash program (shellcheck-clean; tests run it)."""
    return files("ecs_gpu").joinpath(SIDECAR_SCRIPT_RESOURCE).read_text(encoding="utf-8")


def embedded_script() -> str:
    """The script as the task carries it: comments and indentation left out.

    CloudFormation takes at most 51,200 bytes of template inline (template/limits.py),
    and the script rides in the task definition (an Fn::Sub body). Full-line
    comments and leading blanks mean nothing to bash here (the script has no
    heredoc or multi-line string); tests run and lint this form too.
    """
    lines = sidecar_script().splitlines()
    kept = [lines[0]] + [
        line.strip() for line in lines[1:] if line.strip() and not line.strip().startswith("#")
    ]
    return "\n".join(kept) + "\n"


def dimensions(cluster_name: str, service_name: str) -> list[dict[str, str]]:
    """The dimension list of the series for one service, as CloudWatch APIs take it."""
    return [
        {"Name": CLUSTER_DIMENSION, "Value": cluster_name},
        {"Name": SERVICE_DIMENSION, "Value": service_name},
    ]


def cli_dimensions(cluster_name: str, service_name: str) -> str:
    """The same dimensions in ``aws cloudwatch put-metric-data --dimensions`` form."""
    return ",".join(f"{d['Name']}={d['Value']}" for d in dimensions(cluster_name, service_name))


def iam_condition() -> dict[str, dict[str, str]]:
    """The condition that limits PutMetricData to the contract's namespace."""
    return {"StringEquals": {NAMESPACE_CONDITION_KEY: NAMESPACE}}


def sidecar_environment(
    *,
    metrics_port: int,
    metrics_path: str,
    series: tuple[str, ...],
    cluster_name: str,
    service_name: str,
    starting_max_s: int,
    absent_is_zero: bool = False,
    waiting: str = "",
    completed: str = "",
    drain_s: int | None = None,
) -> dict[str, str]:
    """Everything the sidecar script reads from its environment.

    ``starting_max_s``: how long after the start a server that does not
    answer yet counts as loading (0 published); ``absent_is_zero``: the
    server leaves a series out until its first use, so a 200 without any of
    ``series`` means 0. With ``drain_s`` (and ``completed``, the finished
    requests' counter; ``waiting``, the part of ``series`` that waits) the
    datapoint is the arrival-rate estimate; without, the in-flight sum.
    """
    estimate = (
        {
            "WAITING": waiting,
            "COMPLETED": completed,
            "DRAIN_S": str(drain_s),
            "WINDOW": str(ESTIMATE_WINDOW),
        }
        if drain_s is not None and completed
        else {}
    )
    return {
        **estimate,
        "METRICS_PORT": str(metrics_port),
        "METRICS_PATH": metrics_path,
        "SERIES": " ".join(series),
        "STARTING_MAX_S": str(starting_max_s),
        "ABSENT_IS_ZERO": "1" if absent_is_zero else "0",
        "NAMESPACE": NAMESPACE,
        "METRIC_NAME": METRIC_NAME,
        "DIMENSIONS": cli_dimensions(cluster_name, service_name),
        "UNIT": UNIT,
        "STORAGE_RESOLUTION": str(STORAGE_RESOLUTION),
        "INTERVAL_S": str(PUBLISH_INTERVAL_S),
        SCRIPT_ENV: script_sub_body(),
    }


# The CLI needs a Region (ECS gives tasks credentials, not always this): the
# Sub body's one variable, so it is no literal-only Sub (cfn-lint W1020).
REGION_LINE: Final = "export AWS_REGION=${AWS::Region}\n"


def script_sub_body() -> str:
    """The embedded script as the body of the ``Fn::Sub`` the task definition carries:
    every ``${`` written ``${!``, after the line that sets the Region."""
    lines = embedded_script().split("\n", 1)
    return lines[0] + "\n" + REGION_LINE + lines[1].replace("${", "${!")


def resolve_sub(body: str, region: str) -> str:
    """What CloudFormation makes of :func:`script_sub_body` in ``region``."""
    return body.replace("${AWS::Region}", region).replace("${!", "${")


def verify_levels(target: float) -> tuple[float, float]:
    """The high and low concurrency ``verify scaling`` publishes for target tracking alone.

    Target tracking adds ceil(tasks x value / target) - tasks, so twice the
    target adds a task; 0 is below it.
    """
    return 2 * target, 0.0


def metric_data_queries(cluster_name: str, service_name: str) -> list[dict[str, Any]]:
    """GetMetricData queries for the series: ``c0`` the 10-s mean per task, ``c1`` the busiest.

    ``verify`` and ``doctor`` read the series through these.
    """
    metric = {
        "Namespace": NAMESPACE,
        "MetricName": METRIC_NAME,
        "Dimensions": dimensions(cluster_name, service_name),
    }
    return [
        {
            "Id": f"c{i}",
            "Label": f"{METRIC_NAME} {stat}",
            "MetricStat": {"Metric": metric, "Period": ALARM_PERIOD_S, "Stat": stat},
            "ReturnData": True,
        }
        for i, stat in enumerate((STATISTIC, "Maximum"))
    ]


# --- the missing-metric alarm's facts (infra/observability.py) -------------------
# The alarm's construct id (CloudFormation names the alarm) and the first
# datapoint's wait once the server answers: one publish interval.
MISSING_ALARM_ID: Final = "ConcurrencyMetricMissing"
FIRST_DATAPOINT_DELAY_S: Final = PUBLISH_INTERVAL_S


def where(cluster_name: str, service_name: str) -> str:
    """The series in words, as every consumer names it: namespace, name and dimensions."""
    return f"{NAMESPACE} {METRIC_NAME} ({cli_dimensions(cluster_name, service_name)})"


# Target tracking's capped datapoint (fast_path.TRACKING_CAP_RATIO): the series
# hidden, an expression that returns it at most the cap.
CAPPED_SERIES_ID: Final = "c"
CAPPED_EXPRESSION_ID: Final = "capped_concurrency"
CAPPED_LABEL: Final = "Requests per task, at most the target (the fast path scales out)"


def capped_expression(cap: float) -> str:
    """The series at most ``cap``: CloudWatch metric math's IF takes a scalar branch."""
    return f"IF({CAPPED_SERIES_ID} > {cap:g}, {cap:g}, {CAPPED_SERIES_ID})"


def capped_tracking_metrics(
    cluster_name: str, service_name: str, cap: float
) -> list[dict[str, Any]]:
    """A target-tracking policy's ``CustomizedMetricSpecification.Metrics`` for the capped series.

    Application Auto Scaling evaluates each query per minute (no Period), the
    one-minute Average of the tasks' 10-second datapoints, as the plain series.
    """
    return [
        {
            "Id": CAPPED_SERIES_ID,
            "MetricStat": {
                "Metric": {
                    "Namespace": NAMESPACE,
                    "MetricName": METRIC_NAME,
                    "Dimensions": dimensions(cluster_name, service_name),
                },
                "Stat": STATISTIC,
            },
            "ReturnData": False,
        },
        {
            "Id": CAPPED_EXPRESSION_ID,
            "Expression": capped_expression(cap),
            "Label": CAPPED_LABEL,
            "ReturnData": True,
        },
    ]


# --- reading a deployed policy or alarm back (doctor, verify) ------------------------


def _dims(dims: Any) -> list[tuple[Any, Any]]:
    # CloudWatch names a series by its set of dimensions: order does not matter.
    return sorted((d.get("Name"), d.get("Value")) for d in dims or [])


def _show_dims(dims: Any) -> str:
    return ",".join(f"{n}={v}" for n, v in _dims(dims)) or "(none)"


def series_differences(
    found: Mapping[str, Any], statistic: Any, cluster: str, service: str
) -> list[tuple[str, Any, str]]:
    """(field, value found, phrase) for each way a deployed metric and its statistic
    differ from the sidecars' series (empty: it reads this series)."""
    want_dims = dimensions(cluster, service)
    out: list[tuple[str, Any, str]] = []
    if found.get("Namespace") != NAMESPACE:
        ns = found.get("Namespace")
        out.append(("Namespace", ns, f"namespace {ns} (want {NAMESPACE})"))
    if found.get("MetricName") != METRIC_NAME:
        name = found.get("MetricName")
        out.append(("MetricName", name, f"metric {name} (want {METRIC_NAME})"))
    if _dims(found.get("Dimensions")) != _dims(want_dims):
        dims = found.get("Dimensions")
        out.append(
            ("Dimensions", dims, f"dimensions {_show_dims(dims)} (want {_show_dims(want_dims)})")
        )
    if statistic != STATISTIC:
        out.append(("Statistic", statistic, f"statistic {statistic} (want {STATISTIC})"))
    return out
