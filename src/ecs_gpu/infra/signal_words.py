"""What the dashboard and the missing-metric alarms say of each signal's series.

Per signal (:data:`OBSERVED`): the alarm that goes to ALARM while its series
has no datapoint (construct id, name, description) and its dashboard row, if
it has one of its own. The series themselves (namespace, name, dimensions,
period) are the contracts'; infra/observability.py builds the alarms and the
dashboard from both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Protocol

from ecs_gpu.contracts import demand_metric, gpu_metric
from ecs_gpu.contracts.signals import (
    ASG_AVERAGE,
    CONCURRENCY,
    TASK_GPUS,
    SeriesNames,
    Signal,
)


class DeploymentNames(SeriesNames, Protocol):
    """The names the missing-metric alarms read besides the series' (naming.Names has these)."""

    @property
    def host_log_group(self) -> str: ...

    @property
    def task_log_group(self) -> str: ...

    @property
    def gpu_metric_missing_alarm(self) -> str: ...


@dataclass(frozen=True, slots=True)
class MissingAlarm:
    """The alarm that goes to ALARM while a series that must arrive has no datapoint."""

    construct_id: str
    # Its AlarmName; None: CloudFormation names it.
    name: Callable[[DeploymentNames], str | None]
    # (names, whether a policy tracks the series) -> the alarm's description.
    description: Callable[[DeploymentNames, bool], str]


@dataclass(frozen=True, slots=True)
class Panel:
    """A tracked series' own dashboard row (None for the GPU series: the dashboard always
    draws the agent's panels, with the tracked one's expression and target)."""

    title: str
    # (period, statistic, label) of each line of the watched series.
    lines: tuple[tuple[int, str, str], ...]
    target_label: Callable[[float], str]


@dataclass(frozen=True, slots=True)
class Observed:
    """One signal's missing-metric alarm and its dashboard row."""

    alarm: MissingAlarm
    panel: Panel | None


# --- the agent's GPU series -------------------------------------------------------


def gpu_missing_description(asg_name: str, host_log_group: str, *, tracked: bool) -> str:
    """The GPU missing-metric alarm's description: who stops publishing, what goes blind.

    The On-Demand group's alarm and the Spot group's (infra/observability.py) both say it.
    """
    blind = (
        "GPU target tracking is blind"
        if tracked
        else "the dashboard's GPU panels are empty (the service scales on concurrency)"
    )
    return (
        f"No {gpu_metric.NAMESPACE}/{gpu_metric.UTILIZATION} datapoints for "
        f"{gpu_metric.DIMENSION}={asg_name}: the host CloudWatch agent is not "
        f"publishing, so {blind}. Check the instances' "
        f"{host_log_group} log group (amazon-cloudwatch-agent and "
        "ecs-gpu-host-setup streams) or run `ecs-gpu doctor`."
    )


_GPU: Final = Observed(
    alarm=MissingAlarm(
        construct_id=gpu_metric.MISSING_ALARM_ID,
        name=lambda n: n.gpu_metric_missing_alarm,
        description=lambda n, tracked: gpu_missing_description(
            n.asg, n.host_log_group, tracked=tracked
        ),
    ),
    panel=None,
)


# --- the sidecars' concurrency series -------------------------------------------------

CONCURRENCY_PANEL_TITLE: Final = "Requests in flight or waiting, per task"


def concurrency_missing_description(
    cluster_name: str, service_name: str, task_log_group: str
) -> str:
    """The concurrency missing-metric alarm's description: the sidecars stopped, the
    policies are blind."""
    return (
        f"No {demand_metric.NAMESPACE}/{demand_metric.METRIC_NAME} datapoints for "
        f"ClusterName={cluster_name}, ServiceName={service_name}: the tasks' "
        "metrics sidecar is not publishing, so concurrency target tracking and "
        "the fast path are blind. Check the sidecar's stream in the "
        f"{task_log_group} log group or run `ecs-gpu doctor`."
    )


def concurrency_panel_lines() -> tuple[tuple[int, str, str], ...]:
    """The concurrency panel's lines, (period, statistic, label): what the fast path sees
    (10 s), what target tracking sees (1 min), and the busiest task the mean hides."""
    p, stat = demand_metric.PUBLISH_INTERVAL_S, demand_metric.STATISTIC
    return (
        (p, stat, f"mean per task ({p} s)"),
        (demand_metric.TRACKING_PERIOD_S, stat, "mean per task (1 min, tracked)"),
        (p, "Maximum", f"busiest task ({p} s)"),
    )


def concurrency_target_label(target: float) -> str:
    """The concurrency panel's target line."""
    return f"target {target:g} per task"


_CONCURRENCY: Final = Observed(
    alarm=MissingAlarm(
        construct_id=demand_metric.MISSING_ALARM_ID,
        name=lambda n: None,
        description=lambda n, tracked: concurrency_missing_description(
            n.cluster, n.service, n.task_log_group
        ),
    ),
    panel=Panel(
        title=CONCURRENCY_PANEL_TITLE,
        lines=concurrency_panel_lines(),
        target_label=concurrency_target_label,
    ),
)

# Both GPU signals watch the agent's one series: one alarm, the agent's panels.
OBSERVED: Final[Mapping[Signal, Observed]] = MappingProxyType(
    {TASK_GPUS: _GPU, ASG_AVERAGE: _GPU, CONCURRENCY: _CONCURRENCY}
)
