"""Helpers for the simulator tests: small specs and synthetic loads built in code."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ecs_gpu.sim.controllers.base import Context
from ecs_gpu.sim.controllers.target_tracking import ServiceLayer
from ecs_gpu.sim.engine import SimResult
from ecs_gpu.sim.fleet import Fleet
from ecs_gpu.sim.metrics import MetricSeries
from ecs_gpu.sim.params import SimParams, from_spec
from ecs_gpu.sim.serving import RequestQueue
from ecs_gpu.spec import parse_spec

STEP = 10.0
# The concurrency signal (the new default with [service.metrics]): 11.2
# requests per task is 70 % of a 2 req/s task's 16 requests at full load
# (mean_request_s 8), the GPU target's equivalent.
METRICS = '[service.metrics]\npreset = "vllm"'
CONCURRENCY = "target_concurrency_per_task = 11.2"
# Issue 8's fast path (Knative's 200 %) on the in-flight series, which the
# issue-8 tests were written for; CONCURRENCY alone is issue 16's default.
ISSUE8 = CONCURRENCY + '\npanic_threshold_percent = 200\ndemand_estimate = "in-flight"'


def spec_text(
    *,
    instance: str = "g5.xlarge",
    min_instances: int = 1,
    max_instances: int = 4,
    cpu_units: int = 3072,
    memory_mib: int = 12288,
    min_tasks: int = 1,
    max_tasks: int = 4,
    scaling: str = "",
    simulation: str = "",
    service: str = "",
    capacity: str = "",
) -> str:
    return f"""
[service]
name = "sim-test"
image = "vllm/vllm-openai:v0.11.0"
cpu_units = {cpu_units}
memory_mib = {memory_mib}
{service}

[capacity]
instance_type = "{instance}"
min_instances = {min_instances}
max_instances = {max_instances}
{capacity}

[scaling]
min_tasks = {min_tasks}
max_tasks = {max_tasks}
{scaling}

[simulation]
{simulation}
"""


def params(**kw: object) -> SimParams:
    """A spec's parameters with exact arrivals and boot times, for exact asserts."""
    spec = parse_spec(spec_text(**kw), "test.toml")  # type: ignore[arg-type]
    return from_spec(spec).with_(poisson_arrivals=False, boot_jitter_fraction=0.0)


def load(*segments: tuple[float, float]) -> npt.NDArray[np.float64]:
    """Piecewise-constant load: (seconds, requests per second) per segment."""
    parts = [np.full(round(sec / STEP), rps, dtype=np.float64) for sec, rps in segments]
    return np.concatenate(parts)


def first_time(
    t: list[float], values: list[float], pred: Callable[[float], bool], after: float = -1.0
) -> float:
    """First ``t`` at or after ``after`` where ``pred(value)`` holds; inf if never."""
    for ti, v in zip(t, values, strict=True):
        if ti >= after and pred(v):
            return ti
    return float("inf")


def same_until(a: SimResult, b: SimResult, n: int, columns: tuple[str, ...]) -> bool:
    """Whether two runs' ``columns`` agree at each of their first ``n`` steps."""
    return all(
        np.array_equal(np.asarray(a.timeline[c])[:n], np.asarray(b.timeline[c])[:n])
        for c in columns
    )


def fleet_with(running: int, slots: int = 8) -> Fleet:
    """One registered instance of ``slots`` GPUs with ``running`` tasks serving."""
    fleet = Fleet(slots, 0.0, 0.0)
    inst = fleet.launch(0.0, 0.0, 0.0)
    for _ in range(running):
        fleet.add_ready_task(inst, 0.0)
    return fleet


def context(p: SimParams, fleet: Fleet, desired: int) -> Context:
    """A run's context around ``fleet``: a service layer with no tracked policy but CPU's
    (whose series stays empty, so it never votes), at ``desired`` tasks."""
    ctx = Context(STEP, 3600.0, fleet, RequestQueue(p.max_queue_s), p.mean_request_s)
    ctx.service = ServiceLayer(p, desired, [], MetricSeries())
    return ctx
