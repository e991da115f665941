"""The scaling signals (signals.py): one set of names, one plan every layer reads."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

import pytest

from ecs_gpu.checks.snapshot import TargetNames
from ecs_gpu.contracts import demand_metric, gpu_metric, signals
from ecs_gpu.contracts.naming import Names
from ecs_gpu.contracts.signals import SIGNALS, SignalPlan
from ecs_gpu.design import spot
from ecs_gpu.design.paths import wake
from ecs_gpu.sim.params import GPU_METRIC_SCOPE, TargetTracking, from_spec
from ecs_gpu.spec import ScalingSpec, load_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _literal_args(annotation: object) -> set[object]:
    """The strings of a Literal, with ``| None`` dropped."""
    args: set[object] = set()
    for arg in typing.get_args(annotation) or (annotation,):
        if arg is type(None):
            continue
        args |= set(typing.get_args(arg)) or {arg}
    return args


def test_every_layer_spells_the_signals_from_signals_py() -> None:
    spec_field = ScalingSpec.model_fields["signal"].annotation
    snapshot_field = TargetNames.model_fields["signal"].annotation
    sim_field = typing.get_type_hints(TargetTracking)["signal"]
    assert set(SIGNALS) == {"concurrency", "task-gpus", "asg-average"}
    assert _literal_args(spec_field) == set(SIGNALS)
    assert _literal_args(snapshot_field) == set(SIGNALS)
    assert _literal_args(sim_field) == set(SIGNALS)
    # The simulator has a series for every GPU series a plan can name.
    assert set(GPU_METRIC_SCOPE) == set(typing.get_args(signals.GpuSeries))


# (signal, gpu_guard, fast_scale_out) -> (tracks_gpu, tracks_concurrency, gpu_series,
# fast_path, divides_by_reservation)
PLANS = [
    ("task-gpus", False, None, (True, False, "task-gpus", False, True)),
    ("asg-average", False, None, (True, False, "asg-average", False, False)),
    ("concurrency", False, None, (False, True, "task-gpus", True, False)),
    ("concurrency", True, None, (True, True, "task-gpus", True, True)),
    ("concurrency", False, False, (False, True, "task-gpus", False, False)),
    ("task-gpus", False, True, (True, False, "task-gpus", True, True)),
]


@pytest.mark.parametrize(("signal", "guard", "fast", "want"), PLANS)
def test_plan_of_each_signal(
    signal: signals.Signal, guard: bool, fast: bool | None, want: tuple[object, ...]
) -> None:
    plan = SignalPlan.from_parts(signal, guard, fast)
    got = (
        plan.tracks_gpu,
        plan.tracks_concurrency,
        plan.gpu_series,
        plan.fast_path,
        plan.divides_by_reservation,
    )
    assert got == want
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.tracks_gpu = not plan.tracks_gpu  # type: ignore[misc]


@pytest.mark.parametrize(("signal", "guard", "fast", "want"), PLANS)
def test_plan_agrees_with_the_spec_properties(
    signal: signals.Signal, guard: bool, fast: bool | None, want: tuple[object, ...]
) -> None:
    # ScalingSpec's own gpu_metric and fast_scale_out_enabled say the same thing.
    sc = ScalingSpec(max_tasks=2, signal=signal, gpu_guard=guard, fast_scale_out=fast)
    plan = SignalPlan.of(sc)
    assert plan == SignalPlan.from_parts(signal, guard, fast)
    assert plan.gpu_series == sc.gpu_metric
    assert plan.fast_path == sc.fast_scale_out_enabled


def test_sim_params_read_the_plan() -> None:
    base = from_spec(load_spec(EXAMPLES / "g5-vllm.toml"))
    assert base.tracking.signal == "concurrency" and base.fast_path is not None
    assert base.signal_plan == SignalPlan.from_parts("concurrency", base.tracking.gpu_guard, True)
    guarded = base.with_(fast_path=None, tracking={"gpu_guard": True})
    assert guarded.gpu_policy is True
    assert guarded.signal_plan.tracks_concurrency
    assert not guarded.signal_plan.fast_path
    assert base.with_(tracking={"gpu_guard": False}).gpu_policy is False
    assert base.with_(tracking={"signal": "asg-average"}).gpu_policy is True


def test_the_simulator_has_a_series_and_a_target_for_every_signal() -> None:
    from ecs_gpu.sim.metrics import TRACKED, DemandPipeline, MetricPipeline, tracked_series

    assert set(TRACKED) == set(SIGNALS)
    base = from_spec(load_spec(EXAMPLES / "g5-vllm.toml")).with_(tracking={"gpu_guard": True})
    metrics, demand = MetricPipeline(base, 10.0), DemandPipeline(base, 10.0, 1)
    # The plan's order (the template's), each with its own target.
    assert tracked_series(base, metrics, demand) == [
        (demand.tracking, base.tracking.target_concurrency),
        (metrics.gpu, base.tracking.gpu_target_percent),
    ]
    # A design that sets a target its signal does not track runs no policy on it.
    gpu = base.with_(tracking={"signal": "task-gpus"})
    assert tracked_series(gpu, metrics, demand) == [(metrics.gpu, base.tracking.gpu_target_percent)]
    assert base.with_(tracking={"target_concurrency": None}).target("concurrency") is None
    assert base.targets == [("concurrency", base.tracking.target_concurrency), ("task-gpus", 70.0)]


def test_the_simulators_words_for_each_target() -> None:
    from ecs_gpu.sim import report, runs

    conc = from_spec(load_spec(EXAMPLES / "g5-vllm.toml"))
    assert report.target_text(conc) == f"target concurrency {conc.tracking.target_concurrency:g}"
    assert runs.target_text(conc.with_(tracking={"gpu_guard": True})) == (
        f"concurrency {conc.tracking.target_concurrency:g}/task + GPU guard "
        f"{conc.tracking.gpu_target_percent:g}%"
    )
    gpu = conc.with_(tracking={"signal": "asg-average", "target_concurrency": None})
    assert report.target_text(gpu) == f"GPU target {gpu.tracking.gpu_target_percent:g} %"
    assert runs.target_text(gpu) == f"GPU {gpu.tracking.gpu_target_percent:g}%"
    # A concurrency design without its target falls back to the GPU target's words.
    bare = conc.with_(tracking={"target_concurrency": None})
    assert runs.target_text(bare) == f"GPU {bare.tracking.gpu_target_percent:g}%"


# --- the per-signal registry (signals.SERIES) --------------------------------------


def test_every_signal_has_its_series() -> None:
    assert set(signals.SERIES) == set(SIGNALS)
    for name, series in signals.SERIES.items():
        assert series.signal == name
        # Each signal's own query ids are unique, so the collector's union can key on them.
        ids = [q["Id"] for q in series.queries(signals.SeriesAt("asg", "cluster", "service"))]
        assert len(ids) == len(set(ids))
    with pytest.raises(TypeError):
        signals.SERIES["concurrency"] = signals.SERIES["task-gpus"]  # type: ignore[index]


def test_the_series_come_from_their_contract_modules() -> None:
    names = Names("svc")
    conc = signals.SERIES["concurrency"]
    assert conc.queries(names) == demand_metric.metric_data_queries("svc", "svc")
    assert conc.watched.dimensions(names) == demand_metric.dimensions("svc", "svc")
    assert (conc.watched.namespace, conc.watched.metric_name) == (
        demand_metric.NAMESPACE,
        demand_metric.METRIC_NAME,
    )
    for gpu in ("task-gpus", "asg-average"):
        w = signals.SERIES[gpu].watched
        assert (w.namespace, w.metric_name, w.statistic, w.period_s) == (
            gpu_metric.NAMESPACE,
            gpu_metric.UTILIZATION,
            gpu_metric.STATISTIC,
            gpu_metric.PERIOD_S,
        )
        assert w.dimensions_map(names) == {gpu_metric.DIMENSION: names.asg}
    assert signals.SERIES["task-gpus"].queries(names)[-1] == gpu_metric.reservation_query("svc")


def test_the_collector_reads_every_series_once_in_a_stable_order() -> None:
    names = Names("svc")
    # The order snapshots have always had: the agent's series, GPUReservation, concurrency.
    assert signals.metric_data_queries(names) == [
        *gpu_metric.metric_data_queries(names.asg),
        gpu_metric.reservation_query(names.cluster),
        *demand_metric.metric_data_queries(names.cluster, names.service),
    ]


# --- no consumer branches on a signal's name --------------------------------------

SRC = Path(__file__).resolve().parents[2] / "src" / "ecs_gpu"
# Where a signal's name may be spelled in a comparison: the names themselves,
# the metric contracts, and spec/ (its rules say which keys go with which signal).
NAME_OWNERS = (
    "contracts/signals.py",
    "contracts/gpu_metric.py",
    "contracts/demand_metric.py",
    "spec/",
)


def _is_signal(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value in SIGNALS


def _names_a_signal(node: ast.AST) -> bool:
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_is_signal(e) for e in node.elts)
    return _is_signal(node)


def _spells_a_signal(node: ast.AST) -> bool:
    if isinstance(node, ast.Compare):
        return any(_names_a_signal(n) for n in (node.left, *node.comparators))
    if isinstance(node, ast.Dict):
        return any(k is not None and _is_signal(k) for k in node.keys)
    return isinstance(node, ast.MatchValue) and _is_signal(node.value)


def signal_name_uses(source: str) -> list[int]:
    """Lines that compare with a signal's name, match on it, or key a dict by it."""
    return sorted(
        getattr(node, "lineno", 0) for node in ast.walk(ast.parse(source)) if _spells_a_signal(node)
    )


def test_the_scanner_sees_each_form() -> None:
    source = (
        'a = s == "concurrency"\n'
        'b = s in ("task-gpus", "x")\n'
        'c = {"asg-average": 1}\n'
        'match s:\n    case "concurrency":\n        pass\n'
        'd = "concurrency" if s else "gpu"\n'
    )
    assert signal_name_uses(source) == [1, 2, 3, 5]


def test_no_consumer_compares_a_signal_by_name() -> None:
    # A consumer looks the signal up (signals.SERIES) or reads the plan
    # (SignalPlan), so a new signal is a registry row, not edits across the tree.
    found = {
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        if not str(path.relative_to(SRC).as_posix()).startswith(NAME_OWNERS)
        for line in signal_name_uses(path.read_text(encoding="utf-8"))
    }
    assert not found, f"compare with signals.SERIES or SignalPlan instead: {sorted(found)}"


def test_each_policy_target_is_a_scaling_key() -> None:
    sc = ScalingSpec(max_tasks=2, target_concurrency_per_task=5.0)
    for series in signals.SERIES.values():
        assert series.target_key in ScalingSpec.model_fields
    assert signals.SERIES["concurrency"].target(sc) == 5.0
    assert signals.SERIES["task-gpus"].target(sc) == sc.gpu_target_percent
    # Concurrency first, then the GPU policy: the template's resource order.
    assert SignalPlan.from_parts("concurrency", True).tracked == ("concurrency", "task-gpus")
    assert SignalPlan.from_parts("asg-average", False).tracked == ("asg-average",)
    assert SignalPlan.from_parts("concurrency", False).tracked == ("concurrency",)


# --- the consumers hold nothing of a signal's own -----------------------------------

# What these modules read and say of a series is its SERIES row (built from its
# contract module) or its row in their consumer's table (signal_words.py beside
# them): none imports the concurrency contract, names the
# concurrency signal or reads its plan flag. (doctor/checks/scaling_steps.py
# reads demand_metric for the fast path's step policies, SCL005 and SCL007;
# scaling.py's "does a policy track it" check is the rows', below.)
SIGNAL_FREE = (
    "aws/verify.py",
    "cli/render.py",
    "checks/doctor/alarm.py",
    "checks/doctor/metric.py",
    "infra/observability.py",
    "sim/engine.py",
    "sim/report.py",
    "sim/runs.py",
)


def _signal_own(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return any(a.name in ("demand_metric", "CONCURRENCY") for a in node.names)
    if isinstance(node, ast.Import):
        return any("demand_metric" in a.name for a in node.names)
    if isinstance(node, ast.Name):
        return node.id in ("CONCURRENCY", "demand_metric")
    return isinstance(node, ast.Attribute) and node.attr in ("tracks_concurrency", "CONCURRENCY")


def signal_own_uses(source: str) -> list[int]:
    """Lines that import the concurrency contract or name the concurrency signal or flag."""
    return sorted(
        getattr(node, "lineno", 0) for node in ast.walk(ast.parse(source)) if _signal_own(node)
    )


def test_the_signal_own_scanner_sees_each_form() -> None:
    source = (
        "from ecs_gpu import demand_metric\n"
        "from ecs_gpu.contracts.signals import CONCURRENCY\n"
        "a = plan.tracks_concurrency\n"
        "b = signals.CONCURRENCY\n"
        "import ecs_gpu.contracts.demand_metric\n"
        "c = plan.tracked\n"
    )
    assert signal_own_uses(source) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("module", SIGNAL_FREE)
def test_the_consumers_read_the_signal_off_its_row(module: str) -> None:
    found = signal_own_uses((SRC / module).read_text(encoding="utf-8"))
    assert not found, f"{module}:{found}: read signals.SERIES[s] or SignalPlan instead"


def test_doctor_checks_each_series_from_its_row() -> None:
    # "Does it arrive" and "does a policy track it" are registered from each row,
    # so a new signal's series gets both checks (their ids stable for docs/doctor.md).
    from ecs_gpu.checks.doctor import CHECKS_BY_ID
    from ecs_gpu.checks.doctor.signal_words import CHECKED

    for checked in CHECKED.values():
        for t, link in ((checked.arrives, "metric"), (checked.tracked, "scaling")):
            c = CHECKS_BY_ID[t.id]
            assert (c.link, c.severity, c.title, c.requires, c.doc) == (
                link,
                t.severity,
                t.title,
                t.requires,
                t.doc,
            )
    ids = {c.arrives.id for c in CHECKED.values()}
    assert ids == {"MET001", "MET005"}
    assert {c.tracked.id for c in CHECKED.values()} == {"SCL001", "SCL004"}


def test_every_series_that_must_arrive_has_its_alarm_and_verify_queries() -> None:
    from ecs_gpu.infra.signal_words import OBSERVED

    names = Names("svc")
    for signal in SIGNALS:
        plan = SignalPlan.from_parts(signal, True)
        # The GPU series first: the host agent writes it whatever the signal.
        assert plan.arriving[0] == plan.gpu_series
        assert set(plan.tracked) <= set(plan.arriving)
    alarm_ids = {o.alarm.construct_id for o in OBSERVED.values()}
    assert alarm_ids == {gpu_metric.MISSING_ALARM_ID, demand_metric.MISSING_ALARM_ID}
    conc = signals.SERIES["concurrency"]
    assert conc.arrival_queries(names) == demand_metric.metric_data_queries("svc", "svc")
    assert signals.SERIES["task-gpus"].arrival_queries(names) == gpu_metric.metric_data_queries(
        names.asg
    )


def test_every_signal_has_a_row_in_each_consumers_table() -> None:
    # The contracts hold the facts (SERIES); each consumer keeps its own words per
    # signal beside it: a new signal without a row in one of them fails here.
    from ecs_gpu.checks.doctor.signal_words import CHECKED
    from ecs_gpu.checks.verify.signal_words import VERIFIED
    from ecs_gpu.infra.signal_words import OBSERVED
    from ecs_gpu.sim.signal_words import TARGET_WORDS

    tables: dict[str, typing.Mapping[signals.Signal, object]] = {
        "contracts.signals.SERIES": signals.SERIES,
        "infra.signal_words.OBSERVED": OBSERVED,
        "checks.verify.signal_words.VERIFIED": VERIFIED,
        "checks.doctor.signal_words.CHECKED": CHECKED,
        "sim.signal_words.TARGET_WORDS": TARGET_WORDS,
    }
    for name, table in tables.items():
        assert set(table) == set(SIGNALS), name


def test_a_missing_expression_nests_its_gates_the_first_outermost() -> None:
    # No gate: the series, -1 where it has no datapoint (breaching on its own).
    assert signals.missing_expression("m") == "FILL(m, -1)"
    # One gate is the form both the scale-to-zero and the Spot alarms read.
    assert signals.missing_expression("m", "c") == "IF(FILL(c, 0) > 0, FILL(m, -1), 0)"
    assert signals.missing_expression("m", "c", "n") == (
        "IF(FILL(c, 0) > 0, IF(FILL(n, 0) > 0, FILL(m, -1), 0), 0)"
    )
    assert wake.MISSING_EXPRESSION == signals.missing_expression(wake.SERIES_ID, wake.RUNNING_ID)
    assert spot.GPU_MISSING_EXPRESSION == signals.missing_expression(
        spot.GPU_ID, spot.IN_SERVICE_ID
    )
