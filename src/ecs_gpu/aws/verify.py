"""Prove a deployed service works: the metrics land (``verify metrics``).

The check the reference module's 8.3.0 release never ran: it reads the
real series that must arrive (``SignalPlan.arriving``: the host agent's GPU
series, and a tracked signal's own, such as the concurrency the task's
sidecars publish) and names each missing one with its likely cause. What it
reads and says of each is the signal's row (``signals.SERIES[s].verified``,
from its contract module), so this module names no signal. ``verify scaling`` (the loop moves) is
:mod:`ecs_gpu.aws.verify_scaling`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_result,
    stop_after_attempt,
    stop_after_delay,
    wait_fixed,
)

from ecs_gpu.aws.errors import AccessDenied, mapped
from ecs_gpu.checks.doctor.common import in_service_counts
from ecs_gpu.contracts import gpu_metric
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import (
    DEFAULT_GPU_SIGNAL,
    SERIES,
    SeriesAt,
    SeriesNames,
    ServerMetrics,
    Signal,
    SignalPlan,
    Verified,
)
from ecs_gpu.design.spot import Publishers, on_demand_claim, publishers
from ecs_gpu.errors import ProblemsFound
from ecs_gpu.spec import Spec

if TYPE_CHECKING:
    from mypy_boto3_autoscaling import AutoScalingClient
    from mypy_boto3_cloudwatch import CloudWatchClient
    from mypy_boto3_ecs import ECSClient

# Agent collects every 60 s and flushes every 60 s, and CloudWatch takes a
# minute or two to serve a datapoint: ten minutes holds several of each.
DEFAULT_WINDOW_S: Final = 600


# --- verify metrics ---------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    metric: str
    datapoints: int
    latest: float | None
    # The metric the query reads: a missing one's ListMetrics asks for it.
    namespace: str = ""
    metric_name: str = ""

    @property
    def present(self) -> bool:
        return self.datapoints > 0


@dataclass(frozen=True)
class Arrival:
    """One signal's series that must arrive: its queries' results and, when missing, why."""

    signal: Signal
    series: tuple[Series, ...]
    # metric name -> likely causes, for each missing metric
    causes: Mapping[str, list[str]] = field(default_factory=dict)

    @property
    def missing(self) -> list[str]:
        """The metric names a query without datapoints reads, each once."""
        return list(dict.fromkeys(s.metric_name for s in self.series if not s.present))

    @property
    def verified(self) -> Verified:
        return SERIES[self.signal].verified


@dataclass(frozen=True)
class MetricsReport:
    names: SeriesNames
    # In SignalPlan.arriving's order: the GPU series first.
    arrivals: tuple[Arrival, ...]

    @property
    def series(self) -> list[Series]:
        return [s for a in self.arrivals for s in a.series]

    @property
    def causes(self) -> dict[str, list[str]]:
        return {m: c for a in self.arrivals for m, c in a.causes.items()}

    @property
    def missing(self) -> list[str]:
        return [m for a in self.arrivals for m in a.missing]

    @property
    def ok(self) -> bool:
        return not self.missing


def _fetch(
    cw: CloudWatchClient,
    queries: Sequence[Mapping[str, Any]],
    *,
    window_s: float,
    now: datetime | None,
) -> list[Series]:
    """Datapoint count and latest value of each query's series (named by its Label)."""
    end = now or datetime.now(UTC)
    start = end - timedelta(seconds=window_s)
    values: dict[str, list[tuple[datetime, float]]] = {q["Id"]: [] for q in queries}
    with mapped("cloudwatch", "GetMetricData"):
        pages = cw.get_paginator("get_metric_data").paginate(
            MetricDataQueries=list(queries),  # type: ignore[arg-type]
            StartTime=start,
            # One period past now: the newest, still-open minute counts too.
            EndTime=end + timedelta(seconds=gpu_metric.PERIOD_S),
            ScanBy="TimestampDescending",
        )
        for page in pages:
            for r in page.get("MetricDataResults", []):
                got = zip(r.get("Timestamps", []), r.get("Values", []), strict=False)
                values.setdefault(r["Id"], []).extend(got)
    out = []
    for q in queries:
        pts = sorted(values.get(q["Id"], []), key=lambda p: p[0])
        latest = pts[-1] if pts else None
        metric = q.get("MetricStat", {}).get("Metric", {})
        out.append(
            Series(
                metric=q["Label"],
                datapoints=len(pts),
                latest=latest[1] if latest else None,
                namespace=metric.get("Namespace", ""),
                metric_name=metric.get("MetricName", q["Label"]),
            )
        )
    return out


def fetch_series(
    cw: CloudWatchClient,
    signal: Signal,
    names: SeriesNames,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    now: datetime | None = None,
) -> list[Series]:
    """Datapoint count and latest value of each series ``signal``'s row says must arrive."""
    queries = SERIES[signal].verified.queries(names)
    return _fetch(cw, queries, window_s=window_s, now=now)


def fetch_reservation(
    cw: CloudWatchClient,
    cluster: str,
    *,
    window_s: float = DEFAULT_WINDOW_S,
    now: datetime | None = None,
) -> Series:
    """AWS/ECS GPUReservation of ``cluster``: the divisor of the task-gpus policy."""
    return _fetch(cw, [gpu_metric.reservation_query(cluster)], window_s=window_s, now=now)[0]


def dimension_sets(
    cw: CloudWatchClient, namespace: str, metric_name: str
) -> list[list[dict[str, str]]]:
    """The dimension lists ListMetrics has for ``metric_name`` in ``namespace``."""
    sets: list[list[dict[str, str]]] = []
    with mapped("cloudwatch", "ListMetrics"):
        pages = cw.get_paginator("list_metrics").paginate(
            Namespace=namespace, MetricName=metric_name
        )
        for page in pages:
            for m in page.get("Metrics", []):
                sets.append(
                    [{"Name": d["Name"], "Value": d["Value"]} for d in m.get("Dimensions", [])]
                )
    return sets


def diagnose(
    cw: CloudWatchClient, arrival: Arrival, names: SeriesNames, server: ServerMetrics | None
) -> dict[str, list[str]]:
    """Likely causes for each missing metric of ``arrival``, from ListMetrics."""
    out: dict[str, list[str]] = {}
    for metric in arrival.missing:
        namespace = next(s.namespace for s in arrival.series if s.metric_name == metric)
        sets = dimension_sets(cw, namespace, metric)
        out[metric] = arrival.verified.explain(metric, names, sets, server)
    return out


def verify_metrics(
    cw: CloudWatchClient,
    names: SeriesNames,
    *,
    signals: Sequence[Signal] = (DEFAULT_GPU_SIGNAL,),
    timeout_s: float,
    interval_s: float = 30.0,
    window_s: float = DEFAULT_WINDOW_S,
    on_attempt: Callable[[int, list[Series]], None] = lambda n, s: None,
    sleep: Callable[[float], None] = time.sleep,
    server: ServerMetrics | None = None,
) -> MetricsReport:
    """Wait up to ``timeout_s`` until every series of ``signals`` has datapoints.

    ``signals`` as ``SignalPlan.arriving`` lists them (each attempt's list
    in that order); ``server`` says what a task's publisher reads, for the
    causes of a missing series it publishes.
    """

    n = 0

    def attempt() -> list[Arrival]:
        nonlocal n
        n += 1
        got = [
            Arrival(signal, tuple(fetch_series(cw, signal, names, window_s=window_s)))
            for signal in signals
        ]
        on_attempt(n, [s for a in got for s in a.series])
        return got

    def incomplete(arrivals: list[Arrival]) -> bool:
        return any(a.missing for a in arrivals)

    def last_result(state: RetryCallState) -> list[Arrival]:
        assert state.outcome is not None  # tenacity calls this only after an attempt
        result: list[Arrival] = state.outcome.result()
        return result

    attempts = max(1, int(timeout_s // max(interval_s, 1e-9)) + 1)
    retrying = Retrying(
        # Both bounds: the wall clock for real runs, the attempt count so an
        # injected no-op sleep cannot spin. AWS errors are not retried here
        # (botocore already retried throttling): they end the wait.
        stop=stop_after_delay(timeout_s) | stop_after_attempt(attempts),
        wait=wait_fixed(interval_s),
        retry=retry_if_result(incomplete),
        sleep=sleep,
        retry_error_callback=last_result,
    )
    arrivals: list[Arrival] = retrying(attempt)
    return MetricsReport(
        names=names,
        arrivals=tuple(
            a if not a.missing else replace(a, causes=diagnose(cw, a, names, server))
            for a in arrivals
        ),
    )


# --- from the spec, and the verdict -----------------------------------------------


def server_metrics(spec: Spec) -> ServerMetrics | None:
    """Where the spec's server exposes Prometheus metrics; None without [service.metrics]."""
    m = spec.service.metrics
    if m is None:
        return None
    return ServerMetrics(series=m.names, port=m.port or spec.service.container_port, path=m.path)


def needs_divisor(spec: Spec) -> bool:
    """Whether a policy of ``spec`` divides by ECS's GPUReservation (reported, not required)."""
    # With signal "concurrency" no policy divides by GPUReservation (unless
    # the GPU guard does).
    return SignalPlan.of(spec.scaling).divides_by_reservation


@dataclass(frozen=True)
class MetricsPlan:
    """What ``verify metrics`` waits for, from ecs_gpu.design.spot.publishers.

    ``waits``: each group that must publish and has a host, with the signals whose
    series must arrive there (the agent's for each, every other signal once, with
    the first). ``hostless``: the groups that must run a host and have none, a
    problem named without waiting (nothing there can publish).
    """

    waits: tuple[tuple[SeriesNames, tuple[Signal, ...]], ...]
    hostless: tuple[str, ...] = ()
    # Why a hostless group must run a host (spot.on_demand_claim).
    on_demand_claim: str | None = None
    # Nothing can publish by design (the service at zero tasks, no host): what to say.
    idle: str | None = None
    # The series not waited for and why (at zero tasks no task's sidecar publishes).
    note: str | None = None


def host_signals(signals: Sequence[Signal]) -> tuple[Signal, ...]:
    """The signals a host publishes (the agent's), without those a task publishes."""
    return tuple(s for s in signals if SERIES[s].published_by == "host")


def zero_tasks_note(service: str, signals: Sequence[Signal]) -> str | None:
    """At desiredCount 0: which task-published series are not waited for; None if none."""
    skipped = [s for s in signals if s not in host_signals(signals)]
    if not skipped:
        return None
    return (
        f"the service {service} runs no task (desiredCount 0), so no task publishes "
        f"{', '.join(skipped)}'s series: only the hosts' GPU series were verified. Run "
        "`ecs-gpu verify metrics` again once the service has a task to verify them too."
    )


def metrics_plan(
    names: SeriesNames,
    signals: Sequence[Signal],
    pub: Publishers | None = None,
    on_demand_claim: str | None = None,
    *,
    has_task: bool = True,
) -> MetricsPlan:
    """The plan for ``pub``'s groups (without it, ``names.asg``'s alone: no Spot).

    ``has_task`` False (desiredCount 0): only the hosts' series are waited for.
    """
    note = None if has_task else zero_tasks_note(names.service, signals)
    signals = tuple(signals) if has_task else host_signals(signals)
    pub = pub or publishers(names.asg, None, None, {})
    hosts = [g for g in pub.groups if g not in pub.hostless]
    waits = tuple(
        (
            names if group == names.asg else SeriesAt(group, names.cluster, names.service),
            tuple(signals) if i == 0 else tuple(signals[:1]),
        )
        for i, group in enumerate(hosts)
    )
    return MetricsPlan(waits, pub.hostless, on_demand_claim, note=note)


def single_group_metrics_plan(
    autoscaling: AutoScalingClient, ecs: ECSClient, names: Names, signals: Sequence[Signal]
) -> MetricsPlan:
    """Without [capacity.spot]: the one group's plan, with what a service at zero means.

    At desiredCount 0 (a scale-to-zero service asleep) no task's sidecar
    publishes, so only the agent's series are waited for; and with no instance in
    service either (managed scaling took the group to zero), nothing publishes by
    design: the :func:`idle_note`, exit 0. A service not found, or one that wants
    a task, waits for every series. DescribeServices or DescribeAutoScalingGroups
    denied: the plan as without them (every series), and a note naming the permission.
    """
    try:
        desired = service_desired(ecs, names.cluster, names.service)
        if desired != 0:
            return metrics_plan(names, signals)
        with mapped("autoscaling", "DescribeAutoScalingGroups"):
            groups = autoscaling.describe_auto_scaling_groups(
                AutoScalingGroupNames=[names.asg]
            ).get("AutoScalingGroups", [])
    except AccessDenied as e:
        plan = metrics_plan(names, signals)
        return replace(
            plan,
            note=f"{e.permission or 'a read'} denied: whether the service runs a task was not "
            "read, so every series was waited for (a service scaled to zero publishes no "
            "task's series).",
        )
    if in_service_counts(groups).get(names.asg, 0) == 0:
        return MetricsPlan((), idle=idle_note(names, spot=False))
    return metrics_plan(names, signals, has_task=False)


def service_desired(ecs: ECSClient, cluster: str, service: str) -> int | None:
    """The service's desiredCount (DescribeServices); None when it is not ACTIVE (not
    deployed yet: then the rule reads a task as wanted)."""
    with mapped("ecs", "DescribeServices"):
        try:
            resp = ecs.describe_services(cluster=cluster, services=[service])
        except ecs.exceptions.ClusterNotFoundException:
            return None
    active = [s for s in resp.get("services", []) if s.get("status") == "ACTIVE"]
    return int(active[0]["desiredCount"]) if active else None


def idle_note(names: Names, *, spot: bool = True) -> str:
    """At zero tasks with no host in any group: nothing publishes, by design."""
    hosts = (
        f"neither {names.asg} nor the Spot group {names.spot_asg} has"
        if spot
        else f"{names.asg} has"
    )
    return (
        f"the service {names.service} runs no task (desiredCount 0) and {hosts} "
        "an instance in service: nothing publishes "
        "the series by design, so nothing was verified. Run `ecs-gpu verify metrics` again "
        "once the service has a task."
    )


def spot_metrics_plan(
    autoscaling: AutoScalingClient,
    ecs: ECSClient,
    names: Names,
    signals: Sequence[Signal],
    on_demand_base: int,
    spot_percent: int | None = None,
) -> MetricsPlan:
    """With [capacity.spot]: the plan for the groups' InService instances now and whether
    the service wants a task (its desiredCount: at 0 the base needs no On-Demand host).

    At zero tasks with no host at all, a plan with nothing to wait for and the
    :func:`idle_note` (exit 0: a service scaled to zero is healthy, and nothing can
    publish); raises :func:`no_host_problem` when neither group has a host and a task
    is wanted (or the service is not found).
    """
    with mapped("autoscaling", "DescribeAutoScalingGroups"):
        pages = autoscaling.get_paginator("describe_auto_scaling_groups").paginate(
            AutoScalingGroupNames=[names.asg, names.spot_asg]
        )
        groups = [g for page in pages for g in page.get("AutoScalingGroups", [])]
    desired = service_desired(ecs, names.cluster, names.service)
    pub = publishers(
        names.asg,
        names.spot_asg,
        on_demand_base,
        in_service_counts(groups),
        has_task=desired != 0,
        spot_percent=spot_percent,
    )
    if not pub.groups and desired == 0:
        return MetricsPlan((), idle=idle_note(names))
    if not pub.groups:
        raise no_host_problem(names.asg, names.spot_asg)
    return metrics_plan(
        names, signals, pub, on_demand_claim(on_demand_base, spot_percent), has_task=desired != 0
    )


def no_host_problem(on_demand: str, spot: str) -> ProblemsFound:
    """Exit 1: with Spot, neither group has an instance in service, so no agent publishes."""
    return ProblemsFound(
        f"neither {on_demand} nor the Spot group {spot} has an instance in service, so no "
        "host publishes the GPU series yet. Fix: wait until the service places a task (a "
        "capacity provider launches the first instance), then run `ecs-gpu verify metrics` "
        "again; `ecs-gpu doctor SPEC` says why instances do not launch."
    )


def hostless_problem(group: str, claim: str | None) -> str:
    """Why the On-Demand ``group`` that must run a task yet has no host is a problem, and
    what to do; ``claim`` is why it must (spot.on_demand_claim)."""
    return (
        f"{group} has no instance in service, yet {claim} and the service wants a "
        "task (desiredCount above 0, or the service was not found), so no On-Demand host "
        "publishes the GPU series. Fix: `ecs-gpu doctor SPEC` says why the group launches "
        "none (ASG001 launch failures, its MaxSize)."
    )


def metrics_problem(
    plan: MetricsPlan, reports: Sequence[MetricsReport], *, timeout_s: float
) -> ProblemsFound | None:
    """Exit 1 naming every failing group at once (hostless ones, then missing series), or None."""
    parts = [hostless_problem(g, plan.on_demand_claim) for g in plan.hostless]
    parts += [missing_problem(r, timeout_s=timeout_s).message for r in reports if not r.ok]
    return ProblemsFound("\n".join(parts)) if parts else None


def missing_problem(report: MetricsReport, *, timeout_s: float) -> ProblemsFound:
    """Exit 1 naming each missing series of ``report`` with its likely causes."""
    heads = [
        a.verified.missing(report.names, a.missing, timeout_s) for a in report.arrivals if a.missing
    ]
    lines = [
        f"  - {metric}: {cause}"
        for metric in report.missing
        for cause in report.causes.get(metric, [])
    ]
    return ProblemsFound(" ".join(heads) + "\n" + "\n".join(lines))
