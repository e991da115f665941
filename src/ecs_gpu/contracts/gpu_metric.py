"""The GPU metric contract: the one source of truth for the GPU series.

The reference module's 8.3.0 release scaled on a metric nobody wrote: the
agent config, the IAM condition and the policy each spelled the series on
their own. Here the host agent config, the IAM namespace condition, the
scaling policy, the dashboard, the missing-metric alarm, the simulator,
``verify`` and ``doctor`` all read these names; tests/test_gpu_metric.py
asserts that every consumer agrees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
# into an empty directory in the reference module, commit 74c62f0), so our one
# config file sits outside it and nothing else writes there.
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


# --- what the missing-metric alarm and the dashboard say (infra/observability.py) ---
# The alarm's construct id (its logical id derives from it) and the first
# datapoint's wait after the host setup: one collection interval, one flush.
MISSING_ALARM_ID: Final = "GpuMetricMissing"
FIRST_DATAPOINT_DELAY_S: Final = COLLECTION_INTERVAL_S + FORCE_FLUSH_INTERVAL_S


def missing_alarm_description(asg_name: str, host_log_group: str, *, tracked: bool) -> str:
    """The missing-metric alarm's description: who stops publishing, what goes blind."""
    blind = (
        "GPU target tracking is blind"
        if tracked
        else "the dashboard's GPU panels are empty (the service scales on concurrency)"
    )
    return (
        f"No {NAMESPACE}/{UTILIZATION} datapoints for "
        f"{DIMENSION}={asg_name}: the host CloudWatch agent is not "
        f"publishing, so {blind}. Check the instances' "
        f"{host_log_group} log group (amazon-cloudwatch-agent and "
        "ecs-gpu-host-setup streams) or run `ecs-gpu doctor`."
    )


# --- what verify metrics says of the agent's series (aws/verify.py) ----------------


def verify_title(asg_name: str) -> str:
    """The title of verify's table of the contract's series."""
    return f"{NAMESPACE} by {DIMENSION}={asg_name}"


def verify_waiting(asg_name: str) -> str:
    """What verify waits for, on its status line."""
    return f"{len(METRIC_NAMES)} GPU series of {asg_name}"


def verify_present(asg_name: str) -> str:
    """Every series of the contract has datapoints."""
    return f"All {len(METRIC_NAMES)} GPU series of {asg_name} have datapoints."


def verify_missing(asg_name: str, missing: Sequence[str], timeout_s: float) -> str:
    """The head of verify's error: which series are missing."""
    return (
        f"{len(missing)} of {len(METRIC_NAMES)} GPU series missing for ASG {asg_name} after "
        f"{timeout_s:.0f} s: {', '.join(missing)}."
    )


def _dimension_sets_text(sets: Sequence[Sequence[Mapping[str, str]]]) -> str:
    """Up to three dimension sets as `Name=Value,...`, for "published under other dimensions"."""
    return "; ".join(
        ",".join(f"{d['Name']}={d['Value']}" for d in s) or "(no dimensions)" for s in sets[:3]
    )


def explain_missing(
    metric: str, asg: str, dimension_sets: Sequence[Sequence[Mapping[str, str]]]
) -> list[str]:
    """Likely causes for a series with no recent datapoint.

    ``dimension_sets`` are the dimension lists ListMetrics returns for the
    same metric name in the namespace (any dimensions, last two weeks).
    """
    ours = [{"Name": DIMENSION, "Value": asg}]
    sets = [[dict(d) for d in ds] for ds in dimension_sets]
    if any(sorted(s, key=lambda d: d["Name"]) == ours for s in sets):
        return [
            f"{metric} by {DIMENSION}={asg} exists but has no datapoint in the "
            "window: the agent stopped publishing (instances terminated or replaced, agent "
            "crashed). Check `systemctl status amazon-cloudwatch-agent` on an instance, or run "
            "`ecs-gpu doctor`."
        ]
    other_asgs = sorted(
        {
            d["Value"]
            for s in sets
            if len(s) == 1
            for d in s
            if d["Name"] == DIMENSION and d["Value"] != asg
        }
    )
    if other_asgs:
        return [
            f"wrong dimension value: {metric} is published for {DIMENSION}="
            f"{', '.join(other_asgs)} but not {asg}. Check --asg / the spec's service name, "
            "and the agent's append_dimensions."
        ]
    if sets:
        shown = _dimension_sets_text(sets)
        return [
            f"wrong dimension: {metric} exists in {NAMESPACE} only as [{shown}], "
            f"not rolled up by {DIMENSION} alone. The agent config needs "
            f'append_dimensions {{"{DIMENSION}": '
            f'"{APPEND_DIMENSION_VALUE}"}} and aggregation_dimensions '
            f'[["{DIMENSION}"]].'
        ]
    return [
        f"nothing publishes {metric} in {NAMESPACE}. Likely causes: the host "
        "CloudWatch agent is not running or not collecting nvidia_gpu (a containerized agent "
        "cannot see the GPU); the instance role is denied cloudwatch:PutMetricData (the "
        "agent log shows AccessDenied); or the ASG has no running instance.",
    ]


# --- what doctor says of the agent's series (doctor/checks/metric.py) --------------

# "Does it arrive": the check's id, its title and its docs/doctor.md row's words.
ARRIVES_CHECK_ID: Final = "MET001"
ARRIVES_TITLE: Final = "The GPU metric is not published"
ARRIVES_DOC: Final = (
    "GetMetricData returns no datapoint for a series of the GPU metric contract (warning "
    "when no scaling policy reads it: concurrency without gpu_guard)."
)
# Who follows the series, in a finding; the signal in words.
FOLLOWERS: Final = "the scaling policy tracks"
IN_WORDS: Final = "a GPU series"
DOCTOR_REMEDY: Final = (
    "Run `ecs-gpu doctor --probe-hosts` to see the host agent: is "
    "amazon-cloudwatch-agent active, does its config collect nvidia_gpu, can it run "
    "nvidia-smi, and is cloudwatch:PutMetricData allowed on the instance role."
)
UNTRACKED_TITLE: Final = "The GPU metric is not published (no policy reads it)"


def untracked_readers(missing_alarm: str | None) -> str:
    """What still reads the series when no scaling policy does."""
    alarm = missing_alarm or "the GPU missing-metric alarm"
    return (
        f"only the dashboard's GPU panels (empty) and the missing-metric alarm {alarm} "
        "(ALM002 once it fires) read it"
    )


def meant_as(metric: Mapping[str, Any]) -> bool:
    """Meant as a GPU series: the agent's prefix, or "gpu" in the name (GPUReservation too)."""
    name = str(metric.get("MetricName", ""))
    return name.startswith(METRIC_PREFIX) or "gpu" in name.lower()


# --- what doctor says of a policy on the agent's series (doctor/checks/scaling.py) ---

TRACKED_CHECK_ID: Final = "SCL001"
TRACKED_TITLE: Final = "GPU policy tracks a metric nobody writes"
TRACKED_DOC: Final = (
    "A GPU target-tracking policy's metric differs from the contract (plain or metric-math "
    "form, GPUReservation divisor included), or none exists."
)
_REDEPLOY: Final = "Redeploy the policy from the spec (`ecs-gpu deploy`)."


def policy_problems(
    metric: Mapping[str, Any], asgs: Sequence[str], clusters: Sequence[str]
) -> list[str] | None:
    """What is wrong with a policy's metric meant as a GPU series: None, it is not meant as
    one; empty, it reads the contract's series (or the task-gpus divisor, by ClusterName of
    one of ``clusters``); else the fix. ``asgs`` and ``clusters``: the deployment's (any
    value when empty)."""
    name = metric.get("MetricName", "")
    dims = {d.get("Name"): d.get("Value") for d in metric.get("Dimensions", [])}
    if (metric.get("Namespace"), name) == (RESERVATION_NAMESPACE, RESERVATION_METRIC):
        # The task-gpus divisor: ECS writes it per cluster, by ClusterName only.
        if set(dims) == {RESERVATION_DIMENSION} and (
            not clusters or dims.get(RESERVATION_DIMENSION) in clusters
        ):
            return []
        return [
            f"The policy divides by {RESERVATION_NAMESPACE}/{name} "
            f"{dims}, but ECS writes it for this service's cluster only as "
            f"{RESERVATION_DIMENSION}={clusters[0] if clusters else '<cluster>'}: the tracked "
            f"expression reads a series nobody writes. {_REDEPLOY}"
        ]
    if not meant_as(metric):
        return None
    if (
        name == UTILIZATION
        and metric.get("Namespace") == NAMESPACE
        and set(dims) == {DIMENSION}
        and (not asgs or dims.get(DIMENSION) in asgs)
    ):
        return []
    return [
        f"The policy tracks {metric.get('Namespace')}/{name} {dims}, but the host agent "
        f"writes {NAMESPACE}/{UTILIZATION} with only "
        f"{DIMENSION}={asgs[0] if asgs else '<asg>'}: the policy follows a series nobody "
        f"writes. {_REDEPLOY}"
    ]


def missing_policy(*, guard: bool) -> tuple[str, str]:
    """(title, fix) when no policy tracks the series: the signal's own, or the guard."""
    if guard:
        return (
            "No GPU guard policy on the service",
            "The spec sets [scaling] gpu_guard = true, but no target-tracking policy tracks "
            "GPU utilization: the guard is off, and tasks follow concurrency and CPU only. "
            "Deploy the spec's scaling policies (`ecs-gpu deploy`).",
        )
    return (
        "No GPU target-tracking policy on the service",
        "No target-tracking policy scales the service on GPU utilization: tasks follow "
        "CPU only. Deploy the spec's scaling policies (`ecs-gpu deploy`).",
    )


# --- what doctor says of a target-tracking alarm on the series (doctor/checks/alarm.py) ---

ALARM_NO_DATA_TITLE: Final = "GPU scaling alarm has no data"


def alarm_no_data() -> tuple[str, str]:
    """(title, fix) of a GPU target-tracking alarm in INSUFFICIENT_DATA."""
    return (
        ALARM_NO_DATA_TITLE,
        "Target tracking does nothing while its alarm has no data: the GPU series is not "
        "arriving, or (task-gpus) ECS's GPUReservation divisor is not. Fix the metric "
        "first (MET001, MET004 and the HOST checks).",
    )


# --- the simulator's words for a GPU policy's target (sim/report.py, sim/runs.py) ---


def sim_target_words(target: float) -> tuple[str, str, str]:
    """(the design's target, its short label, as a guard beside another signal)."""
    return f"GPU target {target:g} %", f"GPU {target:g}%", f"GPU guard {target:g}%"
