"""The scaling signals: their names, once, and what a ``[scaling]`` section turns on.

``[scaling] signal`` picks the series target tracking holds: "concurrency"
(requests in flight + waiting per task, demand_metric.py), "task-gpus" (the
utilization of the GPUs tasks hold, gpu_metric.py) or "asg-average" (the
agent's ASG-wide average). Which policies that deploys (a GPU one, a
concurrency one, the fast path) used to be worked out again by the
template, the simulator, verify and doctor; :class:`SignalPlan` says it
once and they all read it.

Pure: imports nothing from infra, aws, cli, doctor or sim, so every layer
can read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, Protocol, get_args

# The [scaling] signal values, in the order docs/spec.md lists them.
Signal = Literal["concurrency", "task-gpus", "asg-average"]
# The GPU series a GPU policy (a GPU signal, or the concurrency signal's
# guard) tracks.
GpuSeries = Literal["task-gpus", "asg-average"]

SIGNALS: Final[tuple[Signal, ...]] = get_args(Signal)
CONCURRENCY: Final[Signal] = "concurrency"
# The signal without [service.metrics]: nothing else to scale on.
DEFAULT_GPU_SIGNAL: Final[Signal] = "task-gpus"


class ScalingSection(Protocol):
    """What the plan reads from ``[scaling]`` (spec.ScalingSpec has these)."""

    @property
    def signal(self) -> Signal: ...

    @property
    def gpu_guard(self) -> bool: ...

    @property
    def fast_scale_out(self) -> bool | None: ...


@dataclass(frozen=True, slots=True)
class SignalPlan:
    """What a ``[scaling]`` section deploys, derived from its signal and switches."""

    signal: Signal
    # A GPU target-tracking policy runs: a GPU signal, or the concurrency
    # signal with gpu_guard.
    tracks_gpu: bool
    # A target-tracking policy on the sidecars' concurrency series runs.
    tracks_concurrency: bool
    # The GPU series the GPU policy tracks (meaningful when tracks_gpu).
    gpu_series: GpuSeries
    # The concurrency fast path (a step policy on a 10-s alarm) is deployed.
    fast_path: bool

    @classmethod
    def of(cls, scaling: ScalingSection) -> SignalPlan:
        """The plan of a validated spec's ``[scaling]``."""
        return cls.from_parts(scaling.signal, scaling.gpu_guard, scaling.fast_scale_out)

    @classmethod
    def from_parts(
        cls, signal: Signal, gpu_guard: bool, fast_scale_out: bool | None = None
    ) -> SignalPlan:
        """The plan from the three keys (the simulator's params and sweeps carry them bare)."""
        by_concurrency = signal == CONCURRENCY
        return cls(
            signal=signal,
            tracks_gpu=not by_concurrency or gpu_guard,
            tracks_concurrency=by_concurrency,
            gpu_series="asg-average" if signal == "asg-average" else "task-gpus",
            # Default on with the concurrency signal; the GPU signals have no
            # 10-second series.
            fast_path=by_concurrency if fast_scale_out is None else fast_scale_out,
        )

    @property
    def divides_by_reservation(self) -> bool:
        """Whether a policy divides by ECS's GPUReservation (the task-gpus expression)."""
        return self.tracks_gpu and self.gpu_series == "task-gpus"
