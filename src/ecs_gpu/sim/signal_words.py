"""The simulator's words for each signal's policy target (sim/report.py, sim/runs.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from ecs_gpu.contracts.signals import ASG_AVERAGE, CONCURRENCY, TASK_GPUS, Signal


@dataclass(frozen=True, slots=True)
class TargetWords:
    """A policy's target in words: as the design's target (the report), its short label
    (a run's name), and as a second policy beside another signal's."""

    design: str
    short: str
    beside: str


def gpu_target_words(target: float) -> TargetWords:
    """A GPU policy's target: beside another signal's policy it is the GPU guard."""
    return TargetWords(f"GPU target {target:g} %", f"GPU {target:g}%", f"GPU guard {target:g}%")


def concurrency_target_words(target: float) -> TargetWords:
    """The concurrency policy's target, requests per task."""
    return TargetWords(
        f"target concurrency {target:g}",
        f"concurrency {target:g}/task",
        f"concurrency {target:g}/task",
    )


TARGET_WORDS: Final[Mapping[Signal, Callable[[float], TargetWords]]] = MappingProxyType(
    {
        TASK_GPUS: gpu_target_words,
        ASG_AVERAGE: gpu_target_words,
        CONCURRENCY: concurrency_target_words,
    }
)
