"""``verify metrics``' verdict: which series must arrive where, and what a missing one means.

The plan (:func:`metrics_plan`: each GPU group with a host and the signals whose
series must arrive there, from :func:`ecs_gpu.design.spot.publishers`), the series
:mod:`ecs_gpu.aws.verify` read (:class:`MetricsReport`), and the exit's words when
one is missing or a group that must publish has no host. What verify reads and says
of each signal's series is the signal's row, so this module names no signal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ecs_gpu.checks.verify.signal_words import VERIFIED, ServerMetrics, Verified
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import SERIES, SeriesAt, SeriesNames, Signal, SignalPlan
from ecs_gpu.design.spot import Publishers, publishers
from ecs_gpu.errors import ProblemsFound
from ecs_gpu.spec import Spec


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
        return VERIFIED[self.signal]


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


# --- from the spec, and the verdict -----------------------------------------------


def server_metrics(spec: Spec) -> ServerMetrics | None:
    """Where the spec's server exposes Prometheus metrics; None without [service.metrics]."""
    m = spec.service.metrics
    if m is None:
        return None
    return ServerMetrics(series=m.names, port=m.port or spec.service.container_port, path=m.path)


def divisor_missing(where: str) -> str:
    """The task-gpus divisor ``where`` (in words) has no datapoint: what that means."""
    return (
        f"{where} has no datapoint in the window. The task-gpus "
        "policy divides the GPU utilization by it, so target tracking has no data: ECS writes "
        "it only while the cluster runs a task. Check the service's running tasks "
        "(`ecs-gpu doctor SPEC`, MET004)."
    )


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


def denied_note(permission: str | None) -> str:
    """A read the plan needs was denied: every series was waited for."""
    return (
        f"{permission or 'a read'} denied: whether the service runs a task was not "
        "read, so every series was waited for (a service scaled to zero publishes no "
        "task's series)."
    )


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
