"""The concurrency metric contract: the one source of truth for the demand series.

Like :mod:`ecs_gpu.contracts.gpu_metric`, every consumer reads these names: the
sidecar's environment and the task role's namespace condition
(``infra/task.py``, ``infra/iam.py``), the target-tracking policy and the
fast-path alarm (``infra/scaling.py``, ``fast_path.py``), the dashboard and
the missing-metric alarm (``infra/observability.py``), ``verify`` and
``doctor``; tests/test_demand_metric.py asserts that they agree.

How the numbers reach CloudWatch at 10-second resolution: a sidecar in each
task runs ``data/demand-sidecar.sh`` (bash + the AWS CLI) which reads the
server's Prometheus text, sums the running and waiting series and calls
``PutMetricData`` with ``StorageResolution`` 1. The CloudWatch agent cannot
do this: its Prometheus scraper turns samples into EMF logs, and the agent's
``emf_processor`` has no storage-resolution option (``emfProcessorDefinition``
in data/cloudwatch-agent/schema.json), so the metrics land at one-minute
resolution; its ``metrics.metrics_collected.prometheus`` input takes only a
``prometheus_config_path`` and feeds Amazon Managed Prometheus
(``metrics_destinations.amp``), not CloudWatch metrics. A 10-second alarm
period needs a high-resolution metric (botocore cloudwatch
``PutMetricAlarm.Period``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
# expansions as unsubstituted parameters. Before issue 16 it rode
# base64-encoded, a third larger: the arrival-rate estimate's code then took
# a g5 spec with a warm pool over the 51,200-byte inline template limit.
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
# target tracking and the fast path read as standing load (issue 16: 26-46
# per task against a target of 11 in a flash crowd). The estimate counts the
# backlog as the extra rate that clears it within T. 300 s, measured against
# 30, 120 and 900 s on six loads (benchmarks/stress.py --sweep,
# docs/benchmarks.md "Pay for what you serve"): no more overload than 120 s on
# any of them, a lower peak on M-mid and the bursts, one task more on the
# flash crowd; 30 s overshoots nearly as in flight does, 900 s costs
# deepseek overload.
DEFAULT_BACKLOG_DRAIN_S: Final = 300
ESTIMATE_WINDOW: Final = 6


def sidecar_script() -> str:
    """The sidecar's bash program (shellcheck-clean; tests run it)."""
    return files("ecs_gpu").joinpath(SIDECAR_SCRIPT_RESOURCE).read_text(encoding="utf-8")


def embedded_script() -> str:
    """The script as the task carries it: comments and indentation left out.

    CloudFormation takes at most 51,200 bytes of template inline (aws/staging.py),
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


# --- what the missing-metric alarm and the dashboard say (infra/observability.py) ---
# The alarm's construct id (CloudFormation names the alarm) and the first
# datapoint's wait once the server answers: one publish interval.
MISSING_ALARM_ID: Final = "ConcurrencyMetricMissing"
FIRST_DATAPOINT_DELAY_S: Final = PUBLISH_INTERVAL_S
PANEL_TITLE: Final = "Requests in flight or waiting, per task"


def missing_alarm_description(cluster_name: str, service_name: str, task_log_group: str) -> str:
    """The missing-metric alarm's description: the sidecars stopped, the policies are blind."""
    return (
        f"No {NAMESPACE}/{METRIC_NAME} datapoints for "
        f"ClusterName={cluster_name}, ServiceName={service_name}: the tasks' "
        "metrics sidecar is not publishing, so concurrency target tracking and "
        "the fast path are blind. Check the sidecar's stream in the "
        f"{task_log_group} log group or run `ecs-gpu doctor`."
    )


def panel_lines() -> tuple[tuple[int, str, str], ...]:
    """The dashboard panel's lines, (period, statistic, label): what the fast path sees
    (10 s), what target tracking sees (1 min), and the busiest task the mean hides."""
    p = PUBLISH_INTERVAL_S
    return (
        (p, STATISTIC, f"mean per task ({p} s)"),
        (TRACKING_PERIOD_S, STATISTIC, "mean per task (1 min, tracked)"),
        (p, "Maximum", f"busiest task ({p} s)"),
    )


def target_label(target: float) -> str:
    """The panel's target line."""
    return f"target {target:g} per task"


# --- what verify metrics says of the sidecars' series (aws/verify.py) --------------


def where(cluster_name: str, service_name: str) -> str:
    """The series in words: namespace, name and dimensions."""
    return f"{NAMESPACE} {METRIC_NAME} ({cli_dimensions(cluster_name, service_name)})"


def verify_title(cluster_name: str, service_name: str) -> str:
    """The title of verify's table of the series' queries."""
    return f"{where(cluster_name, service_name)}, {ALARM_PERIOD_S}-s periods"


def verify_waiting(service_name: str) -> str:
    """What verify waits for, on its status line."""
    return f"{METRIC_NAME} of {service_name}"


def verify_present(
    cluster_name: str, service_name: str, series: Sequence[tuple[int, float | None]]
) -> str:
    """The series has datapoints: how many periods, and the latest mean per task."""
    periods, latest = series[0]
    return (
        f"The concurrency series {where(cluster_name, service_name)} has datapoints: "
        f"{periods} {ALARM_PERIOD_S}-s period(s), latest mean per task {latest:g}."
    )


def verify_missing(cluster_name: str, service_name: str, timeout_s: float) -> str:
    """The head of verify's error: the series has no datapoint."""
    return (
        f"The concurrency series {where(cluster_name, service_name)} has no datapoint after "
        f"{timeout_s:.0f} s."
    )


def explain_missing(
    cluster_name: str,
    service_name: str,
    dimension_sets: Sequence[Sequence[Mapping[str, str]]],
    scraped: tuple[tuple[str, ...], int, str] | None,
) -> list[str]:
    """Likely causes for the series with no recent datapoint.

    ``dimension_sets`` from ListMetrics of the contract's name in its
    namespace; ``scraped``: the Prometheus series each sidecar sums, the port
    and path it reads them on ([service.metrics]). Tells "never published"
    (the sidecars cannot scrape, sum or publish) from "published under other
    dimensions" and from "published once, not lately".
    """
    at = where(cluster_name, service_name)
    ours = sorted(dimensions(cluster_name, service_name), key=lambda d: d["Name"])
    sets = [sorted((dict(d) for d in ds), key=lambda d: d["Name"]) for ds in dimension_sets]
    sidecar = f"{SIDECAR_NAME!r} container"
    if ours in sets:
        return [
            f"{at} exists but has no datapoint in the window: the sidecars stopped "
            f"publishing (no task runs, or every scrape fails now). Read the {sidecar}'s log in "
            "the task log group, or run `ecs-gpu doctor` (MET005)."
        ]
    if sets:
        shown = "; ".join(
            ",".join(f"{d['Name']}={d['Value']}" for d in s) or "(no dimensions)" for s in sets[:3]
        )
        return [
            f"datapoints under other dimensions: {METRIC_NAME} exists in {NAMESPACE} "
            f"only as [{shown}], not "
            f"{cli_dimensions(cluster_name, service_name)}. The sidecar's "
            "DIMENSIONS come from the task definition: check --stack / the spec's service "
            "name, and redeploy the task definition (`ecs-gpu deploy`; doctor TD001 "
            "compares it)."
        ]
    if scraped is None:
        # Only a caller without the spec: a concurrency spec has [service.metrics].
        reads, logged = "the server's Prometheus series ([service.metrics])", "'GET ...'"
    else:
        series, port, path = scraped
        reads = f"{' + '.join(series)} from http://127.0.0.1:{port}{path}"
        logged = f"'GET {path} on port {port}: ...'"
    return [
        f"no datapoint at all: no sidecar has ever published {at}. The {sidecar} "
        f"publishes only after it reads {reads}. Likely causes: the image serves no "
        "Prometheus metrics there (wrong [service.metrics] preset, port or path, or SGLang "
        f"without --enable-metrics; its log says {logged} or 'no answer on port'); none of "
        "those series is in "
        'the answer (its log says "none of ..."; set [service.metrics] running_metric / '
        "waiting_metric to the names the server uses); the task role is denied "
        f"cloudwatch:PutMetricData in {NAMESPACE} (its log shows "
        "AccessDenied); or no task runs."
    ]


# --- what doctor says of the sidecars' series (doctor/checks/metric.py) ------------

ARRIVES_CHECK_ID: Final = "MET005"
ARRIVES_TITLE: Final = "The concurrency metric is not published"
ARRIVES_DOC: Final = (
    "The service scales on concurrency, but GetMetricData returns no datapoint of the "
    "sidecars' per-task concurrency series (warning while the desired count is 0)."
)
FOLLOWERS: Final = "the concurrency policy and the fast path track"
IN_WORDS: Final = "concurrency"
# The publisher in a task, in "no task runs, so no sidecar publishes".
PUBLISHER: Final = "sidecar"


def doctor_remedy(running: int) -> str:
    """Tasks run, yet none published: what to read, and what the task role must allow."""
    return (
        f"{running} task(s) run, yet none published in the window. Read the "
        f"{SIDECAR_NAME} container's log: it must reach the server's metrics "
        "endpoint ([service.metrics] port and path, the preset's series names) and the task "
        "role must allow cloudwatch:PutMetricData with "
        f"{NAMESPACE_CONDITION_KEY}={NAMESPACE} (TD001 checks "
        "the sidecar is there)."
    )


def meant_as(metric: Mapping[str, Any]) -> bool:
    """Meant as the concurrency series: its namespace or its name (SCL004 says what differs)."""
    return metric.get("Namespace") == NAMESPACE or metric.get("MetricName") == METRIC_NAME


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


# --- what doctor says of a policy on the series (doctor/checks/scaling.py) ----------

TRACKED_CHECK_ID: Final = "SCL004"
TRACKED_TITLE: Final = "Concurrency policy tracks a series nobody writes"
TRACKED_DOC: Final = (
    "The service scales on concurrency, but no target-tracking policy reads the sidecars' "
    "series with exactly its namespace, name, dimensions and statistic Average."
)


def wanted(cluster: str, service: str) -> str:
    """The series a policy must read, in words."""
    return f"{NAMESPACE}/{METRIC_NAME} ({cli_dimensions(cluster, service)}, statistic {STATISTIC})"


def policy_problems(
    metric: Mapping[str, Any], statistic: Any, cluster: str, service: str
) -> list[str] | None:
    """What is wrong with a policy's metric meant as the series: None, it is not meant as
    it; empty, it reads the series; else the fix naming each difference."""
    if not meant_as(metric):
        return None
    diffs = series_differences(metric, statistic, cluster, service)
    if not diffs:
        return []
    return [
        f"The policy tracks {'; '.join(d[2] for d in diffs)}. The sidecars "
        f"write {wanted(cluster, service)}, the mean per task that target tracking holds at "
        "the target: this policy follows a series nobody writes (the reference "
        "module's 8.3.0 bug), so load never changes the task count. Redeploy the "
        "policy from the spec (`ecs-gpu deploy`)."
    ]


def missing_policy(cluster: str, service: str) -> tuple[str, str]:
    """(title, fix) when no target-tracking policy tracks the series."""
    return (
        "No target-tracking policy scales the service on concurrency",
        "The service scales on concurrency, but no target-tracking policy tracks "
        f"{wanted(cluster, service)}: load does not change the task count (only the CPU "
        "policy does, and the fast path, where deployed, only adds). Deploy the spec's "
        "scaling policies (`ecs-gpu deploy`).",
    )


# --- what doctor says of a target-tracking alarm on the series (doctor/checks/alarm.py) ---


def alarm_no_data(alarm_name: str, cluster: str, service: str) -> tuple[str, str]:
    """(title, fix) of the concurrency policy's alarm in INSUFFICIENT_DATA."""
    return (
        "Concurrency scaling alarm has no data",
        f"Target tracking on concurrency does nothing while its alarm {alarm_name} has "
        f"no data: the sidecars' series {where(cluster, service)} is not arriving. Fix the "
        "series first: MET005 says whether it arrives and why not (no task running, or the "
        f"{SIDECAR_NAME} container's log and the task role's "
        "cloudwatch:PutMetricData), TD001 whether the task definition has the sidecar, "
        "and SCL004 whether the policy reads the series the sidecars write.",
    )


# --- the simulator's words for the policy's target (sim/report.py, sim/runs.py) -----


def sim_target_words(target: float) -> tuple[str, str, str]:
    """(the design's target, its short label, as a second policy beside another signal)."""
    return (
        f"target concurrency {target:g}",
        f"concurrency {target:g}/task",
        f"concurrency {target:g}/task",
    )
