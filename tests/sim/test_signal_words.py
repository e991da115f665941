"""sim/signal_words: the simulator's words for each signal's policy target."""

from __future__ import annotations

from ecs_gpu.contracts.signals import SIGNALS
from ecs_gpu.sim.signal_words import TARGET_WORDS, TargetWords


def test_each_signal_names_its_target() -> None:
    assert set(TARGET_WORDS) == set(SIGNALS)
    gpu = TargetWords("GPU target 70 %", "GPU 70%", "GPU guard 70%")
    assert TARGET_WORDS["task-gpus"](70) == gpu
    assert TARGET_WORDS["asg-average"](70) == TARGET_WORDS["task-gpus"](70)
    assert TARGET_WORDS["concurrency"](11) == TargetWords(
        "target concurrency 11", "concurrency 11/task", "concurrency 11/task"
    )
